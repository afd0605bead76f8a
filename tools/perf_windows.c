/* `ptscope perf windows`: the windows report (windows_report.h) of each
 * AUXTRACE queue, configured from the PT event (attr.config is RTIT_CTL bit
 * for bit; AUXTRACE_INFO gives the TSC:CTC ratio and the nominal ratio).
 * Data the AUX records say was lost (TRUNCATED) and buffers that do not
 * continue their predecessor become "truncated" gaps. With the code the
 * MMAP records name (found as `perf flow` finds it) the flow decoder runs
 * over the same bytes and gives the model its evidence (windows_evidence.h:
 * ENCLU at an enclave entry, SYSCALL, ...), as `ptscope windows --elf`. */
#include "perf_cmd.h"
#include "perf_images.h"
#include "windows_evidence.h"
#include "windows_report.h"

#include <ptscope/model.h>
#include <ptscope/windows.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char cmd[] = "perf windows";

#define MAX_LOSSES 4096

struct queue_report {
	struct perf_cmd *pc;
	const struct pts_perf_queue *q;
	uint64_t reference; /* of the first buffer: extends 56-bit TSCs */
	struct pts_perf_str comm;
};

void pts_perfcmd_trace_config(const struct pts_perf *perf,
			      struct pts_trace_config *tc)
{
	struct pts_perf_pt_config pc;
	struct pts_perf_pt_info info;
	pts_perf_cpu(perf, &tc->cpu);
	if (pts_perf_pt_config(perf, &pc) == 0) {
		tc->ctl = pc.rtit_ctl;
		tc->known |= PTS_CFG_CTL;
	}
	if (pts_perf_pt_info(perf, &info) < 0)
		return;
	if (info.tsc_ctc_d && info.tsc_ctc_n && info.tsc_ctc_d <= UINT32_MAX &&
	    info.tsc_ctc_n <= UINT32_MAX) {
		tc->cpuid_15_eax = (uint32_t)info.tsc_ctc_d;
		tc->cpuid_15_ebx = (uint32_t)info.tsc_ctc_n;
		tc->known |= PTS_CFG_CPUID15;
	}
	if (info.max_nonturbo_ratio && info.max_nonturbo_ratio <= 255) {
		tc->nom_freq = (uint8_t)info.max_nonturbo_ratio;
		tc->known |= PTS_CFG_NOMFREQ;
	}
}

/* windows_report hook: queue, cpu, tid, comm and the perf time of the
 * record's start first in every JSON object. */
static size_t queue_fields(void *ctx, const struct pts_win_record *r, char *p,
			   size_t cap)
{
	const struct queue_report *qr = ctx;
	int n = snprintf(p, cap, "\"queue\":%" PRIu32 ",\"cpu\":%" PRId32
				 ",\"tid\":%" PRId32 ",\"comm\":\"",
			 qr->q->idx, qr->q->cpu, qr->q->tid);
	if (n < 0 || (size_t)n >= cap)
		return 0;
	size_t len = (size_t)n;
	len += pts_perfcmd_json_str(p + len, cap - len - 40, qr->comm.ptr,
				    qr->comm.len);
	if (r && r->begin.has_time && qr->pc->tc.valid)
		n = snprintf(p + len, cap - len, "\",\"time\":%" PRIu64 ",",
			     pts_perf_tsc_to_time(
				     &qr->pc->tc,
				     pts_perf_tsc_extend(r->begin.tsc,
							 qr->reference)));
	else
		n = snprintf(p + len, cap - len, "\",\"time\":null,");
	return n < 0 || (size_t)n >= cap - len ? 0 : len + (size_t)n;
}

/* The flow decoder's side of one queue (no images: packets only). */
struct queue_code {
	struct pts_image *img; /* NULL: no code found */
	struct pts_winev *ev;
	const char *who; /* the command, for the flow decoder's summary */
};

/* The code of the queue's process: a per-thread queue's own; a per-cpu
 * queue runs several, and the model sees one stream, so all of them (a
 * later map replaces an earlier one where they overlap). NULL when no
 * mapped file was found. */
static struct pts_image *queue_images(struct perf_cmd *pc,
				      struct perf_maps *maps,
				      const struct pts_perf_queue *q)
{
	struct pts_image *img = pts_image_new();
	uint32_t found = pts_perfmaps_found(maps);
	if (!img)
		return NULL;
	pts_perfmaps_load(maps, img,
			  q->tid >= 0 ? pts_perfmaps_pid_of(maps, q->tid)
				      : PERFMAPS_ALL,
			  UINT64_MAX);
	pts_perfmaps_report(maps, cmd);
	if (pts_perfmaps_found(maps) == found) {
		pts_image_free(img);
		return NULL;
	}
	return img;
}

/* Ends the packet stream at @soff, reports the loss, resyncs there; the
 * flow decoder starts afresh at @soff. */
static int cut(struct pts_winrep *rep, struct pts_pkt_decoder *dec,
	       struct queue_code *code, uint64_t soff)
{
	struct pts_input none = {NULL, 0, 0};
	pts_pkt_end(dec);
	pts_winrep_decode(rep, dec, &none);
	if (code->ev) {
		pts_winev_finish(code->ev, code->who);
		pts_winev_free(code->ev);
		code->ev = pts_winev_new_at(rep, code->img, NULL, soff);
	}
	pts_winrep_truncated(rep, soff);
	pts_pkt_reset(dec, soff, 0);
	return code->img && !code->ev ? -PTS_ERR_NOMEM : 0;
}

/* One chunk of the stream: the flow decoder sees it first (its packets
 * then wait in the report for what it found). */
static int decode(struct pts_winrep *rep, struct pts_pkt_decoder *dec,
		  struct queue_code *code, struct pts_input *in)
{
	if (code->ev && pts_winev_flow(code->ev, *in) < 0)
		return -PTS_ERR_NOMEM;
	return pts_winrep_decode(rep, dec, in);
}

/* The queue's buffers through one packet decoder into @rep. */
static int run_queue(const struct pts_perfwin_queue *wq,
		     struct pts_winrep *rep, struct queue_code *code)
{
	static uint64_t losses[MAX_LOSSES];
	struct pts_perf *perf = wq->perf;
	const uint32_t qi = wq->qi;
	const struct pts_perf_queue *q = pts_perf_queue_get(perf, qi);
	uint32_t nl = pts_perf_queue_losses(perf, qi, losses, MAX_LOSSES);
	if (nl > MAX_LOSSES)
		nl = MAX_LOSSES;
	struct pts_pkt_decoder *dec = pts_pkt_decoder_new(&wq->pkt);
	if (!dec)
		return -PTS_ERR_NOMEM;
	if (code->img && !(code->ev = pts_winev_new_at(rep, code->img, NULL, 0))) {
		pts_pkt_decoder_free(dec);
		return -PTS_ERR_NOMEM;
	}
	uint64_t soff = 0;
	uint32_t li = 0;
	int rc = 0;
	for (uint32_t j = 0; j < q->nr_buffers && rc != -PTS_ERR_NO_PROGRESS &&
			     rc != -PTS_ERR_NOMEM;
	     j++) {
		const struct pts_perf_buffer *b =
			pts_perf_queue_buffer(perf, qi, j);
		if (j > 0 && !b->consecutive)
			rc = cut(rep, dec, code, soff);
		uint64_t pos = 0;
		while (pos < b->use_size && rc != -PTS_ERR_NO_PROGRESS &&
		       rc != -PTS_ERR_NOMEM) {
			while (li < nl && losses[li] <= soff + pos)
				li++;
			uint64_t end = li < nl && losses[li] < soff + b->use_size
					       ? losses[li] - soff
					       : b->use_size;
			struct pts_input in = {b->data + pos, (size_t)(end - pos),
					       0};
			rc = decode(rep, dec, code, &in);
			pos = end;
			if (pos < b->use_size && rc != -PTS_ERR_NOMEM &&
			    cut(rep, dec, code, soff + pos) < 0)
				rc = -PTS_ERR_NOMEM;
		}
		soff += b->use_size;
		if (wq->pc)
			pts_perfcmd_progress(wq->pc, b->use_size);
	}
	/* a loss at the very end of the data */
	while (li < nl && rc != -PTS_ERR_NO_PROGRESS && rc != -PTS_ERR_NOMEM)
		if (losses[li++] >= soff) {
			rc = cut(rep, dec, code, soff);
			break;
		}
	if (rc != -PTS_ERR_NO_PROGRESS && rc != -PTS_ERR_NOMEM) {
		struct pts_input none = {NULL, 0, 0};
		pts_pkt_end(dec);
		rc = pts_winrep_decode(rep, dec, &none);
	}
	if (code->ev)
		pts_winev_finish(code->ev, code->who);
	pts_winrep_finish(rep, soff);
	pts_winev_free(code->ev);
	code->ev = NULL;
	pts_pkt_decoder_free(dec);
	return rc == -PTS_ERR_NO_PROGRESS || rc == -PTS_ERR_NOMEM ? rc : 0;
}

int pts_perfwin_run_queue(const struct pts_perfwin_queue *wq,
			  struct pts_winrep *rep)
{
	struct queue_code code = {wq->img, NULL, wq->who};

	/* an AUX buffer may end inside a packet (perf copies out what the
	 * hardware wrote so far) */
	rep->opts.tail_truncated = 1;
	return run_queue(wq, rep, &code);
}

void pts_perfwin_queue_line(struct pts_out *out, const struct pts_perf *perf,
			    const struct pts_perf_queue *q)
{
	const struct pts_perf_str comm = pts_perf_comm_of(perf, q->tid);
	char line[256];

	snprintf(line, sizeof(line),
		 "# queue %" PRIu32 ": cpu %" PRId32 ", tid %" PRId32
		 " (%.*s), %" PRIu64 " AUX truncated\n",
		 q->idx, q->cpu, q->tid, (int)comm.len,
		 comm.ptr ? comm.ptr : "", q->aux_truncated);
	pts_out_puts(out, line);
}

int pts_perfcmd_windows(struct perf_cmd *pc)
{
	struct pts_config cfg;
	pts_config_init(&cfg);
	pts_perfcmd_trace_config(pc->perf, &cfg.trace);
	int status = PTS_EXIT_OK;
	for (uint32_t i = 0; i < pc->nr_enclaves; i++) {
		const char *spec = pc->enclaves[i];
		const char *why;

		if (pts_config_add_enclave_spec(&cfg, spec, NULL, &why) < 0) {
			pts_config_fini(&cfg);
			return pts_cli_usage_error(cmd, "--enclave: '%s': %s",
						   pc->enclaves[i], why);
		}
	}
	/* A window is not one thread's: a per-cpu queue's windows run over
	 * context switches, and no thread's share of one is reported. */
	const uint32_t nq = pc->tid >= 0 ? pts_perf_queue_count(pc->perf) : 0;
	for (uint32_t i = 0; i < nq; i++) {
		const struct pts_perf_queue *q =
			pts_perf_queue_get(pc->perf, i);
		if (pts_perfcmd_queue_selected(pc, q) && q->cpu >= 0) {
			pts_config_fini(&cfg);
			return pts_cli_usage_error(
				cmd, "--tid: queue %" PRIu32 " is CPU %" PRId32
				     "'s, whose windows run over context "
				     "switches; per-thread queues only (--cpu "
				     "selects a CPU's)",
				q->idx, q->cpu);
		}
	}
	uint64_t violations = 0;
	struct perf_maps *maps = pts_perfmaps_new(pc);
	if (!maps) {
		pts_config_fini(&cfg);
		pts_cli_error(cmd, "out of memory");
		return PTS_EXIT_USAGE;
	}
	for (uint32_t i = 0; status == PTS_EXIT_OK &&
			     i < pts_perf_queue_count(pc->perf); i++) {
		const struct pts_perf_queue *q = pts_perf_queue_get(pc->perf, i);
		if (!pts_perfcmd_queue_selected(pc, q))
			continue;
		const struct pts_perf_buffer *b0 =
			pts_perf_queue_buffer(pc->perf, i, 0);
		struct queue_report qr = {pc, q, b0 ? b0->reference : 0,
					  pts_perf_comm_of(pc->perf, q->tid)};
		struct pts_perfwin_queue wq = {
			pc->perf, i, {.cpu = pc->machine},
			queue_images(pc, maps, q), cmd, pc};
		struct pts_winrep_opts o = {0};
		o.jsonl = pc->format == FORMAT_JSONL;
		o.verify = (uint8_t)pc->verify;
		o.have_map = cfg.n_enclaves != 0 || wq.img;
		o.tsc_hz = pts_config_tsc_hz(&cfg.trace);
		o.jsonl_fields = queue_fields;
		o.jsonl_ctx = &qr;
		if (!o.jsonl)
			pts_perfwin_queue_line(&pc->out, pc->perf, q);
		struct pts_winrep rep;
		if (pts_winrep_init(&rep, &cfg.trace, &o, &pc->out) < 0) {
			pts_cli_error(cmd, "out of memory");
			pts_image_free(wq.img);
			status = PTS_EXIT_USAGE;
			break;
		}
		int rc = pts_perfwin_run_queue(&wq, &rep);
		if (rc == -PTS_ERR_NOMEM)
			pts_cli_error(cmd, "out of memory");
		if (rc < 0 || rep.failed)
			status = PTS_EXIT_USAGE;
		violations += pts_winrep_violations(&rep);
		pts_winrep_fini(&rep);
		pts_image_free(wq.img);
	}
	pts_perfmaps_free(maps);
	pts_config_fini(&cfg);
	if (status == PTS_EXIT_OK && pc->verify && violations)
		status = PTS_EXIT_ERRORS;
	return status;
}
