/* Decodes one buffer with libipt 2.0.5 (pt_pkt_*) and with ptscope's
 * streaming decoder (fed in random chunks) and compares every packet and
 * every error. Used by the differential tests (random and mutated streams)
 * and the capture tests (real traces).
 *
 * Where libipt cannot decode at an offset, ptscope must report the
 * corresponding error at that same offset, skip to the next PSB and go on
 * there; libipt is then resynchronized at that PSB and the comparison
 * continues. Two documented differences end the comparison of a buffer
 * without counting as a mismatch (see oracle.c): packets newer than
 * libipt 2.0.5 and CYC packets of 10..15 bytes.
 */
#ifndef PTS_TEST_ORACLE_H
#define PTS_TEST_ORACLE_H

#include <ptscope/packets.h>

#include <stddef.h>
#include <stdint.h>

struct pts_oracle_opts {
	const char *label; /* names the buffer in reports */
	/* 1: both decoders start at byte 0; 0: both search the first PSB. */
	uint8_t no_sync;
	/* ptscope side: 0 pts_pkt_next, n > 0 pts_pkt_next_batch(max n). */
	int batch;
	/* ptscope side: chunk sizes drawn from this seed, up to @max_chunk
	 * bytes; @max_chunk 0 feeds the buffer as one chunk. */
	uint64_t chunk_seed;
	size_t max_chunk;
};

struct pts_oracle_stats {
	uint64_t packets;                   /* decoded identically */
	uint64_t kinds[PTS_PKT_KIND_COUNT]; /* of those, by ptscope kind */
	uint64_t perf_lines;                /* as counted by perf report -D */
	uint64_t errors[PTS_ERR_COUNT];     /* reported by both, by our code */
	uint64_t resyncs;     /* comparisons resumed at a PSB after an error */
	uint64_t newer_kinds; /* stops at a packet libipt 2.0.5 does not know */
	uint64_t long_cyc;    /* stops at a CYC of 10..15 bytes */
	uint64_t mismatches;  /* buffers on which the decoders disagree */
	int reports_left;     /* mismatch reports still to print (caller sets) */
};

/* Compares the decoders on @buf and adds to @stats.
 * Returns 0 when they agree, 1 on a mismatch (described on stderr while
 * @stats->reports_left > 0, with the offset and both sides), -1 when the
 * harness itself fails (no memory). */
int pts_oracle_compare(const uint8_t *buf, size_t len,
		       const struct pts_oracle_opts *opts,
		       struct pts_oracle_stats *stats);

/* Prints a one-line summary of @stats to stdout, prefixed by @what. */
void pts_oracle_print(const char *what, const struct pts_oracle_stats *stats);

#endif /* PTS_TEST_ORACLE_H */
