/* perf.data: the time perf's Intel PT decoder gives each sample, and the
 * stream offsets where AUX records say data was lost.
 *
 * The clock follows perf 6.1 (intel-pt-decoder.c): TSC packets set the
 * time, TMA anchors the crystal clock (CTC) to the last TSC, MTC packets
 * advance it by whole MTC periods, CYC packets by cycles between them.
 * Matching perf matters more than being exact: `perf flow --format perf`
 * is diffed against `perf script`. */
#include "perfdata_internal.h"

/* perf tolerates a TSC up to this many ticks behind the time it has
 * (MTC-derived time may run slightly ahead of the next TSC). */
#define TSC_SLIP 0x10000

void pts_perf_clock_init(struct pts_perf_clock *c, const struct pts_perf *perf)
{
	memset(c, 0, sizeof(*c));
	struct pts_perf_pt_info info = {0};
	struct pts_perf_pt_config cfg;
	if (pts_perf_pt_info(perf, &info) == 0) {
		c->tsc_ctc_n = info.tsc_ctc_n;
		c->tsc_ctc_d = info.tsc_ctc_d;
	}
	if (c->tsc_ctc_d && c->tsc_ctc_n % c->tsc_ctc_d == 0)
		c->tsc_ctc_mult = c->tsc_ctc_n / c->tsc_ctc_d;
	if (pts_perf_pt_config(perf, &cfg) == 0)
		c->mtc_shift = cfg.mtc_period;
	c->ctc_rem_mask = (1u << c->mtc_shift) - 1;
	c->max_nonturbo = (uint32_t)info.max_nonturbo_ratio;
	struct pts_perf_time_conv tc;
	if (!c->max_nonturbo && pts_perf_time_conv(perf, &tc) == 0 &&
	    tc.valid && tc.time_mult && tc.time_shift < 64) {
		/* perf: TSC frequency / 100 MHz, rounded */
		double hz = 1e9 * (double)(1ull << tc.time_shift) /
			    (double)tc.time_mult;
		c->max_nonturbo = (uint32_t)((hz + 5e7) / 1e8);
	}
}

void pts_perf_clock_buffer(struct pts_perf_clock *c, uint64_t reference,
			   int consecutive)
{
	c->buf_ref = reference;
	if (!consecutive)
		c->ref = reference;
}

/* CTC ticks to TSC ticks without overflowing the product. */
static uint64_t ctc_to_tsc(const struct pts_perf_clock *c, uint64_t ctc)
{
	if (c->tsc_ctc_mult)
		return ctc * c->tsc_ctc_mult;
	return ctc / c->tsc_ctc_d * c->tsc_ctc_n +
	       ctc % c->tsc_ctc_d * c->tsc_ctc_n / c->tsc_ctc_d;
}

static void on_tsc(struct pts_perf_clock *c, uint64_t tsc56)
{
	c->have_tma = 0;
	if (c->ref) {
		c->timestamp = c->tsc_timestamp = pts_perf_tsc_extend(tsc56, c->ref);
		c->ref = 0;
		return;
	}
	if (!c->timestamp)
		return; /* perf: no reference, no time yet */
	uint64_t t = tsc56 | (c->timestamp & (0xffull << 56));
	c->tsc_timestamp = t;
	if (t < c->timestamp && c->timestamp - t < TSC_SLIP)
		t = c->timestamp;
	if (t < c->timestamp) {
		/* the 56-bit counter wrapped, unless that would put the time
		 * past the buffer's end: then the time ran ahead (a bad TMA
		 * or lost MTCs) and stays where it is, as perf keeps it */
		if (!c->buf_ref || t + (1ull << 56) < c->buf_ref) {
			t += 1ull << 56;
			c->tsc_timestamp = t;
		} else {
			t = c->timestamp;
		}
	}
	c->timestamp = t;
}

/* The time at @ctc_delta CTC ticks past @ctc_timestamp. */
static uint64_t ctc_time(const struct pts_perf_clock *c, uint64_t ctc_timestamp,
			 uint64_t ctc_delta)
{
	return ctc_timestamp + ctc_to_tsc(c, ctc_delta);
}

static void on_tma(struct pts_perf_clock *c, uint32_t ctc, uint32_t fc)
{
	if (!c->tsc_ctc_d)
		return;
	c->last_mtc = (ctc >> c->mtc_shift) & 0xff;
	c->ctc_timestamp = c->tsc_timestamp - fc -
			   ctc_to_tsc(c, ctc & c->ctc_rem_mask);
	c->ctc_delta = 0;
	c->have_tma = 1;
	c->fixup_last_mtc = 1;
}

/* The MTC periods from *@last to @mtc (a whole wrap when equal, as perf
 * counts), with the bits TMA does not give taken from the first MTC after
 * it when the period is above 8 (*@fixup); *@last becomes @mtc. */
static uint32_t mtc_periods(const struct pts_perf_clock *c, uint32_t mtc,
			    uint32_t *last, uint8_t *fixup)
{
	if (c->mtc_shift > 8 && *fixup) {
		uint32_t first_missing = 1u << (16 - c->mtc_shift);
		*last |= mtc & ~(first_missing - 1);
		if (*last >= mtc)
			*last = (*last - first_missing) & 0xff;
	}
	*fixup = 0;
	uint32_t delta = mtc > *last ? mtc - *last : mtc + 256 - *last;
	*last = mtc;
	return delta;
}

/* A TSC or an MTC right after a CYC: the cycle count starts again from
 * the time now, with no measured ratio until one is measured again. */
static void cyc_restart(struct pts_perf_clock *c)
{
	if (c->fetched[1] != PTS_PKT_CYC)
		return;
	c->cyc_ref = c->timestamp;
	c->cycle_cnt = 0;
	c->have_cyc_ratio = 0;
}

static void on_mtc(struct pts_perf_clock *c, uint32_t mtc)
{
	if (!c->have_tma)
		return;
	c->ctc_delta += (uint64_t)mtc_periods(c, mtc, &c->last_mtc,
					      &c->fixup_last_mtc)
			<< c->mtc_shift;
	uint64_t t = ctc_time(c, c->ctc_timestamp, c->ctc_delta);
	if (t >= c->timestamp)
		c->timestamp = t; /* perf suppresses time going backwards */
	cyc_restart(c);
	c->cal_due = c->fetched[1] == PTS_PKT_CYC;
}

/* Returns whether perf restarts its instruction count. */
static int on_cyc(struct pts_perf_clock *c, uint64_t cycles)
{
	c->cycle_cnt += cycles;
	if (!c->cyc_ref)
		return 0;
	double ratio;
	if (c->have_cyc_ratio)
		ratio = c->cyc_ratio;
	else if (c->cbr)
		ratio = c->cbr_ratio;
	else
		return 0;
	/* as perf computes it: in double, truncated; a time past 2^64 (a
	 * damaged CYC) has no integer, and the time stays */
	double t = (double)c->cyc_ref + (double)c->cycle_cnt * ratio;
	if (t < 18446744073709551616.0 && (uint64_t)t >= c->timestamp)
		c->timestamp = (uint64_t)t;
	return 1;
}

/* A new CBR: CYCs count from here at the new frequency (perf 6.1.27 on:
 * "Fix CYC timestamps after standalone CBR"); a CBR of 0 gives them
 * none. */
static void on_cbr(struct pts_perf_clock *c, uint8_t cbr)
{
	if (c->cbr == cbr)
		return;
	c->cbr = cbr;
	c->cbr_ratio = cbr ? (double)c->max_nonturbo / cbr : 0;
	c->cyc_ref = c->timestamp;
	c->cycle_cnt = 0;
}

void pts_perf_clock_fetched(struct pts_perf_clock *c, int kind)
{
	if (kind == PTS_PKT_PAD)
		return;
	c->fetched[2] = c->fetched[1];
	c->fetched[1] = c->fetched[0];
	c->fetched[0] = (uint8_t)kind;
}

void pts_perf_clock_unfetch(struct pts_perf_clock *c)
{
	c->fetched[0] = c->fetched[1];
	c->fetched[1] = c->fetched[2];
}

int pts_perf_clock_packet(struct pts_perf_clock *c,
			  const struct pts_packet *pkt)
{
	int restart = 0;
	switch (pkt->kind) {
	case PTS_PKT_TSC:
		restart = c->ref || c->timestamp;
		on_tsc(c, pkt->u.tsc);
		cyc_restart(c);
		break;
	case PTS_PKT_TMA:
		on_tma(c, pkt->u.tma.ctc, pkt->u.tma.fc);
		break;
	case PTS_PKT_MTC:
		restart = c->have_tma;
		on_mtc(c, pkt->u.mtc_ctc);
		break;
	case PTS_PKT_CYC:
		restart = on_cyc(c, pkt->u.cyc);
		break;
	case PTS_PKT_CBR:
		on_cbr(c, pkt->u.cbr.ratio);
		break;
	default:
		break;
	}
	return restart;
}

void pts_perf_cyc_cal_start(struct pts_perf_clock *c,
			    struct pts_perf_cyc_cal *cal)
{
	c->cal_due = 0;
	*cal = (struct pts_perf_cyc_cal){
		.ctc_timestamp = c->ctc_timestamp,
		.ctc_delta = c->ctc_delta,
		.timestamp = c->timestamp,
		.last_mtc = c->last_mtc,
		.have_tma = c->have_tma,
		.fixup_last_mtc = c->fixup_last_mtc,
		/* perf's look ahead starts with the kind before the MTC */
		.last_kind = c->fetched[1],
	};
}

/* The measurement at an MTC right after a CYC (at time @t): ticks per
 * cycle since the clock's MTC, unless far above the CBR's. Returns 1. */
static int cal_measure(struct pts_perf_clock *c, struct pts_perf_cyc_cal *cal,
		       uint64_t t)
{
	if (!cal->cbr && c->cbr) {
		cal->cbr = c->cbr;
		cal->cbr_ratio = c->cbr_ratio;
	}
	if (!cal->cycle_cnt)
		return 1;
	double ratio = (double)(t - c->timestamp) / (double)cal->cycle_cnt;
	if (cal->cbr && ratio > cal->cbr_ratio &&
	    ratio / cal->cbr_ratio > 1.25)
		return 1;
	c->cyc_ratio = ratio;
	c->have_cyc_ratio = 1;
	return 1;
}

/* One packet of the look ahead (PADs are not given); 1 when it ends. */
static int cal_packet(struct pts_perf_clock *c, struct pts_perf_cyc_cal *cal,
		      const struct pts_packet *pkt)
{
	uint64_t t;
	switch (pkt->kind) {
	case PTS_PKT_TNT8: case PTS_PKT_TNT64: case PTS_PKT_TIP_PGE:
	case PTS_PKT_TIP: case PTS_PKT_FUP: case PTS_PKT_PSB:
	case PTS_PKT_PIP: case PTS_PKT_MODE_EXEC: case PTS_PKT_MODE_TSX:
	case PTS_PKT_PSBEND: case PTS_PKT_VMCS: case PTS_PKT_MNT:
	case PTS_PKT_PTW: case PTS_PKT_BBP: case PTS_PKT_BIP:
	case PTS_PKT_BEP:
		return 0;
	case PTS_PKT_MTC:
		if (!cal->have_tma)
			return 0;
		cal->ctc_delta += (uint64_t)mtc_periods(c, pkt->u.mtc_ctc,
							&cal->last_mtc,
							&cal->fixup_last_mtc)
				  << c->mtc_shift;
		t = ctc_time(c, cal->ctc_timestamp, cal->ctc_delta);
		if (t < cal->timestamp)
			return 1;
		if (cal->last_kind != PTS_PKT_CYC) {
			cal->timestamp = t;
			return 0;
		}
		return cal_measure(c, cal, t);
	case PTS_PKT_CYC:
		cal->cycle_cnt += pkt->u.cyc;
		return 0;
	case PTS_PKT_CBR:
		if (cal->cbr && cal->cbr != pkt->u.cbr.ratio)
			return 1;
		cal->cbr = pkt->u.cbr.ratio;
		cal->cbr_ratio =
			cal->cbr ? (double)c->max_nonturbo / cal->cbr : 0;
		return 0;
	default:
		/* TSC and TMA (perf measures from MTCs only), TIP.PGD,
		 * TraceStop, OVF, power events, ... end it */
		return 1;
	}
}

int pts_perf_cyc_cal_step(struct pts_perf_clock *c,
			  struct pts_perf_cyc_cal *cal,
			  const struct pts_packet *pkt)
{
	if (pkt->kind == PTS_PKT_PAD)
		return 0;
	int done = cal_packet(c, cal, pkt);
	cal->last_kind = pkt->kind;
	return done;
}

/* The stream offset of AUX position @pos in queue @q: inside a buffer, or
 * the start of the first buffer after it (the end when none). */
static uint64_t aux_to_stream(const struct pts_perf *perf,
			      const struct pts_perf_queue *q, uint64_t pos)
{
	uint64_t soff = 0;
	for (uint32_t j = 0; j < q->nr_buffers; j++) {
		const struct pts_perf_buffer *b = &perf->bufs[q->first + j];
		uint64_t start = b->aux_offset + b->skip;
		if (pos <= start)
			return soff;
		if (pos - start <= b->use_size)
			return soff + (pos - start);
		soff += b->use_size;
	}
	return soff;
}

uint32_t pts_perf_queue_losses(const struct pts_perf *perf, uint32_t i,
			       uint64_t *offsets, uint32_t cap)
{
	if (!perf || i >= perf->nr_queues)
		return 0;
	const struct pts_perf_queue *q = &perf->queues[i];
	uint32_t n = 0;
	for (uint32_t k = 0; k < perf->nr_aux; k++) {
		const struct pts_perf_aux_note *a = &perf->aux[k];
		if (!(a->flags & PTS_PERF_AUX_TRUNCATED))
			continue;
		/* The same rule as the queue's AUX counts (perfdata_scan.c). */
		if (q->cpu >= 0 ? q->cpu != a->cpu : q->tid != a->tid)
			continue;
		uint64_t off = aux_to_stream(perf, q, a->offset + a->size);
		if (n < cap) {
			/* AUX records come in time order: keep ascending */
			uint32_t at = n;
			while (at > 0 && offsets[at - 1] > off) {
				offsets[at] = offsets[at - 1];
				at--;
			}
			offsets[at] = off;
		}
		n++;
	}
	return n;
}
