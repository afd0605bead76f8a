/* `ptscope perf`: running an action over the queues --cpu and --tid
 * select, in queue order or merged by time (perf_order.h). */
#include "perf_cmd.h"
#include "perf_order.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pts_perfcmd_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	uint32_t ncap = *cap ? *cap : 16;
	while (ncap < need)
		ncap *= 2;
	void *p = realloc(*arr, (size_t)ncap * elem);
	if (!p)
		return -PTS_ERR_NOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

int pts_perfcmd_queue_selected(const struct perf_cmd *pc,
			       const struct pts_perf_queue *q)
{
	if (pc->cpu >= 0 && q->cpu != pc->cpu)
		return 0;
	/* per-thread queues match by their tid; per-cpu ones are filtered
	 * line by line */
	if (pc->tid >= 0 && q->cpu < 0 && q->tid != pc->tid)
		return 0;
	return 1;
}

void pts_perfcmd_progress(struct perf_cmd *pc, uint64_t bytes)
{
	pc->progress_done += bytes;
	pts_progress_update(&pc->progress, pc->progress_done, pts_cli_now());
}

/* The meter over the selected queues' bytes. */
static void start_progress(struct perf_cmd *pc)
{
	uint64_t total = 0;
	for (uint32_t i = 0; i < pts_perf_queue_count(pc->perf); i++) {
		const struct pts_perf_queue *q = pts_perf_queue_get(pc->perf, i);
		if (pts_perfcmd_queue_selected(pc, q))
			total += q->bytes;
	}
	pc->progress_done = 0;
	pts_progress_start(&pc->progress, stderr, "perf", total,
			   pts_cli_now());
}

void pts_perfcmd_mark(struct perf_cmd *pc, uint64_t time)
{
	if (pc->order)
		pts_perforder_mark(pc->order, pc, time);
}

/* How many queues --cpu and --tid select. */
static uint32_t selected_queues(const struct perf_cmd *pc)
{
	uint32_t selected = 0;
	for (uint32_t i = 0; i < pts_perf_queue_count(pc->perf); i++)
		selected += pts_perfcmd_queue_selected(
			pc, pts_perf_queue_get(pc->perf, i));
	return selected;
}

/* Whether the queues' output goes through perf_order: several queues
 * selected, times known, output wanted, and time order asked for (or the
 * action's default: flow). */
static int ordering(const struct perf_cmd *pc)
{
	const uint32_t selected = selected_queues(pc);
	int by_time = pc->order_by == ORDER_TIME ||
		      (pc->order_by == ORDER_DEFAULT && pc->action == ACTION_FLOW);
	return by_time && selected > 1 && pc->tc.valid && !pc->quiet;
}

void pts_perfcmd_each_queue(struct perf_cmd *pc, const char *action,
			    perf_queue_fn *run, void *ctx,
			    struct perf_totals *t)
{
	memset(t, 0, sizeof(*t));
	start_progress(pc);
	if (ordering(pc) && !(pc->order = pts_perforder_new())) {
		pts_cli_error(action, "out of memory");
		t->failed = 1;
		return;
	}
	/* Queue by queue, `flow` marks where each starts (`dump` and
	 * `windows` print a header of their own). */
	const int mark_queues = !pc->order && pc->action == ACTION_FLOW &&
				!pc->quiet && selected_queues(pc) > 1;
	for (uint32_t i = 0; i < pts_perf_queue_count(pc->perf); i++) {
		const struct pts_perf_queue *q = pts_perf_queue_get(pc->perf, i);
		if (!pts_perfcmd_queue_selected(pc, q))
			continue;
		/* ptdump and ptxed lines do not say their queue */
		char label[64];
		snprintf(label, sizeof(label), "# queue %" PRIu32 " (cpu %" PRId32
			 ", tid %" PRId32 ")", q->idx, q->cpu, q->tid);
		int plain = pc->format == FORMAT_PTDUMP ||
			    pc->format == FORMAT_PTXED;
		if (mark_queues && plain) {
			pts_out_puts(&pc->out, label);
			pts_out_puts(&pc->out, "\n");
		}
		int rc = pc->order ? pts_perforder_begin(pc->order, pc,
							 plain ? label : NULL)
				   : 0;
		if (rc == 0)
			rc = run(pc, i, ctx, t);
		if (pc->order && pts_perforder_end(pc->order, pc) < 0 && rc == 0)
			rc = -PTS_ERR_IO;
		if (rc < 0) {
			pts_cli_error(action, "queue %" PRIu32 ": %s", q->idx,
				      pts_strerror(rc));
			t->failed = 1;
		}
		t->queues++;
		t->bytes += q->bytes;
	}
	pts_progress_end(&pc->progress);
	if (pc->order && pts_perforder_merge(pc->order, pc) < 0) {
		pts_cli_error(action, "cannot merge the queues' output: %s",
			      pts_strerror(-PTS_ERR_IO));
		t->failed = 1;
	}
	pts_perforder_free(pc->order);
	pc->order = NULL;
}
