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

#endif /* PTS_PACKETS_INTERNAL_H */
