/* The enable-state machine: packets in, windows (PacketEn = 1) and gaps
 * (PacketEn = 0) out.
 *
 * PacketEn = TriggerEn & ContextEn & FilterEn & BranchEn (SDM 36.2.5.1) is
 * not visible in the trace; its transitions are: TIP.PGE (0 -> 1), TIP.PGD
 * (1 -> 0, with a FUP before it when the disable is asynchronous), a PSB+
 * that carries a FUP (1) or not (0) (SDM 36.3.7), an OVF followed by a FUP
 * (resolved while 1) or not (SDM 36.3.8), and TraceStop (SDM 36.2.4.3).
 * Which enable dropped is the gap's cause, decided when the gap closes
 * (windows_classify.c) because the closing IP is part of the answer.
 */
#include "windows_internal.h"

#include <stdlib.h>
#include <string.h>

struct pts_win_model *pts_win_new(const struct pts_trace_config *cfg)
{
	struct pts_win_model *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	if (cfg)
		m->cfg = *cfg;
	m->enclaves = m->cfg.enclaves;
	m->n_enclaves = m->enclaves ? m->cfg.n_enclaves : 0;
	m->has_production = (uint8_t)pts_enclave_has_production(m);
	for (size_t i = 0; i < m->n_enclaves; i++)
		if (m->enclaves[i].kind == PTS_ENCLAVE_DEBUG)
			m->has_debug = 1;
	pts_win_fast_init(m);
	pts_time_init(&m->time,
		      (m->cfg.known & PTS_CFG_CPUID15) ? m->cfg.cpuid_15_eax : 0,
		      (m->cfg.known & PTS_CFG_CPUID15) ? m->cfg.cpuid_15_ebx : 0,
		      pts_config_mtc_freq(&m->cfg),
		      (m->cfg.known & PTS_CFG_NOMFREQ) ? m->cfg.nom_freq : 0);
	m->state = PTS_ST_OFF;
	m->sum.packets_only = 1;
	return m;
}

void pts_win_free(struct pts_win_model *m)
{
	free(m);
}

/* --- opening and closing --------------------------------------------------- */

static void open_window(struct pts_win_model *m, uint64_t offset, uint8_t edge,
			int has_ip, uint64_t ip)
{
	m->state = PTS_ST_ON;
	PTS_WIN_ZERO(&m->win);
	pts_win_point_at(m, &m->win.begin, offset, edge, has_ip, ip);
	m->has_ip = (uint8_t)(has_ip != 0);
	m->last_ip = ip;
}

static void open_gap(struct pts_win_model *m, uint64_t offset, uint8_t edge,
		     int has_ip, uint64_t ip)
{
	m->state = PTS_ST_OFF;
	PTS_WIN_ZERO(&m->gap);
	pts_win_point_at(m, &m->gap.begin, offset, edge, has_ip, ip);
	m->gap.lost_cause = 0xff;
	m->gap.last_cbr = m->time.last_cbr;
	/* The CR3 loaded right before the disable (a PIP with nothing but a
	 * FUP or MODE.Exec after it): the CR3 filter's witness. An older PIP
	 * says nothing about the instruction that disabled. */
	m->gap.has_pip = m->pip_fresh;
	m->gap.pip_cr3 = m->last_cr3;
}

/* The gap at the start of the trace is only worth a record when tracing
 * was really off there: not when the first PSB+ (or the first packet)
 * already shows it on. */
static int start_gap_is_empty(const struct pts_win_model *m,
			      const struct pts_win_point *end)
{
	if (m->gap.begin.edge != PTS_EDGE_START)
		return 0;
	if (end->offset == m->gap.begin.offset)
		return 1;
	return (end->edge == PTS_EDGE_PSB_FUP || end->edge == PTS_EDGE_FLOW) &&
	       m->gap.psbs <= 1 && !m->gap.ovfs;
}

static void close_gap(struct pts_win_model *m, uint64_t offset, uint8_t edge,
		      int has_ip, uint64_t ip)
{
	struct pts_win_point end;
	struct pts_win_record *rec;

	pts_win_point_at(m, &end, offset, edge, has_ip, ip);
	if (start_gap_is_empty(m, &end))
		return;
	rec = pts_win_push(m, PTS_REC_GAP);
	rec->begin = m->gap.begin;
	rec->end = end;
	rec->psbs = m->gap.psbs;
	rec->ovfs = m->gap.ovfs;
	rec->cbrs = m->gap.cbrs;
	if (m->gap.ovfs)
		rec->flags |= PTS_GAPF_UNCERTAIN;
	if (edge == PTS_EDGE_END)
		rec->flags |= PTS_GAPF_TRAILING;
	pts_win_classify(m, rec);
}

/* PacketEn 0 -> 1 at @offset. */
static void enable_at(struct pts_win_model *m, uint64_t offset, uint8_t edge,
		      int has_ip, uint64_t ip)
{
	if (m->state == PTS_ST_ON)
		return;
	close_gap(m, offset, edge, has_ip, ip);
	open_window(m, offset, edge, has_ip, ip);
}

/* PacketEn 1 -> 0 at @offset. The window ends at the last IP known; the
 * gap begins at the IP the packets give for the disable (the FUP of an
 * asynchronous one, a TIP.PGD's own IP), if any. */
static void disable_at(struct pts_win_model *m, uint64_t offset, uint8_t edge,
		       int has_ip, uint64_t ip)
{
	struct pts_win_point end;

	pts_win_point_at(m, &end, offset, edge, m->has_ip, m->last_ip);
	pts_win_emit_window(m, &end);
	open_gap(m, offset, edge, has_ip, ip);
}

/* After a start or lost bytes the state is unknown, not off: a packet that
 * needs PacketEn proves it was on. */
static int state_unknown(const struct pts_win_model *m)
{
	return m->state == PTS_ST_OFF && (m->gap.begin.edge == PTS_EDGE_START ||
					  m->gap.begin.edge == PTS_EDGE_SKIP);
}

/* --- PSB+ ---------------------------------------------------------------- */

static void end_psb(struct pts_win_model *m)
{
	m->in_psb = 0;
	if (m->state == PTS_ST_ON) {
		if (m->psb_fup) {
			m->has_ip = 1;
			m->last_ip = m->psb_fup_ip;
			return;
		}
		/* PSB+ without FUP says PacketEn = 0, but no TIP.PGD said
		 * it went off: the window ends here, the gap is unexplained. */
		disable_at(m,
			   m->psb_offset > m->win.begin.offset
				   ? m->psb_offset
				   : m->win.begin.offset,
			   PTS_EDGE_PSB_NOFUP, 0, 0);
		return;
	}
	if (m->psb_fup) {
		/* Either enabled without a TIP.PGE we saw (digest 4.7 item 6)
		 * or BDM70's stray FUP before a TIP.PGE: the next packet
		 * tells. */
		m->pend_psb = 1;
	} else if (m->psb_mode) {
		m->pend_mode = 1;
		m->pend_mode_offset = m->psb_offset;
	}
}

/* --- decisions that wait for the next packet ------------------------------ */

/* Enables at the PSB+ FUP seen earlier, at the time it was seen. */
static void enable_at_psb_fup(struct pts_win_model *m)
{
	m->hold = 1;
	m->held_has_time = m->psb_fup_timed;
	m->held_tsc = m->psb_fup_tsc;
	enable_at(m, m->psb_fup_offset, PTS_EDGE_PSB_FUP, 1, m->psb_fup_ip);
	m->hold = 0;
}

/* Packets that say nothing about PacketEn. */
static int is_neutral(uint8_t kind)
{
	switch (kind) {
	case PTS_PKT_PAD:
	case PTS_PKT_TSC:
	case PTS_PKT_TMA:
	case PTS_PKT_MTC:
	case PTS_PKT_CYC:
	case PTS_PKT_CBR:
	case PTS_PKT_MNT:
	case PTS_PKT_VMCS:
	case PTS_PKT_PWRE:
	case PTS_PKT_PWRX:
	case PTS_PKT_EXSTOP:
	case PTS_PKT_PSB:
	case PTS_PKT_PSBEND:
		return 1;
	default:
		return 0;
	}
}

/* Packets PSB+ may hold (SDM 36.3.7); any other one ends a PSB+ whose
 * PSBEND is missing (a damaged trace), as if the PSBEND had been there. */
static int in_psb_plus(uint8_t kind)
{
	switch (kind) {
	case PTS_PKT_PAD:
	case PTS_PKT_TSC:
	case PTS_PKT_TMA:
	case PTS_PKT_MTC:
	case PTS_PKT_CYC:
	case PTS_PKT_CBR:
	case PTS_PKT_MNT:
	case PTS_PKT_VMCS:
	case PTS_PKT_PIP:
	case PTS_PKT_MODE_EXEC:
	case PTS_PKT_MODE_TSX:
	case PTS_PKT_FUP:
	case PTS_PKT_PSB:
	case PTS_PKT_PSBEND:
	case PTS_PKT_OVF:
		return 1;
	default:
		return 0;
	}
}

/* Returns 1 when @pkt was consumed (the FUP that resolves an OVF). */
static int resolve_pending(struct pts_win_model *m,
			   const struct pts_packet *pkt)
{
	int has_ip = pkt->ipc != PTS_IPC_SUPPRESSED;

	if (m->pend_psb) {
		m->pend_psb = 0;
		/* BDM70: a PSB+ right before a TIP.PGE may hold FUP and
		 * MODE.Exec; the TIP.PGE enables (perf ignores that FUP). */
		if (pkt->kind != PTS_PKT_TIP_PGE)
			enable_at_psb_fup(m);
	}
	if (m->pend_mode) {
		m->pend_mode = 0;
		/* MODE.Exec may precede the TIP.PGE that ends a gap. */
		if (pkt->kind != PTS_PKT_TIP_PGE && m->state == PTS_ST_OFF)
			pts_win_gap_flow(m, PTS_PKT_MODE_EXEC,
					 m->pend_mode_offset);
	}
	if (m->pend_ovf) {
		m->pend_ovf = 0;
		/* OVF then FUP: the overflow resolved with PacketEn = 1 and
		 * tracing resumes at the FUP (SDM 36.4.2.16). */
		if (pkt->kind == PTS_PKT_FUP && m->state == PTS_ST_OFF) {
			enable_at(m, pkt->offset, PTS_EDGE_OVF_FUP, has_ip,
				  pkt->u.ip.ip);
			m->after_ovf_fup = 1;
			return 1;
		}
		/* SKD010: the FUP after an OVF may be missing; flow right
		 * after an overflow that hit while on means on again. */
		if (m->state == PTS_ST_OFF &&
		    m->gap.begin.edge == PTS_EDGE_OVF &&
		    (pkt->kind == PTS_PKT_TNT8 || pkt->kind == PTS_PKT_TNT64 ||
		     pkt->kind == PTS_PKT_TIP))
			enable_at(m, pkt->offset, PTS_EDGE_FLOW, 0, 0);
	}
	return 0;
}

/* --- per packet ------------------------------------------------------------ */

static void on_pgd(struct pts_win_model *m, const struct pts_packet *pkt)
{
	int pgd_ip = pkt->ipc != PTS_IPC_SUPPRESSED;
	uint64_t offset = m->has_fup ? m->fup_offset : pkt->offset;
	uint64_t ip = m->has_fup ? m->fup_ip : pkt->u.ip.ip;
	int has_ip = m->has_fup || pgd_ip;

	if (m->state == PTS_ST_OFF) {
		if (!state_unknown(m))
			pts_win_violation(m, PTS_RULE_UNBALANCED, pkt->offset,
					  pgd_ip, pkt->u.ip.ip,
					  "tip.pgd while tracing is off");
		m->has_fup = 0;
		return;
	}
	disable_at(m, offset, m->has_fup ? PTS_EDGE_FUP_PGD : PTS_EDGE_PGD,
		   has_ip, ip);
	m->gap.has_fup = m->has_fup;
	m->gap.fup_ip = m->fup_ip;
	m->gap.has_pgd_ip = (uint8_t)pgd_ip;
	m->gap.pgd_ip = pgd_ip ? pkt->u.ip.ip : 0;
	m->has_fup = 0;
}

static void on_pge(struct pts_win_model *m, const struct pts_packet *pkt)
{
	int has_ip = pkt->ipc != PTS_IPC_SUPPRESSED;

	m->has_fup = 0;
	if (m->state == PTS_ST_ON) {
		m->has_ip = (uint8_t)has_ip;
		m->last_ip = pkt->u.ip.ip;
		/* APL12: after an OVF, a spurious FUP while disabled; the
		 * TIP.PGE that follows is the real enable. */
		if (m->after_ovf_fup)
			return;
		pts_win_violation(m, PTS_RULE_UNBALANCED, pkt->offset, has_ip,
				  pkt->u.ip.ip,
				  "tip.pge while tracing is on (a tip.pgd is "
				  "missing)");
		return;
	}
	enable_at(m, pkt->offset, PTS_EDGE_PGE, has_ip, pkt->u.ip.ip);
}

static void on_fup(struct pts_win_model *m, const struct pts_packet *pkt)
{
	uint64_t ip = pkt->u.ip.ip;

	if (m->in_psb) {
		m->psb_fup = 1;
		m->psb_fup_ip = ip;
		m->psb_fup_offset = pkt->offset;
		m->psb_fup_timed =
			(uint8_t)pts_time_now(&m->time, &m->psb_fup_tsc);
		return;
	}
	if (m->state == PTS_ST_OFF) {
		pts_win_gap_flow(m, pkt->kind, pkt->offset);
		return;
	}
	m->has_fup = 1;
	m->fup_ip = ip;
	m->fup_offset = pkt->offset;
	m->has_ip = 1;
	m->last_ip = ip;
}

static void on_ovf(struct pts_win_model *m, const struct pts_packet *pkt)
{
	/* OVF ends PSB+ (SDM 36.3.7) and any compound in progress. */
	if (m->in_psb)
		end_psb(m);
	m->pend_psb = 0;
	m->has_fup = 0;
	if (m->state == PTS_ST_ON)
		disable_at(m, pkt->offset, PTS_EDGE_OVF, 0, 0);
	else
		m->gap.ovfs++;
	m->pend_ovf = 1;
}

static void on_stop(struct pts_win_model *m, const struct pts_packet *pkt)
{
	/* TraceStop clears TriggerEn; a TIP.PGD may come first (SDM
	 * 36.2.4.3), in which case the gap is already open. */
	if (m->state == PTS_ST_ON)
		disable_at(m, pkt->offset, PTS_EDGE_STOP, 0, 0);
	m->gap.stop = 1;
}

static void on_flow(struct pts_win_model *m, const struct pts_packet *pkt)
{
	if (m->state == PTS_ST_OFF) {
		pts_win_gap_flow(m, pkt->kind, pkt->offset);
		return;
	}
	if (pkt->kind == PTS_PKT_TIP) {
		m->win.tips++;
		if (m->has_fup && m->has_debug && pkt->ipc != PTS_IPC_SUPPRESSED)
			pts_enclave_debug_branch(m, m->fup_ip, pkt->u.ip.ip);
		m->has_fup = 0;
		if (pkt->ipc != PTS_IPC_SUPPRESSED) {
			m->has_ip = 1;
			m->last_ip = pkt->u.ip.ip;
		}
	} else if (pkt->kind == PTS_PKT_TNT8 || pkt->kind == PTS_PKT_TNT64) {
		m->win.tnt_bits += pkt->u.tnt.count;
	}
}

static void dispatch(struct pts_win_model *m, const struct pts_packet *pkt)
{
	switch (pkt->kind) {
	case PTS_PKT_PSB:
		/* BDM70's stray FUP is in the PSB+ right before the TIP.PGE:
		 * with another PSB+ between, that FUP said tracing was on. */
		if (m->pend_psb) {
			m->pend_psb = 0;
			enable_at_psb_fup(m);
		}
		m->in_psb = 1;
		m->psb_fup = m->psb_mode = 0;
		m->psb_offset = pkt->offset;
		m->has_fup = 0;
		if (m->state == PTS_ST_OFF)
			m->gap.psbs++;
		break;
	case PTS_PKT_PSBEND:
		if (m->in_psb)
			end_psb(m);
		break;
	case PTS_PKT_OVF:
		on_ovf(m, pkt);
		break;
	case PTS_PKT_FUP:
		on_fup(m, pkt);
		break;
	case PTS_PKT_TIP_PGE:
		on_pge(m, pkt);
		break;
	case PTS_PKT_TIP_PGD:
		on_pgd(m, pkt);
		break;
	case PTS_PKT_STOP:
		on_stop(m, pkt);
		break;
	case PTS_PKT_MODE_EXEC:
		if (m->state == PTS_ST_ON)
			break;
		if (m->in_psb) {
			m->psb_mode = 1;
		} else {
			m->pend_mode = 1;
			m->pend_mode_offset = pkt->offset;
		}
		break;
	case PTS_PKT_PIP:
		m->last_cr3 = pkt->u.pip.cr3;
		if (m->state == PTS_ST_OFF)
			pts_win_gap_flow(m, pkt->kind, pkt->offset);
		break;
	case PTS_PKT_MWAIT: /* needs ContextEn (digest 3.6) */
		if (m->state == PTS_ST_OFF)
			pts_win_gap_flow(m, pkt->kind, pkt->offset);
		break;
	case PTS_PKT_CBR:
		if (m->state == PTS_ST_OFF && m->gap.last_cbr &&
		    m->gap.last_cbr != pkt->u.cbr.ratio)
			m->gap.cbrs++;
		m->gap.last_cbr = pkt->u.cbr.ratio;
		break;
	case PTS_PKT_TNT8:
	case PTS_PKT_TNT64:
	case PTS_PKT_TIP:
	case PTS_PKT_MODE_TSX:
	case PTS_PKT_PTW:
		on_flow(m, pkt);
		break;
	default:
		break;
	}
}

static int is_ip_packet(uint8_t kind)
{
	return kind == PTS_PKT_TIP || kind == PTS_PKT_TIP_PGE ||
	       kind == PTS_PKT_TIP_PGD || kind == PTS_PKT_FUP;
}

/* One packet through the whole state machine (windows_fast.c sends the
 * packets that cannot change PacketEn around it). */
int pts_win_feed_slow(struct pts_win_model *m, const struct pts_packet *pkt)
{
	if (!m->started) {
		m->started = 1;
		open_gap(m, pkt->offset, PTS_EDGE_START, 0, 0);
	}
	if (pts_time_packet(&m->time, pkt, m->in_psb) &&
	    !m->gap.begin.has_time && m->state == PTS_ST_OFF &&
	    m->gap.begin.edge == PTS_EDGE_START)
		/* The trace starts before its first timestamp: date the start
		 * by that timestamp. */
		pts_win_point_at(m, &m->gap.begin, m->gap.begin.offset,
				 PTS_EDGE_START, 0, 0);
	if (m->state == PTS_ST_ON)
		m->win.packets++;
	if (m->in_psb && !in_psb_plus(pkt->kind))
		end_psb(m);
	if (is_ip_packet(pkt->kind) && pkt->ipc != PTS_IPC_SUPPRESSED)
		pts_win_check_ip(m, pkt, m->in_psb);
	if (!is_neutral(pkt->kind) && !m->in_psb && resolve_pending(m, pkt))
		return m->overrun ? -PTS_ERR_INTERNAL : (int)m->q_len;
	/* A packet that needs PacketEn while the state is unknown (start,
	 * lost bytes) shows that tracing was on. */
	if (state_unknown(m) && !m->in_psb &&
	    (pkt->kind == PTS_PKT_TNT8 || pkt->kind == PTS_PKT_TNT64 ||
	     pkt->kind == PTS_PKT_TIP || pkt->kind == PTS_PKT_FUP))
		enable_at(m, pkt->offset, PTS_EDGE_FLOW, 0, 0);
	dispatch(m, pkt);
	if (!is_neutral(pkt->kind))
		m->after_ovf_fup = 0;
	if (pkt->kind == PTS_PKT_PIP)
		m->pip_fresh = 1;
	else if (!is_neutral(pkt->kind) && pkt->kind != PTS_PKT_FUP &&
		 pkt->kind != PTS_PKT_MODE_EXEC)
		m->pip_fresh = 0;
	return m->overrun ? -PTS_ERR_INTERNAL : (int)m->q_len;
}

int pts_win_lost(struct pts_win_model *m, int cause, uint64_t begin,
		 uint64_t end)
{
	if (!m || m->ended ||
	    (cause != PTS_GAP_DECODE_ERROR && cause != PTS_GAP_TRUNCATED))
		return -PTS_ERR_INVALID;
	(void)end; /* the gap runs until tracing is seen on again */
	/* The decoder reports an error, then the bytes it skipped to the
	 * next PSB: one gap. */
	if (m->started && m->state == PTS_ST_OFF && m->gap.lost_cause == cause)
		return (int)m->q_len;
	/* A whole PSB+ with a FUP said tracing was on, unless a TIP.PGE
	 * came next (BDM70): what came next is lost, so it was on, as at
	 * the end of the trace. */
	if (m->pend_psb)
		enable_at_psb_fup(m);
	m->in_psb = 0;
	m->pend_psb = m->pend_mode = m->pend_ovf = 0;
	m->has_fup = 0;
	if (!m->started) {
		m->started = 1;
	} else if (m->state == PTS_ST_ON) {
		struct pts_win_point p;

		pts_win_point_at(m, &p, begin, PTS_EDGE_SKIP, m->has_ip,
				 m->last_ip);
		pts_win_emit_window(m, &p);
	} else {
		close_gap(m, begin, PTS_EDGE_SKIP, 0, 0);
	}
	open_gap(m, begin, PTS_EDGE_SKIP, 0, 0);
	m->gap.lost_cause = (uint8_t)cause;
	return m->overrun ? -PTS_ERR_INTERNAL : (int)m->q_len;
}

int pts_win_end(struct pts_win_model *m, uint64_t end)
{
	if (!m)
		return -PTS_ERR_INVALID;
	if (m->ended || !m->started) {
		m->ended = 1;
		return 0;
	}
	if (m->in_psb)
		end_psb(m);
	if (m->pend_psb) {
		m->pend_psb = 0;
		enable_at_psb_fup(m);
	}
	m->pend_mode = m->pend_ovf = 0;
	if (m->state == PTS_ST_ON) {
		struct pts_win_point p;

		pts_win_point_at(m, &p, end, PTS_EDGE_END, m->has_ip,
				 m->last_ip);
		pts_win_emit_window(m, &p);
	} else {
		close_gap(m, end, PTS_EDGE_END, 0, 0);
	}
	m->ended = 1;
	return m->overrun ? -PTS_ERR_INTERNAL : (int)m->q_len;
}
