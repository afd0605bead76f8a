/* The packet encoder: struct pts_packet -> bytes, the exact inverse of
 * pts_pkt_parse(). The trace synthesizer and the tests build every trace
 * with it, so it refuses anything the decoder would not give back
 * unchanged (a payload wider than its field, a flag above 1, a reserved
 * code) instead of silently truncating it.
 *
 * Layouts: docs/pt-sgx-facts.md section 1.
 */
#include <ptscope/packets.h>

#include <string.h>

/* Longest packet we write: PSB (16 bytes). */
#define ENC_MAX 16

/* Opcode bytes (byte 0, or byte 1 after the 0x02 extension prefix). */
enum {
	OPC_EXT = 0x02,
	OPC_TIP = 0x0d,
	OPC_TIP_PGE = 0x11,
	OPC_TIP_PGD = 0x01,
	OPC_FUP = 0x1d,
	OPC_TSC = 0x19,
	OPC_MTC = 0x59,
	OPC_MODE = 0x99,
	EXT_TNT64 = 0xa3,
	EXT_PIP = 0x43,
	EXT_STOP = 0x83,
	EXT_CBR = 0x03,
	EXT_VMCS = 0xc8,
	EXT_OVF = 0xf3,
	EXT_PSB = 0x82,
	EXT_PSBEND = 0x23,
	EXT_TMA = 0x73,
	EXT_EXT2 = 0xc3,
	EXT2_MNT = 0x88,
	EXT_PTW = 0x12,
	EXT_EXSTOP = 0x62,
	EXT_MWAIT = 0xc2,
	EXT_PWRE = 0x22,
	EXT_PWRX = 0xa2,
	EXT_BBP = 0x63,
	EXT_BEP = 0x33,
	EXT_CFE = 0x13,
	EXT_EVD = 0x53,
	/* bit 7 of EXSTOP, BEP (byte 1) and CFE (byte 2): "a FUP follows" */
	IP_BIT = 0x80,
	MODE_LEAF_EXEC = 0x00,
	MODE_LEAF_TSX = 0x20
};

/* 1 when @v has no bits at or above bit @bits. */
static int fits(uint64_t v, unsigned bits)
{
	return bits >= 64 || (v >> bits) == 0;
}

static void put_le(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Payload bytes of each IPBytes code; -1 for the reserved codes 5 and 7. */
static int ip_payload_bytes(unsigned ipc)
{
	static const signed char bytes[8] = {0, 2, 4, 6, 6, -1, 8, -1};
	return ipc < 8 ? bytes[ipc] : -1;
}

static int enc_ip(const struct pts_packet *pkt, uint8_t opc, uint8_t *b)
{
	int n = ip_payload_bytes(pkt->ipc);
	if (n < 0 || !fits(pkt->u.ip.payload, 8u * (unsigned)n))
		return -PTS_ERR_INVALID;
	b[0] = (uint8_t)(pkt->ipc << 5 | opc);
	put_le(b + 1, pkt->u.ip.payload, (unsigned)n);
	return 1 + n;
}

/* TNT: the results sit below a stop bit; 8-bit TNT keeps bit 0 clear. */
static int enc_tnt(const struct pts_packet *pkt, uint8_t *b)
{
	unsigned count = pkt->u.tnt.count;
	uint64_t bits = pkt->u.tnt.bits;

	if (pkt->kind == PTS_PKT_TNT8) {
		if (count < 1 || count > 6 || !fits(bits, count))
			return -PTS_ERR_INVALID;
		b[0] = (uint8_t)((1u << (count + 1)) | (bits << 1));
		return 1;
	}
	if (count < 1 || count > 47 || !fits(bits, count))
		return -PTS_ERR_INVALID;
	b[0] = OPC_EXT;
	b[1] = EXT_TNT64;
	put_le(b + 2, (1ull << count) | bits, 6);
	return 8;
}

/* CYC: 5 value bits in the header, then 7 per byte while the
 * continuation bit says more follow; the shortest form is written. */
static int enc_cyc(uint64_t v, uint8_t *b)
{
	int n = 0;
	b[0] = (uint8_t)(0x03 | (v & 0x1f) << 3);
	v >>= 5;
	if (v)
		b[0] |= 0x04; /* the header's continuation bit is bit 2 */
	while (v) {
		b[++n] = (uint8_t)((v & 0x7f) << 1);
		v >>= 7;
		if (v)
			b[n] |= 0x01; /* later bytes carry it in bit 0 */
	}
	return n + 1;
}

static int enc_ext(uint8_t *b, uint8_t ext)
{
	b[0] = OPC_EXT;
	b[1] = ext;
	return 2;
}

static int enc_pip(const struct pts_packet *pkt, uint8_t *b)
{
	uint64_t cr3 = pkt->u.pip.cr3;
	/* CR3[4:0] are not carried, CR3[51:5] are. */
	if ((cr3 & 0x1f) || !fits(cr3, 52) || pkt->u.pip.nr > 1)
		return -PTS_ERR_INVALID;
	enc_ext(b, EXT_PIP);
	put_le(b + 2, (cr3 >> 5) << 1 | pkt->u.pip.nr, 6);
	return 8;
}

static int enc_mode(const struct pts_packet *pkt, uint8_t *b)
{
	b[0] = OPC_MODE;
	if (pkt->kind == PTS_PKT_MODE_EXEC) {
		const uint8_t csl = pkt->u.exec.csl, csd = pkt->u.exec.csd,
			      ifl = pkt->u.exec.iflag;
		if ((csl | csd | ifl) > 1)
			return -PTS_ERR_INVALID;
		b[1] = (uint8_t)(MODE_LEAF_EXEC | ifl << 2 | csd << 1 | csl);
	} else {
		const uint8_t intx = pkt->u.tsx.intx, abrt = pkt->u.tsx.abrt;
		if ((intx | abrt) > 1)
			return -PTS_ERR_INVALID;
		b[1] = (uint8_t)(MODE_LEAF_TSX | abrt << 1 | intx);
	}
	return 2;
}

static int enc_timing(const struct pts_packet *pkt, uint8_t *b)
{
	switch (pkt->kind) {
	case PTS_PKT_CBR:
		enc_ext(b, EXT_CBR);
		b[2] = pkt->u.cbr.ratio;
		b[3] = 0;
		return 4;
	case PTS_PKT_TSC:
		if (!fits(pkt->u.tsc, 56))
			return -PTS_ERR_INVALID;
		b[0] = OPC_TSC;
		put_le(b + 1, pkt->u.tsc, 7);
		return 8;
	case PTS_PKT_MTC:
		b[0] = OPC_MTC;
		b[1] = pkt->u.mtc_ctc;
		return 2;
	case PTS_PKT_TMA:
		if (!fits(pkt->u.tma.fc, 9))
			return -PTS_ERR_INVALID;
		enc_ext(b, EXT_TMA);
		put_le(b + 2, pkt->u.tma.ctc, 2);
		b[4] = 0;
		put_le(b + 5, pkt->u.tma.fc, 2);
		return 7;
	default: /* PTS_PKT_CYC */
		return enc_cyc(pkt->u.cyc, b);
	}
}

static int enc_power(const struct pts_packet *pkt, uint8_t *b)
{
	switch (pkt->kind) {
	case PTS_PKT_EXSTOP:
		if (pkt->u.exstop.ip > 1)
			return -PTS_ERR_INVALID;
		return enc_ext(b, (uint8_t)(EXT_EXSTOP | pkt->u.exstop.ip << 7));
	case PTS_PKT_MWAIT:
		enc_ext(b, EXT_MWAIT);
		put_le(b + 2, pkt->u.mwait.hints, 4);
		put_le(b + 6, pkt->u.mwait.ext, 4);
		return 10;
	case PTS_PKT_PWRE:
		if (pkt->u.pwre.state > 15 || pkt->u.pwre.sub_state > 15 ||
		    pkt->u.pwre.hw > 1)
			return -PTS_ERR_INVALID;
		enc_ext(b, EXT_PWRE);
		b[2] = (uint8_t)(pkt->u.pwre.hw << 7);
		b[3] = (uint8_t)(pkt->u.pwre.state << 4 | pkt->u.pwre.sub_state);
		return 4;
	default: { /* PTS_PKT_PWRX */
		const uint8_t in = pkt->u.pwrx.interrupt, st = pkt->u.pwrx.store,
			      hw = pkt->u.pwrx.autonomous;
		if (pkt->u.pwrx.last > 15 || pkt->u.pwrx.deepest > 15 ||
		    (in | st | hw) > 1)
			return -PTS_ERR_INVALID;
		enc_ext(b, EXT_PWRX);
		b[2] = (uint8_t)(pkt->u.pwrx.last << 4 | pkt->u.pwrx.deepest);
		/* wake reasons: bit 0 interrupt, bit 2 store, bit 3 hardware */
		b[3] = (uint8_t)(hw << 3 | st << 2 | in);
		memset(b + 4, 0, 3);
		return 7;
	}
	}
}

/* BIP: @pkt->size says which form (5: 4-byte item, 9 or 0: 8-byte item),
 * since the item size comes from the enclosing BBP, not from the BIP. */
static int enc_bip(const struct pts_packet *pkt, uint8_t *b)
{
	unsigned n = pkt->size == 5 ? 4 : 8;
	if ((pkt->size != 0 && pkt->size != 5 && pkt->size != 9) ||
	    pkt->u.bip.id > 31 || !fits(pkt->u.bip.payload, 8 * n))
		return -PTS_ERR_INVALID;
	b[0] = (uint8_t)(pkt->u.bip.id << 3 | 0x04);
	put_le(b + 1, pkt->u.bip.payload, n);
	return (int)(1 + n);
}

static int enc_block(const struct pts_packet *pkt, uint8_t *b)
{
	switch (pkt->kind) {
	case PTS_PKT_BBP:
		if (pkt->u.bbp.sz > 1 || pkt->u.bbp.type > 31)
			return -PTS_ERR_INVALID;
		enc_ext(b, EXT_BBP);
		b[2] = (uint8_t)(pkt->u.bbp.sz << 7 | pkt->u.bbp.type);
		return 3;
	case PTS_PKT_BIP:
		return enc_bip(pkt, b);
	default: /* PTS_PKT_BEP */
		if (pkt->u.bep.ip > 1)
			return -PTS_ERR_INVALID;
		return enc_ext(b, (uint8_t)(EXT_BEP | pkt->u.bep.ip << 7));
	}
}

static int enc_event(const struct pts_packet *pkt, uint8_t *b)
{
	if (pkt->kind == PTS_PKT_CFE) {
		if (pkt->u.cfe.type > 31 || pkt->u.cfe.ip > 1)
			return -PTS_ERR_INVALID;
		enc_ext(b, EXT_CFE);
		b[2] = (uint8_t)(pkt->u.cfe.ip << 7 | pkt->u.cfe.type);
		b[3] = pkt->u.cfe.vector;
		return 4;
	}
	/* bits 7:5 of the type byte are reserved (libipt masks 0x1f) */
	if (pkt->u.evd.type > 31)
		return -PTS_ERR_INVALID;
	enc_ext(b, EXT_EVD);
	b[2] = pkt->u.evd.type;
	put_le(b + 3, pkt->u.evd.payload, 8);
	return 11;
}

static int enc_misc(const struct pts_packet *pkt, uint8_t *b)
{
	switch (pkt->kind) {
	case PTS_PKT_VMCS:
		if ((pkt->u.vmcs_base & 0xfff) || !fits(pkt->u.vmcs_base, 52))
			return -PTS_ERR_INVALID;
		enc_ext(b, EXT_VMCS);
		put_le(b + 2, pkt->u.vmcs_base >> 12, 5);
		return 7;
	case PTS_PKT_MNT:
		enc_ext(b, EXT_EXT2);
		b[2] = EXT2_MNT;
		put_le(b + 3, pkt->u.mnt, 8);
		return 11;
	default: { /* PTS_PKT_PTW */
		const unsigned n = pkt->u.ptw.plc == 0 ? 4 : 8;
		if (pkt->u.ptw.plc > 1 || pkt->u.ptw.ip > 1 ||
		    !fits(pkt->u.ptw.payload, 8 * n))
			return -PTS_ERR_INVALID;
		enc_ext(b, (uint8_t)(pkt->u.ptw.ip << 7 | pkt->u.ptw.plc << 5 |
				     EXT_PTW));
		put_le(b + 2, pkt->u.ptw.payload, n);
		return (int)(2 + n);
	}
	}
}

/* Encodes into @b (ENC_MAX bytes); returns the size or -PTS_ERR_INVALID. */
static int enc_any(const struct pts_packet *pkt, uint8_t *b)
{
	switch (pkt->kind) {
	case PTS_PKT_PAD:
		b[0] = 0;
		return 1;
	case PTS_PKT_TNT8:
	case PTS_PKT_TNT64:
		return enc_tnt(pkt, b);
	case PTS_PKT_TIP:
		return enc_ip(pkt, OPC_TIP, b);
	case PTS_PKT_TIP_PGE:
		return enc_ip(pkt, OPC_TIP_PGE, b);
	case PTS_PKT_TIP_PGD:
		return enc_ip(pkt, OPC_TIP_PGD, b);
	case PTS_PKT_FUP:
		return enc_ip(pkt, OPC_FUP, b);
	case PTS_PKT_PIP:
		return enc_pip(pkt, b);
	case PTS_PKT_MODE_EXEC:
	case PTS_PKT_MODE_TSX:
		return enc_mode(pkt, b);
	case PTS_PKT_STOP:
		return enc_ext(b, EXT_STOP);
	case PTS_PKT_OVF:
		return enc_ext(b, EXT_OVF);
	case PTS_PKT_PSBEND:
		return enc_ext(b, EXT_PSBEND);
	case PTS_PKT_PSB:
		for (int i = 0; i < 16; i += 2)
			enc_ext(b + i, EXT_PSB);
		return 16;
	case PTS_PKT_CBR:
	case PTS_PKT_TSC:
	case PTS_PKT_MTC:
	case PTS_PKT_TMA:
	case PTS_PKT_CYC:
		return enc_timing(pkt, b);
	case PTS_PKT_VMCS:
	case PTS_PKT_MNT:
	case PTS_PKT_PTW:
		return enc_misc(pkt, b);
	case PTS_PKT_EXSTOP:
	case PTS_PKT_MWAIT:
	case PTS_PKT_PWRE:
	case PTS_PKT_PWRX:
		return enc_power(pkt, b);
	case PTS_PKT_BBP:
	case PTS_PKT_BIP:
	case PTS_PKT_BEP:
		return enc_block(pkt, b);
	case PTS_PKT_CFE:
	case PTS_PKT_EVD:
		return enc_event(pkt, b);
	default:
		return -PTS_ERR_INVALID;
	}
}

int pts_pkt_encode(const struct pts_packet *pkt, uint8_t *buf, size_t cap)
{
	uint8_t tmp[ENC_MAX];

	if (!pkt || (!buf && cap))
		return -PTS_ERR_INVALID;
	/* Encode aside first: a short @buf is never half written. */
	const int n = enc_any(pkt, tmp);
	if (n < 0)
		return n;
	if ((size_t)n > cap)
		return -PTS_ERR_AGAIN;
	memcpy(buf, tmp, (size_t)n);
	return n;
}

/* ------------------------------------------------------------------------ */
/* IP compression as the CPU chooses it.                                    */

static uint64_t sext48(uint64_t v)
{
	return (v & (1ull << 47)) ? v | 0xffff000000000000ull
				  : v & 0x0000ffffffffffffull;
}

void pts_pkt_make_ip(struct pts_packet *pkt, int kind, uint64_t ip,
		     struct pts_lastip *lip)
{
	/* After a reset the CPU's last-IP is 0: compress against that. */
	const uint64_t last = lip->have ? lip->ip : 0;
	const uint64_t mask48 = 0x0000ffffffffffffull;
	unsigned ipc;
	uint64_t payload;

	if ((ip >> 16) == (last >> 16)) {
		ipc = PTS_IPC_UPDATE_16;
		payload = ip & 0xffff;
	} else if ((ip >> 32) == (last >> 32)) {
		ipc = PTS_IPC_UPDATE_32;
		payload = ip & 0xffffffff;
	} else if (sext48(ip) == ip) {
		/* Preferred over UPDATE_48 at equal size: it does not depend
		 * on last-IP, and every CPU with 48-bit addresses has it. */
		ipc = PTS_IPC_SEXT_48;
		payload = ip & mask48;
	} else if ((ip & ~mask48) == (last & ~mask48)) {
		ipc = PTS_IPC_UPDATE_48;
		payload = ip & mask48;
	} else {
		ipc = PTS_IPC_FULL;
		payload = ip;
	}

	memset(pkt, 0, sizeof(*pkt));
	pkt->kind = (uint8_t)kind;
	pkt->ipc = (uint8_t)ipc;
	pkt->size = (uint8_t)(1 + ip_payload_bytes(ipc));
	pkt->u.ip.payload = payload;
	pkt->u.ip.ip = ip;
	lip->ip = ip;
	lip->have = 1;
}
