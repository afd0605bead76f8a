/* Time from timing packets (model/time_track.c), compiled against the
 * model's internal header, and gap durations through the whole model. */
#include "check.h"
#include "time_track.h"
#include "windows_trace.h"

#include <string.h>

static struct pts_packet pkt(int kind)
{
	struct pts_packet p;

	memset(&p, 0, sizeof(p));
	p.kind = (uint8_t)kind;
	return p;
}

static void feed_tsc(struct pts_time *t, uint64_t v, int in_psb)
{
	struct pts_packet p = pkt(PTS_PKT_TSC);

	p.u.tsc = v;
	pts_time_packet(t, &p, in_psb);
}

static void feed_tma(struct pts_time *t, uint16_t ctc, uint16_t fc)
{
	struct pts_packet p = pkt(PTS_PKT_TMA);

	p.u.tma.ctc = ctc;
	p.u.tma.fc = fc;
	pts_time_packet(t, &p, 1);
}

static void feed_mtc(struct pts_time *t, uint8_t v)
{
	struct pts_packet p = pkt(PTS_PKT_MTC);

	p.u.mtc_ctc = v;
	pts_time_packet(t, &p, 0);
}

static void feed_cyc(struct pts_time *t, uint64_t v)
{
	struct pts_packet p = pkt(PTS_PKT_CYC);

	p.u.cyc = v;
	pts_time_packet(t, &p, 0);
}

static void feed_cbr(struct pts_time *t, uint8_t v, int in_psb)
{
	struct pts_packet p = pkt(PTS_PKT_CBR);

	p.u.cbr.ratio = v;
	pts_time_packet(t, &p, in_psb);
}

static uint64_t now(const struct pts_time *t)
{
	uint64_t v = 0;

	CHECK(pts_time_now(t, &v));
	return v;
}

/* TSC/CTC = 200/2 = 100 ticks per crystal tick; MTCFreq 3: an MTC every 8
 * crystal ticks carries CTC[10:3]. */
static void test_tsc_tma_mtc(void)
{
	struct pts_time t;
	uint64_t v;

	pts_time_init(&t, 2, 200, 3, 0);
	CHECK(!pts_time_now(&t, &v));
	feed_tsc(&t, 1000000, 1);
	feed_tma(&t, 0x1234, 5);
	/* TMA: CTC 0x234 (11 bits) at TSC 1000000, fast counter 5 */
	CHECK_EQ(now(&t), 1000000);
	feed_mtc(&t, 0x47); /* CTC 0x238: 4 crystal ticks after the TMA */
	CHECK_EQ(now(&t), 1000000 - 5 + 400);
	feed_mtc(&t, 0x48);
	CHECK_EQ(now(&t), 1000000 - 5 + 400 + 800);
	/* an MTC lost: two periods */
	feed_mtc(&t, 0x4a);
	CHECK_EQ(now(&t), 1000000 - 5 + 400 + 800 + 1600);
	/* CTC[10:3] wraps from 0xff to 0x00 */
	feed_mtc(&t, 0xff);
	v = now(&t);
	feed_mtc(&t, 0x00);
	CHECK_EQ(now(&t), v + 800);
	/* a TSC outside PSB+ resets to the full value */
	feed_tsc(&t, 5000000, 0);
	CHECK_EQ(now(&t), 5000000);
}

/* Without the CPUID 0x15 ratio MTCs cannot move time: only TSCs do, and
 * the tracker says MTCs went unread (`windows` notes it). */
static void test_mtc_unrated(void)
{
	struct pts_time t;

	for (uint32_t ebx = 0; ebx <= 200; ebx += 200) {
		pts_time_init(&t, ebx ? 2 : 0, ebx, 3, 0);
		feed_tsc(&t, 1000000, 1);
		feed_tma(&t, 0x1234, 5);
		CHECK(!t.mtc_unrated);
		feed_mtc(&t, 0x47);
		feed_mtc(&t, 0x48);
		CHECK_EQ(now(&t), ebx ? 1000000 - 5 + 400 + 800 : 1000000);
		CHECK_EQ(t.mtc_unrated, !ebx);
	}
}

/* Without a TMA the first MTC only sets the reference. */
static void test_mtc_without_tma(void)
{
	struct pts_time t;

	pts_time_init(&t, 2, 200, 0, 0);
	feed_mtc(&t, 10);
	feed_mtc(&t, 12);
	CHECK(t.have_mtc);
	/* no TSC yet: no time at all */
	CHECK(!t.have_tsc);
}

/* CYC with the ratio from CBR and the nominal frequency: nominal 24,
 * CBR 12: 2 TSC ticks per core cycle. */
static void test_cyc_cbr(void)
{
	struct pts_time t;

	pts_time_init(&t, 0, 0, 0, 24);
	feed_tsc(&t, 1000, 1);
	feed_cbr(&t, 12, 1);
	CHECK_EQ(t.fcr, 512);
	feed_cyc(&t, 10);
	CHECK_EQ(now(&t), 1020);
	feed_cyc(&t, 5);
	CHECK_EQ(now(&t), 1030);
	/* the frequency doubles */
	feed_cbr(&t, 24, 0);
	feed_cyc(&t, 10);
	CHECK_EQ(now(&t), 1040);
}

/* CYC before any calibration is counted as lost, not guessed. */
static void test_cyc_uncalibrated(void)
{
	struct pts_time t;

	pts_time_init(&t, 0, 0, 0, 0);
	feed_tsc(&t, 1000, 1);
	feed_cyc(&t, 10);
	CHECK_EQ(now(&t), 1000);
	CHECK_EQ(t.lost_cyc, 1);
}

/* CYC calibrated between two MTCs: 800 ticks over 400 cycles. */
static void test_cyc_mtc_calibration(void)
{
	struct pts_time t;

	pts_time_init(&t, 2, 200, 3, 0);
	feed_tsc(&t, 1000000, 1);
	feed_tma(&t, 0x238, 0);
	feed_mtc(&t, 0x48);
	feed_cyc(&t, 400);
	feed_mtc(&t, 0x49);
	CHECK_EQ(t.fcr, 2u << PTS_TIME_FCR_SHIFT);
}

/* @r exists and has the times @begin and @end. */
static void check_times(const struct pts_win_record *r, uint64_t begin,
			uint64_t end)
{
	CHECK(r && r->begin.has_time && r->end.has_time);
	if (r) {
		CHECK_EQ(r->begin.tsc, begin);
		CHECK_EQ(r->end.tsc, end);
	}
}

/* User-only tracing with TSC and MTC (and @more_ctl), CPUID 0x15 2:200,
 * MTCFreq 3: an MTC period is 800 TSC ticks. */
static struct pts_trace_config timed_config(uint64_t more_ctl)
{
	struct pts_trace_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.known = PTS_CFG_CTL | PTS_CFG_CPUID15 | PTS_CFG_MTCFREQ;
	cfg.ctl = PTS_CTL_TRACEEN | PTS_CTL_USER | PTS_CTL_BRANCHEN |
		  PTS_CTL_TSCEN | PTS_CTL_MTCEN | more_ctl;
	cfg.cpuid_15_eax = 2;
	cfg.cpuid_15_ebx = 200;
	cfg.mtc_freq = 3;
	return cfg;
}

/* Through the model: the gap lasts from the TIP.PGD's time to the
 * TIP.PGE's (enclave time, 4.4 fact 4). */
static void test_gap_duration(void)
{
	static struct wresult res;
	struct pts_trace_config cfg;
	const struct pts_win_record *g, *w;
	struct wtrace t;

	cfg = timed_config(0);
	wt_init(&t);
	wt_psb(&t);
	wt_tsc(&t, 1000000);
	wt_tma(&t, 0x234, 0);
	wt_cbr(&t, 24);
	wt_mode64(&t);
	wt_ip(&t, PTS_PKT_FUP, 0x401000);
	wt_plain(&t, PTS_PKT_PSBEND);
	wt_mtc(&t, 0x47); /* 1000400 */
	wt_tnt(&t, 2);
	wt_ip(&t, PTS_PKT_FUP, 0x401050);
	wt_pgd0(&t);
	wt_mtc(&t, 0x48);
	wt_mtc(&t, 0x49);
	wt_mtc(&t, 0x4a); /* 1002800 */
	wt_ip(&t, PTS_PKT_TIP_PGE, 0x401050);
	wt_tnt(&t, 2);
	CHECK(wt_run(&t, &cfg, NULL, 0, &res) == 0);
	g = wt_find(&res, PTS_REC_GAP, 0);
	check_times(g, 1000400, 1002800);
	w = wt_find(&res, PTS_REC_WINDOW, 0);
	CHECK(w && w->begin.has_time && w->begin.tsc == 1000000);
	CHECK_EQ(res.sum.gap_ticks[PTS_GAP_CPL], 2400);
	CHECK_EQ(res.sum.window_ticks, 400);
	CHECK(res.sum.has_time && res.sum.first_tsc == 1000000);
}

/* A window whose time estimate ends earlier than it begins: CYCs after a
 * calibration of 2 ticks per cycle run 2000 ticks past the MTC period
 * (800) before the TIP.PGE, the MTC after it brings the clock back. Its
 * ticks are left out and the summary counts it (it was dropped without a
 * word). */
static void test_backwards_time(void)
{
	static struct wresult res;
	struct pts_trace_config cfg;
	const struct pts_win_record *w;
	struct wtrace t;

	cfg = timed_config(PTS_CTL_CYCEN);
	wt_init(&t);
	wt_psb(&t);
	wt_tsc(&t, 1000000);
	wt_tma(&t, 0x234, 0);
	wt_mode64(&t);
	wt_ip(&t, PTS_PKT_FUP, 0x401000);
	wt_plain(&t, PTS_PKT_PSBEND);
	wt_mtc(&t, 0x47); /* 1000400 */
	wt_tnt(&t, 2);
	wt_cyc(&t, 400);
	wt_mtc(&t, 0x48); /* 1001200, 2 ticks per cycle */
	wt_ip(&t, PTS_PKT_FUP, 0x401050);
	wt_pgd0(&t);
	wt_cyc(&t, 1000); /* 1003200 */
	wt_ip(&t, PTS_PKT_TIP_PGE, 0x401050);
	wt_mtc(&t, 0x49); /* 1002000 */
	wt_tnt(&t, 2);
	wt_ip(&t, PTS_PKT_FUP, 0x401060);
	wt_pgd0(&t);
	CHECK(wt_run(&t, &cfg, NULL, 0, &res) == 0);
	w = wt_find(&res, PTS_REC_WINDOW, 1);
	check_times(w, 1003200, 1002000);
	CHECK_EQ(res.sum.backwards, 1);
	CHECK_EQ(res.sum.window_ticks, 1200); /* the first window only */
}

/* Two windows of more than 2^63 ticks each: their sum stops at 2^64 - 1
 * instead of wrapping to a small number. */
static void test_tick_sums_saturate(void)
{
	static struct wresult res;
	static struct wtrace t;
	const struct pts_win_record *w0, *w1;

	wt_make_wild_tsc(&t);
	CHECK(wt_run(&t, NULL, NULL, 0, &res) == 0);
	w0 = wt_find(&res, PTS_REC_WINDOW, 0);
	w1 = wt_find(&res, PTS_REC_WINDOW, 1);
	CHECK(w0 && w1);
	if (!w0 || !w1)
		return;
	CHECK(w0->end.tsc - w0->begin.tsc > 1ull << 63);
	CHECK(w1->end.tsc - w1->begin.tsc > 1ull << 63);
	CHECK_EQ(res.sum.windows, 2);
	CHECK_EQ(res.sum.window_ticks, UINT64_MAX);
}

static void test_tsc_hz(void)
{
	struct pts_trace_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	CHECK_EQ(pts_config_tsc_hz(&cfg), 0);
	cfg.known = PTS_CFG_NOMFREQ;
	cfg.nom_freq = 24;
	CHECK_EQ(pts_config_tsc_hz(&cfg), 2400000000ull);
	cfg.known |= PTS_CFG_CPUID15;
	cfg.cpuid_15_eax = 2;
	cfg.cpuid_15_ebx = 176;
	cfg.cpuid_15_ecx = 24000000;
	CHECK_EQ(pts_config_tsc_hz(&cfg), 2112000000ull);
}

int main(void)
{
	test_tsc_tma_mtc();
	test_mtc_unrated();
	test_mtc_without_tma();
	test_cyc_cbr();
	test_cyc_uncalibrated();
	test_cyc_mtc_calibration();
	test_gap_duration();
	test_backwards_time();
	test_tick_sums_saturate();
	test_tsc_hz();
	return pts_check_exit();
}
