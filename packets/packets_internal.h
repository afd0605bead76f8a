/* Internals shared by the packet parser, the streaming decoder and the PSB
 * search: little-endian loads, the IP compression tables and the wire
 * constants. Nothing here is part of the public API.
 */
#ifndef PTS_PACKETS_INTERNAL_H
#define PTS_PACKETS_INTERNAL_H

#include <ptscope/packets.h>

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* For the loops written once and inlined with constant arguments, one
 * copy per use. */
#if defined(__GNUC__) || defined(__clang__)
#define PTS_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define PTS_ALWAYS_INLINE inline
#endif

/* Wire constants (SDM "Intel PT Packet" definitions). */
enum pts_wire {
	PTS_OPC_PAD = 0x00,
	PTS_OPC_EXT = 0x02,
	PTS_OPC_TSC = 0x19,
	PTS_OPC_MTC = 0x59,
	PTS_OPC_MODE = 0x99,
	PTS_EXT_PSB = 0x82,
	PTS_EXT_EXT2 = 0xc3,
	PTS_EXT2_MNT = 0x88,
	PTS_PSB_SIZE = 16,
	/* No packet is longer than a PSB: 16 bytes always decide a packet. */
	PTS_PKT_MAX = 16,
	/* The longest CYC accepted (see pts_pkt_parse()). */
	PTS_CYC_MAX = 15
};

#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) &&            \
	__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define PTS_LITTLE_ENDIAN_ 1
#else
#define PTS_LITTLE_ENDIAN_ 0
#endif

/* Loads @n (0..8) little-endian bytes. memcpy keeps the access legal at
 * any alignment; compilers turn the fixed-size cases into one load. */
static inline uint64_t pts_load_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	if (PTS_LITTLE_ENDIAN_) {
		memcpy(&v, p, n);
		return v;
	}
	while (n--)
		v = (v << 8) | p[n];
	return v;
}

/* Eight bytes at once, for the fast path (caller guarantees they exist). */
static inline uint64_t pts_load_le64(const uint8_t *p)
{
	uint64_t v;

	if (PTS_LITTLE_ENDIAN_) {
		memcpy(&v, p, 8);
		return v;
	}
	return pts_load_le(p, 8);
}

/* Payload bytes of an IP packet by IPBytes; 0xff marks the reserved 5, 7. */
extern const uint8_t pts_ipc_bytes[8];
/* The last-IP bits an IPBytes value replaces (sext-48: the 48 it reads). */
extern const uint64_t pts_ipc_mask[8];

static inline uint64_t pts_sext48(uint64_t v)
{
	return (v & (1ull << 47)) ? (v | 0xffff000000000000ull)
				  : (v & 0x0000ffffffffffffull);
}

/* The value of a CYC whose first byte is @c and whose next bytes, up to
 * its last, are @rest (little-endian, the bytes after them zero): the
 * 7-bit groups of @rest packed by halving steps (no loop: CYC lengths are
 * as random as their values), above the 5 bits of @c. */
static inline uint64_t pts_cyc_value(uint8_t c, uint64_t rest)
{
	uint64_t x = (rest >> 1) & 0x7f7f7f7f7f7f7f7full;

	x = (x & 0x007f007f007f007full) | ((x & 0x7f007f007f007f00ull) >> 1);
	x = (x & 0x00003fff00003fffull) | ((x & 0x3fff00003fff0000ull) >> 2);
	x = (x & 0x000000000fffffffull) | ((x & 0x0fffffff00000000ull) >> 4);
	return (uint64_t)(c >> 3) | x << 5;
}

/* Index of the highest set bit of @v (> 0). */
static inline unsigned pts_top_bit(uint64_t v)
{
#if defined(__GNUC__) || defined(__clang__)
	return 63u - (unsigned)__builtin_clzll(v);
#else
	unsigned n = 0;

	while (v >>= 1)
		n++;
	return n;
#endif
}

/* Fills the bytes of @pkt that no kind-specific field sets, so that two
 * decodes of the same bytes compare equal with memcmp. */
static inline void pts_pkt_clear(struct pts_packet *pkt, uint64_t offset)
{
	pkt->offset = offset;
	memset(&pkt->kind, 0, sizeof(*pkt) - sizeof(pkt->offset));
}

/* ------------------------------------------------------------------------ */
/* The streaming decoder's fast path (decoder_fast.c).                      */

/* The fast paths write a packet as four words: they rely on this layout. */
_Static_assert(sizeof(struct pts_packet) == 32, "packet layout");
_Static_assert(offsetof(struct pts_packet, kind) == 8, "packet layout");
_Static_assert(offsetof(struct pts_packet, u) == 16, "packet layout");
_Static_assert(offsetof(struct pts_packet, u.tnt.count) == 24, "layout");
_Static_assert(offsetof(struct pts_packet, u.ip.ip) == 24, "layout");

/* Writes a whole packet: header word (@hdr = kind | size << 8 | ipc << 16,
 * reserved bytes 0) and the two words of the union, as each kind the fast
 * paths make lays them out. */
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


/* How the fast path decodes a packet by its first byte (see
 * pts_fast_init()). */
struct pts_fast_op {
	uint64_t mask; /* payload bits of the 8 bytes after the first byte */
	uint64_t keep; /* last-IP bits the packet keeps (~0: not an IP) */
	uint64_t sel;  /* ~0 for an IP packet with an IP, else 0 */
	uint64_t c0;   /* constant bits of word 0 (TNT bits, CYC bits 4:0) */
	uint64_t c1;   /* constant word 1 (TNT count) */
	uint64_t hdr;  /* kind | size << 8 | ipc << 16 */
	/* 64 bytes: the index is a shift; 64-bit constants are operands of
	 * one instruction each. */
	uint64_t pad_[2];
};

/* The fast path's tables, built once per decoder (they depend on the
 * errata). */
struct pts_fast_tab {
	struct pts_fast_op ops[256];
	/* Packet size by first byte, 0 for the bytes the table does not
	 * decode. Apart from ops[], so that the next packet's position waits
	 * on one load without index scaling. */
	uint8_t size[256];
	/* The kind by first byte (of ops[].hdr; for the 02 of any extended
	 * packet, TNT64), for byte permutes. */
	uint8_t kind[256];
	uint8_t skd007; /* SKD007 applies: 2-byte CYCs ending in 02 */
	uint8_t blocks; /* enum pts_blocks: how decoder_blocks.c runs here */
	/* Skimming with VBMI: each kind's class (decoder_blocks.c) when it is
	 * handed on / skipped, so that a skim call picks its classes by two
	 * compares rather than a loop over the kinds (`windows` skims anew
	 * at every window or gap; the loop was a third of a call's setup). */
	uint8_t class_called[64], class_skipped[64];
};

void pts_fast_init(struct pts_fast_tab *tab, int skd007);

/* Decodes a packet the table leaves alone at @q (size 0 in tab->size),
 * with @avail >= PTS_PKT_MAX bytes from @q to the end of the view, into
 * @pk at stream offset @off, updating the last IP @lip. Returns its size,
 * or 0 when the slow path must see it (errors, the SKD007 case). Sets
 * *@blk after a BBP: the caller must stop there. */
unsigned pts_fast_rare(const struct pts_fast_tab *tab, const uint8_t *q,
		       size_t avail, uint64_t off, uint64_t *lip, uint8_t *blk,
		       struct pts_packet *pk);

/* Decodes up to @max packets straight from @in while at least PTS_PKT_MAX
 * bytes remain, outside a PEBS block. @off is the stream offset of the
 * view's next byte, @lip the last IP, @blk the PEBS block context (0 on
 * entry); all three and in->pos are advanced past the packets decoded.
 * Stops early, leaving the packet to the slow path, at anything it does
 * not decode itself (errors, the SKD007 case) and after a BBP. Returns the
 * number of packets. */
int pts_fast_decode(const struct pts_fast_tab *tab, struct pts_input *in,
		    uint64_t *off, uint64_t *lip, uint8_t *blk,
		    struct pts_packet *out, int max);

/* pts_fast_decode() that stores no packets but adds 1 to @counts[kind]
 * (PTS_PKT_KIND_COUNT entries) for each. */
int pts_fast_count(const struct pts_fast_tab *tab, struct pts_input *in,
		   uint64_t *off, uint64_t *lip, uint8_t *blk,
		   uint64_t *counts, int max);

/* pts_pkt_skim_batch()'s actions and sum, for the decoding loops. */
struct pts_skim_ctx {
	const uint8_t *actions; /* by kind: enum pts_skim_action */
	struct pts_skim *sum;
	const struct pts_skim_call *call;
};

/* Adds the skipped packet @pk to @sum. */
static inline void pts_skim_add(struct pts_skim *sum,
				const struct pts_packet *pk)
{
	sum->packets++;
	switch (pk->kind) {
	case PTS_PKT_TNT8:
	case PTS_PKT_TNT64:
		sum->tnt_packets++;
		sum->tnt_bits += pk->u.tnt.count;
		break;
	case PTS_PKT_TIP:
		sum->tips++;
		if (pk->ipc != PTS_IPC_SUPPRESSED) {
			sum->last_ip = pk->u.ip.ip;
			sum->has_ip = 1;
		}
		break;
	default:
		break;
	}
}

/* pts_fast_decode() that stores only the packets @skim keeps (into @out),
 * adds the others to @skim->sum, and stops after a STOP packet (*@stop
 * set). Returns the number stored. */
int pts_fast_skim(const struct pts_fast_tab *tab, struct pts_input *in,
		  uint64_t *off, uint64_t *lip, uint8_t *blk,
		  struct pts_packet *out, int max,
		  const struct pts_skim_ctx *skim, int *stop);

/* decoder_blocks.c: how this CPU runs pts_fast_count_blocks() (with AVX2,
 * with AVX-512 VBMI too, or not at all; never above pts_fast_blocks_cap,
 * which tests lower to run every way on one CPU, before making decoders),
 * and pts_fast_count() 64 bytes at a time while two blocks and
 * PTS_PKT_MAX bytes are left and the batch has room for 64 packets
 * (0 packets without AVX2). Same contract as pts_fast_count(). */
enum pts_blocks { PTS_BLOCKS_NONE, PTS_BLOCKS_AVX2, PTS_BLOCKS_VBMI };
extern int pts_fast_blocks_cap;
int pts_fast_blocks_supported(void);
/* Fills tab->class_called and tab->class_skipped. */
void pts_fast_skim_class_tables(struct pts_fast_tab *tab);
int pts_fast_count_blocks(const struct pts_fast_tab *tab, struct pts_input *in,
			  uint64_t *off, uint64_t *lip, uint8_t *blk,
			  uint64_t *counts, int max);
/* The same for pts_fast_skim(). */
int pts_fast_skim_blocks(const struct pts_fast_tab *tab, struct pts_input *in,
			 uint64_t *off, uint64_t *lip, uint8_t *blk,
			 struct pts_packet *out, int max,
			 const struct pts_skim_ctx *skim, int *stop);

#endif /* PTS_PACKETS_INTERNAL_H */
