/* The streaming decoder's fast path: packets straight out of the caller's
 * view while at least PTS_PKT_MAX bytes are left, so that no packet can be
 * cut (decoder.c does the rest: chunk edges, PEBS blocks, errors, search).
 *
 * The loop decodes the common packets by a table indexed by the first byte,
 * without a branch per kind (random kinds would make such branches
 * mispredict); the others (CYCs of two bytes or more, long TNT, sext-48
 * IPs, extended packets, MODE) go to pts_fast_rare(), by pts_pkt_parse() for
 * the rarest. It stops, leaving the packet to the slow path, at errors and at
 * the SKD007 case, and after a BBP (PEBS block context).
 *
 * What limits it is the number of instructions a packet takes, not the
 * chain from one packet's position to the next (first byte -> table ->
 * size): measured on the benchmark stream (2 bytes a packet; Zen 5, shared
 * core), decoding the packets from positions found beforehand, four
 * PSB-delimited segments sized side by side, was no faster than this loop
 * once the sizing was counted, and a plain loop that only stores 32 bytes a
 * packet runs at about 2.3 instructions a cycle. So the table step is kept
 * as short as it can be: what only a few packets need (sign extension,
 * shifting a CYC payload) is done by pts_fast_rare(), and one bound check
 * covers both the input and the batch. Earlier attempts, looking the sizes
 * up ahead for a block of bytes and crossing runs of one-byte packets found
 * by an SSE2 mask, were slower too when every packet is stored; so was
 * walking the 64-byte blocks of decoder_blocks.c (sized one block ahead) and
 * storing each packet: 386 MB/s against 420 for this loop, which is bound
 * by its instructions and stores there. Counting (pts_fast_count()) stores
 * none, and there those blocks are 2.5 times as fast.
 */
#include "packets_internal.h"

#include <stddef.h>

#if defined(__GNUC__) || defined(__clang__)
#define PTS_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define PTS_UNLIKELY(x) (x)
#endif

/* How the table step decodes a packet by its first byte. An entry says how
 * to make the packet's words from the 8 bytes after the first byte (raw):
 *   word 0  = c0 | (raw & mask)
 *   last-IP = ((last-IP ^ raw) & keep) ^ raw   (raw where keep is 0)
 *   word 1  = c1 | (last-IP & sel)
 * Size 0 sends the byte to pts_fast_rare(): every packet whose size does
 * not follow from its first byte, the CYCs of two bytes or more (their
 * payload is shifted), the sext-48 IPs (sign extension), and errors. */
/* The IP packet kinds by the low 5 bits of their first byte (0: none). */
static const uint8_t ip_kind[32] = {
	[0x0d] = PTS_PKT_TIP,
	[0x11] = PTS_PKT_TIP_PGE,
	[0x01] = PTS_PKT_TIP_PGD,
	[0x1d] = PTS_PKT_FUP,
};

static void pts_fast_table(struct pts_fast_op *ops, uint8_t *sizes)
{
	memset(ops, 0, 256 * sizeof(*ops));
	for (unsigned b = 0; b < 256; b++) {
		struct pts_fast_op *op = ops + b;
		unsigned kind = 0, ipc = 0, size = 0;

		op->keep = ~0ull;
		if (b == PTS_OPC_PAD) {
			kind = PTS_PKT_PAD;
			size = 1;
		} else if (!(b & 1) && b != PTS_OPC_EXT) {
			unsigned pl = b >> 1, cnt = pts_top_bit(pl);

			kind = PTS_PKT_TNT8;
			size = 1;
			op->c0 = pl & ~(1u << cnt);
			op->c1 = cnt;
		} else if ((b & 7) == 3) {
			kind = PTS_PKT_CYC; /* one byte: Exp clear */
			size = 1;
			op->c0 = b >> 3;
		} else if (ip_kind[b & 0x1f] && pts_ipc_bytes[b >> 5] != 0xff &&
			   (b >> 5) != PTS_IPC_SEXT_48) {
			ipc = b >> 5;
			kind = ip_kind[b & 0x1f];
			size = 1 + pts_ipc_bytes[ipc];
			op->mask = pts_ipc_mask[ipc];
			if (ipc) {
				op->sel = ~0ull;
				op->keep = ~op->mask;
			}
		} else if (b == PTS_OPC_MTC) {
			kind = PTS_PKT_MTC;
			size = 2;
			op->mask = 0xff;
		} else if (b == PTS_OPC_TSC) {
			kind = PTS_PKT_TSC;
			size = 8;
			op->mask = 0xffffffffffffffull;
		} else if ((b & 7) == 7) {
			/* A longer CYC: size 0, but the kind for the counting
			 * blocks (decoder_blocks.c), which size it themselves,
			 * as they do long TNTs. */
			kind = PTS_PKT_CYC;
		} else if (b == PTS_OPC_EXT) {
			kind = PTS_PKT_TNT64;
		}
		sizes[b] = (uint8_t)size;
		op->hdr = pts_hdr(kind, size, ipc);
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
	const uint64_t stop = ~raw & 0x0101010101010101ull;
	uint64_t x;
	unsigned end;

	if (!stop)
		return 0;
	end = pts_ctz64(stop); /* bit 0 of the last byte: 8 * (n - 2) */
	x = raw & ((2ull << (end + 7)) - 1);
	*value = pts_cyc_value(p[0], x);
	return 2 + end / 8;
}

void pts_fast_init(struct pts_fast_tab *tab, int skd007)
{
	pts_fast_table(tab->ops, tab->size);
	for (int b = 0; b < 256; b++)
		tab->kind[b] = (uint8_t)tab->ops[b].hdr;
	tab->skd007 = (uint8_t)(skd007 != 0);
	tab->blocks = (uint8_t)pts_fast_blocks_supported();
	pts_fast_skim_class_tables(tab);
}

/* CYCs of two bytes or more, long TNT, sext-48 IPs, and through
 * pts_pkt_parse() extended packets and MODE (contract in
 * packets_internal.h). */
unsigned pts_fast_rare(const struct pts_fast_tab *tab, const uint8_t *q,
		       size_t avail, uint64_t off, uint64_t *lip, uint8_t *blk,
		       struct pts_packet *pk)
{
	uint64_t value;
	unsigned n;
	int r;

	if ((q[0] & 7) == 7) {
		/* SKD007: an OVF may hide in a 2-byte CYC ending in 02; the
		 * slow path looks at the byte after it. */
		if (tab->skd007 && q[1] == PTS_OPC_EXT)
			return 0;
		n = pts_fast_cyc_long(q, &value);
		if (!n)
			n = pts_fast_cyc(q, &value);
		if (!n)
			return 0;
		pts_fast_put(pk, off, pts_hdr(PTS_PKT_CYC, n, 0), value, 0);
		return n;
	}
	if (q[0] == PTS_OPC_EXT && q[1] == 0xa3) {
		/* Long TNT: common enough to skip the parser; the slow path
		 * reports one without a stop bit. */
		uint64_t v = pts_load_le(q + 2, 6);
		unsigned cnt;

		if (v < 2)
			return 0;
		cnt = pts_top_bit(v);
		pts_fast_put(pk, off, pts_hdr(PTS_PKT_TNT64, 8, 0),
			     v & ~(1ull << cnt), cnt);
		return 8;
	}

	if ((q[0] >> 5) == PTS_IPC_SEXT_48 && ip_kind[q[0] & 0x1f] &&
	    avail >= 7) {
		/* A full IP after a far transfer (kernel entry and exit):
		 * one in a few dozen packets of a trace with system calls,
		 * ten times the cost through the parser. */
		uint64_t payload = pts_load_le(q + 1, 6);

		*lip = pts_sext48(payload);
		pts_fast_put(pk, off,
			     pts_hdr(ip_kind[q[0] & 0x1f], 7, PTS_IPC_SEXT_48),
			     payload, *lip);
		return 7;
	}

	/* Extended packets, MODE, and errors (reserved IPBytes among
	 * them). */
	r = pts_pkt_parse(q, avail, 0, pk);
	if (r <= 0)
		return 0;
	pk->offset = off;
	/* No IP packet gets here: the table and the sext-48 step above
	 * decode every valid one, and the parser fails a cut one. */
	switch (pk->kind) {
	case PTS_PKT_PSB:
		*lip = 0;
		break;
	case PTS_PKT_BBP:
		*blk = pk->u.bbp.sz ? 4 : 8;
		break;
	default:
		break;
	}
	return (unsigned)r;
}

/* Skimming, the packet just decoded into @pk (= out + *got): kept
 * (*@got + 1), summed up or handed on. Returns 1, setting *@stopped, after a STOP
 * packet. */
static inline int pts_fast_kept(const struct pts_skim_ctx *skim,
				const struct pts_packet *pk, int *got,
				int *stopped)
{
	const uint8_t action = skim->actions[pk->kind];

	if (action == PTS_SKIM_SKIP) {
		pts_skim_add(skim->sum, pk);
		return 0;
	}
	if (action == PTS_SKIM_CALL) {
		skim->call->fn(skim->call->ctx, pk, 1);
		return 0;
	}
	++*got;
	if (action != PTS_SKIM_STOP)
		return 0;
	*stopped = 1;
	return 1;
}

/* The loop of pts_fast_decode() (@counting 0: packets into @out) and of
 * pts_fast_count() (@counting 1: only @counts[kind] += 1, no packet stored
 * but the rare ones, into a scratch packet). Inlined into both with
 * @counting constant, so that each is a loop of its own. */
static PTS_ALWAYS_INLINE int pts_fast_run(const struct pts_fast_tab *tab,
					  struct pts_input *in, uint64_t *offp,
					  uint64_t *lipp, uint8_t *blk,
					  struct pts_packet *out,
					  uint64_t *counts, int max,
					  const int counting,
					  const struct pts_skim_ctx *skim,
					  int *stopped)
{
	const struct pts_fast_op *const ops = tab->ops;
	const uint8_t *const sizes = tab->size;
	const uint8_t *const start = in->data + in->pos;
	const uint8_t *const dend = in->data + in->size;
	const uint8_t *const lim = dend - (PTS_PKT_MAX - 1);
	const uint8_t *q = start;
	uint64_t off = *offp, lip = *lipp;
	uint8_t bk = 0; /* a local: stores to packets cannot change it */
	struct pts_packet scratch;
	int got = 0;

	for (;;) {
		/* Every packet takes at least a byte: with no more bytes to
		 * go than room in the batch, one check covers both. */
		const size_t room = (size_t)(max - got);
		const uint8_t *const stop =
			q < lim && (size_t)(lim - q) > room ? q + room : lim;

		if (q >= stop)
			break;
		while (q < stop) {
			struct pts_packet *const pk = counting ? &scratch
							       : out + got;
			const struct pts_fast_op *op = ops + q[0];
			const uint64_t raw = pts_load_le64(q + 1);
			unsigned n = sizes[q[0]];

			if (PTS_UNLIKELY(n == 0)) {
				n = pts_fast_rare(tab, q, (size_t)(dend - q),
						  off, &lip, &bk, pk);
				if (!n)
					goto done;
				if (counting)
					counts[pk->kind]++;
				q += n;
				off += n;
				if (skim ? pts_fast_kept(skim, pk, &got, stopped)
					 : (got++, 0))
					goto done;
				if (bk)
					goto done;
				continue;
			}
			lip = ((lip ^ raw) & op->keep) ^ raw;
			if (counting)
				counts[(uint8_t)op->hdr]++;
			else
				pts_fast_put(pk, off, op->hdr,
					     op->c0 | (raw & op->mask),
					     op->c1 | (lip & op->sel));
			q += n;
			off += n;
			if (skim ? pts_fast_kept(skim, pk, &got, stopped)
				 : (got++, 0))
				goto done;
		}
	}
done:
	in->pos += (size_t)(q - start);
	*offp = off;
	/* lip.have is not read by the decoder (pts_lastip_update() only sets
	 * it): the fast path does not keep it up to date. */
	*lipp = lip;
	*blk = bk;
	return got;
}

int pts_fast_decode(const struct pts_fast_tab *tab, struct pts_input *in,
		    uint64_t *off, uint64_t *lip, uint8_t *blk,
		    struct pts_packet *out, int max)
{
	return pts_fast_run(tab, in, off, lip, blk, out, NULL, max, 0, NULL,
			    NULL);
}

int pts_fast_skim(const struct pts_fast_tab *tab, struct pts_input *in,
		  uint64_t *off, uint64_t *lip, uint8_t *blk,
		  struct pts_packet *out, int max,
		  const struct pts_skim_ctx *skim, int *stop)
{
	/* As pts_fast_count() below. */
	int got = pts_fast_skim_blocks(tab, in, off, lip, blk, out, max, skim,
				       stop);

	if (*blk || *stop || got >= max)
		return got;
	return got + pts_fast_run(tab, in, off, lip, blk, out + got, NULL,
				  max - got, 0, skim, stop);
}

int pts_fast_count(const struct pts_fast_tab *tab, struct pts_input *in,
		   uint64_t *off, uint64_t *lip, uint8_t *blk,
		   uint64_t *counts, int max)
{
	/* 64-byte blocks first (decoder_blocks.c), the table step for what
	 * they leave: the view's last bytes, a batch nearly full. */
	int got = pts_fast_count_blocks(tab, in, off, lip, blk, counts, max);

	if (*blk || got >= max)
		return got;
	return got + pts_fast_run(tab, in, off, lip, blk, NULL, counts,
				  max - got, 1, NULL, NULL);
}
