/* The flow walker outside code: the packet queue, records, sync (PSB+),
 * overflow, the disabled state and the events that bind to no instruction. */
#include "flow_internal.h"

#include <string.h>

struct pts_flow_rec *pts_flow_emit(struct pts_flow *f, int kind)
{
	struct pts_flow_rec *r;
	if (f->out && f->out_n < f->out_max) {
		r = &f->out[f->out_n++];
	} else {
		/* Steps run only with STEP_RECS free, so this always fits. */
		r = &f->pend[(f->pend_head + f->pend_len) % PEND_CAP];
		f->pend_len++;
	}
	memset(r, 0, sizeof(*r));
	r->kind = (uint8_t)kind;
	r->mode = f->mode;
	r->cr3 = f->cr3;
	r->offset = f->offset;
	return r;
}

struct pts_flow_rec *pts_flow_event(struct pts_flow *f, int type, uint64_t ip,
				    uint64_t offset)
{
	struct pts_flow_rec *r = pts_flow_emit(f, PTS_FLOW_EVENT);
	r->type = (uint8_t)type;
	r->ip = ip;
	r->offset = offset;
	f->stats.events++;
	return r;
}

static void error_at(struct pts_flow *f, int err, uint64_t ip, uint64_t offset)
{
	struct pts_flow_rec *r = pts_flow_emit(f, PTS_FLOW_ERROR);
	r->offset = offset;
	r->ip = ip;
	r->error = (int16_t)err;
	if (err != -PTS_ERR_TRUNCATED &&
	    f->stats.errors == f->stats.truncated) {
		f->stats.first_error = err;
		f->stats.first_error_offset = offset;
		f->stats.first_error_ip = ip;
	}
	if (err == -PTS_ERR_TRUNCATED)
		f->stats.truncated_offset = offset;
	f->stats.errors++;
	f->stats.truncated += err == -PTS_ERR_TRUNCATED;
	pts_flow_lose_sync(f);
	/* Data that ends inside a packet is that error, no skip. */
	f->no_skip = err == -PTS_ERR_TRUNCATED;
	f->tnt_count = 0;
	f->rs_len = 0;
	/* What ran up to the next sync is lost: a TIP.PGE there is no
	 * resume (libipt: no resumed flag after a sync). */
	f->have_disabled_at = false;
}

void pts_flow_error(struct pts_flow *f, int err, uint64_t ip)
{
	const struct pts_packet *head = pts_flow_peek(f, 0);
	error_at(f, err, ip, head ? head->offset : f->offset);
}

void pts_flow_error_tnt(struct pts_flow *f, int err, uint64_t ip)
{
	error_at(f, err, ip, f->tnt_offset);
}

void pts_flow_lose_sync(struct pts_flow *f)
{
	const struct pts_packet *head = pts_flow_peek(f, 0);
	f->st = ST_NOSYNC;
	f->nosync_from = head ? head->offset : pts_pkt_offset(f->pkt);
	f->no_skip = false;
}

/* Reports the bytes skipped since sync was lost, up to stream offset @end
 * (a PSB, or the end of the trace), as a SKIP record. */
static void skipped_to(struct pts_flow *f, uint64_t end)
{
	if (f->no_skip || end <= f->nosync_from)
		return;
	struct pts_flow_rec *r = pts_flow_emit(f, PTS_FLOW_SKIP);
	r->offset = f->nosync_from;
	r->arg = end;
	f->stats.skipped += end - f->nosync_from;
	f->no_skip = true;
}

unsigned pts_flow_cbrs(struct pts_flow *f, bool report, unsigned ahead)
{
	const struct pts_packet *h = pts_flow_peek(f, ahead);
	unsigned n = 0;
	for (; f->cbr_len && (!h || f->cbr[f->cbr_head].offset < h->offset);
	     n++) {
		if (report) {
			struct pts_flow_rec *r = pts_flow_event(
				f, PTS_EV_CBR, 0, f->cbr[f->cbr_head].offset);
			r->arg = f->cbr[f->cbr_head].ratio;
			r->flags = PTS_EV_F_IP_SUPPRESSED;
		}
		f->cbr_head = (f->cbr_head + 1) % CBR_CAP;
		f->cbr_len--;
	}
	return n;
}

void pts_flow_step_nosync(struct pts_flow *f)
{
	const struct pts_packet *p = pts_flow_peek(f, 0);
	pts_flow_cbrs(f, false, 0); /* skipped with the rest */
	if (!p && !f->pkt_eos)
		return; /* CBRs filled their room: more packets come */
	/* The queue runs dry only at the end of the trace (flow_next()
	 * steps with LOOKAHEAD packets queued, or none to come). */
	if (!p || p->kind == PTS_PKT_PSB)
		skipped_to(f, p ? p->offset : pts_pkt_offset(f->pkt));
	if (!p) {
		f->st = ST_DONE;
		return;
	}
	if (p->kind == PTS_PKT_PSB) {
		pts_flow_enter_psb(f);
		return;
	}
	pts_flow_pop(f);
}

void pts_flow_enter_psb(struct pts_flow *f)
{
	pts_flow_pop(f);
	f->psb_was_enabled = f->st == ST_ENABLED;
	f->psb_have_fup = false;
	f->psb_have_mode = f->psb_mode_conflict = false;
	f->st = ST_PSB;
	/* A PSB+ comes when no TNT is pending (it flushes them). */
	f->tnt_count = 0;
}

/* The mode a MODE.Exec gives. */
static uint8_t exec_mode(const struct pts_packet *p)
{
	uint8_t l = p->u.exec.csl, d = p->u.exec.csd;
	if (l && d)
		return PTS_EXEC_UNKNOWN; /* reserved combination */
	return l ? PTS_EXEC_64 : d ? PTS_EXEC_32 : PTS_EXEC_16;
}

void pts_flow_exec_mode(struct pts_flow *f, const struct pts_packet *p,
			uint64_t ip, uint8_t flags)
{
	f->mode = exec_mode(p);
	struct pts_flow_rec *r = pts_flow_event(f, PTS_EV_EXEC_MODE, ip,
						p->offset);
	r->arg = f->mode;
	r->mode = f->mode;
	r->flags = flags;
}

void pts_flow_tsx(struct pts_flow *f, const struct pts_packet *p, uint64_t ip,
		  uint8_t flags)
{
	struct pts_flow_rec *r = pts_flow_event(f, PTS_EV_TSX, ip, p->offset);
	r->arg = (uint64_t)(p->u.tsx.intx | p->u.tsx.abrt << 1);
	r->flags = flags;
}

void pts_flow_paging(struct pts_flow *f, const struct pts_packet *p,
		     uint64_t ip, uint8_t flags)
{
	f->cr3 = p->u.pip.cr3;
	f->nr = p->u.pip.nr;
	struct pts_flow_rec *r = pts_flow_event(f, PTS_EV_PAGING, ip, p->offset);
	r->arg = p->u.pip.cr3;
	r->arg2 = p->u.pip.nr;
	r->cr3 = f->cr3;
	r->flags = flags;
}

/* Ends PSB+: the FUP in it (if any) says where the flow is. */
static void psb_end(struct pts_flow *f)
{
	if (f->psb_have_fup && f->psb_mode_conflict) {
		/* PSB+ restates the state once (SDM 36.3.7): two modes in it
		 * leave the walk without one (libipt, once the FUP enabled
		 * tracing: bad status update). */
		pts_flow_error(f, -PTS_ERR_TRACE_MISMATCH, 0);
		return;
	}
	if (f->psb_have_fup) {
		if (!f->psb_was_enabled) {
			/* Sync point: the flow starts here. */
			f->ip = f->psb_ip;
			struct pts_flow_rec *r = pts_flow_event(
				f, PTS_EV_ENABLED, f->ip, f->offset);
			r->flags = PTS_EV_F_STATUS;
		}
		/* Already walking: the FUP is where the walker will get
		 * without packets; the walk goes on from where it is. */
		f->psb_stop = f->ip != f->psb_ip;
		f->st = ST_ENABLED;
		pts_flow_at_end(f);
	} else {
		if (f->psb_was_enabled) {
			struct pts_flow_rec *r = pts_flow_event(
				f, PTS_EV_DISABLED, 0, f->offset);
			r->flags = PTS_EV_F_STATUS | PTS_EV_F_IP_SUPPRESSED;
		}
		f->st = ST_DISABLED;
	}
}

/* BDM70: a PSB+ right before a TIP.PGE may hold a FUP (and MODE.Exec)
 * although tracing is off. As libipt (pt_qry_header_fup), when tracing
 * was off, a PSB+ FUP (at the head) followed by nothing but PSB+ and
 * status packets up to a TIP.PGE does not enable. */
static bool bdm70(const struct pts_flow *f)
{
	if (!f->errata.bdm70 || f->psb_was_enabled)
		return false;
	const struct pts_packet *p;
	for (unsigned i = 1; (p = pts_flow_peek(f, i)); i++) {
		switch (p->kind) {
		case PTS_PKT_TIP_PGE:
			return true;
		case PTS_PKT_PSBEND: case PTS_PKT_PIP: case PTS_PKT_MODE_EXEC:
		case PTS_PKT_MODE_TSX: case PTS_PKT_VMCS:
			continue; /* timing packets are not queued */
		default:
			return false;
		}
	}
	return false;
}

void pts_flow_step_psb(struct pts_flow *f)
{
	const struct pts_packet *p = pts_flow_peek(f, 0);
	if (!p) {
		if (f->pkt_eos) /* else CBRs filled their room */
			psb_end(f);
		return;
	}
	struct pts_flow_rec *r;
	switch (p->kind) {
	case PTS_PKT_FUP:
		/* PSB+ holds one FUP, with an IP (SDM 36.3.7). Of several,
		 * the last holds, and one without an IP says tracing is off,
		 * as the last IP libipt syncs with does. */
		if (p->ipc == PTS_IPC_SUPPRESSED) {
			f->psb_have_fup = false;
		} else if (!bdm70(f)) {
			f->psb_have_fup = true;
			f->psb_ip = p->u.ip.ip;
		}
		break;
	case PTS_PKT_MODE_EXEC:
		/* While tracing, PSB+ restates the mode: another one means a
		 * lost MODE.Exec (libipt: bad status update). */
		if (f->psb_was_enabled && f->mode != PTS_EXEC_UNKNOWN &&
		    exec_mode(p) != f->mode) {
			pts_flow_error(f, -PTS_ERR_TRACE_MISMATCH, 0);
			return;
		}
		if (f->psb_have_mode && f->mode != PTS_EXEC_UNKNOWN &&
		    exec_mode(p) != f->mode)
			f->psb_mode_conflict = true;
		f->psb_have_mode = true;
		pts_flow_exec_mode(f, p, 0, PTS_EV_F_STATUS);
		break;
	case PTS_PKT_PIP:
		pts_flow_paging(f, p, 0, PTS_EV_F_STATUS);
		break;
	case PTS_PKT_MODE_TSX:
		pts_flow_tsx(f, p, 0, PTS_EV_F_STATUS);
		break;
	case PTS_PKT_VMCS:
		r = pts_flow_event(f, PTS_EV_VMCS, 0, p->offset);
		r->arg = p->u.vmcs_base;
		r->flags = PTS_EV_F_STATUS;
		break;
	case PTS_PKT_PSBEND:
		pts_flow_pop(f);
		psb_end(f);
		return;
	case PTS_PKT_OVF:
		/* OVF ends PSB+; the overflow decides where we are. */
		f->st = ST_DISABLED;
		pts_flow_overflow(f);
		return;
	case PKT_ERROR:
		/* A packet that does not decode is that error, not a
		 * packet out of context: cut data stays TRUNCATED. */
		pts_flow_error(f, (int)(int64_t)p->u.tsc, 0);
		return;
	default:
		/* Only status packets in PSB+ (SDM 36.3.7; libipt
		 * pt_qry_read_psb_header: -pte_bad_context). */
		pts_flow_error(f, -PTS_ERR_TRACE_MISMATCH, 0);
		return;
	}
	pts_flow_pop(f);
}

/* The overflow errata look at most this many queued packets ahead of the
 * OVF (timing, PAD and MNT packets are not queued): a step runs with at
 * least LOOKAHEAD queued unless the trace ended, so the answer does not
 * depend on how the input was chunked. Beyond it, as at the end of the
 * trace, the scan "can't tell". */
#define OVF_SCAN LOOKAHEAD

/* Verdicts of the overflow scans. */
enum { OVF_ENABLED, OVF_DISABLED, OVF_BAD };

/* APL12: after OVF a FUP may come although the overflow resolved with
 * tracing disabled. As libipt (apl12_tracing_is_disabled), the packets
 * after the FUP at @fup tell: TIP.PGE or TraceStop say disabled; TNT,
 * TIP, TIP.PGD say enabled; a PSB+ says enabled iff it holds a FUP; OVF,
 * packet errors and the end of what may be looked at can't tell
 * (enabled); PSBEND is out of context; anything else is skipped. */
static int apl12_scan(const struct pts_flow *f, unsigned fup)
{
	const struct pts_packet *p;
	bool in_psb = false;
	for (unsigned i = fup + 1; i < OVF_SCAN && (p = pts_flow_peek(f, i));
	     i++) {
		if (in_psb) {
			if (p->kind == PTS_PKT_FUP)
				return OVF_ENABLED;
			if (p->kind == PTS_PKT_PSBEND)
				return OVF_DISABLED;
			if (p->kind == PTS_PKT_OVF || p->kind == PKT_ERROR)
				return OVF_ENABLED;
			continue;
		}
		switch (p->kind) {
		case PTS_PKT_STOP: case PTS_PKT_TIP_PGE:
			return OVF_DISABLED;
		case PTS_PKT_TNT8: case PTS_PKT_TNT64: case PTS_PKT_TIP:
		case PTS_PKT_TIP_PGD: case PTS_PKT_OVF: case PKT_ERROR:
			return OVF_ENABLED;
		case PTS_PKT_PSB:
			in_psb = true;
			break;
		case PTS_PKT_PSBEND:
			return OVF_BAD;
		default:
			break;
		}
	}
	return OVF_ENABLED;
}

/* Resolves the OVF at the head with tracing off, consuming @n more packets
 * after it (an erratum's spurious FUP or TIP.PGD and what precedes it). */
static void ovf_disabled(struct pts_flow *f, uint64_t off, unsigned n)
{
	while (n--)
		pts_flow_pop(f);
	f->st = ST_DISABLED;
	struct pts_flow_rec *r = pts_flow_event(f, PTS_EV_OVERFLOW, 0, off);
	r->flags = PTS_EV_F_IP_SUPPRESSED;
}

void pts_flow_overflow(struct pts_flow *f)
{
	const struct pts_packet *ovf = pts_flow_head(f);
	uint64_t off = ovf->offset;
	/* No return may be compressed across an overflow; TNT bits and
	 * binding state from before it are void. */
	f->rs_len = 0;
	f->tnt_count = 0;
	/* Nor does a TIP.PGE after it resume where tracing stopped before:
	 * what ran in between is lost (libipt: no resumed flag). */
	f->have_disabled_at = false;
	/* The OVF binds to a FUP right after it (timing packets are not
	 * queued): the overflow resolved with tracing on. */
	const struct pts_packet *next = pts_flow_peek(f, 1);
	int kind = next ? next->kind : -1;
	if (kind == PTS_PKT_FUP && next->ipc != PTS_IPC_SUPPRESSED) {
		int v = f->errata.apl12 ? apl12_scan(f, 1) : OVF_ENABLED;
		if (v == OVF_DISABLED) {
			ovf_disabled(f, off, 2); /* drop the FUP */
			return;
		}
		if (v == OVF_BAD) {
			pts_flow_error(f, -PTS_ERR_TRACE_MISMATCH, 0);
			return;
		}
		pts_flow_pop(f);
		f->ip = next->u.ip.ip;
		pts_flow_pop(f);
		f->psb_stop = false;
		f->st = ST_ENABLED;
		pts_flow_event(f, PTS_EV_OVERFLOW, f->ip, off);
		pts_flow_at_end(f);
		return;
	}
	/* Packets that need tracing on cannot come before the FUP: as
	 * libipt (pt_pkt_find_ovf_fup), they are out of context. The error
	 * leaves the OVF at the head (reported at its offset) for the resync
	 * to skip.
	 * APL11: a TIP.PGD may follow the OVF although tracing was off.
	 * libipt (apl11_apply) then searches from the OVF for the TIP.PGD,
	 * skipping timing, PAD and MNT packets, and resumes after it with
	 * tracing off; any other packet first means the erratum does not
	 * apply. Those packets are not queued here, so the search ends at
	 * the packet right after the OVF: it applies iff that is the TIP.PGD,
	 * which is swallowed (no [disabled]). */
	if (kind == PTS_PKT_TIP_PGD && f->errata.apl11) {
		ovf_disabled(f, off, 2);
		return;
	}
	if (kind == PTS_PKT_TNT8 || kind == PTS_PKT_TNT64 ||
	    kind == PTS_PKT_TIP || kind == PTS_PKT_TIP_PGD ||
	    kind == PTS_PKT_PSBEND) {
		pts_flow_error(f, -PTS_ERR_TRACE_MISMATCH, 0);
		return;
	}
	/* Anything else (or nothing): the overflow resolved with tracing
	 * off; a TIP.PGE will say where it goes on. */
	ovf_disabled(f, off, 1);
}

/* The IP of the FUP right after the head (for packets that bind to it). */
static bool fup_after_head(const struct pts_flow *f, uint64_t *ip)
{
	const struct pts_packet *n = pts_flow_peek(f, 1);
	if (!n || n->kind != PTS_PKT_FUP || n->ipc == PTS_IPC_SUPPRESSED)
		return false;
	*ip = n->u.ip.ip;
	return true;
}

bool pts_flow_codeless(struct pts_flow *f)
{
	const struct pts_packet *p = pts_flow_head(f);
	struct pts_flow_rec *r;
	uint64_t ip = 0;
	switch (p->kind) {
	case PTS_PKT_STOP:
		pts_flow_event(f, PTS_EV_STOP, 0, p->offset)->flags =
			PTS_EV_F_IP_SUPPRESSED;
		break;
	case PTS_PKT_PWRE:
		r = pts_flow_event(f, PTS_EV_PWRE, 0, p->offset);
		r->arg = (uint64_t)(p->u.pwre.state | p->u.pwre.sub_state << 8 |
				    p->u.pwre.hw << 16);
		r->flags = PTS_EV_F_IP_SUPPRESSED;
		break;
	case PTS_PKT_PWRX:
		r = pts_flow_event(f, PTS_EV_PWRX, 0, p->offset);
		r->arg = (uint64_t)(p->u.pwrx.last | p->u.pwrx.deepest << 8 |
				    p->u.pwrx.interrupt << 16 |
				    p->u.pwrx.store << 17 |
				    p->u.pwrx.autonomous << 18);
		r->flags = PTS_EV_F_IP_SUPPRESSED;
		break;
	case PTS_PKT_MWAIT:
		r = pts_flow_event(f, PTS_EV_MWAIT, 0, p->offset);
		r->arg = p->u.mwait.hints;
		r->arg2 = p->u.mwait.ext;
		r->flags = PTS_EV_F_IP_SUPPRESSED;
		break;
	case PTS_PKT_EVD:
		r = pts_flow_event(f, PTS_EV_EVD, 0, p->offset);
		r->arg = p->u.evd.type;
		r->arg2 = p->u.evd.payload;
		r->flags = PTS_EV_F_IP_SUPPRESSED;
		break;
	case PTS_PKT_CFE:
		/* With its IP bit set a CFE names the IP of the FUP that
		 * follows; the FUP stays for the async event it belongs to. */
		r = pts_flow_event(f, PTS_EV_CFE, 0, p->offset);
		r->arg = (uint64_t)(p->u.cfe.type | p->u.cfe.vector << 8);
		if (p->u.cfe.ip && fup_after_head(f, &ip))
			r->ip = ip;
		else
			r->flags = PTS_EV_F_IP_SUPPRESSED;
		break;
	case PTS_PKT_MODE_TSX:
		/* An OVF in place of its FUP (SDM Table 36-15: MODE.TSX,
		 * then FUP): the FUP was lost in the overflow, and with it
		 * where the transaction state changed. Reported without IP;
		 * the overflow comes next. libipt drops it. */
		if (!pts_flow_peek(f, 1) ||
		    pts_flow_peek(f, 1)->kind != PTS_PKT_OVF)
			return false;
		pts_flow_tsx(f, p, 0, PTS_EV_F_IP_SUPPRESSED);
		break;
	case PTS_PKT_EXSTOP:
		if (p->u.exstop.ip && !fup_after_head(f, &ip) &&
		    pts_flow_peek(f, 1)) {
			/* Its IP bit says a FUP follows (SDM 36.4.2.22): one
			 * is lost, and with it where execution stopped; the
			 * trace is damaged (libipt: bad query at the packet
			 * after). */
			pts_flow_error(f, -PTS_ERR_TRACE_MISMATCH,
				       f->st == ST_ENABLED ? f->ip : 0);
			return true;
		}
		r = pts_flow_event(f, PTS_EV_EXSTOP, 0, p->offset);
		r->flags = PTS_EV_F_IP_SUPPRESSED;
		if (p->u.exstop.ip && fup_after_head(f, &ip)) {
			/* Execution stopped at the FUP's IP and resumes there
			 * later: the FUP carries no branch. */
			r->ip = ip;
			r->flags = 0;
			pts_flow_pop(f);
		}
		break;
	case PTS_PKT_BEP:
		/* A PEBS record's IP, not a branch: swallow its FUP. */
		if (p->u.bep.ip && fup_after_head(f, &ip))
			pts_flow_pop(f);
		break;
	case PTS_PKT_BBP:
	case PTS_PKT_BIP:
	case PTS_PKT_PSBEND:
		break;
	default:
		return false;
	}
	pts_flow_pop(f);
	return true;
}

/* The index of the TIP.PGE that the status packets at the head (PIP,
 * MODE.Exec, VMCS) lead up to, or -1. */
static int pge_ahead(const struct pts_flow *f)
{
	const struct pts_packet *p;
	for (unsigned i = 0; (p = pts_flow_peek(f, i)); i++) {
		if (p->kind == PTS_PKT_TIP_PGE)
			return (int)i;
		if (p->kind != PTS_PKT_PIP && p->kind != PTS_PKT_MODE_EXEC &&
		    p->kind != PTS_PKT_VMCS)
			return -1;
	}
	return -1;
}

/* Tracing starts at the TIP.PGE @n packets ahead, with an IP. As libipt
 * (pt_qry_decode_tip_pge: the enabled event first, then the events that
 * bind to the TIP.PGE), [enabled] comes before the [paging], [exec mode]
 * and [vmcs] events of the status packets in front of it, which take the
 * TIP.PGE's IP. */
static void enable(struct pts_flow *f, unsigned n)
{
	const struct pts_packet *pge = &f->q[f->qhead + n]; /* queued */
	uint64_t ip = pge->u.ip.ip;
	struct pts_flow_rec *r = pts_flow_event(f, PTS_EV_ENABLED, ip,
						pge->offset);
	if (f->have_disabled_at && f->disabled_at == ip)
		r->flags = PTS_EV_F_RESUMED;
	f->have_disabled_at = false;
	for (unsigned i = 0; i < n; i++) {
		const struct pts_packet *p = pts_flow_pop(f);
		if (p->kind == PTS_PKT_PIP) {
			pts_flow_paging(f, p, ip, 0);
		} else if (p->kind == PTS_PKT_MODE_EXEC) {
			pts_flow_exec_mode(f, p, ip, 0);
		} else {
			struct pts_flow_rec *v = pts_flow_event(
				f, PTS_EV_VMCS, ip, p->offset);
			v->arg = p->u.vmcs_base;
		}
	}
	pts_flow_pop(f);
	r->mode = f->mode;
	r->cr3 = f->cr3;
	f->ip = ip;
	f->psb_stop = false;
	f->st = ST_ENABLED;
	pts_flow_at_end(f);
}

void pts_flow_step_disabled(struct pts_flow *f)
{
	const struct pts_packet *p = pts_flow_peek(f, 0);
	if (!p) {
		pts_flow_cbrs(f, true, 0);
		if (f->pkt_eos) /* else CBRs filled their room */
			f->st = ST_DONE;
		return;
	}
	struct pts_flow_rec *r;
	int pge = pge_ahead(f);
	/* CBRs among the status packets of a TIP.PGE, or between an OVF and
	 * the FUP it resolves at, come first (libipt reads them with the
	 * event) */
	if (pts_flow_cbr_stop(f, pge > 0 ? (unsigned)pge
			      : p->kind == PTS_PKT_OVF ? pts_flow_ovf_group(f)
						       : 0))
		return;
	if (pge >= 0) {
		if (f->q[f->qhead + (unsigned)pge].ipc == PTS_IPC_SUPPRESSED) {
			pts_flow_error(f, -PTS_ERR_TRACE_MISMATCH, 0);
			return;
		}
		enable(f, (unsigned)pge);
		return;
	}
	switch (p->kind) {
	case PTS_PKT_MODE_EXEC:
		pts_flow_pop(f);
		pts_flow_exec_mode(f, p, 0, PTS_EV_F_IP_SUPPRESSED);
		return;
	case PTS_PKT_PIP:
		pts_flow_pop(f);
		pts_flow_paging(f, p, 0, PTS_EV_F_IP_SUPPRESSED);
		return;
	case PTS_PKT_VMCS:
		pts_flow_pop(f);
		r = pts_flow_event(f, PTS_EV_VMCS, 0, p->offset);
		r->arg = p->u.vmcs_base;
		r->flags = PTS_EV_F_IP_SUPPRESSED;
		return;
	case PTS_PKT_MODE_TSX:
		pts_flow_pop(f);
		pts_flow_tsx(f, p, 0, PTS_EV_F_IP_SUPPRESSED);
		return;
	case PTS_PKT_PSB:
		pts_flow_enter_psb(f);
		return;
	case PTS_PKT_OVF:
		pts_flow_overflow(f);
		return;
	case PTS_PKT_PTW:
		pts_flow_pop(f);
		r = pts_flow_event(f, PTS_EV_PTWRITE, 0, p->offset);
		r->arg = p->u.ptw.payload;
		r->arg2 = p->u.ptw.plc;
		r->flags = PTS_EV_F_IP_SUPPRESSED;
		return;
	case PKT_ERROR:
		/* With tracing off too, a packet that does not decode is
		 * that error: cut data stays TRUNCATED. */
		pts_flow_error(f, (int)(int64_t)p->u.tsc, 0);
		return;
	default:
		if (pts_flow_codeless(f))
			return;
		pts_flow_error(f, -PTS_ERR_TRACE_MISMATCH, 0);
	}
}
