/* perf.data: COMPRESSED records (`perf record -z`).
 *
 * perf compresses what it copies out of its ring buffers into one zstd
 * stream per file, flushed (not ended) after each chunk; every chunk goes
 * into a COMPRESSED record (type 81: the header, then zstd bytes; perf >=
 * 6.15 also writes COMPRESSED2, type 83: a u64 payload size first and the
 * record padded to 8 bytes). The records inside are ordinary records, and
 * one may be cut between two COMPRESSED records. perf record does not
 * compress the AUX area: AUXTRACE records stay outside, but nothing in the
 * format forbids one inside, payload and all, so the reader allows it.
 *
 * Memory: the whole stream is inflated once at open, stream-wise through a
 * 128 KiB buffer, into an unlinked temp file ($TMPDIR or /tmp, else a
 * memfd) that is then mapped read-only. Records and AUX data inside are
 * handed out as slices of that mapping exactly as those of the file, so
 * the rest of the reader does not know the difference, and the kernel
 * pages the decompressed bytes in and out as it does the file's.
 */
#include "perfdata_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef PTS_HAVE_ZSTD
#include <zstd.h>
#endif

/* Output one COMPRESSED record may inflate to. perf reads at most the
 * HEADER_COMPRESSED mmap_len per record (one ring-buffer copy-out); the
 * cap keeps a corrupt or hostile payload from filling the disk. */
#define ZREC_MAX_OUTPUT ((uint64_t)64 << 20)

static int is_compressed(uint32_t type)
{
	return type == PTS_PERF_RECORD_COMPRESSED ||
	       type == PTS_PERF_RECORD_COMPRESSED2;
}

/* The first COMPRESSED record of the data section, or 0 (records cannot
 * start at file offset 0). Stops quietly at a framing error: the scan
 * reports it. */
static uint64_t first_compressed(const struct pts_perf *perf)
{
	uint64_t pos = perf->sum.data_offset, len;
	while (pos < perf->sum.data_end &&
	       pts_perf_frame(perf, pos, &len, NULL) == 0) {
		if (is_compressed(pts_rd32(perf->data + pos)))
			return pos;
		pos += len;
	}
	return 0;
}

#ifdef PTS_HAVE_ZSTD

/* The zstd bytes of the COMPRESSED record at @pos (@len bytes framed).
 * Returns 0, or -PTS_ERR_BAD_FORMAT when COMPRESSED2's size field does not
 * fit the record. */
static int payload_of(const struct pts_perf *perf, uint64_t pos, uint64_t len,
		      const uint8_t **p, size_t *n, struct pts_perf_error *err)
{
	const uint8_t *h = perf->data + pos;
	uint32_t type = pts_rd32(h);
	if (type == PTS_PERF_RECORD_COMPRESSED) {
		*p = h + PERF_EVENT_HEADER_SIZE;
		*n = (size_t)len - PERF_EVENT_HEADER_SIZE;
		return 0;
	}
	uint64_t sz = len >= 16 ? pts_rd64(h + 8) : UINT64_MAX;
	if (sz > len - 16 || len < 16)
		return pts_perf_fail(err, -PTS_ERR_BAD_FORMAT, pos, (int32_t)type,
				     "data_size %llu does not fit the record "
				     "(%llu bytes)",
				     (unsigned long long)sz,
				     (unsigned long long)len);
	*p = h + 16;
	*n = (size_t)sz;
	return 0;
}

/* An unlinked file for the decompressed stream: on disk where the system
 * allows (the page cache can drop it), else in memory (memfd). */
static int temp_fd(void)
{
	const char *dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		fd = memfd_create("ptscope-perf-zstd", MFD_CLOEXEC);
	return fd;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

struct inflater {
	ZSTD_DStream *ds;
	uint8_t *buf;
	size_t cap;
	int fd;
	uint64_t total; /* bytes written */
};

/* Feeds one record's payload through the stream into the temp file.
 * Returns 0, 1 (corrupt or too large: @err says why), -PTS_ERR_IO. */
static int inflate_one(struct inflater *z, const uint8_t *p, size_t n,
		       uint64_t pos, uint32_t type, struct pts_perf_error *err)
{
	ZSTD_inBuffer in = {p, n, 0};
	uint64_t out_here = 0;
	for (;;) {
		ZSTD_outBuffer out = {z->buf, z->cap, 0};
		size_t r = ZSTD_decompressStream(z->ds, &out, &in);
		if (ZSTD_isError(r)) {
			pts_perf_fail(err, -PTS_ERR_BAD_FORMAT, pos,
				      (int32_t)type,
				      "zstd payload corrupt after %zu of %zu "
				      "bytes: %s",
				      in.pos, n, ZSTD_getErrorName(r));
			return 1;
		}
		out_here += out.pos;
		if (out_here > ZREC_MAX_OUTPUT) {
			pts_perf_fail(err, -PTS_ERR_BAD_FORMAT, pos,
				      (int32_t)type,
				      "zstd payload of %zu bytes inflates to "
				      "more than %llu MiB: corrupt",
				      n,
				      (unsigned long long)(ZREC_MAX_OUTPUT >>
							   20));
			return 1;
		}
		if (out.pos && write_all(z->fd, z->buf, out.pos) < 0)
			return -PTS_ERR_IO;
		z->total += out.pos;
		/* Done when the input is used up and the decoder has
		 * nothing more to flush (a full buffer may hide more). */
		if (in.pos == in.size && out.pos < out.size)
			return 0;
	}
}

static int add_zrec(struct pts_perf *perf, uint64_t pos, uint64_t zend)
{
	if (pts_perf_grow((void **)&perf->zrecs, &perf->cap_zrecs,
			  perf->nr_zrecs + 1, sizeof(*perf->zrecs)))
		return -PTS_ERR_NOMEM;
	perf->zrecs[perf->nr_zrecs].file_offset = pos;
	perf->zrecs[perf->nr_zrecs++].zend = zend;
	return 0;
}

/* Inflates every COMPRESSED record from @pos on. A corrupt one ends the
 * data there (perf->damage). */
static int inflate_all(struct pts_perf *perf, struct inflater *z, uint64_t pos,
		       struct pts_perf_error *err)
{
	struct pts_perf_summary *s = &perf->sum;
	uint64_t len;
	while (pos < s->data_end && pts_perf_frame(perf, pos, &len, NULL) == 0) {
		uint32_t type = pts_rd32(perf->data + pos);
		if (!is_compressed(type)) {
			pos += len;
			continue;
		}
		const uint8_t *p = NULL;
		size_t n = 0;
		int rc = payload_of(perf, pos, len, &p, &n, &perf->damage);
		if (rc == 0)
			rc = inflate_one(z, p, n, pos, type, &perf->damage);
		if (rc == -PTS_ERR_IO)
			return pts_perf_fail(err, rc, pos, (int32_t)type,
					     "writing the decompressed data: %s",
					     strerror(errno));
		if (rc != 0) {
			perf->zdamage = 1;
			s->data_end = pos; /* readers stop where it broke */
			return 0;
		}
		s->nr_compressed++;
		s->compressed_bytes += n;
		rc = add_zrec(perf, pos, perf->size + z->total);
		if (rc < 0)
			return pts_perf_fail(err, rc, pos, -1, "out of memory");
		pos += len;
	}
	return 0;
}

static int map_stream(struct pts_perf *perf, int fd, uint64_t total,
		      struct pts_perf_error *err)
{
	perf->zsize = total;
	perf->sum.decompressed_bytes = total;
	if (!total)
		return 0;
	if (total > SIZE_MAX)
		return pts_perf_fail(err, -PTS_ERR_NOMEM, 0, -1,
				     "decompressed data too large");
	void *m = mmap(NULL, (size_t)total, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED)
		return pts_perf_fail(err, -PTS_ERR_IO, 0, -1,
				     "mapping the decompressed data: %s",
				     strerror(errno));
	perf->zdata = m;
	perf->zmap_size = (size_t)total;
	return 0;
}

static int inflate_from(struct pts_perf *perf, uint64_t first,
			struct pts_perf_error *err)
{
	struct inflater z = {0};
	z.fd = temp_fd();
	if (z.fd < 0)
		return pts_perf_fail(err, -PTS_ERR_IO, first,
				     PTS_PERF_RECORD_COMPRESSED,
				     "no temp file for the decompressed data: "
				     "%s",
				     strerror(errno));
	z.cap = ZSTD_DStreamOutSize();
	z.buf = malloc(z.cap);
	z.ds = ZSTD_createDStream();
	int rc;
	if (!z.buf || !z.ds || ZSTD_isError(ZSTD_initDStream(z.ds)))
		rc = pts_perf_fail(err, -PTS_ERR_NOMEM, first, -1,
				   "out of memory");
	else
		rc = inflate_all(perf, &z, first, err);
	if (rc == 0)
		rc = map_stream(perf, z.fd, z.total, err);
	ZSTD_freeDStream(z.ds);
	free(z.buf);
	close(z.fd);
	return rc;
}

#endif /* PTS_HAVE_ZSTD */

int pts_perf_inflate(struct pts_perf *perf, struct pts_perf_error *err)
{
	uint64_t first = first_compressed(perf);
	if (!first)
		return 0;
	uint32_t type = pts_rd32(perf->data + first);
	/* HEADER_COMPRESSED names the algorithm; perf has only zstd (1). */
	if (perf->sum.comp_type > 1)
		return pts_perf_fail(err, -PTS_ERR_UNSUPPORTED, first,
				     (int32_t)type,
				     "compression type %u is not zstd (1)",
				     perf->sum.comp_type);
#ifdef PTS_HAVE_ZSTD
	return inflate_from(perf, first, err);
#else
	return pts_perf_fail(err, -PTS_ERR_UNSUPPORTED, first, (int32_t)type,
			     "perf.data uses zstd-compressed records; ptscope "
			     "was built without libzstd");
#endif
}

const struct pts_perf_zrec *pts_perf_zrec_at(const struct pts_perf *perf,
					     uint64_t pos)
{
	uint32_t lo = 0, hi = perf->nr_zrecs;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		uint64_t at = perf->zrecs[mid].file_offset;
		if (at == pos)
			return &perf->zrecs[mid];
		if (at < pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const struct pts_perf_zrec *pts_perf_zrec_holding(const struct pts_perf *perf,
						  uint64_t zpos)
{
	/* The first record whose output ends after @zpos. */
	uint32_t lo = 0, hi = perf->nr_zrecs;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (perf->zrecs[mid].zend <= zpos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < perf->nr_zrecs ? &perf->zrecs[lo] : NULL;
}

void pts_perf_zfix_error(const struct pts_perf *perf, uint64_t zpos,
			 struct pts_perf_error *err)
{
	if (!err || !err->code)
		return;
	/* Keep what the message says after its "offset ...: " prefix. */
	const char *why = strstr(err->msg, err->record_type >= 0 ? "): " : ": ");
	why = why ? why + (err->record_type >= 0 ? 3 : 2) : err->msg;
	char rest[sizeof(err->msg)];
	snprintf(rest, sizeof(rest), "%s", why);
	const struct pts_perf_zrec *z = pts_perf_zrec_holding(perf, zpos);
	uint64_t at = z ? z->file_offset : perf->sum.data_end;
	int32_t inner = err->record_type;
	err->offset = at;
	if (inner >= 0)
		snprintf(err->msg, sizeof(err->msg),
			 "offset 0x%llx, in COMPRESSED data at byte 0x%llx, "
			 "record type %d (%s): %.100s",
			 (unsigned long long)at,
			 (unsigned long long)(zpos - perf->size), (int)inner,
			 pts_perf_record_name((uint32_t)inner), rest);
	else
		snprintf(err->msg, sizeof(err->msg),
			 "offset 0x%llx, in COMPRESSED data at byte 0x%llx: "
			 "%.120s",
			 (unsigned long long)at,
			 (unsigned long long)(zpos - perf->size), rest);
}

void pts_perf_zfree(struct pts_perf *perf)
{
	if (perf->zmap_size)
		munmap((void *)perf->zdata, perf->zmap_size);
	free(perf->zrecs);
}
