/* ptscope coverage: the flow walker's records turned into branch edges and
 * an AFL-style edge bitmap, for fuzzers (kAFL/Nyx users of libxdc).
 *
 * An edge is one executed branch instruction: SRC its address, DST the
 * address executed next. Every conditional branch (taken or not), direct
 * and indirect jump, call and return, and far transfer (SYSCALL, IRET, ...)
 * makes one edge, in trace order. Where tracing starts (or restarts) at X
 * the edge is PTS_COV_OFF -> X; where it stops, X -> PTS_COV_OFF with X the
 * last instruction executed while tracing was on. That is libxdc's edge
 * trace layout, with one difference: libxdc puts the TIP.PGD target in the
 * stop edge, which the trace often leaves out (IP suppressed) and libxdc
 * then fills with a stale address; ptscope names the last traced
 * instruction instead, so a branch that leaves the traced region shows as
 * SRC -> PTS_COV_OFF. Interrupts and enclave transitions reported as
 * FUP + TIP are not branch instructions: a branch just before one ends at
 * the interrupted address, and the interrupt itself makes no edge. An
 * overflow, a decode error and the end of the trace stop tracing as far as
 * edges go. A window in which nothing ran, opened at X and closed by an
 * interrupt or disable at X (an AEX's return to the AEP whose ERESUME
 * enters the enclave again), gives PTS_COV_OFF -> X, X -> PTS_COV_OFF.
 *
 * The bitmap: one byte per slot, slot = pts_cov_edge_hash(SRC, DST) &
 * (size - 1), incremented and held at 255. Every edge counts, the start and
 * stop edges too.
 *
 * Optional IP filter ranges (as kAFL's): an edge counts when SRC lies in a
 * range, or SRC is PTS_COV_OFF and DST lies in one.
 *
 * The sink consumes records from pts_flow_next() (decoder.h). It classifies
 * each distinct instruction run once and keeps the result (a run cache,
 * bounded like the block cache, keyed by the records' run ids), so
 * decoding the same code again costs one table lookup per run. One sink
 * may serve many traces in turn (fuzzing): call pts_cov_end() after each
 * one; the caches stay. Feed it from one walker reset between traces
 * (pts_flow_reset()) and the run ids stay the same too: nothing is
 * classified again. Records without a run id (0) are keyed by a hash of
 * their addresses. Faster still, pts_cov_decode() runs the walker with the
 * sink attached: no records, no run cache, the same edges.
 *
 * Return convention as in packets.h: int >= 0 success, < 0 -PTS_ERR_*.
 */
#ifndef PTSCOPE_COVERAGE_H
#define PTSCOPE_COVERAGE_H

#include <stddef.h>
#include <stdint.h>

#include <ptscope/decoder.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The address of "tracing off" in start and stop edges. */
#define PTS_COV_OFF UINT64_MAX
/* Most filter ranges (as IA32_RTIT_ADDRn). */
#define PTS_COV_MAX_RANGES 4
/* Default bitmap size (bytes). */
#define PTS_COV_DEFAULT_SIZE (64u << 10)

struct pts_cov_edge {
	uint64_t src, dst;
};

/* A distinct edge and how often it was taken (pts_cov_unique). */
struct pts_cov_count {
	uint64_t src, dst;
	uint64_t count;
};

/* pts_cov_config.flags */
enum {
	PTS_COV_BITMAP = 1 << 0, /* build the bitmap */
	PTS_COV_EDGES = 1 << 1,  /* hand out the edges (pts_cov_set_sink) */
	PTS_COV_UNIQUE = 1 << 2  /* count distinct edges */
};

struct pts_cov_config {
	uint32_t flags;       /* PTS_COV_*; 0: PTS_COV_BITMAP */
	uint32_t bitmap_size; /* power of two, 64 .. 1 GiB; 0: 64 KiB */
	size_t cache_bytes;   /* bound of the run cache; 0: 64 MiB */
	unsigned n_ranges;    /* filter ranges [begin, end], ends included */
	uint64_t begin[PTS_COV_MAX_RANGES], end[PTS_COV_MAX_RANGES];
};

struct pts_cov;

/* The bitmap hash of an edge: AFL's prev/cur scheme on 64-bit addresses
 * (a multiplicative hash of each end, the destination's shifted by one so
 * that A->B and B->A differ). Slot = hash & (size - 1). */
static inline uint32_t pts_cov_edge_hash(uint64_t src, uint64_t dst)
{
	const uint64_t k = UINT64_C(0x9e3779b97f4a7c15);
	return (uint32_t)((src * k) >> 32) ^ ((uint32_t)((dst * k) >> 32) >> 1);
}

/* Allocates a sink reading code from @img (borrowed: it must outlive the
 * sink; the run cache is dropped when its mappings change). @config may be
 * NULL for defaults. Sets *@out and returns 0.
 * Returns -PTS_ERR_INVALID for a bitmap size that is not a power of two in
 *   range, more than PTS_COV_MAX_RANGES ranges, or a range with end < begin.
 * Returns -PTS_ERR_NOMEM. */
int pts_cov_new(const struct pts_cov_config *config,
		const struct pts_image *img, struct pts_cov **out);
/* Frees @cov; NULL is a no-op. */
void pts_cov_free(struct pts_cov *cov);

/* Where the edges go with PTS_COV_EDGES: @fn gets them in trace order, in
 * batches (@edges valid during the call only). */
void pts_cov_set_sink(struct pts_cov *cov,
		      void (*fn)(void *ctx, const struct pts_cov_edge *edges,
				 size_t n),
		      void *ctx);

/* Consumes @n records of one trace, in order, as pts_flow_next() gave
 * them (instruction runs are read during the call only).
 * Returns 0, -PTS_ERR_INVALID for NULL arguments, -PTS_ERR_NOMEM when a
 * cache cannot grow (the edges of that run are lost). */
int pts_cov_feed(struct pts_cov *cov, const struct pts_flow_rec *recs,
		 int n);

/* Decodes the trace bytes in @in with the walker @flow straight into @cov:
 * the edges, bitmap and counts are those of feeding every record
 * pts_flow_next() would give to pts_cov_feed(), but the walker hands its
 * blocks to the sink as it walks them, with no instruction records and
 * no run lookups (the fast way for fuzzers). Call it like pts_flow_next():
 * chunk after chunk, pts_flow_end() for the last; pts_flow_reset() between
 * traces keeps the walker's block cache; pts_cov_end() after each trace.
 * Runs are counted in pts_cov_stats.runs; nothing is classified, so
 * runs_built does not grow.
 * Returns -PTS_ERR_AGAIN when @in is used up (feed the next chunk),
 *   -PTS_ERR_EOS after pts_flow_end() once the trace is decoded,
 *   -PTS_ERR_INVALID for a NULL @cov or @flow, -PTS_ERR_NOMEM as
 *   pts_flow_next(). Trace errors are not returned: they stop tracing as
 *   far as edges go, as their records do in pts_cov_feed(). */
int pts_cov_decode(struct pts_cov *cov, struct pts_flow *flow,
		   struct pts_input *in);

/* Ends the current trace: the stop edge if tracing is still on, the last
 * edges to the sink. The next record fed starts a new trace; bitmap and
 * counts go on accumulating until cleared. */
void pts_cov_end(struct pts_cov *cov);

/* The bitmap (NULL without PTS_COV_BITMAP); sets *@size. Valid while @cov
 * lives. */
const uint8_t *pts_cov_bitmap(const struct pts_cov *cov, size_t *size);
/* Zeroes the bitmap and the distinct edge counts (a new fuzzing input). */
void pts_cov_clear(struct pts_cov *cov);

/* The distinct edges with PTS_COV_UNIQUE, in order of first appearance
 * (valid until the next call that feeds or clears). Returns the count. */
size_t pts_cov_unique(const struct pts_cov *cov,
		      const struct pts_cov_count **counts);

struct pts_cov_stats {
	uint64_t edges;       /* edges counted (after the filter) */
	uint64_t runs;        /* instruction runs consumed */
	uint64_t runs_built;  /* runs classified (run cache misses) */
	uint64_t cache_flushes;
};
void pts_cov_get_stats(const struct pts_cov *cov, struct pts_cov_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* PTSCOPE_COVERAGE_H */
