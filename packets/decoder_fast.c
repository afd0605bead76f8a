/* The streaming decoder's fast path: packets straight out of the caller's
 * view while at least PTS_PKT_MAX bytes are left, so that no packet can be
 * cut (decoder.c does the rest: chunk edges, PEBS blocks, errors, search).
 *
 * The inner loop decodes the common packets by a table indexed by the first
 * byte, without a branch per kind, and makes no calls, so that its values
 * stay in registers; the rarer packets are decoded in the outer loop, by
 * pts_pkt_parse() for the rarest (extended packets other than TNT-64,
 * MODE). It stops, leaving the packet to the slow path, at
 * errors and at the SKD007 case, and after a BBP (PEBS block context).
 *
 * What limits it is the chain from one packet's position to the next (first
 * byte -> table -> size), two dependent loads per packet. Two attempts to
 * shorten it did not pay on the benchmark stream (2 bytes a packet; Zen 5):
 * looking the sizes up ahead for a block of bytes, and crossing runs of
 * one-byte packets found by an SSE2 mask in one step per 64-byte window
 * (then decoding the window's packets from its start mask): both about 7%
 * slower than this loop, the work they add outweighing the loads they save.
 */
#include "packets_internal.h"

#include <stddef.h>

/* The fast path writes a packet as four words: it relies on this layout. */
_Static_assert(sizeof(struct pts_packet) == 32, "packet layout");
_Static_assert(offsetof(struct pts_packet, kind) == 8, "packet layout");
_Static_assert(offsetof(struct pts_packet, u) == 16, "packet layout");
_Static_assert(offsetof(struct pts_packet, u.tnt.count) == 24, "layout");
_Static_assert(offsetof(struct pts_packet, u.ip.ip) == 24, "layout");

#if defined(__GNUC__) || defined(__clang__)
#define PTS_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define PTS_UNLIKELY(x) (x)
#endif

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
 *   ext     = (payload ^ sb) - sb, sb = sext << 40
 *   last-IP = (last-IP & lkeep) | (ext & sel)
 *   word 1  = c1 | (last-IP & sel)
 * so that the chain from one packet's last-IP to the next is two operations.
 * ext sign-extends a sext-48 IP's payload from bit 47 (sb = bit 47, lkeep
 * = 0: the packet replaces the whole last IP) and is the payload itself
 * for every other entry (sb = 0); it is off the last-IP chain, so far
 * branches (common in flow traces) cost the loop nothing more than near
 * ones instead of a call to the parser.
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
			if (ipc == PTS_IPC_SEXT_48) {
				op->lkeep = 0;
				op->sext = 0x80;
			}
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
		/* The loop's progress rests on this: what it decodes moves
		 * it forward. */
		if (op->size == 0)
			op->flags = PTS_OP_GENERIC;
		op->hdr = (uint32_t)pts_hdr(kind, op->size, ipc);
	}
}

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

void pts_fast_init(struct pts_fast_tab *tab, int skd007)
{
	pts_fast_table(tab->ops, skd007);
}

int pts_fast_decode(const struct pts_fast_tab *tab, struct pts_input *in,
		    uint64_t *offp, uint64_t *lipp, uint8_t *blk,
		    struct pts_packet *out, int max)
{
	const struct pts_fast_op *const ops = tab->ops;
	const uint8_t *const start = in->data + in->pos;
	const uint8_t *const dend = in->data + in->size;
	const uint8_t *const lim = dend - (PTS_PKT_MAX - 1);
	struct pts_packet *pk = out;
	struct pts_packet *const end = out + max;
	const uint8_t *q = start;
	uint64_t off = *offp, lip = *lipp;

	for (;;) {
		uint64_t value;
		unsigned n;
		int r;

		while (pk < end && q < lim) {
			const struct pts_fast_op *op;
			uint64_t raw, sb;

			op = ops + q[0];
			raw = pts_load_le64(q + 1);
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
			sb = (uint64_t)op->sext << 40;
			lip = (lip & op->lkeep) | (((raw ^ sb) - sb) & op->sel);
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
			/* Long TNT: common enough to skip the parser; the slow
			 * path reports one without a stop bit. */
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

		/* Extended packets, MODE, and errors (reserved IPBytes among
		 * them). The table decodes every valid IP packet; the IP case
		 * below keeps the last IP right should an entry ever be sent
		 * here again. */
		r = pts_pkt_parse(q, (size_t)(dend - q), 0, pk);
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
			*blk = pk[-1].u.bbp.sz ? 4 : 8;
			break;
		}
	}

	in->pos += (size_t)(q - start);
	*offp = off;
	/* lip.have is not read by the decoder (pts_lastip_update() only sets
	 * it): the fast path does not keep it up to date. */
	*lipp = lip;
	return (int)(pk - out);
}
