/* Time from TSC, TMA, MTC, CYC and CBR packets (SDM 36.8.3; digest 6.3-6.4).
 *
 * The algorithm is libipt's (pt_time.c), rewritten: libipt is the reference
 * the differential tests compare against, so where a choice exists we make
 * the one libipt makes (ignore MTCs between TSC and TMA, ignore the first
 * MTC without a TMA, correct one CTC wrap only, calibrate CYC from MTC
 * periods first, then PSB-to-PSB TSCs, then CBR with the nominal ratio).
 */
#include "time_track.h"

#include <string.h>

#define MTC_BITS 8  /* an MTC carries CTC[N+7:N] */
#define TMA_BITS 16 /* a TMA carries CTC[15:0] */
#define TSC_BITS 56 /* a TSC packet carries TSC[55:0] */

void pts_time_init(struct pts_time *t, uint32_t eax, uint32_t ebx,
		   unsigned mtc_freq, unsigned nom_freq)
{
	memset(t, 0, sizeof(*t));
	t->eax = eax;
	t->ebx = ebx;
	t->mtc_freq = (uint8_t)(mtc_freq & 0xf);
	t->nom_freq = (uint8_t)nom_freq;
}

int pts_time_now(const struct pts_time *t, uint64_t *tsc)
{
	if (!t->have_tsc)
		return 0;
	*tsc = t->tsc;
	return 1;
}

/* CTC ticks from @last to @now, allowing one wrap of the N+8 bits MTCs
 * carry. Returns 0, or -1 when @now is behind @last even after one wrap
 * (more MTCs were lost than we can correct before the next TSC). */
static int ctc_delta(const struct pts_time *t, uint32_t now, uint32_t last,
		     uint32_t *delta)
{
	uint64_t n = now;

	if (n < last) {
		n += 1ull << (t->mtc_freq + MTC_BITS);
		if (n < last)
			return -1;
	}
	*delta = (uint32_t)(n - last);
	return 0;
}

/* CTC ticks to TSC ticks with the CPUID 0x15 ratio. Returns 0 when the
 * ratio is unknown (time then only moves at TSC packets). Nearly every
 * MTC asks for the same CTC delta (one MTC period), two or three times:
 * the last answer is kept rather than divided out again. */
static int ctc_to_tsc(struct pts_time *t, uint64_t ctc, uint64_t *tsc)
{
	if (!t->eax || !t->ebx)
		return 0;
	if (ctc != t->memo_ctc || !t->memo_valid) {
		t->memo_ctc = ctc;
		t->memo_tsc = ctc * t->ebx / t->eax;
		t->memo_valid = 1;
	}
	*tsc = t->memo_tsc;
	return 1;
}

/* A TSC packet only carries 56 bits; take the upper bits from the previous
 * value and assume at most one wrap in between. */
static uint64_t extend_tsc(const struct pts_time *t, uint64_t payload)
{
	const uint64_t mask = (1ull << TSC_BITS) - 1;
	uint64_t v;

	if (!t->have_tsc)
		return payload & mask;
	v = (t->tsc & ~mask) | (payload & mask);
	if (v + (1ull << (TSC_BITS - 1)) < t->tsc)
		v += 1ull << TSC_BITS;
	return v;
}

/* --- calibration of TSC ticks per core cycle ----------------------------- */

static void cal_reset(struct pts_time *t)
{
	t->cal_tsc = 0;
	t->cal_cyc_tsc = 0;
	t->cal_cyc_mtc = 0;
	t->cal_ctc = 0;
	t->cal_have_mtc = 0;
}

/* A TSC outside PSB+ may follow lost time (C-state, overflow): keep it as a
 * starting point but never calibrate across it (digest 6.5). */
static void cal_tsc(struct pts_time *t, uint64_t tsc, int in_psb)
{
	uint64_t last = t->cal_tsc, cyc = t->cal_cyc_tsc;

	t->cal_tsc = tsc;
	t->cal_cyc_tsc = 0;
	if (!in_psb || !last || !cyc || t->cal_have_mtc || tsc <= last)
		return;
	/* MTC periods are the better reference; PSB-to-PSB is the fallback. */
	if ((tsc - last) >> (64 - PTS_TIME_FCR_SHIFT))
		return;
	t->fcr = ((tsc - last) << PTS_TIME_FCR_SHIFT) / cyc;
}

/* A CBR inside PSB+ restates the ratio; outside it the frequency changed:
 * earlier measurements and the ratio they gave no longer hold (CYCs are
 * lost until the next calibration, as libipt counts them). With the
 * nominal ratio known, the ticks per cycle follow directly: nom / cbr. */
static void cal_cbr(struct pts_time *t, uint8_t cbr, int in_psb)
{
	if (!in_psb) {
		cal_reset(t);
		t->fcr = 0;
	}
	if (t->nom_freq && cbr)
		t->fcr = ((uint64_t)t->nom_freq << PTS_TIME_FCR_SHIFT) / cbr;
}

static void cal_mtc(struct pts_time *t, uint32_t ctc)
{
	uint32_t last = t->cal_ctc, delta;
	uint64_t cyc = t->cal_cyc_mtc, ticks;

	if (!t->cal_have_mtc) {
		t->cal_have_mtc = 1;
		t->cal_ctc = ctc;
		t->cal_cyc_mtc = 0;
		return;
	}
	/* No cycles counted in this period: spread the next ones over both. */
	if (!cyc)
		return;
	t->cal_ctc = ctc;
	t->cal_cyc_mtc = 0;
	if (ctc_delta(t, ctc, last, &delta) < 0 || !ctc_to_tsc(t, delta, &ticks))
		return;
	if (ticks >> (64 - PTS_TIME_FCR_SHIFT))
		return;
	t->fcr = (ticks << PTS_TIME_FCR_SHIFT) / cyc;
}

/* --- the time estimate ---------------------------------------------------- */

static void on_tsc(struct pts_time *t, uint64_t payload)
{
	t->tsc = t->base = extend_tsc(t, payload);
	t->have_tsc = 1;
	t->have_tma = 0;
	t->have_mtc = 0;
	t->ctc = 0;
	t->fc = 0;
	/* The full time is back: earlier losses no longer matter. */
	t->lost_mtc = 0;
	t->lost_cyc = 0;
}

static void on_tma(struct pts_time *t, uint16_t ctc, uint16_t fc)
{
	unsigned hi = t->mtc_freq + MTC_BITS;

	/* A TMA belongs to the TSC right before it; anything else is out of
	 * context and ignored (libipt reports it as an error). */
	if (!t->have_tsc || t->have_tma || t->have_mtc)
		return;
	t->have_tma = 1;
	/* FC is the fast counter at the TSC, already in TSC units: move the
	 * base back to the last CTC edge. */
	t->base -= fc;
	t->fc += fc;
	/* With N + 8 <= 16 the TMA holds every bit an MTC would, so it acts
	 * as the first MTC; otherwise the next MTC estimates the high bits. */
	if (hi <= TMA_BITS)
		t->have_mtc = 1;
	t->ctc = t->ctc_cyc = ctc & (uint32_t)((1ull << hi) - 1);
}

/* Estimates the CTC bits above the TMA's 16 (@tma_ctc) from the first MTC
 * after it (@ctc), assuming no MTC was lost in between (as libipt does). */
static uint32_t estimate_tma_ctc(const struct pts_time *t, uint32_t tma_ctc,
				 uint32_t ctc)
{
	const uint32_t lo_mask = (1u << TMA_BITS) - 1;
	uint32_t lo = ctc & lo_mask, hi = ctc & ~lo_mask;

	if (lo < tma_ctc) {
		hi -= 1u << TMA_BITS;
		hi &= ((1u << MTC_BITS) - 1) << t->mtc_freq;
	}
	return tma_ctc | hi;
}

static int on_mtc(struct pts_time *t, uint8_t payload)
{
	uint32_t ctc = (uint32_t)payload << t->mtc_freq, last = t->ctc, delta;
	uint64_t ticks;
	int had_mtc = t->have_mtc;

	/* MTCs between a TSC and its TMA would look like a CTC wrap. */
	if (t->have_tsc && !t->have_tma)
		return 0;
	if (t->fc || t->lost_cyc || !had_mtc)
		t->ctc_cyc = ctc;
	t->have_mtc = 1;
	t->fc = 0;
	t->ctc = ctc;
	t->lost_cyc = 0;
	if (!had_mtc) {
		/* Without a TMA nobody knows where in this MTC period tracing
		 * started: the first MTC only sets the reference. */
		if (!t->have_tma)
			return 0;
		last = estimate_tma_ctc(t, last, ctc);
	}
	if (ctc_delta(t, ctc, last, &delta) < 0) {
		t->lost_mtc++;
		return 0;
	}
	if (!ctc_to_tsc(t, delta, &ticks)) {
		t->mtc_unrated = 1;
		return 0;
	}
	t->base += ticks;
	t->tsc = t->base;
	return 1;
}

/* A CYC that spans MTC periods was partly counted by the MTCs already: take
 * off the cycles the calibration attributes to the periods before. */
static uint64_t adjust_cyc(struct pts_time *t, uint64_t cyc)
{
	uint32_t delta;
	uint64_t ticks, old;

	if (t->ctc == t->ctc_cyc)
		return cyc;
	if (ctc_delta(t, t->ctc, t->ctc_cyc, &delta) < 0 ||
	    !ctc_to_tsc(t, delta, &ticks))
		return cyc;
	old = (ticks << PTS_TIME_FCR_SHIFT) / t->fcr;
	/* Better to run slow than fast: never go below zero. */
	return cyc > old ? cyc - old : 0;
}

/* A run of @n CYCs with no other timing packet among them (one CYC: n = 1):
 * the estimate and both calibration counters move. fcr, base and the CTCs
 * cannot change inside the run, so only the CYCs that meet fc at 0 need a
 * look at the MTC periods (adjust_cyc()), the others only add their
 * ticks. Without a ratio the CYCs are lost. */
static void apply_cycs(struct pts_time *t, const uint64_t *cyc, int n)
{
	uint64_t sum = 0, fc = t->fc;
	int i = 0;

	for (int j = 0; j < n; j++)
		sum += cyc[j];
	t->cal_cyc_mtc += sum;
	t->cal_cyc_tsc += sum;
	if (!t->fcr) {
		t->lost_cyc += (uint32_t)n;
		return;
	}
	for (; i < n && !fc; i++)
		fc = (adjust_cyc(t, cyc[i]) * t->fcr) >> PTS_TIME_FCR_SHIFT;
	for (; i < n; i++)
		fc += (cyc[i] * t->fcr) >> PTS_TIME_FCR_SHIFT;
	t->fc = fc;
	t->tsc = t->base + fc;
}

/* One CYC; returns whether time moved. */
static inline int apply_cyc(struct pts_time *t, uint64_t cyc)
{
	apply_cycs(t, &cyc, 1);
	return t->fcr && t->have_tsc;
}

/* An MTC: calibration first (it compares with the last MTC), then time. */
static inline int apply_mtc(struct pts_time *t, uint8_t payload)
{
	cal_mtc(t, (uint32_t)payload << t->mtc_freq);
	return on_mtc(t, payload);
}

int pts_time_packet(struct pts_time *t, const struct pts_packet *pkt,
		    int in_psb)
{
	switch (pkt->kind) {
	case PTS_PKT_TSC:
		cal_tsc(t, extend_tsc(t, pkt->u.tsc), in_psb);
		on_tsc(t, pkt->u.tsc);
		return 1;
	case PTS_PKT_TMA:
		on_tma(t, pkt->u.tma.ctc, pkt->u.tma.fc);
		return 0;
	case PTS_PKT_MTC:
		return apply_mtc(t, pkt->u.mtc_ctc);
	case PTS_PKT_CYC:
		return apply_cyc(t, pkt->u.cyc);
	case PTS_PKT_CBR:
		cal_cbr(t, pkt->u.cbr.ratio, in_psb);
		t->last_cbr = pkt->u.cbr.ratio;
		if (pkt->u.cbr.ratio)
			t->cbr = pkt->u.cbr.ratio;
		return 0;
	case PTS_PKT_OVF:
		/* Cycles during the overflow are not counted: measurements
		 * across it would be wrong. The ratio itself stays. */
		cal_reset(t);
		return 0;
	default:
		return 0;
	}
}

/* A timing packet outside PSB+. CYC and MTC are most of them: no
 * dispatch through a jump table for them (it mispredicts between the two;
 * the plain batches and the skim's packet-by-packet path hand them on as
 * packets). */
static inline void timing_packet(struct pts_time *t,
				 const struct pts_packet *p)
{
	if (p->kind == PTS_PKT_CYC)
		apply_cyc(t, p->u.cyc);
	else if (p->kind == PTS_PKT_MTC)
		apply_mtc(t, p->u.mtc_ctc);
	else
		pts_time_packet(t, p, 0);
}

void pts_time_packets(struct pts_time *t, const struct pts_packet *pkts,
		      uint64_t which)
{
	for (; which; which &= which - 1)
		timing_packet(t, &pkts[__builtin_ctzll(which)]);
}

void pts_time_items(struct pts_time *t, const struct pts_skim_timing *items)
{
	const struct pts_packet *pkt = items->pkts;
	uint64_t apart = items->mtc | items->pkt; /* the items not CYCs */
	int i = 0;

	for (;;) {
		const int end = apart ? __builtin_ctzll(apart) : items->n;

		if (end > i)
			apply_cycs(t, items->value + i, end - i);
		if (end == items->n)
			return;
		if (items->mtc >> end & 1)
			apply_mtc(t, (uint8_t)items->value[end]);
		else
			timing_packet(t, pkt++);
		apart &= apart - 1;
		i = end + 1;
	}
}
