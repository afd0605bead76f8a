/* Internals shared by the packet parser, the streaming decoder and the PSB
 * search: little-endian loads, the IP compression tables and the wire
 * constants. Nothing here is part of the public API.
 */
#ifndef PTS_PACKETS_INTERNAL_H
#define PTS_PACKETS_INTERNAL_H

#include <ptscope/packets.h>

#include <stdint.h>
#include <string.h>

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
	uint8_t skd007; /* SKD007 applies: 2-byte CYCs ending in 02 */
	uint8_t blocks; /* enum pts_blocks: how count_blocks.c runs here */
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

/* count_blocks.c: how this CPU runs pts_fast_count_blocks() (with AVX2,
 * with AVX-512 VBMI too, or not at all; never above pts_fast_blocks_cap,
 * which tests lower to run every way on one CPU, before making decoders),
 * and pts_fast_count() 64 bytes at a time while two blocks and
 * PTS_PKT_MAX bytes are left and the batch has room for 64 packets
 * (0 packets without AVX2). Same contract as pts_fast_count(). */
enum pts_blocks { PTS_BLOCKS_NONE, PTS_BLOCKS_AVX2, PTS_BLOCKS_VBMI };
extern int pts_fast_blocks_cap;
int pts_fast_blocks_supported(void);
int pts_fast_count_blocks(const struct pts_fast_tab *tab, struct pts_input *in,
			  uint64_t *off, uint64_t *lip, uint8_t *blk,
			  uint64_t *counts, int max);

#endif /* PTS_PACKETS_INTERNAL_H */
