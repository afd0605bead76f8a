/* The streaming packet decoder: chunks of any size in, packets with their
 * stream offsets out.
 *
 * Stages (dec->state): SEARCH for a PSB (at the start, unless no_sync, and
 * after every decode error), PSB (a PSB was found after a reported skip and
 * is the next packet), SYNCED (decoding packets), DONE (the end was
 * reported).
 *
 * Input: the caller's view (struct pts_input) plus a small carry buffer. The
 * carry holds the bytes [off, off + clen) that were taken from earlier views
 * but not decoded yet (a packet cut by a chunk edge); the view's next byte is
 * at stream offset off + clen. No pointer into a view is kept across calls,
 * so a chunk may be freed or reused once the decoder asked for the next one.
 *
 * Fast path: pts_fast_decode() (decoder_fast.c) decodes straight out of the
 * view while at least PTS_PKT_MAX bytes are left (so that no packet can be
 * cut); everything near a chunk edge, inside a PEBS block, or in error goes
 * through pts_dec_one().
 *
 * PSB search: a counter of the current run of 02 82 pairs, fed byte by byte
 * at chunk edges and with pts_psb_find() in between, so that a PSB cut by a
 * chunk edge is found like any other. The PSB of a run is its last 16 bytes
 * (see psb_search.c); the search begins at the error offset (libipt's
 * pt_pkt_sync_forward() also looks up to 15 bytes back, into bytes already
 * decoded as other packets; we do not, so a skip never goes backwards).
 *
 * Last-IP: reset at each PSB (the CPU resets its own when it writes one) and
 * kept across OVF (SDM: after an overflow the first IP is compressed against
 * one sent before it). libipt's ptdump resets its last-IP only when it
 * synchronizes, not at every PSB; pts_print_ptdump() keeps its own copy.
 */
#include "packets_internal.h"

#include <stddef.h>
#include <stdlib.h>

enum pts_dec_state {
	PTS_DEC_SEARCH,
	PTS_DEC_PSB,
	PTS_DEC_SYNCED,
	PTS_DEC_DONE
};

struct pts_pkt_decoder {
	struct pts_pkt_config config;
	struct pts_errata errata;
	uint64_t off; /* stream offset of carry[0], or of the view's next byte */
	struct pts_lastip lip;
	uint8_t state;
	uint8_t ended; /* pts_pkt_end() was called */
	uint8_t blk;   /* 0 outside a PEBS block, else the BIP payload size */
	uint8_t clen;
	uint8_t carry[32];
	unsigned run;        /* SEARCH: bytes of the current 02 82 run, capped */
	uint64_t skip_begin; /* SEARCH: first byte not decoded as a packet */
	uint64_t psb_off;    /* PSB: offset of the PSB to hand out */
	int pending;         /* a condition met after some packets, or 0 */
	uint64_t err_begin, err_end;
	struct pts_fast_tab fast; /* the fast path's tables (decoder_fast.c) */
};

static void pts_dec_start(struct pts_pkt_decoder *dec, uint64_t offset,
			  int synced)
{
	dec->off = offset;
	dec->clen = 0;
	dec->ended = 0;
	dec->blk = 0;
	dec->run = 0;
	dec->pending = 0;
	dec->skip_begin = offset;
	dec->psb_off = 0;
	dec->err_begin = dec->err_end = offset;
	pts_lastip_reset(&dec->lip);
	dec->state = synced ? PTS_DEC_SYNCED : PTS_DEC_SEARCH;
}

struct pts_pkt_decoder *pts_pkt_decoder_new(const struct pts_pkt_config *config)
{
	struct pts_pkt_decoder *dec = calloc(1, sizeof(*dec));

	if (!dec)
		return NULL;
	if (config)
		dec->config = *config;
	pts_cpu_errata(&dec->config.cpu, &dec->errata);
	pts_fast_init(&dec->fast, dec->errata.skd007);
	pts_dec_start(dec, dec->config.base_offset, dec->config.no_sync);
	return dec;
}

void pts_pkt_decoder_free(struct pts_pkt_decoder *dec)
{
	free(dec);
}

void pts_pkt_end(struct pts_pkt_decoder *dec)
{
	if (dec)
		dec->ended = 1;
}

void pts_pkt_error_range(const struct pts_pkt_decoder *dec, uint64_t *begin,
			 uint64_t *end)
{
	if (begin)
		*begin = dec ? dec->err_begin : 0;
	if (end)
		*end = dec ? dec->err_end : 0;
}

uint64_t pts_pkt_offset(const struct pts_pkt_decoder *dec)
{
	return dec ? dec->off : 0;
}

void pts_pkt_reset(struct pts_pkt_decoder *dec, uint64_t offset, int at_psb)
{
	if (dec)
		pts_dec_start(dec, offset, at_psb);
}

/* ------------------------------------------------------------------------ */
/* Packet side effects: last-IP and the PEBS block context.                 */

/* Which packets keep a PEBS block open is perf's intel_pt_upd_pkt_ctx():
 * timing, FUP, power and BIP packets do; every other packet ends the block. */
static int pts_keeps_block(unsigned kind)
{
	switch (kind) {
	case PTS_PKT_PAD:
	case PTS_PKT_TSC:
	case PTS_PKT_TMA:
	case PTS_PKT_MTC:
	case PTS_PKT_FUP:
	case PTS_PKT_CYC:
	case PTS_PKT_CBR:
	case PTS_PKT_MNT:
	case PTS_PKT_EXSTOP:
	case PTS_PKT_PWRE:
	case PTS_PKT_PWRX:
	case PTS_PKT_BIP:
		return 1;
	default:
		return 0;
	}
}

static void pts_dec_apply(struct pts_pkt_decoder *dec, struct pts_packet *pkt)
{
	switch (pkt->kind) {
	case PTS_PKT_TIP:
	case PTS_PKT_TIP_PGE:
	case PTS_PKT_TIP_PGD:
	case PTS_PKT_FUP:
		/* The parser refused the reserved IPBytes already. */
		if (pts_lastip_update(&dec->lip, pkt->ipc, pkt->u.ip.payload,
				      &pkt->u.ip.ip) <= 0)
			pkt->u.ip.ip = 0;
		break;
	case PTS_PKT_PSB:
		pts_lastip_reset(&dec->lip);
		break;
	default:
		break;
	}
	if (pkt->kind == PTS_PKT_BBP)
		dec->blk = pkt->u.bbp.sz ? 4 : 8;
	else if (!pts_keeps_block(pkt->kind))
		dec->blk = 0;
}

/* ------------------------------------------------------------------------ */
/* The slow path: one packet from the carry and the view.                   */

/* pts_pkt_parse() plus the one erratum that changes packet boundaries.
 * SKD007: an OVF right after a 2-byte CYC may have been written inside the
 * CYC; libipt then reports the OVF (one byte later) and drops the CYC. It
 * needs the byte after the CYC, which at the end of the stream is missing:
 * then the CYC stands. Returns the bytes consumed. */
static int pts_dec_parse(const struct pts_pkt_decoder *dec, const uint8_t *buf,
			 size_t len, int at_end, struct pts_packet *pkt)
{
	int r = pts_pkt_parse(buf, len, dec->blk, pkt);

	if (r != 2 || pkt->kind != PTS_PKT_CYC || !dec->errata.skd007 ||
	    buf[1] != PTS_OPC_EXT)
		return r;
	if (len < 3)
		return at_end ? r : -PTS_ERR_TRUNCATED;
	if (buf[2] != 0xf3)
		return r;
	pts_pkt_clear(pkt, 1);
	pkt->kind = PTS_PKT_OVF;
	pkt->size = 2;
	return 3;
}

static void pts_dec_error(struct pts_pkt_decoder *dec, uint64_t begin,
			  uint64_t end)
{
	dec->err_begin = begin;
	dec->err_end = end;
}

/* Consumes @n bytes: first from the carry, then from the view. */
static void pts_dec_consume(struct pts_pkt_decoder *dec, struct pts_input *in,
			    size_t n)
{
	if (n < dec->clen) {
		memmove(dec->carry, dec->carry + n, dec->clen - n);
		dec->clen = (uint8_t)(dec->clen - n);
	} else {
		in->pos += n - dec->clen;
		dec->clen = 0;
	}
	dec->off += n;
}

/* Decodes the packet at dec->off into @pkt. Returns 1, or a condition. */
static int pts_dec_one(struct pts_pkt_decoder *dec, struct pts_input *in,
		       struct pts_packet *pkt)
{
	uint8_t window[sizeof(dec->carry)];
	size_t avail = in->size - in->pos, take, len;
	const uint8_t *buf;
	int all, r;

	if (dec->clen == 0) {
		if (avail == 0) {
			if (!dec->ended)
				return -PTS_ERR_AGAIN;
			dec->state = PTS_DEC_DONE;
			return -PTS_ERR_EOS;
		}
		buf = in->data + in->pos;
		len = avail;
	} else {
		take = sizeof(window) - dec->clen;
		if (take > avail)
			take = avail;
		memcpy(window, dec->carry, dec->clen);
		if (take)
			memcpy(window + dec->clen, in->data + in->pos, take);
		buf = window;
		len = dec->clen + take;
	}
	/* Does the window reach the last byte fed so far? */
	all = len == dec->clen + avail;

	r = pts_dec_parse(dec, buf, len, all && dec->ended, pkt);
	if (r > 0) {
		uint64_t at = dec->off;

		pts_dec_consume(dec, in, (size_t)r);
		pkt->offset += at; /* 1 for the SKD007 OVF, else 0 */
		pts_dec_apply(dec, pkt);
		return 1;
	}
	if (r == -PTS_ERR_TRUNCATED) {
		/* A window that does not reach the end holds >= 16 bytes,
		 * which always decide a packet. */
		if (!all || len > sizeof(dec->carry))
			return -PTS_ERR_INTERNAL;
		if (!dec->ended) {
			memmove(dec->carry, buf, len);
			in->pos = in->size;
			dec->clen = (uint8_t)len;
			return -PTS_ERR_AGAIN;
		}
		pts_dec_error(dec, dec->off, dec->off + len);
		in->pos = in->size;
		dec->clen = 0;
		dec->off += len;
		dec->state = PTS_DEC_DONE;
		return r;
	}

	/* A decode error: report it, then search the next PSB from here. */
	pts_dec_error(dec, dec->off, dec->off + 1);
	dec->state = PTS_DEC_SEARCH;
	dec->skip_begin = dec->off;
	dec->run = 0;
	return r < 0 ? r : -PTS_ERR_INTERNAL;
}

/* ------------------------------------------------------------------------ */
/* PSB search.                                                               */

/* Feeds byte @b to the run counter. Returns 1 when a run of at least eight
 * pairs ended just before @b (then @b is not consumed, and *@lone says
 * whether an unpaired 02 sits between the run and @b). */
static inline int pts_run_step(unsigned *run, uint8_t b, unsigned *lone)
{
	unsigned r = *run;

	if (!(r & 1)) {
		if (b == PTS_OPC_EXT) {
			*run = r + 1;
			return 0;
		}
		*run = 0;
		*lone = 0;
		return r >= PTS_PSB_SIZE;
	}
	if (b == PTS_EXT_PSB) {
		/* Only the last 16 bytes of a run matter: cap, keep parity. */
		*run = r + 1 > PTS_PSB_SIZE ? PTS_PSB_SIZE : r + 1;
		return 0;
	}
	*run = b == PTS_OPC_EXT ? 1 : 0;
	*lone = 1;
	return r >= PTS_PSB_SIZE + 1;
}

/* A run ended at dec->off (the next byte to decode, after the unpaired 02 was
 * put back): its last 16 bytes are the PSB. Returns -SKIPPED when bytes were
 * skipped before it, else 1; the PSB is handed out next either way. */
static int pts_dec_found(struct pts_pkt_decoder *dec, unsigned lone)
{
	if (lone) {
		memmove(dec->carry + 1, dec->carry, dec->clen);
		dec->carry[0] = PTS_OPC_EXT;
		dec->clen++;
		dec->off--;
	}
	dec->psb_off = dec->off - PTS_PSB_SIZE;
	dec->state = PTS_DEC_PSB;
	dec->run = 0;
	if (dec->psb_off > dec->skip_begin) {
		pts_dec_error(dec, dec->skip_begin, dec->psb_off);
		return -PTS_ERR_SKIPPED;
	}
	return 1;
}

/* Counts the run of pairs that ends the bytes [@from, @n) of @p (the part a
 * following chunk may extend), capped as pts_run_step() caps. */
static unsigned pts_tail_run(const uint8_t *p, size_t from, size_t n)
{
	size_t s = n;

	if (s > from && p[s - 1] == PTS_OPC_EXT)
		s--;
	while (s >= from + 2 && n - s + 2 <= PTS_PSB_SIZE + 1 &&
	       p[s - 2] == PTS_OPC_EXT && p[s - 1] == PTS_EXT_PSB)
		s -= 2;
	return (unsigned)(n - s);
}

/* Searches the carry and the view for the next PSB. Returns 1 or -SKIPPED
 * when found (see pts_dec_found()), -AGAIN when the view is used up, or, at
 * the end of the stream, -SKIPPED for the bytes skipped or -EOS. */
static int pts_dec_search(struct pts_pkt_decoder *dec, struct pts_input *in)
{
	const uint8_t *p = in->data;
	size_t i = in->pos, n = in->size;
	uint64_t base;
	unsigned lone = 0;

	while (dec->clen) {
		if (pts_run_step(&dec->run, dec->carry[0], &lone))
			return pts_dec_found(dec, lone);
		pts_dec_consume(dec, in, 1);
	}

	base = dec->off - i;
	while (i < n) {
		if (dec->run == 0) {
			ptrdiff_t at = pts_psb_find(p + i, n - i, 0);
			size_t e;

			if (at < 0) {
				/* No run of 16 bytes; one may start in the
				 * last 16 and go on in the next chunk. */
				if (n - i > PTS_PSB_SIZE + 1)
					i = n - PTS_PSB_SIZE - 1;
				dec->run = pts_tail_run(p, i, n);
				i = n;
				break;
			}
			e = i + (size_t)at + PTS_PSB_SIZE;
			if (e + 1 < n || (e + 1 == n && p[e] != PTS_OPC_EXT)) {
				in->pos = e;
				dec->off = base + e;
				return pts_dec_found(dec, 0);
			}
			/* The run reaches the end of the view: the next chunk
			 * may extend it, which moves its PSB. */
			dec->run = PTS_PSB_SIZE + (unsigned)(n - e);
			i = n;
			break;
		}
		if (pts_run_step(&dec->run, p[i], &lone)) {
			in->pos = i;
			dec->off = base + i;
			return pts_dec_found(dec, lone);
		}
		i++;
	}

	in->pos = n;
	dec->off = base + n;
	if (!dec->ended)
		return -PTS_ERR_AGAIN;

	/* The end of the stream ends the last run, too. */
	if (dec->run >= PTS_PSB_SIZE)
		return pts_dec_found(dec, dec->run & 1);
	dec->state = PTS_DEC_DONE;
	if (dec->off > dec->skip_begin) {
		pts_dec_error(dec, dec->skip_begin, dec->off);
		return -PTS_ERR_SKIPPED;
	}
	return -PTS_ERR_EOS;
}

/* ------------------------------------------------------------------------ */
/* The API.                                                                  */

/* A packet the slow path decoded into @pkts[*n], by @skim's actions: kept
 * (*n + 1), summed up or handed on. Returns 1 when it ends the batch. */
static int pts_dec_skim(const struct pts_skim_ctx *skim,
			const struct pts_packet *pkts, int *n)
{
	const struct pts_packet *pk = &pkts[*n];

	switch (skim->actions[pk->kind]) {
	case PTS_SKIM_SKIP:
		pts_skim_add(skim->sum, pk);
		return 0;
	case PTS_SKIM_CALL:
		skim->call->fn(skim->call->ctx, pk, 1);
		return 0;
	case PTS_SKIM_STOP:
		++*n;
		return 1;
	default:
		++*n;
		return 0;
	}
}

/* pts_pkt_next_batch() (@counts and @skim NULL: packets into @pkts),
 * pts_pkt_count_batch() (@counts: a packet only adds 1 to @counts[kind];
 * the slow path decodes into a scratch packet) and pts_pkt_skim_batch()
 * (@skim: packets into @pkts by its actions), each its own copy. */
static PTS_ALWAYS_INLINE int pts_dec_batch(struct pts_pkt_decoder *dec,
					   struct pts_input *in,
					   struct pts_packet *pkts,
					   uint64_t *counts,
					   const struct pts_skim_ctx *skim,
					   int max)
{
	struct pts_input none = {NULL, 0, 0};
	struct pts_packet scratch;
	int n = 0, r = 0, stop = 0;

	if (!dec || (!pkts && !counts) || max <= 0)
		return -PTS_ERR_INVALID;
	if (!in)
		in = &none;
	if (in->pos > in->size || (!in->data && in->size))
		return -PTS_ERR_INVALID;
	if (dec->pending) {
		r = dec->pending;
		dec->pending = 0;
		return r;
	}

	while (n < max && !stop) {
		/* Progress guard: every round hands out a packet, takes
		 * bytes, changes stage, or ends the call. */
		const uint64_t off0 = dec->off;
		const size_t pos0 = in->pos;
		const uint8_t state0 = dec->state, clen0 = dec->clen;
		const unsigned run0 = dec->run;
		const int n0 = n;
		struct pts_packet *const slot = counts ? &scratch : pkts + n;

		switch (dec->state) {
		case PTS_DEC_SYNCED:
			if (dec->clen == 0 && dec->blk == 0 &&
			    in->size - in->pos >= PTS_PKT_MAX) {
				const uint64_t at = dec->off;

				n += counts ? pts_fast_count(&dec->fast, in,
							     &dec->off,
							     &dec->lip.ip,
							     &dec->blk, counts,
							     max - n)
				     : skim ? pts_fast_skim(&dec->fast, in,
							    &dec->off,
							    &dec->lip.ip,
							    &dec->blk, slot,
							    max - n, skim,
							    &stop)
					    : pts_fast_decode(&dec->fast, in,
							      &dec->off,
							      &dec->lip.ip,
							      &dec->blk, slot,
							      max - n);
				/* Stopped short of the edge: a packet the
				 * slow path must see. */
				if (n > n0 || dec->off > at || stop)
					break;
			}
			r = pts_dec_one(dec, in, slot);
			if (r > 0) {
				if (counts)
					counts[slot->kind]++;
				if (skim)
					stop = pts_dec_skim(skim, pkts, &n);
				else
					n++;
			}
			break;
		case PTS_DEC_SEARCH:
			r = pts_dec_search(dec, in);
			break;
		case PTS_DEC_PSB:
			pts_pkt_clear(slot, dec->psb_off);
			slot->kind = PTS_PKT_PSB;
			slot->size = PTS_PSB_SIZE;
			pts_dec_apply(dec, slot);
			dec->state = PTS_DEC_SYNCED;
			if (counts)
				counts[PTS_PKT_PSB]++;
			if (skim)
				stop = pts_dec_skim(skim, pkts, &n);
			else
				n++;
			r = 1;
			break;
		default:
			r = -PTS_ERR_EOS;
			break;
		}
		if (r < 0)
			break;
		if (n == n0 && dec->off == off0 && in->pos == pos0 &&
		    dec->state == state0 && dec->clen == clen0 &&
		    dec->run == run0) {
			r = -PTS_ERR_NO_PROGRESS;
			break;
		}
	}

	if (n == 0 && !stop)
		return r;
	/* Report a condition met after some packets on the next call. AGAIN
	 * is not kept: the caller may feed the next chunk right away. */
	if (r < 0 && r != -PTS_ERR_AGAIN)
		dec->pending = r;
	return n;
}

int pts_pkt_next_batch(struct pts_pkt_decoder *dec, struct pts_input *in,
		       struct pts_packet *pkts, int max)
{
	return pkts ? pts_dec_batch(dec, in, pkts, NULL, NULL, max)
		    : -PTS_ERR_INVALID;
}

int pts_pkt_count_batch(struct pts_pkt_decoder *dec, struct pts_input *in,
			uint64_t *counts, int max)
{
	return counts ? pts_dec_batch(dec, in, NULL, counts, NULL, max)
		      : -PTS_ERR_INVALID;
}

int pts_pkt_skim_batch(struct pts_pkt_decoder *dec, struct pts_input *in,
		       const uint8_t *actions, struct pts_packet *pkts, int max,
		       struct pts_skim *sum, const struct pts_skim_call *call)
{
	const struct pts_skim_ctx skim = {actions, sum, call};

	if (!pkts || !actions || !sum || (call && !call->fn))
		return -PTS_ERR_INVALID;
	if (!call)
		for (int k = 0; k < PTS_PKT_KIND_COUNT; k++)
			if (actions[k] == PTS_SKIM_CALL)
				return -PTS_ERR_INVALID;
	return pts_dec_batch(dec, in, pkts, NULL, &skim, max);
}

int pts_pkt_next(struct pts_pkt_decoder *dec, struct pts_input *in,
		 struct pts_packet *pkt)
{
	int r = pts_pkt_next_batch(dec, in, pkt, 1);

	return r == 1 ? pkt->size : r;
}
