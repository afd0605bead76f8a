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
 * Fast path: pts_dec_fast() decodes straight out of the view while at least
 * PTS_PKT_MAX bytes are left (so that no packet can be cut), with the common
 * one- and two-byte packets and the IP packets inline; everything near a
 * chunk edge, inside a PEBS block, or in error goes through pts_dec_one().
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

/* One entry of the fast path's decode table (see pts_fast_table()). */
struct pts_fast_op {
	uint64_t mask;  /* payload bits of the 8 bytes after the first byte */
	uint64_t lkeep; /* last-IP bits the packet leaves (~0: not an IP) */
	uint64_t sel;   /* ~0 for an IP packet with an IP, else 0 */
	uint32_t hdr;   /* kind | size << 8 | ipc << 16 */
	uint8_t size;
	uint8_t flags;  /* PTS_OP_* */
	uint8_t c0;     /* constant bits of word 0 (TNT bits, CYC bits 4:0) */
	uint8_t c1;     /* constant word 1 (TNT count) */
	uint8_t shift;  /* of the payload into word 0 (CYC) */
};

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
	struct pts_fast_op ops[256]; /* the fast path's decode table */
};

static void pts_fast_table(struct pts_fast_op *ops, int skd007);

/* The fast path writes a packet as three words: it relies on this layout. */
_Static_assert(sizeof(struct pts_packet) == 32, "packet layout");
_Static_assert(offsetof(struct pts_packet, kind) == 8, "packet layout");
_Static_assert(offsetof(struct pts_packet, u) == 16, "packet layout");
_Static_assert(offsetof(struct pts_packet, u.tnt.count) == 24, "layout");
_Static_assert(offsetof(struct pts_packet, u.ip.ip) == 24, "layout");

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
	pts_fast_table(dec->ops, dec->errata.skd007);
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
/* The fast path.                                                            */

/* Writes a whole packet: header word (@hdr = kind | size << 8 | ipc << 16,
 * reserved bytes 0) and the two words of the union, as each kind the fast
 * path makes lays them out. */
static inline void pts_fast_put(struct pts_packet *pk, uint64_t off,
				uint64_t hdr, uint64_t w0, uint64_t w1)
{
#if PTS_LITTLE_ENDIAN_
	pk->offset = off;
	memcpy((unsigned char *)pk + 8, &hdr, 8);
	memcpy((unsigned char *)pk + 16, &w0, 8);
	memcpy((unsigned char *)pk + 24, &w1, 8);
#else
	pts_pkt_clear(pk, off);
	pk->kind = (uint8_t)hdr;
	pk->size = (uint8_t)(hdr >> 8);
	pk->ipc = (uint8_t)(hdr >> 16);
	switch (pk->kind) {
	case PTS_PKT_TNT8:
		pk->u.tnt.bits = w0;
		pk->u.tnt.count = (uint8_t)w1;
		break;
	case PTS_PKT_MTC:
		pk->u.mtc_ctc = (uint8_t)w0;
		break;
	case PTS_PKT_PAD:
		break;
	default: /* IP packets, CYC, TSC: 64-bit words */
		pk->u.ip.payload = w0;
		pk->u.ip.ip = w1;
		break;
	}
#endif
}

static inline uint64_t pts_hdr(unsigned kind, unsigned size, unsigned ipc)
{
	return kind | size << 8 | (uint64_t)ipc << 16;
}

/* How the fast path decodes a packet by its first byte, without a branch
 * per kind: random packet kinds make branches mispredict, which costs more
 * than decoding. The table has an entry for every packet whose size follows
 * from its first byte, and for the 2-byte CYC; PTS_OP_GENERIC sends a byte
 * to the generic code. An entry says how to make the packet's three words
 * from the 8 bytes after the first byte (raw):
 *   payload = raw & mask
 *   word 0  = c0 | payload << shift
 *   last-IP = (last-IP & lkeep) | (payload & sel)
 *   word 1  = c1 | (last-IP & sel)
 * so that the chain from one packet's last-IP to the next is two operations.
 */
enum {
	PTS_OP_CYC2 = 2,     /* CYC whose second byte must end it */
	PTS_OP_GENERIC = 0x80 /* not decoded by the table */
};

static void pts_fast_table(struct pts_fast_op *ops, int skd007)
{
	static const uint8_t ip_kind[32] = {
		[0x0d] = PTS_PKT_TIP,
		[0x11] = PTS_PKT_TIP_PGE,
		[0x01] = PTS_PKT_TIP_PGD,
		[0x1d] = PTS_PKT_FUP,
	};

	memset(ops, 0, 256 * sizeof(*ops));
	for (unsigned b = 0; b < 256; b++) {
		struct pts_fast_op *op = ops + b;
		unsigned kind = 0, ipc = 0;

		op->lkeep = ~0ull;
		if (b == PTS_OPC_PAD) {
			kind = PTS_PKT_PAD;
			op->size = 1;
		} else if (!(b & 1) && b != PTS_OPC_EXT) {
			unsigned pl = b >> 1, cnt = pts_top_bit(pl);

			kind = PTS_PKT_TNT8;
			op->size = 1;
			op->c0 = (uint8_t)(pl & ~(1u << cnt));
			op->c1 = (uint8_t)cnt;
		} else if ((b & 3) == 3) {
			kind = PTS_PKT_CYC;
			op->c0 = (uint8_t)(b >> 3);
			op->size = 1;
			if (b & 4) {
				/* SKD007 needs a look past 2-byte CYCs: leave
				 * them to the generic code then. */
				op->size = 2;
				op->flags = skd007 ? PTS_OP_GENERIC : PTS_OP_CYC2;
				op->mask = 0xfe;
				op->shift = 4;
			}
		} else if (ip_kind[b & 0x1f] && pts_ipc_bytes[b >> 5] != 0xff) {
			ipc = b >> 5;
			kind = ip_kind[b & 0x1f];
			op->size = (uint8_t)(1 + pts_ipc_bytes[ipc]);
			op->mask = pts_ipc_mask[ipc];
			if (ipc) {
				op->sel = ~0ull;
				op->lkeep = ~op->mask;
			}
			/* Rare (a first IP after a PSB, a jump far
			 * away): left to the generic code so that the
			 * loop needs no sign extension. */
			if (ipc == PTS_IPC_SEXT_48)
				op->flags = PTS_OP_GENERIC;
		} else if (b == PTS_OPC_MTC) {
			kind = PTS_PKT_MTC;
			op->size = 2;
			op->mask = 0xff;
		} else if (b == PTS_OPC_TSC) {
			kind = PTS_PKT_TSC;
			op->size = 8;
			op->mask = 0xffffffffffffffull;
		} else {
			op->flags = PTS_OP_GENERIC;
		}
		op->hdr = (uint32_t)pts_hdr(kind, op->size, ipc);
	}
}

#if defined(__GNUC__) || defined(__clang__)
#define PTS_NOINLINE __attribute__((noinline))
#define PTS_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define PTS_NOINLINE
#define PTS_UNLIKELY(x) (x)
#endif

/* A CYC of any length (up to PTS_CYC_MAX) at @p, all of whose bytes are
 * there. Returns its size, or 0 for one that is too long. */
static inline unsigned pts_fast_cyc(const uint8_t *p, uint64_t *value)
{
	uint64_t v = p[0] >> 3;
	unsigned shift = 5, n = 1, more = p[0] & 4;

	while (more) {
		if (n >= PTS_CYC_MAX)
			return 0;
		if (shift < 64)
			v |= (uint64_t)(p[n] >> 1) << shift;
		more = p[n] & 1;
		shift += 7;
		n++;
	}
	*value = v;
	return n;
}

static inline unsigned pts_ctz64(uint64_t v)
{
#if defined(__GNUC__) || defined(__clang__)
	return (unsigned)__builtin_ctzll(v);
#else
	unsigned n = 0;

	while (!(v & 1)) {
		v >>= 1;
		n++;
	}
	return n;
#endif
}

/* A CYC of 3 to 9 bytes at @p without a loop (their lengths are as random
 * as their values): the first continuation byte with Exp clear ends it, and
 * the 7-bit groups of the bytes up to it are packed by halving steps.
 * Returns its size, or 0 when it is longer. */
static inline unsigned pts_fast_cyc_long(const uint8_t *p, uint64_t *value)
{
	uint64_t raw = pts_load_le64(p + 1);
	uint64_t stop = ~raw & 0x0101010101010101ull, x;
	unsigned end;

	if (!stop)
		return 0;
	end = pts_ctz64(stop); /* bit 0 of the last byte: 8 * (n - 2) */
	x = raw & ((2ull << (end + 7)) - 1);
	x = (x >> 1) & 0x7f7f7f7f7f7f7f7full;
	x = (x & 0x007f007f007f007full) | ((x & 0x7f007f007f007f00ull) >> 1);
	x = (x & 0x00003fff00003fffull) | ((x & 0x3fff00003fff0000ull) >> 2);
	x = (x & 0x000000000fffffffull) | ((x & 0x0fffffff00000000ull) >> 4);
	*value = (uint64_t)(p[0] >> 3) | x << 5;
	return 2 + end / 8;
}

/* Decodes up to @max packets straight from the view while at least
 * PTS_PKT_MAX bytes remain. Stops early (leaving the packet to the slow
 * path) at anything it does not decode itself: errors, a PEBS block, the
 * SKD007 case. Returns the number of packets.
 *
 * The inner loop makes no calls, so that its values stay in registers; the
 * rarer packets are decoded in the outer loop. Kept out of line for the
 * same reason. */
static PTS_NOINLINE int pts_dec_fast(struct pts_pkt_decoder *dec,
				     struct pts_input *in,
				     struct pts_packet *out, int max)
{
	const struct pts_fast_op *const ops = dec->ops;
	const uint8_t *const start = in->data + in->pos;
	const uint8_t *const lim = in->data + in->size - (PTS_PKT_MAX - 1);
	struct pts_packet *pk = out;
	struct pts_packet *const end = out + max;
	const uint8_t *q = start;
	uint64_t off = dec->off, lip = dec->lip.ip;

	for (;;) {
		uint64_t value;
		unsigned n;
		int r;

		while (pk < end && q < lim) {
			const struct pts_fast_op *const op = ops + q[0];
			/* The 8 bytes after the first; the window holds 16. */
			uint64_t raw = pts_load_le64(q + 1);

			if (PTS_UNLIKELY(op->flags &
					 (PTS_OP_GENERIC | (unsigned)raw << 1) &
					 (PTS_OP_GENERIC | PTS_OP_CYC2))) {
				/* A CYC of 3 or more bytes. */
				if (!(op->flags & PTS_OP_CYC2) || !(q[1] & 1))
					break;
				n = pts_fast_cyc_long(q, &value);
				if (!n)
					break;
				pts_fast_put(pk, off, pts_hdr(PTS_PKT_CYC, n, 0),
					     value, 0);
				q += n;
				off += n;
				pk++;
				continue;
			}
			raw &= op->mask;
			lip = (lip & op->lkeep) | (raw & op->sel);
			pts_fast_put(pk, off, op->hdr, op->c0 | raw << op->shift,
				     op->c1 | (lip & op->sel));
			q += op->size;
			off += op->size;
			pk++;
		}
		if (pk >= end || q >= lim)
			break;

		if ((q[0] & 3) == 3) {
			/* SKD007: a 2-byte CYC ending in 02 is the slow
			 * path's (otherwise the table decodes all 2-byte
			 * CYCs, the loop above up to 9 bytes, and only
			 * longer ones come here). */
			if ((q[0] & 4) && q[1] == PTS_OPC_EXT)
				break;
			n = pts_fast_cyc(q, &value);
			if (!n)
				break;
			pts_fast_put(pk, off, pts_hdr(PTS_PKT_CYC, n, 0), value,
				     0);
			q += n;
			off += n;
			pk++;
			continue;
		}
		if (q[0] == PTS_OPC_EXT && q[1] == 0xa3) {
			/* Long TNT: common enough to skip the parser. */
			uint64_t v = pts_load_le(q + 2, 6);
			unsigned cnt;

			if (v < 2)
				break;
			cnt = pts_top_bit(v);
			pts_fast_put(pk, off, pts_hdr(PTS_PKT_TNT64, 8, 0),
				     v & ~(1ull << cnt), cnt);
			q += 8;
			off += 8;
			pk++;
			continue;
		}

		/* Extended packets, MODE, sext-48 IPs, and errors. */
		r = pts_pkt_parse(q, (size_t)(in->data + in->size - q), 0, pk);
		if (r <= 0)
			break;
		pk->offset = off;
		q += r;
		off += (unsigned)r;
		switch (pk->kind) {
		case PTS_PKT_TIP:
		case PTS_PKT_TIP_PGE:
		case PTS_PKT_TIP_PGD:
		case PTS_PKT_FUP:
			if (pk->ipc == PTS_IPC_SEXT_48)
				lip = pts_sext48(pk->u.ip.payload);
			else if (pk->ipc)
				lip = (lip & ~pts_ipc_mask[pk->ipc]) |
				      pk->u.ip.payload;
			pk->u.ip.ip = pk->ipc ? lip : 0;
			break;
		case PTS_PKT_PSB:
			lip = 0;
			break;
		default:
			break;
		}
		pk++;
		if (pk[-1].kind == PTS_PKT_BBP) {
			dec->blk = pk[-1].u.bbp.sz ? 4 : 8;
			break;
		}
	}

	in->pos += (size_t)(q - start);
	dec->off = off;
	/* lip.have is not read by the decoder (pts_lastip_update() only sets
	 * it): the loop does not keep it up to date. */
	dec->lip.ip = lip;
	return (int)(pk - out);
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

int pts_pkt_next_batch(struct pts_pkt_decoder *dec, struct pts_input *in,
		       struct pts_packet *pkts, int max)
{
	struct pts_input none = {NULL, 0, 0};
	int n = 0, r = 0;

	if (!dec || !pkts || max <= 0)
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

	while (n < max) {
		/* Progress guard: every round hands out a packet, takes
		 * bytes, changes stage, or ends the call. */
		const uint64_t off0 = dec->off;
		const size_t pos0 = in->pos;
		const uint8_t state0 = dec->state, clen0 = dec->clen;
		const unsigned run0 = dec->run;
		const int n0 = n;

		switch (dec->state) {
		case PTS_DEC_SYNCED:
			if (dec->clen == 0 && dec->blk == 0 &&
			    in->size - in->pos >= PTS_PKT_MAX) {
				n += pts_dec_fast(dec, in, pkts + n, max - n);
				/* Stopped short of the edge: a packet the
				 * slow path must see. */
				if (n > n0)
					break;
			}
			r = pts_dec_one(dec, in, pkts + n);
			if (r > 0)
				n++;
			break;
		case PTS_DEC_SEARCH:
			r = pts_dec_search(dec, in);
			break;
		case PTS_DEC_PSB:
			pts_pkt_clear(pkts + n, dec->psb_off);
			pkts[n].kind = PTS_PKT_PSB;
			pkts[n].size = PTS_PSB_SIZE;
			pts_dec_apply(dec, pkts + n);
			dec->state = PTS_DEC_SYNCED;
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

	if (n == 0)
		return r;
	/* Report a condition met after some packets on the next call. AGAIN
	 * is not kept: the caller may feed the next chunk right away. */
	if (r < 0 && r != -PTS_ERR_AGAIN)
		dec->pending = r;
	return n;
}

int pts_pkt_next(struct pts_pkt_decoder *dec, struct pts_input *in,
		 struct pts_packet *pkt)
{
	int r = pts_pkt_next_batch(dec, in, pkt, 1);

	return r == 1 ? pkt->size : r;
}
