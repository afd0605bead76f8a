/* `ptscope perf`: what its actions share (cmd_perf.c: options, info and
 * dump; perf_flow.c: flow; perf_windows.c: windows). Internal to tools/. */
#ifndef PTS_TOOLS_PERF_CMD_H
#define PTS_TOOLS_PERF_CMD_H

#include "cli.h"
#include "progress.h"

#include <ptscope/perfdata.h>

#include <stddef.h>
#include <stdint.h>

enum perf_action { ACTION_INFO, ACTION_DUMP, ACTION_FLOW, ACTION_WINDOWS };
/* FORMAT_DEFAULT becomes ptdump (dump), ptxed (flow) or text (windows). */
enum perf_format {
	FORMAT_DEFAULT,
	FORMAT_PTDUMP,
	FORMAT_JSONL,
	FORMAT_PTXED,
	FORMAT_PERF,
	FORMAT_TEXT
};

#define PTS_PERF_MAX_REMAPS 16
#define PTS_PERF_MAX_ENCLAVES 8

struct perf_cmd {
	enum perf_action action;
	enum perf_format format;
	int quiet, verbose, no_inst, verify;
	int64_t cpu, tid; /* filters; -1: all */
	uint64_t tid_lines; /* lines printed that --tid let through */
	const char *sysroot;
	const char *remaps[PTS_PERF_MAX_REMAPS]; /* --remap OLD=NEW */
	uint32_t nr_remaps;
	const char *enclaves[PTS_PERF_MAX_ENCLAVES]; /* windows --enclave */
	uint32_t nr_enclaves;
	const char *path;
	struct pts_print_opts popts;

	/* --order: ORDER_DEFAULT is time for flow, queue for dump. */
	enum { ORDER_DEFAULT, ORDER_TIME, ORDER_QUEUE } order_by;

	struct pts_perf *perf;
	struct pts_cpu machine; /* the recording CPU: its errata */
	struct pts_perf_time_conv tc;
	struct pts_out out;
	/* Output in time order (perf_order.h): set while the queues run
	 * when more than one is selected and times are known; NULL: each
	 * queue's output as it comes. */
	struct perf_order *order;
	/* Over the AUX bytes of the selected queues, per buffer decoded. */
	struct pts_progress progress;
	uint64_t progress_done;
};

/* Counts @bytes of AUX data as decoded (after each buffer). */
void pts_perfcmd_progress(struct perf_cmd *pc, uint64_t bytes);

struct perf_order;
/* The time of what an action writes next (for --order time); a no-op
 * when the output is not being ordered. */
void pts_perfcmd_mark(struct perf_cmd *pc, uint64_t time);

/* Queue @q passes --cpu and (per-thread queues) --tid. */
int pts_perfcmd_queue_selected(const struct perf_cmd *pc,
			       const struct pts_perf_queue *q);

/* Refuses, with a message, a capture without PT (but for info) and a
 * --cpu or --tid that selects nothing. Returns 0 or the exit status. */
int pts_perfcmd_check_selection(struct perf_cmd *pc);

/* After dump or flow: when --tid let no line through (the thread ran
 * only while tracing was off, or no time places it), says so and
 * returns 1; else 0. */
int pts_perfcmd_tid_unseen(const struct perf_cmd *pc);

/* What an action found over the queues --cpu and --tid select. */
struct perf_totals {
	uint32_t queues;
	uint64_t bytes;
	uint64_t items;   /* packets or instructions */
	uint64_t errors;  /* decode errors */
	uint64_t skipped; /* bytes skipped to reach a PSB */
	int failed;       /* a queue could not be decoded to its end */
};

/* Decodes queue @qi for an action and adds what it found to @t's items,
 * errors and skipped. Returns 0 or a negative error code. */
typedef int perf_queue_fn(struct perf_cmd *pc, uint32_t qi, void *ctx,
			  struct perf_totals *t);

/* Runs @run on every selected queue and adds up into @t (zeroed first); a
 * queue @run fails reports as "ptscope @action: queue N: <error>". */
void pts_perfcmd_each_queue(struct perf_cmd *pc, const char *action,
			    perf_queue_fn *run, void *ctx,
			    struct perf_totals *t);

/* Moves @cur to the next MMAP or MMAP2 record (malformed ones skipped) and
 * returns 1 with it in @rec; returns 0 at the end. */
int pts_perfcmd_next_mmap(struct perf_cmd *pc, struct pts_perf_cursor *cur,
			  struct pts_perf_record *rec);

/* Grows the array @*arr (elements of @elem bytes, @*cap of them) so that
 * @need fit, doubling. Returns 0, or -PTS_ERR_NOMEM (@*arr unchanged). */
int pts_perfcmd_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem);

/* Appends @s (@len bytes) JSON-escaped at @p (@room bytes); returns the
 * length written. */
size_t pts_perfcmd_json_str(char *p, size_t room, const char *s, size_t len);

/* Why pts_perf_pt_info() failed (not for another AUXTRACE type), into
 * @buf: a bad filter string length, a record too short, or none. */
const char *pts_perfcmd_pt_info_error(const struct pts_perf_pt_info *pt,
				      char *buf, size_t size);

/* Opens the perf.data @path for command @who (cmd_perf.c): 0, 1 when it
 * is damaged (said on stderr, with what is wrong; what precedes the
 * damage is read), or minus the exit status when it cannot be read (said
 * too): -PTS_EXIT_USAGE for an I/O error or no perf.data (no magic),
 * -PTS_EXIT_ERRORS when it is damaged before anything could be read (its
 * header, its attributes). */
int pts_perfcmd_open(const char *who, const char *path,
		     struct pts_perf **perf);

/* A capture without PT data (and not damaged: then it may be behind the
 * damage) is refused, as @who: returns PTS_EXIT_USAGE (said), else 0. */
int pts_perfcmd_no_pt(const char *who, const char *path,
		      const struct pts_perf *perf);

struct pts_trace_config;
/* The configuration perf recorded into @tc (perf_windows.c): attr.config
 * maps onto RTIT_CTL bit for bit, AUXTRACE_INFO gives the CPUID 0x15 ratio
 * and the nominal ratio, the CPUID feature the CPU (errata). Also used by
 * `ptscope windows` on a perf.data. */
void pts_perfcmd_trace_config(const struct pts_perf *perf,
			      struct pts_trace_config *tc);

struct pts_winrep;
struct pts_image;
/* One queue of a perf.data for a windows report (perf_windows.c). */
struct pts_perfwin_queue {
	struct pts_perf *perf;
	uint32_t qi;
	struct pts_pkt_config pkt; /* the packet decoder's (errata) */
	struct pts_image *img;     /* not owned; NULL: packets only */
	const char *who;           /* the command, in messages */
	struct perf_cmd *pc;       /* NULL: no progress meter */
};
/* The windows report of the queue into @rep (pts_winrep_finish() done):
 * its buffers through one packet decoder, what the AUX records say was
 * lost and buffers that do not continue their predecessor as truncated
 * gaps; with an image, the flow decoder's evidence. Used by `perf windows`
 * and `windows --perf`. Returns 0, -PTS_ERR_NO_PROGRESS or
 * -PTS_ERR_NOMEM. */
int pts_perfwin_run_queue(const struct pts_perfwin_queue *wq,
			  struct pts_winrep *rep);
/* The text report's line before a queue: its CPU, thread and the AUX
 * records that said data was lost. */
void pts_perfwin_queue_line(struct pts_out *out, const struct pts_perf *perf,
			    const struct pts_perf_queue *q);

/* The actions in their own files. Return the exit status. */
int pts_perfcmd_flow(struct perf_cmd *pc);
int pts_perfcmd_windows(struct perf_cmd *pc);

#endif
