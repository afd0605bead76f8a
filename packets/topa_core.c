/* The ToPA buffer set: physical memory made of spans, the MSR values and
 * options, and the slice stream that pts_topa_linearize() prepares. */
#include "topa_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

uint64_t pts_topa_entry_region(uint64_t phys, unsigned size_code,
			       uint64_t flags)
{
	return (phys & ~UINT64_C(0xfff)) |
	       ((uint64_t)(size_code & 0xf) << PTS_TOPA_SIZE_SHIFT) |
	       (flags & (PTS_TOPA_INT | PTS_TOPA_STOP));
}

uint64_t pts_topa_entry_end(uint64_t table_phys)
{
	return (table_phys & ~UINT64_C(0xfff)) | PTS_TOPA_END;
}

uint64_t pts_topa_load64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

void pts_topa_store64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

int pts_topa_fail(struct pts_topa *t, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->err, sizeof(t->err), fmt, ap);
	va_end(ap);
	return -code;
}

int pts_topa_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	uint32_t ncap = *cap ? *cap : 8;
	while (ncap < need)
		ncap = ncap > UINT32_MAX / 2 ? need : ncap * 2;
	void *p = realloc(*arr, (size_t)ncap * elem);
	if (!p)
		return -PTS_ERR_NOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

int pts_topa_new(struct pts_topa **out)
{
	struct pts_topa *t = calloc(1, sizeof(*t));
	if (!t)
		return -PTS_ERR_NOMEM;
	t->maxphyaddr = 52;
	*out = t;
	return 0;
}

void pts_topa_free(struct pts_topa *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->nspans; i++)
		free(t->spans[i].name);
	for (uint32_t i = 0; i < t->nowned; i++) {
		if (t->owned[i].mapped)
			munmap(t->owned[i].addr, t->owned[i].len);
		else
			free(t->owned[i].addr);
	}
	free(t->spans);
	free(t->decl_tables);
	free(t->owned);
	free(t->regions);
	free(t->slices);
	free(t);
}

const char *pts_topa_errmsg(const struct pts_topa *t)
{
	return t ? t->err : "";
}

int pts_topa_own(struct pts_topa *t, void *addr, size_t len, int mapped)
{
	if (pts_topa_grow((void **)&t->owned, &t->cap_owned, t->nowned + 1,
			  sizeof(*t->owned)) < 0) {
		if (mapped)
			munmap(addr, len);
		else
			free(addr);
		return pts_topa_fail(t, PTS_ERR_NOMEM, "out of memory");
	}
	t->owned[t->nowned++] = (struct pts_topa_owned){
		.addr = addr, .len = len, .mapped = !!mapped};
	return 0;
}

/* The most read from a file that cannot be mapped: far above any ToPA
 * buffer region (128M at most), and a device that never ends
 * (/dev/zero) is an error, not a read until memory runs out. */
#define READ_WHOLE_MAX ((size_t)256 << 20)

/* Reads a file that cannot be mapped (a pipe, /proc) into a heap block. */
static int read_whole(struct pts_topa *t, int fd, const char *path,
		      const uint8_t **data, uint64_t *len)
{
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);
	for (;;) {
		if (!buf)
			return pts_topa_fail(t, PTS_ERR_NOMEM, "out of memory");
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(buf);
			return pts_topa_fail(t, PTS_ERR_IO, "%s: %s", path,
					     strerror(errno));
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n >= READ_WHOLE_MAX) {
			free(buf);
			return pts_topa_fail(t, PTS_ERR_BAD_FORMAT,
					     "%s: more than 256M from a file "
					     "that cannot be mapped (a "
					     "device?)", path);
		}
		if (n == cap) {
			uint8_t *nb = realloc(buf, cap * 2);
			if (!nb)
				free(buf);
			buf = nb;
			cap *= 2;
		}
	}
	int err = pts_topa_own(t, buf, n, 0);
	if (err < 0)
		return err;
	*data = buf;
	*len = n;
	return 0;
}

int pts_topa_map_file(struct pts_topa *t, const char *path,
		      const uint8_t **data, uint64_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return pts_topa_fail(t, PTS_ERR_IO, "%s: %s", path,
				     strerror(errno));
	struct stat st;
	int err;
	const int known = fstat(fd, &st) == 0;
	void *p = MAP_FAILED;
	if (known && S_ISREG(st.st_mode) && st.st_size > 0)
		p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd,
			 0);
	if (p != MAP_FAILED) {
		err = pts_topa_own(t, p, (size_t)st.st_size, 1);
		*data = p;
		*len = (uint64_t)st.st_size;
	} else {
		err = read_whole(t, fd, path, data, len);
	}
	close(fd);
	if (err < 0 || !known)
		return err;
	/* The file's identity, for pts_topa_reads_file(). */
	struct pts_topa_owned *o = &t->owned[t->nowned - 1];
	o->from_file = 1;
	o->dev = st.st_dev;
	o->ino = st.st_ino;
	return 0;
}

int pts_topa_reads_file(const struct pts_topa *t, const char *path)
{
	struct stat st;
	if (!t || !path || stat(path, &st) != 0)
		return 0;
	for (uint32_t i = 0; i < t->nowned; i++) {
		const struct pts_topa_owned *o = &t->owned[i];
		if (o->from_file && o->dev == st.st_dev && o->ino == st.st_ino)
			return 1;
	}
	return 0;
}

/* Index of the first span whose end lies above @phys (spans are sorted and
 * disjoint, so that is the only one that can hold @phys). */
static uint32_t span_lower_bound(const struct pts_topa *t, uint64_t phys)
{
	uint32_t lo = 0, hi = t->nspans;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct pts_topa_span *s = &t->spans[mid];
		if (s->phys + s->len <= phys)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct pts_topa_span *pts_topa_partial(const struct pts_topa *t,
					     uint64_t phys, uint64_t len)
{
	for (uint32_t i = 0; i < t->nspans; i++) {
		const struct pts_topa_span *s = &t->spans[i];

		if (s->phys - phys < len || phys - s->phys < s->len)
			return s;
	}
	return NULL;
}

const struct pts_topa_span *pts_topa_find(const struct pts_topa *t,
					  uint64_t phys, uint64_t len)
{
	uint32_t i = span_lower_bound(t, phys);
	if (i == t->nspans)
		return NULL;
	const struct pts_topa_span *s = &t->spans[i];
	if (phys < s->phys || len > s->len || phys - s->phys > s->len - len)
		return NULL;
	return s;
}

static const char *span_name(const struct pts_topa_span *s)
{
	return s->name ? s->name : "memory";
}

int pts_topa_add_memory(struct pts_topa *t, uint64_t phys, const uint8_t *data,
			uint64_t len, const char *name)
{
	t->ready = 0;
	if (len == 0)
		return 0; /* no bytes: nothing can be read from it */
	if (phys + len < phys)
		return pts_topa_fail(t, PTS_ERR_BAD_FORMAT,
				     "%s at 0x%llx: %llu bytes run past the "
				     "end of the address space",
				     name ? name : "memory",
				     (unsigned long long)phys,
				     (unsigned long long)len);
	if (t->nspans >= PTS_TOPA_MAX_SPANS)
		return pts_topa_fail(t, PTS_ERR_BAD_FORMAT,
				     "more than %u memory spans",
				     PTS_TOPA_MAX_SPANS);
	uint32_t i = span_lower_bound(t, phys);
	if (i < t->nspans && t->spans[i].phys < phys + len)
		return pts_topa_fail(
			t, PTS_ERR_BAD_FORMAT,
			"%s at 0x%llx (%llu bytes) overlaps %s at 0x%llx",
			name ? name : "memory", (unsigned long long)phys,
			(unsigned long long)len, span_name(&t->spans[i]),
			(unsigned long long)t->spans[i].phys);
	if (pts_topa_grow((void **)&t->spans, &t->cap_spans, t->nspans + 1,
			  sizeof(*t->spans)) < 0)
		return pts_topa_fail(t, PTS_ERR_NOMEM, "out of memory");
	char *copy = NULL;
	if (name && !(copy = strdup(name)))
		return pts_topa_fail(t, PTS_ERR_NOMEM, "out of memory");
	memmove(&t->spans[i + 1], &t->spans[i],
		(t->nspans - i) * sizeof(*t->spans));
	t->spans[i] = (struct pts_topa_span){phys, len, data, copy};
	t->nspans++;
	return 0;
}

int pts_topa_add_table(struct pts_topa *t, uint64_t phys)
{
	t->ready = 0;
	if (t->ndecl >= PTS_TOPA_MAX_TABLES)
		return pts_topa_fail(t, PTS_ERR_BAD_FORMAT,
				     "more than %u tables",
				     PTS_TOPA_MAX_TABLES);
	for (uint32_t i = 0; i < t->ndecl; i++)
		if (t->decl_tables[i] == phys)
			return pts_topa_fail(t, PTS_ERR_BAD_FORMAT,
					     "table 0x%llx is given twice",
					     (unsigned long long)phys);
	if (pts_topa_grow((void **)&t->decl_tables, &t->cap_decl, t->ndecl + 1,
			  sizeof(*t->decl_tables)) < 0)
		return pts_topa_fail(t, PTS_ERR_NOMEM, "out of memory");
	t->decl_tables[t->ndecl++] = phys;
	return 0;
}

void pts_topa_set_msrs(struct pts_topa *t, uint64_t output_base,
		       uint64_t output_mask_ptrs, const uint64_t *status)
{
	t->ready = 0;
	t->output_base = output_base;
	t->mask_ptrs = output_mask_ptrs;
	t->have_base = t->have_mask = 1;
	t->have_status = status != NULL;
	t->status = status ? *status : 0;
}

void pts_topa_set_opener(struct pts_topa *t,
			 int (*opener)(void *ctx, const char *path,
				       const uint8_t **data, uint64_t *len),
			 void *ctx)
{
	t->opener = opener;
	t->opener_ctx = ctx;
}

void pts_topa_set_mode(struct pts_topa *t, enum pts_topa_mode mode)
{
	t->ready = 0;
	t->mode = (uint8_t)mode;
}

void pts_topa_set_wrap(struct pts_topa *t, enum pts_topa_wrap wrap)
{
	t->ready = 0;
	t->wrap = (uint8_t)wrap;
}

void pts_topa_set_start(struct pts_topa *t, uint64_t table_phys)
{
	t->ready = 0;
	t->have_start = 1;
	t->start = table_phys;
}

int pts_topa_set_maxphyaddr(struct pts_topa *t, unsigned bits)
{
	if (bits < 32 || bits > 52)
		return -PTS_ERR_INVALID;
	t->ready = 0;
	t->maxphyaddr = (uint8_t)bits;
	return 0;
}

int pts_topa_get_info(const struct pts_topa *t, struct pts_topa_info *info)
{
	if (!t->ready)
		return -PTS_ERR_INVALID;
	*info = t->info;
	return 0;
}

int pts_topa_next(struct pts_topa *t, struct pts_input *chunk)
{
	if (!t->ready)
		return -PTS_ERR_INVALID;
	if (t->next_slice >= t->nslices)
		return 0;
	*chunk = t->slices[t->next_slice++];
	return 1;
}

void pts_topa_rewind(struct pts_topa *t)
{
	t->next_slice = 0;
}

int pts_topa_parse_bytes(const char *s, const char *e, uint64_t *v)
{
	unsigned shift = 0;
	if (e > s && (e[-1] == 'K' || e[-1] == 'k'))
		shift = 10;
	else if (e > s && (e[-1] == 'M' || e[-1] == 'm'))
		shift = 20;
	uint64_t x;
	if (pts_parse_u64(s, shift ? e - 1 : e, &x) < 0 || x == 0 ||
	    (x & (x - 1)) || x > (UINT64_C(1) << 40) >> shift)
		return -1;
	*v = x << shift;
	return 0;
}
