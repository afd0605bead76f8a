/* `ptscope perf` output of several queues in time order, as perf script
 * prints samples of all CPUs interleaved by time (internal to tools/).
 *
 * Each queue is decoded on its own, as before, but its output goes to a
 * spill file of its own, cut into runs of one time each; once every queue
 * is done the runs are merged by time (a queue's own order is kept, ties go
 * to the queue first in the file). Memory stays bounded whatever the size
 * of the output. */
#ifndef PTS_TOOLS_PERF_ORDER_H
#define PTS_TOOLS_PERF_ORDER_H

#include "perf_cmd.h"

struct perf_order;

/* NULL on no memory. */
struct perf_order *pts_perforder_new(void);
void pts_perforder_free(struct perf_order *o);

/* Starts a queue: @pc->out now writes into the queue's spill file. The
 * merge writes the line @label (copied; NULL: none) wherever the output
 * passes to this queue from another one, for formats whose lines do not
 * say their queue. Returns 0, -PTS_ERR_IO (no temporary file) or
 * -PTS_ERR_NOMEM. */
int pts_perforder_begin(struct perf_order *o, struct perf_cmd *pc,
			const char *label);
/* What is written to @pc->out from now on happened at @time (any
 * monotonic key; perf ns here). */
void pts_perforder_mark(struct perf_order *o, struct perf_cmd *pc,
			uint64_t time);
/* Ends the queue: @pc->out writes where it did before begin. */
int pts_perforder_end(struct perf_order *o, struct perf_cmd *pc);

/* Writes every queue's output to @pc->out, merged by time. Returns 0 or
 * -PTS_ERR_IO. */
int pts_perforder_merge(struct perf_order *o, struct perf_cmd *pc);

#endif
