/* Instruction encodings that Intel's opcode map reserves in 64-bit mode,
 * from the bytes alone: what ptscope's decoder rejects (BAD_INSN) and
 * libipt's length decoder sizes anyway. The differential tests use it to
 * tell a reserved form from a decoder bug (diff_insn_libipt's opcode
 * sweep, diff_flow_damage's RULE_INVALID_INSN). */
#ifndef PTS_TEST_RESERVED_INSN_H
#define PTS_TEST_RESERVED_INSN_H

#include <stdint.h>

/* The index in @x (@n bytes) of the opcode after the legacy and REX
 * prefixes; *@lock whether LOCK is among them. */
int pts_test_opcode_at(const uint8_t *x, int n, int *lock);

/* Whether the instruction at @x (@n bytes there, at most 15 read) is
 * reserved in 64-bit mode. */
int pts_test_reserved64(const uint8_t *x, int n);

#endif
