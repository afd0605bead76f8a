/* One packet from bytes: the first-byte dispatch of pt-sgx-facts 1.1/1.2 and
 * every payload of 1.3.
 *
 * The field values and the validity checks follow libipt 2.0.5's
 * pt_pkt_next() (the differential tests hold us to it), including the order
 * of its checks: a packet whose length follows from its first bytes is
 * TRUNCATED before its payload is judged, while a reserved IPBytes or PTW
 * payload size is an error as soon as the header byte is seen. Packets
 * libipt 2.0.5 does not know (BBP/BIP/BEP, CFE/EVD, MODE.Exec's IF bit)
 * follow the SDM and Linux perf.
 *
 * Nothing here reads past @len, and nothing is written to @pkt unless a
 * packet is returned.
 */
#include "packets_internal.h"

/* Header of the packet; the union is filled by the caller. */
static int pts_pkt_done(struct pts_packet *pkt, unsigned kind, unsigned size)
{
	pkt->kind = (uint8_t)kind;
	pkt->size = (uint8_t)size;
	return (int)size;
}

static int pts_parse_tnt8(uint8_t b0, struct pts_packet *pkt)
{
	/* b0 is even and > 2, so the payload b0 >> 1 has a stop bit above
	 * at least one result bit. */
	unsigned payload = b0 >> 1;
	unsigned count = pts_top_bit(payload);

	pts_pkt_clear(pkt, 0);
	pkt->u.tnt.bits = payload & ~(1u << count);
	pkt->u.tnt.count = (uint8_t)count;
	return pts_pkt_done(pkt, PTS_PKT_TNT8, 1);
}

/* TIP, TIP.PGE, TIP.PGD, FUP: IPBytes in bits 7:5 says the payload size. */
static int pts_parse_ip(const uint8_t *buf, size_t len, unsigned kind,
			struct pts_packet *pkt)
{
	unsigned ipc = buf[0] >> 5;
	unsigned n = pts_ipc_bytes[ipc];

	if (n == 0xff)
		return -PTS_ERR_BAD_IPC;
	if (len < 1 + n)
		return -PTS_ERR_TRUNCATED;

	pts_pkt_clear(pkt, 0);
	pkt->ipc = (uint8_t)ipc;
	pkt->u.ip.payload = pts_load_le(buf + 1, n);
	return pts_pkt_done(pkt, kind, 1 + n);
}

/* CYC: byte 0 holds bits 4:0 and Exp (bit 2); each further byte holds 7 more
 * bits and its own Exp (bit 0). The SDM sets no length limit; we accept up
 * to PTS_CYC_MAX bytes (libipt's pt_pl_cyc_max_size) and keep the low 64 bits
 * of the value. libipt 2.0.5's decoder already refuses the 10th byte (its
 * value would pass bit 64); the differential tests know this difference. */
static int pts_parse_cyc(const uint8_t *buf, size_t len, struct pts_packet *pkt)
{
	uint64_t value = buf[0] >> 3;
	unsigned more = buf[0] & 4, shift = 5;
	size_t i = 1;

	while (more) {
		uint64_t bits;

		if (i >= len)
			return -PTS_ERR_TRUNCATED;
		if (i >= PTS_CYC_MAX)
			return -PTS_ERR_CYC_TOO_LONG;
		bits = buf[i] >> 1;
		more = buf[i] & 1;
		if (shift < 64)
			value |= bits << shift;
		shift += 7;
		i++;
	}

	pts_pkt_clear(pkt, 0);
	pkt->u.cyc = value;
	return pts_pkt_done(pkt, PTS_PKT_CYC, (unsigned)i);
}

static int pts_parse_mode(const uint8_t *buf, size_t len,
			  struct pts_packet *pkt)
{
	uint8_t b;

	if (len < 2)
		return -PTS_ERR_TRUNCATED;
	b = buf[1];
	/* Leaf in bits 7:5; libipt accepts any value in bits 4:0. */
	switch (b >> 5) {
	case 0:
		pts_pkt_clear(pkt, 0);
		pkt->u.exec.csl = b & 1;
		pkt->u.exec.csd = (b >> 1) & 1;
		pkt->u.exec.iflag = (b >> 2) & 1;
		return pts_pkt_done(pkt, PTS_PKT_MODE_EXEC, 2);
	case 1:
		pts_pkt_clear(pkt, 0);
		pkt->u.tsx.intx = b & 1;
		pkt->u.tsx.abrt = (b >> 1) & 1;
		return pts_pkt_done(pkt, PTS_PKT_MODE_TSX, 2);
	default:
		return -PTS_ERR_BAD_PACKET;
	}
}

/* BIP inside a PEBS block: header bits 7:3 = item id, then 4 or 8 bytes. */
static int pts_parse_bip(const uint8_t *buf, size_t len, unsigned size,
			 struct pts_packet *pkt)
{
	if (len < 1 + size)
		return -PTS_ERR_TRUNCATED;
	pts_pkt_clear(pkt, 0);
	pkt->u.bip.id = buf[0] >> 3;
	pkt->u.bip.payload = pts_load_le(buf + 1, size);
	return pts_pkt_done(pkt, PTS_PKT_BIP, 1 + size);
}

/* PTW: byte 1 = IP << 7 | PayloadBytes << 5 | 0x12. Sizes 2 and 3 are
 * reserved, which libipt reports before looking at the length. */
static int pts_parse_ptw(const uint8_t *buf, size_t len, struct pts_packet *pkt)
{
	unsigned plc = (buf[1] >> 5) & 3;
	unsigned n;

	if (plc > 1)
		return -PTS_ERR_BAD_PACKET;
	n = plc ? 8 : 4;
	if (len < 2 + n)
		return -PTS_ERR_TRUNCATED;
	pts_pkt_clear(pkt, 0);
	pkt->u.ptw.payload = pts_load_le(buf + 2, n);
	pkt->u.ptw.plc = (uint8_t)plc;
	pkt->u.ptw.ip = buf[1] >> 7;
	return pts_pkt_done(pkt, PTS_PKT_PTW, 2 + n);
}

/* Fixed-size extended packets: the total size by the second byte, 0 for
 * opcodes that are not fixed-size ones. */
static unsigned pts_ext_size(uint8_t b1)
{
	switch (b1) {
	case 0xa3: /* TNT-64 */
	case 0x43: /* PIP */
		return 8;
	case 0x83: /* TraceStop */
	case 0xf3: /* OVF */
	case 0x23: /* PSBEND */
	case 0x62: /* EXSTOP */
	case 0xe2: /* EXSTOP.IP */
	case 0x33: /* BEP */
	case 0xb3: /* BEP.IP */
		return 2;
	case 0x03: /* CBR */
	case 0x22: /* PWRE */
	case 0x13: /* CFE */
		return 4;
	case 0xc8: /* VMCS */
	case 0x73: /* TMA */
	case 0xa2: /* PWRX */
		return 7;
	case 0x82: /* PSB */
		return 16;
	case 0xc2: /* MWAIT */
		return 10;
	case 0x63: /* BBP */
		return 3;
	case 0x53: /* EVD */
		return 11;
	default:
		return 0;
	}
}

/* The payload checks libipt makes on fixed-size extended packets (after the
 * length check, as libipt). All bytes of the packet are there. */
static int pts_ext_payload_ok(const uint8_t *buf)
{
	const uint8_t *p = buf + 2;

	switch (buf[1]) {
	case 0xa3:
		/* A 48-bit payload without a stop bit above a result bit is
		 * invalid (libipt: bit size 0). */
		return pts_load_le(p, 6) >= 2;
	case 0x73:
		/* CTC bytes 2-3, a reserved byte 4 (must be 0), FC in 9 bits
		 * of bytes 5-6 (bits 15:9 must be 0). */
		return p[2] == 0 && (p[4] & 0xfe) == 0;
	case 0x82:
		for (unsigned i = 2; i < PTS_PSB_SIZE; i += 2)
			if (buf[i] != PTS_OPC_EXT || buf[i + 1] != PTS_EXT_PSB)
				return 0;
		return 1;
	default:
		return 1;
	}
}

/* The payload of a fixed-size extended packet; all @size bytes are there and
 * pts_ext_payload_ok() holds. */
static int pts_parse_ext_fixed(const uint8_t *buf, unsigned size,
			       struct pts_packet *pkt)
{
	const uint8_t *p = buf + 2;
	uint64_t v;

	pts_pkt_clear(pkt, 0);
	switch (buf[1]) {
	case 0xa3:
		v = pts_load_le(p, 6);
		pkt->u.tnt.count = (uint8_t)pts_top_bit(v);
		pkt->u.tnt.bits = v & ~(1ull << pkt->u.tnt.count);
		return pts_pkt_done(pkt, PTS_PKT_TNT64, size);
	case 0x43:
		/* Byte 2 bit 0 = NR, bits 7:1 = CR3[11:5], bytes 3..7 =
		 * CR3[51:12]. */
		v = pts_load_le(p, 6);
		pkt->u.pip.nr = v & 1;
		pkt->u.pip.cr3 = (v >> 1) << 5;
		return pts_pkt_done(pkt, PTS_PKT_PIP, size);
	case 0x83:
		return pts_pkt_done(pkt, PTS_PKT_STOP, size);
	case 0xf3:
		return pts_pkt_done(pkt, PTS_PKT_OVF, size);
	case 0x23:
		return pts_pkt_done(pkt, PTS_PKT_PSBEND, size);
	case 0x62:
	case 0xe2:
		pkt->u.exstop.ip = buf[1] >> 7;
		return pts_pkt_done(pkt, PTS_PKT_EXSTOP, size);
	case 0x33:
	case 0xb3:
		pkt->u.bep.ip = buf[1] >> 7;
		return pts_pkt_done(pkt, PTS_PKT_BEP, size);
	case 0x03:
		/* The byte after the ratio is reserved; libipt ignores it. */
		pkt->u.cbr.ratio = p[0];
		return pts_pkt_done(pkt, PTS_PKT_CBR, size);
	case 0x22:
		pkt->u.pwre.state = p[1] >> 4;
		pkt->u.pwre.sub_state = p[1] & 0xf;
		/* Deliberately not libipt: the SDM's PWRE figure (and Linux
		 * perf) put HW at bit 7 of the first payload byte; libipt
		 * 2.0.5 tests mask 0x8, a reserved bit. */
		pkt->u.pwre.hw = p[0] >> 7;
		return pts_pkt_done(pkt, PTS_PKT_PWRE, size);
	case 0x13:
		pkt->u.cfe.type = p[0] & 0x1f;
		pkt->u.cfe.ip = p[0] >> 7;
		pkt->u.cfe.vector = p[1];
		return pts_pkt_done(pkt, PTS_PKT_CFE, size);
	case 0xc8:
		pkt->u.vmcs_base = pts_load_le(p, 5) << 12;
		return pts_pkt_done(pkt, PTS_PKT_VMCS, size);
	case 0x73:
		pkt->u.tma.ctc = (uint16_t)(p[0] | p[1] << 8);
		pkt->u.tma.fc = (uint16_t)(p[3] | p[4] << 8);
		return pts_pkt_done(pkt, PTS_PKT_TMA, size);
	case 0xa2:
		pkt->u.pwrx.last = p[0] >> 4;
		pkt->u.pwrx.deepest = p[0] & 0xf;
		pkt->u.pwrx.interrupt = p[1] & 1;
		pkt->u.pwrx.store = (p[1] >> 2) & 1;
		pkt->u.pwrx.autonomous = (p[1] >> 3) & 1;
		return pts_pkt_done(pkt, PTS_PKT_PWRX, size);
	case 0x82:
		return pts_pkt_done(pkt, PTS_PKT_PSB, size);
	case 0xc2:
		pkt->u.mwait.hints = (uint32_t)pts_load_le(p, 4);
		pkt->u.mwait.ext = (uint32_t)pts_load_le(p + 4, 4);
		return pts_pkt_done(pkt, PTS_PKT_MWAIT, size);
	case 0x63:
		pkt->u.bbp.sz = p[0] >> 7;
		pkt->u.bbp.type = p[0] & 0x1f;
		return pts_pkt_done(pkt, PTS_PKT_BBP, size);
	case 0x53:
		/* libipt masks the type with 0x1f (perf: 0x3f); the SDM
		 * defines types 0..2 only. */
		pkt->u.evd.type = p[0] & 0x1f;
		pkt->u.evd.payload = pts_load_le(p + 1, 8);
		return pts_pkt_done(pkt, PTS_PKT_EVD, size);
	default:
		return -PTS_ERR_INTERNAL;
	}
}

static int pts_parse_ext(const uint8_t *buf, size_t len, struct pts_packet *pkt)
{
	unsigned size;
	uint8_t b1;

	if (len < 2)
		return -PTS_ERR_TRUNCATED;
	b1 = buf[1];
	/* PTW's opcode is a mask; no exact opcode below matches it. */
	if ((b1 & 0x1f) == 0x12)
		return pts_parse_ptw(buf, len, pkt);

	if (b1 == PTS_EXT_EXT2) {
		if (len < 3)
			return -PTS_ERR_TRUNCATED;
		if (buf[2] != PTS_EXT2_MNT)
			return -PTS_ERR_BAD_OPCODE;
		if (len < 11)
			return -PTS_ERR_TRUNCATED;
		pts_pkt_clear(pkt, 0);
		pkt->u.mnt = pts_load_le(buf + 3, 8);
		return pts_pkt_done(pkt, PTS_PKT_MNT, 11);
	}

	size = pts_ext_size(b1);
	if (!size)
		return -PTS_ERR_BAD_OPCODE;
	if (len < size)
		return -PTS_ERR_TRUNCATED;
	if (!pts_ext_payload_ok(buf))
		return -PTS_ERR_BAD_PACKET;
	return pts_parse_ext_fixed(buf, size, pkt);
}

int pts_pkt_parse(const uint8_t *buf, size_t len, unsigned block_ctx,
		  struct pts_packet *pkt)
{
	uint8_t b0;

	if (!buf || !pkt || (block_ctx != 0 && block_ctx != 4 && block_ctx != 8))
		return -PTS_ERR_INVALID;
	if (len == 0)
		return -PTS_ERR_TRUNCATED;

	b0 = buf[0];
	/* Inside a PEBS block a BIP header shadows some TNT-8 bytes (perf
	 * checks the block context first, too). */
	if (block_ctx && (b0 & 7) == 4)
		return pts_parse_bip(buf, len, block_ctx, pkt);

	if ((b0 & 1) == 0) {
		if (b0 == PTS_OPC_PAD) {
			pts_pkt_clear(pkt, 0);
			return pts_pkt_done(pkt, PTS_PKT_PAD, 1);
		}
		if (b0 == PTS_OPC_EXT)
			return pts_parse_ext(buf, len, pkt);
		return pts_parse_tnt8(b0, pkt);
	}
	if ((b0 & 3) == 3)
		return pts_parse_cyc(buf, len, pkt);

	switch (b0 & 0x1f) {
	case 0x0d:
		return pts_parse_ip(buf, len, PTS_PKT_TIP, pkt);
	case 0x11:
		return pts_parse_ip(buf, len, PTS_PKT_TIP_PGE, pkt);
	case 0x01:
		return pts_parse_ip(buf, len, PTS_PKT_TIP_PGD, pkt);
	case 0x1d:
		return pts_parse_ip(buf, len, PTS_PKT_FUP, pkt);
	default:
		break;
	}

	switch (b0) {
	case PTS_OPC_TSC:
		if (len < 8)
			return -PTS_ERR_TRUNCATED;
		pts_pkt_clear(pkt, 0);
		pkt->u.tsc = pts_load_le(buf + 1, 7);
		return pts_pkt_done(pkt, PTS_PKT_TSC, 8);
	case PTS_OPC_MTC:
		if (len < 2)
			return -PTS_ERR_TRUNCATED;
		pts_pkt_clear(pkt, 0);
		pkt->u.mtc_ctc = buf[1];
		return pts_pkt_done(pkt, PTS_PKT_MTC, 2);
	case PTS_OPC_MODE:
		return pts_parse_mode(buf, len, pkt);
	default:
		/* 0xd9 (TRIG in libipt >= 2.2) among others. */
		return -PTS_ERR_BAD_OPCODE;
	}
}
