/* `ptscope perf`: a capture with no PT, or a --cpu or --tid that selects
 * nothing, is said so instead of giving empty output and exit 0. */
#include "perf_cmd.h"

#include <inttypes.h>
#include <stdio.h>

static const char cmd[] = "perf";

/* The thread a record's body names, or -1. Every record that names one
 * counts (its sample_id trailer too), since a per-cpu queue's stretches
 * of a thread come from any of them (switches, samples, ITRACE_START). */
static int64_t record_tid(const struct pts_perf_record *r)
{
	switch (r->type) {
	case PTS_PERF_RECORD_COMM:
		return r->u.comm.tid;
	case PTS_PERF_RECORD_MMAP:
	case PTS_PERF_RECORD_MMAP2:
		return r->u.mmap.tid;
	case PTS_PERF_RECORD_FORK:
	case PTS_PERF_RECORD_EXIT:
		return r->u.task.tid;
	case PTS_PERF_RECORD_SWITCH_CPU_WIDE:
		return r->u.sw.next_prev_tid;
	case PTS_PERF_RECORD_ITRACE_START:
		return r->u.itrace_start.tid;
	case PTS_PERF_RECORD_SAMPLE:
		return r->u.sample.tid;
	default:
		return -1;
	}
}

/* Whether thread @tid appears in a queue or a record of the capture. */
static int tid_known(const struct perf_cmd *pc, int64_t tid)
{
	for (uint32_t i = 0; i < pts_perf_queue_count(pc->perf); i++)
		if (pts_perf_queue_get(pc->perf, i)->tid == tid)
			return 1;
	struct pts_perf_cursor cur;
	struct pts_perf_record rec;
	int rc;
	pts_perf_cursor_init(pc->perf, &cur);
	while ((rc = pts_perf_next_record(pc->perf, &cur, &rec, NULL)) != 0)
		if (rc > 0 && (record_tid(&rec) == tid ||
			       ((rec.sid.have & PTS_PERF_SAMPLE_TID) &&
				rec.sid.tid == tid)))
			return 1;
	return 0;
}

/* Whether a selected queue's trace can hold thread @tid: a per-thread
 * queue of it, or a per-CPU one whose CPU it ran on (lines are given the
 * thread the switch records put there, else the queue's). */
static int tid_traced(const struct perf_cmd *pc, int64_t tid)
{
	for (uint32_t i = 0; i < pts_perf_queue_count(pc->perf); i++) {
		const struct pts_perf_queue *q =
			pts_perf_queue_get(pc->perf, i);
		if (pts_perfcmd_queue_selected(pc, q) &&
		    (q->tid == tid ||
		     (q->cpu >= 0 &&
		      pts_perf_thread_ran(pc->perf, q->cpu, (int32_t)tid))))
			return 1;
	}
	return 0;
}

/* The CPUs of the queues, for the message of a --cpu matching none. */
static void list_cpus(const struct perf_cmd *pc, char *buf, size_t cap)
{
	size_t n = 0;
	buf[0] = '\0';
	for (uint32_t i = 0; i < pts_perf_queue_count(pc->perf); i++) {
		const int32_t cpu = pts_perf_queue_get(pc->perf, i)->cpu;
		if (cpu < 0 || n >= cap)
			continue;
		int w = snprintf(buf + n, cap - n, "%s%" PRId32, n ? " " : "",
				 cpu);
		n += w > 0 ? (size_t)w : 0;
	}
}

int pts_perfcmd_tid_unseen(const struct perf_cmd *pc)
{
	if (pc->tid < 0 || pc->tid_lines)
		return 0;
	pts_cli_error(cmd,
		      "--tid=%" PRId64 ": no line of that thread (it ran "
		      "only while tracing was off, or no timing packet places "
		      "it)",
		      pc->tid);
	return 1;
}

const char *pts_perfcmd_pt_info_error(const struct pts_perf_pt_info *pt,
				      char *buf, size_t size)
{
	if (pt->bad_filter_len)
		snprintf(buf, size, "AUXTRACE_INFO's filter string length %"
			 PRIu64 " runs past the record", pt->bad_filter_len);
	else if (pt->nr_priv)
		snprintf(buf, size, "AUXTRACE_INFO too short");
	else
		snprintf(buf, size,
			 "no AUXTRACE_INFO record: record with -e intel_pt//");
	return buf;
}

int pts_perfcmd_no_pt(const char *who, const char *path,
		      const struct pts_perf *perf)
{
	struct pts_perf_pt_info pt;
	struct pts_perf_pt_config cfg;
	const int info = pts_perf_pt_info(perf, &pt);
	char why[96];

	/* In a damaged file the PT may be behind the damage, which was
	 * reported (exit 1). */
	if (pts_perf_summary(perf)->damaged)
		return 0;
	/* AUX data of another PMU is not PT, whatever its bytes look like:
	 * perf decodes nothing then */
	if (info == -PTS_ERR_UNSUPPORTED)
		snprintf(why, sizeof(why), "AUXTRACE type %" PRIu32
			 " is not Intel PT", pt.type);
	else if (info < 0)
		pts_perfcmd_pt_info_error(&pt, why, sizeof(why));
	else if (pts_perf_pt_config(perf, &cfg) < 0)
		snprintf(why, sizeof(why),
			 "no event has the PT PMU type %" PRIu64, pt.pmu_type);
	else if (!pts_perf_queue_count(perf))
		snprintf(why, sizeof(why), "no AUXTRACE data");
	else
		return 0;
	return pts_cli_usage_error(who, "%s holds no Intel PT trace (%s)",
				   path, why);
}

int pts_perfcmd_check_selection(struct perf_cmd *pc)
{
	const uint32_t nq = pts_perf_queue_count(pc->perf);
	if (pc->action != ACTION_INFO) {
		const int rc = pts_perfcmd_no_pt(cmd, pc->path, pc->perf);

		if (rc)
			return rc;
	}
	uint32_t selected = 0;
	for (uint32_t i = 0; i < nq; i++)
		selected += pts_perfcmd_queue_selected(
			pc, pts_perf_queue_get(pc->perf, i));
	if (pc->cpu >= 0 && !selected) {
		char cpus[256];
		list_cpus(pc, cpus, sizeof(cpus));
		return pts_cli_usage_error(
			cmd, "--cpu=%" PRId64 ": no queue of that CPU (%s%s)",
			pc->cpu, cpus[0] ? "queues of CPUs " : "",
			cpus[0] ? cpus : "the queues are per thread");
	}
	if (pc->tid >= 0 && (!selected || !tid_known(pc, pc->tid)))
		return pts_cli_usage_error(
			cmd,
			"--tid=%" PRId64 ": no such thread in the capture%s "
			"(`ptscope perf info` names threads)",
			pc->tid, pc->cpu >= 0 ? " on that CPU" : "");
	if (pc->tid >= 0 && pc->action != ACTION_INFO &&
	    !tid_traced(pc, pc->tid))
		return pts_cli_usage_error(
			cmd,
			"--tid=%" PRId64 ": the thread never ran on a traced "
			"CPU%s (no context switch to it)",
			pc->tid, pc->cpu >= 0 ? " of --cpu" : "");
	return 0;
}
