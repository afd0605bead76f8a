/* `ptscope perf flow`: the instruction flow of each AUXTRACE queue of a
 * perf.data file. The code comes from the files the MMAP/MMAP2 records name;
 * the PT bytes are decoded in place from the mapped file. Each instruction
 * gets the time perf's decoder would give it, so that `--format perf` can be
 * diffed line by line against `perf script --itrace=i0ns`. */
#include "flow_print.h"
#include "perf_clockwalk.h"
#include "perf_cmd.h"
#include "perf_images.h"
#include "perf_procs.h"

#include <ptscope/decoder.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char cmd[] = "perf flow";

#define MAX_RECS 512
#define MAX_LOSSES 4096
#define FIELDS_MAX 256
#define PIP_SIZE 8 /* what pts_perfprocs_pip() writes */
#define NEED_CACHE_BITS 12 /* 4096 runs whose last instruction is known */
#define NEED_CACHE (1u << NEED_CACHE_BITS)
#define HELD_MAX 16 /* events that open a stretch, waiting for its time */

/* What the last instruction of a run needs, by run id (direct-mapped). */
struct need_slot {
	uint64_t run;
	uint8_t need; /* enum clockwalk_need */
};

/* ------------------------------------------------------------------------ */
/* One queue.                                                                */

struct queue_flow {
	struct perf_cmd *pc;
	const struct pts_perf_queue *q;
	uint32_t qi;
	struct pts_image *img;
	struct pts_flow *flow;
	struct clock_walk clock;
	int timed;
	/* perf ns of the current record (timed and @time_known: perf's
	 * clock had a TSC by then) */
	uint64_t time;
	int time_known;
	/* INSNS: perf ns of the instructions before @split (@time: the
	 * others) and of the last one */
	uint64_t time_head, time_last;
	uint32_t split;
	struct pts_insn_classifier *cls;
	struct need_slot *needs;
	int32_t pid, tid;
	struct pts_perf_str comm;
	uint64_t insns, errors, events, skipped;
	struct perf_maps *maps;
	/* Per-cpu queues: the PIPs that tell the walker which process runs
	 * (perf_procs.h). The walker counts them in its stream offsets:
	 * @fed_at[k] is where the k-th one sat in the walker's stream. */
	struct perf_procs procs;
	uint64_t *fed_at;
	uint32_t nfed;
	uint64_t shift; /* bytes inserted so far */
	/* The events that open a stretch (enabled and the state around it)
	 * take the time and thread of the record after them: perf's clock
	 * and the switch sideband only place the stretch from there (they
	 * took the previous stretch's, or none). @opening: from the start
	 * of a walker, and from an enable, until that record. */
	struct pts_flow_rec held[HELD_MAX];
	uint32_t nheld;
	int opening;
};

/* The number of PIPs inserted before walker offset @w. */
static uint32_t pips_before(const struct queue_flow *f, uint64_t w)
{
	uint32_t lo = 0, hi = f->nfed; /* first fed_at >= w */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (f->fed_at[mid] < w)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The stream offset of walker offset @w; 0 for the inserted PIP itself. */
static int real_offset(const struct queue_flow *f, uint64_t w, uint64_t *off)
{
	const uint32_t n = pips_before(f, w);
	if (n < f->nfed && f->fed_at[n] == w)
		return 0;
	*off = w - (uint64_t)n * PIP_SIZE;
	return 1;
}

/* The stream range of the SKIP record @r, whose walker range may hold
 * inserted PIPs; 0 when only those were skipped. */
static int real_skip(const struct queue_flow *f, struct pts_flow_rec *r)
{
	r->offset -= (uint64_t)pips_before(f, r->offset) * PIP_SIZE;
	r->arg -= (uint64_t)pips_before(f, r->arg) * PIP_SIZE;
	return r->arg > r->offset;
}

static int need_of_class(int iclass)
{
	switch (iclass) {
	case PTS_INSN_JCC:
		return CW_BIT;
	case PTS_INSN_RET:
		return CW_RET;
	case PTS_INSN_JMP_IND: case PTS_INSN_CALL_IND: case PTS_INSN_FAR:
		return CW_TIP;
	default:
		/* ENCLU too: perf's decoder takes it for a plain one */
		return CW_NONE;
	}
}

/* What the last instruction of run @r needs from the trace (perf's view). */
static int run_need(struct queue_flow *f, const struct pts_flow_rec *r)
{
	struct need_slot *slot = NULL;
	if (r->run && f->needs) {
		/* Hashed: a run id keeps its block in the high bits and the
		 * run's place in the block in the low ones. */
		slot = &f->needs[(r->run * 0x9e3779b97f4a7c15ull) >>
				 (64 - NEED_CACHE_BITS)];
		if (slot->run == r->run)
			return slot->need;
	}
	struct pts_insn_info info;
	int need = CW_NONE;
	if (f->cls && pts_insn_decode(f->cls, f->img, r->cr3, r->mode,
				      r->ips[r->n - 1], &info) > 0)
		need = need_of_class(info.iclass);
	if (slot) {
		slot->run = r->run;
		slot->need = (uint8_t)need;
	}
	return need;
}

/* The thread and time of record @r: perf's sample times (perf_clockwalk.h),
 * one for all but the last instruction of a run and one for the last. */
static void locate(struct queue_flow *f, const struct pts_flow_rec *r)
{
	if (!f->timed)
		return;
	/* skipped bytes: no time of their own (that of the last record) */
	if (r->kind == PTS_FLOW_SKIP) {
		pts_clockwalk_skip(&f->clock, r->arg);
		return;
	}
	struct clockwalk_times t = {0};
	if (r->kind == PTS_FLOW_INSNS) {
		pts_clockwalk_run(&f->clock, r->ips, r->n, run_need(f, r), &t);
	} else if (r->kind == PTS_FLOW_ERROR) {
		t.head = t.body = t.last = pts_clockwalk_error(&f->clock, r->offset);
	} else {
		int async = r->kind == PTS_FLOW_EVENT &&
			    (r->type == PTS_EV_ASYNC_BRANCH ||
			     r->type == PTS_EV_ASYNC_DISABLED);
		t.head = t.body = t.last = pts_clockwalk_event(&f->clock, async);
	}
	const struct pts_perf_time_conv *tc = &f->pc->tc;
	/* no TSC yet: jsonl says null (it printed the conversion of 0, a
	 * time before time_zero) */
	f->time_known = t.body != 0;
	f->time = pts_perf_tsc_to_time(tc, t.body);
	f->time_head = t.head == t.body ? f->time : pts_perf_tsc_to_time(tc, t.head);
	f->time_last = t.last == t.body ? f->time : pts_perf_tsc_to_time(tc, t.last);
	f->split = t.split;
	int32_t pid = -1, tid = f->q->tid;
	if (f->q->cpu >= 0 && f->clock.stamp)
		pts_perf_thread_at(f->pc->perf, f->q->cpu, f->time, &pid, &tid);
	if (tid != f->tid) {
		f->tid = tid;
		f->comm = pts_perf_comm_of(f->pc->perf, tid);
	}
}

static size_t jsonl_fields(const struct queue_flow *f, char *p, size_t cap)
{
	int n = snprintf(p, cap, "\"queue\":%" PRIu32 ",\"cpu\":%" PRId32
				 ",\"tid\":%" PRId32 ",\"comm\":\"",
			 f->q->idx, f->q->cpu, f->tid);
	size_t len = (size_t)n;
	len += pts_perfcmd_json_str(p + len, cap - len - 40, f->comm.ptr,
				    f->comm.len);
	if (f->timed && f->time_known)
		n = snprintf(p + len, cap - len, "\",\"time\":%" PRIu64 ",",
			     f->time);
	else
		n = snprintf(p + len, cap - len, "\",\"time\":null,");
	return len + (size_t)n;
}

/* perf script -F comm,tid,cpu,time,ip,sym (time only when perf decodes
 * with timestamps): one line per instruction. */
static void print_perf(struct queue_flow *f, const struct pts_flow_rec *r)
{
	char comm[24];
	if (f->comm.len)
		snprintf(comm, sizeof(comm), "%.*s", (int)f->comm.len,
			 f->comm.ptr);
	else
		snprintf(comm, sizeof(comm), ":%" PRId32, f->tid);
	for (uint32_t i = 0; i < r->n; i++) {
		uint64_t t = i + 1 == r->n ? f->time_last
			     : i < f->split ? f->time_head
					     : f->time;
		const struct pts_symbol *sym =
			pts_image_symbol_at(f->img, r->cr3, r->ips[i]);
		char *p = pts_out_reserve(&f->pc->out, 512);
		const size_t room = pts_out_room(&f->pc->out);
		int n = snprintf(p, room, "%16s %5" PRId32 " [%03" PRId32 "] ",
				 comm, f->tid, f->q->cpu);
		/* timeless decoding: perf has no time field to print */
		if (f->timed)
			n += snprintf(p + n, room - (size_t)n,
				      "%5" PRIu64 ".%06" PRIu64 ": ",
				      t / 1000000000u, t % 1000000000u / 1000u);
		n += snprintf(p + n, room - (size_t)n, " %16" PRIx64 " %s\n",
			      r->ips[i], sym ? sym->name : "[unknown]");
		pts_out_commit(&f->pc->out, (size_t)n);
	}
}

/* jsonl: the run in up to three pieces, each with its perf time. */
static void print_jsonl_insns(struct queue_flow *f, struct pts_flow_printer *pr,
			      char *fields, const struct pts_flow_rec *r)
{
	uint64_t body = f->time;
	uint32_t split = f->split < r->n - 1 ? f->split : r->n - 1;
	uint32_t cut[3] = {split, r->n - 1 - split, 1};
	uint64_t when[3] = {f->time_head, body, f->time_last};
	uint32_t at = 0;
	for (int k = 0; k < 3; k++) {
		if (!cut[k])
			continue;
		struct pts_flow_rec piece = *r;
		piece.ips += at;
		piece.sizes += at;
		piece.ip = piece.ips[0];
		piece.n = cut[k];
		f->time = when[k];
		pr->fields_len = jsonl_fields(f, fields, FIELDS_MAX);
		pts_flow_print_insns(pr, &piece);
		at += cut[k];
	}
	f->time = body;
}

/* Whether lines of @f's thread now are printed (not with -q; with --tid,
 * that thread's only). */
static int printed(const struct queue_flow *f)
{
	const struct perf_cmd *pc = f->pc;
	return !pc->quiet && (pc->tid < 0 || f->tid == pc->tid);
}

/* Prints record @r, located: at the time and thread of @f. */
static void print_rec(struct queue_flow *f, const struct pts_flow_rec *r)
{
	struct perf_cmd *pc = f->pc;
	char fields[FIELDS_MAX];
	struct pts_flow_printer pr = {&pc->out, f->flow,
				      pc->format == FORMAT_JSONL,
				      (uint8_t)pc->no_inst, fields, 0};
	if (!printed(f))
		return;
	pc->tid_lines++;
	pts_perfcmd_mark(pc, f->time);
	if (pc->format == FORMAT_PERF) {
		if (r->kind == PTS_FLOW_INSNS)
			print_perf(f, r);
		return; /* perf's i0ns prints instructions only */
	}
	if (pr.jsonl)
		pr.fields_len = jsonl_fields(f, fields, sizeof(fields));
	if (r->kind == PTS_FLOW_INSNS && pr.jsonl)
		print_jsonl_insns(f, &pr, fields, r);
	else if (r->kind == PTS_FLOW_INSNS)
		pts_flow_print_insns(&pr, r);
	else if (r->kind == PTS_FLOW_EVENT)
		pts_flow_print_event(&pr, r);
	else if (r->kind == PTS_FLOW_SKIP)
		pts_flow_print_skip(&pr, r);
	else
		pts_flow_print_error(&pr, r);
}

/* Whether event @r waits for the record after it (see @held). */
static int hold(struct queue_flow *f, const struct pts_flow_rec *r)
{
	if (!f->timed || r->kind != PTS_FLOW_EVENT ||
	    r->type == PTS_EV_ASYNC_BRANCH || r->type == PTS_EV_ASYNC_DISABLED)
		return 0;
	f->opening |= r->type == PTS_EV_ENABLED;
	if (!f->opening || f->nheld == HELD_MAX)
		return 0;
	f->held[f->nheld++] = *r;
	return 1;
}

/* The events held, printed at the time and thread just located. */
static void release(struct queue_flow *f)
{
	for (uint32_t i = 0; i < f->nheld; i++)
		print_rec(f, &f->held[i]);
	f->nheld = 0;
	f->opening = 0;
}

static void print_batch(struct queue_flow *f, struct pts_flow_rec *recs, int n)
{
	for (int i = 0; i < n; i++) {
		struct pts_flow_rec *r = &recs[i];
		/* the inserted PIPs are ours: their events are not shown */
		if (f->nfed &&
		    !(r->kind == PTS_FLOW_SKIP
			      ? real_skip(f, r)
			      : real_offset(f, r->offset, &r->offset)))
			continue;
		f->insns += r->kind == PTS_FLOW_INSNS ? r->n : 0;
		f->errors += r->kind == PTS_FLOW_ERROR;
		f->events += r->kind == PTS_FLOW_EVENT;
		f->skipped += r->kind == PTS_FLOW_SKIP ? r->arg - r->offset : 0;
		if (hold(f, r))
			continue;
		/* --quiet still computes the times: what perf always does */
		locate(f, r);
		release(f);
		print_rec(f, r);
	}
}

/* A note where the stream restarts: data lost or a buffer that does not
 * continue. Not in --format perf (perf prints such errors only with 'e'). */
static void print_break(struct queue_flow *f, uint64_t off, const char *why)
{
	struct perf_cmd *pc = f->pc;
	release(f);
	if (!printed(f) || pc->format == FORMAT_PERF)
		return;
	pts_perfcmd_mark(pc, f->time);
	char *p = pts_out_reserve(&pc->out, 512);
	size_t room = pts_out_room(&pc->out);
	int n;
	if (pc->format == FORMAT_JSONL) {
		n = snprintf(p, room, "{");
		n += (int)jsonl_fields(f, p + n, room - (size_t)n);
		n += snprintf(p + n, room - (size_t)n,
			      "\"offset\":%" PRIu64 ",\"lost\":\"%s\"}\n", off,
			      why);
	} else {
		n = snprintf(p, room, "[%" PRIx64 ": %s]\n", off, why);
	}
	pts_out_commit(&pc->out, (size_t)n);
}

/* Decodes @in (NULL: the end of a segment) and prints. Returns 0 or a
 * negative error of the walker. */
static int pump(struct queue_flow *f, struct pts_input *in,
		struct pts_flow_rec *recs)
{
	struct pts_input none = {NULL, 0, 0};
	if (!in) {
		pts_flow_end(f->flow);
		in = &none;
	}
	for (;;) {
		int n = pts_flow_next(f->flow, in, recs, MAX_RECS);
		if (n > 0) {
			print_batch(f, recs, n);
			continue;
		}
		if (n == -PTS_ERR_AGAIN || n == -PTS_ERR_EOS)
			return 0;
		return n;
	}
}

/* Starts a fresh walker whose first byte is stream offset @soff. */
static int restart(struct queue_flow *f, uint64_t soff)
{
	struct pts_flow_config fc = {0};
	fc.base_offset = soff + f->shift;
	fc.cpu = f->pc->machine;
	pts_flow_free(f->flow);
	f->flow = pts_flow_new(&fc, f->img);
	f->opening = 1;
	return f->flow ? 0 : -PTS_ERR_NOMEM;
}

/* The next place at or after stream offset @at, below @end, where the
 * feed must stop: an AUX loss (*@loss set) or a PIP to insert. @end when
 * there is none. */
static uint64_t next_cut(struct queue_flow *f, const uint64_t *losses,
			 uint32_t nl, uint32_t *li, uint32_t *pi, uint64_t at,
			 uint64_t end, int *loss)
{
	const struct perf_procs *p = &f->procs;
	while (*li < nl && losses[*li] <= at)
		(*li)++;
	while (*pi < p->n && p->inj[*pi].offset < at)
		(*pi)++;
	uint64_t cut = end;
	*loss = 0;
	if (*pi < p->n && p->inj[*pi].offset < cut)
		cut = p->inj[*pi].offset;
	if (*li < nl && losses[*li] < end && losses[*li] <= cut) {
		cut = losses[*li];
		*loss = 1;
	}
	return cut;
}

/* Feeds the PIP of the process that starts at stream offset @at. */
static int feed_pip(struct queue_flow *f, uint64_t cr3, uint64_t at,
		    struct pts_flow_rec *recs)
{
	uint8_t pip[16];
	int len = pts_perfprocs_pip(cr3, pip, sizeof(pip));
	if (len != PIP_SIZE)
		return -PTS_ERR_INVALID;
	f->fed_at[f->nfed++] = at + f->shift;
	f->shift += PIP_SIZE;
	struct pts_input in = {pip, PIP_SIZE, 0};
	return pump(f, &in, recs);
}

/* Feeds the queue's buffers, cut at the AUX losses and where a PIP goes
 * in. A loss or a buffer that does not continue the one before restarts
 * the walker. */
static int walk(struct queue_flow *f, struct pts_flow_rec *recs)
{
	static uint64_t losses[MAX_LOSSES];
	uint32_t nl = pts_perf_queue_losses(f->pc->perf, f->qi, losses,
					    MAX_LOSSES);
	uint32_t li = 0, pi = 0;
	uint64_t soff = 0;
	int rc = restart(f, 0);
	if (nl > MAX_LOSSES)
		nl = MAX_LOSSES;
	for (uint32_t j = 0; j < f->q->nr_buffers && rc == 0; j++) {
		const struct pts_perf_buffer *b =
			pts_perf_queue_buffer(f->pc->perf, f->qi, j);
		if (j > 0 && !b->consecutive) {
			rc = pump(f, NULL, recs);
			print_break(f, soff, "not consecutive");
			if (rc == 0)
				rc = restart(f, soff);
		}
		uint64_t pos = 0;
		while (rc == 0 && pos < b->use_size) {
			int loss;
			uint64_t end = next_cut(f, losses, nl, &li, &pi,
						soff + pos, soff + b->use_size,
						&loss) - soff;
			struct pts_input in = {b->data + pos, (size_t)(end - pos), 0};
			rc = pump(f, &in, recs);
			pos = end;
			if (rc == 0 && loss) {
				rc = pump(f, NULL, recs);
				print_break(f, soff + pos, "aux truncated");
				li++;
				if (rc == 0)
					rc = restart(f, soff + pos);
			}
			if (rc == 0 && pi < f->procs.n &&
			    f->procs.inj[pi].offset == soff + pos) {
				rc = feed_pip(f, f->procs.inj[pi].cr3, soff + pos,
					      recs);
				pi++;
			}
		}
		soff += b->use_size;
		pts_perfcmd_progress(f->pc, b->use_size);
	}
	if (rc == 0)
		rc = pump(f, NULL, recs);
	release(f); /* nothing after them: the last time known */
	return rc;
}

/* Whether a queue holds one CPU's trace of whatever ran there: per-cpu
 * buffers with switch sideband (the AUXTRACE tid, when set, only says who
 * ran when perf copied the buffer out), or no tid at all. */
static int per_cpu(const struct queue_flow *f)
{
	struct pts_perf_pt_info info;
	if (f->q->cpu < 0)
		return 0;
	if (f->q->tid < 0)
		return 1;
	return pts_perf_pt_info(f->pc->perf, &info) == 0 &&
	       info.per_cpu_mmaps && info.have_sched_switch;
}

/* The code the queue starts with: a per-thread queue's process; on a
 * per-cpu queue each process the switch sideband names in a space of its
 * own, or every process's maps when it names none. */
static int setup_images(struct queue_flow *f)
{
	struct perf_cmd *pc = f->pc;
	if (!per_cpu(f)) {
		pts_perfmaps_load(f->maps, f->img,
				  pts_perfmaps_pid_of(f->maps, f->q->tid),
				  UINT64_MAX);
		return 0;
	}
	if (f->timed) {
		int rc = pts_perfprocs_scan(pc, f->qi, f->q->cpu, f->maps,
					    f->img, &f->procs);
		if (rc < 0)
			return rc;
	}
	if (f->procs.n) {
		f->fed_at = malloc(f->procs.n * sizeof(*f->fed_at));
		if (!f->fed_at)
			return -PTS_ERR_NOMEM;
	}
	pts_perfmaps_load(f->maps, f->img,
			  f->procs.n ? PERFMAPS_KERNEL : PERFMAPS_ALL, 0);
	return 0;
}

/* What every queue of one `perf flow` shares. */
struct flow_ctx {
	struct pts_flow_rec *recs;
	struct perf_maps *maps;
};

static int run_queue(struct perf_cmd *pc, uint32_t qi, struct flow_ctx *x,
		     struct queue_flow *f)
{
	struct pts_flow_rec *recs = x->recs;
	memset(f, 0, sizeof(*f));
	f->maps = x->maps;
	f->pc = pc;
	f->qi = qi;
	f->q = pts_perf_queue_get(pc->perf, qi);
	f->tid = f->q->tid;
	f->comm = pts_perf_comm_of(pc->perf, f->tid);
	f->timed = pc->tc.valid;
	f->img = pts_image_new();
	int rc = -PTS_ERR_NOMEM;
	if (f->timed) {
		/* perf's times depend on what each run's last instruction
		 * takes from the trace */
		f->cls = pts_insn_classifier_new();
		f->needs = calloc(NEED_CACHE, sizeof(*f->needs));
	}
	if (f->img && (!f->timed || (f->cls && f->needs)) &&
	    pts_clockwalk_init(&f->clock, pc, qi) == 0) {
		rc = setup_images(f);
		if (rc == 0)
			rc = walk(f, recs);
		pts_perfmaps_report(f->maps, cmd);
	}
	pts_perfprocs_free(&f->procs);
	free(f->fed_at);
	pts_flow_free(f->flow);
	pts_clockwalk_fini(&f->clock);
	pts_insn_classifier_free(f->cls);
	free(f->needs);
	pts_image_free(f->img);
	return rc;
}

static int flow_queue(struct perf_cmd *pc, uint32_t qi, void *ctx,
		      struct perf_totals *t)
{
	struct queue_flow f;
	int rc = run_queue(pc, qi, ctx, &f);
	t->items += f.insns;
	t->errors += f.errors;
	t->skipped += f.skipped;
	return rc;
}

int pts_perfcmd_flow(struct perf_cmd *pc)
{
	struct flow_ctx x = {malloc(MAX_RECS * sizeof(*x.recs)),
			     pts_perfmaps_new(pc)};
	if (!x.recs || !x.maps) {
		free(x.recs);
		pts_perfmaps_free(x.maps);
		pts_cli_error(cmd, "out of memory");
		return PTS_EXIT_USAGE;
	}
	double t0 = pts_cli_now();
	struct perf_totals t;
	pts_perfcmd_each_queue(pc, cmd, flow_queue, &x, &t);
	free(x.recs);
	pts_perfmaps_free(x.maps);
	double dt = pts_cli_now() - t0;
	if (pc->quiet)
		fprintf(stderr,
			"ptscope perf flow: %" PRIu32 " queue(s), %" PRIu64
			" bytes, %" PRIu64 " instructions, %" PRIu64
			" errors, %" PRIu64 " bytes skipped, %.3f s (%.1f M "
			"insn/s)\n",
			t.queues, t.bytes, t.items, t.errors, t.skipped, dt,
			dt > 0 ? (double)t.items / dt / 1e6 : 0.0);
	else if (t.errors && pc->format == FORMAT_PERF)
		fprintf(stderr, "Warning:\n%" PRIu64
				" instruction trace errors\n", t.errors);
	if (t.failed || pts_perfcmd_tid_unseen(pc))
		return PTS_EXIT_USAGE;
	return t.errors ? PTS_EXIT_ERRORS : PTS_EXIT_OK;
}
