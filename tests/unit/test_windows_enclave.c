/* The windows model around production enclaves: every enclave gap shape of
 * docs/pt-sgx-facts.md 4.3-4.4 and every rule of 4.7 that packets, the
 * configuration and the enclave map can check, on traces built with the
 * encoder. */
#include "check.h"
#include "windows_trace.h"

#include <ptscope/model.h>

#include <stdlib.h>
#include <string.h>

#define ENCL_BEGIN 0x7f0000000000ull
#define ENCL_END 0x7f0000100000ull
#define CODE 0x401000ull    /* untrusted code */
#define SITE 0x401050ull    /* the ENCLU of EENTER */
#define AEP 0x401100ull     /* the ENCLU at the AEP (ERESUME) */
#define ELSEWHERE 0x403000ull

static struct pts_enclave encl;

/* User-only tracing (as `perf record -e intel_pt//u`) and one production
 * enclave; @with_map 0 leaves the map out. */
static struct pts_trace_config config(int with_map)
{
	struct pts_trace_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.known = PTS_CFG_CTL;
	cfg.ctl = PTS_CTL_TRACEEN | PTS_CTL_USER | PTS_CTL_BRANCHEN;
	memset(&encl, 0, sizeof(encl));
	encl.begin = ENCL_BEGIN;
	encl.end = ENCL_END;
	encl.kind = PTS_ENCLAVE_PRODUCTION;
	encl.aep = AEP;
	encl.has_aep = 1;
	strcpy(encl.name, "vault");
	if (with_map) {
		cfg.enclaves = &encl;
		cfg.n_enclaves = 1;
	}
	return cfg;
}

/* Header, some flow, then FUP(@at) + TIP.PGD(): the usual gap opening. */
static void open_enclave_gap(struct wtrace *t, uint64_t at)
{
	wt_header(t, 1, CODE);
	wt_tnt(t, 3);
	wt_ip(t, PTS_PKT_TIP, SITE - 0x10);
	wt_tnt(t, 2);
	wt_ip(t, PTS_PKT_FUP, at);
	wt_pgd0(t);
}

static struct wresult res;

static void run(const struct wtrace *t, const struct pts_trace_config *cfg)
{
	CHECK(wt_run(t, cfg, NULL, 0, &res) == 0);
	CHECK_EQ(res.err, 0);
}

static void expect_enclave_gap(int nth, int entry, int exit_, int basis)
{
	const struct pts_win_record *g = wt_find(&res, PTS_REC_GAP, nth);

	CHECKF(g && g->cause == PTS_GAP_ENCLAVE, "gap %d is not an enclave gap",
	       nth);
	if (!g || g->cause != PTS_GAP_ENCLAVE) {
		wt_dump(&res);
		return;
	}
	CHECK_EQ(g->entry, entry);
	CHECK_EQ(g->exit, exit_);
	CHECK_EQ(g->basis, basis);
	CHECK_EQ(g->enclave, 0);
}

/* EENTER then EEXIT back to the instruction after the ENCLU (row 20c, 21b). */
static void test_eexit(void)
{
	struct pts_trace_config cfg = config(1);
	struct wtrace t;

	wt_init(&t);
	open_enclave_gap(&t, SITE);
	wt_ip(&t, PTS_PKT_TIP_PGE, SITE + 3);
	wt_tnt(&t, 2);
	run(&t, &cfg);
	CHECK_EQ(wt_count(&res, PTS_REC_GAP, -1), 1);
	CHECK_EQ(wt_count(&res, PTS_REC_WINDOW, -1), 2);
	expect_enclave_gap(0, PTS_ENCL_EENTER, PTS_ENCL_EEXIT,
			   PTS_BASIS_PATTERN);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);
	CHECK_EQ(res.sum.eenter, 1);
	CHECK_EQ(res.sum.eexit, 1);
}

/* An EEXIT target declared in the map: the basis is the map. */
static void test_eexit_declared(void)
{
	struct pts_trace_config cfg = config(1);
	struct wtrace t;

	encl.eexit[encl.n_eexit++] = ELSEWHERE;
	wt_init(&t);
	open_enclave_gap(&t, SITE);
	wt_ip(&t, PTS_PKT_TIP_PGE, ELSEWHERE);
	run(&t, &cfg);
	expect_enclave_gap(0, PTS_ENCL_EENTER, PTS_ENCL_EEXIT, PTS_BASIS_MAP);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);
}

/* EENTER, AEX to the AEP (row 22b), the kernel runs untraced, ERESUME from
 * the AEP (FUP(AEP) + TIP.PGD()), then EEXIT back to the first site. */
static void test_aex_eresume(void)
{
	struct pts_trace_config cfg = config(1);
	struct wtrace t;

	wt_init(&t);
	open_enclave_gap(&t, SITE);
	wt_ip(&t, PTS_PKT_TIP_PGE, AEP);
	wt_ip(&t, PTS_PKT_FUP, AEP);
	wt_pgd0(&t);
	wt_ip(&t, PTS_PKT_TIP_PGE, SITE + 3);
	wt_tnt(&t, 1);
	run(&t, &cfg);
	CHECK_EQ(wt_count(&res, PTS_REC_GAP, PTS_GAP_ENCLAVE), 2);
	expect_enclave_gap(0, PTS_ENCL_EENTER, PTS_ENCL_AEX, PTS_BASIS_MAP);
	expect_enclave_gap(1, PTS_ENCL_ERESUME, PTS_ENCL_EEXIT, PTS_BASIS_MAP);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);
	CHECK_EQ(res.sum.eenter, 1);
	CHECK_EQ(res.sum.eresume, 1);
	CHECK_EQ(res.sum.aex, 1);
	CHECK_EQ(res.sum.eexit, 1);
}

/* An OVF inside the gap: uncertain, and a violation (4.7 item 5). */
static void test_ovf_in_gap(void)
{
	struct pts_trace_config cfg = config(1);
	const struct pts_win_record *g;
	struct wtrace t;

	wt_init(&t);
	open_enclave_gap(&t, SITE);
	wt_plain(&t, PTS_PKT_OVF);
	wt_ip(&t, PTS_PKT_TIP_PGE, AEP);
	run(&t, &cfg);
	expect_enclave_gap(0, PTS_ENCL_EENTER, PTS_ENCL_AEX, PTS_BASIS_MAP);
	g = wt_find(&res, PTS_REC_GAP, 0);
	CHECK(g && (g->flags & PTS_GAPF_UNCERTAIN) && g->ovfs == 1);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, PTS_RULE_OVF_IN_ENCLAVE_GAP),
		 1);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 1);
}

/* A PSB+ inside the gap carries only timing and CBR: fine (4.4). */
static void test_psb_in_gap(void)
{
	struct pts_trace_config cfg = config(1);
	const struct pts_win_record *g;
	struct wtrace t;

	wt_init(&t);
	open_enclave_gap(&t, SITE);
	wt_header(&t, 0, 0);
	wt_ip(&t, PTS_PKT_TIP_PGE, SITE + 3);
	run(&t, &cfg);
	expect_enclave_gap(0, PTS_ENCL_EENTER, PTS_ENCL_EEXIT,
			   PTS_BASIS_PATTERN);
	g = wt_find(&res, PTS_REC_GAP, 0);
	CHECK(g && g->psbs == 1);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);
}

/* BDM70: a PSB+ right before the TIP.PGE may hold FUP and MODE.Exec; not
 * one with another PSB+ after it: that FUP said tracing was on again, and
 * the PSB+ without FUP then said it was off, with no TIP.PGD between. */
static void test_bdm70_tolerated(void)
{
	struct pts_trace_config cfg = config(1);
	struct wtrace t;

	for (int psbs = 1; psbs <= 2; psbs++) {
		wt_init(&t);
		open_enclave_gap(&t, SITE);
		wt_header(&t, 1, SITE + 3);
		if (psbs == 2)
			wt_header(&t, 0, 0);
		wt_ip(&t, PTS_PKT_TIP_PGE, SITE + 3);
		run(&t, &cfg);
		expect_enclave_gap(0, PTS_ENCL_EENTER, PTS_ENCL_EEXIT,
				   PTS_BASIS_PATTERN);
		CHECK_EQ(wt_find(&res, PTS_REC_GAP, 0)->end.edge,
			 psbs == 1 ? PTS_EDGE_PGE : PTS_EDGE_PSB_FUP);
		CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), psbs - 1);
		CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION,
				  PTS_RULE_UNEXPLAINED_GAP), psbs - 1);
	}
}

/* A PSB+ with FUP and no TIP.PGE after it: tracing was back on (the PGE
 * was lost); not an error (4.7 item 6). */
static void test_psb_fup_reenables(void)
{
	struct pts_trace_config cfg = config(1);
	struct wtrace t;

	wt_init(&t);
	open_enclave_gap(&t, SITE);
	wt_header(&t, 1, SITE + 3);
	wt_tnt(&t, 4);
	run(&t, &cfg);
	expect_enclave_gap(0, PTS_ENCL_EENTER, PTS_ENCL_EEXIT,
			   PTS_BASIS_PATTERN);
	CHECK_EQ(wt_find(&res, PTS_REC_GAP, 0)->end.edge, PTS_EDGE_PSB_FUP);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);
}

/* An enclave IP in a TIP and in a PSB+ FUP: leaks, whatever the state. */
static void test_leak(void)
{
	struct pts_trace_config cfg = config(1);
	const struct pts_win_record *v;
	struct wtrace t;

	wt_init(&t);
	wt_header(&t, 1, CODE);
	wt_ip(&t, PTS_PKT_TIP, ENCL_BEGIN + 0x100);
	wt_header(&t, 1, ENCL_BEGIN + 0x200);
	wt_tnt(&t, 1);
	run(&t, &cfg);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, PTS_RULE_ENCLAVE_IP_LEAK), 2);
	v = wt_find(&res, PTS_REC_VIOLATION, 0);
	CHECK(v && v->begin.has_ip && v->begin.ip == ENCL_BEGIN + 0x100);
	CHECK(v && strstr(v->detail, "vault"));
}

/* With the rules off (pts_win_set_verify(m, 0), `windows` without
 * --verify), a trace with leaks and flow in an enclave gap gives no
 * violation, counts none, and the same windows and gaps. */
static void test_unverified(void)
{
	struct pts_trace_config cfg = config(1);
	static struct wresult off;
	struct wtrace t;

	wt_init(&t);
	wt_header(&t, 1, CODE);
	wt_ip(&t, PTS_PKT_TIP, ENCL_BEGIN + 0x100);
	open_enclave_gap(&t, SITE);
	wt_tnt(&t, 2);
	wt_ip(&t, PTS_PKT_TIP_PGE, AEP);
	run(&t, &cfg);
	CHECK(wt_run_unverified(&t, &cfg, &off) == 0);
	CHECK_EQ(off.err, 0);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 2);
	CHECK_EQ(wt_count(&off, PTS_REC_VIOLATION, -1), 0);
	for (int r = 0; r < PTS_RULE_COUNT; r++)
		CHECK_EQ(off.sum.violations[r], 0);
	CHECK_EQ(off.n, res.n - 2);
	for (int i = 0, j = 0; i < res.n && j < off.n; i++) {
		if (res.recs[i].type == PTS_REC_VIOLATION)
			continue;
		CHECKF(!memcmp(&res.recs[i], &off.recs[j], sizeof(off.recs[j])),
		       "record %d differs without the rules", i);
		j++;
	}
	CHECK_EQ(off.sum.gaps[PTS_GAP_ENCLAVE], res.sum.gaps[PTS_GAP_ENCLAVE]);
	CHECK_EQ(off.sum.windows, res.sum.windows);
}

/* A debug enclave is traced normally: its IPs are no leak (36.2.8.3). */
static void test_debug_enclave_no_leak(void)
{
	struct pts_trace_config cfg = config(1);
	struct wtrace t;

	encl.kind = PTS_ENCLAVE_DEBUG;
	wt_init(&t);
	wt_header(&t, 1, CODE);
	wt_ip(&t, PTS_PKT_TIP, ENCL_BEGIN + 0x100);
	run(&t, &cfg);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);
}

/* A TNT inside the gap: flow in a production-enclave gap (4.7 item 2). */
static void test_tnt_in_gap(void)
{
	/* MWAIT needs ContextEn too (digest 4.2, 3.6) */
	static const int kinds[] = {PTS_PKT_TNT8, PTS_PKT_MWAIT};
	struct pts_trace_config cfg = config(1);
	struct wtrace t;

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		wt_init(&t);
		open_enclave_gap(&t, SITE);
		if (kinds[k] == PTS_PKT_TNT8)
			wt_tnt(&t, 2);
		else
			wt_plain(&t, kinds[k]);
		wt_ip(&t, PTS_PKT_TIP_PGE, AEP);
		run(&t, &cfg);
		expect_enclave_gap(0, PTS_ENCL_EENTER, PTS_ENCL_AEX,
				   PTS_BASIS_MAP);
		CHECKF(wt_count(&res, PTS_REC_VIOLATION,
				PTS_RULE_FLOW_IN_ENCLAVE_GAP) == 1,
		       "%s in the gap", pts_pkt_kind_name(kinds[k]));
		CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 1);
	}
}

/* ERESUME from the AEP, back at neither the AEP nor an EEXIT target. */
static void test_wrong_exit(void)
{
	struct pts_trace_config cfg = config(1);
	struct wtrace t;

	wt_init(&t);
	open_enclave_gap(&t, AEP);
	wt_ip(&t, PTS_PKT_TIP_PGE, ELSEWHERE);
	run(&t, &cfg);
	expect_enclave_gap(0, PTS_ENCL_ERESUME, PTS_ENCL_UNKNOWN,
			   PTS_BASIS_MAP);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION,
			  PTS_RULE_ENCLAVE_EXIT_UNEXPECTED), 1);
}

/* The trace ends inside the enclave. */
static void test_trailing(void)
{
	struct pts_trace_config cfg = config(1);
	const struct pts_win_record *g;
	struct wtrace t;

	wt_init(&t);
	open_enclave_gap(&t, AEP);
	wt_mtc(&t, 3);
	run(&t, &cfg);
	expect_enclave_gap(0, PTS_ENCL_ERESUME, PTS_ENCL_NONE, PTS_BASIS_MAP);
	g = wt_find(&res, PTS_REC_GAP, 0);
	CHECK(g && (g->flags & PTS_GAPF_TRAILING) && g->end.offset == t.len);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);
}

/* The trace ends right after an EENTER: at a site seen entering before it
 * is an enclave gap; at a new site, CPL or enclave, only the code tells. */
static void test_trailing_entry(void)
{
	struct pts_trace_config cfg = config(1);
	const struct pts_win_record *g;
	struct wtrace t;

	wt_init(&t);
	open_enclave_gap(&t, SITE);
	wt_ip(&t, PTS_PKT_TIP_PGE, SITE + 3);
	wt_ip(&t, PTS_PKT_FUP, SITE);
	wt_pgd0(&t);
	run(&t, &cfg);
	expect_enclave_gap(1, PTS_ENCL_EENTER, PTS_ENCL_NONE,
			   PTS_BASIS_PATTERN);
	wt_init(&t);
	open_enclave_gap(&t, SITE);
	run(&t, &cfg);
	g = wt_find(&res, PTS_REC_GAP, 0);
	CHECK(g && g->cause == PTS_GAP_NEEDS_IMAGES &&
	      g->candidates == ((1u << PTS_GAP_ENCLAVE) | (1u << PTS_GAP_CPL)));
}

/* Without a map, an EEXIT-shaped gap could be an enclave call or an
 * exception that skipped 3 bytes: only the code at the FUP tells. */
static void test_no_map_needs_images(void)
{
	struct pts_trace_config cfg = config(0);
	const struct pts_win_record *g;
	struct wtrace t;

	wt_init(&t);
	open_enclave_gap(&t, SITE);
	wt_ip(&t, PTS_PKT_TIP_PGE, SITE + 3);
	run(&t, &cfg);
	g = wt_find(&res, PTS_REC_GAP, 0);
	CHECK(g && g->cause == PTS_GAP_NEEDS_IMAGES);
	CHECK(g && g->candidates == ((1u << PTS_GAP_ENCLAVE) |
				     (1u << PTS_GAP_CPL)));
}

/* The same with the flow decoder's word that the FUP is at an ENCLU. */
static void test_evidence_enclu(void)
{
	struct pts_trace_config cfg = config(0);
	struct pts_win_evidence ev = {PTS_EV_DISABLE_INSN, PTS_EV_INSN_ENCLU,
				      0, SITE};
	struct wtrace t;
	size_t pgd;

	wt_init(&t);
	open_enclave_gap(&t, SITE);
	pgd = t.len - 1;
	wt_ip(&t, PTS_PKT_TIP_PGE, SITE + 3);
	CHECK(wt_run(&t, &cfg, &ev, pgd, &res) == 0);
	CHECK_EQ(res.err, 0);
	CHECK_EQ(res.sum.packets_only, 0);
	CHECK(wt_find(&res, PTS_REC_GAP, 0) &&
	      wt_find(&res, PTS_REC_GAP, 0)->cause == PTS_GAP_ENCLAVE &&
	      wt_find(&res, PTS_REC_GAP, 0)->basis == PTS_BASIS_EVIDENCE);
}

/* Shaped like an AEX (PGE at the AEP) but the code at the FUP is no ENCLU:
 * the map and the code disagree (4.7 item 1). */
static void test_entry_not_enclu(void)
{
	struct pts_trace_config cfg = config(1);
	struct pts_win_evidence ev = {PTS_EV_DISABLE_INSN, PTS_EV_INSN_OTHER,
				      0, SITE};
	struct wtrace t;
	size_t pgd;

	wt_init(&t);
	open_enclave_gap(&t, SITE);
	pgd = t.len - 1;
	wt_ip(&t, PTS_PKT_TIP_PGE, AEP);
	CHECK(wt_run(&t, &cfg, &ev, pgd, &res) == 0);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, PTS_RULE_ENTRY_NOT_ENCLU),
		 1);
	CHECK(wt_find(&res, PTS_REC_GAP, 0) &&
	      wt_find(&res, PTS_REC_GAP, 0)->cause == PTS_GAP_CPL);
}

/* An interrupt that returns to the IP where it stopped is no enclave call,
 * even at the ENCLU of an EENTER (before it ran) or at an EEXIT target
 * seen before (with the code: not an ENCLU there, and no entry-not-enclu
 * either). An enclave is left at the EEXIT target or the AEP. */
static void test_interrupt_resumes_at_fup(void)
{
	struct pts_trace_config cfg = config(1);
	struct pts_win_evidence ev = {PTS_EV_DISABLE_INSN, PTS_EV_INSN_OTHER,
				      0, SITE + 3};
	struct wtrace t;
	size_t pgd;

	wt_init(&t);
	open_enclave_gap(&t, SITE);
	wt_ip(&t, PTS_PKT_TIP_PGE, SITE + 3);
	wt_tnt(&t, 1);
	wt_ip(&t, PTS_PKT_FUP, SITE); /* at the ENCLU, before EENTER */
	wt_pgd0(&t);
	wt_ip(&t, PTS_PKT_TIP_PGE, SITE);
	wt_tnt(&t, 1);
	wt_ip(&t, PTS_PKT_FUP, SITE + 3); /* at the EEXIT target */
	wt_pgd0(&t);
	pgd = t.len - 1;
	wt_ip(&t, PTS_PKT_TIP_PGE, SITE + 3);
	wt_tnt(&t, 1);
	for (int with_code = 0; with_code < 2; with_code++) {
		CHECK(wt_run(&t, &cfg, with_code ? &ev : NULL, pgd, &res) ==
		      0);
		CHECK_EQ(wt_count(&res, PTS_REC_GAP, -1), 3);
		expect_enclave_gap(0, PTS_ENCL_EENTER, PTS_ENCL_EEXIT,
				   PTS_BASIS_PATTERN);
		CHECK_EQ(wt_count(&res, PTS_REC_GAP, PTS_GAP_CPL), 2);
		CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);
		CHECK_EQ(res.sum.eenter, 1);
		CHECK_EQ(res.sum.eexit, 1);
	}
}

/* A compressed RET with an empty stack, as the flow decoder reports it. */
static void test_retstack_empty(void)
{
	struct pts_trace_config cfg = config(1);
	struct pts_win_evidence ev = {PTS_EV_RETSTACK_EMPTY, 0, 0, CODE + 8};
	struct wtrace t;

	wt_init(&t);
	wt_header(&t, 1, CODE);
	wt_tnt(&t, 1);
	CHECK(wt_run(&t, &cfg, &ev, t.len - 1, &res) == 0);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, PTS_RULE_RETSTACK_EMPTY), 1);
}

static void test_enclave_parse(void)
{
	struct pts_enclave e;

	CHECK_EQ(pts_enclave_parse("0x1000-0x2000:production,aep=0x401100,"
				   "eexit=0x401105,name=vault",
				   &e),
		 0);
	CHECK_EQ(e.begin, 0x1000);
	CHECK_EQ(e.end, 0x2000);
	CHECK_EQ(e.kind, PTS_ENCLAVE_PRODUCTION);
	CHECK(e.has_aep && e.aep == 0x401100);
	CHECK(e.n_eexit == 1 && e.eexit[0] == 0x401105);
	CHECK(strcmp(e.name, "vault") == 0);
	CHECK_EQ(pts_enclave_parse("4096-8192:debug", &e), 0);
	CHECK_EQ(e.kind, PTS_ENCLAVE_DEBUG);
	CHECK(pts_enclave_parse("0x2000-0x1000:debug", &e) < 0);
	CHECK(pts_enclave_parse("0x1000-0x2000:secret", &e) < 0);
	CHECK(pts_enclave_parse("0x1000-0x2000:debug,aep=", &e) < 0);
	CHECK(pts_enclave_parse("0x1000:debug", &e) < 0);
	CHECK(pts_enclave_parse("0x1000-0x2000:debug,color=red", &e) < 0);
	/* entry= (OENTRY) is checked and left out, as configurations do */
	CHECK_EQ(pts_enclave_parse("0x1000-0x2000:debug,entry=0x1010", &e), 0);
	CHECK(pts_enclave_parse("0x1000-0x2000:debug,entry=x", &e) < 0);
}

/* Each fault of a spec has its reason (one parser for every --enclave and
 * the configuration file's lines). */
static void test_enclave_spec_reasons(void)
{
	struct pts_enclave e;
	uint64_t entry = 1;
	const char *why = "unset";

	CHECK_EQ(pts_enclave_parse_spec("0x1000-0x2000:debug,entry=0x1010",
					NULL, &e, &entry, &why),
		 0);
	CHECK(why == NULL && entry == 0x1010);
	static const char *const reasons[][2] = {
		{"0x2000-0x1000:debug", "END is not above BEGIN"},
		{"0x1000-0x2000:secret", "the kind is production or debug"},
		{"0x1000:debug", "no number BEGIN before the '-'"},
		/* the kind left out: END is there (it said "no number END") */
		{"0x1000-0x2000", "no ':production' or ':debug' after END"},
		{"0x1000-:debug", "no number END before the ':'"},
		{"0x1000-0x2000:debug,aep=", "aep= takes an address"},
		{"0x1000-0x2000:debug,name=", "name= takes 1 to 31 characters"},
		/* the second one replaced the first without a word */
		{"0x1000-0x2000:debug,aep=1,aep=2",
		 "aep= given twice (one AEP per enclave)"},
		{"0x1000-0x2000:debug,name=a,name=b", "name= given twice"},
		{"0x1000-0x2000:debug,eexit=1,eexit=2,eexit=3,eexit=4,eexit=5",
		 "too many eexit= targets"},
		{"0x1000-0x2000:debug,c=r",
		 "an unknown option (aep=, eexit=, entry=, name=)"},
	};
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
		why = NULL;
		CHECK(pts_enclave_parse_spec(reasons[i][0], NULL, &e, NULL,
					     &why) < 0);
		CHECKF(why && strcmp(why, reasons[i][1]) == 0, "%s: %s",
		       reasons[i][0], why ? why : "(accepted)");
	}
}

/* A reader of numbers and names, as `synth` reads its image's symbols. */
static int read_name(void *ctx, const char *text, uint64_t *v)
{
	char *end;

	(void)ctx;
	if (text[0] >= '0' && text[0] <= '9') {
		*v = strtoull(text, &end, 0);
		return *end ? -1 : 0;
	}
	if (strcmp(text, "enclave_begin") == 0)
		*v = 0x500000;
	else if (strcmp(text, "enclave_end") == 0)
		*v = 0x501000;
	else if (strcmp(text, "aep") == 0)
		*v = 0x400138;
	else
		return -1;
	return 0;
}

static void test_enclave_spec_reader(void)
{
	const struct pts_enclave_addr_reader rd = {read_name, NULL};
	struct pts_enclave e;
	uint64_t entry = 0;
	const char *why;

	CHECK_EQ(pts_enclave_parse_spec("enclave_begin-enclave_end:production,"
					"aep=aep,entry=enclave_begin",
					&rd, &e, &entry, &why),
		 0);
	CHECK(e.begin == 0x500000 && e.end == 0x501000);
	CHECK(e.has_aep && e.aep == 0x400138 && entry == 0x500000);
	CHECK(pts_enclave_parse_spec("enclave_begin-nosuch:debug", &rd, &e,
				     NULL, &why) < 0);
	CHECK(why && strcmp(why, "no address or SYMBOL[+OFFSET] END before "
				 "the ':'") == 0);
	CHECK(pts_enclave_parse_spec("0x500000-0x501000:debug,aep=nosuch",
				     &rd, &e, NULL, &why) < 0);
	CHECK(why && strcmp(why, "aep= takes an address or SYMBOL") == 0);
	/* without a reader, names are no addresses */
	CHECK(pts_enclave_parse_spec("enclave_begin-enclave_end:debug", NULL,
				     &e, NULL, &why) < 0);
}

/* The configuration adds what it parses, and says why it refuses. */
static void test_enclave_spec_add(void)
{
	struct pts_config cfg;
	const char *why;

	pts_config_init(&cfg);
	CHECK_EQ(pts_config_add_enclave_spec(&cfg,
					     "0x1000-0x2000:production,"
					     "entry=0x1010",
					     NULL, &why),
		 0);
	CHECK(cfg.n_enclaves == 1 && cfg.enclave_entry[0] == 0x1010);
	CHECK_EQ(pts_config_add_enclave_spec(&cfg, "0x1800-0x3000:debug",
					     NULL, &why),
		 -PTS_ERR_BAD_CONFIG);
	CHECK(why && strcmp(why, "it overlaps an enclave given before") == 0);
	CHECK(pts_config_add_enclave_spec(&cfg, "0x3000:debug", NULL, &why) <
	      0);
	CHECK_EQ(cfg.n_enclaves, 1);
	pts_config_fini(&cfg);
}

int main(void)
{
	test_eexit();
	test_eexit_declared();
	test_aex_eresume();
	test_ovf_in_gap();
	test_psb_in_gap();
	test_bdm70_tolerated();
	test_psb_fup_reenables();
	test_leak();
	test_debug_enclave_no_leak();
	test_tnt_in_gap();
	test_unverified();
	test_wrong_exit();
	test_trailing();
	test_trailing_entry();
	test_no_map_needs_images();
	test_evidence_enclu();
	test_entry_not_enclu();
	test_interrupt_resumes_at_fup();
	test_retstack_empty();
	test_enclave_parse();
	test_enclave_spec_reasons();
	test_enclave_spec_reader();
	test_enclave_spec_add();
	return pts_check_exit();
}
