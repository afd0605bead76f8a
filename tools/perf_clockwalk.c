/* perf's sample time along one AUXTRACE queue: perf_clockwalk.h. */
#include "perf_clockwalk.h"

#include <string.h>

/* Undecodable bytes in a row after which the walk gives up (the flow
 * decoder reports them; times then stay where they were). */
#define STUCK_LIMIT 64

static int is_flow_packet(int kind)
{
	switch (kind) {
	case PTS_PKT_TNT8: case PTS_PKT_TNT64: case PTS_PKT_TIP:
	case PTS_PKT_TIP_PGE: case PTS_PKT_TIP_PGD: case PTS_PKT_FUP:
	case PTS_PKT_OVF: case PTS_PKT_PSB:
		return 1;
	default:
		return 0;
	}
}

/* The next buffer into @in; 0 at the end of the queue. */
static int clock_next_buffer(struct clock_walk *c)
{
	if (c->j >= c->nr_buffers)
		return 0;
	const struct pts_perf_buffer *b =
		pts_perf_queue_buffer(c->pc->perf, c->qi, c->j);
	pts_perf_clock_buffer(&c->clock, b->reference,
			      c->j > 0 && b->consecutive);
	if (c->j == 0 || !b->consecutive) {
		if (c->j > 0)
			pts_pkt_reset(c->dec, c->soff, 0);
		c->smp.nopsb = 1; /* perf repositions: scan for a PSB */
		c->smp.synced = 0;
		c->smp.have_cur = c->smp.psb_wait = 0;
		c->smp.la_len = 0;
		c->smp.need_fetch = 1;
		if (c->j > 0) {
			/* and forgets the time until the next TSC */
			c->clock.timestamp = 0;
			c->clock.have_tma = 0;
		}
	}
	c->in = (struct pts_input){b->data, (size_t)b->use_size, 0};
	c->buf_start = c->soff;
	c->soff += b->use_size;
	c->j++;
	return 1;
}

/* The next packet of the queue into @pkt: 1, or 0 at its end. */
static int pull(struct clock_walk *c, struct pts_packet *pkt)
{
	unsigned stuck = 0;
	while (!c->ended) {
		int rc = pts_pkt_next(c->dec, &c->in, pkt);
		if (rc > 0)
			return 1;
		if (rc == -PTS_ERR_AGAIN) {
			/* a buffer that does not continue its predecessor
			 * ends the stream there */
			const struct pts_perf_buffer *b =
				c->j < c->nr_buffers
					? pts_perf_queue_buffer(c->pc->perf,
								c->qi, c->j)
					: NULL;
			if (!b || !b->consecutive)
				pts_pkt_end(c->dec);
			if (b && b->consecutive)
				clock_next_buffer(c);
		} else if (rc == -PTS_ERR_EOS) {
			if (!clock_next_buffer(c))
				c->ended = 1;
		} else if (++stuck > STUCK_LIMIT) {
			c->ended = 1; /* skipped bytes, bad packets: go on */
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* perf's sample time (perf_clockwalk.h, struct perf_sampler).               */

/* perf's "update sample time": the state's time is the current one. */
static void smp_update(struct clock_walk *c)
{
	struct perf_sampler *s = &c->smp;
	s->sample = c->clock.timestamp;
	s->cbr_seen = c->clock.cbr;
	if (s->sample > c->stamp)
		c->stamp = s->sample;
}

/* perf's estimate for a state that enters user space from nowhere (its
 * TIP.PGE) or follows an error: the queue time becomes the sample time
 * plus 2 TSC ticks per instruction since the last TSC/MTC, scaled by the
 * ratio of max non-turbo to current core frequency. */
static void smp_estimate(struct clock_walk *c)
{
	struct perf_sampler *s = &c->smp;
	uint64_t est = s->insn_cnt << 1;
	const struct pts_perf_clock *k = &c->clock;
	if (k->cbr && k->max_nonturbo)
		est = est * k->max_nonturbo / k->cbr;
	c->stamp = s->sample + est;
}

/* Not in sync, perf takes the IP of a packet (TIP, FUP, PSB+ FUP, ...):
 * a state in sync there, unless the flow goes on elsewhere after an error
 * (then perf failed at @ip once more: an error state). */
static void smp_sync_at(struct clock_walk *c, uint64_t ip)
{
	struct perf_sampler *s = &c->smp;
	smp_update(c);
	if (!s->resync || ip == s->resync_ip) {
		s->synced = 1;
		s->resync = 0;
	} else {
		smp_estimate(c);
	}
}

/* The next packet perf's decoder fetches: 1, or 0 at the end. */
static int smp_next(struct clock_walk *c, struct pts_packet *pkt)
{
	struct perf_sampler *s = &c->smp;
	if (s->la_len) {
		*pkt = s->la[s->la_head];
		s->la_head = (s->la_head + 1) % CW_LOOKAHEAD;
		s->la_len--;
	} else if (!pull(c, pkt)) {
		return 0;
	}
	pts_perf_clock_fetched(&c->clock, pkt->kind);
	return 1;
}

/* Puts @pkt, just taken, back in front. */
static void smp_unget(struct clock_walk *c, const struct pts_packet *pkt)
{
	struct perf_sampler *s = &c->smp;
	if (s->la_len == CW_LOOKAHEAD)
		return;
	pts_perf_clock_unfetch(&c->clock);
	s->la_head = (s->la_head + CW_LOOKAHEAD - 1) % CW_LOOKAHEAD;
	s->la[s->la_head] = *pkt;
	s->la_len++;
}

/* perf meets a packet it did not expect (an error): the sample time is
 * refreshed and estimated, and decoding resyncs from @pkt on. */
static void smp_lose_sync(struct clock_walk *c, const struct pts_packet *pkt)
{
	smp_update(c);
	smp_estimate(c);
	c->smp.synced = 0;
	smp_unget(c, pkt);
}

/* The @i-th packet ahead (0: the next), NULL past the end or too far. */
static const struct pts_packet *smp_peek(struct clock_walk *c, uint32_t i)
{
	struct perf_sampler *s = &c->smp;
	if (i >= CW_LOOKAHEAD)
		return NULL;
	while (s->la_len <= i) {
		struct pts_packet pkt;
		if (!pull(c, &pkt))
			return NULL;
		s->la[(s->la_head + s->la_len) % CW_LOOKAHEAD] = pkt;
		s->la_len++;
	}
	return &s->la[(s->la_head + i) % CW_LOOKAHEAD];
}

/* perf's look into the PSB+ ahead (the PSB itself taken): the IP of its
 * FUP, unless a TIP.PGE follows within 6 packets after PSBEND (then the
 * FUP is not where the flow is). 0: none. */
static uint64_t smp_psb_fup(struct clock_walk *c)
{
	uint64_t ip = 0;
	int after = 0;
	for (uint32_t i = 0;; i++) {
		const struct pts_packet *p = smp_peek(c, i);
		if (!p)
			return 0;
		switch (p->kind) {
		case PTS_PKT_PAD: case PTS_PKT_MNT: case PTS_PKT_TSC:
		case PTS_PKT_TMA: case PTS_PKT_MODE_EXEC: case PTS_PKT_MODE_TSX:
		case PTS_PKT_MTC: case PTS_PKT_CYC: case PTS_PKT_VMCS:
		case PTS_PKT_CBR: case PTS_PKT_PIP:
			if (after && --after == 0)
				return ip;
			break;
		case PTS_PKT_FUP:
			if (after || ip || p->ipc == PTS_IPC_SUPPRESSED)
				return ip;
			ip = p->u.ip.ip;
			break;
		case PTS_PKT_PSBEND:
			if (!ip)
				return 0;
			after = 6; /* on, to see a TIP.PGE */
			break;
		case PTS_PKT_TIP_PGE:
			return after ? 0 : ip;
		default:
			return ip;
		}
	}
}

/* The stream offset where the buffer holding offset @off ends. */
static uint64_t buffer_end(const struct clock_walk *c, uint64_t off)
{
	if (off >= c->buf_start)
		return c->soff;
	uint64_t end = 0;
	for (uint32_t j = 0; j < c->j && end <= off; j++)
		end += pts_perf_queue_buffer(c->pc->perf, c->qi, j)->use_size;
	return end;
}

/* perf's look ahead from the MTC @mtc right after a CYC: the packets
 * after it in its buffer measure the TSC ticks per cycle, up to the
 * buffer's end (perf reads no further): those read ahead already, then
 * the buffer's bytes not decoded yet (by kind and payload: no last-IP is
 * needed). */
static void smp_cyc_cal(struct clock_walk *c, const struct pts_packet *mtc)
{
	struct perf_sampler *s = &c->smp;
	struct pts_perf_cyc_cal cal;
	const uint64_t end = buffer_end(c, mtc->offset);
	uint64_t next = mtc->offset + mtc->size;
	pts_perf_cyc_cal_start(&c->clock, &cal);
	for (uint32_t i = 0; i < s->la_len; i++) {
		const struct pts_packet *p =
			&s->la[(s->la_head + i) % CW_LOOKAHEAD];
		if (p->offset + p->size > end ||
		    pts_perf_cyc_cal_step(&c->clock, &cal, p))
			return;
		next = p->offset + p->size;
	}
	/* on in the buffer being read, where the decoder goes on (not when
	 * it holds bytes back: a packet cut by the buffer's end) */
	size_t pos = c->in.pos;
	if (c->soff != end || c->buf_start + pos != next)
		return;
	while (pos < c->in.size) {
		struct pts_packet p;
		int n = pts_pkt_parse(c->in.data + pos, c->in.size - pos, 0, &p);
		if (n <= 0 || pts_perf_cyc_cal_step(&c->clock, &cal, &p))
			return;
		pos += (size_t)n;
	}
}

/* A timing packet (TSC, TMA, MTC, CYC, CBR) as perf's decoder takes it:
 * some restart the instruction count behind the estimate; an MTC right
 * after a CYC measures ahead. */
static void smp_timing(struct clock_walk *c, const struct pts_packet *pkt)
{
	struct perf_sampler *s = &c->smp;
	if (pts_perf_clock_packet(&c->clock, pkt))
		s->insn_cnt = 0;
	if (c->clock.cal_due)
		smp_cyc_cal(c, pkt);
}

/* perf's decode loop from "in sync" (or not yet in sync) up to the next
 * packet that instructions use (left in s->cur). Returns 0 at the end. */
static int smp_fetch(struct clock_walk *c)
{
	struct perf_sampler *s = &c->smp;
	struct pts_packet pkt;
	while (smp_next(c, &pkt)) {
		if (s->fetch_to && pkt.offset >= s->fetch_to) {
			smp_unget(c, &pkt);
			return 0;
		}
		if (s->nopsb) {
			if (pkt.kind != PTS_PKT_PSB)
				continue; /* perf scans for a PSB first */
			s->nopsb = 0;
		}
		if (pkt.offset < s->skip_to) {
			/* where the flow skipped: only time moves */
			smp_timing(c, &pkt);
			continue;
		}
		switch (pkt.kind) {
		case PTS_PKT_TSC: case PTS_PKT_TMA: case PTS_PKT_MTC:
			smp_timing(c, &pkt);
			break;
		case PTS_PKT_CYC:
			/* perf reads a PSB+ in sync without its CYCs */
			if (!(s->in_psb && s->synced))
				smp_timing(c, &pkt);
			break;
		case PTS_PKT_CBR:
			smp_timing(c, &pkt);
			/* in sync, a new ratio is a state of its own */
			if (s->synced && !s->in_psb &&
			    c->clock.cbr != s->cbr_seen)
				smp_update(c);
			break;
		case PTS_PKT_PSB:
			s->in_psb = 1;
			s->psb_fup_ip = 0;
			if (s->synced && s->pge) {
				/* perf first walks to the IP of the FUP in
				 * PSB+, then reads PSB+ */
				s->psb_ip = smp_psb_fup(c);
				if (s->psb_ip) {
					s->in_psb = 0; /* read later */
					s->psb_wait = 1;
					s->need_fetch = 0;
					return 1;
				}
			}
			break;
		case PTS_PKT_PSBEND:
			s->in_psb = 0;
			if (!s->synced) {
				/* a FUP in PSB+ syncs (a state without a
				 * sample); without one perf waits for an IP */
				if (s->psb_fup_ip) {
					s->pge = 1;
					smp_sync_at(c, s->psb_fup_ip);
				}
			} else {
				smp_update(c); /* a PSB event state */
			}
			break;
		case PTS_PKT_OVF:
			/* an error state at the current time; perf then
			 * resyncs at the next IP */
			s->in_psb = 0;
			s->insn_cnt = 0;
			smp_update(c);
			smp_estimate(c);
			s->synced = 0;
			break;
		case PTS_PKT_STOP:
			s->pge = 0;
			break;
		case PTS_PKT_TIP_PGE:
			s->pge = 1;
			if (pkt.ipc == PTS_IPC_SUPPRESSED)
				break;
			if (s->synced) {
				smp_update(c);
			} else {
				smp_sync_at(c, pkt.u.ip.ip);
			}
			smp_estimate(c);
			break;
		case PTS_PKT_FUP:
			if (s->in_psb) {
				if (pkt.ipc != PTS_IPC_SUPPRESSED)
					s->psb_fup_ip = pkt.u.ip.ip;
				s->pge = 1;
				break;
			}
			if (!s->synced) {
				if (pkt.ipc != PTS_IPC_SUPPRESSED)
					smp_sync_at(c, pkt.u.ip.ip);
				break;
			}
			goto use;
		case PTS_PKT_TIP: case PTS_PKT_TIP_PGD:
			if (!s->synced) {
				if (pkt.ipc != PTS_IPC_SUPPRESSED)
					smp_sync_at(c, pkt.u.ip.ip);
				break;
			}
			goto use;
		case PTS_PKT_TNT8: case PTS_PKT_TNT64:
			if (!s->synced || !pkt.u.tnt.count)
				break;
			s->tnt_left = pkt.u.tnt.count;
			s->tnt_used = 0;
			goto use;
		default:
			break;
		}
		continue;
	use:
		s->cur = pkt;
		s->have_cur = 1;
		s->need_fetch = 0;
		return 1;
	}
	return 0;
}

/* The TIP or TIP.PGD after an asynchronous FUP, as perf's FUP/TIP walk
 * reads it: the state it ends is in sync, at the time of that TIP. */
static void smp_fup_done(struct clock_walk *c)
{
	struct perf_sampler *s = &c->smp;
	struct pts_packet pkt;
	s->have_cur = 0;
	s->need_fetch = 1;
	while (smp_next(c, &pkt)) {
		switch (pkt.kind) {
		case PTS_PKT_MTC: case PTS_PKT_CYC: case PTS_PKT_CBR:
			smp_timing(c, &pkt);
			break;
		case PTS_PKT_TIP: case PTS_PKT_TIP_PGD:
			s->pge = pkt.kind == PTS_PKT_TIP;
			smp_update(c);
			return;
		case PTS_PKT_TIP_PGE:
			s->pge = 1;
			smp_update(c);
			smp_estimate(c);
			return;
		case PTS_PKT_PIP: case PTS_PKT_MODE_EXEC: case PTS_PKT_VMCS:
		case PTS_PKT_MNT: case PTS_PKT_PAD:
			break;
		default:
			/* perf: "Missing TIP after FUP", an error; it
			 * resyncs from this packet on */
			smp_lose_sync(c, &pkt);
			return;
		}
	}
}

/* The last instruction of a run takes what it needs from s->cur. */
static void smp_use(struct clock_walk *c, int need)
{
	struct perf_sampler *s = &c->smp;
	if (need == CW_NONE || !s->have_cur)
		return;
	int tnt = s->cur.kind == PTS_PKT_TNT8 || s->cur.kind == PTS_PKT_TNT64;
	if (s->cur.kind == PTS_PKT_FUP) {
		/* a branch before the FUP's IP: perf fails there; go on
		 * as if the FUP was done */
		smp_fup_done(c);
		return;
	}
	if (tnt && (need == CW_BIT || need == CW_RET)) {
		/* the bit leaves perf inside the TNT (or in sync after
		 * its last bit): a state with the current time */
		s->tnt_used = 1;
		smp_update(c);
		if (--s->tnt_left == 0) {
			s->have_cur = 0;
			s->need_fetch = 1;
		}
		return;
	}
	if (tnt) {
		/* a deferred TIP right behind the TNT: the state is in the
		 * TNT still, timed only once one of its bits was used */
		struct pts_packet pkt;
		if (smp_next(c, &pkt) && pkt.kind != PTS_PKT_TIP) {
			smp_unget(c, &pkt);
		}
		if (s->tnt_used)
			smp_update(c);
		return;
	}
	/* TIP or TIP.PGD: perf is in sync after the branch */
	if (s->cur.kind == PTS_PKT_TIP_PGD)
		s->pge = 0;
	smp_update(c);
	s->have_cur = 0;
	s->need_fetch = 1;
}

/* The PSB+ perf walked to the FUP of: read now, a PSB event state. */
static void smp_psb_done(struct clock_walk *c)
{
	struct perf_sampler *s = &c->smp;
	struct pts_packet pkt;
	s->psb_wait = 0;
	s->need_fetch = 1;
	while (smp_next(c, &pkt)) {
		switch (pkt.kind) {
		case PTS_PKT_TSC: case PTS_PKT_TMA: case PTS_PKT_MTC:
		case PTS_PKT_CBR:
			smp_timing(c, &pkt);
			break;
		case PTS_PKT_FUP:
			s->pge = 1;
			break;
		case PTS_PKT_PSBEND:
			smp_update(c);
			return;
		case PTS_PKT_PIP: case PTS_PKT_MODE_EXEC: case PTS_PKT_MODE_TSX:
		case PTS_PKT_VMCS: case PTS_PKT_MNT: case PTS_PKT_PAD:
		case PTS_PKT_CYC: /* not read in sync */
			break;
		default:
			/* an unexpected packet in PSB+: perf fails and
			 * resyncs from it */
			smp_lose_sync(c, &pkt);
			return;
		}
	}
}

void pts_clockwalk_run(struct clock_walk *c, const uint64_t *ips,
		       uint32_t n, int need, struct clockwalk_times *t)
{
	struct perf_sampler *s = &c->smp;
	if (s->resync)
		s->resync_ip = n ? ips[0] : 0;
	if (s->need_fetch)
		smp_fetch(c);
	t->head = t->body = c->stamp;
	t->split = 0;
	if (s->psb_wait) {
		uint32_t k = 0;
		while (k < n && ips[k] != s->psb_ip)
			k++;
		/* a branch before the FUP's IP would be perf's error:
		 * read the PSB+ then */
		if (k < n || need != CW_NONE) {
			t->split = k;
			s->insn_cnt += k; /* walked before the PSB+'s TSC */
			n -= k;
			smp_psb_done(c);
			smp_fetch(c);
			t->body = c->stamp;
		} else {
			t->split = n;
		}
	}
	smp_use(c, need);
	t->last = c->stamp;
	s->insn_cnt += n;
}

uint64_t pts_clockwalk_event(struct clock_walk *c, int async_done)
{
	struct perf_sampler *s = &c->smp;
	if (!async_done)
		return c->stamp;
	/* the flow stopped at the FUP's IP: perf has that FUP by now (it
	 * may not have been fetched yet when no instruction led to it) */
	if (s->need_fetch)
		smp_fetch(c);
	if (s->psb_wait)
		smp_psb_done(c); /* an asynchronous FUP at the PSB+'s FUP IP */
	if (s->need_fetch)
		smp_fetch(c);
	if (s->have_cur && s->cur.kind == PTS_PKT_FUP)
		smp_fup_done(c);
	return c->stamp;
}

uint64_t pts_clockwalk_error(struct clock_walk *c, uint64_t off)
{
	struct perf_sampler *s = &c->smp;
	/* an error before any instruction of the stretch (no code at the
	 * TIP.PGE's IP): perf has read up to that packet, its TSC included.
	 * Resyncing after an error, no further: where perf takes the flow
	 * again, the flow's next run says (an IP on the way matches none:
	 * perf fails there too). */
	if (s->need_fetch) {
		s->fetch_to = s->resync ? off + 1 : 0;
		s->resync_ip = 0;
		smp_fetch(c);
		s->fetch_to = 0;
	}
	smp_update(c);
	smp_estimate(c);
	if (!s->synced)
		return c->stamp; /* not synced yet: perf is still looking */
	s->synced = 0;
	s->resync = 1;
	s->have_cur = s->psb_wait = 0;
	s->need_fetch = 1;
	return c->stamp;
}

void pts_clockwalk_skip(struct clock_walk *c, uint64_t end)
{
	c->smp.skip_to = end;
}

/* ------------------------------------------------------------------------ */
/* The time at an offset (pts_clockwalk_at).                                */

uint64_t pts_clockwalk_at(struct clock_walk *c, uint64_t off)
{
	while (!c->ended) {
		if (c->have_pending) {
			if (c->pending.offset > off)
				break;
			c->have_pending = 0;
		}
		struct pts_packet pkt;
		if (!smp_next(c, &pkt))
			break;
		if (is_flow_packet(pkt.kind)) {
			c->pending = pkt;
			c->have_pending = 1;
		} else {
			pts_perf_clock_packet(&c->clock, &pkt);
			if (c->clock.cal_due)
				smp_cyc_cal(c, &pkt);
		}
		if (c->on_packet)
			c->on_packet(c->ctx, c, &pkt);
	}
	if (c->clock.timestamp > c->stamp)
		c->stamp = c->clock.timestamp;
	return c->stamp;
}

int pts_clockwalk_init(struct clock_walk *c, struct perf_cmd *pc, uint32_t qi)
{
	memset(c, 0, sizeof(*c));
	c->pc = pc;
	c->qi = qi;
	c->nr_buffers = pts_perf_queue_get(pc->perf, qi)->nr_buffers;
	const struct pts_pkt_config config = {.cpu = pc->machine};
	c->dec = pts_pkt_decoder_new(&config);
	if (!c->dec)
		return -PTS_ERR_NOMEM;
	pts_perf_clock_init(&c->clock, pc->perf);
	clock_next_buffer(c);
	return 0;
}

void pts_clockwalk_fini(struct clock_walk *c)
{
	pts_pkt_decoder_free(c->dec);
	c->dec = NULL;
}
