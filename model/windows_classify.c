/* A gap's cause, decided when the gap closes.
 *
 * Packets bound the possibilities, the configuration and the enclave map
 * narrow them, the flow decoder's evidence (when images are given) settles
 * them. The method: start from the causes the opening packets allow, remove
 * what the configuration rules out; one left is the cause, none left is
 * "unknown" (a violation: nothing explains the gap), several left is
 * "needs-images" with the candidates listed.
 *
 * What the opening packets allow (SDM 36.4.2.5, 36.2.5; digest 2.3):
 * - TIP.PGD with an IP: only FilterEn drops that way (a branch leaving the
 *   filter ranges); ContextEn and TriggerEn disables suppress the IP.
 * - bare TIP.PGD(): binds to a branch: SYSCALL/far transfer into an
 *   untraced ring (CPL), a MOV CR3 / task switch (CR3), a conditional branch
 *   out of a filter range (IP filter, IP suppressed).
 * - FUP(x) + TIP.PGD(): an asynchronous disable: interrupt or exception
 *   into an untraced ring (CPL), WRMSR clearing TraceEn or SMI (tracing
 *   switched off), EENTER/ERESUME into a production enclave (enclave,
 *   SDM Table 36-50 row 20c).
 */
#include "windows_internal.h"

#include <stdio.h>
#include <string.h>

#define CAUSE_BIT(c) (1u << (c))

static void set_cause(struct pts_win_record *rec, int cause, int basis)
{
	rec->cause = (uint8_t)cause;
	rec->basis = (uint8_t)basis;
}

static int closed_at_ip(const struct pts_win_record *rec)
{
	uint8_t e = rec->end.edge;

	return rec->end.has_ip && (e == PTS_EDGE_PGE || e == PTS_EDGE_PSB_FUP ||
				   e == PTS_EDGE_OVF_FUP);
}

/* The one production enclave of the map, or -1 when there are 0 or 2+. */
static int only_production(const struct pts_win_model *m)
{
	int found = -1;

	for (size_t i = 0; i < m->n_enclaves; i++) {
		if (m->enclaves[i].kind != PTS_ENCLAVE_PRODUCTION)
			continue;
		if (found >= 0)
			return -1;
		found = (int)i;
	}
	return found;
}

static int first_of(int a, int b, int c)
{
	return a >= 0 ? a : b >= 0 ? b : c;
}

static int any_range(const struct pts_trace_config *cfg, unsigned kind)
{
	for (unsigned n = 0; n < 4; n++)
		if (((cfg->ctl >> PTS_CTL_ADDR_CFG_SHIFT(n)) & 0xf) == kind)
			return 1;
	return 0;
}

/* Whether @ip is inside one of the configured filter ranges (with the
 * ranges known). */
static int in_filter_range(const struct pts_trace_config *cfg, uint64_t ip)
{
	if (!(cfg->known & PTS_CFG_ADDR))
		return 0;
	for (unsigned n = 0; n < 4; n++)
		if (((cfg->ctl >> PTS_CTL_ADDR_CFG_SHIFT(n)) & 0xf) ==
			    PTS_ADDR_FILTER &&
		    ip >= cfg->addr_a[n] && ip <= cfg->addr_b[n])
			return 1;
	return 0;
}

/* Whether the event an AEX delivers may go where tracing does not see
 * it: its handler runs in ring 0, so not while the kernel is traced with
 * no CR3 or IP filter (OS=1): then the delivery is FUP(AEP) + TIP(handler)
 * and a FUP(AEP) + TIP.PGD() right after the AEX is the ERESUME (digest
 * 4.7, item 4). Without the configuration, either may be. */
static int delivery_untraced(const struct pts_win_model *m)
{
	const struct pts_trace_config *cfg = &m->cfg;

	return !(cfg->known & PTS_CFG_CTL) || !(cfg->ctl & PTS_CTL_OS) ||
	       (cfg->ctl & PTS_CTL_CR3FILTER) ||
	       any_range(cfg, PTS_ADDR_FILTER);
}

/* Digest 4.3 ("What follows an AEX"): after the AEX lands on the AEP the
 * event that caused it is delivered there like any interrupt; into an
 * untraced ring that is FUP(AEP) + TIP.PGD(), before any instruction runs,
 * and the handler's IRET comes back to the AEP: TIP.PGE(AEP). That gap is
 * the event, not an ERESUME (which only comes after the handler returned).
 * A trace may also show no packets for the delivery (the TIP.PGE(AEP) is
 * then the IRET's and the FUP(AEP) the ERESUME): that gap ends at an EEXIT
 * target, or at the AEP again after a second AEX, which this rule cannot
 * tell from the delivery (UNCONFIRMED which one hardware writes). */
static int is_aex_event(const struct pts_win_model *m,
			const struct pts_win_record *rec, int after_aex,
			uint64_t x)
{
	return after_aex && delivery_untraced(m) && x == m->aex_ip &&
	       closed_at_ip(rec) &&
	       rec->end.ip == x && m->win.begin.has_ip &&
	       m->win.begin.ip == x && !m->win.tnt_bits && !m->win.tips;
}

/* Digest 4.4/4.7: an enclave gap is opened by FUP(ENCLU) + TIP.PGD() and
 * closed by TIP.PGE at the EEXIT target or the AEP. With packets only, the
 * map recognises the AEP (ERESUME opens there, AEX closes there) and
 * declared EEXIT targets; the SDK convention (EEXIT returns after the ENCLU,
 * whose address EENTER leaves in RCX) recognises the usual EEXIT. With the
 * code, checklist item 1 decides: the instruction at the FUP must be ENCLU,
 * and an ENCLU where tracing resumed is an AEP. Returns 1 when @rec was
 * classified as an enclave gap. */
static int try_enclave(struct pts_win_model *m, struct pts_win_record *rec,
		       int after_aex)
{
	const struct pts_win_gap *g = &m->gap;
	uint64_t x = g->fup_ip, y = rec->end.ip;
	int closed = closed_at_ip(rec);
	int ev_enclu = g->has_ev && g->ev_class == PTS_EV_INSN_ENCLU;
	int aep_x = pts_enclave_find_aep(m, x);
	int aep_y = closed ? pts_enclave_find_aep(m, y) : -1;
	int eexit_y = closed ? pts_enclave_find_eexit(m, y) : -1;
	int ret_site = closed && (y == x + PTS_ENCLU_SIZE ||
				  pts_enclave_is_entry_return(m, y));
	/* The ENCLU that entered before, entering again. */
	int known_site = pts_enclave_is_entry_return(m, x + PTS_ENCLU_SIZE);
	int learned_x = pts_enclave_is_learned_aep(m, x);
	/* Resuming at the ENCLU that stopped is an interrupt's shape too:
	 * only a known AEP may be left and landed on again. */
	int aep_code_y = closed && ((g->has_en_ev &&
				     g->en_class == PTS_EV_INSN_ENCLU) ||
				    pts_enclave_is_learned_aep(m, y)) &&
			 (y != x || learned_x);
	int by_map = aep_x >= 0 || aep_y >= 0 || eexit_y >= 0;
	int shaped = by_map || (m->has_production && (ret_site || known_site));

	if (is_aex_event(m, rec, after_aex, x))
		return 0;
	/* Back at the IP where it stopped: an interrupt's IRET (even at an
	 * ENCLU, before it ran, or at an EEXIT target). An enclave is left
	 * at its EEXIT target or the AEP, neither the ENCLU that entered it
	 * (the FUP's IP) unless that is the AEP (ERESUME, then AEX). */
	if (closed && y == x && aep_x < 0 && !learned_x)
		return 0;
	if (g->has_ev && !ev_enclu) {
		if (shaped)
			pts_win_violation(m, PTS_RULE_ENTRY_NOT_ENCLU,
					  rec->begin.offset, 1, x,
					  "gap shaped like an enclave call, but "
					  "the instruction at 0x%llx is not "
					  "ENCLU",
					  (unsigned long long)x);
		return 0;
	}
	/* An ENCLU alone is not an entry (tracing may stop before any
	 * instruction): the map, an enclave declared, or an exit where the
	 * SDKs put them must agree. */
	if (ev_enclu ? !(shaped || m->has_production || ret_site ||
			 known_site || learned_x || aep_code_y)
		     : !shaped)
		return 0;
	set_cause(rec, PTS_GAP_ENCLAVE,
		  ev_enclu ? PTS_BASIS_EVIDENCE
			   : by_map ? PTS_BASIS_MAP : PTS_BASIS_PATTERN);
	rec->entry = aep_x >= 0 || learned_x ? PTS_ENCL_ERESUME
					      : PTS_ENCL_EENTER;
	rec->enclave = (int16_t)first_of(aep_x, aep_y,
					 first_of(eexit_y, only_production(m),
						  -1));
	if (rec->entry == PTS_ENCL_EENTER)
		pts_enclave_note_entry(m, x);
	if (aep_y < 0 && aep_code_y)
		pts_enclave_note_aep(m, y);
	if (!closed)
		rec->exit = PTS_ENCL_NONE;
	else if (aep_y >= 0 || aep_code_y)
		rec->exit = PTS_ENCL_AEX;
	else if (eexit_y >= 0 || ret_site)
		rec->exit = PTS_ENCL_EEXIT;
	else
		rec->exit = PTS_ENCL_UNKNOWN;
	/* After an overflow inside, the IP that ends the gap is where
	 * tracing resumed, maybe well after the exit: no check then. */
	if (rec->exit == PTS_ENCL_UNKNOWN && !g->ovfs &&
	    rec->end.edge != PTS_EDGE_OVF_FUP)
		pts_win_violation(m, PTS_RULE_ENCLAVE_EXIT_UNEXPECTED,
				  rec->end.offset, 1, y,
				  "enclave gap closed at 0x%llx: neither the AEP "
				  "nor a known EEXIT target",
				  (unsigned long long)y);
	/* Digest 4.4 fact 2: nothing but timing inside (ContextEn = 0). */
	if (g->has_flow)
		pts_win_violation(m, PTS_RULE_FLOW_IN_ENCLAVE_GAP,
				  g->flow_offset, 0, 0,
				  "%s inside a production-enclave gap",
				  pts_pkt_kind_name(g->flow_kind));
	/* Digest 4.7 item 5: entries and exits may have been lost. */
	if (g->ovfs)
		pts_win_violation(m, PTS_RULE_OVF_IN_ENCLAVE_GAP,
				  rec->begin.offset, 0, 0,
				  "%u overflow(s) inside the enclave gap: "
				  "entries, exits and AEXs may be lost",
				  (unsigned)g->ovfs);
	return 1;
}

/* Narrowing by the flow decoder's evidence: the instruction that disabled. */
static uint32_t evidence_mask(uint8_t insn_class)
{
	switch (insn_class) {
	case PTS_EV_INSN_SYSCALL:
	case PTS_EV_INSN_RET_USER:
		return CAUSE_BIT(PTS_GAP_CPL);
	case PTS_EV_INSN_MOV_CR3:
		return CAUSE_BIT(PTS_GAP_CR3);
	case PTS_EV_INSN_WRMSR:
		return CAUSE_BIT(PTS_GAP_DISABLED);
	case PTS_EV_INSN_COND_BRANCH:
	case PTS_EV_INSN_NEAR_BRANCH:
		return CAUSE_BIT(PTS_GAP_IP_FILTER);
	default: /* an interrupted instruction or an ordinary branch */
		return CAUSE_BIT(PTS_GAP_CPL) | CAUSE_BIT(PTS_GAP_DISABLED) |
		       CAUSE_BIT(PTS_GAP_IP_FILTER) | CAUSE_BIT(PTS_GAP_CR3);
	}
}

static uint32_t candidates(const struct pts_win_model *m,
			   const struct pts_win_record *rec)
{
	const struct pts_win_gap *g = &m->gap;
	const struct pts_trace_config *cfg = &m->cfg;
	int known = (cfg->known & PTS_CFG_CTL) != 0;
	int os = known && (cfg->ctl & PTS_CTL_OS);
	int user = known && (cfg->ctl & PTS_CTL_USER);
	int cr3f = known && (cfg->ctl & PTS_CTL_CR3FILTER);
	uint32_t mask = 0;

	if (!g->has_fup) {
		if (!known)
			mask = CAUSE_BIT(PTS_GAP_CPL) | CAUSE_BIT(PTS_GAP_CR3) |
			       CAUSE_BIT(PTS_GAP_IP_FILTER);
		if (known && (!os || !user))
			mask |= CAUSE_BIT(PTS_GAP_CPL);
		if (cr3f)
			mask |= CAUSE_BIT(PTS_GAP_CR3);
		if (known && any_range(cfg, PTS_ADDR_FILTER))
			mask |= CAUSE_BIT(PTS_GAP_IP_FILTER);
	} else {
		if (!known)
			mask = CAUSE_BIT(PTS_GAP_CPL) |
			       CAUSE_BIT(PTS_GAP_DISABLED);
		/* Interrupts and exceptions go to ring 0; only a user-only
		 * trace loses sight there. WRMSR runs in ring 0. */
		if (known && !os && user)
			mask |= CAUSE_BIT(PTS_GAP_CPL);
		if (os)
			mask |= CAUSE_BIT(PTS_GAP_DISABLED);
		/* Shaped like an EEXIT (resumed after the instruction that
		 * stopped) while no map declares enclaves: only the code at
		 * the FUP can tell an ENCLU from an exception. */
		if (!m->has_production && closed_at_ip(rec) &&
		    rec->end.ip == g->fup_ip + PTS_ENCLU_SIZE)
			mask |= CAUSE_BIT(PTS_GAP_ENCLAVE);
		/* With enclaves declared, a gap whose end is not seen (end of
		 * trace, lost bytes) may be an entry at an ENCLU not yet met. */
		if (m->has_production && !closed_at_ip(rec))
			mask |= CAUSE_BIT(PTS_GAP_ENCLAVE);
	}
	/* SDM 36.2.4.2: ContextEn drops when CR3 differs from CR3_MATCH; the
	 * last PIP before the disable says which CR3 was loaded. */
	if (cr3f && g->has_pip && (cfg->known & PTS_CFG_CR3)) {
		if ((g->pip_cr3 >> 5) != (cfg->cr3_match >> 5))
			mask = CAUSE_BIT(PTS_GAP_CR3);
		else
			mask &= ~CAUSE_BIT(PTS_GAP_CR3);
	}
	/* The code at a FUP is where an asynchronous event struck, before
	 * that instruction ran: it only tells an ENCLU (handled before) from
	 * anything else. The branch a bare TIP.PGD binds to tells more. */
	if (g->has_ev && g->has_fup)
		mask &= ~CAUSE_BIT(PTS_GAP_ENCLAVE);
	else if (g->has_ev)
		mask = known ? mask & evidence_mask(g->ev_class)
			     : evidence_mask(g->ev_class);
	return mask;
}

/* Appends @s to @out (length *@len, NUL kept within @cap). */
static void append(char *out, size_t *len, size_t cap, const char *s)
{
	size_t n = strlen(s);

	if (*len + n >= cap)
		n = cap - 1 - *len;
	memcpy(out + *len, s, n);
	*len += n;
	out[*len] = '\0';
}

/* "one of: cpl disabled ...". Built by hand, not with snprintf: a trace
 * may have a needs-images gap every few dozen packets. */
static void list_causes(char *out, size_t cap, uint32_t mask)
{
	size_t len = 0;

	out[0] = '\0';
	append(out, &len, cap, "one of:");
	for (int c = 0; c < PTS_GAP_CAUSE_COUNT; c++)
		if (mask & CAUSE_BIT(c)) {
			append(out, &len, cap, " ");
			append(out, &len, cap, pts_gap_cause_name(c));
		}
}

/* How many causes @mask holds; *@last gets the highest (unchanged when
 * none). With more than one the gap needs images, which @rec then says
 * with the list. */
static int settle_candidates(struct pts_win_record *rec, uint32_t mask,
			     int *last)
{
	int n = 0;

	for (int c = 0; c < PTS_GAP_CAUSE_COUNT; c++)
		if (mask & CAUSE_BIT(c)) {
			n++;
			*last = c;
		}
	if (n > 1) {
		set_cause(rec, PTS_GAP_NEEDS_IMAGES, PTS_BASIS_NONE);
		rec->candidates = mask;
		list_causes(rec->detail, sizeof(rec->detail), mask);
	}
	return n;
}

static void unexplained(struct pts_win_model *m, struct pts_win_record *rec,
			const char *why)
{
	set_cause(rec, PTS_GAP_UNKNOWN, PTS_BASIS_NONE);
	snprintf(rec->detail, sizeof(rec->detail), "%s", why);
	pts_win_violation(m, PTS_RULE_UNEXPLAINED_GAP, rec->begin.offset,
			  rec->begin.has_ip, rec->begin.ip, "%s", why);
}

static void classify_disable(struct pts_win_model *m,
			     struct pts_win_record *rec, int after_aex)
{
	const struct pts_win_gap *g = &m->gap;
	uint32_t mask;
	int n = 0, last = 0;

	if (g->has_pgd_ip) {
		if ((m->cfg.known & PTS_CFG_CTL) &&
		    !any_range(&m->cfg, PTS_ADDR_FILTER))
			unexplained(m, rec, "tip.pgd with an IP (FilterEn "
					    "dropped) but no filter range is "
					    "configured");
		else if (in_filter_range(&m->cfg, g->pgd_ip))
			/* FilterEn is 1 inside a range (digest 3.4) */
			unexplained(m, rec, "tip.pgd with an IP inside a "
					    "filter range: FilterEn did not "
					    "drop there");
		else
			set_cause(rec, PTS_GAP_IP_FILTER, PTS_BASIS_PACKETS);
		return;
	}
	if (g->has_fup && try_enclave(m, rec, after_aex))
		return;
	mask = candidates(m, rec);
	n = settle_candidates(rec, mask, &last);
	if (n == 0) {
		unexplained(m, rec, g->has_fup
					    ? "fup+tip.pgd(): no configured "
					      "filter, ring or switch-off "
					      "explains it"
					    : "tip.pgd(): no configured CPL, "
					      "CR3 or IP filter explains it");
		return;
	}
	if (n > 1)
		return;
	set_cause(rec, last,
		  g->has_ev ? PTS_BASIS_EVIDENCE
			    : (m->cfg.known & PTS_CFG_CTL) ? PTS_BASIS_CONFIG
							   : PTS_BASIS_PACKETS);
}

/* The gap before the first window: the trace's first packets (PSB+, and
 * TSC, CBR, PIP...) need TriggerEn (digest 3.6), so ContextEn, FilterEn
 * or BranchEn held PacketEn at 0, as for a TIP.PGD without FUP: the causes
 * the configuration allows (a user-only trace begun in ring 0: cpl). With
 * none of them (everything traced), tracing was switched on right there:
 * TraceEn. A gap closed at an AEP or EEXIT target of the map is an
 * enclave the trace began in. */
static void classify_start(struct pts_win_model *m,
			   struct pts_win_record *rec)
{
	const int closed = closed_at_ip(rec);
	const int aep = closed ? pts_enclave_find_aep(m, rec->end.ip) : -1;
	const int eexit = closed ? pts_enclave_find_eexit(m, rec->end.ip) : -1;
	uint32_t mask = candidates(m, rec);
	int n, last = PTS_GAP_DISABLED;

	if (m->has_production && (aep >= 0 || eexit >= 0))
		mask = CAUSE_BIT(PTS_GAP_ENCLAVE);
	else if (!(m->cfg.known & PTS_CFG_CTL))
		mask |= CAUSE_BIT(PTS_GAP_DISABLED);
	n = settle_candidates(rec, mask, &last);
	if (n > 1)
		return;
	set_cause(rec, last,
		  last == PTS_GAP_ENCLAVE ? PTS_BASIS_MAP
		  : n		      ? PTS_BASIS_CONFIG
					      : PTS_BASIS_PACKETS);
	if (last != PTS_GAP_ENCLAVE)
		return;
	rec->entry = PTS_ENCL_NONE;
	rec->enclave = (int16_t)first_of(aep, eexit, only_production(m));
	rec->exit = aep >= 0 ? PTS_ENCL_AEX : PTS_ENCL_EEXIT;
}

void pts_win_classify(struct pts_win_model *m, struct pts_win_record *rec)
{
	const struct pts_win_gap *g = &m->gap;
	uint8_t open = rec->begin.edge;
	int after_aex = m->after_aex;

	m->after_aex = 0;
	if (g->lost_cause != 0xff)
		set_cause(rec, g->lost_cause, PTS_BASIS_PACKETS);
	else if (open == PTS_EDGE_OVF)
		set_cause(rec, PTS_GAP_OVERFLOW, PTS_BASIS_PACKETS);
	else if (g->stop)
		set_cause(rec, PTS_GAP_TRACESTOP, PTS_BASIS_PACKETS);
	else if (open == PTS_EDGE_START)
		classify_start(m, rec);
	else if (open == PTS_EDGE_PSB_NOFUP)
		unexplained(m, rec, "psb+ without fup while tracing was on: "
				    "no tip.pgd ended the window");
	else
		classify_disable(m, rec, after_aex);
	if (rec->cause == PTS_GAP_ENCLAVE && rec->exit == PTS_ENCL_AEX) {
		m->after_aex = 1;
		m->aex_ip = rec->end.ip;
	}
	/* TNT and TIP need PacketEn: seen inside any other gap, a TIP.PGE
	 * went missing (enclave gaps report them under their own rule). */
	if (rec->cause != PTS_GAP_ENCLAVE && g->has_flow &&
	    (g->flow_kind == PTS_PKT_TNT8 || g->flow_kind == PTS_PKT_TNT64 ||
	     g->flow_kind == PTS_PKT_TIP))
		pts_win_violation(m, PTS_RULE_UNBALANCED, g->flow_offset, 0, 0,
				  "%s while tracing is off",
				  pts_pkt_kind_name(g->flow_kind));
	if (rec->cause == PTS_GAP_ENCLAVE && !rec->detail[0] &&
	    rec->enclave >= 0 && m->enclaves[rec->enclave].name[0])
		snprintf(rec->detail, sizeof(rec->detail), "%s",
			 m->enclaves[rec->enclave].name);
}
