/* perf.data: the time perf's Intel PT decoder gives each sample, and the
 * stream offsets where AUX records say data was lost.
 *
 * The clock follows perf 6.1 (intel-pt-decoder.c): TSC packets set the
 * time, TMA anchors the crystal clock (CTC) to the last TSC, MTC packets
 * advance it by whole MTC periods. Matching perf matters more than being
 * exact: `perf flow --format perf` is diffed against `perf script`. */
#include "perfdata_internal.h"

/* perf tolerates a TSC up to this many ticks behind the time it has
 * (MTC-derived time may run slightly ahead of the next TSC). */
#define TSC_SLIP 0x10000

void pts_perf_clock_init(struct pts_perf_clock *c, const struct pts_perf *perf)
{
	memset(c, 0, sizeof(*c));
	struct pts_perf_pt_info info;
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

static void on_mtc(struct pts_perf_clock *c, uint32_t mtc)
{
	if (!c->have_tma)
		return;
	/* TMA holds CTC[15:0]: with a period above 8 the MTC byte has bits
	 * TMA does not give; take them from the first MTC. */
	if (c->mtc_shift > 8 && c->fixup_last_mtc) {
		uint32_t first_missing = 1u << (16 - c->mtc_shift);
		c->last_mtc |= mtc & ~(first_missing - 1);
		if (c->last_mtc >= mtc)
			c->last_mtc = (c->last_mtc - first_missing) & 0xff;
	}
	c->fixup_last_mtc = 0;
	uint32_t delta = mtc > c->last_mtc ? mtc - c->last_mtc
					   : mtc + 256 - c->last_mtc;
	c->ctc_delta += (uint64_t)delta << c->mtc_shift;
	uint64_t t = c->ctc_timestamp + ctc_to_tsc(c, c->ctc_delta);
	if (t >= c->timestamp)
		c->timestamp = t; /* perf suppresses time going backwards */
	c->last_mtc = mtc;
}

void pts_perf_clock_packet(struct pts_perf_clock *c,
			   const struct pts_packet *pkt)
{
	switch (pkt->kind) {
	case PTS_PKT_TSC:
		on_tsc(c, pkt->u.tsc);
		break;
	case PTS_PKT_TMA:
		on_tma(c, pkt->u.tma.ctc, pkt->u.tma.fc);
		break;
	case PTS_PKT_MTC:
		on_mtc(c, pkt->u.mtc_ctc);
		break;
	default:
		break;
	}
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
