/* pts_pkt_parse(): hand-written bytes -> expected packet, for every packet
 * kind and every IP compression; every proper prefix of a valid packet must
 * be TRUNCATED; invalid forms must fail with their own code and leave the
 * output untouched. The output is poisoned before each decode so that a
 * field the parser forgets to set shows.
 */
#include <ptscope/packets.h>

#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BYTES(...)                                                             \
	(const uint8_t[]){__VA_ARGS__},                                        \
		sizeof((const uint8_t[]){__VA_ARGS__})

struct row {
	const char *name;
	const uint8_t *bytes;
	size_t len;
	unsigned blk; /* block context: 0, 4 or 8 */
	int ret;      /* expected return */
	struct pts_packet want;
};

#define PKT(k, sz, ...) {.kind = PTS_PKT_##k, .size = sz, __VA_ARGS__}

static const struct row rows[] = {
	{"pad", BYTES(0x00), 0, 1, PKT(PAD, 1, .ipc = 0)},

	/* TNT-8: stop bit = highest set bit, results below it. */
	{"tnt8 1 bit N", BYTES(0x04), 0, 1,
	 PKT(TNT8, 1, .u.tnt = {.bits = 0, .count = 1})},
	{"tnt8 1 bit T", BYTES(0x06), 0, 1,
	 PKT(TNT8, 1, .u.tnt = {.bits = 1, .count = 1})},
	{"tnt8 6 bits", BYTES(0xaa), 0, 1,
	 PKT(TNT8, 1, .u.tnt = {.bits = 0x15, .count = 6})},
	{"tnt8 6 N", BYTES(0x80), 0, 1,
	 PKT(TNT8, 1, .u.tnt = {.bits = 0, .count = 6})},
	{"tnt8 6 T", BYTES(0xfe), 0, 1,
	 PKT(TNT8, 1, .u.tnt = {.bits = 0x3f, .count = 6})},
	{"tnt8 3 bits", BYTES(0x1a), 0, 1,
	 PKT(TNT8, 1, .u.tnt = {.bits = 0x5, .count = 3})},

	/* Long TNT. */
	{"tnt64 1 bit", BYTES(0x02, 0xa3, 0x02, 0, 0, 0, 0, 0), 0, 8,
	 PKT(TNT64, 8, .u.tnt = {.bits = 0, .count = 1})},
	{"tnt64 47 bits", BYTES(0x02, 0xa3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
	 0, 8, PKT(TNT64, 8, .u.tnt = {.bits = 0x7fffffffffffull, .count = 47})},
	{"tnt64 mixed", BYTES(0x02, 0xa3, 0x01, 0, 0, 0, 0, 0x80), 0, 8,
	 PKT(TNT64, 8, .u.tnt = {.bits = 1, .count = 47})},
	{"tnt64 9 bits", BYTES(0x02, 0xa3, 0x5a, 0x03, 0, 0, 0, 0), 0, 8,
	 PKT(TNT64, 8, .u.tnt = {.bits = 0x15a, .count = 9})},

	/* TIP with every IP compression. */
	{"tip suppressed", BYTES(0x0d), 0, 1, PKT(TIP, 1, .ipc = 0)},
	{"tip upd16", BYTES(0x2d, 0x34, 0x12), 0, 3,
	 PKT(TIP, 3, .ipc = 1, .u.ip = {.payload = 0x1234})},
	{"tip upd32", BYTES(0x4d, 0x78, 0x56, 0x34, 0x12), 0, 5,
	 PKT(TIP, 5, .ipc = 2, .u.ip = {.payload = 0x12345678})},
	{"tip sext48", BYTES(0x6d, 0x01, 0x02, 0x03, 0x04, 0x05, 0x86), 0, 7,
	 PKT(TIP, 7, .ipc = 3, .u.ip = {.payload = 0x860504030201ull})},
	{"tip upd48", BYTES(0x8d, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06), 0, 7,
	 PKT(TIP, 7, .ipc = 4, .u.ip = {.payload = 0x060504030201ull})},
	{"tip full",
	 BYTES(0xcd, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0xff), 0, 9,
	 PKT(TIP, 9, .ipc = 6, .u.ip = {.payload = 0xff07060504030201ull})},
	{"tip ipc5", BYTES(0xad, 1, 2, 3, 4, 5, 6, 7, 8), 0, -PTS_ERR_BAD_IPC,
	 {0}},
	{"tip ipc7", BYTES(0xed), 0, -PTS_ERR_BAD_IPC, {0}},

	/* The other IP packets: same payload rules, own opcodes. */
	{"pge suppressed", BYTES(0x11), 0, 1, PKT(TIP_PGE, 1, .ipc = 0)},
	{"pge upd16", BYTES(0x31, 0xcd, 0xab), 0, 3,
	 PKT(TIP_PGE, 3, .ipc = 1, .u.ip = {.payload = 0xabcd})},
	{"pge upd32", BYTES(0x51, 1, 2, 3, 4), 0, 5,
	 PKT(TIP_PGE, 5, .ipc = 2, .u.ip = {.payload = 0x04030201})},
	{"pge sext48", BYTES(0x71, 1, 2, 3, 4, 5, 6), 0, 7,
	 PKT(TIP_PGE, 7, .ipc = 3, .u.ip = {.payload = 0x060504030201ull})},
	{"pge upd48", BYTES(0x91, 1, 2, 3, 4, 5, 0xf6), 0, 7,
	 PKT(TIP_PGE, 7, .ipc = 4, .u.ip = {.payload = 0xf60504030201ull})},
	{"pge full", BYTES(0xd1, 1, 2, 3, 4, 5, 6, 7, 8), 0, 9,
	 PKT(TIP_PGE, 9, .ipc = 6, .u.ip = {.payload = 0x0807060504030201ull})},
	{"pge ipc5", BYTES(0xb1), 0, -PTS_ERR_BAD_IPC, {0}},
	{"pge ipc7", BYTES(0xf1, 0, 0), 0, -PTS_ERR_BAD_IPC, {0}},
	{"pgd suppressed", BYTES(0x01), 0, 1, PKT(TIP_PGD, 1, .ipc = 0)},
	{"pgd upd16", BYTES(0x21, 0xff, 0xff), 0, 3,
	 PKT(TIP_PGD, 3, .ipc = 1, .u.ip = {.payload = 0xffff})},
	{"pgd upd32", BYTES(0x41, 0, 0, 0, 0x80), 0, 5,
	 PKT(TIP_PGD, 5, .ipc = 2, .u.ip = {.payload = 0x80000000})},
	{"pgd sext48", BYTES(0x61, 0, 0, 0, 0, 0, 0x80), 0, 7,
	 PKT(TIP_PGD, 7, .ipc = 3, .u.ip = {.payload = 0x800000000000ull})},
	{"pgd upd48", BYTES(0x81, 0xff, 0, 0, 0, 0, 0), 0, 7,
	 PKT(TIP_PGD, 7, .ipc = 4, .u.ip = {.payload = 0xff})},
	{"pgd full", BYTES(0xc1, 0, 0, 0, 0, 0, 0, 0, 0), 0, 9,
	 PKT(TIP_PGD, 9, .ipc = 6, .u.ip = {.payload = 0})},
	{"pgd ipc5", BYTES(0xa1, 0), 0, -PTS_ERR_BAD_IPC, {0}},
	{"pgd ipc7", BYTES(0xe1), 0, -PTS_ERR_BAD_IPC, {0}},
	{"fup suppressed", BYTES(0x1d), 0, 1, PKT(FUP, 1, .ipc = 0)},
	{"fup upd16", BYTES(0x3d, 0x10, 0x20), 0, 3,
	 PKT(FUP, 3, .ipc = 1, .u.ip = {.payload = 0x2010})},
	{"fup upd32", BYTES(0x5d, 0x10, 0x20, 0x30, 0x40), 0, 5,
	 PKT(FUP, 5, .ipc = 2, .u.ip = {.payload = 0x40302010})},
	{"fup sext48", BYTES(0x7d, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff), 0, 7,
	 PKT(FUP, 7, .ipc = 3, .u.ip = {.payload = 0xffeeddccbbaaull})},
	{"fup upd48", BYTES(0x9d, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0x7f), 0, 7,
	 PKT(FUP, 7, .ipc = 4, .u.ip = {.payload = 0x7feeddccbbaaull})},
	{"fup full", BYTES(0xdd, 0x00, 0x10, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00),
	 0, 9, PKT(FUP, 9, .ipc = 6, .u.ip = {.payload = 0x401000})},
	{"fup ipc5", BYTES(0xbd, 1, 2, 3), 0, -PTS_ERR_BAD_IPC, {0}},
	{"fup ipc7", BYTES(0xfd), 0, -PTS_ERR_BAD_IPC, {0}},

	/* PIP: NR in bit 0, CR3[51:5] above it. */
	{"pip nr", BYTES(0x02, 0x43, 0x03, 0x10, 0x32, 0x54, 0x76, 0x98), 0, 8,
	 PKT(PIP, 8, .u.pip = {.cr3 = 0x9876543210020ull, .nr = 1})},
	{"pip root", BYTES(0x02, 0x43, 0x20, 0x00, 0x00, 0x10, 0x00, 0x00), 0, 8,
	 PKT(PIP, 8, .u.pip = {.cr3 = 0x100000200ull, .nr = 0})},

	/* MODE: leaf in bits 7:5. libipt accepts any value in bits 4:0. */
	{"mode.exec 16", BYTES(0x99, 0x00), 0, 2, PKT(MODE_EXEC, 2, .ipc = 0)},
	{"mode.exec 64", BYTES(0x99, 0x01), 0, 2,
	 PKT(MODE_EXEC, 2, .u.exec = {.csl = 1})},
	{"mode.exec 32", BYTES(0x99, 0x02), 0, 2,
	 PKT(MODE_EXEC, 2, .u.exec = {.csd = 1})},
	{"mode.exec if", BYTES(0x99, 0x05), 0, 2,
	 PKT(MODE_EXEC, 2, .u.exec = {.csl = 1, .iflag = 1})},
	{"mode.exec all", BYTES(0x99, 0x1f), 0, 2,
	 PKT(MODE_EXEC, 2, .u.exec = {.csl = 1, .csd = 1, .iflag = 1})},
	{"mode.tsx none", BYTES(0x99, 0x20), 0, 2, PKT(MODE_TSX, 2, .ipc = 0)},
	{"mode.tsx intx", BYTES(0x99, 0x21), 0, 2,
	 PKT(MODE_TSX, 2, .u.tsx = {.intx = 1})},
	{"mode.tsx abrt", BYTES(0x99, 0x22), 0, 2,
	 PKT(MODE_TSX, 2, .u.tsx = {.abrt = 1})},
	{"mode.tsx both", BYTES(0x99, 0x3f), 0, 2,
	 PKT(MODE_TSX, 2, .u.tsx = {.intx = 1, .abrt = 1})},
	{"mode leaf 2", BYTES(0x99, 0x40), 0, -PTS_ERR_BAD_PACKET, {0}},
	{"mode leaf 3", BYTES(0x99, 0x61), 0, -PTS_ERR_BAD_PACKET, {0}},
	{"mode leaf 4", BYTES(0x99, 0x80), 0, -PTS_ERR_BAD_PACKET, {0}},
	{"mode leaf 7", BYTES(0x99, 0xe0), 0, -PTS_ERR_BAD_PACKET, {0}},

	{"stop", BYTES(0x02, 0x83), 0, 2, PKT(STOP, 2, .ipc = 0)},
	{"cbr", BYTES(0x02, 0x03, 0x1c, 0x00), 0, 4,
	 PKT(CBR, 4, .u.cbr = {.ratio = 0x1c})},
	{"cbr reserved set", BYTES(0x02, 0x03, 0xff, 0xff), 0, 4,
	 PKT(CBR, 4, .u.cbr = {.ratio = 0xff})},
	{"tsc", BYTES(0x19, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0xf7), 0, 8,
	 PKT(TSC, 8, .u.tsc = 0xf7060504030201ull)},
	{"mtc", BYTES(0x59, 0xab), 0, 2, PKT(MTC, 2, .u.mtc_ctc = 0xab)},

	/* TMA: CTC, reserved byte, 9-bit FC. */
	{"tma", BYTES(0x02, 0x73, 0xcd, 0xab, 0x00, 0xff, 0x01), 0, 7,
	 PKT(TMA, 7, .u.tma = {.ctc = 0xabcd, .fc = 0x1ff})},
	{"tma zero", BYTES(0x02, 0x73, 0, 0, 0, 0, 0), 0, 7,
	 PKT(TMA, 7, .ipc = 0)},
	{"tma reserved byte", BYTES(0x02, 0x73, 0, 0, 0x01, 0, 0), 0,
	 -PTS_ERR_BAD_PACKET, {0}},
	{"tma fc bit 9", BYTES(0x02, 0x73, 0, 0, 0, 0, 0x02), 0,
	 -PTS_ERR_BAD_PACKET, {0}},
	{"tma fc bit 15", BYTES(0x02, 0x73, 0, 0, 0, 0, 0x80), 0,
	 -PTS_ERR_BAD_PACKET, {0}},

	/* CYC: 5 bits in byte 0, 7 per continuation byte. */
	{"cyc 0", BYTES(0x03), 0, 1, PKT(CYC, 1, .u.cyc = 0)},
	{"cyc 31", BYTES(0xfb), 0, 1, PKT(CYC, 1, .u.cyc = 31)},
	{"cyc 32", BYTES(0x07, 0x02), 0, 2, PKT(CYC, 2, .u.cyc = 32)},
	{"cyc 4095", BYTES(0xff, 0xfe), 0, 2, PKT(CYC, 2, .u.cyc = 4095)},
	{"cyc 3 bytes", BYTES(0x07, 0x03, 0x02), 0, 3,
	 PKT(CYC, 3, .u.cyc = 4128)},
	{"cyc 10 bytes (libipt: too long)",
	 BYTES(0x07, 1, 1, 1, 1, 1, 1, 1, 1, 0xfe), 0, 10,
	 PKT(CYC, 10, .u.cyc = 0xe000000000000000ull)},
	{"cyc 15 bytes", BYTES(0x0f, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0),
	 0, 15, PKT(CYC, 15, .u.cyc = 1)},
	{"cyc 16 bytes", BYTES(0x07, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0),
	 0, -PTS_ERR_CYC_TOO_LONG, {0}},

	{"vmcs", BYTES(0x02, 0xc8, 0x11, 0x22, 0x33, 0x44, 0x55), 0, 7,
	 PKT(VMCS, 7, .u.vmcs_base = 0x5544332211000ull)},
	{"ovf", BYTES(0x02, 0xf3), 0, 2, PKT(OVF, 2, .ipc = 0)},
	{"psb",
	 BYTES(0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02,
	       0x82, 0x02, 0x82, 0x02, 0x82),
	 0, 16, PKT(PSB, 16, .ipc = 0)},
	{"psb broken end",
	 BYTES(0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02,
	       0x82, 0x02, 0x82, 0x02, 0x83),
	 0, -PTS_ERR_BAD_PACKET, {0}},
	{"psb broken middle",
	 BYTES(0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x00, 0x82, 0x02, 0x82, 0x02,
	       0x82, 0x02, 0x82, 0x02, 0x82),
	 0, -PTS_ERR_BAD_PACKET, {0}},
	{"psbend", BYTES(0x02, 0x23), 0, 2, PKT(PSBEND, 2, .ipc = 0)},
	{"mnt", BYTES(0x02, 0xc3, 0x88, 1, 2, 3, 4, 5, 6, 7, 8), 0, 11,
	 PKT(MNT, 11, .u.mnt = 0x0807060504030201ull)},

	/* PTW: IP << 7 | PayloadBytes << 5 | 0x12. */
	{"ptw 4", BYTES(0x02, 0x12, 0x78, 0x56, 0x34, 0x12), 0, 6,
	 PKT(PTW, 6, .u.ptw = {.payload = 0x12345678, .plc = 0, .ip = 0})},
	{"ptw 8", BYTES(0x02, 0x32, 1, 2, 3, 4, 5, 6, 7, 8), 0, 10,
	 PKT(PTW, 10,
	     .u.ptw = {.payload = 0x0807060504030201ull, .plc = 1, .ip = 0})},
	{"ptw 4 ip", BYTES(0x02, 0x92, 0xff, 0, 0, 0), 0, 6,
	 PKT(PTW, 6, .u.ptw = {.payload = 0xff, .plc = 0, .ip = 1})},
	{"ptw 8 ip", BYTES(0x02, 0xb2, 0, 0, 0, 0, 0, 0, 0, 0x80), 0, 10,
	 PKT(PTW, 10,
	     .u.ptw = {.payload = 0x8000000000000000ull, .plc = 1, .ip = 1})},
	{"ptw plc 2", BYTES(0x02, 0x52), 0, -PTS_ERR_BAD_PACKET, {0}},
	{"ptw plc 3", BYTES(0x02, 0x72, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
	 0, -PTS_ERR_BAD_PACKET, {0}},
	{"ptw plc 2 ip", BYTES(0x02, 0xd2, 1), 0, -PTS_ERR_BAD_PACKET, {0}},
	{"ptw plc 3 ip", BYTES(0x02, 0xf2), 0, -PTS_ERR_BAD_PACKET, {0}},

	/* Power events. */
	{"exstop", BYTES(0x02, 0x62), 0, 2, PKT(EXSTOP, 2, .u.exstop = {.ip = 0})},
	{"exstop ip", BYTES(0x02, 0xe2), 0, 2,
	 PKT(EXSTOP, 2, .u.exstop = {.ip = 1})},
	{"mwait", BYTES(0x02, 0xc2, 0x20, 0, 0, 0, 0x01, 0, 0, 0), 0, 10,
	 PKT(MWAIT, 10, .u.mwait = {.hints = 0x20, .ext = 1})},
	{"mwait reserved set", BYTES(0x02, 0xc2, 1, 2, 3, 4, 5, 6, 7, 8), 0, 10,
	 PKT(MWAIT, 10, .u.mwait = {.hints = 0x04030201, .ext = 0x08070605})},
	/* HW is byte 2 bit 7 (SDM, perf); libipt 2.0.5 reads bit 3. */
	{"pwre hw", BYTES(0x02, 0x22, 0x80, 0x21), 0, 4,
	 PKT(PWRE, 4, .u.pwre = {.state = 2, .sub_state = 1, .hw = 1})},
	{"pwre bit 3 is not hw", BYTES(0x02, 0x22, 0x08, 0xf3), 0, 4,
	 PKT(PWRE, 4, .u.pwre = {.state = 0xf, .sub_state = 3, .hw = 0})},
	{"pwrx", BYTES(0x02, 0xa2, 0x31, 0x0d, 0, 0, 0), 0, 7,
	 PKT(PWRX, 7,
	     .u.pwrx = {.last = 3,
			.deepest = 1,
			.interrupt = 1,
			.store = 1,
			.autonomous = 1})},
	{"pwrx int", BYTES(0x02, 0xa2, 0x60, 0x03, 0xff, 0xff, 0xff), 0, 7,
	 PKT(PWRX, 7, .u.pwrx = {.last = 6, .deepest = 0, .interrupt = 1})},

	/* PEBS via PT. BIP only inside a block (else its header is TNT-8). */
	{"bbp 4-byte items", BYTES(0x02, 0x63, 0x81), 0, 3,
	 PKT(BBP, 3, .u.bbp = {.sz = 1, .type = 1})},
	{"bbp 8-byte items", BYTES(0x02, 0x63, 0x1f), 0, 3,
	 PKT(BBP, 3, .u.bbp = {.sz = 0, .type = 0x1f})},
	{"bip 4", BYTES(0x0c, 0x11, 0x22, 0x33, 0x44), 4, 5,
	 PKT(BIP, 5, .u.bip = {.payload = 0x44332211, .id = 1})},
	{"bip 8", BYTES(0xfc, 1, 2, 3, 4, 5, 6, 7, 8), 8, 9,
	 PKT(BIP, 9, .u.bip = {.payload = 0x0807060504030201ull, .id = 31})},
	{"bip header outside a block", BYTES(0x0c), 0, 1,
	 PKT(TNT8, 1, .u.tnt = {.bits = 2, .count = 2})},
	{"tnt8 inside a block", BYTES(0x0a), 4, 1,
	 PKT(TNT8, 1, .u.tnt = {.bits = 1, .count = 2})},
	{"pad inside a block", BYTES(0x00), 8, 1, PKT(PAD, 1, .ipc = 0)},
	{"bep", BYTES(0x02, 0x33), 0, 2, PKT(BEP, 2, .u.bep = {.ip = 0})},
	{"bep ip", BYTES(0x02, 0xb3), 0, 2, PKT(BEP, 2, .u.bep = {.ip = 1})},

	/* Event Trace. */
	{"cfe", BYTES(0x02, 0x13, 0x81, 0x0e), 0, 4,
	 PKT(CFE, 4, .u.cfe = {.type = 1, .vector = 0x0e, .ip = 1})},
	{"cfe no ip", BYTES(0x02, 0x13, 0x0f, 0x00), 0, 4,
	 PKT(CFE, 4, .u.cfe = {.type = 0xf, .vector = 0, .ip = 0})},
	{"evd", BYTES(0x02, 0x53, 0x02, 1, 2, 3, 4, 5, 6, 7, 8), 0, 11,
	 PKT(EVD, 11, .u.evd = {.payload = 0x0807060504030201ull, .type = 2})},

	/* Opcodes nobody defines. */
	{"bad opcode d9", BYTES(0xd9), 0, -PTS_ERR_BAD_OPCODE, {0}},
	{"bad opcode 05", BYTES(0x05, 0, 0), 0, -PTS_ERR_BAD_OPCODE, {0}},
	{"bad opcode 39", BYTES(0x39), 0, -PTS_ERR_BAD_OPCODE, {0}},
	{"bad ext 04", BYTES(0x02, 0x04), 0, -PTS_ERR_BAD_OPCODE, {0}},
	{"bad ext ff", BYTES(0x02, 0xff, 0, 0), 0, -PTS_ERR_BAD_OPCODE, {0}},
	{"bad ext2 00", BYTES(0x02, 0xc3, 0x00), 0, -PTS_ERR_BAD_OPCODE, {0}},

	/* Truncated headers whose kind is not yet known. */
	{"ext alone", BYTES(0x02), 0, -PTS_ERR_TRUNCATED, {0}},
	{"ext2 alone", BYTES(0x02, 0xc3), 0, -PTS_ERR_TRUNCATED, {0}},
};

/* Copies the fields that @kind defines into a zeroed packet: what a
 * correct parser writes, every other byte 0. */
static void norm(struct pts_packet *out, const struct pts_packet *in)
{
	memset(out, 0, sizeof(*out));
	out->offset = in->offset;
	out->kind = in->kind;
	out->size = in->size;
	out->ipc = in->ipc;
	switch (in->kind) {
	case PTS_PKT_TNT8:
	case PTS_PKT_TNT64:
		out->u.tnt.bits = in->u.tnt.bits;
		out->u.tnt.count = in->u.tnt.count;
		break;
	case PTS_PKT_TIP:
	case PTS_PKT_TIP_PGE:
	case PTS_PKT_TIP_PGD:
	case PTS_PKT_FUP:
		out->u.ip.payload = in->u.ip.payload;
		out->u.ip.ip = in->u.ip.ip;
		break;
	case PTS_PKT_PIP:
		out->u.pip.cr3 = in->u.pip.cr3;
		out->u.pip.nr = in->u.pip.nr;
		break;
	case PTS_PKT_MODE_EXEC:
		out->u.exec = in->u.exec;
		break;
	case PTS_PKT_MODE_TSX:
		out->u.tsx = in->u.tsx;
		break;
	case PTS_PKT_CBR:
		out->u.cbr = in->u.cbr;
		break;
	case PTS_PKT_TSC:
		out->u.tsc = in->u.tsc;
		break;
	case PTS_PKT_MTC:
		out->u.mtc_ctc = in->u.mtc_ctc;
		break;
	case PTS_PKT_TMA:
		out->u.tma = in->u.tma;
		break;
	case PTS_PKT_CYC:
		out->u.cyc = in->u.cyc;
		break;
	case PTS_PKT_VMCS:
		out->u.vmcs_base = in->u.vmcs_base;
		break;
	case PTS_PKT_MNT:
		out->u.mnt = in->u.mnt;
		break;
	case PTS_PKT_PTW:
		out->u.ptw.payload = in->u.ptw.payload;
		out->u.ptw.plc = in->u.ptw.plc;
		out->u.ptw.ip = in->u.ptw.ip;
		break;
	case PTS_PKT_EXSTOP:
		out->u.exstop = in->u.exstop;
		break;
	case PTS_PKT_MWAIT:
		out->u.mwait = in->u.mwait;
		break;
	case PTS_PKT_PWRE:
		out->u.pwre = in->u.pwre;
		break;
	case PTS_PKT_PWRX:
		out->u.pwrx = in->u.pwrx;
		break;
	case PTS_PKT_BBP:
		out->u.bbp = in->u.bbp;
		break;
	case PTS_PKT_BIP:
		out->u.bip.payload = in->u.bip.payload;
		out->u.bip.id = in->u.bip.id;
		break;
	case PTS_PKT_BEP:
		out->u.bep = in->u.bep;
		break;
	case PTS_PKT_CFE:
		out->u.cfe = in->u.cfe;
		break;
	case PTS_PKT_EVD:
		out->u.evd.payload = in->u.evd.payload;
		out->u.evd.type = in->u.evd.type;
		break;
	default:
		break;
	}
}

static const struct pts_packet *poisoned(void)
{
	static struct pts_packet p;

	memset(&p, 0xa5, sizeof(p));
	return &p;
}

/* Decodes @len bytes of @r and checks the outcome @want. */
static void check_one(const struct row *r, size_t len, int want)
{
	struct pts_packet got, expect;
	int ret;

	got = *poisoned();
	ret = pts_pkt_parse(r->bytes, len, r->blk, &got);
	if (ret != want) {
		FAIL("%s (%zu bytes): returned %d (%s), want %d (%s)", r->name,
		     len, ret, pts_errname(ret), want, pts_errname(want));
		return;
	}
	if (ret < 0) {
		if (memcmp(&got, poisoned(), sizeof(got)) != 0)
			FAIL("%s: output written on error", r->name);
		return;
	}
	norm(&expect, &r->want);
	if (memcmp(&got, &expect, sizeof(got)) != 0) {
		const uint8_t *g = (const uint8_t *)&got;
		const uint8_t *e = (const uint8_t *)&expect;

		for (size_t i = 0; i < sizeof(got); i++)
			if (g[i] != e[i]) {
				FAIL("%s: byte %zu of the packet is 0x%02x, "
				     "want 0x%02x", r->name, i, g[i], e[i]);
				break;
			}
	}
}

/* Every first byte, and every second byte after 02, with 16 bytes of
 * input: never TRUNCATED (16 bytes decide any packet), sizes in range. */
static void sweep(void)
{
	uint8_t buf[16];

	for (unsigned blk = 0; blk <= 8; blk += 4) {
		for (unsigned b0 = 0; b0 < 256; b0++) {
			for (unsigned b1 = 0; b1 < 256; b1++) {
				struct pts_packet p;
				int r;

				memset(buf, 0x01, sizeof(buf));
				buf[0] = (uint8_t)b0;
				buf[1] = (uint8_t)b1;
				r = pts_pkt_parse(buf, sizeof(buf), blk, &p);
				if (r == -PTS_ERR_TRUNCATED || r == 0 ||
				    r > 16 || (r > 0 && r != p.size) ||
				    (r > 0 && p.kind >= PTS_PKT_KIND_COUNT)) {
					FAIL("sweep: bytes %02x %02x ...: %d", b0,
					     b1, r);
					return;
				}
				if (b0 != 0x02 && b1 > 0)
					break;
			}
		}
	}
}

static void api_misuse(void)
{
	struct pts_packet p;
	uint8_t b = 0;

	if (pts_pkt_parse(NULL, 1, 0, &p) != -PTS_ERR_INVALID)
		FAIL("misuse: NULL buffer accepted");
	if (pts_pkt_parse(&b, 1, 0, NULL) != -PTS_ERR_INVALID)
		FAIL("misuse: NULL packet accepted");
	if (pts_pkt_parse(&b, 1, 5, &p) != -PTS_ERR_INVALID)
		FAIL("misuse: block context 5 accepted");
	if (pts_pkt_parse(&b, 0, 0, &p) != -PTS_ERR_TRUNCATED)
		FAIL("misuse: empty input not TRUNCATED");
}

int main(void)
{
	size_t n = sizeof(rows) / sizeof(rows[0]);

	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];

		check_one(r, r->len, r->ret);
		/* Every proper prefix of a valid packet is TRUNCATED. */
		if (r->ret > 0)
			for (size_t len = 0; len < (size_t)r->ret; len++)
				check_one(r, len, -PTS_ERR_TRUNCATED);
		/* Bytes after a packet do not change it. */
		if (r->ret > 0 && (size_t)r->ret < r->len)
			FAIL("%s: table row has %zu trailing bytes", r->name,
			     r->len - (size_t)r->ret);
	}
	sweep();
	api_misuse();

	return pts_check_exit();
}
