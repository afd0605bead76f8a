/* The windows model's rules added last, through its public API on traces
 * built with the encoder and the flow decoder's evidence given by hand:
 * the AEX event rule (docs/pt-sgx-facts.md 4.3 "What follows an AEX"), the
 * ENCLU rule (4.7 item 1: an ENCLU at the FUP is not an entry by itself),
 * PTS_EV_ENABLE_INSN (an ENCLU where tracing resumed is an AEP) and
 * PTS_EV_INSN_NEAR_BRANCH (only FilterEn drops at a near branch). */
#include "check.h"
#include "windows_trace.h"

#include <string.h>

#define ENCL_BEGIN 0x7f0000000000ull
#define ENCL_END 0x7f0000100000ull
#define CODE 0x401000ull /* untrusted code */
#define SITE 0x401050ull /* the ENCLU of EENTER */
#define AEP 0x401100ull  /* the ENCLU at the AEP (ERESUME) */
#define AEP2 0x402000ull /* an AEP the map does not declare */
#define ELSEWHERE 0x403000ull

static struct pts_enclave encl;
static struct wresult res;

/* User-only tracing and, with @with_map, one production enclave whose AEP
 * is AEP. */
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
	if (with_map) {
		cfg.enclaves = &encl;
		cfg.n_enclaves = 1;
	}
	return cfg;
}

/* Evidence to give after the packet at a stream offset. */
struct ev_at {
	uint64_t after;
	struct pts_win_evidence ev;
};

#define MAX_EV 8

struct evlist {
	struct ev_at e[MAX_EV];
	int n;
};

static void add_ev(struct evlist *l, uint64_t after, int kind, int insn,
		   uint64_t ip)
{
	CHECK(l->n < MAX_EV);
	if (l->n >= MAX_EV)
		return;
	memset(&l->e[l->n], 0, sizeof(l->e[l->n]));
	l->e[l->n].after = after;
	l->e[l->n].ev.kind = (uint8_t)kind;
	l->e[l->n].ev.insn_class = (uint8_t)insn;
	l->e[l->n].ev.offset = after;
	l->e[l->n].ev.ip = ip;
	l->n++;
}

static void keep(struct pts_win_model *m, int err)
{
	struct pts_win_record rec;

	if (err < 0 && !res.err)
		res.err = err;
	while (pts_win_next(m, &rec) == 1)
		if (res.n < WT_MAX_RECS)
			res.recs[res.n++] = rec;
}

/* wt_run with any number of pieces of evidence, each given right after the
 * packet it names (in order). The traces here have no decode errors. */
static void run(const struct wtrace *t, const struct pts_trace_config *cfg,
		const struct evlist *evs)
{
	struct pts_pkt_decoder *dec = pts_pkt_decoder_new(NULL);
	struct pts_win_model *m = pts_win_new(cfg);
	struct pts_input in = {t->buf, t->len, 0};
	struct pts_packet pkt;
	int n, ended = 0;

	memset(&res, 0, sizeof(res));
	CHECK(dec && m && !t->failed);
	if (!dec || !m || t->failed)
		goto out;
	for (;;) {
		n = pts_pkt_next(dec, &in, &pkt);
		if (n > 0) {
			keep(m, pts_win_feed(m, &pkt));
			for (int i = 0; evs && i < evs->n; i++)
				if (evs->e[i].after == pkt.offset)
					keep(m, pts_win_evidence(m, &evs->e[i].ev));
			continue;
		}
		if (n == -PTS_ERR_AGAIN && !ended) {
			pts_pkt_end(dec);
			ended = 1;
			continue;
		}
		CHECKF(n == -PTS_ERR_EOS || n == -PTS_ERR_AGAIN,
		       "packet decoder: %d", n);
		break;
	}
	keep(m, pts_win_end(m, t->len));
	pts_win_summary(m, &res.sum);
out:
	CHECK_EQ(res.err, 0);
	pts_win_free(m);
	pts_pkt_decoder_free(dec);
}

/* Header, some flow, then FUP(@at) + TIP.PGD(); returns the TIP.PGD's
 * offset. */
static uint64_t open_gap(struct wtrace *t, uint64_t at)
{
	wt_header(t, 1, CODE);
	wt_tnt(t, 3);
	wt_ip(t, PTS_PKT_TIP, SITE - 0x10);
	wt_tnt(t, 2);
	wt_ip(t, PTS_PKT_FUP, at);
	wt_pgd0(t);
	return t->len - 1;
}

/* FUP(@at) + TIP.PGD() inside a window; returns the TIP.PGD's offset. */
static uint64_t fup_pgd(struct wtrace *t, uint64_t at)
{
	wt_ip(t, PTS_PKT_FUP, at);
	wt_pgd0(t);
	return t->len - 1;
}

static void expect_gap(int nth, int cause, int basis, int entry, int exit_)
{
	const struct pts_win_record *g = wt_find(&res, PTS_REC_GAP, nth);

	CHECKF(g != NULL, "no gap %d", nth);
	if (!g) {
		wt_dump(&res);
		return;
	}
	CHECKF(g->cause == cause && g->basis == basis && g->entry == entry &&
		       g->exit == exit_,
	       "gap %d: %s [%s] %s/%s, want %s [%s] %s/%s", nth,
	       pts_gap_cause_name(g->cause), pts_gap_basis_name(g->basis),
	       pts_enclave_edge_name(g->entry), pts_enclave_edge_name(g->exit),
	       pts_gap_cause_name(cause), pts_gap_basis_name(basis),
	       pts_enclave_edge_name(entry), pts_enclave_edge_name(exit_));
	if (g->cause != cause || g->entry != entry || g->exit != exit_)
		wt_dump(&res);
}

static void expect_counts(uint64_t eenter, uint64_t eresume, uint64_t eexit,
			  uint64_t aex)
{
	CHECK_EQ(res.sum.eenter, eenter);
	CHECK_EQ(res.sum.eresume, eresume);
	CHECK_EQ(res.sum.eexit, eexit);
	CHECK_EQ(res.sum.aex, aex);
}

/* ---- (a) the AEX event rule ------------------------------------------- */

/* EENTER, AEX to the AEP, FUP(AEP) + TIP.PGD() and back at the AEP twice,
 * EEXIT. */
static void aex_twice(struct wtrace *t)
{
	wt_init(t);
	open_gap(t, SITE);
	wt_ip(t, PTS_PKT_TIP_PGE, AEP);
	fup_pgd(t, AEP);
	wt_ip(t, PTS_PKT_TIP_PGE, AEP);
	fup_pgd(t, AEP);
	wt_ip(t, PTS_PKT_TIP_PGE, SITE + 3);
	wt_tnt(t, 1);
}

/* EENTER, AEX to the AEP, the event delivered from the AEP into ring 0
 * (FUP(AEP) + TIP.PGD(), nothing in between), the IRET back to the AEP,
 * ERESUME (FUP(AEP) + TIP.PGD()), EEXIT: user-only, the delivery is a cpl
 * gap. With the kernel traced (OS=1, no filter) an event delivered from
 * the AEP shows as FUP(AEP) + TIP(handler), never a TIP.PGD (4.7 item 4):
 * the same packets are two ERESUMEs, each after an AEX. With an IP filter
 * too, the handler may be outside it: the delivery again. */
static void test_aex_event(void)
{
	static const struct {
		uint64_t ctl;
		int filter, cause, basis, entry, exit_;
		uint64_t n; /* ERESUMEs and AEXs */
	} cases[] = {
		{0, 0, PTS_GAP_CPL, PTS_BASIS_CONFIG, PTS_ENCL_NONE,
		 PTS_ENCL_NONE, 1},
		{PTS_CTL_OS, 0, PTS_GAP_ENCLAVE, PTS_BASIS_MAP,
		 PTS_ENCL_ERESUME, PTS_ENCL_AEX, 2},
		{PTS_CTL_OS, 1, PTS_GAP_DISABLED, PTS_BASIS_CONFIG,
		 PTS_ENCL_NONE, PTS_ENCL_NONE, 1},
	};
	struct wtrace t;

	aex_twice(&t);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pts_trace_config cfg = config(1);

		cfg.ctl |= cases[i].ctl;
		if (cases[i].filter) {
			cfg.ctl |= (uint64_t)PTS_ADDR_FILTER
				   << PTS_CTL_ADDR_CFG_SHIFT(0);
			cfg.addr_a[0] = CODE;
			cfg.addr_b[0] = ELSEWHERE;
		}
		run(&t, &cfg, NULL);
		CHECK_EQ(wt_count(&res, PTS_REC_GAP, -1), 3);
		expect_gap(0, PTS_GAP_ENCLAVE, PTS_BASIS_MAP, PTS_ENCL_EENTER,
			   PTS_ENCL_AEX);
		expect_gap(1, cases[i].cause, cases[i].basis, cases[i].entry,
			   cases[i].exit_);
		expect_gap(2, PTS_GAP_ENCLAVE, PTS_BASIS_MAP, PTS_ENCL_ERESUME,
			   PTS_ENCL_EEXIT);
		CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);
		expect_counts(1, cases[i].n, 1, cases[i].n);
	}
}

/* Only the first gap after an AEX can be the event: after it, a gap from
 * the AEP back to the AEP is an ERESUME and a second AEX, and so on. */
static void test_aex_event_once(void)
{
	struct pts_trace_config cfg = config(1);
	struct wtrace t;

	wt_init(&t);
	open_gap(&t, SITE);
	wt_ip(&t, PTS_PKT_TIP_PGE, AEP); /* AEX */
	fup_pgd(&t, AEP);                /* event */
	wt_ip(&t, PTS_PKT_TIP_PGE, AEP); /* IRET */
	fup_pgd(&t, AEP);                /* ERESUME */
	wt_ip(&t, PTS_PKT_TIP_PGE, AEP); /* AEX */
	fup_pgd(&t, AEP);                /* event */
	wt_ip(&t, PTS_PKT_TIP_PGE, AEP); /* IRET */
	fup_pgd(&t, AEP);                /* ERESUME */
	wt_ip(&t, PTS_PKT_TIP_PGE, SITE + 3); /* EEXIT */
	run(&t, &cfg, NULL);
	CHECK_EQ(wt_count(&res, PTS_REC_GAP, PTS_GAP_ENCLAVE), 3);
	CHECK_EQ(wt_count(&res, PTS_REC_GAP, PTS_GAP_CPL), 2);
	expect_gap(0, PTS_GAP_ENCLAVE, PTS_BASIS_MAP, PTS_ENCL_EENTER,
		   PTS_ENCL_AEX);
	expect_gap(1, PTS_GAP_CPL, PTS_BASIS_CONFIG, PTS_ENCL_NONE,
		   PTS_ENCL_NONE);
	expect_gap(2, PTS_GAP_ENCLAVE, PTS_BASIS_MAP, PTS_ENCL_ERESUME,
		   PTS_ENCL_AEX);
	expect_gap(3, PTS_GAP_CPL, PTS_BASIS_CONFIG, PTS_ENCL_NONE,
		   PTS_ENCL_NONE);
	expect_gap(4, PTS_GAP_ENCLAVE, PTS_BASIS_MAP, PTS_ENCL_ERESUME,
		   PTS_ENCL_EEXIT);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);
	expect_counts(1, 2, 1, 2);
}

/* Something in between (a TIP: code ran at the AEP) or a gap that does
 * not come back to the AEP: not the event's delivery. */
static void test_aex_not_event(void)
{
	struct pts_trace_config cfg = config(1);
	struct wtrace t;

	/* No delivery packets: the FUP(AEP) is the ERESUME, the EEXIT ends
	 * it. */
	wt_init(&t);
	open_gap(&t, SITE);
	wt_ip(&t, PTS_PKT_TIP_PGE, AEP);
	fup_pgd(&t, AEP);
	wt_ip(&t, PTS_PKT_TIP_PGE, SITE + 3);
	run(&t, &cfg, NULL);
	CHECK_EQ(wt_count(&res, PTS_REC_GAP, -1), 2);
	expect_gap(1, PTS_GAP_ENCLAVE, PTS_BASIS_MAP, PTS_ENCL_ERESUME,
		   PTS_ENCL_EEXIT);
	expect_counts(1, 1, 1, 1);

	/* A TIP inside the window after the AEX: back at the AEP is then an
	 * ERESUME and another AEX. */
	wt_init(&t);
	open_gap(&t, SITE);
	wt_ip(&t, PTS_PKT_TIP_PGE, AEP);
	wt_ip(&t, PTS_PKT_TIP, AEP);
	fup_pgd(&t, AEP);
	wt_ip(&t, PTS_PKT_TIP_PGE, AEP);
	run(&t, &cfg, NULL);
	CHECK_EQ(wt_count(&res, PTS_REC_GAP, PTS_GAP_ENCLAVE), 2);
	expect_gap(1, PTS_GAP_ENCLAVE, PTS_BASIS_MAP, PTS_ENCL_ERESUME,
		   PTS_ENCL_AEX);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);
	expect_counts(1, 1, 0, 2);
}

/* ---- (b) the ENCLU rule ------------------------------------------------ */

/* No map, no enclave declared: an ENCLU at the FUP of a gap that ends
 * neither after it nor at an ENCLU is an interrupt at that ENCLU (tracing
 * stopped before it ran), not an enclave entry. */
static void test_enclu_alone_not_entry(void)
{
	struct pts_trace_config cfg = config(0);
	struct evlist evs = {.n = 0};
	struct wtrace t;
	uint64_t pgd;

	wt_init(&t);
	pgd = open_gap(&t, SITE);
	wt_ip(&t, PTS_PKT_TIP_PGE, ELSEWHERE);
	add_ev(&evs, pgd, PTS_EV_DISABLE_INSN, PTS_EV_INSN_ENCLU, SITE);
	run(&t, &cfg, &evs);
	CHECK_EQ(wt_count(&res, PTS_REC_GAP, -1), 1);
	expect_gap(0, PTS_GAP_CPL, PTS_BASIS_EVIDENCE, PTS_ENCL_NONE,
		   PTS_ENCL_NONE);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);
	CHECK_EQ(res.sum.packets_only, 0);
	expect_counts(0, 0, 0, 0);

	/* Resumed at that very ENCLU, even with an ENCLU there: the shape
	 * of an interrupt; only a known AEP may be left and landed on. */
	wt_init(&t);
	pgd = open_gap(&t, SITE);
	wt_ip(&t, PTS_PKT_TIP_PGE, SITE);
	evs.n = 0;
	add_ev(&evs, pgd, PTS_EV_DISABLE_INSN, PTS_EV_INSN_ENCLU, SITE);
	add_ev(&evs, pgd, PTS_EV_ENABLE_INSN, PTS_EV_INSN_ENCLU, SITE);
	run(&t, &cfg, &evs);
	expect_gap(0, PTS_GAP_CPL, PTS_BASIS_EVIDENCE, PTS_ENCL_NONE,
		   PTS_ENCL_NONE);
	expect_counts(0, 0, 0, 0);
}

/* The same ENCLU with something that agrees: a production enclave
 * declared, an EEXIT-shaped exit, or the map's AEP. */
static void test_enclu_with_agreement(void)
{
	struct pts_trace_config cfg;
	struct evlist evs = {.n = 0};
	struct wtrace t;
	uint64_t pgd;

	/* A production enclave is declared (its AEP elsewhere): the entry
	 * is believed, the exit is not understood. */
	cfg = config(1);
	wt_init(&t);
	pgd = open_gap(&t, SITE);
	wt_ip(&t, PTS_PKT_TIP_PGE, ELSEWHERE);
	add_ev(&evs, pgd, PTS_EV_DISABLE_INSN, PTS_EV_INSN_ENCLU, SITE);
	run(&t, &cfg, &evs);
	expect_gap(0, PTS_GAP_ENCLAVE, PTS_BASIS_EVIDENCE, PTS_ENCL_EENTER,
		   PTS_ENCL_UNKNOWN);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION,
			  PTS_RULE_ENCLAVE_EXIT_UNEXPECTED), 1);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 1);
	expect_counts(1, 0, 0, 0);

	/* No map, EEXIT-shaped (back after the ENCLU). */
	cfg = config(0);
	wt_init(&t);
	pgd = open_gap(&t, SITE);
	wt_ip(&t, PTS_PKT_TIP_PGE, SITE + 3);
	evs.n = 0;
	add_ev(&evs, pgd, PTS_EV_DISABLE_INSN, PTS_EV_INSN_ENCLU, SITE);
	run(&t, &cfg, &evs);
	expect_gap(0, PTS_GAP_ENCLAVE, PTS_BASIS_EVIDENCE, PTS_ENCL_EENTER,
		   PTS_ENCL_EEXIT);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);
	expect_counts(1, 0, 1, 0);

	/* The map's AEP at the FUP: an ERESUME (the code agrees), and an
	 * AEX back to it. */
	cfg = config(1);
	wt_init(&t);
	pgd = open_gap(&t, AEP);
	wt_ip(&t, PTS_PKT_TIP_PGE, AEP);
	evs.n = 0;
	add_ev(&evs, pgd, PTS_EV_DISABLE_INSN, PTS_EV_INSN_ENCLU, AEP);
	run(&t, &cfg, &evs);
	expect_gap(0, PTS_GAP_ENCLAVE, PTS_BASIS_EVIDENCE, PTS_ENCL_ERESUME,
		   PTS_ENCL_AEX);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);
	expect_counts(0, 1, 0, 1);
}

/* ---- (c) PTS_EV_ENABLE_INSN ------------------------------------------- */

/* No map: EENTER at SITE, tracing resumes at AEP2 where the code has an
 * ENCLU: an AEX to an AEP learned from the code. The event is delivered
 * there (cpl), and the later FUP(AEP2) + TIP.PGD() at that ENCLU is an
 * ERESUME, back at the EEXIT target of SITE. */
static void test_enable_enclu_learns_aep(void)
{
	struct pts_trace_config cfg = config(0);
	struct evlist evs = {.n = 0};
	struct wtrace t;
	uint64_t pgd;

	wt_init(&t);
	pgd = open_gap(&t, SITE);
	add_ev(&evs, pgd, PTS_EV_DISABLE_INSN, PTS_EV_INSN_ENCLU, SITE);
	add_ev(&evs, pgd, PTS_EV_ENABLE_INSN, PTS_EV_INSN_ENCLU, AEP2);
	wt_ip(&t, PTS_PKT_TIP_PGE, AEP2); /* AEX */
	pgd = fup_pgd(&t, AEP2);          /* event */
	add_ev(&evs, pgd, PTS_EV_DISABLE_INSN, PTS_EV_INSN_ENCLU, AEP2);
	add_ev(&evs, pgd, PTS_EV_ENABLE_INSN, PTS_EV_INSN_ENCLU, AEP2);
	wt_ip(&t, PTS_PKT_TIP_PGE, AEP2); /* IRET */
	pgd = fup_pgd(&t, AEP2);          /* ERESUME */
	add_ev(&evs, pgd, PTS_EV_DISABLE_INSN, PTS_EV_INSN_ENCLU, AEP2);
	wt_ip(&t, PTS_PKT_TIP_PGE, SITE + 3); /* EEXIT */
	wt_tnt(&t, 1);
	run(&t, &cfg, &evs);
	CHECK_EQ(wt_count(&res, PTS_REC_GAP, -1), 3);
	expect_gap(0, PTS_GAP_ENCLAVE, PTS_BASIS_EVIDENCE, PTS_ENCL_EENTER,
		   PTS_ENCL_AEX);
	expect_gap(1, PTS_GAP_CPL, PTS_BASIS_EVIDENCE, PTS_ENCL_NONE,
		   PTS_ENCL_NONE);
	expect_gap(2, PTS_GAP_ENCLAVE, PTS_BASIS_EVIDENCE, PTS_ENCL_ERESUME,
		   PTS_ENCL_EEXIT);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);
	expect_counts(1, 1, 1, 1);
}

/* Once learned, the AEP may be left and landed on again (an ERESUME and a
 * second AEX), which an unknown ENCLU may not. */
static void test_learned_aep_round_trip(void)
{
	struct pts_trace_config cfg = config(0);
	struct evlist evs = {.n = 0};
	struct wtrace t;
	uint64_t pgd;

	wt_init(&t);
	pgd = open_gap(&t, SITE);
	add_ev(&evs, pgd, PTS_EV_DISABLE_INSN, PTS_EV_INSN_ENCLU, SITE);
	add_ev(&evs, pgd, PTS_EV_ENABLE_INSN, PTS_EV_INSN_ENCLU, AEP2);
	wt_ip(&t, PTS_PKT_TIP_PGE, AEP2); /* AEX */
	wt_ip(&t, PTS_PKT_TIP, AEP2);     /* code ran: not the event */
	pgd = fup_pgd(&t, AEP2);          /* ERESUME */
	add_ev(&evs, pgd, PTS_EV_DISABLE_INSN, PTS_EV_INSN_ENCLU, AEP2);
	add_ev(&evs, pgd, PTS_EV_ENABLE_INSN, PTS_EV_INSN_ENCLU, AEP2);
	wt_ip(&t, PTS_PKT_TIP_PGE, AEP2); /* second AEX */
	run(&t, &cfg, &evs);
	CHECK_EQ(wt_count(&res, PTS_REC_GAP, PTS_GAP_ENCLAVE), 2);
	expect_gap(1, PTS_GAP_ENCLAVE, PTS_BASIS_EVIDENCE, PTS_ENCL_ERESUME,
		   PTS_ENCL_AEX);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);
	expect_counts(1, 1, 0, 2);
}

/* Without the enable evidence the same first gap is no entry (the ENCLU
 * rule), and an enable at something other than ENCLU teaches nothing. */
static void test_enable_not_enclu(void)
{
	struct pts_trace_config cfg = config(0);
	struct evlist evs = {.n = 0};
	struct wtrace t;
	uint64_t pgd;

	wt_init(&t);
	pgd = open_gap(&t, SITE);
	add_ev(&evs, pgd, PTS_EV_DISABLE_INSN, PTS_EV_INSN_ENCLU, SITE);
	add_ev(&evs, pgd, PTS_EV_ENABLE_INSN, PTS_EV_INSN_OTHER, AEP2);
	wt_ip(&t, PTS_PKT_TIP_PGE, AEP2);
	run(&t, &cfg, &evs);
	expect_gap(0, PTS_GAP_CPL, PTS_BASIS_EVIDENCE, PTS_ENCL_NONE,
		   PTS_ENCL_NONE);
	expect_counts(0, 0, 0, 0);

	/* Enable evidence needs an open gap. */
	{
		struct pts_win_model *m = pts_win_new(&cfg);
		struct pts_win_evidence ev = {PTS_EV_ENABLE_INSN,
					      PTS_EV_INSN_ENCLU, 0, AEP2};

		CHECK(m != NULL);
		CHECK_EQ(pts_win_evidence(m, &ev), -PTS_ERR_NOSYNC);
		pts_win_free(m);
	}
}

/* ---- (d) PTS_EV_INSN_NEAR_BRANCH -------------------------------------- */

/* A bare TIP.PGD bound to a near branch; returns the TIP.PGD's offset. */
static uint64_t bare_pgd(struct wtrace *t)
{
	wt_header(t, 1, CODE);
	wt_tnt(t, 2);
	wt_ip(t, PTS_PKT_TIP, CODE + 0x40);
	wt_pgd0(t);
	uint64_t pgd = t->len - 1;
	wt_ip(t, PTS_PKT_TIP_PGE, CODE + 0x80);
	return pgd;
}

static void test_near_branch(void)
{
	struct pts_trace_config cfg = config(0);
	struct evlist evs = {.n = 0};
	const struct pts_win_record *v;
	struct wtrace t;
	uint64_t pgd;

	/* User-only, no filter range: a near branch changes no ring, so
	 * nothing configured explains the disable. */
	wt_init(&t);
	pgd = bare_pgd(&t);
	add_ev(&evs, pgd, PTS_EV_DISABLE_INSN, PTS_EV_INSN_NEAR_BRANCH,
	       CODE + 0x3e);
	run(&t, &cfg, &evs);
	expect_gap(0, PTS_GAP_UNKNOWN, PTS_BASIS_NONE, PTS_ENCL_NONE,
		   PTS_ENCL_NONE);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, PTS_RULE_UNEXPLAINED_GAP),
		 1);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 1);
	v = wt_find(&res, PTS_REC_VIOLATION, 0);
	CHECK(v && v->begin.offset == pgd);

	/* The same without the evidence: the packets say cpl. */
	run(&t, &cfg, NULL);
	expect_gap(0, PTS_GAP_CPL, PTS_BASIS_CONFIG, PTS_ENCL_NONE,
		   PTS_ENCL_NONE);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);

	/* A SYSCALL there: cpl. */
	evs.n = 0;
	add_ev(&evs, pgd, PTS_EV_DISABLE_INSN, PTS_EV_INSN_SYSCALL,
	       CODE + 0x3e);
	run(&t, &cfg, &evs);
	expect_gap(0, PTS_GAP_CPL, PTS_BASIS_EVIDENCE, PTS_ENCL_NONE,
		   PTS_ENCL_NONE);

	/* A filter range configured: ip-filter. */
	CHECK_EQ(pts_config_add_range(&cfg, "0x401000-0x401fff",
				      PTS_ADDR_FILTER),
		 0);
	evs.n = 0;
	add_ev(&evs, pgd, PTS_EV_DISABLE_INSN, PTS_EV_INSN_NEAR_BRANCH,
	       CODE + 0x3e);
	run(&t, &cfg, &evs);
	expect_gap(0, PTS_GAP_IP_FILTER, PTS_BASIS_EVIDENCE, PTS_ENCL_NONE,
		   PTS_ENCL_NONE);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);

	/* Nothing configured at all: the code alone says ip-filter. */
	run(&t, NULL, &evs);
	expect_gap(0, PTS_GAP_IP_FILTER, PTS_BASIS_EVIDENCE, PTS_ENCL_NONE,
		   PTS_ENCL_NONE);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);
}

/* At the FUP of FUP + TIP.PGD() the instruction was interrupted before it
 * ran: a near branch there says nothing about FilterEn (an interrupt into
 * ring 0 under user-only tracing: cpl). */
static void test_near_branch_at_fup(void)
{
	struct pts_trace_config cfg = config(0);
	struct evlist evs = {.n = 0};
	struct wtrace t;
	uint64_t pgd;

	wt_init(&t);
	pgd = open_gap(&t, CODE + 0x20);
	wt_ip(&t, PTS_PKT_TIP_PGE, CODE + 0x20);
	add_ev(&evs, pgd, PTS_EV_DISABLE_INSN, PTS_EV_INSN_NEAR_BRANCH,
	       CODE + 0x20);
	run(&t, &cfg, &evs);
	expect_gap(0, PTS_GAP_CPL, PTS_BASIS_EVIDENCE, PTS_ENCL_NONE,
		   PTS_ENCL_NONE);
	CHECK_EQ(wt_count(&res, PTS_REC_VIOLATION, -1), 0);
}

int main(void)
{
	test_aex_event();
	test_aex_event_once();
	test_aex_not_event();
	test_enclu_alone_not_entry();
	test_enclu_with_agreement();
	test_enable_enclu_learns_aep();
	test_learned_aep_round_trip();
	test_enable_not_enclu();
	test_near_branch();
	test_near_branch_at_fup();
	return pts_check_exit();
}
