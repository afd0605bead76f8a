/* The synthesizer's packets at a TraceStop and under the CR3 filter
 * (docs/pt-sgx-facts.md 2.3, 3.1, 3.4): steps scripted by hand, the
 * emitter's bytes read back as one line per test (synth_packets.h) and
 * compared with the sequence the SDM gives, and the emitter's verdict on
 * every instruction checked too.
 *
 * TraceStop: a branch landing in the range with TriggerEn = ContextEn = 1
 * clears TriggerEn: TIP.PGD (with the target, or suppressed where the
 * target follows from the code: Jcc), then TraceStop, then nothing while
 * TriggerEn stays 0 (not even timing: MTC and PSB need TriggerEn), until
 * software sets TraceEn again.
 * CR3 filter: CR3[63:5] must equal RTIT_CR3_MATCH[63:5], else ContextEn =
 * 0: no TNT, TIP*, FUP, MODE or PIP, only PSB+, CBR and timing. */
#include "check.h"
#include "synth.h"
#include "synth_packets.h"

#include <stdlib.h>
#include <string.h>

#define HOST 0x400100ull
#define STOP_A 0x401000ull /* the TraceStop range [STOP_A, STOP_B] */
#define STOP_B 0x4010ffull
#define AFTER 0x402000ull  /* outside it */
#define KERNEL 0xffffffff81000000ull

static const struct syn_where user = {3, -1}, ring0 = {0, -1};

/* One instruction (or event) from @ip to @next; ring 0 for kernel
 * addresses, ring 3 for the others. A taken branch unless SYN_SEQ. */
static struct syn_step insn(int kind, uint64_t ip, uint64_t next)
{
	struct syn_step s;
	memset(&s, 0, sizeof(s));
	s.ip = ip;
	s.next = next;
	s.kind = (uint8_t)kind;
	s.size = kind == SYN_RESTART ? 0 : kind == SYN_SEQ ? 4 : 2;
	s.flags = kind == SYN_SEQ ? 0 : SYN_F_TAKEN;
	s.at = ip >= KERNEL ? ring0 : user;
	s.to = next >= KERNEL ? ring0 : user;
	/* Enough for MTCs between steps when MTCEn is on. */
	s.extra_cycles = 3000;
	return s;
}

struct run {
	struct syn_sink sink;
	struct pts_packet pkts[1024];
	size_t n;
	char sig[4096];
	int verdict[32]; /* syn_emit_step() for each step */
	struct syn_emit_stats st;
};

/* Emits @steps from HOST in ring 3, then ends as software clearing
 * TraceEn would (syn_emit_finish). */
static struct run *run(const struct syn_options *o,
		       const struct syn_step *steps, size_t n)
{
	struct run *r = calloc(1, sizeof(*r));
	struct pts_config cfg;
	if (!r || n > sizeof(r->verdict) / sizeof(r->verdict[0]))
		abort();
	pts_config_init(&cfg);
	syn_sink_init(&r->sink, NULL);
	struct syn_emitter *em = syn_emit_new(o, &cfg, &r->sink);
	if (!em)
		abort();
	CHECK_EQ(syn_emit_start(em, HOST, user), 0);
	for (size_t i = 0; i < n; i++) {
		r->verdict[i] = syn_emit_step(em, &steps[i]);
		CHECK(r->verdict[i] >= 0);
	}
	CHECK_EQ(syn_emit_finish(em), 0);
	syn_emit_stats(em, &r->st);
	syn_emit_free(em);
	pts_config_fini(&cfg);
	r->n = synth_decode(&r->sink, r->pkts,
			    sizeof(r->pkts) / sizeof(r->pkts[0]));
	synth_signature(r->pkts, r->n, r->sig, sizeof(r->sig));
	if (getenv("SYNTH_VERBOSE"))
		printf("%s\n", r->sig);
	return r;
}

static void run_free(struct run *r)
{
	free(r->sink.mem);
	free(r);
}

static void expect_sig(const char *test, const struct run *r,
		       const char *want)
{
	CHECKF(strcmp(r->sig, want) == 0, "%s:\n  got:  %s\n  want: %s", test,
	       r->sig, want);
}

/* The verdicts of steps [@from, @to): all @want. */
static void expect_verdicts(const char *test, const struct run *r,
			    size_t from, size_t to, int want)
{
	for (size_t i = from; i < to; i++)
		CHECKF(r->verdict[i] == want, "%s: step %zu is %s, not %s",
		       test, i, syn_hidden_name(r->verdict[i]),
		       syn_hidden_name(want));
}

/* User-only tracing (no PIP in the PSB+), no return compression noise,
 * and the TraceStop range. */
static void stop_options(struct syn_options *o)
{
	syn_options_default(o);
	o->user_only = 1;
	o->ret_nocomp_rate = 0;
	o->n_addr = 1;
	o->addr_cfg[0] = PTS_ADDR_STOP;
	o->addr_a[0] = STOP_A;
	o->addr_b[0] = STOP_B;
}

#define START "psb cbr mode.exec fup(400100) psbend"

/* A JMP into the range: TIP.PGD(target) TraceStop, the last packets of
 * the trace although the walk goes on, leaves the range and time passes
 * (MTCEn, TSCEn, and after the stop enough MTC periods to fill the PSB
 * period twice: neither may come back). The JMP itself was traced;
 * everything after it is "stopped". */
static void test_stop_by_jump(void)
{
	struct syn_options o;
	stop_options(&o);
	o.tsc = o.mtc = 1;
	o.mtc_freq = 3;
	o.psb_period = 256;
	struct syn_step steps[] = {
		insn(SYN_SEQ, HOST, HOST + 4),
		insn(SYN_COND, HOST + 4, HOST + 0x20),
		insn(SYN_JUMP, HOST + 0x20, STOP_A),
		insn(SYN_SEQ, STOP_A, STOP_A + 4),
		insn(SYN_CALL, STOP_A + 4, AFTER),
		insn(SYN_SEQ, AFTER, AFTER + 4),
		insn(SYN_COND, AFTER + 4, STOP_A + 0x10),
		insn(SYN_SEQ, STOP_A + 0x10, STOP_A + 0x14),
	};
	/* About 50 MTC periods a step (CTC = TSC / 100, 8 ticks each). */
	for (size_t i = 3; i < 8; i++)
		steps[i].extra_cycles = 40000;
	struct run *r = run(&o, steps, 8);
	expect_sig("stop by JMP", r, START " tnt.8 tip.pgd(401000) stop");
	CHECKF(r->n > 0 && r->pkts[r->n - 1].kind == PTS_PKT_STOP,
	       "stop by JMP: the TraceStop is not the last packet");
	CHECKF(r->n > 1 && r->pkts[r->n - 2].kind == PTS_PKT_TIP_PGD,
	       "stop by JMP: no TIP.PGD right before the TraceStop");
	expect_verdicts("stop by JMP", r, 0, 3, SYN_VISIBLE);
	expect_verdicts("stop by JMP", r, 3, 8, SYN_HID_STOPPED);
	run_free(r);
}

/* A taken Jcc into the range: TIP.PGD() with the IP suppressed (the
 * target follows from the code) and no TNT bit for the Jcc. */
static void test_stop_by_jcc(void)
{
	struct syn_options o;
	stop_options(&o);
	const struct syn_step steps[] = {
		insn(SYN_SEQ, HOST, HOST + 4),
		insn(SYN_COND, HOST + 4, STOP_B),
		insn(SYN_SEQ, STOP_B, STOP_B + 4),
	};
	struct run *r = run(&o, steps, 3);
	expect_sig("stop by Jcc", r, START " tip.pgd() stop");
	expect_verdicts("stop by Jcc", r, 0, 2, SYN_VISIBLE);
	expect_verdicts("stop by Jcc", r, 2, 3, SYN_HID_STOPPED);
	run_free(r);
}

/* TraceStop needs ContextEn at the landing (pt-sgx-facts 3.4): with OS=0 a
 * SYSCALL into the range in ring 0 stops nothing, and the SYSRET brings
 * tracing back. */
static void test_no_stop_without_context(void)
{
	struct syn_options o;
	stop_options(&o);
	o.addr_a[0] = KERNEL;
	o.addr_b[0] = KERNEL + 0xff;
	const struct syn_step steps[] = {
		insn(SYN_FAR, HOST, KERNEL),
		insn(SYN_SEQ, KERNEL, KERNEL + 4),
		insn(SYN_FAR, KERNEL + 4, HOST + 2),
		insn(SYN_SEQ, HOST + 2, HOST + 6),
	};
	struct run *r = run(&o, steps, 4);
	expect_sig("stop in ring 0 with OS=0", r,
		   START " tip.pgd() tip.pge(400102) fup(400106) tip.pgd()");
	CHECK_EQ(r->verdict[1], SYN_HID_CPL);
	run_free(r);
}

/* Software sets TraceEn again after the stop (a walk restart): nothing
 * for the gap, then CBR MODE.Exec TIP.PGE like any enabling WRMSR. */
static void test_stop_then_restart(void)
{
	struct syn_options o;
	stop_options(&o);
	const struct syn_step steps[] = {
		insn(SYN_CALL, HOST, STOP_A),
		insn(SYN_SEQ, STOP_A, STOP_A + 4),
		insn(SYN_RESTART, STOP_A + 4, AFTER),
		insn(SYN_SEQ, AFTER, AFTER + 4),
	};
	struct run *r = run(&o, steps, 4);
	expect_sig("stop, then restart", r,
		   START " tip.pgd(401000) stop cbr mode.exec tip.pge(402000)"
			 " fup(402004) tip.pgd()");
	CHECK_EQ(r->verdict[1], SYN_HID_STOPPED);
	CHECK_EQ(r->verdict[3], SYN_VISIBLE);
	run_free(r);
}

/* OS=1 and the CR3 filter; CR3 has PWT and PCD (bits 3, 4) set, which
 * the filter ignores. */
static void cr3_options(struct syn_options *o, uint64_t match)
{
	syn_options_default(o);
	o->ret_nocomp_rate = 0;
	o->cr3 = 0x7654018;
	o->cr3_filter = 1;
	o->cr3_match = match;
}

/* The flow of the CR3 tests: branches of every kind, a SYSCALL and its
 * SYSRET, an indirect jump, a software restart. */
static const struct syn_step *cr3_steps(size_t *n)
{
	static struct syn_step steps[10];
	steps[0] = insn(SYN_SEQ, HOST, HOST + 4);
	steps[1] = insn(SYN_COND, HOST + 4, HOST + 0x10);
	steps[2] = insn(SYN_CALL, HOST + 0x10, AFTER);
	steps[3] = insn(SYN_RET, AFTER, HOST + 0x12);
	steps[4] = insn(SYN_FAR, HOST + 0x12, KERNEL);
	steps[5] = insn(SYN_SEQ, KERNEL, KERNEL + 4);
	steps[6] = insn(SYN_FAR, KERNEL + 4, HOST + 0x14);
	steps[7] = insn(SYN_IJUMP, HOST + 0x14, AFTER + 0x40);
	steps[8] = insn(SYN_RESTART, AFTER + 0x40, HOST);
	steps[9] = insn(SYN_SEQ, HOST, HOST + 4);
	*n = 10;
	return steps;
}

/* A matching CR3: traced as without the filter, ring 0 too (the RET
 * compressed into the Jcc's TNT), and the PIP in the PSB+ gives
 * CR3[51:5]. */
static void test_cr3_match(void)
{
	struct syn_options o;
	size_t n;
	cr3_options(&o, 0x7654000);
	const struct syn_step *steps = cr3_steps(&n);
	struct run *r = run(&o, steps, n);
	expect_sig("CR3 match", r,
		   "psb pip cbr mode.exec fup(400100) psbend tnt.8"
		   " tip(ffffffff81000000) tip(400114) tip(402040) fup(402040)"
		   " tip.pgd() cbr mode.exec tip.pge(400100) fup(400104)"
		   " tip.pgd()");
	CHECK(r->n > 1 && r->pkts[1].kind == PTS_PKT_PIP);
	if (r->n > 1)
		CHECK_EQ(r->pkts[1].u.pip.cr3, 0x7654000ull);
	expect_verdicts("CR3 match", r, 0, 8, SYN_VISIBLE);
	run_free(r);
}

/* A CR3 that does not match: ContextEn = 0 from the start, so the PSB+
 * has neither PIP nor MODE.Exec nor FUP, and the flow makes no packet at
 * all; timing (TSC, MTC), CBR and PSB+ go on (TriggerEn = 1). */
static void test_cr3_mismatch(void)
{
	struct syn_options o;
	size_t n;
	cr3_options(&o, 0x1234000);
	o.tsc = o.mtc = 1;
	o.mtc_freq = 0;
	o.psb_period = 64;
	const struct syn_step *steps = cr3_steps(&n);
	struct run *r = run(&o, steps, n);
	unsigned psbs = 0, mtcs = 0;
	for (size_t i = 0; i < r->n; i++) {
		int k = r->pkts[i].kind;
		psbs += k == PTS_PKT_PSB;
		mtcs += k == PTS_PKT_MTC;
		CHECKF(k == PTS_PKT_PSB || k == PTS_PKT_PSBEND ||
			       k == PTS_PKT_CBR || synth_is_timing(k),
		       "CR3 mismatch: packet #%zu is %s", i,
		       pts_pkt_kind_name(k));
	}
	CHECK(psbs >= 2); /* a later PSB+ is as empty as the first */
	CHECK(mtcs >= 1);
	CHECK_EQ(r->st.tnt_bits + r->st.tips + r->st.pges + r->st.pgds +
			 r->st.fups, 0ull);
	for (size_t i = 0; i < n; i++)
		if (steps[i].kind != SYN_RESTART)
			CHECKF(r->verdict[i] == SYN_HID_CR3,
			       "CR3 mismatch: step %zu is %s", i,
			       syn_hidden_name(r->verdict[i]));
	run_free(r);
}

int main(void)
{
	test_stop_by_jump();
	test_stop_by_jcc();
	test_no_stop_without_context();
	test_stop_then_restart();
	test_cr3_match();
	test_cr3_mismatch();
	return pts_check_exit();
}
