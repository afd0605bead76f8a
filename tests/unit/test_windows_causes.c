/* The windows model outside enclaves: one trace per gap cause that packets
 * and configuration can establish (CPL, CR3, IP filter, TraceStop, switched
 * off, overflow, decode error, truncation), "needs-images" where only the
 * code can tell, and the balance rules. */
#include "check.h"
#include "windows_trace.h"

#include <string.h>

#define CODE 0x401000ull
#define KERNEL 0xffffffff81000000ull

static struct wresult res;

static struct pts_trace_config config(uint64_t ctl_bits)
{
	struct pts_trace_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.known = PTS_CFG_CTL;
	cfg.ctl = PTS_CTL_TRACEEN | PTS_CTL_BRANCHEN | ctl_bits;
	return cfg;
}

static void run(const struct wtrace *t, const struct pts_trace_config *cfg)
{
	CHECK(wt_run(t, cfg, NULL, 0, &res) == 0);
	CHECK_EQ(res.err, 0);
}

static void expect_gap(int nth, int cause, int basis)
{
	const struct pts_win_record *g = wt_find(&res, PTS_REC_GAP, nth);

	CHECKF(g && g->cause == cause && g->basis == basis,
	       "gap %d: want %s [%s], got %s [%s]", nth,
	       pts_gap_cause_name(cause), pts_gap_basis_name(basis),
	       g ? pts_gap_cause_name(g->cause) : "none",
	       g ? pts_gap_basis_name(g->basis) : "-");
	if (!g || g->cause != cause)
		wt_dump(&res);
}

static void start(struct wtrace *t)
{
	wt_init(t);
	wt_header(t, 1, CODE);
	wt_tnt(t, 3);
}

/* User-only: SYSCALL (bare TIP.PGD), SYSRET (TIP.PGE at the next IP); an
 * interrupt (FUP + TIP.PGD(), back at the FUP IP). */
static void test_user_only(void)
{
	struct pts_trace_config cfg = config(PTS_CTL_USER);
	struct wtrace t;

	start(&t);
	wt_pgd0(&t);
	wt_ip(&t, PTS_PKT_TIP_PGE, CODE + 0x22);
	wt_tnt(&t, 1);
	wt_ip(&t, PTS_PKT_FUP, CODE + 0x40);
	wt_pgd0(&t);
	wt_ip(&t, PTS_PKT_TIP_PGE, CODE + 0x40);
	run(&t, &cfg);
	CHECK_EQ(wt_count(&res, PTS_REC_GAP, -1), 2);
	expect_gap(0, PTS_GAP_CPL, PTS_BASIS_CONFIG);
	expect_gap(1, PTS_GAP_CPL, PTS_BASIS_CONFIG);
	CHECK_EQ(wt_count(&res, PTS_REC_WINDOW, -1), 3);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);
	CHECK_EQ(wt_find(&res, PTS_REC_GAP, 1)->begin.ip, CODE + 0x40);
}

/* Kernel-only: the return to user mode is a bare TIP.PGD. */
static void test_kernel_only(void)
{
	struct pts_trace_config cfg = config(PTS_CTL_OS);
	struct wtrace t;

	wt_init(&t);
	wt_header(&t, 1, KERNEL);
	wt_pgd0(&t);
	wt_ip(&t, PTS_PKT_TIP_PGE, KERNEL + 0x100);
	run(&t, &cfg);
	expect_gap(0, PTS_GAP_CPL, PTS_BASIS_CONFIG);
}

/* IP filter: a TIP.PGD with an IP says FilterEn dropped; a bare one is the
 * conditional branch out of the range (the only candidate configured). */
static void test_ip_filter(void)
{
	struct pts_trace_config cfg = config(PTS_CTL_USER | PTS_CTL_OS);
	struct wtrace t;

	CHECK_EQ(pts_config_add_range(&cfg, "0x401000-0x401fff",
				      PTS_ADDR_FILTER),
		 0);
	/* numbers as everywhere: 0400 is decimal (strtoull took it as
	 * octal), B below A and a second dash are refused */
	struct pts_trace_config spare = cfg;
	CHECK_EQ(pts_config_add_range(&spare, "0400-0500", PTS_ADDR_STOP), 0);
	CHECK(spare.addr_a[1] == 400 && spare.addr_b[1] == 500);
	CHECK_EQ(pts_config_add_range(&spare, "0500-0400", PTS_ADDR_STOP),
		 -PTS_ERR_INVALID);
	CHECK_EQ(pts_config_add_range(&spare, "5--1", PTS_ADDR_STOP),
		 -PTS_ERR_INVALID);
	start(&t);
	wt_ip(&t, PTS_PKT_TIP_PGD, 0x500000);
	wt_ip(&t, PTS_PKT_TIP_PGE, CODE + 0x10);
	wt_pgd0(&t);
	wt_ip(&t, PTS_PKT_TIP_PGE, CODE + 0x20);
	run(&t, &cfg);
	expect_gap(0, PTS_GAP_IP_FILTER, PTS_BASIS_PACKETS);
	CHECK_EQ(wt_find(&res, PTS_REC_GAP, 0)->begin.ip, 0x500000);
	expect_gap(1, PTS_GAP_IP_FILTER, PTS_BASIS_CONFIG);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);

	/* A TIP.PGD whose IP is inside the range: FilterEn is 1 there
	 * (digest 3.4), nothing configured explains it (it was taken for
	 * an ip-filter gap). */
	start(&t);
	wt_ip(&t, PTS_PKT_TIP_PGD, CODE + 0x30);
	wt_ip(&t, PTS_PKT_TIP_PGE, CODE + 0x10);
	run(&t, &cfg);
	expect_gap(0, PTS_GAP_UNKNOWN, PTS_BASIS_NONE);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, PTS_RULE_UNEXPLAINED_GAP),
		 1);
}

/* CR3 filter: the PIP before the TIP.PGD names a CR3 that does not match. */
static void test_cr3_filter(void)
{
	struct pts_trace_config cfg =
		config(PTS_CTL_USER | PTS_CTL_OS | PTS_CTL_CR3FILTER);
	struct wtrace t;

	cfg.known |= PTS_CFG_CR3;
	cfg.cr3_match = 0x1000;
	wt_init(&t);
	wt_psb(&t);
	wt_pip(&t, 0x1000);
	wt_mode64(&t);
	wt_ip(&t, PTS_PKT_FUP, KERNEL);
	wt_plain(&t, PTS_PKT_PSBEND);
	wt_tnt(&t, 2);
	wt_pip(&t, 0x2000);
	wt_pgd0(&t);
	wt_pip(&t, 0x1000);
	wt_ip(&t, PTS_PKT_TIP_PGE, KERNEL + 0x80);
	/* no PIP right before: the filter configured is all that is left */
	wt_tnt(&t, 1);
	wt_pgd0(&t);
	wt_ip(&t, PTS_PKT_TIP_PGE, KERNEL + 0x90);
	/* the matching CR3 right before: not the CR3 filter, nothing else */
	wt_pip(&t, 0x1000);
	wt_pgd0(&t);
	wt_ip(&t, PTS_PKT_TIP_PGE, KERNEL + 0xa0);
	run(&t, &cfg);
	expect_gap(0, PTS_GAP_CR3, PTS_BASIS_CONFIG);
	expect_gap(1, PTS_GAP_CR3, PTS_BASIS_CONFIG);
	expect_gap(2, PTS_GAP_UNKNOWN, PTS_BASIS_NONE);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 1);
}

/* TraceStop after a TIP.PGD, and TraceStop while on. */
static void test_tracestop(void)
{
	struct pts_trace_config cfg = config(PTS_CTL_USER);
	struct wtrace t;

	CHECK_EQ(pts_config_add_range(&cfg, "0x600000-0x600fff", PTS_ADDR_STOP),
		 0);
	start(&t);
	wt_ip(&t, PTS_PKT_TIP_PGD, 0x600010);
	wt_plain(&t, PTS_PKT_STOP);
	wt_ip(&t, PTS_PKT_TIP_PGE, CODE);
	wt_plain(&t, PTS_PKT_STOP);
	run(&t, &cfg);
	expect_gap(0, PTS_GAP_TRACESTOP, PTS_BASIS_PACKETS);
	expect_gap(1, PTS_GAP_TRACESTOP, PTS_BASIS_PACKETS);
	CHECK(wt_find(&res, PTS_REC_GAP, 1)->flags & PTS_GAPF_TRAILING);
}

/* OS=1: FUP + TIP.PGD() is the WRMSR that clears TraceEn. */
static void test_switched_off(void)
{
	struct pts_trace_config cfg = config(PTS_CTL_USER | PTS_CTL_OS);
	struct wtrace t;

	start(&t);
	wt_ip(&t, PTS_PKT_FUP, KERNEL + 0x44);
	wt_pgd0(&t);
	run(&t, &cfg);
	expect_gap(0, PTS_GAP_DISABLED, PTS_BASIS_CONFIG);
}

/* An overflow while on: the gap runs from the OVF to the FUP after it. */
static void test_overflow(void)
{
	struct pts_trace_config cfg = config(PTS_CTL_USER);
	const struct pts_win_record *g;
	struct wtrace t;

	start(&t);
	wt_plain(&t, PTS_PKT_OVF);
	wt_ip(&t, PTS_PKT_FUP, CODE + 0x80);
	wt_tnt(&t, 2);
	run(&t, &cfg);
	expect_gap(0, PTS_GAP_OVERFLOW, PTS_BASIS_PACKETS);
	g = wt_find(&res, PTS_REC_GAP, 0);
	CHECK(g && g->begin.edge == PTS_EDGE_OVF &&
	      g->end.edge == PTS_EDGE_OVF_FUP && g->end.ip == CODE + 0x80);
	CHECK_EQ(wt_count(&res, PTS_REC_WINDOW, -1), 2);
}

/* Errata: SKD010 (no FUP after an OVF: flow says on again) and APL12 (a
 * spurious FUP after an OVF while off, then the real TIP.PGE). */
static void test_overflow_errata(void)
{
	struct pts_trace_config cfg = config(PTS_CTL_USER);
	struct wtrace t;

	start(&t);
	wt_plain(&t, PTS_PKT_OVF);
	wt_tnt(&t, 2);
	run(&t, &cfg);
	expect_gap(0, PTS_GAP_OVERFLOW, PTS_BASIS_PACKETS);
	CHECK_EQ(wt_find(&res, PTS_REC_GAP, 0)->end.edge, PTS_EDGE_FLOW);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);

	start(&t);
	wt_pgd0(&t);
	wt_plain(&t, PTS_PKT_OVF);
	wt_ip(&t, PTS_PKT_FUP, CODE + 0x80);
	wt_ip(&t, PTS_PKT_TIP_PGE, CODE + 0x90);
	wt_tnt(&t, 1);
	run(&t, &cfg);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);
	CHECK(wt_find(&res, PTS_REC_GAP, 0) &&
	      (wt_find(&res, PTS_REC_GAP, 0)->flags & PTS_GAPF_UNCERTAIN));
}

/* Bytes no packet starts with (02 04: an unknown extended opcode). */
static const uint8_t bad[] = {0x02, 0x04, 0x00, 0x00};

/* Undecodable bytes: a decode-error gap until the next PSB+ with FUP. */
static void test_decode_error(void)
{
	struct pts_trace_config cfg = config(PTS_CTL_USER);
	const struct pts_win_record *g;
	struct wtrace t;

	start(&t);
	wt_bytes(&t, bad, sizeof(bad));
	wt_header(&t, 1, CODE + 0x100);
	wt_tnt(&t, 2);
	run(&t, &cfg);
	expect_gap(0, PTS_GAP_DECODE_ERROR, PTS_BASIS_PACKETS);
	g = wt_find(&res, PTS_REC_GAP, 0);
	CHECK(g && g->end.edge == PTS_EDGE_PSB_FUP);
	CHECK_EQ(wt_count(&res, PTS_REC_WINDOW, -1), 2);
}

/* A PSB+ with FUP, then undecodable bytes: what came after the PSB+ is
 * lost, so it was no TIP.PGE (BDM70), and tracing was on from the FUP, as
 * at the end of a trace; the decode-error gap follows a window. */
static void test_decode_error_after_psb_fup(void)
{
	struct pts_trace_config cfg = config(PTS_CTL_USER);
	struct wtrace t;

	wt_init(&t);
	wt_header(&t, 1, CODE);
	wt_bytes(&t, bad, sizeof(bad));
	run(&t, &cfg);
	const struct pts_win_record *w = wt_find(&res, PTS_REC_WINDOW, 0);
	CHECK(w && w->begin.edge == PTS_EDGE_PSB_FUP && w->begin.ip == CODE);
	CHECK(w && w->end.edge == PTS_EDGE_SKIP);
	CHECK_EQ(wt_count(&res, PTS_REC_GAP, -1), 1);
	expect_gap(0, PTS_GAP_DECODE_ERROR, PTS_BASIS_PACKETS);
}

/* The last packet cut off: a truncation gap at the end. */
static void test_truncated(void)
{
	struct pts_trace_config cfg = config(PTS_CTL_USER);
	struct wtrace t;

	start(&t);
	wt_ip(&t, PTS_PKT_TIP, 0x123456789abcull);
	t.len -= 2;
	run(&t, &cfg);
	expect_gap(0, PTS_GAP_TRUNCATED, PTS_BASIS_PACKETS);
}

/* Without a configuration, packets alone cannot tell a SYSCALL from a MOV
 * CR3 or a branch out of a filter range. */
static void test_needs_images(void)
{
	struct wtrace t;
	const struct pts_win_record *g;

	start(&t);
	wt_pgd0(&t);
	wt_ip(&t, PTS_PKT_TIP_PGE, CODE + 0x22);
	wt_ip(&t, PTS_PKT_FUP, CODE + 0x40);
	wt_pgd0(&t);
	wt_ip(&t, PTS_PKT_TIP_PGE, CODE + 0x40);
	run(&t, NULL);
	expect_gap(0, PTS_GAP_NEEDS_IMAGES, PTS_BASIS_NONE);
	g = wt_find(&res, PTS_REC_GAP, 0);
	CHECK(g && g->candidates == ((1u << PTS_GAP_CPL) |
				     (1u << PTS_GAP_CR3) |
				     (1u << PTS_GAP_IP_FILTER)));
	expect_gap(1, PTS_GAP_NEEDS_IMAGES, PTS_BASIS_NONE);
	g = wt_find(&res, PTS_REC_GAP, 1);
	CHECK(g && g->candidates == ((1u << PTS_GAP_CPL) |
				     (1u << PTS_GAP_DISABLED)));
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);
}

/* ... and the flow decoder's evidence settles it. */
static void test_evidence_syscall(void)
{
	struct pts_win_evidence ev = {PTS_EV_DISABLE_INSN, PTS_EV_INSN_SYSCALL,
				      0, CODE + 0x20};
	struct wtrace t;
	size_t pgd;

	start(&t);
	pgd = t.len;
	wt_pgd0(&t);
	wt_ip(&t, PTS_PKT_TIP_PGE, CODE + 0x22);
	CHECK(wt_run(&t, NULL, &ev, pgd, &res) == 0);
	expect_gap(0, PTS_GAP_CPL, PTS_BASIS_EVIDENCE);
}

/* Both rings traced, no filter: a bare TIP.PGD has no explanation. */
static void test_unexplained(void)
{
	struct pts_trace_config cfg = config(PTS_CTL_USER | PTS_CTL_OS);
	struct wtrace t;

	start(&t);
	wt_pgd0(&t);
	wt_ip(&t, PTS_PKT_TIP_PGE, CODE + 0x22);
	run(&t, &cfg);
	expect_gap(0, PTS_GAP_UNKNOWN, PTS_BASIS_NONE);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, PTS_RULE_UNEXPLAINED_GAP),
		 1);
}

/* TIP.PGE while on, TIP.PGD while off, TNT while off. */
static void test_unbalanced(void)
{
	struct pts_trace_config cfg = config(PTS_CTL_USER);
	struct wtrace t;

	start(&t);
	wt_ip(&t, PTS_PKT_TIP_PGE, CODE + 0x10);
	wt_pgd0(&t);
	wt_pgd0(&t);
	wt_tnt(&t, 2);
	wt_ip(&t, PTS_PKT_TIP_PGE, CODE + 0x30);
	run(&t, &cfg);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, PTS_RULE_UNBALANCED), 3);
	expect_gap(0, PTS_GAP_CPL, PTS_BASIS_CONFIG);
}

/* A PSB+ without FUP while tracing was on: no TIP.PGD ended the window. */
static void test_psb_without_fup(void)
{
	struct pts_trace_config cfg = config(PTS_CTL_USER);
	struct wtrace t;

	start(&t);
	wt_header(&t, 0, 0);
	wt_ip(&t, PTS_PKT_TIP_PGE, CODE + 0x30);
	run(&t, &cfg);
	expect_gap(0, PTS_GAP_UNKNOWN, PTS_BASIS_NONE);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, PTS_RULE_UNEXPLAINED_GAP),
		 1);
}

/* The start: off until the first TIP.PGE is a gap; on from the first PSB+
 * (FUP) is not. The gap's PSB+ needs TriggerEn (digest 3.6): a user-only
 * trace began in ring 0 (cpl); with everything traced, tracing was
 * switched on there (disabled: TraceEn); without the configuration, any
 * of them; ending at the AEP, an enclave the trace began in. */
static void test_start(void)
{
	struct pts_trace_config cfg = config(PTS_CTL_USER);
	struct pts_trace_config all = config(PTS_CTL_USER | PTS_CTL_OS);
	struct pts_trace_config none;
	struct pts_enclave encl = {.begin = 0x7f0000000000ull,
				   .end = 0x7f0000100000ull,
				   .kind = PTS_ENCLAVE_PRODUCTION,
				   .aep = CODE,
				   .has_aep = 1};
	struct wtrace t;

	wt_init(&t);
	wt_header(&t, 0, 0);
	wt_ip(&t, PTS_PKT_TIP_PGE, CODE);
	run(&t, &cfg);
	expect_gap(0, PTS_GAP_CPL, PTS_BASIS_CONFIG);
	CHECK_EQ(wt_find(&res, PTS_REC_GAP, 0)->begin.edge, PTS_EDGE_START);
	run(&t, &all);
	expect_gap(0, PTS_GAP_DISABLED, PTS_BASIS_PACKETS);
	memset(&none, 0, sizeof(none));
	run(&t, &none);
	expect_gap(0, PTS_GAP_NEEDS_IMAGES, PTS_BASIS_NONE);
	CHECK(wt_find(&res, PTS_REC_GAP, 0)->candidates &
	      (1u << PTS_GAP_DISABLED));
	cfg.enclaves = &encl;
	cfg.n_enclaves = 1;
	run(&t, &cfg);
	expect_gap(0, PTS_GAP_ENCLAVE, PTS_BASIS_MAP);
	CHECK_EQ(wt_find(&res, PTS_REC_GAP, 0)->exit, PTS_ENCL_AEX);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);
	start(&t);
	run(&t, &cfg);
	CHECK_EQ(wt_count(&res, PTS_REC_GAP, -1), 0);
	CHECK_EQ(wt_count(&res, PTS_REC_WINDOW, -1), 1);
	CHECK_EQ(wt_find(&res, PTS_REC_WINDOW, 0)->begin.edge,
		 PTS_EDGE_PSB_FUP);
}

int main(void)
{
	test_user_only();
	test_kernel_only();
	test_ip_filter();
	test_cr3_filter();
	test_tracestop();
	test_switched_off();
	test_overflow();
	test_overflow_errata();
	test_decode_error();
	test_decode_error_after_psb_fup();
	test_truncated();
	test_needs_images();
	test_evidence_syscall();
	test_unexplained();
	test_unbalanced();
	test_psb_without_fup();
	test_start();
	return pts_check_exit();
}
