/* CBR packets in the instruction flow: outside PSB+ a CBR says the core
 * clock changed, an event of its own (libipt's ptev_cbr, ptxed's
 * "[cbr: N]"). libipt reports it once its query decoder reads ahead to it:
 * after the instruction that took the last packet before it, with no TNT
 * bit left. Hand-made traces over hand-made code:
 *   - a CBR behind a TNT: after the branch that took the TNT's last bit,
 *     before the instructions up to the next branch;
 *   - a CBR while tracing is off: between [disabled] and [enabled];
 *   - a CBR at the end: before the end of the trace;
 *   - 100 CBRs in a row, more than the walker keeps beside its packet
 *     queue: all of them, in order;
 *   - CBRs before the first PSB (skipped) and inside PSB+ (status, not a
 *     change): no event;
 *   - a CBR after an OVF that no FUP resolves: after the overflow;
 *   - CBRs between two PSB+ with no flow packet between them: at the
 *     first PSB+'s FUP IP (the walk gets there before the second PSB+);
 *   - a CBR between a TNT and the TIP an indirect branch waits for (TIP
 *     deferral): the walk reads past it (SDM 36.3.1: a frequency change
 *     may come between any two packets), where libipt 2.0.5 fails with a
 *     bad query.
 * With libipt, each trace is also decoded by libipt 2.0.5's pt_insn: the
 * flows must agree, CBR events included, except where the case says.
 * Code: 0x1000 je 0x1002; 0x1002 je 0x1004; 0x1004 nop; 0x1005 jmp rax;
 * for the PSB+ case: 0x1000 nop; 0x1001 nop; 0x1002 call 0x1010; NOPs;
 * 0x1011 je 0x1013; 0x1013 jmp rax.
 */
#include "check.h"
#include "hand_flow.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define CODE_BASE 0x1000
static const uint8_t bytes[] = {0x74, 0x00, 0x74, 0x00, 0x90, 0xff, 0xe0};
static const struct hand_section section = {bytes, sizeof(bytes),
					     CODE_BASE};
static const struct hand_code code = {&section, 1};
static const struct pts_flow_config none;

static const uint8_t call_bytes[] = {
	0x90, 0x90, 0xe8, 0x09, 0x00, 0x00, 0x00, 0x90, 0x90, 0x90, 0x90,
	0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x74, 0x00, 0xff, 0xe0};
static const struct hand_section call_section = {call_bytes,
						 sizeof(call_bytes), CODE_BASE};
static const struct hand_code call_code = {&call_section, 1};

/* The code the case at hand runs over. */
static const struct hand_code *case_code = &code;

/* The flow of @t as text: instruction addresses, "E1000" enabled, "D"
 * disabled (also async), "O" overflow, "K20" a CBR (ratio in hex), "R" an
 * error, "." the end. */
static void decode(const struct hand_trace *t, char *out, size_t cap)
{
	struct pts_image *img = hf_image(case_code);
	struct pts_flow *f = pts_flow_new(&none, img);
	struct pts_input in = {t->buf, t->len, 0};
	struct pts_flow_rec recs[16];
	size_t len = 0;
	int n;
	out[0] = 0;
	pts_flow_end(f);
	while ((n = pts_flow_next(f, &in, recs, 16)) > 0) {
		for (int i = 0; i < n && len < cap; i++) {
			const struct pts_flow_rec *r = &recs[i];
			unsigned long long a = r->kind == PTS_FLOW_INSNS
						       ? 0
						       : r->arg;
			if (r->kind == PTS_FLOW_INSNS) {
				for (uint32_t k = 0; k < r->n && len < cap; k++)
					len += (size_t)snprintf(
						out + len, cap - len, "%llx ",
						(unsigned long long)r->ips[k]);
			} else if (r->kind == PTS_FLOW_ERROR) {
				len += (size_t)snprintf(out + len, cap - len,
							"R ");
			} else if (r->kind != PTS_FLOW_EVENT) {
				continue;
			} else if (r->type == PTS_EV_CBR) {
				/* no IP: ptxed prints none */
				CHECK(r->flags & PTS_EV_F_IP_SUPPRESSED);
				len += (size_t)snprintf(out + len, cap - len,
							"K%llx ", a);
			} else if (r->type == PTS_EV_ENABLED) {
				len += (size_t)snprintf(
					out + len, cap - len, "E%llx ",
					(unsigned long long)r->ip);
			} else if (r->type == PTS_EV_DISABLED ||
				   r->type == PTS_EV_ASYNC_DISABLED) {
				len += (size_t)snprintf(out + len, cap - len,
							"D ");
			} else if (r->type == PTS_EV_OVERFLOW) {
				len += (size_t)snprintf(out + len, cap - len,
							"O ");
			} else if (r->type == PTS_EV_END) {
				len += (size_t)snprintf(out + len, cap - len,
							". ");
			}
		}
	}
	CHECK(len < cap);
	pts_flow_free(f);
	pts_image_free(img);
}

/* The flow of @t must be @want; libipt must agree, CBR events included,
 * unless @libipt_same is false (a documented difference). */
static void expect(const char *label, const struct hand_trace *t,
		   const char *want, bool libipt_same)
{
	static char flow[8192];
	decode(t, flow, sizeof(flow));
	hf_expect(label, flow, want, case_code, t, &none, true, libipt_same);
}

static void cbr(struct hand_trace *t, uint8_t ratio)
{
	struct pts_packet p;
	memset(&p, 0, sizeof(p));
	p.kind = PTS_PKT_CBR;
	p.u.cbr.ratio = ratio;
	ht_put(t, &p);
}

/* PSB+ (with a CBR of @psb_ratio inside, 0: none), tracing on at 0x1000. */
static void start(struct hand_trace *t, uint8_t psb_ratio)
{
	ht_psb(t);
	if (psb_ratio)
		cbr(t, psb_ratio);
	ht_mode(t, 1, 0);
	ht_put_kind(t, PTS_PKT_PSBEND);
	ht_put_ip(t, PTS_PKT_TIP_PGE, CODE_BASE);
}

/* PSB+ met while tracing, its FUP at @ip. */
static void psb_fup(struct hand_trace *t, uint64_t ip)
{
	ht_psb(t);
	ht_mode(t, 1, 0);
	ht_put_ip(t, PTS_PKT_FUP, ip);
	ht_put_kind(t, PTS_PKT_PSBEND);
}

/* Tracing stops at the JMP RAX (TIP.PGD with its target); a PSB+ after
 * it, as libipt (and ptxed) drop a last [disabled] right at the end. */
static void disable(struct hand_trace *t)
{
	ht_put_ip(t, PTS_PKT_TIP_PGD, CODE_BASE);
	ht_psb(t);
	ht_put_kind(t, PTS_PKT_PSBEND);
}

/* A new trace: start(), then the branches at 0x1000 and 0x1002 not
 * taken. */
static void begin(struct hand_trace *t)
{
	memset(t, 0, sizeof(*t));
	start(t, 0);
	ht_tnt(t, 0, 2);
}

int main(void)
{
	struct hand_trace t = {0};

	/* After the branch at 0x1002, which takes the TNT's last bit. */
	start(&t, 0);
	ht_tnt(&t, 3, 2);
	cbr(&t, 0x20);
	ht_put_ip(&t, PTS_PKT_TIP, CODE_BASE);
	ht_tnt(&t, 0, 2);
	disable(&t);
	expect("after last bit", &t,
	       "E1000 1000 1002 K20 1004 1005 1000 1002 1004 1005 D ", true);

	/* While tracing is off. */
	begin(&t);
	ht_put_ip(&t, PTS_PKT_TIP_PGD, CODE_BASE);
	cbr(&t, 0x21);
	ht_put_ip(&t, PTS_PKT_TIP_PGE, CODE_BASE);
	ht_tnt(&t, 0, 2);
	disable(&t);
	expect("while off", &t,
	       "E1000 1000 1002 1004 1005 D K21 E1000 1000 1002 1004 1005 D ",
	       true);

	/* At the end of the trace; also after a TIP (the branch that took
	 * it, then the CBR). */
	begin(&t);
	ht_put_ip(&t, PTS_PKT_TIP, CODE_BASE);
	cbr(&t, 0x23);
	ht_tnt(&t, 0, 2);
	cbr(&t, 0x22);
	expect("at the end", &t,
	       "E1000 1000 1002 1004 1005 K23 1000 1002 K22 . ", true);

	/* 100 in a row: beyond what waits beside the queue. */
	begin(&t);
	for (int i = 1; i <= 100; i++)
		cbr(&t, (uint8_t)i);
	ht_put_ip(&t, PTS_PKT_TIP, CODE_BASE);
	ht_tnt(&t, 0, 2);
	disable(&t);
	char want[2048];
	size_t len = (size_t)snprintf(want, sizeof(want), "E1000 1000 1002 ");
	for (int i = 1; i <= 100; i++)
		len += (size_t)snprintf(want + len, sizeof(want) - len, "K%x ",
					i);
	snprintf(want + len, sizeof(want) - len, "1004 1005 1000 1002 1004 "
						 "1005 D ");
	expect("100 in a row", &t, want, true);

	/* Before the first PSB and inside PSB+: none. */
	memset(&t, 0, sizeof(t));
	cbr(&t, 0x30);
	start(&t, 0x31);
	ht_tnt(&t, 0, 2);
	disable(&t);
	expect("skipped, psb+", &t, "E1000 1000 1002 1004 1005 D ", true);

	/* Inside the packets of one event, before the event: FUP, CBR,
	 * TIP.PGD (libipt reads the CBR with the FUP); OVF, CBR, FUP. */
	begin(&t);
	ht_put_ip(&t, PTS_PKT_FUP, CODE_BASE + 4);
	cbr(&t, 0x25);
	ht_put_ip(&t, PTS_PKT_TIP_PGD, 0);
	ht_psb(&t);
	ht_put_kind(&t, PTS_PKT_PSBEND);
	expect("fup, cbr, pgd", &t, "E1000 1000 1002 K25 D ", true);
	begin(&t);
	ht_put_kind(&t, PTS_PKT_OVF);
	cbr(&t, 0x26);
	ht_put_ip(&t, PTS_PKT_FUP, CODE_BASE);
	ht_tnt(&t, 0, 2);
	disable(&t);
	expect("ovf, cbr, fup", &t,
	       "E1000 1000 1002 K26 O 1000 1002 1004 1005 D ", true);
	/* An OVF that no FUP resolves (tracing off after it): the overflow
	 * comes at the OVF, the CBRs after it (they were reported before
	 * the overflow), with tracing on or off before. */
	for (int off = 0; off < 2; off++) {
		begin(&t);
		if (off)
			ht_put_ip(&t, PTS_PKT_TIP_PGD, CODE_BASE);
		ht_put_kind(&t, PTS_PKT_OVF);
		cbr(&t, 0x2b);
		ht_mode(&t, 1, 0);
		ht_put_ip(&t, PTS_PKT_TIP_PGE, CODE_BASE);
		ht_tnt(&t, 0, 2);
		disable(&t);
		expect(off ? "off, ovf, cbr, pge" : "ovf, cbr, pge", &t,
		       off ? "E1000 1000 1002 1004 1005 D O K2b E1000 1000 "
			     "1002 1004 1005 D "
			   : "E1000 1000 1002 O K2b E1000 1000 1002 1004 "
			     "1005 D ",
		       true);
	}

	/* After a PSB+ met while walking: at its FUP's IP (libipt's
	 * events wait for it there), not before the walk gets there. */
	begin(&t);
	psb_fup(&t, CODE_BASE + 5);
	cbr(&t, 0x27);
	disable(&t);
	expect("after psb+", &t, "E1000 1000 1002 1004 K27 1005 D ", true);

	/* Two PSB+ with no packet for the flow between them, the first
	 * FUP's IP inside a block, the second's past a direct CALL: the
	 * CBRs between them come at the first FUP's IP, those after the
	 * second at its IP (the walk met the second PSB+ short of the
	 * first FUP's IP and took it at once: both at the second's). */
	memset(&t, 0, sizeof(t));
	case_code = &call_code;
	start(&t, 0);
	psb_fup(&t, CODE_BASE + 1);
	cbr(&t, 0x28);
	cbr(&t, 0x2a);
	psb_fup(&t, CODE_BASE + 0x10);
	cbr(&t, 0x29);
	ht_tnt(&t, 0, 1);
	disable(&t);
	expect("two psb+, call between", &t,
	       "E1000 1000 K28 K2a 1001 1002 K29 1010 1011 1013 D ", true);
	case_code = &code;

	/* More CBRs than wait beside the queue (CBR_CAP, 512) in a row, then
	 * a FUP, a CBR, a TIP.PGD: the queue takes no more packets until the
	 * walk reported some, and no CBR ever goes into it (with 64 waiting
	 * a CBR went into the queue, and the FUP + TIP.PGD around it failed
	 * as a mismatch). */
	begin(&t);
	for (int i = 0; i < 700; i++)
		cbr(&t, (uint8_t)(i % 200 + 1));
	ht_put_ip(&t, PTS_PKT_TIP, CODE_BASE);
	ht_tnt(&t, 0, 2);
	ht_put_ip(&t, PTS_PKT_FUP, CODE_BASE + 4);
	cbr(&t, 0xee);
	ht_put_ip(&t, PTS_PKT_TIP_PGD, 0);
	ht_psb(&t);
	ht_put_kind(&t, PTS_PKT_PSBEND);
	static char many[8192];
	size_t n = (size_t)snprintf(many, sizeof(many), "E1000 1000 1002 ");
	for (int i = 0; i < 700; i++)
		n += (size_t)snprintf(many + n, sizeof(many) - n, "K%x ",
				      i % 200 + 1);
	snprintf(many + n, sizeof(many) - n, "1004 1005 1000 1002 Kee D ");
	expect("700 in a row", &t, many, true);

	/* Between a TNT and the TIP of a deferred indirect branch: read past
	 * (libipt: bad query at the CBR). */
	begin(&t);
	ht_tnt(&t, 0, 2);
	cbr(&t, 0x24);
	ht_put_ip(&t, PTS_PKT_TIP, CODE_BASE);
	disable(&t);
	expect("deferred tip", &t,
	       "E1000 1000 1002 1004 1005 1000 1002 K24 1004 1005 D ", false);
	return pts_check_exit();
}
