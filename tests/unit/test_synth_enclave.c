/* The synthesizer's packets at each enclave transition (issue #3), checked
 * against docs/pt-sgx-facts.md 4.3 (Table 36-50 rows 20-25) and 4.4: steps
 * are scripted by hand, the emitter turns them into bytes, and the packet
 * decoder reads the bytes back into one line per test ("psb cbr ...
 * fup(400133) tip.pgd() ..."), which must equal the expected sequence.
 *
 * The addresses are those of fixtures/bin/enclave_demo: the EENTER ENCLU at
 * 0x400133 with its EEXIT target 0x400136 after it, the AEP (a bare ENCLU)
 * at 0x400138, ELRANGE [0x500000, 0x501000) with OENTRY 0x500000 and the
 * EEXIT ENCLU at 0x50000f. */
#include "check.h"
#include "synth.h"
#include "synth_packets.h"

#include <stdlib.h>
#include <string.h>

#define HOST 0x400100ull
#define EENTER_SITE 0x400133ull
#define EEXIT_TARGET 0x400136ull
#define AEP 0x400138ull
#define OENTRY 0x500000ull
#define EEXIT_SITE 0x50000full
#define INSIDE 0x500040ull

static const struct syn_where host = {3, -1}, encl = {3, 0}, ring0 = {0, -1};

/* ------------------------------------------------------------------------ */
/* Steps.                                                                   */

static struct syn_step seq(uint64_t ip, struct syn_where w, uint32_t cycles)
{
	struct syn_step s = {.ip = ip, .next = ip + 4, .size = 4,
			     .kind = SYN_SEQ, .at = w, .to = w,
			     .extra_cycles = cycles};
	return s;
}

static struct syn_step enclu(uint64_t ip, uint64_t to, struct syn_where a,
			     struct syn_where b)
{
	struct syn_step s = {.ip = ip, .next = to, .size = 3,
			     .kind = SYN_ENCLU, .at = a, .to = b,
			     .extra_cycles = 3500};
	return s;
}

static struct syn_step event(int kind, uint64_t ip, uint64_t to,
			     struct syn_where a, struct syn_where b)
{
	struct syn_step s = {.ip = ip, .next = to, .kind = (uint8_t)kind,
			     .at = a, .to = b, .extra_cycles = 6000};
	return s;
}

static struct syn_step taken(int kind, uint64_t ip, uint64_t to,
			     struct syn_where a, struct syn_where b)
{
	struct syn_step s = {.ip = ip, .next = to, .size = 2,
			     .kind = (uint8_t)kind, .flags = SYN_F_TAKEN,
			     .at = a, .to = b};
	return s;
}

/* ------------------------------------------------------------------------ */
/* Running a script and reading its packets back.                           */

enum { OVF_ARM = 1, OVF_END = 2 }; /* struct script.ovf_at actions */

struct script {
	const struct syn_step *steps;
	size_t n;
	/* Overflow arms after step ovf_arm and ends after step ovf_end
	 * (indexes + 1; 0: no overflow). */
	size_t ovf_arm, ovf_end;
};

/* The trace of @sc from HOST in ring 3, in @sink's memory. */
static void synthesize(const struct syn_options *o, int kind,
		       const struct script *sc, struct syn_sink *sink)
{
	struct pts_config cfg;
	struct pts_enclave e;
	pts_config_init(&cfg);
	memset(&e, 0, sizeof(e));
	e.begin = OENTRY;
	e.end = OENTRY + 0x1000;
	e.kind = (uint8_t)kind;
	e.aep = AEP;
	e.has_aep = 1;
	CHECK(pts_config_add_enclave(&cfg, &e, OENTRY) == 0);
	syn_sink_init(sink, NULL);
	struct syn_emitter *em = syn_emit_new(o, &cfg, sink);
	CHECK(em != NULL);
	if (!em)
		abort();
	CHECK(syn_emit_start(em, HOST, host) == 0);
	for (size_t i = 0; i < sc->n; i++) {
		CHECK(syn_emit_step(em, &sc->steps[i]) >= 0);
		if (sc->ovf_arm == i + 1)
			syn_emit_overflow_arm(em);
		if (sc->ovf_end == i + 1)
			CHECK(syn_emit_overflow_end(em) == 0);
	}
	CHECK(syn_emit_finish(em) == 0);
	syn_emit_free(em);
	pts_config_fini(&cfg);
}

struct result {
	struct syn_sink *sink;
	struct pts_packet pkts[4096];
	size_t n;
	char sig[8192];
};

static struct result *run(const struct syn_options *o, int kind,
			  const struct script *sc)
{
	struct result *r = calloc(1, sizeof(*r));
	if (!r || !(r->sink = calloc(1, sizeof(*r->sink))))
		abort();
	synthesize(o, kind, sc, r->sink);
	r->n = synth_decode(r->sink, r->pkts, sizeof(r->pkts) / sizeof(r->pkts[0]));
	synth_signature(r->pkts, r->n, r->sig, sizeof(r->sig));
	return r;
}

static void result_free(struct result *r)
{
	free(r->sink->mem);
	free(r->sink);
	free(r);
}

static void check_sig(const char *test, const struct result *r,
		      const char *want)
{
	if (getenv("SYNTH_VERBOSE"))
		printf("%s: %s\n", test, r->sig);
	if (strcmp(r->sig, want) != 0)
		FAIL("%s:\n  got:  %s\n  want: %s", test, r->sig, want);
}

/* The index of the @nth (from 0) packet of @kind, or SIZE_MAX. */
static size_t find(const struct result *r, int kind, unsigned nth)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->pkts[i].kind == kind && nth-- == 0)
			return i;
	return SIZE_MAX;
}

static void options(struct syn_options *o)
{
	syn_options_default(o);
	o->user_only = 1;
	o->ret_nocomp_rate = 0;
}

/* The first PSB+ of every test: tracing on at HOST. */
#define START "psb cbr mode.exec fup(400100) psbend"
/* syn_emit_finish(): software clears TraceEn at @ip. */
#define FINISH(ip) " fup(" ip ") tip.pgd()"

/* ------------------------------------------------------------------------ */
/* The sequences.                                                           */

/* Rows 20c and 21b: production EENTER = FUP(ENCLU) TIP.PGD() with the IP
 * suppressed, nothing inside, EEXIT = TIP.PGE(target). No MODE.Exec: the
 * mode did not change and one went out since the PSB. The PGE compresses
 * against the FUP's IP (last-IP survives the gap). */
static void test_production_eenter_eexit(void)
{
	struct syn_options o;
	options(&o);
	const struct syn_step steps[] = {
		seq(HOST, host, 0),
		enclu(EENTER_SITE, OENTRY, host, encl),
		seq(OENTRY, encl, 0),
		seq(OENTRY + 4, encl, 0),
		enclu(EEXIT_SITE, EEXIT_TARGET, encl, host),
		seq(EEXIT_TARGET, host, 0),
	};
	struct script sc = {steps, 6, 0, 0};
	struct result *r = run(&o, PTS_ENCLAVE_PRODUCTION, &sc);
	check_sig("production EENTER/EEXIT", r,
		  START " fup(400133) tip.pgd() tip.pge(400136)"
			FINISH("40013a"));
	size_t pgd = find(r, PTS_PKT_TIP_PGD, 0);
	size_t pge = find(r, PTS_PKT_TIP_PGE, 0);
	CHECK(pgd != SIZE_MAX && pge != SIZE_MAX);
	if (pgd != SIZE_MAX && pge != SIZE_MAX) {
		CHECK_EQ(r->pkts[pgd].ipc, PTS_IPC_SUPPRESSED);
		CHECK_EQ(r->pkts[pge].ipc, PTS_IPC_UPDATE_16);
	}
	result_free(r);
}

/* Row 22b then 20c: an AEX lands on the AEP with TIP.PGE(AEP); without a
 * kernel model the walk goes straight to the AEP's ENCLU, ERESUME:
 * FUP(AEP) TIP.PGD(). The EEXIT later is row 21b again. */
static void test_production_aex_eresume(void)
{
	struct syn_options o;
	options(&o);
	o.kernel = 0;
	const struct syn_step steps[] = {
		seq(HOST, host, 0),
		enclu(EENTER_SITE, OENTRY, host, encl),
		seq(INSIDE, encl, 0),
		event(SYN_AEX, INSIDE + 4, AEP, encl, host),
		enclu(AEP, INSIDE + 4, host, encl),
		seq(INSIDE + 4, encl, 0),
		enclu(EEXIT_SITE, EEXIT_TARGET, encl, host),
		seq(EEXIT_TARGET, host, 0),
	};
	struct script sc = {steps, 8, 0, 0};
	struct result *r = run(&o, PTS_ENCLAVE_PRODUCTION, &sc);
	check_sig("production AEX/ERESUME", r,
		  START " fup(400133) tip.pgd() tip.pge(400138) fup(400138)"
			" tip.pgd() tip.pge(400136)" FINISH("40013a"));
	result_free(r);
}

#define KSTUB_IRQ 0xffffffff81000010ull

/* The user-only picture of one AEX (pt-sgx-facts 4.3): TIP.PGE(AEP), the
 * exiting event delivered at the AEP into ring 0, FUP(AEP) TIP.PGD(), the
 * IRET back, TIP.PGE(AEP), then ERESUME, FUP(AEP) TIP.PGD(). */
static void test_production_aex_interrupt(void)
{
	struct syn_options o;
	options(&o);
	const struct syn_step steps[] = {
		seq(HOST, host, 0),
		enclu(EENTER_SITE, OENTRY, host, encl),
		seq(INSIDE, encl, 0),
		event(SYN_AEX, INSIDE + 4, AEP, encl, host),
		event(SYN_INTR, AEP, KSTUB_IRQ, host, ring0),
		seq(KSTUB_IRQ, ring0, 0),
		taken(SYN_FAR, KSTUB_IRQ + 1, AEP, ring0, host),
		enclu(AEP, INSIDE + 4, host, encl),
		enclu(EEXIT_SITE, EEXIT_TARGET, encl, host),
	};
	struct script sc = {steps, 9, 0, 0};
	struct result *r = run(&o, PTS_ENCLAVE_PRODUCTION, &sc);
	check_sig("production AEX + interrupt", r,
		  START " fup(400133) tip.pgd() tip.pge(400138) fup(400138)"
			" tip.pgd() tip.pge(400138) fup(400138) tip.pgd()"
			" tip.pge(400136)" FINISH("400136"));
	result_free(r);
}

/* Debug enclaves are traced like any code (rows 23-25 by analogy, 24e,
 * 25e): EENTER FUP(ENCLU) TIP(OENTRY), ELRANGE IPs and TNTs inside, AEX
 * FUP(CLIP) TIP(AEP), ERESUME FUP(AEP) TIP(resume), EEXIT FUP(ENCLU)
 * TIP(target). */
static void test_debug(void)
{
	struct syn_options o;
	options(&o);
	o.kernel = 0;
	const struct syn_step steps[] = {
		seq(HOST, host, 0),
		enclu(EENTER_SITE, OENTRY, host, encl),
		seq(OENTRY, encl, 0),
		taken(SYN_COND, OENTRY + 4, INSIDE, encl, encl),
		seq(INSIDE, encl, 0),
		event(SYN_AEX, INSIDE + 4, AEP, encl, host),
		enclu(AEP, INSIDE + 4, host, encl),
		seq(INSIDE + 4, encl, 0),
		enclu(EEXIT_SITE, EEXIT_TARGET, encl, host),
		seq(EEXIT_TARGET, host, 0),
	};
	struct script sc = {steps, 10, 0, 0};
	struct result *r = run(&o, PTS_ENCLAVE_DEBUG, &sc);
	check_sig("debug enclave", r,
		  START " fup(400133) tip(500000) tnt.8 fup(500044)"
			" tip(400138) fup(400138) tip(500044) fup(50000f)"
			" tip(400136)" FINISH("40013a"));
	CHECK_EQ(find(r, PTS_PKT_TIP_PGD, 1), SIZE_MAX); /* only FINISH */
	result_free(r);
}

/* An overflow that starts and ends inside a production gap (pt-sgx-facts
 * 2.6, 4.4 item 5): OVF with no FUP after it, then MODE.Exec (an OVF
 * resets what the decoder knows) and TIP.PGE with a full IP. MTCs keep
 * flowing in the gap; the first one after the arming starts the
 * overflow. */
static void test_overflow_in_gap(void)
{
	struct syn_options o;
	options(&o);
	o.mtc = 1;
	o.mtc_freq = 0;
	const struct syn_step steps[] = {
		seq(HOST, host, 0),
		enclu(EENTER_SITE, OENTRY, host, encl),
		seq(OENTRY, encl, 2000),
		seq(OENTRY + 4, encl, 2000),
		seq(OENTRY + 8, encl, 2000),
		enclu(EEXIT_SITE, EEXIT_TARGET, encl, host),
		seq(EEXIT_TARGET, host, 0),
	};
	struct script sc = {steps, 7, 3, 5};
	struct result *r = run(&o, PTS_ENCLAVE_PRODUCTION, &sc);
	check_sig("overflow in a gap", r,
		  START " fup(400133) tip.pgd() ovf mode.exec tip.pge(400136)"
			FINISH("40013a"));
	size_t pge = find(r, PTS_PKT_TIP_PGE, 0);
	CHECK(pge != SIZE_MAX);
	if (pge != SIZE_MAX)
		CHECK_EQ(r->pkts[pge].ipc, PTS_IPC_SEXT_48);
	/* MTCs before the OVF (in the gap) and after it. */
	size_t ovf = find(r, PTS_PKT_OVF, 0);
	CHECK(ovf != SIZE_MAX && ovf > 0 && r->pkts[ovf - 1].kind == PTS_PKT_MTC);
	result_free(r);
}

/* A PSB+ inside a production gap carries timing and CBR only: no FUP, no
 * MODE.Exec, no PIP (pt-sgx-facts 2.5, 4.4) although OS=1 puts a PIP in
 * the first PSB+. Last-IP is 0 after it, so the TIP.PGE that closes the
 * gap compresses against 0, and a MODE.Exec precedes it (none since the
 * PSB). */
static void test_psb_in_gap(void)
{
	struct syn_options o;
	options(&o);
	o.user_only = 0;
	o.mtc = 1;
	o.mtc_freq = 0;
	o.psb_period = 64;
	const struct syn_step steps[] = {
		seq(HOST, host, 0),
		enclu(EENTER_SITE, OENTRY, host, encl),
		seq(OENTRY, encl, 2000),
		seq(OENTRY + 4, encl, 2000),
		enclu(EEXIT_SITE, EEXIT_TARGET, encl, host),
		seq(EEXIT_TARGET, host, 0),
	};
	struct script sc = {steps, 6, 0, 0};
	struct result *r = run(&o, PTS_ENCLAVE_PRODUCTION, &sc);
	size_t pgd = find(r, PTS_PKT_TIP_PGD, 0);
	size_t pge = find(r, PTS_PKT_TIP_PGE, 0);
	CHECK(pgd != SIZE_MAX && pge != SIZE_MAX && pgd < pge);
	CHECK_EQ(r->pkts[1].kind, PTS_PKT_PIP); /* the first PSB+ */
	if (pgd == SIZE_MAX || pge == SIZE_MAX || pgd > pge) {
		result_free(r);
		return;
	}
	unsigned psbs = 0;
	for (size_t i = pgd + 1; i < pge - 1; i++) {
		int k = r->pkts[i].kind;
		psbs += k == PTS_PKT_PSB;
		CHECK(k == PTS_PKT_PSB || k == PTS_PKT_PSBEND ||
		      k == PTS_PKT_CBR || synth_is_timing(k));
	}
	CHECK(psbs >= 1);
	CHECK_EQ(r->pkts[pge - 1].kind, PTS_PKT_MODE_EXEC);
	CHECK_EQ(r->pkts[pge].ipc, PTS_IPC_UPDATE_32);
	CHECK_EQ(r->pkts[pge].u.ip.ip, EEXIT_TARGET);
	if (pts_check_failures)
		fprintf(stderr, "psb in a gap: %s\n", r->sig);
	result_free(r);
}

int main(void)
{
	test_production_eenter_eexit();
	test_production_aex_eresume();
	test_production_aex_interrupt();
	test_debug();
	test_overflow_in_gap();
	test_psb_in_gap();
	return pts_check_exit();
}
