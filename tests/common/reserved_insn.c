/* Instruction encodings Intel's opcode map reserves in 64-bit mode
 * (reserved_insn.h). */
#include "reserved_insn.h"

#include <stddef.h>
#include <string.h>

int pts_test_opcode_at(const uint8_t *x, int n, int *lock)
{
	int i = 0;
	*lock = 0;
	while (i < n && (x[i] == 0x66 || x[i] == 0x67 || x[i] == 0xf2 ||
			 x[i] == 0xf3 || x[i] == 0xf0 || x[i] == 0x2e ||
			 x[i] == 0x36 || x[i] == 0x3e || x[i] == 0x26 ||
			 x[i] == 0x64 || x[i] == 0x65 || (x[i] & 0xf0) == 0x40))
		*lock |= x[i++] == 0xf0;
	return i;
}

/* Whether the opcode at @op (3 bytes there) takes a LOCK prefix: ADD,
 * ADC, AND, BTC, BTR, BTS, CMPXCHG, CMPXCHG8B/16B, DEC, INC, NEG, NOT, OR,
 * SBB, SUB, XOR, XADD and XCHG with a memory destination; any other
 * instruction raises #UD (SDM Vol. 2, LOCK). */
static int lockable(const uint8_t *op)
{
	const unsigned mem = op[1] >> 6 != 3, reg = (op[1] >> 3) & 7;
	if (op[0] < 0x38 && (op[0] & 7) < 2) /* ADD ... XOR r/m, reg */
		return mem;
	switch (op[0]) {
	case 0x80: case 0x81: case 0x83:
		return mem && reg != 7; /* but CMP */
	case 0x86: case 0x87:
		return mem;
	case 0xf6: case 0xf7:
		return mem && (reg == 2 || reg == 3); /* NOT, NEG */
	case 0xfe: case 0xff:
		return mem && reg < 2; /* INC, DEC */
	case 0x0f: {
		const unsigned mem2 = op[2] >> 6 != 3, reg2 = (op[2] >> 3) & 7;
		switch (op[1]) {
		case 0xab: case 0xb3: case 0xbb: /* BTS, BTR, BTC */
		case 0xb0: case 0xb1: case 0xc0: case 0xc1: /* CMPXCHG, XADD */
			return mem2;
		case 0xba:
			return mem2 && reg2 >= 5;
		case 0xc7:
			return mem2 && reg2 == 1;
		default:
			return 0;
		}
	}
	default:
		return 0;
	}
}

/* The x87 forms the opcode map leaves blank (SDM Vol. 2, A.5, the
 * escape opcode tables): with memory D9 /1, DB /4 /6, DD /5; with a
 * register D9 D1-D7 E2 E3 E6 E7 EF, DA E0-FF but FUCOMPP (E9), DB E5-E7
 * F8-FF, DD F0-FF, DE D8 DA-DF, DF E1-E7 F8-FF. (Blanks that capstone
 * decodes as undocumented aliases, FSTP1 and the like, take no part:
 * ptscope walks them as libipt does.) */
static int x87_reserved(uint8_t op, uint8_t modrm)
{
	const unsigned reg = (modrm >> 3) & 7;
	if (modrm < 0xc0)
		return (op == 0xd9 && reg == 1) ||
		       (op == 0xdb && (reg == 4 || reg == 6)) ||
		       (op == 0xdd && reg == 5);
	switch (op) {
	case 0xd9:
		return (modrm >= 0xd1 && modrm <= 0xd7) || modrm == 0xe2 ||
		       modrm == 0xe3 || modrm == 0xe6 || modrm == 0xe7 ||
		       modrm == 0xef;
	case 0xda:
		return modrm >= 0xe0 && modrm != 0xe9;
	case 0xdb:
		return (modrm >= 0xe5 && modrm <= 0xe7) || modrm >= 0xf8;
	case 0xdd:
		return modrm >= 0xf0;
	case 0xde:
		return modrm == 0xd8 || (modrm >= 0xda && modrm <= 0xdf);
	case 0xdf:
		return (modrm >= 0xe1 && modrm <= 0xe7) || modrm >= 0xf8;
	default:
		return 0;
	}
}

/* The reserved forms of the 0F map (SDM Vol. 2, Table A-3 and the
 * opcode extensions of Table A-6), for opcode 0F @op with ModRM @modrm,
 * the prefixes in @x[0, @at):
 *   - blank: 04, 0A, 0C, 0F, 24-27, 36, 39, 3B-3F, 7A, 7B, and A6, A7
 *     (VIA's PadLock there); UD0 (FF) after a prefix capstone 4 rejects
 *     (it raises #UD anyway);
 *   - memory operands only: MOVLPS/MOVHPS stores (13, 17), MOVNTPS (2B),
 *     MOVNTQ (E7), MOVNTI (C3), LSS/LFS/LGS (B2, B4, B5), PREFETCHW and
 *     PREFETCHWT1 (0D /1, /2; its other forms are reserved too);
 *   - register operands only: MOVMSKPS (50), PMOVMSKB (D7), MASKMOVQ
 *     (F7), PEXTRW (C5);
 *   - mandatory prefixes: PUNPCKLQDQ/HQDQ (6C, 6D) need 66; HADDPD/PS,
 *     HSUBPD/PS (7C, 7D) and ADDSUBPD/PS (D0) 66 or F2; the MOVQ forms
 *     (D6; after F2 or F3 on registers only) and CVTxx2xx (E6) one of 66,
 *     F2, F3; LDDQU (F0) F2, with memory; POPCNT
 *     (B8) F3 (without it JMPE, which Intel 64 CPUs lack); VMREAD and
 *     VMWRITE (78, 79) take none (after 66 or F2, AMD's SSE4a);
 *   - groups: 6 (00) /6 /7; 12 and 13 (71, 72) but /2 /4 /6 on a
 *     register; 14 (73) but /2 /6 on a register, /3 /7 after 66; 8 (BA)
 *     /0-/3; 9 (C7) /0 /2 with memory, /0-/5 on a register; 15 (AE) on a
 *     register /0-/4 without F3. */
static int reserved_0f(const uint8_t *x, int at, uint8_t op, uint8_t modrm)
{
	const unsigned reg = (modrm >> 3) & 7, mem = modrm >> 6 != 3;
	const int p66 = memchr(x, 0x66, (size_t)at) != NULL;
	const int pf2 = memchr(x, 0xf2, (size_t)at) != NULL;
	const int pf3 = memchr(x, 0xf3, (size_t)at) != NULL;
	switch (op) {
	case 0x04: case 0x0a: case 0x0c: case 0x0f: case 0x24: case 0x25:
	case 0x26: case 0x27: case 0x36: case 0x39: case 0x3b: case 0x3c:
	case 0x3d: case 0x3e: case 0x3f: case 0x7a: case 0x7b: case 0xa6:
	case 0xa7:
		return 1;
	case 0xff:
		return at > 0;
	case 0x13: case 0x17: case 0x2b: case 0xe7: case 0xc3: case 0xb2:
	case 0xb4: case 0xb5:
		return !mem;
	case 0x0d:
		return !mem || (reg != 1 && reg != 2);
	case 0x50: case 0xd7: case 0xf7: case 0xc5:
		return mem;
	case 0x6c: case 0x6d:
		return !p66;
	case 0x7c: case 0x7d: case 0xd0:
		return !p66 && !pf2;
	case 0xd6: /* MOVQ; MOVQ2DQ, MOVDQ2Q on registers only */
		return !p66 && (mem || (!pf2 && !pf3));
	case 0xe6:
		return !p66 && !pf2 && !pf3;
	case 0xf0:
		return !pf2 || !mem;
	case 0xb8:
		return !pf3;
	case 0x78: case 0x79:
		return p66 || pf2 || pf3;
	case 0x00:
		return reg >= 6;
	case 0x71: case 0x72:
		return mem || (reg != 2 && reg != 4 && reg != 6);
	case 0x73:
		return mem || !(reg == 2 || reg == 6 ||
				(p66 && (reg == 3 || reg == 7)));
	case 0xba:
		return reg < 4;
	case 0xc7:
		return mem ? reg == 0 || reg == 2 : reg < 6;
	case 0xae:
		return !mem && reg < 5 && !pf3;
	default:
		return 0;
	}
}

/* By the opcode map (SDM Vol. 2, App. A): the one-byte opcodes marked
 * i64; group 5 /7, group 4 /2-/7, group 6 /6-/7, group 11 /1-/6 (and /7
 * but XABORT/XBEGIN), segment registers 6 and 7, the blank x87 forms
 * (x87_reserved()); LEA and far CALL/JMP through group 5 need a memory
 * operand; LOCK only before lockable(); the 0F map's (reserved_0f()). */
int pts_test_reserved64(const uint8_t *x, int n)
{
	int lock, i;
	if (n > 15)
		n = 15;
	i = pts_test_opcode_at(x, n, &lock);
	if (i + 2 >= n)
		return 0;
	if (lock && !lockable(x + i))
		return 1;
	switch (x[i]) {
	case 0x06: case 0x07: case 0x0e: case 0x16: case 0x17: case 0x1e:
	case 0x1f: case 0x27: case 0x2f: case 0x37: case 0x3f: case 0x60:
	case 0x61: case 0x82: case 0x9a: case 0xce: case 0xd4: case 0xd5:
	case 0xd6: case 0xea:
		return 1;
	case 0x8c: case 0x8e: /* segment registers 6 and 7 do not exist */
		return i + 1 < n && ((x[i + 1] >> 3) & 7) >= 6;
	case 0xd8: case 0xd9: case 0xda: case 0xdb: case 0xdc: case 0xdd:
	case 0xde: case 0xdf:
		return i + 1 < n && x87_reserved(x[i], x[i + 1]);
	case 0x62:
		/* EVEX: P0[3:2] must be 0, P1[2] must be 1 (SDM Vol. 2A,
		 * "Instruction Format and EVEX", the EVEX bit fields table),
		 * and the map P0[1:0] one of 0F, 0F38, 0F3A (1-3; SDM Vol. 2A
		 * 3.1.1.2: "only three encoded values of EVEX.mmm are defined
		 * as valid"); libipt's length decoder sizes it without
		 * checking them (map 0: soak seed 8507). */
		return i + 2 < n &&
		       ((x[i + 1] & 0x0c) != 0 || (x[i + 1] & 0x03) == 0 ||
			(x[i + 2] & 0x04) == 0);
	case 0xc4:
		/* VEX3: maps other than 0F, 0F38 and 0F3A (m-mmmm 1-3) are
		 * reserved (#UD; SDM Vol. 2A, VEX prefix); libipt's length
		 * decoder sizes maps 0 and 4. */
		return i + 1 < n && ((x[i + 1] & 0x1f) == 0 ||
				     (x[i + 1] & 0x1f) > 3);
	case 0xfe:
		return i + 1 < n && ((x[i + 1] >> 3) & 7) >= 2;
	case 0xff: /* /7 reserved; far CALL and JMP (/3, /5) need memory */
		return i + 1 < n && (((x[i + 1] >> 3) & 7) == 7 ||
				     ((x[i + 1] >> 6 == 3) &&
				      (((x[i + 1] >> 3) & 7) == 3 ||
				       ((x[i + 1] >> 3) & 7) == 5)));
	case 0xc6: case 0xc7: /* group 11: MOV (/0), XABORT/XBEGIN (F8) */
		return i + 1 < n && ((x[i + 1] >> 3) & 7) != 0 &&
		       x[i + 1] != 0xf8;
	case 0x8d: /* LEA needs memory */
		return i + 1 < n && x[i + 1] >> 6 == 3;
	case 0x0f:
		return i + 2 < n && reserved_0f(x, i, x[i + 1], x[i + 2]);
	default:
		return 0;
	}
}
