/* `ptscope perf`: what its actions share (cmd_perf.c: options, info and
 * dump; perf_flow.c: flow; perf_windows.c: windows). Internal to tools/. */
#ifndef PTS_TOOLS_PERF_CMD_H
#define PTS_TOOLS_PERF_CMD_H

#include "cli.h"

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
	const char *sysroot;
	const char *remaps[PTS_PERF_MAX_REMAPS]; /* --remap OLD=NEW */
	uint32_t nr_remaps;
	const char *enclaves[PTS_PERF_MAX_ENCLAVES]; /* windows --enclave */
	uint32_t nr_enclaves;
	const char *path;
	struct pts_print_opts popts;

	struct pts_perf *perf;
	struct pts_perf_time_conv tc;
	struct pts_out out;
};

/* Queue @q passes --cpu and (per-thread queues) --tid. */
int pts_perfcmd_queue_selected(const struct perf_cmd *pc,
			       const struct pts_perf_queue *q);

/* Appends @s (@len bytes) JSON-escaped at @p (@room bytes); returns the
 * length written. */
size_t pts_perfcmd_json_str(char *p, size_t room, const char *s, size_t len);

/* The actions in their own files. Return the exit status. */
int pts_perfcmd_flow(struct perf_cmd *pc);
int pts_perfcmd_windows(struct perf_cmd *pc);

#endif
