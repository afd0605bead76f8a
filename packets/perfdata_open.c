/* perf.data: opening (mmap or pipe), the file header and the attr section. */
#include "perfdata_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const uint8_t perf_magic[8] = {'P', 'E', 'R', 'F', 'I', 'L', 'E', '2'};
static const uint8_t perf_magic_swapped[8] = {'2', 'E', 'L', 'I',
					      'F', 'R', 'E', 'P'};

int pts_perf_fail(struct pts_perf_error *err, int code, uint64_t offset,
		  int32_t record_type, const char *fmt, ...)
{
	if (!err)
		return code;
	err->code = code;
	err->offset = offset;
	err->record_type = record_type;
	int n = 0;
	if (record_type >= 0)
		n = snprintf(err->msg, sizeof(err->msg),
			     "offset 0x%llx, record type %d (%s): ",
			     (unsigned long long)offset, (int)record_type,
			     pts_perf_record_name((uint32_t)record_type));
	else
		n = snprintf(err->msg, sizeof(err->msg), "offset 0x%llx: ",
			     (unsigned long long)offset);
	if (n < 0 || (size_t)n >= sizeof(err->msg))
		return code;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg + n, sizeof(err->msg) - (size_t)n, fmt, ap);
	va_end(ap);
	return code;
}

int pts_perf_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	uint32_t ncap = *cap ? *cap : 16;
	while (ncap < need) {
		if (ncap > UINT32_MAX / 2)
			return -PTS_ERR_NOMEM;
		ncap *= 2;
	}
	void *p = realloc(*arr, (size_t)ncap * elem);
	if (!p)
		return -PTS_ERR_NOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

int pts_perf_add_attr(struct pts_perf *perf, const uint8_t *p, size_t avail,
		      const uint8_t *ids, uint64_t nr_ids, uint64_t offset,
		      int32_t record_type, struct pts_perf_error *err)
{
	if (avail < PERF_ATTR_SIZE_VER0)
		return pts_perf_fail(err, -PTS_ERR_BAD_FORMAT, offset,
				     record_type,
				     "perf_event_attr of %zu bytes, need %d",
				     avail, PERF_ATTR_SIZE_VER0);
	if (nr_ids > UINT32_MAX / sizeof(uint64_t))
		return pts_perf_fail(err, -PTS_ERR_BAD_FORMAT, offset,
				     record_type, "%llu sample ids",
				     (unsigned long long)nr_ids);
	if (pts_perf_grow((void **)&perf->attrs, &perf->cap_attrs,
			  perf->nr_attrs + 1, sizeof(*perf->attrs)))
		return -PTS_ERR_NOMEM;
	struct pts_perf_attr *a = &perf->attrs[perf->nr_attrs];
	memset(a, 0, sizeof(*a));
	a->type = pts_rd32(p);
	a->size = pts_rd32(p + 4);
	a->config = pts_rd64(p + 8);
	a->sample_period = pts_rd64(p + 16);
	a->sample_type = pts_rd64(p + 24);
	a->read_format = pts_rd64(p + 32);
	a->flags = pts_rd64(p + 40);
	if (avail >= 72) { /* PERF_ATTR_SIZE_VER1 */
		a->config1 = pts_rd64(p + 56);
		a->config2 = pts_rd64(p + 64);
	}
	a->exclude_user = (a->flags >> PERF_ATTR_EXCLUDE_USER) & 1;
	a->exclude_kernel = (a->flags >> PERF_ATTR_EXCLUDE_KERNEL) & 1;
	a->sample_id_all = (a->flags >> PERF_ATTR_SAMPLE_ID_ALL) & 1;
	a->context_switch = (a->flags >> PERF_ATTR_CONTEXT_SWITCH) & 1;
	if (nr_ids) {
		uint64_t *copy = malloc((size_t)nr_ids * sizeof(uint64_t));
		if (!copy)
			return -PTS_ERR_NOMEM;
		for (uint64_t i = 0; i < nr_ids; i++)
			copy[i] = pts_rd64(ids + 8 * i);
		a->ids = copy;
		a->nr_ids = (uint32_t)nr_ids;
	}
	perf->nr_attrs++;
	return 0;
}

void pts_perf_attrs_done(struct pts_perf *perf)
{
	perf->mixed_sample_types = 0;
	for (uint32_t i = 1; i < perf->nr_attrs; i++)
		if (perf->attrs[i].sample_type != perf->attrs[0].sample_type ||
		    perf->attrs[i].sample_id_all != perf->attrs[0].sample_id_all)
			perf->mixed_sample_types = 1;
	/* EVENT_DESC lists the events in attr order. */
	if (perf->nr_event_names == perf->nr_attrs)
		for (uint32_t i = 0; i < perf->nr_attrs; i++)
			perf->attrs[i].name = perf->event_names[i];
}

/* File mode: the attr section, each entry perf_event_attr plus an
 * {offset, size} pair that locates its sample ids. */
static int read_file_attrs(struct pts_perf *perf, uint64_t attr_size,
			   uint64_t off, uint64_t size,
			   struct pts_perf_error *err)
{
	if (attr_size < PERF_ATTR_SIZE_VER0 + 16 || attr_size > 4096)
		return pts_perf_fail(err, -PTS_ERR_BAD_FORMAT, 16, -1,
				     "attr_size %llu out of range",
				     (unsigned long long)attr_size);
	if (off > perf->size || size > perf->size - off)
		return pts_perf_fail(err, -PTS_ERR_BAD_FORMAT, 24, -1,
				     "attr section [0x%llx, +0x%llx) outside "
				     "the file (%zu bytes)",
				     (unsigned long long)off,
				     (unsigned long long)size, perf->size);
	uint64_t n = size / attr_size;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t at = off + i * attr_size;
		const uint8_t *p = perf->data + at;
		uint64_t ids_off = pts_rd64(p + attr_size - 16);
		uint64_t ids_size = pts_rd64(p + attr_size - 8);
		if (ids_off > perf->size || ids_size > perf->size - ids_off)
			return pts_perf_fail(err, -PTS_ERR_BAD_FORMAT, at, -1,
					     "attr %llu: ids [0x%llx, +0x%llx) "
					     "outside the file",
					     (unsigned long long)i,
					     (unsigned long long)ids_off,
					     (unsigned long long)ids_size);
		int rc = pts_perf_add_attr(perf, p, (size_t)attr_size - 16,
					   perf->data + ids_off, ids_size / 8,
					   at, -1, err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Reads the file header and everything it points to. */
static int read_header(struct pts_perf *perf, struct pts_perf_error *err)
{
	struct pts_perf_summary *s = &perf->sum;
	s->file_size = perf->size;
	const int magic = perf->size >= 8;
	if (magic && memcmp(perf->data, perf_magic_swapped, 8) == 0)
		return pts_perf_fail(err, -PTS_ERR_UNSUPPORTED, 0, -1,
				     "big-endian perf.data is not supported");
	if (magic && memcmp(perf->data, "PERFFILE", 8) == 0)
		return pts_perf_fail(err, -PTS_ERR_UNSUPPORTED, 0, -1,
				     "perf.data version 1 is not supported");
	if (magic && memcmp(perf->data, perf_magic, 8) != 0)
		return pts_perf_fail(err, -PTS_ERR_BAD_FORMAT, 0, -1,
				     "no PERFILE2 magic: not a perf.data file");
	if (perf->size < PERF_PIPE_HEADER_SIZE)
		return pts_perf_fail(err, -PTS_ERR_BAD_FORMAT, 0, -1,
				     "%zu bytes: too short for a perf.data "
				     "header",
				     perf->size);
	uint64_t hsize = pts_rd64(perf->data + 8);
	if (hsize == PERF_PIPE_HEADER_SIZE) {
		s->pipe = 1;
		s->data_offset = PERF_PIPE_HEADER_SIZE;
		s->data_end = perf->size;
		return 0;
	}
	if (hsize < PERF_FILE_HEADER_SIZE || perf->size < PERF_FILE_HEADER_SIZE)
		return pts_perf_fail(err, -PTS_ERR_BAD_FORMAT, 8, -1,
				     "header size %llu (file %zu bytes): "
				     "neither file (104) nor pipe (16) mode",
				     (unsigned long long)hsize, perf->size);
	const uint8_t *h = perf->data;
	uint64_t attr_size = pts_rd64(h + 16);
	uint64_t data_off = pts_rd64(h + 40), data_size = pts_rd64(h + 48);
	for (int i = 0; i < 4; i++)
		s->features[i] = pts_rd64(h + 72 + 8 * i);
	if (data_off < PERF_FILE_HEADER_SIZE || data_off > perf->size)
		return pts_perf_fail(err, -PTS_ERR_BAD_FORMAT, 40, -1,
				     "data section at 0x%llx outside the file "
				     "(%zu bytes)",
				     (unsigned long long)data_off, perf->size);
	s->data_offset = data_off;
	/* perf writes data.size when it finishes: 0 means it was killed, and
	 * the records run to the end of the file (perf does the same). */
	if (data_size == 0) {
		s->data_end = perf->size;
		memset(s->features, 0, sizeof(s->features));
	} else if (data_size > perf->size - data_off) {
		s->data_end = perf->size;
		pts_perf_fail(&perf->damage, -PTS_ERR_TRUNCATED, 48, -1,
			      "data section [0x%llx, +0x%llx) runs past the "
			      "end of the file (0x%zx): file truncated",
			      (unsigned long long)data_off,
			      (unsigned long long)data_size, perf->size);
		memset(s->features, 0, sizeof(s->features));
	} else {
		s->data_end = data_off + data_size;
	}
	int rc = read_file_attrs(perf, attr_size, pts_rd64(h + 24),
				 pts_rd64(h + 32), err);
	if (rc < 0)
		return rc;
	return pts_perf_read_features(perf);
}

static int open_bytes(struct pts_perf *perf, struct pts_perf **out,
		      struct pts_perf_error *err)
{
	int rc = read_header(perf, err);
	if (rc >= 0)
		rc = pts_perf_inflate(perf, err);
	if (rc >= 0) {
		pts_perf_attrs_done(perf);
		rc = pts_perf_scan(perf);
		if (rc == -PTS_ERR_NOMEM)
			pts_perf_fail(err, rc, 0, -1, "out of memory");
	}
	if (rc < 0) {
		pts_perf_close(perf);
		*out = NULL;
		return rc;
	}
	if (perf->damage.code) {
		perf->sum.damaged = 1;
		if (err)
			*err = perf->damage;
		rc = 1;
	} else if (err) {
		memset(err, 0, sizeof(*err));
	}
	*out = perf;
	return rc;
}

int pts_perf_open_mem(const void *data, size_t size, struct pts_perf **perf,
		      struct pts_perf_error *err)
{
	if (!perf || (!data && size))
		return pts_perf_fail(err, -PTS_ERR_INVALID, 0, -1,
				     "invalid argument");
	*perf = NULL;
	struct pts_perf *p = calloc(1, sizeof(*p));
	if (!p)
		return pts_perf_fail(err, -PTS_ERR_NOMEM, 0, -1,
				     "out of memory");
	p->data = data;
	p->size = size;
	return open_bytes(p, perf, err);
}

/* Reads a pipe or terminal to its end (such input cannot be mapped). */
static int slurp(int fd, uint8_t **buf, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	uint8_t *b = malloc(cap);
	if (!b)
		return -PTS_ERR_NOMEM;
	for (;;) {
		if (n == cap) {
			uint8_t *nb = cap > SIZE_MAX / 2 ? NULL : realloc(b, cap * 2);
			if (!nb) {
				free(b);
				return -PTS_ERR_NOMEM;
			}
			b = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(b);
			errno = e;
			return -PTS_ERR_IO;
		}
		if (r == 0)
			break;
		/* No perf.data magic: stop here (open_bytes() says so)
		 * rather than read on, maybe forever (/dev/zero). */
		if (n < 8 && n + (size_t)r >= 8 &&
		    memcmp(b, perf_magic, 8) != 0) {
			n += (size_t)r;
			break;
		}
		n += (size_t)r;
	}
	*buf = b;
	*len = n;
	return 0;
}

/* An error of the file as a whole (it cannot be opened or read): no
 * offset in it to name. */
static int file_error(struct pts_perf_error *err, int code, const char *msg)
{
	if (!err)
		return code;
	err->code = code;
	err->offset = 0;
	err->record_type = -1;
	snprintf(err->msg, sizeof(err->msg), "%s", msg);
	return code;
}

int pts_perf_open(const char *path, struct pts_perf **perf,
		  struct pts_perf_error *err)
{
	if (!path || !perf)
		return pts_perf_fail(err, -PTS_ERR_INVALID, 0, -1,
				     "invalid argument");
	*perf = NULL;
	int use_stdin = strcmp(path, "-") == 0;
	int fd = use_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return file_error(err, -PTS_ERR_IO, strerror(errno));
	struct pts_perf *p = calloc(1, sizeof(*p));
	if (!p) {
		if (!use_stdin)
			close(fd);
		return file_error(err, -PTS_ERR_NOMEM, "out of memory");
	}
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE,
			       fd, 0);
		if (m == MAP_FAILED) {
			rc = -PTS_ERR_IO;
		} else {
			p->map = m;
			p->map_size = (size_t)st.st_size;
			p->data = m;
			p->size = (size_t)st.st_size;
		}
	} else {
		rc = slurp(fd, &p->owned, &p->size);
		p->data = p->owned;
	}
	int saved = errno;
	if (!use_stdin)
		close(fd);
	if (rc < 0) {
		free(p);
		errno = saved;
		return file_error(err, rc,
				  rc == -PTS_ERR_IO ? strerror(saved)
						    : "out of memory");
	}
	return open_bytes(p, perf, err);
}

void pts_perf_close(struct pts_perf *perf)
{
	if (!perf)
		return;
	pts_perf_free_tables(perf);
	pts_perf_zfree(perf);
	if (perf->map)
		munmap(perf->map, perf->map_size);
	free(perf->owned);
	free(perf);
}

const struct pts_perf_summary *pts_perf_summary(const struct pts_perf *perf)
{
	return &perf->sum;
}

int pts_perf_cpu(const struct pts_perf *perf, struct pts_cpu *cpu)
{
	static const char vendor[] = "GenuineIntel,";
	const struct pts_perf_str *id = &perf->sum.cpuid;
	char text[64];
	memset(cpu, 0, sizeof(*cpu));
	if (id->len <= sizeof(vendor) - 1 || id->len >= sizeof(text) ||
	    memcmp(id->ptr, vendor, sizeof(vendor) - 1) != 0)
		return -PTS_ERR_INVALID;
	/* "6,78,3" is pts_cpu_parse()'s "6/78/3" */
	size_t n = id->len - (sizeof(vendor) - 1);
	memcpy(text, id->ptr + sizeof(vendor) - 1, n);
	text[n] = '\0';
	for (char *c = strchr(text, ','); c; c = strchr(c, ','))
		*c = '/';
	if (pts_cpu_parse(text, cpu) < 0) {
		memset(cpu, 0, sizeof(*cpu));
		return -PTS_ERR_INVALID;
	}
	return 0;
}

uint32_t pts_perf_attr_count(const struct pts_perf *perf)
{
	return perf->nr_attrs;
}

const struct pts_perf_attr *pts_perf_attr_get(const struct pts_perf *perf,
					      uint32_t i)
{
	return i < perf->nr_attrs ? &perf->attrs[i] : NULL;
}

const struct pts_perf_attr *pts_perf_attr_by_id(const struct pts_perf *perf,
						uint64_t id)
{
	for (uint32_t i = 0; i < perf->nr_attrs; i++)
		for (uint32_t j = 0; j < perf->attrs[i].nr_ids; j++)
			if (perf->attrs[i].ids[j] == id)
				return &perf->attrs[i];
	return NULL;
}
