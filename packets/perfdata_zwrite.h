/* perf.data writer: the zstd side of `pts_perf_write_opts.compress`
 * (perfdata_zwrite.c). Internal to packets/perfdata_*.c. */
#ifndef PTS_PERFDATA_ZWRITE_H
#define PTS_PERFDATA_ZWRITE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* HEADER_COMPRESSED mmap_len the writer declares: no COMPRESSED record it
 * writes inflates to more. */
#define PTS_PERF_ZW_MMAP_LEN (512u << 10)

struct pts_perf_zw;

/* A compressor writing COMPRESSED records to @f at zstd @level. NULL when
 * out of memory or built without libzstd. */
struct pts_perf_zw *pts_perf_zw_open(FILE *f, int level);
/* Feeds @n bytes of records. Returns 0 or -PTS_ERR_IO. */
int pts_perf_zw_write(struct pts_perf_zw *z, const void *p, size_t n);
/* Writes everything fed so far as COMPRESSED records (before a record
 * that goes to the file uncompressed). Returns 0 or -PTS_ERR_IO. */
int pts_perf_zw_flush(struct pts_perf_zw *z);
/* Bytes fed per byte written, rounded (HEADER_COMPRESSED ratio). */
uint32_t pts_perf_zw_ratio(const struct pts_perf_zw *z);
void pts_perf_zw_close(struct pts_perf_zw *z);

#endif
