/* perf.data writer: records through a zstd stream into COMPRESSED records,
 * laid out as `perf record -z` writes them: one zstd stream for the whole
 * file, flushed (never ended) at chunk boundaries, each flush cut into
 * COMPRESSED records of at most 64 KiB. perf's reader gives every record
 * a buffer of HEADER_COMPRESSED mmap_len bytes for its output; flushing
 * at least every ZW_CHUNK input bytes keeps each record's output below
 * PTS_PERF_ZW_MMAP_LEN, which the writer declares. */
#include "perfdata_internal.h"
#include "perfdata_zwrite.h"

#include <stdlib.h>

#ifdef PTS_HAVE_ZSTD
#include <zstd.h>

#define ZW_CHUNK (256u << 10)
/* header.size is 16 bits: keep the record below 64 KiB. */
#define ZW_RECORD_PAYLOAD (65536u - 8u - 8u)

struct pts_perf_zw {
	FILE *f;
	ZSTD_CCtx *cc;
	uint64_t fed, since_flush, written;
	size_t out_n;
	uint8_t out[ZW_RECORD_PAYLOAD];
};

struct pts_perf_zw *pts_perf_zw_open(FILE *f, int level)
{
	struct pts_perf_zw *z = calloc(1, sizeof(*z));
	if (!z)
		return NULL;
	z->f = f;
	z->cc = ZSTD_createCCtx();
	if (!z->cc ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(z->cc, ZSTD_c_compressionLevel,
						level))) {
		pts_perf_zw_close(z);
		return NULL;
	}
	return z;
}

/* Writes what the stream has produced as one COMPRESSED record. */
static int emit(struct pts_perf_zw *z)
{
	if (!z->out_n)
		return 0;
	uint8_t h[8];
	uint32_t type = PTS_PERF_RECORD_COMPRESSED;
	uint16_t misc = 0, size = (uint16_t)(8 + z->out_n);
	memcpy(h, &type, 4);
	memcpy(h + 4, &misc, 2);
	memcpy(h + 6, &size, 2);
	if (fwrite(h, 1, 8, z->f) != 8 ||
	    fwrite(z->out, 1, z->out_n, z->f) != z->out_n)
		return -PTS_ERR_IO;
	z->written += 8 + z->out_n;
	z->out_n = 0;
	return 0;
}

/* Runs the stream with @mode until @in is used up (and, for a flush,
 * until zstd has nothing left), emitting full records on the way. */
static int run(struct pts_perf_zw *z, ZSTD_inBuffer *in, ZSTD_EndDirective mode)
{
	for (;;) {
		ZSTD_outBuffer out = {z->out, sizeof(z->out), z->out_n};
		size_t left = ZSTD_compressStream2(z->cc, &out, in, mode);
		if (ZSTD_isError(left))
			return -PTS_ERR_IO;
		z->out_n = out.pos;
		if (z->out_n == sizeof(z->out) && emit(z) < 0)
			return -PTS_ERR_IO;
		if (in->pos == in->size && (mode == ZSTD_e_continue || !left))
			return 0;
	}
}

int pts_perf_zw_flush(struct pts_perf_zw *z)
{
	ZSTD_inBuffer none = {NULL, 0, 0};
	if (run(z, &none, ZSTD_e_flush) < 0)
		return -PTS_ERR_IO;
	z->since_flush = 0;
	return emit(z);
}

int pts_perf_zw_write(struct pts_perf_zw *z, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		size_t piece = n < ZW_CHUNK - z->since_flush
				       ? n
				       : ZW_CHUNK - z->since_flush;
		ZSTD_inBuffer in = {b, piece, 0};
		if (run(z, &in, ZSTD_e_continue) < 0)
			return -PTS_ERR_IO;
		b += piece;
		n -= piece;
		z->fed += piece;
		z->since_flush += piece;
		if (z->since_flush == ZW_CHUNK && pts_perf_zw_flush(z) < 0)
			return -PTS_ERR_IO;
	}
	return 0;
}

uint32_t pts_perf_zw_ratio(const struct pts_perf_zw *z)
{
	/* perf's HEADER_COMPRESSED ratio: input over output, rounded. */
	return z->written ? (uint32_t)((z->fed + z->written / 2) / z->written)
			  : 0;
}

void pts_perf_zw_close(struct pts_perf_zw *z)
{
	if (!z)
		return;
	ZSTD_freeCCtx(z->cc);
	free(z);
}

#else /* !PTS_HAVE_ZSTD */

struct pts_perf_zw *pts_perf_zw_open(FILE *f, int level)
{
	(void)f;
	(void)level;
	return NULL;
}

int pts_perf_zw_flush(struct pts_perf_zw *z)
{
	(void)z;
	return -PTS_ERR_UNSUPPORTED;
}

int pts_perf_zw_write(struct pts_perf_zw *z, const void *p, size_t n)
{
	(void)z;
	(void)p;
	(void)n;
	return -PTS_ERR_UNSUPPORTED;
}

uint32_t pts_perf_zw_ratio(const struct pts_perf_zw *z)
{
	(void)z;
	return 0;
}

void pts_perf_zw_close(struct pts_perf_zw *z) { (void)z; }

#endif
