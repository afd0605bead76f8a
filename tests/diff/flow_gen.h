/* A small program-and-trace generator for the flow tests and benchmark
 * (until the synthesizer exists, and beside it as an independent oracle).
 *
 * It lays out random x86-64 code (functions made of blocks ending in Jcc,
 * JMP, CALL, CALL +0, indirect CALL/JMP, RET, SYSCALL; an interrupt handler
 * ending in IRETQ; a driver loop calling functions indirectly), runs a random
 * walk over it, and writes the packets a CPU would write for that walk with
 * ptscope's encoder: TNT-8 bits, TIPs (optionally deferred behind pending
 * TNT bits), compressed RETs (optional), periodic PSB+ with FUP, async
 * interrupts (FUP + TIP), SYSCALL disabling tracing (TIP.PGD, later
 * TIP.PGE), and overflows (packets lost, then OVF + FUP). The ground truth is
 * the list of instruction addresses a decoder can see.
 */
#ifndef PTS_TEST_FLOW_GEN_H
#define PTS_TEST_FLOW_GEN_H

#include <stddef.h>
#include <stdint.h>

struct flow_gen_opts {
	uint64_t seed;
	uint64_t insns;       /* instructions to execute (at least) */
	unsigned functions;   /* functions besides driver and handler */
	int retcomp;          /* compress returns */
	int deferred_tips;    /* defer TIPs behind pending TNT bits */
	unsigned async_per_mille;   /* interrupts per 1000 instructions */
	unsigned syscall_per_mille; /* SYSCALL blocks per 1000 blocks laid */
	unsigned ovf_per_million;   /* overflows per 10^6 instructions */
	unsigned psb_period;  /* bytes between PSBs (0: 4096) */
	int keep_truth;       /* fill truth (not needed by the benchmark) */
};

struct flow_gen {
	uint64_t base;           /* code address */
	uint8_t *code;           /* code bytes */
	size_t code_size;
	uint8_t *trace;          /* packets */
	size_t trace_size;
	uint64_t *truth;         /* visible instruction addresses */
	size_t ntruth;
	uint64_t executed;       /* all instructions run, visible or not */
	uint64_t events;         /* enables + disables + overflows made */
};

/* The differential tests' configurations (plain, return compression,
 * deferred TIPs, async events, syscalls, overflows, all, all without
 * return compression): case @c (< FLOW_GEN_CASES) into @o's feature
 * fields. Returns its name. */
#define FLOW_GEN_CASES 8
const char *flow_gen_case(unsigned c, struct flow_gen_opts *o);

/* Generates a program and a trace. Returns 0, or -1 on no memory. */
int flow_gen_run(const struct flow_gen_opts *opts, struct flow_gen *out);
void flow_gen_free(struct flow_gen *g);

#endif
