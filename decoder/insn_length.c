/* Instruction lengths of common 64-bit code without capstone.
 *
 * Classifying a block costs capstone's full decode and text formatting per
 * instruction (about 0.2 us here, against 40 ns for a classification with
 * this file): a quarter of a first walk over all of libc. The length alone
 * follows from the prefixes, the opcode, the ModRM/SIB bytes and the
 * immediate: this file knows that for the general-purpose opcodes and the
 * common SSE ones, in 64-bit mode (95% of libc's instructions). Anything
 * else (other modes, VEX/EVEX, x87, three-byte maps, LOCK/REP prefixes,
 * encodings that are valid only with some ModRM forms) is left to
 * capstone: a length is given only where capstone would give the same one,
 * which tests/unit/test_insn_length.c checks at every byte offset of real
 * code. */
#include "internal.h"

/* What follows an opcode. */
enum {
	X = 0,      /* not known here: capstone decides */
	N = 1,      /* nothing */
	M = 2,      /* ModRM (with SIB and displacement) */
	I8 = 4,     /* 8-bit immediate */
	IZ = 8,     /* 16- or 32-bit immediate (operand size) */
	I16 = 16,   /* 16-bit immediate */
	REG = 32,   /* depends on ModRM.reg: see by_reg() */
	REL = 64,   /* branch: with 66 or 67 capstone's (and with 66 in 64-bit
		       mode insn_length_intel.c's: Intel ignores it) */
};

static const uint8_t one_byte[256] = {
	/* 00 */ M, M, M, M, I8, IZ, X, X, M, M, M, M, I8, IZ, X, X,
	/* 10 */ M, M, M, M, I8, IZ, X, X, M, M, M, M, I8, IZ, X, X,
	/* 20 */ M, M, M, M, I8, IZ, X, X, M, M, M, M, I8, IZ, X, X,
	/* 30 */ M, M, M, M, I8, IZ, X, X, M, M, M, M, I8, IZ, X, X,
	/* 40 */ X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	/* 50 */ N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N,
	/* 60 */ X, X, X, M, X, X, X, X, IZ, M | IZ, I8, M | I8, N, N, N, N,
	/* 70 */ REL | I8, REL | I8, REL | I8, REL | I8,
		 REL | I8, REL | I8, REL | I8, REL | I8,
		 REL | I8, REL | I8, REL | I8, REL | I8,
		 REL | I8, REL | I8, REL | I8, REL | I8,
	/* 80 */ M | I8, M | IZ, X, M | I8, M, M, M, M, M, M, M, M, X, REG, X,
		 REG,
	/* 90 */ N, N, N, N, N, N, N, N, N, N, X, X, N, N, N, N,
	/* A0 */ X, X, X, X, N, N, N, N, I8, IZ, N, N, N, N, N, N,
	/* B0 */ I8, I8, I8, I8, I8, I8, I8, I8,
		 REG, REG, REG, REG, REG, REG, REG, REG,
	/* C0 */ M | I8, M | I8, REL | I16, REL, X, X, REG, REG,
		 X, N, I16, N, N, I8, X, N,
	/* D0 */ M, M, M, M, X, X, X, N, X, X, X, X, X, X, X, X,
	/* E0 */ REL | I8, REL | I8, REL | I8, REL | I8, I8, I8, I8, I8,
		 REL | IZ, REL | IZ, X, REL | I8, N, N, N, N,
	/* F0 */ X, N, X, X, N, N, REG, REG, N, N, N, N, N, N, REG, REG,
};

/* 0F xx. */
static const uint8_t two_byte[256] = {
	/* 00 */ X, X, X, X, X, N, X, X, X, X, X, N, X, X, X, X,
	/* 10 */ M, M, X, X, M, M, X, X, REG, X, X, X, X, X, X, REG,
	/* 20 */ X, X, X, X, X, X, X, X, M, M, X, X, X, X, M, M,
	/* 30 */ X, N, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
	/* 40 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
	/* 50 */ X, X, X, X, M, M, M, M, M, M, X, X, M, M, M, M,
	/* 60 */ M, M, M, M, M, M, M, M, M, M, M, M, X, X, M, M,
	/* 70 */ M | I8, X, X, X, M, M, M, X, X, X, X, X, X, X, M, M,
	/* 80 */ REL | IZ, REL | IZ, REL | IZ, REL | IZ,
		 REL | IZ, REL | IZ, REL | IZ, REL | IZ,
		 REL | IZ, REL | IZ, REL | IZ, REL | IZ,
		 REL | IZ, REL | IZ, REL | IZ, REL | IZ,
	/* 90 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
	/* A0 */ X, X, N, M, M | I8, M, X, X, X, X, X, M, M | I8, M, X, M,
	/* B0 */ M, M, X, M, X, X, M, M, X, X, REG, M, M, M, M, M,
	/* C0 */ M, M, M | I8, X, X, X, M | I8, X, N, N, N, N, N, N, N, N,
	/* D0 */ X, X, X, X, M, X, X, REG, X, X, M, M, X, X, M, M,
	/* E0 */ X, X, X, X, X, X, X, X, X, X, X, M, X, X, X, M,
	/* F0 */ X, X, X, X, X, X, X, X, M, M, M, M, M, M, M, X,
};

size_t pts_modrm_len(const uint8_t *m, size_t avail, bool addr16)
{
	if (!avail)
		return 0;
	unsigned mod = m[0] >> 6, rm = m[0] & 7;
	if (mod == 3)
		return 1;
	if (addr16) {
		if (mod == 0)
			return rm == 6 ? 3 : 1;
		return mod == 1 ? 2 : 3;
	}
	size_t n = 1;
	if (rm == 4) {
		if (avail < 2)
			return 0;
		n++;
		if (mod == 0 && (m[1] & 7) == 5)
			return n + 4;
	}
	if (mod == 0)
		return rm == 5 ? n + 4 : n;
	return mod == 1 ? n + 1 : n + 4;
}

/* The REG entries: what follows, given ModRM @modrm, for one-byte (@map 1)
 * or two-byte (@map 2) opcode @op; X when capstone must decide. */
static unsigned by_reg(unsigned map, uint8_t op, uint8_t modrm)
{
	unsigned reg = (modrm >> 3) & 7;
	bool mem = (modrm >> 6) != 3;
	if (map == 2) {
		switch (op) {
		case 0x18: /* PREFETCHh: the hint forms only */
			return mem && reg <= 3 ? M : X;
		case 0x1f: /* NOP r/m: capstone takes memory forms only */
			return mem ? M : X;
		case 0xba: /* BT/BTS/BTR/BTC imm8 */
			return reg >= 4 ? M | I8 : X;
		case 0xd7: /* PMOVMSKB: registers only */
			return mem ? X : M;
		default:
			return X;
		}
	}
	switch (op) {
	case 0x8d: /* LEA: memory only */
		return mem ? M : X;
	case 0x8f: /* POP r/m; the other ModRM.reg forms (AMD's XOP to
		    * capstone) are insn_length_intel.c's */
		return reg == 0 ? M : X;
	case 0xc6: /* MOV r/m8, imm8; XABORT is left to capstone */
		return reg == 0 ? M | I8 : X;
	case 0xc7: /* MOV r/m, imm; XBEGIN is left to capstone */
		return reg == 0 ? M | IZ : X;
	case 0xf6: /* TEST imm8 or NOT/NEG/MUL/IMUL/DIV/IDIV */
		return reg == 0 ? M | I8 : reg == 1 ? X : M;
	case 0xf7:
		return reg == 0 ? M | IZ : reg == 1 ? X : M;
	case 0xfe: /* INC/DEC r/m8 */
		return reg <= 1 ? M : X;
	case 0xff: /* INC, DEC, CALL, CALLF, JMP, JMPF, PUSH */
		if (reg == 7 || ((reg == 3 || reg == 5) && !mem))
			return X;
		return M;
	default:
		return X;
	}
}

int pts_insn_length(const uint8_t *b, size_t len, int mode)
{
	if (mode != PTS_EXEC_64)
		return 0;
	if (len > 15)
		len = 15;
	bool osz = false, asz = false, rexw = false, rex = false;
	size_t i = 0;
	for (; i < len; i++) {
		uint8_t c = b[i];
		if ((c & 0xf0) == 0x40) {
			rex = true;
			rexw = (c & 8) != 0;
			continue;
		}
		if (rex) /* a prefix after REX, or REX then an opcode */
			break;
		if (c == 0x66)
			osz = true;
		else if (c == 0x67)
			asz = true;
		else if (c != 0x2e && c != 0x3e && c != 0x26 && c != 0x36 &&
			 c != 0x64 && c != 0x65)
			break; /* LOCK and REP forms are capstone's */
	}
	/* 66 with REX: which one sizes the operand is capstone's business. */
	if (i >= len || (osz && rex))
		return 0;
	unsigned map = 1;
	uint8_t op = b[i++];
	unsigned what = one_byte[op];
	if (op == 0x0f) {
		if (i >= len)
			return 0;
		map = 2;
		op = b[i++];
		what = two_byte[op];
	}
	if (what == X || ((what & REL) && (osz || asz)))
		return 0;
	if (what & REG) {
		if (map == 1 && op >= 0xb8 && op <= 0xbf) /* MOV r, imm */
			what = rexw ? N : IZ;
		else if (i >= len)
			return 0;
		else if ((what = by_reg(map, op, b[i])) == X)
			return 0;
	}
	if (what & M) {
		size_t m = pts_modrm_len(b + i, len - i, false);
		if (!m)
			return 0;
		i += m;
	}
	if (what & I8)
		i += 1;
	if (what & I16)
		i += 2;
	if (what & IZ)
		i += osz ? 2 : 4;
	if (map == 1 && op >= 0xb8 && op <= 0xbf && rexw)
		i += 8;
	return i <= len ? (int)i : 0;
}
