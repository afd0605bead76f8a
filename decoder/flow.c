/* The flow walker: walks cached blocks and resolves the instruction that
 * ends each one with the packet it needs (TNT bit, TIP, PGD), keeping the
 * return stack; stops before the IP of a FUP for async events. */
#include "cov_walk.h"
#include "flow_internal.h"
#include "text_cache.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The trace state as pts_flow_new() leaves it. */
static void trace_state_init(struct pts_flow *f)
{
	f->qhead = f->qlen = 0;
	f->ended = f->pkt_eos = false;
	f->q_in_psb = false;
	f->cbr_head = f->cbr_len = 0;
	f->st = ST_NOSYNC;
	f->nosync_from = f->pkt_config.base_offset;
	f->no_skip = false;
	f->ip = f->cr3 = 0;
	f->mode = PTS_EXEC_64;
	f->nr = 0;
	f->tnt_bits = f->tnt_offset = 0;
	f->tnt_count = 0;
	f->offset = 0;
	f->disabled_at = 0;
	f->have_disabled_at = false;
	memset(f->retstack, 0, sizeof(f->retstack));
	memset(f->retlink, 0, sizeof(f->retlink));
	f->rs_top = f->rs_len = 0;
	memset(f->hint_ip, 0, sizeof(f->hint_ip));
	memset(f->hint_link, 0, sizeof(f->hint_link));
	memset(f->hint_extra, 0, sizeof(f->hint_extra));
	f->hint_top = 0;
	f->idle = 0;
	f->psb_was_enabled = f->psb_have_fup = f->psb_stop = false;
	f->psb_ip = 0;
	f->out = NULL;
	f->out_n = f->out_max = 0;
	f->pend_head = f->pend_len = 0;
	f->flat = NULL;
	f->flat_n = 0;
	f->flat_walk_max = SIZE_MAX;
	f->link = NULL;
}

struct pts_flow *pts_flow_new(const struct pts_flow_config *config,
			      const struct pts_image *img)
{
	if (!img)
		return NULL;
	struct pts_flow_config defaults = {0};
	if (!config)
		config = &defaults;
	struct pts_flow *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	struct pts_pkt_config pc = {0};
	pc.cpu = config->cpu;
	pc.base_offset = config->base_offset;
	f->pkt_config = pc;
	f->img = img;
	f->img_gen = pts_image_generation(img);
	f->cls = pts_insn_classifier_new();
	f->cache = pts_block_cache_new(config->cache_bytes);
	f->pkt = pts_pkt_decoder_new(&pc);
	if (!f->cls || !f->cache || !f->pkt) {
		pts_flow_free(f);
		return NULL;
	}
	pts_cpu_errata(&config->cpu, &f->errata);
	for (unsigned n = 0; n < 4; n++) {
		if (config->addr_cfg[n] != 1)
			continue;
		f->filter_a[f->nfilter] = config->addr_a[n];
		f->filter_b[f->nfilter++] = config->addr_b[n];
	}
	trace_state_init(f);
	f->idle_limit = config->idle_limit ? config->idle_limit : IDLE_LIMIT;
	return f;
}

void pts_flow_free(struct pts_flow *flow)
{
	if (!flow)
		return;
	pts_insn_classifier_free(flow->cls);
	pts_block_cache_free(flow->cache);
	pts_pkt_decoder_free(flow->pkt);
	free(flow->fmap);
	pts_text_cache_free(flow->texts);
	free(flow);
}

void pts_flow_end(struct pts_flow *flow)
{
	if (flow && !flow->ended) {
		flow->ended = true;
		pts_pkt_end(flow->pkt);
	}
}

int pts_flow_reset(struct pts_flow *flow)
{
	if (!flow)
		return -PTS_ERR_INVALID;
	/* A new packet decoder: no carry bytes, last-IP or end mark of the
	 * old trace can leak into the new one. */
	struct pts_pkt_decoder *pkt = pts_pkt_decoder_new(&flow->pkt_config);
	if (!pkt)
		return -PTS_ERR_NOMEM;
	pts_pkt_decoder_free(flow->pkt);
	flow->pkt = pkt;
	trace_state_init(flow);
	uint64_t flushes = flow->stats.cache_flushes;
	memset(&flow->stats, 0, sizeof(flow->stats));
	flow->stats.cache_flushes = flushes;
	return 0;
}

void pts_flow_get_stats(const struct pts_flow *flow,
			struct pts_flow_stats *stats)
{
	*stats = flow->stats;
	stats->blocks_built = pts_block_cache_built(flow->cache);
}

/* Packets the flow does not use (time, padding, maintenance). */
static bool ignored(int kind)
{
	switch (kind) {
	case PTS_PKT_PAD: case PTS_PKT_TSC: case PTS_PKT_MTC:
	case PTS_PKT_TMA: case PTS_PKT_CYC: case PTS_PKT_CBR:
	case PTS_PKT_MNT:
		return true;
	default:
		return false;
	}
}

/* 1 when the packet @h at the head starts an event whose next packet
 * belongs to it (FUP and its TIP or TIP.PGD, OVF and the FUP it resolves
 * at, MODE.Exec, PIP or VMCS and the TIP of a far transfer, MODE.TSX and
 * its FUP): a CBR between them is read with the event, before it; else 0. */
static unsigned event_group(const struct pts_flow *f,
			    const struct pts_packet *h)
{
	switch (h->kind) {
	case PTS_PKT_OVF:
		return pts_flow_ovf_group(f);
	case PTS_PKT_FUP: case PTS_PKT_MODE_EXEC: case PTS_PKT_MODE_TSX:
	case PTS_PKT_PIP: case PTS_PKT_VMCS:
		return 1;
	default:
		return 0;
	}
}

static void queue_push(struct pts_flow *f, const struct pts_packet *p)
{
	f->q[f->qhead + f->qlen] = *p;
	f->qlen++;
}

/* Moves what is queued to the front, to make room at the end. */
static void queue_compact(struct pts_flow *f)
{
	if (!f->qhead)
		return;
	memmove(f->q, f->q + f->qhead, f->qlen * sizeof(f->q[0]));
	f->qhead = 0;
}

/* Decodes a batch of packets straight into the queue's free end and
 * squeezes out the ones the flow does not use. Returns the packet
 * layer's result. */
static int queue_batch(struct pts_flow *f, struct pts_input *in)
{
	unsigned tail = f->qhead + f->qlen;
	/* each packet may be a CBR for the ring beside the queue */
	unsigned room = QUEUE_CAP - tail, cbr_room = CBR_CAP - f->cbr_len;
	int r = pts_pkt_next_batch(f->pkt, in, f->q + tail,
				   (int)(room < cbr_room ? room : cbr_room));
	if (r <= 0)
		return r;
	f->stats.packets += (uint64_t)r;
	unsigned w = tail;
	for (unsigned i = tail; i < tail + (unsigned)r; i++) {
		if (f->q[i].kind == PTS_PKT_CBR && !f->q_in_psb) {
			/* room for all: the batch is no larger */
			unsigned c = (f->cbr_head + f->cbr_len++) % CBR_CAP;
			f->cbr[c].offset = f->q[i].offset;
			f->cbr[c].ratio = f->q[i].u.cbr.ratio;
			continue;
		}
		if (ignored(f->q[i].kind))
			continue;
		if (f->q[i].kind == PTS_PKT_PSB) {
			f->q_in_psb = true;
		} else if (f->q[i].kind == PTS_PKT_OVF) {
			f->q_in_psb = false;
		} else if (f->q[i].kind == PTS_PKT_PSBEND) {
			if (!f->q_in_psb)
				continue;
			f->q_in_psb = false;
		}
		if (w != i)
			f->q[w] = f->q[i];
		w++;
	}
	f->qlen += w - tail;
	return r;
}

/* Tops up the queue. Returns -PTS_ERR_AGAIN when @in ran out first. */
static int refill(struct pts_flow *f, struct pts_input *in)
{
	queue_compact(f);
	/* Room for a whole batch and the error record behind it. With
	 * CBR_CAP CBRs waiting the walk goes on with what is queued: it
	 * reports them as it passes them (pts_flow_cbr_stop()). */
	while (f->qlen < QUEUE_CAP - LOOKAHEAD && !f->pkt_eos &&
	       f->cbr_len < CBR_CAP) {
		int r = queue_batch(f, in);
		if (r > 0)
			continue;
		struct pts_packet p;
		uint64_t begin = 0, end = 0;
		switch (r) {
		case -PTS_ERR_AGAIN:
			return f->qlen >= LOOKAHEAD ? 0 : r;
		case -PTS_ERR_EOS:
			f->pkt_eos = true;
			break;
		case -PTS_ERR_SKIPPED:
			/* The walker reports them: it skips up to the
			 * next PSB too (SKIP records). */
			break;
		default:
			/* A packet error goes into the queue so that it is
			 * reported in stream order. */
			pts_pkt_error_range(f->pkt, &begin, &end);
			memset(&p, 0, sizeof(p));
			p.kind = PKT_ERROR;
			p.offset = begin;
			p.u.tsc = (uint64_t)(int64_t)r;
			queue_push(f, &p);
			if (r == -PTS_ERR_TRUNCATED)
				f->pkt_eos = true;
			break;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The walk.                                                                 */

/* Addresses a copy writes past a record's end at most, and reads past the
 * run in its block (which the arena allows). */
#define COPY_OVERRUN PTS_BLOCK_IPS_OVERREAD
_Static_assert(PTS_FLOW_IPS_MIN == STEP_IPS + COPY_OVERRUN,
	       "PTS_FLOW_IPS_MIN: one iteration of the walk and the overrun");

/* Copies the @n addresses of a run in a block to @dst in whole chunks of
 * 8: most runs take one fixed-size copy, no branch on the length (the
 * flat walk of bench_flow runs ~8% faster than with memcpy(n * 8)). */
static inline void copy_ips(uint64_t *restrict dst,
			    const uint64_t *restrict src, uint32_t n)
{
	for (uint32_t i = 0; i < n; i += 8)
		memcpy(dst + i, src + i, 8 * sizeof(uint64_t));
}

/* Appends @n addresses at @ips to the caller's flat array; returns where
 * they are now. */
static inline const uint64_t *flat_copy(struct pts_flow *f,
					const uint64_t *ips, uint32_t n)
{
	uint64_t *dst = f->flat + f->flat_n;
	copy_ips(dst, ips, n);
	f->flat_n += n;
	return dst;
}

/* flat_copy() for a record the walk puts into the caller's array. When
 * the flat array has no room left for another iteration of the walk, no
 * more records go there in this call: the walk stops as it does for
 * record room, and what the step still emits waits in f->pend. */
static inline const uint64_t *flat_put(struct pts_flow *f, const uint64_t *ips,
				       uint32_t n)
{
	const uint64_t *dst = flat_copy(f, ips, n);
	if (f->flat_n > f->flat_walk_max)
		f->out_max = f->out_n;
	return dst;
}

/* Hands out instructions [@from, @from + @n) of @b by pointer (into the
 * caller's flat array with pts_flow_next_ips()), or to the coverage sink
 * that walks with the walker (pts_cov_decode()). */
static inline void deliver(struct pts_flow *f, const struct pts_block *b,
			   uint32_t from, uint32_t n)
{
	if (f->cov) {
		if (from == 0 && n == b->n)
			pts_cov_block(f, b);
		else
			pts_cov_deliver(f, b, from, n);
		f->stats.insns += n;
		return;
	}
	const uint64_t *ips = b->ips + from;
	struct pts_flow_rec *r;
	if (f->out_n < f->out_max) {
		r = &f->out[f->out_n++];
		/* Copied now, while the block's addresses are hot. */
		if (f->flat)
			ips = flat_put(f, ips, n);
	} else {
		/* Keeps pointing into the cache until drained. */
		r = pts_flow_emit(f, PTS_FLOW_INSNS);
	}
	*r = (struct pts_flow_rec){
		.offset = f->offset,
		.ip = from ? b->ips[from] : b->ip,
		.cr3 = b->cr3,
		.ips = ips,
		.sizes = b->sizes + from,
		.run = pts_run_id(b->id, from, n),
		.n = n,
		.kind = PTS_FLOW_INSNS,
		.mode = b->mode,
	};
	f->stats.insns += n;
}

static void end_of_trace(struct pts_flow *f, uint64_t ip)
{
	pts_flow_cbrs(f, true, 0);
	pts_flow_event(f, PTS_EV_END, ip, f->offset);
	f->st = ST_DONE;
}

void pts_flow_end_here(struct pts_flow *f)
{
	end_of_trace(f, f->ip);
}

/* A TIP.PGD binds to the instruction at @ip: tracing stops there.
 * @resume is where libipt expects tracing to resume (its decoder IP after
 * a synchronous disable: the next IP when the code tells it, the return
 * address for calls, else 0); a TIP.PGE there is reported as resumed. */
static void disable_at(struct pts_flow *f, uint64_t ip, uint64_t resume)
{
	const struct pts_packet *p = pts_flow_pop(f);
	struct pts_flow_rec *r = pts_flow_event(f, PTS_EV_DISABLED, 0,
						p->offset);
	(void)ip;
	if (p->ipc == PTS_IPC_SUPPRESSED)
		r->flags = PTS_EV_F_IP_SUPPRESSED;
	else
		r->ip = p->u.ip.ip;
	f->disabled_at = resume;
	f->have_disabled_at = resume != 0;
	f->st = ST_DISABLED;
	f->tnt_count = 0;
}

/* Whether the instruction at @ip is a far call in libipt's sense (its
 * return address is where tracing resumes): CALL far, INT n/INT3/INTO/
 * INT1, SYSCALL, SYSENTER, VMCALL. */
static bool is_far_call(const struct pts_flow *f, uint64_t ip)
{
	uint8_t b[15];
	int n = pts_image_fetch(f->img, f->cr3, ip, b, sizeof(b));
	int i = 0;
	while (i < n && (((b[i] & 0xf0) == 0x40 && f->mode == PTS_EXEC_64) ||
			 b[i] == 0x66 || b[i] == 0x67 || b[i] == 0xf2 ||
			 b[i] == 0xf3 || b[i] == 0x2e || b[i] == 0x36 ||
			 b[i] == 0x3e || b[i] == 0x26 || b[i] == 0x64 ||
			 b[i] == 0x65))
		i++;
	if (i >= n)
		return false;
	switch (b[i]) {
	case 0xcc: case 0xcd: case 0xce: case 0xf1: case 0x9a:
		return true;
	case 0xff:
		return i + 1 < n && ((b[i + 1] >> 3) & 7) == 3;
	case 0x0f:
		return i + 1 < n &&
		       (b[i + 1] == 0x05 || b[i + 1] == 0x34 ||
			(b[i + 1] == 0x01 && i + 2 < n && b[i + 2] == 0xc1));
	default:
		return false;
	}
}

/* Reports what is missing at the branch at @ip: the end of the trace, or
 * a mismatch with the packet at the head. */
static void missing(struct pts_flow *f, uint64_t ip)
{
	if (!f->qlen && f->pkt_eos)
		end_of_trace(f, ip);
	else
		pts_flow_error(f, -PTS_ERR_TRACE_MISMATCH, ip);
}

/* Conditional branch: returns 0/1, or -1 when the walk stopped. */
static int need_tnt(struct pts_flow *f, uint64_t ip)
{
	if (!f->tnt_count) {
		const struct pts_packet *h = pts_flow_peek(f, 0);
		if (h && (h->kind == PTS_PKT_TNT8 || h->kind == PTS_PKT_TNT64) &&
		    h->u.tnt.count) {
			pts_flow_load_tnt(f);
		} else if (h && h->kind == PTS_PKT_TIP_PGD) {
			disable_at(f, ip, 0); /* libipt: no next IP */
			return -1;
		} else {
			missing(f, ip);
			return -1;
		}
	}
	return pts_flow_take_tnt(f);
}

/* Packets that precede the TIP of a far branch or an async event: PIP,
 * VMCS, MODE.Exec. They bind to the transfer at @ip. Returns whether
 * there were any. */
static bool transfer_status(struct pts_flow *f, uint64_t ip, uint8_t flags)
{
	for (bool any = false;; any = true) {
		const struct pts_packet *h = pts_flow_peek(f, 0);
		if (!h)
			return any;
		if (h->kind == PTS_PKT_PIP) {
			pts_flow_pop(f);
			pts_flow_paging(f, h, ip, flags);
		} else if (h->kind == PTS_PKT_MODE_EXEC) {
			pts_flow_pop(f);
			pts_flow_exec_mode(f, h, ip, flags);
		} else if (h->kind == PTS_PKT_VMCS) {
			pts_flow_pop(f);
			struct pts_flow_rec *r = pts_flow_event(
				f, PTS_EV_VMCS, ip, h->offset);
			r->arg = h->u.vmcs_base;
			r->flags = flags;
		} else {
			return any;
		}
	}
}

/* Indirect branch, far transfer (@far) or uncompressed return at @ip: the
 * next TIP gives the target (deferred behind pending TNT bits or not).
 * As libipt (pt_qry_indirect_branch, pt_insn_at_disabled_event):
 * - with no bit pending, one TNT packet may come before the TIP (TIP
 *   deferral: its bits are for branches after this one);
 * - status packets (MODE.Exec, PIP, VMCS) bind only to a far transfer: a
 *   near branch cannot change the mode or CR3; the TIP comes right after
 *   them, no TNT in between (libipt: bad query).
 * Unlike libipt, a TIP.PGD without IP binds here also to a near branch
 * (libipt binds it only to far ones): no hardware sends that (a near
 * branch out of a filter range gives the target IP), but binding it shows
 * the windows model a disable that nothing explains (unexplained-gap)
 * rather than losing the flow up to the next PSB.
 * Returns true when the walk goes on at f->ip. */
static bool need_tip(struct pts_flow *f, uint64_t ip, uint64_t resume,
		     bool far)
{
	const struct pts_packet *h = pts_flow_peek(f, 0);
	bool status = false;
	if (h && far && h->kind != PTS_PKT_TIP && !f->tnt_count) {
		status = transfer_status(f, ip, 0);
		h = pts_flow_peek(f, 0);
	}
	if (h && !status && !f->tnt_count &&
	    (h->kind == PTS_PKT_TNT8 || h->kind == PTS_PKT_TNT64) &&
	    h->u.tnt.count) {
		const struct pts_packet *tip = pts_flow_peek(f, 1);
		if (tip && tip->kind == PTS_PKT_TIP) {
			pts_flow_load_tnt(f);
			h = pts_flow_peek(f, 0);
		}
	}
	if (h && h->kind == PTS_PKT_TIP && h->ipc != PTS_IPC_SUPPRESSED) {
		pts_flow_pop(f);
		f->ip = h->u.ip.ip;
		return true;
	}
	if (h && h->kind == PTS_PKT_TIP_PGD && !f->tnt_count) {
		disable_at(f, ip, resume);
		return false;
	}
	missing(f, ip);
	return false;
}

/* Whether @ip is inside an IP filter range (libipt's pt_filter_addr_check:
 * true when no range is configured). */
static bool in_filter(const struct pts_flow *f, uint64_t ip)
{
	for (unsigned n = 0; n < f->nfilter; n++)
		if (ip >= f->filter_a[n] && ip <= f->filter_b[n])
			return true;
	return !f->nfilter;
}

/* A direct branch may be where a filter range is left: TIP.PGD with the
 * branch target binds to it. SKL014: the TIP.PGD may come without its IP;
 * as libipt, it binds when the target is outside the filter ranges (only
 * with ranges configured: else tracing might stop too early). */
static bool direct_disable(struct pts_flow *f, uint64_t ip, uint64_t target)
{
	const struct pts_packet *h;
	/* Short of the PSB+ FUP's IP, no packet binds (psb_stop). */
	if (f->tnt_count || f->psb_stop || !(h = pts_flow_peek(f, 0)) ||
	    h->kind != PTS_PKT_TIP_PGD)
		return false;
	if (h->ipc == PTS_IPC_SUPPRESSED
		    ? !(f->errata.skl014 && f->nfilter && !in_filter(f, target))
		    : h->u.ip.ip != target)
		return false;
	disable_at(f, ip, target);
	return true;
}

static bool is_mov_cr3(struct pts_flow *f, uint64_t ip)
{
	uint8_t b[15];
	int n = pts_image_fetch(f->img, f->cr3, ip, b, sizeof(b));
	int i = 0;
	while (i < n && ((b[i] & 0xf0) == 0x40 || b[i] == 0x66 || b[i] == 0x67))
		i++;
	return i + 2 < n && b[i] == 0x0f && b[i + 1] == 0x22 &&
	       ((b[i + 2] >> 3) & 7) == 3;
}

/* Instructions that do not branch but bind packets: MOV CR3 (PIP, or
 * TIP.PGD under a CR3 filter), VMPTRLD (VMCS), PTWRITE (PTW). */
static void nonbranch(struct pts_flow *f, const struct pts_block *b,
		      uint64_t ip)
{
	const struct pts_packet *h = f->tnt_count ? NULL : pts_flow_peek(f, 0);
	if (!h)
		return;
	if (b->last_class == PTS_INSN_PTWRITE && h->kind == PTS_PKT_PTW) {
		pts_flow_pop(f);
		struct pts_flow_rec *r = pts_flow_event(f, PTS_EV_PTWRITE, ip,
							h->offset);
		r->arg = h->u.ptw.payload;
		r->arg2 = h->u.ptw.plc;
		const struct pts_packet *fup = pts_flow_peek(f, 0);
		if (h->u.ptw.ip && fup && fup->kind == PTS_PKT_FUP)
			pts_flow_pop(f);
		return;
	}
	if (b->last_class != PTS_INSN_OTHER)
		return;
	if (h->kind == PTS_PKT_PIP && is_mov_cr3(f, ip)) {
		pts_flow_pop(f);
		pts_flow_paging(f, h, ip, 0);
	} else if (h->kind == PTS_PKT_VMCS) {
		pts_flow_pop(f);
		struct pts_flow_rec *r = pts_flow_event(f, PTS_EV_VMCS, ip,
							h->offset);
		r->arg = h->u.vmcs_base;
	} else if (h->kind == PTS_PKT_TIP_PGD &&
		   h->ipc == PTS_IPC_SUPPRESSED && is_mov_cr3(f, ip)) {
		disable_at(f, ip, b->next);
	}
}

/* A compressed return at @ip: a taken bit, the target from the stack. */
static void compressed_ret(struct pts_flow *f, uint64_t ip)
{
	if (!pts_flow_take_tnt(f)) {
		pts_flow_error(f, -PTS_ERR_TRACE_MISMATCH, ip);
		return;
	}
	if (!f->rs_len) {
		pts_flow_error_tnt(f, -PTS_ERR_RETSTACK_EMPTY, ip);
		return;
	}
	f->ip = pts_flow_pop_ret(f, &f->link);
}


/* Resolves the last instruction of @b (already delivered) and points
 * f->link at the link of @b that may know the next block. */
static void resolve(struct pts_flow *f, struct pts_block *b)
{
	uint64_t next = b->next, resume = 0, ip;
	const struct pts_packet *h;
	int bit;
	if (b->last_class == PTS_INSN_JCC) {
		/* The hot case: a pending bit, no look at the instruction. */
		bit = f->tnt_count ? pts_flow_take_tnt(f)
				   : need_tnt(f, b->last_ip);
		if (bit >= 0) {
			f->ip = bit ? b->target : next;
			f->link = &b->succ[bit];
		}
		return;
	}
	ip = b->last_ip;
	switch (b->last_class) {
	case PTS_INSN_CALL:
	case PTS_INSN_JMP:
		/* A CALL where tracing stops pushes nothing (as an
		 * indirect one, below). */
		if (direct_disable(f, ip, b->target))
			return;
		if (b->last_class == PTS_INSN_CALL &&
		    !(b->last_flags & PTS_INSN_F_CALL0))
			pts_flow_push_ret(f, next, &b->succ[0], 0);
		f->ip = b->target;
		f->link = &b->succ[1];
		return;
	case PTS_INSN_RET:
		if (!f->tnt_count) {
			h = pts_flow_peek(f, 0);
			if (h && (h->kind == PTS_PKT_TNT8 ||
				  h->kind == PTS_PKT_TNT64) && h->u.tnt.count)
				pts_flow_load_tnt(f);
		}
		if (f->tnt_count) {
			pts_flow_pop_hint(f);
			compressed_ret(f, ip);
			return;
		}
		break;
	case PTS_INSN_CALL_IND:
		resume = next;
		break;
	case PTS_INSN_FAR:
		/* Only a disable needs to know whether it is a call. */
		h = pts_flow_peek(f, 0);
		if (h && h->kind != PTS_PKT_TIP && is_far_call(f, ip))
			resume = next;
		break;
	case PTS_INSN_JMP_IND:
		break;
	default:
		f->ip = next;
		f->link = &b->succ[0];
		nonbranch(f, b, ip);
		return;
	}
	/* Indirect: the target comes with a TIP. */
	f->link = &b->ind;
	if (!need_tip(f, ip, resume, b->last_class == PTS_INSN_FAR))
		return;
	if (b->last_class == PTS_INSN_CALL_IND) {
		/* Only now: a CALL where tracing stops (TIP.PGD) pushes
		 * nothing. Its return, if traced at all, comes after a
		 * TIP.PGE; whether hardware may compress it is not
		 * documented (pt-sgx-facts.md 2.2), and libipt 2.0.5 does
		 * not push (test_flow_errata, "... call at a disable"). */
		pts_flow_push_ret(f, next, &b->succ[0], 0);
	} else if (b->last_class == PTS_INSN_RET) {
		unsigned t = pts_flow_pop_hint(f);
		if (f->hint_ip[t] == f->ip && f->hint_link[t])
			f->link = f->hint_link[t];
	}
}

/* The IP an event at the head waits for (async FUP, TSX, EXSTOP), when the
 * head is such an event and no TNT bit is pending. */
static bool stop_ip(const struct pts_flow *f, const struct pts_packet *h,
		    uint64_t *ip)
{
	const struct pts_packet *n;
	switch (h->kind) {
	case PTS_PKT_FUP:
		n = h;
		break;
	case PTS_PKT_MODE_TSX:
		n = pts_flow_peek(f, 1);
		break;
	default:
		return false;
	}
	if (!n || n->kind != PTS_PKT_FUP || n->ipc == PTS_IPC_SUPPRESSED)
		return false;
	*ip = n->u.ip.ip;
	return true;
}

static inline int next_block(struct pts_flow *f, struct pts_block **out);

/* Whether the instruction at @ip is VMLAUNCH or VMRESUME. */
static bool is_vmentry(const struct pts_flow *f, uint64_t ip)
{
	uint8_t b[15];
	int n = pts_image_fetch(f->img, f->cr3, ip, b, sizeof(b));
	return n > 0 && pts_insn_is_vmentry(b, (size_t)n, f->mode);
}

/* SKD022: a VM entry that clears TraceEn may send FUP + TIP.PGD as if
 * tracing stopped asynchronously before the VMLAUNCH/VMRESUME at f->ip.
 * As libipt (handle_erratum_skd022), the disable is taken as synchronous:
 * the instruction executes, then a [disabled] with the TIP.PGD's IP. The
 * FUP is consumed; the TIP.PGD is @n packets ahead, behind status packets
 * that bind to the transfer. */
static void skd022_disable(struct pts_flow *f, unsigned n)
{
	struct pts_block *b;
	int err = next_block(f, &b);
	if (err < 0) {
		pts_flow_error(f, err, f->ip);
		return;
	}
	/* VMLAUNCH/VMRESUME end a block: it is the block's only insn. */
	deliver(f, b, 0, 1);
	if (n)
		transfer_status(f, f->ip, 0);
	/* A far jump: libipt knows no IP to resume at. */
	disable_at(f, f->ip, 0);
}

/* The event at the head binds here (f->ip): MODE.TSX and/or FUP, then an
 * optional TIP (async branch) or TIP.PGD (async disable). */
static void async_event(struct pts_flow *f)
{
	const struct pts_packet *h = pts_flow_pop(f);
	uint64_t at = f->ip;
	bool tsx = h->kind == PTS_PKT_MODE_TSX;
	if (tsx) {
		pts_flow_tsx(f, h, at, 0);
		bool abort = h->u.tsx.abrt;
		h = pts_flow_pop(f); /* its FUP */
		/* Only an abort has a TIP or TIP.PGD after its FUP (SDM
		 * Table 36-15: MODE.TSX, FUP, [TIP or TIP.PGD on abort]).
		 * After a begin or a commit the flow goes on here, and a
		 * TIP.PGD right after is for a later branch, as libipt
		 * takes it. */
		if (!abort)
			return;
	}
	/* Status packets between FUP and TIP are reported after the
	 * branch (libipt binds them to the TIP); queue them first. */
	unsigned i = 0;
	const struct pts_packet *t;
	while ((t = pts_flow_peek(f, i)) &&
	       (t->kind == PTS_PKT_PIP || t->kind == PTS_PKT_MODE_EXEC ||
		t->kind == PTS_PKT_VMCS))
		i++;
	if (!t || (t->kind != PTS_PKT_TIP && t->kind != PTS_PKT_TIP_PGD)) {
		if (t && (t->kind == PTS_PKT_OVF || t->kind == PKT_ERROR) &&
		    i == 0) {
			/* The TIP or TIP.PGD was lost in an overflow, or is
			 * cut by the end or damaged: the walk got to the
			 * FUP's IP, the OVF or the error is next. */
			return;
		}
		if (!f->qlen && f->pkt_eos) {
			/* The trace ends after the FUP: its TIP or TIP.PGD is
			 * cut off, as the packet of a branch at the end
			 * (missing()); the walk got to the FUP's IP. */
			end_of_trace(f, at);
			return;
		}
		/* A FUP is never alone, nor the FUP of a TSX abort (SDM
		 * Table 36-15): without its TIP or TIP.PGD the trace does not
		 * fit (libipt fails too, for an abort later). */
		pts_flow_error(f, -PTS_ERR_TRACE_MISMATCH, at);
		return;
	}
	struct pts_flow_rec *r;
	if (t->kind == PTS_PKT_TIP && t->ipc != PTS_IPC_SUPPRESSED) {
		r = pts_flow_event(f, PTS_EV_ASYNC_BRANCH, at, t->offset);
		r->arg = t->u.ip.ip;
		transfer_status(f, t->u.ip.ip, PTS_EV_F_ASYNC);
		pts_flow_pop(f);
		f->ip = t->u.ip.ip;
		return;
	}
	if (t->kind == PTS_PKT_TIP) {
		pts_flow_error(f, -PTS_ERR_TRACE_MISMATCH, at);
		return;
	}
	if (f->errata.skd022 && is_vmentry(f, at)) {
		skd022_disable(f, i);
		return;
	}
	r = pts_flow_event(f, PTS_EV_ASYNC_DISABLED, at, t->offset);
	if (t->ipc == PTS_IPC_SUPPRESSED)
		r->flags = PTS_EV_F_IP_SUPPRESSED;
	else
		r->arg = t->u.ip.ip;
	transfer_status(f, at, PTS_EV_F_ASYNC);
	pts_flow_pop(f);
	f->disabled_at = at;
	f->have_disabled_at = true;
	f->st = ST_DISABLED;
}

/* The block at f->ip when no link knows it: from the IP table or the
 * cache, then remembered in @link (may be NULL) for the next time. */
static int lookup_block(struct pts_flow *f, struct pts_block **link,
			struct pts_block **out)
{
	struct pts_block *b;
	/* Function entries and other indirect targets are few: a small
	 * table keyed by a multiplicative hash of the IP finds most. */
	struct pts_block **slot =
		&f->ipmap[pts_flow_ip_slot(f->ip, IPMAP_BITS)];
	if ((b = *slot) && b->ip == f->ip && b->cr3 == f->cr3 &&
	    b->mode == f->mode) {
		if (link)
			*link = b;
		*out = b;
		return 0;
	}
	/* A MODE.Exec with CS.L = CS.D = 1 (reserved) leaves no mode to
	 * decode in: an error rather than a guess (libipt: bad insn). No
	 * block is built in that mode, so no link finds one. */
	if (f->mode == PTS_EXEC_UNKNOWN)
		return -PTS_ERR_BAD_MODE;
	int err = pts_block_get(f->cache, f->img, f->cls, f->cr3, f->mode,
				f->ip, &b);
	if (err < 0)
		return err;
	if (err == 1 && pts_block_cache_full(f->cache))
		f->cache_full = true;
	if (link)
		*link = b;
	*slot = b;
	*out = b;
	return 0;
}

int pts_flow_lookup_block(struct pts_flow *f, struct pts_block **link,
			  struct pts_block **out)
{
	return lookup_block(f, link, out);
}

/* The block at f->ip: through the link resolve() pointed at when it knows
 * the block (no hashing; inline, as it is the common case), else looked
 * up. Links are hints: a block is used only when it matches. */
static inline int next_block(struct pts_flow *f, struct pts_block **out)
{
	struct pts_block **link = f->link, *b;
	f->link = NULL;
	if (link && (b = *link) && b->ip == f->ip && b->cr3 == f->cr3 &&
	    b->mode == f->mode) {
		*out = b;
		return 0;
	}
	return lookup_block(f, link, out);
}

/* Starts loading both blocks @b may lead to (both lines each: the hot
 * one, and the one with the id and the first addresses): which one comes
 * is known only after the TNT bit, and a block cache larger than the CPU
 * caches makes each step from block to block a memory access otherwise.
 * Prefetching NULL is harmless. */
static inline void prefetch_successors(const struct pts_block *b)
{
	/* As integers: no pointer arithmetic on NULL. */
	uintptr_t s0 = (uintptr_t)b->succ[0], s1 = (uintptr_t)b->succ[1];
	__builtin_prefetch((const void *)s0);
	__builtin_prefetch((const void *)s1);
	__builtin_prefetch((const void *)(s0 + 64));
	__builtin_prefetch((const void *)(s1 + 64));
}

/* Whether the walk may take another block within this step: output room,
 * enough packets queued, no cache flush due. */
static bool may_go_on(const struct pts_flow *f)
{
	return f->st == ST_ENABLED && f->out && f->out_n < f->out_max &&
	       (f->qlen >= LOOKAHEAD || f->pkt_eos) && !f->cache_full;
}

/* Whether the instruction that ends @b takes a packet (no TNT bit is
 * pending: a PSB+ flushes them). */
static bool takes_packet(const struct pts_block *b)
{
	switch (b->last_class) {
	case PTS_INSN_JCC: case PTS_INSN_JMP_IND: case PTS_INSN_CALL_IND:
	case PTS_INSN_RET: case PTS_INSN_FAR:
		return true;
	default:
		return false;
	}
}

/* Walks @b segment by segment, for when a packet other than TNT and TIP
 * is at the head: a TIP.PGD may bind to a followed direct branch, an async
 * event (at @stop, when @have_stop) to any instruction after the first;
 * or while the walk has to get to the PSB+ FUP's IP (@stop then).
 * Returns true when the walk may go on with the next block. */
static bool walk_careful(struct pts_flow *f, struct pts_block *b,
			 bool have_stop, uint64_t stop)
{
	uint32_t s = 0;
	for (unsigned k = 0;; k++) {
		bool seg = k < b->nsegs;
		uint32_t e = seg ? (uint32_t)(b->segs[k] & PTS_SEG_INDEX)
				 : b->n - 1;
		for (uint32_t i = s ? s : 1; have_stop && i <= e; i++) {
			if (b->ips[i] != stop)
				continue;
			if (i > s)
				deliver(f, b, s, i - s);
			f->ip = stop;
			if (f->psb_stop) {
				f->psb_stop = false; /* packets go on here */
				return false;
			}
			async_event(f);
			pts_flow_at_end(f);
			return false;
		}
		deliver(f, b, s, e - s + 1);
		if (!seg)
			break;
		if (direct_disable(f, b->ips[e], b->ips[e + 1]))
			return false;
		if (b->segs[k] & PTS_SEG_PUSH)
			pts_flow_push_ret(f, b->ips[e] + b->sizes[e],
					  &b->seglink[k], 0);
		s = e + 1;
	}
	if (++f->idle > f->idle_limit) {
		pts_flow_error(f, -PTS_ERR_NO_PROGRESS, f->ip);
		return false;
	}
	if (f->psb_stop && takes_packet(b)) {
		/* The packets after the PSB+ are for the instructions from its
		 * FUP's IP on, which the walk did not get to (libipt: bad
		 * query, its PSB+ events wait for that IP). */
		pts_flow_error(f, -PTS_ERR_TRACE_MISMATCH, b->last_ip);
		return false;
	}
	resolve(f, b);
	return !pts_flow_at_end(f) && !have_stop;
}

/* Walks blocks until something other than TNT bits and TIPs is at the
 * head of the queue, or may_go_on() says stop. While TNT bits are pending
 * or a TNT/TIP is at the head, a block is one record and nothing is looked
 * at per instruction. */
static void step_enabled(struct pts_flow *f)
{
	do {
		const struct pts_packet *h =
			f->tnt_count ? NULL : pts_flow_peek(f, 0);
		/* CBRs the walk passed (none after a PSB+ short of its FUP's
		 * IP: libipt's events wait for it there), and those among
		 * the packets of the event at the head */
		if (!f->tnt_count && f->cbr_len &&
		    !(f->psb_stop && f->ip != f->psb_ip) &&
		    pts_flow_cbr_stop(f, h ? event_group(f, h) : 0))
			return;
		uint64_t stop = 0;
		bool have_stop = false, careful = false;
		if (h && h->kind != PTS_PKT_TNT8 && h->kind != PTS_PKT_TNT64 &&
		    h->kind != PTS_PKT_TIP) {
			switch (h->kind) {
			case PTS_PKT_PSB:
			case PTS_PKT_OVF:
				/* Short of the last PSB+ FUP's IP, the code
				 * ran on to it (SDM 36.3.7) before whatever
				 * the next PSB+ or the overflow says: the walk
				 * gets there first, and the CBRs after that
				 * PSB+ are reported there, as libipt does. */
				if (f->psb_stop && f->ip != f->psb_ip)
					break;
				if (h->kind == PTS_PKT_PSB)
					pts_flow_enter_psb(f);
				else
					pts_flow_overflow(f);
				return;
			case PKT_ERROR:
				pts_flow_error(f, (int)(int64_t)h->u.tsc, f->ip);
				return;
			case PTS_PKT_TIP_PGE:
			case PTS_PKT_STOP:
				/* TraceStop comes after the TIP.PGD of the
				 * stop (SDM 36.2.4.3), never while on (libipt:
				 * -pte_bad_context). */
				pts_flow_error(f, -PTS_ERR_TRACE_MISMATCH, f->ip);
				return;
			default:
				if (pts_flow_codeless(f))
					return;
				have_stop = stop_ip(f, h, &stop);
				if (have_stop && stop == f->ip) {
					async_event(f);
					pts_flow_at_end(f);
					return;
				}
				careful = true;
			}
		}
		if (f->psb_stop) {
			/* Up to the PSB+ FUP's IP, the walk takes no
			 * packet. */
			f->psb_stop = f->ip != f->psb_ip;
			if (f->psb_stop) {
				have_stop = careful = true;
				stop = f->psb_ip;
			}
		}
		struct pts_block *b;
		int err = next_block(f, &b);
		if (err < 0) {
			pts_flow_error(f, err, f->ip);
			return;
		}
		prefetch_successors(b);
		if (careful) {
			if (!walk_careful(f, b, have_stop, stop))
				return;
			continue;
		}
		if (f->cov && pts_cov_walk_fast(f, b)) {
			if (f->st != ST_ENABLED)
				return;
			continue;
		}
		/* A TNT at the head is needed at the end of a block that ends
		 * in a conditional branch: taken now, the block's record
		 * carries its offset (the packet that decides the branch). */
		if (h && h->kind != PTS_PKT_TIP && h->u.tnt.count &&
		    b->last_class == PTS_INSN_JCC && !b->npush)
			pts_flow_load_tnt(f);
		deliver(f, b, 0, b->n);
		if (b->last_class == PTS_INSN_JCC && f->tnt_count &&
		    !b->npush) {
			/* The hot case (loops): a conditional branch and a
			 * bit pending for it. */
			unsigned bit = (unsigned)pts_flow_take_tnt(f);
			f->ip = bit ? b->target : b->next;
			f->link = &b->succ[bit];
			if (++f->idle > f->idle_limit) {
				pts_flow_error(f, -PTS_ERR_NO_PROGRESS, f->ip);
				return;
			}
			if (!f->tnt_count && pts_flow_at_end(f))
				return;
			continue;
		}
		if (b->npush)
			pts_flow_push_calls(f, b);
		if (++f->idle > f->idle_limit) {
			pts_flow_error(f, -PTS_ERR_NO_PROGRESS, f->ip);
			return;
		}
		resolve(f, b);
		if (pts_flow_at_end(f))
			return;
	} while (may_go_on(f));
}

/* One step of the state machine. */
static void step(struct pts_flow *f)
{
	switch (f->st) {
	case ST_NOSYNC:
		pts_flow_step_nosync(f);
		return;
	case ST_PSB:
		pts_flow_step_psb(f);
		return;
	case ST_DISABLED:
		pts_flow_step_disabled(f);
		return;
	case ST_ENABLED:
		step_enabled(f);
		return;
	case ST_DONE:
		return;
	}
}

/* Empties the block cache when it is full or the image changed; only
 * where no record handed out refers to it. */
static void flush_if_due(struct pts_flow *f)
{
	uint64_t gen = pts_image_generation(f->img);
	if (gen == f->img_gen && !f->cache_full)
		return;
	pts_block_cache_flush(f->cache);
	f->stats.cache_flushes++;
	f->img_gen = gen;
	f->link = NULL;
	/* Return links and the IP table point into the cache too. */
	memset(f->retlink, 0, sizeof(f->retlink));
	memset(f->hint_link, 0, sizeof(f->hint_link));
	memset(f->hint_extra, 0, sizeof(f->hint_extra));
	memset(f->ipmap, 0, sizeof(f->ipmap));
	f->fmap_valid = false;
	f->cache_full = false;
}

/* Moves pending records to @recs (up to @max), oldest first, while they
 * fit (their addresses too, into the flat array). Returns how many. */
static int drain_pending(struct pts_flow *f, struct pts_flow_rec *recs,
			 int max)
{
	int n = 0;
	while (f->pend_len && n < max) {
		struct pts_flow_rec *r = &f->pend[f->pend_head];
		if (f->flat && r->kind == PTS_FLOW_INSNS) {
			/* What waits is the tail of one iteration of the walk,
			 * which fits into PTS_FLOW_IPS_MIN; stop all the
			 * same rather than rely on it. */
			if (f->flat_n + r->n > f->flat_walk_max + STEP_IPS)
				break;
			/* The cache is not flushed while records wait. */
			r->ips = flat_copy(f, r->ips, r->n);
		}
		recs[n++] = *r;
		f->pend_head = (f->pend_head + 1) % PEND_CAP;
		f->pend_len--;
	}
	return n;
}

/* pts_flow_next(), with the flat address array (f->flat) or without. */
static int flow_next(struct pts_flow *f, struct pts_input *in,
		     struct pts_flow_rec *recs, int max)
{
	/* Safe point: nothing handed out refers to the cache any more. */
	if (!f->pend_len)
		flush_if_due(f);
	int n = drain_pending(f, recs, max);
	f->out = recs;
	f->out_n = n;
	/* Walk only behind every pending record, with room for a step. */
	f->out_max = f->pend_len || f->flat_n > f->flat_walk_max ? n : max;
	while (f->out_n < f->out_max) {
		if (f->st == ST_DONE) {
			if (f->pkt_eos && !f->qlen)
				break;
			/* More trace after the end (pts_flow_end not yet
			 * called, or packets after an error): go on. */
			pts_flow_lose_sync(f);
		}
		if (!f->pkt_eos && f->qlen < LOOKAHEAD) {
			int again = in ? refill(f, in) : -PTS_ERR_AGAIN;
			if (again < 0 && f->qlen < LOOKAHEAD && !f->pkt_eos)
				break;
		}
		if (f->cache_full && f->cov)
			flush_if_due(f); /* no record refers to the cache */
		else if (f->cache_full && f->out_n)
			break; /* flush first, at the next call */
		step(f);
	}
	n = f->out_n;
	f->out = NULL;
	if (n)
		return n;
	if (f->st == ST_DONE && f->pkt_eos && !f->qlen && !f->pend_len)
		return -PTS_ERR_EOS;
	return -PTS_ERR_AGAIN;
}

int pts_flow_next(struct pts_flow *flow, struct pts_input *in,
		  struct pts_flow_rec *recs, int max)
{
	if (!flow || !recs || max < 1)
		return -PTS_ERR_INVALID;
	return flow_next(flow, in, recs, max);
}

int pts_flow_next_ips(struct pts_flow *flow, struct pts_input *in,
		      struct pts_flow_rec *recs, int max, uint64_t *ips,
		      size_t cap, size_t *nips)
{
	if (!flow || !recs || max < 1 || !ips || cap < PTS_FLOW_IPS_MIN ||
	    !nips)
		return -PTS_ERR_INVALID;
	flow->flat = ips;
	flow->flat_n = 0;
	flow->flat_walk_max = cap - (STEP_IPS + COPY_OVERRUN);
	int r = flow_next(flow, in, recs, max);
	*nips = flow->flat_n;
	flow->flat = NULL;
	flow->flat_n = 0;
	flow->flat_walk_max = SIZE_MAX;
	return r;
}
