/* Which packets a step makes: the PacketEn state machine (TriggerEn,
 * ContextEn, FilterEn; BranchEn is 1) and the generation rules of
 * docs/pt-sgx-facts.md sections 2 (Table 36-50) and 4.3 (enclave rows
 * 20-25). Packets are written through emit_packets.c. */
#include "emit_internal.h"
#include "synth_run.h"

#include <stdlib.h>
#include <string.h>

static const char *const hidden_names[SYN_HID_COUNT] = {
	"visible", "overflow", "stopped", "enclave", "cpl", "cr3", "filter",
};

const char *syn_hidden_name(int why)
{
	return why >= 0 && why < SYN_HID_COUNT ? hidden_names[why] : "?";
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ContextEn for code running in @w, and why not (SDM 36.2.5.3). */
int syn_context_why(const struct syn_emitter *em, struct syn_where w)
{
	if (w.cpl == 0 && em->o.user_only)
		return SYN_HID_CPL;
	if (w.encl >= 0 &&
	    em->cfg->enclaves[w.encl].kind == PTS_ENCLAVE_PRODUCTION)
		return SYN_HID_ENCLAVE;
	/* RTIT_CR3_MATCH[63:5] against CR3[63:5] (pt-sgx-facts 3.4): CR3's
	 * PWT and PCD bits do not take part. */
	if (em->o.cr3_filter && (em->o.cr3 ^ em->o.cr3_match) & ~0x1full)
		return SYN_HID_CR3;
	return SYN_VISIBLE;
}

static int in_ranges(const struct syn_emitter *em, uint64_t ip, unsigned cfg)
{
	for (unsigned i = 0; i < em->o.n_addr; i++)
		if (em->o.addr_cfg[i] == cfg && em->o.addr_a[i] <= ip &&
		    ip <= em->o.addr_b[i])
			return 1;
	return 0;
}

struct syn_emitter *syn_emit_new(const struct syn_options *o,
				 const struct pts_config *cfg,
				 struct syn_sink *sink)
{
	struct syn_emitter *em = calloc(1, sizeof(*em));
	if (!em)
		return NULL;
	em->o = *o;
	em->cfg = cfg;
	em->sink = sink;
	em->rng = o->seed ^ 0x5eed5eedull;
	syn_clock_init(&em->clk, o);
	em->tnt_cap = o->long_tnt ? 47 : 6;
	em->cyc_thresh = o->cyc_thresh ? 1ull << (o->cyc_thresh - 1) : 0;
	for (unsigned i = 0; i < o->n_addr; i++)
		if (o->addr_cfg[i] == PTS_ADDR_FILTER)
			em->has_filter = 1;
	pts_lastip_reset(&em->lip);
	return em;
}

void syn_emit_free(struct syn_emitter *em)
{
	free(em);
}

int syn_emit_take_mark(struct syn_emitter *em, uint64_t *tsc,
		       uint64_t *cycles)
{
	if (!em->mark_pending)
		return 0;
	em->mark_pending = 0;
	*tsc = em->mark_tsc;
	*cycles = em->mark_cycles;
	return 1;
}

const struct syn_clock *syn_emit_clock(const struct syn_emitter *em)
{
	return &em->clk;
}

void syn_emit_stats(const struct syn_emitter *em, struct syn_emit_stats *st)
{
	*st = em->st;
}

int syn_emit_stopped(const struct syn_emitter *em)
{
	return em->stopped;
}

static void update_pe(struct syn_emitter *em)
{
	em->pe = em->trigger && syn_context_why(em, em->where) == SYN_VISIBLE &&
		 em->filter;
}

int syn_emit_start(struct syn_emitter *em, uint64_t ip, struct syn_where where)
{
	em->cur = ip;
	em->where = where;
	em->trigger = 1;
	em->filter = em->has_filter ? in_ranges(em, ip, PTS_ADDR_FILTER) : 1;
	update_pe(em);
	em->last_cyc = em->clk.cycles;
	syn_mtc_reset(em);
	return syn_psb_plus(em);
}

/* PacketEn went 1 -> 0: decoders may keep or drop their return stacks
 * across the gap (pt-sgx-facts 2.2, UNCONFIRMED for hardware), so no RET
 * after it is compressed against a CALL before it. */
static void disabled(struct syn_emitter *em)
{
	syn_ret_clear(em);
}

/* MODE.Exec before a TIP.PGE when none went out since the last PSB (the
 * mode never changes: the walk runs 64-bit code). */
static int pge(struct syn_emitter *em, uint64_t to)
{
	int err = 0;
	if (!em->mode_since_psb)
		err = syn_mode_exec(em);
	if (err >= 0)
		err = syn_ip(em, PTS_PKT_TIP_PGE, to);
	return err;
}

/* The enables after a transfer lands at @to in @w: FilterEn is evaluated
 * only where a taken branch or event lands (SDM 36.2.4.3) and only while
 * TriggerEn and ContextEn hold; a TraceStop range hit clears TriggerEn.
 * Returns the new PacketEn; *@stop is set for a TraceStop hit. */
static int land(struct syn_emitter *em, uint64_t to, struct syn_where w,
		int *ctx_out, int *stop)
{
	int ctx = syn_context_why(em, w) == SYN_VISIBLE;
	*ctx_out = ctx;
	*stop = 0;
	if (em->trigger && ctx) {
		if (em->has_filter)
			em->filter = in_ranges(em, to, PTS_ADDR_FILTER);
		if (in_ranges(em, to, PTS_ADDR_STOP))
			*stop = 1;
	}
	if (*stop) {
		em->trigger = 0;
		em->stopped = 1;
	}
	return em->trigger && ctx && em->filter;
}

static void ret_push(struct syn_emitter *em, uint64_t ra)
{
	em->ret_top = (em->ret_top + 1) % SYN_RETSTACK;
	em->ret[em->ret_top] = ra;
	if (em->ret_n < SYN_RETSTACK)
		em->ret_n++;
}

/* A RET to @to may be compressed: its CALL was seen since the last reset
 * and is on top; hardware may still send some uncompressed. */
static int ret_compressible(struct syn_emitter *em, uint64_t to)
{
	if (!em->o.retcomp || !em->ret_n || em->ret[em->ret_top] != to)
		return 0;
	if (em->o.ret_nocomp_rate &&
	    rng_next(&em->rng) % 1000000 < em->o.ret_nocomp_rate)
		return 0;
	return 1;
}

static void ret_pop(struct syn_emitter *em)
{
	em->ret_top = (em->ret_top + SYN_RETSTACK - 1) % SYN_RETSTACK;
	em->ret_n--;
}

/* A near branch that was taken (or a far transfer): Table 36-50 rows
 * 7-10 with the PacketEn before and after. */
static int near_taken(struct syn_emitter *em, const struct syn_step *s)
{
	int pe0 = em->pe, ctx, stop, err = 0;
	int comp = s->kind == SYN_RET && pe0 && ret_compressible(em, s->next);
	int pe1 = land(em, s->next, s->to, &ctx, &stop);
	em->pe = (uint8_t)pe1;

	if (pe0 && pe1) {
		switch (s->kind) {
		case SYN_COND:
			return syn_tnt_add(em, 1);
		case SYN_RET:
			if (comp) {
				ret_pop(em);
				return syn_tnt_add(em, 1);
			}
			/* A decoder may or may not pop its stack for an
			 * uncompressed RET: compress nothing below it. */
			syn_ret_clear(em);
			break;
		case SYN_JUMP:
		case SYN_CALL:
			if (s->kind == SYN_CALL && !(s->flags & SYN_F_CALL0))
				ret_push(em, s->ip + s->size);
			return 0;
		case SYN_ICALL:
			ret_push(em, s->ip + s->size);
			break;
		default:
			break;
		}
		if ((err = syn_group(em, 1)) < 0)
			return err;
		return syn_ip(em, PTS_PKT_TIP, s->next);
	}
	if (pe0 && !pe1) {
		if ((err = syn_group(em, 1)) < 0)
			return err;
		/* Leaving by a conditional branch or a compressible RET, or
		 * losing ContextEn/TriggerEn: no IP (rows 7e/7f, 36.4.2.5). */
		if (!ctx || s->kind == SYN_COND || comp)
			err = syn_ip_none(em, PTS_PKT_TIP_PGD);
		else
			err = syn_ip(em, PTS_PKT_TIP_PGD, s->next);
		disabled(em);
	} else if (!pe0 && pe1) {
		if ((err = syn_group(em, 1)) < 0)
			return err;
		err = pge(em, s->next);
	}
	if (err >= 0 && stop)
		err = syn_simple(em, PTS_PKT_STOP);
	return err;
}

/* ENCLU (EENTER, ERESUME, EEXIT), interrupts and AEX: a FUP with the
 * source, then TIP, TIP.PGD or TIP.PGE by PacketEn before and after
 * (rows 11, 20-25). @fup is CLIP for ENCLU and an AEX, NLIP for an
 * interrupt: in both cases the step's @ip. */
static int async_transfer(struct syn_emitter *em, const struct syn_step *s)
{
	int pe0 = em->pe, ctx, stop, err = 0;
	int pe1 = land(em, s->next, s->to, &ctx, &stop);
	em->pe = (uint8_t)pe1;
	if (!pe0 && !pe1)
		return stop ? syn_simple(em, PTS_PKT_STOP) : 0;
	if ((err = syn_group(em, 1)) < 0)
		return err;
	if (pe0) {
		if ((err = syn_ip(em, PTS_PKT_FUP, s->ip)) < 0)
			return err;
		if (pe1) {
			err = syn_ip(em, PTS_PKT_TIP, s->next);
		} else {
			err = ctx ? syn_ip(em, PTS_PKT_TIP_PGD, s->next)
				  : syn_ip_none(em, PTS_PKT_TIP_PGD);
			disabled(em);
		}
	} else {
		err = pge(em, s->next);
	}
	if (err >= 0 && stop)
		err = syn_simple(em, PTS_PKT_STOP);
	return err;
}

/* Software clears TraceEn before @ip and sets it again at @next: FUP(ip)
 * TIP.PGD(), then [TSC TMA] CBR MODE.Exec TIP.PGE(next) (rows for WRMSR
 * with PacketByteCnt > 0). */
static int restart(struct syn_emitter *em, const struct syn_step *s)
{
	int err = 0;
	if (em->pe) {
		if ((err = syn_group(em, 1)) < 0 ||
		    (err = syn_ip(em, PTS_PKT_FUP, s->ip)) < 0 ||
		    (err = syn_ip_none(em, PTS_PKT_TIP_PGD)) < 0)
			return err;
		disabled(em);
	}
	em->trigger = 0;
	em->stopped = 0;
	em->pe = 0;
	syn_clock_step(&em->clk, 0);
	if ((err = syn_mtc_catch_up(em)) < 0) /* nothing: TriggerEn is 0 */
		return err;
	/* TraceEn 0 -> 1: the cycle counter starts afresh. */
	em->trigger = 1;
	em->last_cyc = em->clk.cycles;
	em->where = s->to;
	if (syn_context_why(em, s->to) == SYN_VISIBLE && em->has_filter)
		em->filter = in_ranges(em, s->next, PTS_ADDR_FILTER);
	update_pe(em);
	if ((err = syn_time_packets(em, 1)) < 0)
		return err;
	if (em->pe) {
		if ((err = syn_mode_exec(em)) < 0)
			return err;
		err = syn_ip(em, PTS_PKT_TIP_PGE, s->next);
	}
	return err;
}

static int hidden_reason(const struct syn_emitter *em)
{
	if (!em->trigger)
		return SYN_HID_STOPPED;
	int why = syn_context_why(em, em->where);
	if (why)
		return why;
	return em->filter ? SYN_VISIBLE : SYN_HID_FILTER;
}

int syn_emit_step(struct syn_emitter *em, const struct syn_step *s)
{
	int was_dropping = em->dropping;
	int pe0 = em->pe;
	int why = pe0 ? SYN_VISIBLE : hidden_reason(em);
	int err = 0;

	if (syn_is_insn(s))
		syn_clock_step(&em->clk, s->extra_cycles);
	else if (s->extra_cycles)
		syn_clock_step(&em->clk, s->extra_cycles);
	if (em->clk.tsc >= em->next_mtc_tsc && (err = syn_mtc_catch_up(em)) < 0)
		return err;

	switch (s->kind) {
	case SYN_SEQ:
		break;
	case SYN_COND:
		if (s->flags & SYN_F_TAKEN)
			err = near_taken(em, s);
		else if (pe0)
			err = syn_tnt_add(em, 0);
		break;
	case SYN_JUMP:
	case SYN_CALL:
	case SYN_IJUMP:
	case SYN_ICALL:
	case SYN_RET:
	case SYN_FAR:
		err = near_taken(em, s);
		break;
	case SYN_ENCLU:
	case SYN_INTR:
	case SYN_AEX:
		err = async_transfer(em, s);
		break;
	case SYN_RESTART:
		err = restart(em, s);
		break;
	default:
		return -PTS_ERR_INTERNAL;
	}
	if (err < 0)
		return err;
	em->cur = s->next;
	em->where = s->to;
	if (em->trigger && !em->dropping && !em->ovf_armed &&
	    em->sink->total - em->psb_mark >= em->o.psb_period &&
	    (err = syn_psb_plus(em)) < 0)
		return err;
	if (was_dropping || em->dropping)
		return SYN_HID_OVERFLOW;
	return syn_is_insn(s) ? why : 0;
}

void syn_emit_overflow_arm(struct syn_emitter *em)
{
	if (!em->dropping && em->trigger)
		em->ovf_armed = 1;
}

int syn_emit_overflow_active(const struct syn_emitter *em)
{
	return em->dropping;
}

/* The overflow resolves: OVF, then FUP(where execution resumes) if
 * PacketEn is 1; else a TIP.PGE comes later (pt-sgx-facts 2.6). */
int syn_emit_overflow_end(struct syn_emitter *em)
{
	int err;
	em->ovf_armed = 0;
	if (!em->dropping)
		return 0;
	em->dropping = 0;
	em->st.ovfs++;
	/* The CYC of the OVF spans the overflow. */
	if ((err = syn_group(em, 1)) < 0 ||
	    (err = syn_simple(em, PTS_PKT_OVF)) < 0)
		return err;
	syn_ret_clear(em);
	em->mode_since_psb = 0;
	/* Full IP for the FUP here or the TIP.PGE that comes later: libipt
	 * resets last-IP at OVF, the SDM keeps it (pt-sgx-facts 4.4); a full
	 * IP reads the same under both. */
	em->full_ip = 1;
	if (em->pe)
		err = syn_ip_full(em, PTS_PKT_FUP, em->cur);
	return err;
}

int syn_emit_freq(struct syn_emitter *em, uint8_t cbr)
{
	int err = syn_group(em, 0);
	syn_clock_set_cbr(&em->clk, cbr);
	if (err >= 0 && em->trigger)
		err = syn_time_packets(em, 1);
	return err;
}

int syn_emit_finish(struct syn_emitter *em)
{
	int err = 0;
	if (em->dropping)
		err = syn_emit_overflow_end(em);
	if (err >= 0 && em->pe) {
		if ((err = syn_group(em, 1)) >= 0 &&
		    (err = syn_ip(em, PTS_PKT_FUP, em->cur)) >= 0)
			err = syn_ip_none(em, PTS_PKT_TIP_PGD);
	}
	if (err >= 0)
		err = syn_tnt_flush(em);
	int ferr = syn_sink_flush(em->sink);
	return err < 0 ? err : ferr;
}
