/* The flow walker's errata workarounds (--cpu), on hand-made traces over
 * hand-made code:
 *   - SKL014: a TIP.PGD without IP binds to a direct JMP whose target is
 *     outside the IP filter range (Skylake), not without the erratum;
 *   - BDM70: a PSB+ FUP right before a TIP.PGE does not enable tracing
 *     (Broadwell), while without the erratum it does (and the TIP.PGE is
 *     then a mismatch);
 *   - SKD022: FUP + TIP.PGD at a VMLAUNCH/VMRESUME is a synchronous
 *     disable after it (Skylake), an async one before it without;
 *   - APL12: OVF + FUP + TIP.PGE resolves the overflow with tracing off
 *     (Apollo Lake), at the FUP without (where the TIP.PGE is a mismatch);
 *   - APL11: OVF + TIP.PGD resolves the overflow with tracing off and
 *     swallows the TIP.PGD (Apollo Lake, Goldmont Plus), an error without;
 * and the cases where each erratum does not apply; then three binding
 * rules of libipt's that damaged traces showed (tests/diff/
 * diff_flow_damage.c):
 *   - TIP deferral: with no TNT bit pending, one TNT packet may come
 *     before the TIP of an indirect branch (its bits are for later
 *     branches);
 *   - MODE.Exec (and PIP, VMCS) bind only to a far transfer: before the
 *     TIP of a near RET it is an error;
 *   - a trace that ends right after a PSB+ with a FUP ends there, with no
 *     instruction walked;
 *   - TraceStop while tracing is on is an error (it follows a TIP.PGD);
 *   - a PSBEND outside PSB+ means nothing; a PSB inside PSB+ is an error;
 *     an OVF ends PSB+ (the PSBEND after it is outside);
 *   - a trace that ends right after a TIP.PGE ends there;
 *   - while tracing, a PSB+ MODE.Exec must restate the current mode;
 *   - a FUP with no TIP or TIP.PGD after it is an error, unless the
 *     trace ends after it (the walk ends at its IP) or an OVF or a
 *     packet cut by the end follows (the walk gets to its IP, then the
 *     overflow or the cut);
 *   - a packet cut by the end inside PSB+ or while tracing is off is
 *     reported as cut data;
 *   - a PSB+ met while walking: the walk must get to its FUP's IP before
 *     it takes another packet (a TIP.PGD does not bind to a direct branch
 *     on the way, an OVF right after the PSB+ comes at that IP);
 *   - a TIP.PGD right after MODE.TSX and its FUP binds to that FUP only
 *     for an abort;
 *   - a TIP.PGE where tracing stopped is a resume, but not after an
 *     overflow;
 *   - a CALL where tracing stops (TIP.PGD) pushes no return address;
 *   - an OVF empties the return stack (libipt 2.0.5 keeps it).
 * With libipt, each trace is also decoded by libipt 2.0.5's pt_insn with
 * the same CPU: the flows must agree (instructions, enabled/disabled/
 * overflow events, errors).
 * Code: 0x1000 jmp 0x2000; 0x2000 nop; 0x2001 ret;
 *       0x3000 nop; 0x3001 vmlaunch; 0x3004 vmresume;
 *       0x4000 jmp rax; 0x4002 je 0x4004; 0x4004 jmp rax;
 *       0x5000 syscall;
 *       0x6000 call rax; 0x6002 call 0x6010; 0x6007 ret; 0x6010 ret.
 */
#include "check.h"
#include "hand_flow.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const uint8_t code1[] = {0xe9, 0xfb, 0x0f, 0x00, 0x00};
static const uint8_t code2[] = {0x90, 0xc3};
static const uint8_t code3[] = {0x90, 0x0f, 0x01, 0xc2, 0x0f, 0x01, 0xc3};
static const uint8_t code4[] = {0xff, 0xe0, 0x74, 0x00, 0xff, 0xe0};
static const uint8_t code5[] = {0x0f, 0x05};
static const uint8_t code6[] = {0xff, 0xd0, 0xe8, 0x09, 0x00, 0x00, 0x00,
				0xc3, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
				0x90, 0x90, 0xc3};
static const struct hand_section sections[] = {
	{code1, sizeof(code1), 0x1000},
	{code2, sizeof(code2), 0x2000},
	{code3, sizeof(code3), 0x3000},
	{code4, sizeof(code4), 0x4000},
	{code5, sizeof(code5), 0x5000},
	{code6, sizeof(code6), 0x6000},
};
static const struct hand_code code = {
	sections, sizeof(sections) / sizeof(sections[0])};

static void mode64(struct hand_trace *t)
{
	ht_mode(t, 1, 0);
}

/* The flow as text: "E1000" enabled ("M1000" where it was disabled:
 * resumed), "D" disabled (with the TIP.PGD's IP
 * when it has one), "A" async disabled, "O" overflow (with the IP it
 * resolved at when tracing is on), "R" error, "C" the trace cut inside a
 * packet, instruction addresses. */
static void decode(const struct hand_trace *t, const struct pts_flow_config *fc,
		   char *out, size_t cap)
{
	struct pts_image *img = hf_image(&code);
	struct pts_flow *f = pts_flow_new(fc, img);
	struct pts_input in = {t->buf, t->len, 0};
	struct pts_flow_rec recs[16];
	size_t len = 0;
	uint64_t errors = 0, cuts = 0, skipped = 0;
	int n;
	out[0] = 0;
	pts_flow_end(f);
	while ((n = pts_flow_next(f, &in, recs, 16)) > 0) {
		for (int i = 0; i < n; i++) {
			const struct pts_flow_rec *r = &recs[i];
			unsigned long long ip = r->ip;
			bool noip = r->flags & PTS_EV_F_IP_SUPPRESSED;
			if (r->kind == PTS_FLOW_INSNS) {
				for (uint32_t k = 0; k < r->n; k++)
					len += (size_t)snprintf(
						out + len, cap - len, "%llx ",
						(unsigned long long)r->ips[k]);
			} else if (r->kind == PTS_FLOW_SKIP) {
				/* the rest after an error: not in the string
				 * (the cases compare flows), counted */
				skipped += r->arg - r->offset;
			} else if (r->kind == PTS_FLOW_ERROR) {
				errors++;
				cuts += r->error == -PTS_ERR_TRUNCATED;
				len += (size_t)snprintf(
					out + len, cap - len, "%s ",
					r->error == -PTS_ERR_TRUNCATED ? "C"
								       : "R");
			} else if (r->type == PTS_EV_ENABLED) {
				len += (size_t)snprintf(
					out + len, cap - len, "%s%llx ",
					r->flags & PTS_EV_F_RESUMED ? "M" : "E",
					ip);
			} else if (r->type == PTS_EV_DISABLED && noip) {
				len += (size_t)snprintf(out + len, cap - len,
							"D ");
			} else if (r->type == PTS_EV_DISABLED) {
				len += (size_t)snprintf(out + len, cap - len,
							"D%llx ", ip);
			} else if (r->type == PTS_EV_ASYNC_DISABLED) {
				len += (size_t)snprintf(out + len, cap - len,
							"A ");
			} else if (r->type == PTS_EV_OVERFLOW && noip) {
				len += (size_t)snprintf(out + len, cap - len,
							"O ");
			} else if (r->type == PTS_EV_OVERFLOW) {
				len += (size_t)snprintf(out + len, cap - len,
							"O%llx ", ip);
			}
		}
	}
	/* The counters say the same: a cut is counted apart too (what a
	 * ToPA STOP leaves is truncation, not an error, to the CLI). */
	struct pts_flow_stats st;
	pts_flow_get_stats(f, &st);
	CHECK_EQ(st.errors, errors);
	CHECK_EQ(st.truncated, cuts);
	CHECK_EQ(st.skipped, skipped);
	pts_flow_free(f);
	pts_image_free(img);
}

/* Decodes @t with @fc: the flow must be @want, and libipt (when there)
 * must agree unless @libipt_same is false (a documented difference). */
static void expect(const char *label, const struct hand_trace *t,
		   const struct pts_flow_config *fc, const char *want,
		   bool libipt_same)
{
	char flow[512];
	decode(t, fc, flow, sizeof(flow));
	hf_expect(label, flow, want, &code, t, fc, false, libipt_same);
}

/* The start of every trace: PSB+, then tracing on at @ip. */
static void start(struct hand_trace *t, uint64_t ip)
{
	ht_psb(t);
	ht_put_kind(t, PTS_PKT_PSBEND);
	mode64(t);
	ht_put_ip(t, PTS_PKT_TIP_PGE, ip);
}

/* A PSB+ after the last TIP.PGD: tracing stays off. libipt's flow (as
 * ptxed's) drops the last [disabled] when the trace ends right after it. */
static void finish(struct hand_trace *t)
{
	ht_psb(t);
	ht_put_kind(t, PTS_PKT_PSBEND);
}

/* An EXSTOP with its IP bit: a FUP is to follow. */
static void exstop_ip(struct hand_trace *t)
{
	struct pts_packet p = {.kind = PTS_PKT_EXSTOP, .u.exstop = {.ip = 1}};
	ht_put(t, &p);
}

/* Ends @t with a TIP.PGD at 0x1000 (most cases walk to the RET at
 * 0x2001 it binds to) and a PSB+, then decodes it as expect() does,
 * with no configuration. */
static void disable_and_expect(struct hand_trace *t, const char *label,
			       const char *want, bool libipt_same)
{
	static const struct pts_flow_config none;
	ht_put_ip(t, PTS_PKT_TIP_PGD, 0x1000);
	finish(t);
	expect(label, t, &none, want, libipt_same);
}

/* Ends a first PSB+ (its PSBEND), then a TIP, which fails when that
 * PSB+ left tracing off; the PSB+ after it syncs at 0x4000, whose
 * instruction a TIP.PGD then disables. */
static void resync_after_tip(struct hand_trace *t)
{
	ht_put_kind(t, PTS_PKT_PSBEND);
	ht_put_ip(t, PTS_PKT_TIP, 0x1000);
	ht_psb(t);
	mode64(t);
	ht_put_ip(t, PTS_PKT_FUP, 0x4000);
	ht_put_kind(t, PTS_PKT_PSBEND);
	ht_put_ip(t, PTS_PKT_TIP_PGD, 0x1000);
	finish(t);
}

/* Timing packets, which the overflow errata skip. */
static void timing(struct hand_trace *t)
{
	struct pts_packet p;
	memset(&p, 0, sizeof(p));
	p.kind = PTS_PKT_TSC;
	p.u.tsc = 0x123456;
	ht_put(t, &p);
	memset(&p, 0, sizeof(p));
	p.kind = PTS_PKT_CBR;
	p.u.cbr.ratio = 20;
	ht_put(t, &p);
	ht_put_kind(t, PTS_PKT_PAD);
}

static void skl014(void)
{
	struct hand_trace t = {0};
	start(&t, 0x1000);
	ht_put_ip(&t, PTS_PKT_TIP_PGD, 0);
	finish(&t);

	struct pts_flow_config fc = {0};
	fc.addr_cfg[0] = 1;
	fc.addr_a[0] = 0x1000;
	fc.addr_b[0] = 0x1fff;
	/* No erratum: the JMP needs no trace, the RET takes the TIP.PGD.
	 * libipt binds a TIP.PGD without IP only to far branches and CPL or
	 * CR3 changes (pt_insn_at_disabled_event) and SKL014's JMP; at the
	 * RET its flow shows no [disabled]: a known difference, not one of
	 * the errata. */
	expect("skl014 off", &t, &fc, "E1000 1000 2000 2001 D ", false);
	CHECK(pts_cpu_parse("6/94", &fc.cpu) == 0); /* Skylake */
	expect("skl014 on", &t, &fc, "E1000 1000 D ", true);
	/* Without filter ranges the erratum is not applied (libipt). */
	memset(fc.addr_cfg, 0, sizeof(fc.addr_cfg));
	expect("skl014 no filter", &t, &fc, "E1000 1000 2000 2001 D ",
	       false);
}

static void bdm70(void)
{
	struct hand_trace t = {0};
	ht_psb(&t);
	mode64(&t);
	ht_put_ip(&t, PTS_PKT_FUP, 0x1000);
	ht_put_kind(&t, PTS_PKT_PSBEND);
	ht_put_ip(&t, PTS_PKT_TIP_PGE, 0x2000);
	ht_put_ip(&t, PTS_PKT_TIP_PGD, 0x5000);
	finish(&t);

	struct pts_flow_config fc = {0};
	/* No erratum: the FUP enables at 0x1000, where the TIP.PGE is a
	 * mismatch. */
	expect("bdm70 off", &t, &fc, "E1000 R ", true);
	CHECK(pts_cpu_parse("6/61", &fc.cpu) == 0); /* Broadwell */
	expect("bdm70 on", &t, &fc, "E2000 2000 2001 D5000 ", true);
}

/* SKD022: tracing on at @pge, then FUP at @at + TIP.PGD @pgd. */
static void skd022_trace(struct hand_trace *t, uint64_t pge, uint64_t at,
			 uint64_t pgd)
{
	memset(t, 0, sizeof(*t));
	start(t, pge);
	ht_put_ip(t, PTS_PKT_FUP, at);
	ht_put_ip(t, PTS_PKT_TIP_PGD, pgd);
	finish(t);
}

static void skd022(void)
{
	struct hand_trace t;
	struct pts_flow_config off = {0}, on = {0};
	CHECK(pts_cpu_parse("6/94", &on.cpu) == 0); /* Skylake */

	/* At VMLAUNCH: async before it without the erratum; with it, the
	 * VMLAUNCH executes and tracing stops after it (the TIP.PGD's IP). */
	skd022_trace(&t, 0x3000, 0x3001, 0x7000);
	expect("skd022 vmlaunch off", &t, &off, "E3000 3000 A ", true);
	expect("skd022 vmlaunch on", &t, &on, "E3000 3000 3001 D7000 ", true);
	/* VMRESUME, with the TIP.PGD's IP suppressed. */
	skd022_trace(&t, 0x3004, 0x3004, 0);
	expect("skd022 vmresume off", &t, &off, "E3004 A ", true);
	expect("skd022 vmresume on", &t, &on, "E3004 3004 D ", true);
	/* Does not apply: the FUP is at another instruction (NOP). */
	skd022_trace(&t, 0x3000, 0x3000, 0x7000);
	expect("skd022 nop on", &t, &on, "E3000 A ", true);
	/* Nor on a CPU without the erratum (Apollo Lake). */
	CHECK(pts_cpu_parse("6/92", &on.cpu) == 0);
	skd022_trace(&t, 0x3000, 0x3001, 0x7000);
	expect("skd022 apl", &t, &on, "E3000 3000 A ", true);
}

static void apl12(void)
{
	struct hand_trace t = {0};
	struct pts_flow_config off = {0}, on = {0}, adl = {0};
	CHECK(pts_cpu_parse("6/92", &on.cpu) == 0);   /* Apollo Lake */
	CHECK(pts_cpu_parse("6/0x97", &adl.cpu) == 0); /* APL11 only */

	/* OVF, timing, FUP, timing, TIP.PGE: the FUP is spurious, tracing
	 * was off; it starts again at the TIP.PGE. */
	start(&t, 0x2000);
	ht_put_kind(&t, PTS_PKT_OVF);
	timing(&t);
	ht_put_ip(&t, PTS_PKT_FUP, 0x1000);
	timing(&t);
	ht_put_ip(&t, PTS_PKT_TIP_PGE, 0x2000);
	ht_put_ip(&t, PTS_PKT_TIP_PGD, 0x5000);
	finish(&t);
	/* Without: resolved at the FUP, where the TIP.PGE is a mismatch. */
	expect("apl12 off", &t, &off, "E2000 O1000 R ", true);
	expect("apl12 adl", &t, &adl, "E2000 O1000 R ", true);
	expect("apl12 on", &t, &on, "E2000 O E2000 2000 2001 D5000 ", true);

	/* A PSB+ without FUP after the FUP: tracing is off, it applies. */
	memset(&t, 0, sizeof(t));
	start(&t, 0x2000);
	ht_put_kind(&t, PTS_PKT_OVF);
	ht_put_ip(&t, PTS_PKT_FUP, 0x1000);
	ht_psb(&t);
	mode64(&t);
	ht_put_kind(&t, PTS_PKT_PSBEND);
	ht_put_ip(&t, PTS_PKT_TIP_PGE, 0x2000);
	ht_put_ip(&t, PTS_PKT_TIP_PGD, 0x5000);
	finish(&t);
	expect("apl12 psb on", &t, &on, "E2000 O E2000 2000 2001 D5000 ", true);

	/* Does not apply: a TIP.PGD after the FUP says tracing was on. */
	memset(&t, 0, sizeof(t));
	start(&t, 0x1000);
	ht_put_kind(&t, PTS_PKT_OVF);
	ht_put_ip(&t, PTS_PKT_FUP, 0x2000);
	ht_put_ip(&t, PTS_PKT_TIP_PGD, 0x5000);
	finish(&t);
	expect("apl12 pgd off", &t, &off, "E1000 O2000 2000 2001 D5000 ", true);
	expect("apl12 pgd on", &t, &on, "E1000 O2000 2000 2001 D5000 ", true);

	/* Nor when a PSB+ with a FUP follows. */
	memset(&t, 0, sizeof(t));
	start(&t, 0x1000);
	ht_put_kind(&t, PTS_PKT_OVF);
	ht_put_ip(&t, PTS_PKT_FUP, 0x2000);
	ht_psb(&t);
	mode64(&t);
	ht_put_ip(&t, PTS_PKT_FUP, 0x2000);
	ht_put_kind(&t, PTS_PKT_PSBEND);
	ht_put_ip(&t, PTS_PKT_TIP_PGD, 0x5000);
	finish(&t);
	expect("apl12 psb fup on", &t, &on, "E1000 O2000 2000 2001 D5000 ",
	       true);

	/* Nor when the trace ends: can't tell, taken as on. */
	memset(&t, 0, sizeof(t));
	start(&t, 0x1000);
	ht_put_kind(&t, PTS_PKT_OVF);
	ht_put_ip(&t, PTS_PKT_FUP, 0x2000);
	expect("apl12 end on", &t, &on, "E1000 O2000 ", true);
}

static void apl11(void)
{
	struct hand_trace t = {0};
	struct pts_flow_config off = {0}, on = {0}, glp = {0};
	CHECK(pts_cpu_parse("6/92", &on.cpu) == 0);   /* Apollo Lake */
	CHECK(pts_cpu_parse("6/0x7a", &glp.cpu) == 0); /* Goldmont Plus */

	/* OVF, timing, TIP.PGD, TIP.PGE: the TIP.PGD is spurious. */
	start(&t, 0x2000);
	ht_put_kind(&t, PTS_PKT_OVF);
	timing(&t);
	ht_put_ip(&t, PTS_PKT_TIP_PGD, 0);
	timing(&t);
	ht_put_ip(&t, PTS_PKT_TIP_PGE, 0x1000);
	ht_put_ip(&t, PTS_PKT_TIP_PGD, 0x5000);
	finish(&t);
	/* Without: a TIP.PGD where the OVF's FUP belongs is an error; no
	 * PSB follows to resync at. */
	expect("apl11 off", &t, &off, "E2000 R ", true);
	expect("apl11 on", &t, &on, "E2000 O E1000 1000 2000 2001 D5000 ",
	       true);
	expect("apl11 glp", &t, &glp, "E2000 O E1000 1000 2000 2001 D5000 ",
	       true);

	/* Does not apply: a TIP (or TNT) after the OVF stays an error. */
	memset(&t, 0, sizeof(t));
	start(&t, 0x2000);
	ht_put_kind(&t, PTS_PKT_OVF);
	ht_put_ip(&t, PTS_PKT_TIP, 0x1000);
	expect("apl11 tip on", &t, &on, "E2000 R ", true);
	memset(&t, 0, sizeof(t));
	start(&t, 0x2000);
	ht_put_kind(&t, PTS_PKT_OVF);
	ht_tnt(&t, 1, 1);
	expect("apl11 tnt on", &t, &on, "E2000 R ", true);

	/* Nor when the overflow resolves off: MODE.Exec, TIP.PGE. */
	memset(&t, 0, sizeof(t));
	start(&t, 0x2000);
	ht_put_kind(&t, PTS_PKT_OVF);
	mode64(&t);
	ht_put_ip(&t, PTS_PKT_TIP_PGE, 0x1000);
	ht_put_ip(&t, PTS_PKT_TIP_PGD, 0x5000);
	finish(&t);
	expect("apl11 pge on", &t, &on, "E2000 O E1000 1000 2000 2001 D5000 ",
	       true);
}

/* Tracing on at 0x4000, the JMP's TIP to 0x1000, then a PSB+ with a PIP
 * and a FUP at @fup; then, with no @pgd, the RET's TIP, a bit for the JE, a
 * TIP.PGD; else only a TIP.PGD with IP @pgd. (libipt fails at the RET when
 * its FUP is elsewhere because of the PIP: the paging event waits for the
 * FUP's IP; without one, it goes on up to the next event.) */
static void walk_to_psb_fup(uint64_t fup, uint64_t pgd, const char *label,
			    const char *want)
{
	struct pts_flow_config none = {0};
	struct hand_trace t = {0};
	struct pts_packet pip;
	memset(&pip, 0, sizeof(pip));
	pip.kind = PTS_PKT_PIP;
	pip.u.pip.cr3 = 0x1000;
	start(&t, 0x4000);
	ht_put_ip(&t, PTS_PKT_TIP, 0x1000);
	ht_psb(&t);
	ht_put(&t, &pip);
	mode64(&t);
	ht_put_ip(&t, PTS_PKT_FUP, fup);
	ht_put_kind(&t, PTS_PKT_PSBEND);
	if (!pgd) {
		ht_put_ip(&t, PTS_PKT_TIP, 0x4002);
		ht_tnt(&t, 1, 1);
	}
	ht_put_ip(&t, PTS_PKT_TIP_PGD, pgd ? pgd : 0x4000);
	finish(&t);
	expect(label, &t, &none, want, true);
}

/* Tracing on at the JMP at 0x4000, where a transaction begins (@abort
 * 0) or aborts: MODE.TSX, FUP, then TIP.PGD with IP 0x4002 (after a TNT
 * with @tnt). */
static void tsx_then_pgd(bool abort, bool tnt, const char *label,
			 const char *want, bool libipt_same)
{
	struct pts_flow_config none = {0};
	struct hand_trace t = {0};
	struct pts_packet p;
	start(&t, 0x4000);
	memset(&p, 0, sizeof(p));
	p.kind = PTS_PKT_MODE_TSX;
	p.u.tsx.intx = !abort;
	p.u.tsx.abrt = abort;
	ht_put(&t, &p);
	ht_put_ip(&t, PTS_PKT_FUP, 0x4000);
	if (tnt)
		ht_tnt(&t, 1, 1);
	ht_put_ip(&t, PTS_PKT_TIP_PGD, 0x4002);
	finish(&t);
	expect(label, &t, &none, want, libipt_same);
}

/* An interrupt (FUP + TIP to 0x2000) at the instruction after an
 * indirect jump's target, the FUP right after the jump's TIP; with
 * @behind_tnt that TIP comes after a TNT bit (for the JE after the jump).
 * Both decoders take the pair there (checked while settling damage seed
 * 6310, where libipt had bound such a FUP to an earlier MWAIT). */
static void fup_right_after_tip(bool behind_tnt, const char *label,
				const char *want)
{
	struct hand_trace t = {0};
	start(&t, 0x4000);
	if (behind_tnt)
		ht_tnt(&t, 1, 1);
	ht_put_ip(&t, PTS_PKT_TIP, behind_tnt ? 0x4002 : 0x3000);
	ht_put_ip(&t, PTS_PKT_FUP, behind_tnt ? 0x4004 : 0x3001);
	ht_put_ip(&t, PTS_PKT_TIP, 0x2000);
	disable_and_expect(&t, label, want, true);
}

static void binding_rules(void)
{
	struct pts_flow_config none = {0};
	struct hand_trace t = {0};

	/* TNT (one taken bit) before the TIP of the JMP at 0x4000: the bit
	 * is for the JE after it. */
	start(&t, 0x4000);
	ht_tnt(&t, 1, 1);
	ht_put_ip(&t, PTS_PKT_TIP, 0x4002);
	ht_put_ip(&t, PTS_PKT_TIP_PGD, 0x4000);
	finish(&t);
	expect("tip deferral", &t, &none, "E4000 4000 4002 4004 D4000 ",
	       true);

	fup_right_after_tip(false, "fup right after a tip",
			    "E4000 4000 3000 2000 2001 D1000 ");
	fup_right_after_tip(true, "fup after a deferred tip",
			    "E4000 4000 4002 2000 2001 D1000 ");

	/* MODE.Exec before the TIP of the RET at 0x2001: both stop there,
	 * ptscope with the mismatch; libipt takes MODE.Exec and TIP as one
	 * exec-mode event, finds no TIP left for the RET and ends the trace
	 * (-pte_eos). */
	memset(&t, 0, sizeof(t));
	start(&t, 0x2000);
	mode64(&t);
	ht_put_ip(&t, PTS_PKT_TIP, 0x1000);
	finish(&t);
	expect("mode at near ret", &t, &none, "E2000 2000 2001 R ", false);

	/* MODE.TSX and its FUP, then a TIP.PGD: the abort's, bound to the
	 * FUP (SDM Table 36-15) ... */
	tsx_then_pgd(1, false, "tsx abort, pgd", "E4000 A ", true);
	/* ... but after a begin the walk goes on at the FUP's IP, and the
	 * TIP.PGD is the JMP's there (found by diff_flow_damage, seed 41). */
	tsx_then_pgd(0, false, "tsx begin, pgd", "E4000 4000 D4002 ", true);
	/* An abort without its TIP or TIP.PGD (a TNT in its place) does
	 * not fit: an error (ptscope used to walk on at the FUP's IP; found
	 * by diff_flow_damage, seed 599). libipt walks on and fails at the
	 * JMP after it. */
	tsx_then_pgd(1, true, "tsx abort, tnt", "E4000 R ", false);

	/* MODE.Exec, then a TNT before the TIP of the SYSCALL at 0x5000:
	 * the status packets of a far transfer come right before its TIP,
	 * so the TNT is out of place (ptscope used to take it as TIP
	 * deferral and walk on; found by diff_flow_damage, seeds 350 and
	 * 524, where a MODE.Exec took the place of a TIP). libipt fails
	 * there too (bad query, same offset), before it hands out the
	 * SYSCALL: its query decoder read the two packets ahead. */
	memset(&t, 0, sizeof(t));
	start(&t, 0x5000);
	mode64(&t);
	ht_tnt(&t, 1, 1);
	ht_put_ip(&t, PTS_PKT_TIP, 0x4002);
	disable_and_expect(&t, "mode, tnt at far tip", "E5000 5000 R ",
			   false);

	/* MODE.Exec, then the TIP.PGD without IP of the SYSCALL at 0x5000
	 * (into a ring not traced): the mode binds to the far transfer
	 * (SDM Table 36-15 puts MODE.Exec before TIP or TIP.PGD). libipt
	 * 2.0.5 fails at the TIP.PGE after (-pte_bad_context; found by
	 * diff_flow_damage seed 32). */
	memset(&t, 0, sizeof(t));
	start(&t, 0x5000);
	mode64(&t);
	ht_put_ip(&t, PTS_PKT_TIP_PGD, 0);
	ht_put_ip(&t, PTS_PKT_TIP_PGE, 0x2000);
	disable_and_expect(&t, "mode at syscall pgd",
			   "E5000 5000 D E2000 2000 2001 D1000 ", false);

	/* TraceStop while on: it comes after the TIP.PGD of a stop. */
	memset(&t, 0, sizeof(t));
	start(&t, 0x2000);
	ht_put_kind(&t, PTS_PKT_STOP);
	ht_put_ip(&t, PTS_PKT_TIP, 0x1000);
	finish(&t);
	expect("stop while on", &t, &none, "E2000 R ", true);

	/* A PSBEND outside PSB+ means nothing (libipt ignores it), here
	 * between the deferred TIP and the TNT before it. */
	memset(&t, 0, sizeof(t));
	start(&t, 0x4000);
	ht_tnt(&t, 1, 1);
	ht_put_kind(&t, PTS_PKT_PSBEND);
	ht_put_ip(&t, PTS_PKT_TIP, 0x4002);
	ht_put_ip(&t, PTS_PKT_TIP_PGD, 0x4000);
	finish(&t);
	expect("stray psbend", &t, &none, "E4000 4000 4002 4004 D4000 ",
	       true);

	/* Only status packets in PSB+: a second PSB is an error (libipt:
	 * bad context). ptscope then syncs at that PSB, whose PSB+ is
	 * whole; libipt's sync goes past it and finds no other. */
	memset(&t, 0, sizeof(t));
	ht_psb(&t);
	mode64(&t);
	ht_psb(&t);
	ht_put_ip(&t, PTS_PKT_FUP, 0x2000);
	ht_put_kind(&t, PTS_PKT_PSBEND);
	ht_put_ip(&t, PTS_PKT_TIP, 0x1000);
	expect("psb in psb+", &t, &none, "R E2000 2000 2001 ", false);

	/* Two MODE.Exec in one PSB+ that disagree: PSB+ restates the state
	 * once (SDM 36.3.7), so the mode to walk in is unknown; an error,
	 * and the next PSB+ syncs (libipt: bad status update once the FUP
	 * enabled tracing; found by diff_flow_damage, seeds 172, 207, 287
	 * and 313). The same two without a FUP are no error: tracing is off
	 * and the last one holds until a TIP.PGE. */
	memset(&t, 0, sizeof(t));
	ht_psb(&t);
	mode64(&t);
	ht_mode(&t, 0, 1);
	ht_put_ip(&t, PTS_PKT_FUP, 0x2000);
	resync_after_tip(&t);
	expect("two modes in psb+", &t, &none, "R E4000 4000 D1000 ", true);
	memset(&t, 0, sizeof(t));
	ht_psb(&t);
	mode64(&t);
	ht_mode(&t, 0, 1);
	ht_put_kind(&t, PTS_PKT_PSBEND);
	start(&t, 0x2000);
	disable_and_expect(&t, "two modes, tracing off",
			   "E2000 2000 2001 D1000 ", true);

	/* A FUP without IP after the FUP of a PSB+: the last one holds, and
	 * it says tracing is off, so the TIP after the PSB+ has nothing to
	 * bind to (libipt: expected tracing enabled event; ptscope used to
	 * skip the FUP and walk; found by diff_flow_damage, seed 198). */
	memset(&t, 0, sizeof(t));
	ht_psb(&t);
	mode64(&t);
	ht_put_ip(&t, PTS_PKT_FUP, 0x2000);
	{
		struct pts_packet fup = {.kind = PTS_PKT_FUP,
					 .ipc = PTS_IPC_SUPPRESSED};
		ht_put(&t, &fup);
	}
	resync_after_tip(&t);
	expect("fup without ip in psb+", &t, &none, "R E4000 4000 D1000 ", true);

	/* A MODE.Exec with CS.L = CS.D = 1 is reserved: no mode to decode
	 * the code in, an error rather than a guess (ptscope walked it as
	 * 64-bit code; libipt: unknown instruction; found by
	 * diff_flow_damage, seed 301). */
	memset(&t, 0, sizeof(t));
	ht_psb(&t);
	ht_put_kind(&t, PTS_PKT_PSBEND);
	ht_mode(&t, 1, 1);
	ht_put_ip(&t, PTS_PKT_TIP_PGE, 0x2000);
	disable_and_expect(&t, "reserved exec mode", "E2000 R ", true);

	/* An EXSTOP whose IP bit promises a FUP (SDM 36.4.2.22) that does
	 * not come: the trace breaks a generation rule, so it is damaged
	 * (in diff_flow_damage seed 232 dropped bytes made one), an error
	 * (ptscope used to report the EXSTOP without IP and walk on).
	 * libipt 2.0.5 fails at a TIP after it (bad query), but walks on to
	 * a TIP.PGD, as here. */
	memset(&t, 0, sizeof(t));
	start(&t, 0x2000);
	exstop_ip(&t);
	disable_and_expect(&t, "exstop without fup", "E2000 R ", false);

	/* An MWAIT with the EXSTOP and FUP of its C-state entry, and an
	 * MWAIT alone: an EXSTOP without IP has no FUP (SDM 36.4.2.22-23),
	 * so the MWAIT is reported without IP and the walk goes on, with or
	 * without the FUP (libipt binds the MWAIT to the next FUP; it
	 * fails at a TIP after it, diff_flow_damage seed 431, but walks on
	 * to a TIP.PGD, as here). */
	for (int fup = 0; fup < 2; fup++) {
		memset(&t, 0, sizeof(t));
		start(&t, 0x2000);
		struct pts_packet mwait = {.kind = PTS_PKT_MWAIT,
					   .u.mwait = {.hints = 0x20}};
		ht_put(&t, &mwait);
		if (fup) {
			exstop_ip(&t);
			ht_put_ip(&t, PTS_PKT_FUP, 0x2000);
		}
		disable_and_expect(&t,
				   fup ? "mwait, exstop, fup"
				       : "mwait without fup",
				   "E2000 2000 2001 D1000 ", true);
	}

	/* An OVF inside PSB+, after its FUP: "OVF also terminates PSB+"
	 * (SDM 36.4.2.18). The PSBEND after it is out of PSB+ and means
	 * nothing; the overflow resolves at the FUP after it. libipt 2.0.5
	 * fails at the PSBEND (bad context; found by diff_flow_damage, seed
	 * 98). */
	memset(&t, 0, sizeof(t));
	ht_psb(&t);
	mode64(&t);
	ht_put_ip(&t, PTS_PKT_FUP, 0x4000);
	ht_put_kind(&t, PTS_PKT_OVF);
	ht_put_kind(&t, PTS_PKT_PSBEND);
	ht_put_ip(&t, PTS_PKT_FUP, 0x2000);
	disable_and_expect(&t, "ovf ends psb+", "O2000 2000 2001 D1000 ",
			   false);

	/* A FUP whose TIP or TIP.PGD was lost in an overflow: the walk gets
	 * to the FUP's IP (the code got there), then the overflow resolves
	 * at the FUP after the OVF. libipt reports the overflow before the
	 * NOP (found by diff_flow_damage, seed 101). */
	memset(&t, 0, sizeof(t));
	start(&t, 0x2000);
	ht_put_ip(&t, PTS_PKT_FUP, 0x2001);
	ht_put_kind(&t, PTS_PKT_OVF);
	ht_put_ip(&t, PTS_PKT_FUP, 0x2000);
	disable_and_expect(&t, "fup, then ovf",
			   "E2000 2000 O2000 2000 2001 D1000 ", false);

	/* The same for a MODE.TSX: an OVF in place of its FUP. Where the
	 * transaction state changed is lost, so no walk: the overflow comes
	 * at once (ptscope used to walk on and fail at the MODE.TSX; found
	 * by diff_flow_damage, seed 175). */
	memset(&t, 0, sizeof(t));
	start(&t, 0x2000);
	{
		struct pts_packet tsx = {.kind = PTS_PKT_MODE_TSX,
					 .u.tsx = {.intx = 1}};
		ht_put(&t, &tsx);
	}
	ht_put_kind(&t, PTS_PKT_OVF);
	ht_put_ip(&t, PTS_PKT_FUP, 0x2000);
	disable_and_expect(&t, "tsx, then ovf",
			   "E2000 O2000 2000 2001 D1000 ", true);

	/* A FUP whose TIP.PGD the end cuts: the walk gets to the FUP's IP,
	 * then the cut packet is reported (it used to be a mismatch). libipt
	 * ends cleanly before the NOP (found by diff_flow_damage, seed
	 * 194). */
	memset(&t, 0, sizeof(t));
	start(&t, 0x2000);
	ht_put_ip(&t, PTS_PKT_FUP, 0x2001);
	ht_put_ip(&t, PTS_PKT_TIP_PGD, 0x1000);
	t.len -= 2;
	expect("fup, then cut pgd", &t, &none, "E2000 2000 C ", false);

	/* A TIP.PGE where tracing stopped is a resume, but not across an
	 * overflow or an error and the resync after it: what ran in between
	 * is lost (libipt has no resumed flag there either; found by
	 * diff_flow_damage, seeds 194 and 651). */
	static const struct {
		const char *label, *want;
	} gaps[] = {
		{"resume", "E2000 2000 A M2001 2001 D1000 "},
		{"no resume after ovf", "E2000 2000 A O E2001 2001 D1000 "},
		{"no resume after error", "E2000 2000 A R E2001 2001 D1000 "},
	};
	for (int gap = 0; gap < 3; gap++) {
		memset(&t, 0, sizeof(t));
		start(&t, 0x2000);
		ht_put_ip(&t, PTS_PKT_FUP, 0x2001);
		ht_put_ip(&t, PTS_PKT_TIP_PGD, 0);
		if (gap == 1)
			ht_put_kind(&t, PTS_PKT_OVF);
		if (gap == 2) {
			ht_tnt(&t, 1, 1); /* while off: an error */
			ht_psb(&t);
			ht_put_kind(&t, PTS_PKT_PSBEND);
			mode64(&t);
		}
		ht_put_ip(&t, PTS_PKT_TIP_PGE, 0x2001);
		disable_and_expect(&t, gaps[gap].label, gaps[gap].want, true);
	}

	/* While tracing, a PSB+ MODE.Exec other than the mode: a lost
	 * MODE.Exec (libipt: bad status update). */
	memset(&t, 0, sizeof(t));
	start(&t, 0x2000);
	ht_psb(&t);
	ht_mode(&t, 0, 1);
	ht_put_ip(&t, PTS_PKT_FUP, 0x2000);
	ht_put_kind(&t, PTS_PKT_PSBEND);
	disable_and_expect(&t, "mode change in psb+", "E2000 R ", true);

	/* A FUP with neither TIP nor TIP.PGD after it: both stop, libipt
	 * before the NOP (it reads the FUP ahead and fails at once). */
	memset(&t, 0, sizeof(t));
	start(&t, 0x2000);
	ht_put_ip(&t, PTS_PKT_FUP, 0x2001);
	finish(&t);
	expect("lone fup", &t, &none, "E2000 2000 R ", false);

	/* A FUP that ends the trace: its TIP or TIP.PGD is cut off, as the
	 * packet of a branch at the end. The walk gets to the FUP's IP (no
	 * instruction before it takes a packet) and the trace ends there,
	 * without error (it used to be the lone FUP's mismatch). libipt ends
	 * before the NOP: its query decoder has read the FUP ahead, finds no
	 * packet after it and reports the end of the trace at once. */
	memset(&t, 0, sizeof(t));
	start(&t, 0x2000);
	ht_put_ip(&t, PTS_PKT_FUP, 0x2001);
	expect("fup at the end", &t, &none, "E2000 2000 ", false);

	/* TIP.PGE, then nothing. */
	memset(&t, 0, sizeof(t));
	start(&t, 0x2000);
	expect("end after pge", &t, &none, "E2000 ", true);

	/* PSB+ with a FUP, then nothing. */
	memset(&t, 0, sizeof(t));
	ht_psb(&t);
	mode64(&t);
	ht_put_ip(&t, PTS_PKT_FUP, 0x2000);
	ht_put_kind(&t, PTS_PKT_PSBEND);
	expect("end after psb+", &t, &none, "E2000 ", true);

	/* The TIP of the JMP at 0x4000, then a PSB+ whose FUP is cut by the
	 * end: cut data, as anywhere else (it used to be a packet out of
	 * context). libipt ends cleanly: it ignores a cut status packet it
	 * reads ahead. */
	memset(&t, 0, sizeof(t));
	start(&t, 0x4000);
	ht_put_ip(&t, PTS_PKT_TIP, 0x2000);
	ht_psb(&t);
	mode64(&t);
	ht_put_ip(&t, PTS_PKT_FUP, 0x2000);
	t.len--;
	expect("cut in psb+", &t, &none, "E4000 4000 C ", false);

	/* The same with tracing off after a TIP.PGD: a packet cut by the
	 * end is cut data there too (it was a mismatch; found by
	 * diff_flow_damage seed 41). libipt ends cleanly. */
	memset(&t, 0, sizeof(t));
	start(&t, 0x2000);
	ht_put_ip(&t, PTS_PKT_TIP_PGD, 0x1000);
	ht_put_ip(&t, PTS_PKT_FUP, 0x2000);
	t.len--;
	expect("cut while off", &t, &none, "E2000 2000 2001 D1000 C ", false);

	/* A PSB+ where the walk is at 0x1000 (TIP of the JMP at 0x4000):
	 * its FUP must lie on the way to the next branch that takes a packet
	 * (the RET at 0x2001), at a block start or inside one. */
	walk_to_psb_fup(0x2000, 0, "psb+ fup at jmp target",
			"E4000 4000 1000 2000 2001 4002 4004 D4000 ");
	walk_to_psb_fup(0x2001, 0, "psb+ fup ahead",
			"E4000 4000 1000 2000 2001 4002 4004 D4000 ");
	/* Off the way: the TIP after the PSB+ is not the RET's. */
	walk_to_psb_fup(0x3000, 0, "psb+ fup off the way",
			"E4000 4000 1000 2000 2001 R ");
	/* A TIP.PGD after the PSB+ at the target of the JMP at 0x1000, which
	 * the walk passes before the FUP's IP: it is for the RET there, not
	 * for the JMP (SDM 36.3.7: the packets after PSB+ are for the code
	 * from the FUP's IP on). */
	walk_to_psb_fup(0x2001, 0x2000, "psb+ pgd past the jmp",
			"E4000 4000 1000 2000 2001 D2000 ");
	/* An OVF right after such a PSB+: the code ran on to the FUP's IP
	 * (SDM 36.3.7) before the overflow, so the walk gets there first,
	 * as libipt does (ptscope reported the overflow at once, before
	 * the JMP at 0x1000 and the NOP). */
	memset(&t, 0, sizeof(t));
	start(&t, 0x4000);
	ht_put_ip(&t, PTS_PKT_TIP, 0x1000);
	ht_psb(&t);
	mode64(&t);
	ht_put_ip(&t, PTS_PKT_FUP, 0x2001);
	ht_put_kind(&t, PTS_PKT_PSBEND);
	ht_put_kind(&t, PTS_PKT_OVF);
	ht_put_ip(&t, PTS_PKT_FUP, 0x4000);
	disable_and_expect(&t, "ovf after psb+ ahead",
			   "E4000 4000 1000 2000 O4000 4000 D1000 ", true);
}

/* The return stack. A CALL where tracing stops (TIP.PGD) pushes nothing:
 * the RET after the next TIP.PGE that would return to it finds the stack
 * empty. Whether hardware may compress such a RET is not documented
 * (pt-sgx-facts.md 2.2, UNCONFIRMED); libipt 2.0.5 pushes nothing,
 * ptscope did (found by diff_flow_damage seed 2561: a damaged TIP made an
 * indirect CALL the branch of a TIP.PGD, and the stacks parted at a later
 * RET). An OVF empties the stack. */
static void call_at_disable(const char *label, uint64_t call, uint64_t pgd,
			    uint64_t pge, unsigned rets, const char *want)
{
	struct pts_flow_config none = {0};
	struct hand_trace t = {0};

	/* Tracing on at the CALL, off there, on again at @pge; then @rets
	 * compressed RETs. */
	start(&t, call);
	ht_put_ip(&t, PTS_PKT_TIP_PGD, pgd);
	ht_put_ip(&t, PTS_PKT_TIP_PGE, pge);
	ht_tnt(&t, (1u << rets) - 1, rets);
	expect(label, &t, &none, want, true);
}

static void return_stack(void)
{
	struct pts_flow_config none = {0};
	struct hand_trace t = {0};

	/* CALL RAX at 0x6000 out of the filter range, back in at 0x6002:
	 * the CALL there and the RET at 0x6010 pair; the RET at 0x6007 has
	 * nothing to pop. */
	call_at_disable("indirect call at a disable", 0x6000, 0x7000, 0x6002,
			2, "E6000 6000 D7000 M6002 6002 6010 6007 R ");
	/* The direct CALL at 0x6002 with the TIP.PGD at its target, back
	 * there: the RET at 0x6010 has nothing to pop. */
	call_at_disable("direct call at a disable", 0x6002, 0x6010, 0x6010, 1,
			"E6002 6002 D6010 M6010 6010 R ");

	/* Tracing on: the same CALLs push. */
	start(&t, 0x6000);
	ht_put_ip(&t, PTS_PKT_TIP, 0x6002);
	ht_tnt(&t, 3, 2);
	ht_put_ip(&t, PTS_PKT_TIP_PGD, 0x6010);
	finish(&t);
	expect("calls while on", &t, &none,
	       "E6000 6000 6002 6010 6007 6002 D6010 ", true);

	/* An OVF between a CALL and its RET: no RET is compressed across
	 * an overflow (SDM 36.4.2.16), so ptscope forgets the CALL RAX at
	 * 0x6000 and the RET at 0x6007 has nothing to pop. libipt 2.0.5 keeps
	 * its stack (pt_insn_process_overflow) and pops 0x6002
	 * (diff_flow_damage seed 4016, RULE_RET_STACKS). */
	memset(&t, 0, sizeof(t));
	start(&t, 0x6000);
	ht_put_ip(&t, PTS_PKT_TIP, 0x6002);
	ht_tnt(&t, 1, 1);
	ht_put_kind(&t, PTS_PKT_OVF);
	ht_put_ip(&t, PTS_PKT_FUP, 0x6007);
	ht_tnt(&t, 1, 1);
	expect("ret after an overflow", &t, &none,
	       "E6000 6000 6002 6010 O6007 6007 R ", false);
}

int main(void)
{
	skl014();
	bdm70();
	skd022();
	apl12();
	apl11();
	binding_rules();
	return_stack();
	return pts_check_exit();
}
