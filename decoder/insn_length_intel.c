/* Instruction lengths where capstone 4 and Intel's CPUs part, by Intel's
 * rules (SDM Vol. 2, 2.3 VEX, 2.7 EVEX, Appendix A opcode maps), which
 * libipt's decoder follows too:
 *   - VEX (C4, C5) and EVEX (62) instructions: capstone 4 does not know the
 *     newer ones (AVX-512 IFMA, VAES, VPCLMULQDQ, GFNI, ... as OpenSSL runs
 *     them on Intel CPUs) and rejects some AVX2 forms. Their length follows
 *     from the prefix, the opcode map and the ModRM form, whatever the
 *     instruction; in map 0F the opcodes that have no ModRM in the legacy
 *     map have none after a VEX or EVEX prefix either (the CPU raises #UD
 *     for them, bar VZEROUPPER/VZEROALL; libipt sizes them so, and bytes
 *     reached through a damaged trace must walk alike);
 *   - the opcodes whose length is ModRM (and an immediate) whatever the
 *     instruction: 0F 01 (group 7: system instructions newer than capstone
 *     4, as RDPKRU/WRPKRU in libc), the three-byte maps 0F 38 (no
 *     immediate) and 0F 3A (an 8-bit immediate);
 *   - opcode 8F: POP r/m (group 1A) whatever ModRM.reg; capstone reads the
 *     forms with ModRM.reg != 0 as AMD's XOP prefix, which Intel CPUs do
 *     not have;
 *   - a 66 prefix on a near relative branch in 64-bit mode: Intel CPUs
 *     ignore it (SDM Vol. 2 Jcc, JMP, CALL: the operand size is 64 bits,
 *     the displacement 32 bits), capstone takes a 16-bit displacement as
 *     AMD's do;
 *   - MOV to and from a segment register (8C, 8E) after a REX prefix with
 *     R set: REX.R only extends a ModRM.reg that names a general-purpose,
 *     SSE, control or debug register and is ignored for the others (SDM
 *     Vol. 2A, 2.2.1.2); capstone 4 rejects the instruction;
 *   - PREFETCHWT1 (0F 0D /2 with memory), which capstone 4 does not know.
 * And the reverse: other vendors' instructions capstone 4 decodes in
 * places Intel's opcode map leaves blank (Table A-3), which are #UD on
 * Intel CPUs: VIA's PadLock (0F A6, 0F A7) and AMD's SSE4a EXTRQ and
 * INSERTQ (66 or F2 before 0F 78, 0F 79, where Intel has VMREAD and
 * VMWRITE, which take no prefix).
 * tests/diff/diff_insn_libipt.c checks these against libipt's decoder. */
#include "internal.h"

#include <string.h>

/* Whether @b[@at] can start a VEX or EVEX prefix: always in 64-bit mode;
 * in the other modes C4, C5 and 62 are also LES, LDS and BOUND, which take
 * a memory operand: a register ModRM form (bits 7:6 = 11) is the prefix. */
static bool vector_prefix(const uint8_t *b, size_t len, size_t at, int mode)
{
	return mode == PTS_EXEC_64 || (at + 1 < len && (b[at + 1] >> 6) == 3);
}

/* The opcodes of map 0F without a ModRM byte in the legacy map, one bit
 * each: 04-0C bar 0D, 0E, 0F (SYSCALL, CLTS, SYSRET, INVD, WBINVD, UD2,
 * FEMMS...), 24-27, 30-3F (WRMSR, RDTSC, RDMSR, RDPMC, SYSENTER, SYSEXIT,
 * GETSEC, the three-byte escapes), 77 (EMMS; VZEROUPPER/VZEROALL), 80-8F
 * (Jcc), A0-A2 and A8-AA (PUSH/POP FS/GS, CPUID, RSM), A6, A7, B9, C8-CF
 * (BSWAP), FF. */
static const uint64_t map1_without_modrm[4] = {
	0xffff00f00000dff0ull, 0x0080000000000000ull, 0x020007c70000ffffull,
	0x800000000000ff00ull};

/* The immediate after opcode @op of map @map (1: 0F, 2: 0F38, 3: 0F3A),
 * in bytes: 1 for all of map 3, none in map 2; in map 1 1 for the shifts
 * and shuffles by immediate (70-73), SHLD/SHRD (A4, AC), group 8 (BA), the
 * compare (C2), PINSRW/PEXTRW and SHUFPS (C4-C6), and Jcc's displacement
 * (80-8F) by the operand size (@rel16: 16 bits). */
static size_t vector_imm(unsigned map, uint8_t op, bool rel16)
{
	if (map != 1)
		return map == 3;
	if ((op & 0xf0) == 0x80)
		return rel16 ? 2 : 4;
	return (op >= 0x70 && op <= 0x73) || (op >= 0xc4 && op <= 0xc6) ||
	       op == 0xa4 || op == 0xac || op == 0xba || op == 0xc2;
}

/* A VEX or EVEX instruction whose opcode is at @b[@at] (map @map), its
 * prefix before: ModRM (see map1_without_modrm), its SIB and displacement,
 * the immediate. */
static int vector_rest(const uint8_t *b, size_t len, size_t at, unsigned map,
		       bool addr16, bool rel16)
{
	if (at >= len)
		return 0;
	uint8_t op = b[at++];
	size_t m = 0;
	if (map == 1 && (op & 0xfc) == 0x20) {
		m = 1; /* MOV to and from CR/DR: a register form whatever mod */
	} else if (map != 1 ||
		   !(map1_without_modrm[op >> 6] >> (op & 63) & 1)) {
		m = pts_modrm_len(b + at, len - at, addr16);
		if (!m)
			return 0;
	}
	at += m + vector_imm(map, op, rel16);
	return at <= len ? (int)at : 0;
}

/* An instruction whose ModRM byte is at @b[@at], followed by @imm bytes of
 * immediate: its length (0 when cut short). */
static int modrm_form(const uint8_t *b, size_t len, size_t at, size_t imm,
		      bool addr16)
{
	if (at >= len)
		return 0;
	size_t m = pts_modrm_len(b + at, len - at, addr16);
	return m && at + m + imm <= len ? (int)(at + m + imm) : 0;
}

int pts_insn_length_intel(const uint8_t *b, size_t len, int mode, size_t op,
			  bool osz, bool asz)
{
	if (op >= len)
		return 0;
	bool addr16 = mode == PTS_EXEC_16 ? !asz : mode == PTS_EXEC_32 && asz;
	bool rel16 = mode == PTS_EXEC_16 ? !osz : mode == PTS_EXEC_32 && osz;
	switch (b[op]) {
	case 0xc5: /* R vvvv L pp; map 0F */
		if (!vector_prefix(b, len, op, mode))
			return 0;
		return vector_rest(b, len, op + 2, 1, addr16, rel16);
	case 0xc4: /* R X B m-mmmm, W vvvv L pp */
		if (!vector_prefix(b, len, op, mode) || op + 2 >= len)
			return 0;
		if ((b[op + 1] & 0x1f) < 1 || (b[op + 1] & 0x1f) > 3)
			return 0; /* reserved maps: #UD */
		return vector_rest(b, len, op + 3, b[op + 1] & 0x1f, addr16,
				   rel16);
	case 0x62: /* P0 (map in bits 1:0), P1, P2 */
		if (!vector_prefix(b, len, op, mode) || op + 3 >= len ||
		    !(b[op + 1] & 3))
			return 0;
		return vector_rest(b, len, op + 4, b[op + 1] & 3, addr16, rel16);
	case 0x8f: /* POP r/m */
		return modrm_form(b, len, op + 1, 0, addr16);
	case 0x8c: /* MOV r/m, Sreg */
	case 0x8e: /* MOV Sreg, r/m */
		if (op + 1 >= len || ((b[op + 1] >> 3) & 7) >= 6)
			return 0; /* segment registers 6 and 7: none */
		return modrm_form(b, len, op + 1, 0, addr16);
	case 0x0f:
		if (op + 1 >= len)
			return 0;
		if (b[op + 1] == 0x0d && op + 2 < len && b[op + 2] >> 6 != 3 &&
		    ((b[op + 2] >> 3) & 7) == 2) /* PREFETCHWT1 m8 */
			return modrm_form(b, len, op + 2, 0, addr16);
		if (b[op + 1] == 0xa6 || b[op + 1] == 0xa7)
			return -1;
		if ((b[op + 1] == 0x78 || b[op + 1] == 0x79) &&
		    (osz || memchr(b, 0xf2, op) || memchr(b, 0xf3, op)))
			return -1;
		if (b[op + 1] == 0x01)
			return modrm_form(b, len, op + 2, 0, addr16);
		if (b[op + 1] == 0x38)
			return modrm_form(b, len, op + 3, 0, addr16);
		if (b[op + 1] == 0x3a)
			return modrm_form(b, len, op + 3, 1, addr16);
		break;
	default:
		break;
	}
	if (mode != PTS_EXEC_64 || !osz)
		return 0;
	/* Near relative branches: 8-bit displacement (Jcc, JrCXZ, LOOPcc,
	 * JMP short) or 32-bit (CALL, JMP, Jcc near). */
	uint8_t c = b[op];
	size_t n = 0;
	if ((c >= 0x70 && c <= 0x7f) || (c >= 0xe0 && c <= 0xe3) || c == 0xeb)
		n = op + 2;
	else if (c == 0xe8 || c == 0xe9)
		n = op + 5;
	else if (c == 0x0f && op + 1 < len && (b[op + 1] & 0xf0) == 0x80)
		n = op + 6;
	return n && n <= len ? (int)n : 0;
}
