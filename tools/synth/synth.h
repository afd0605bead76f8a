/* Trace synthesis (issue #3): the bytes a real Intel CPU would write for a
 * known instruction flow, and that flow as ground truth.
 *
 * Internal to tools/ (library synth_lib, used by `ptscope synth` and the
 * tests). The parts:
 *   - execution sources make one step record per executed instruction or
 *     event: the ELF walk (walk.c, enclave.c) and a ptrace recording
 *     (run_ptrace.c);
 *   - the emitter (emit_state.c, emit_packets.c) turns steps into packets
 *     following docs/pt-sgx-facts.md sections 2 and 4, with the PacketEn
 *     state (TriggerEn, ContextEn, FilterEn, BranchEn) and a clock
 *     (clock.c) for timing packets;
 *   - truth.c writes the ground truth and the expected visible flow;
 *   - synth.c drives a source through the emitter.
 */
#ifndef PTS_TOOLS_SYNTH_H
#define PTS_TOOLS_SYNTH_H

#include <ptscope/decoder.h>
#include <ptscope/model.h>
#include <ptscope/packets.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ------------------------------------------------------------------------ */
/* Steps: what a source hands the emitter.                                  */

enum syn_kind {
	/* Instructions (they execute, the truth lists them). */
	SYN_SEQ = 0, /* falls through, no packet */
	SYN_COND,    /* conditional branch; SYN_F_TAKEN */
	SYN_JUMP,    /* near direct jump */
	SYN_CALL,    /* near direct call (pushes the return address) */
	SYN_IJUMP,   /* near indirect jump */
	SYN_ICALL,   /* near indirect call (pushes) */
	SYN_RET,     /* near return */
	SYN_FAR,     /* far transfer: SYSCALL, SYSRET, IRET */
	SYN_ENCLU,   /* ENCLU doing EENTER, ERESUME or EEXIT */
	/* Events (nothing executes at @ip; it is where execution stood). */
	SYN_INTR,    /* interrupt before @ip, handler at @next */
	SYN_AEX,     /* asynchronous enclave exit before @ip, AEP at @next */
	SYN_RESTART, /* software: trace off before @ip, on again at @next */
	SYN_KIND_COUNT
};

#define SYN_F_TAKEN 0x01 /* SYN_COND: taken */
#define SYN_F_CALL0 0x02 /* SYN_CALL to the next instruction: no push */

/* Where code runs: CPL 0 or 3, inside enclave @encl (index in the
 * configuration) or outside (-1). */
struct syn_where {
	uint8_t cpl;
	int8_t encl;
};

struct syn_step {
	uint64_t ip;   /* instruction (or event) address */
	uint64_t next; /* where execution continues */
	uint8_t size;  /* instructions: 1..15; events: 0 */
	uint8_t kind;  /* enum syn_kind */
	uint8_t flags; /* SYN_F_* */
	struct syn_where at, to; /* where @ip and @next run */
	uint32_t extra_cycles;   /* beyond the clock's cycles per instruction */
};

static inline int syn_is_insn(const struct syn_step *s)
{
	return s->kind < SYN_INTR;
}

/* ------------------------------------------------------------------------ */
/* Options (filled by cmd_synth.c or a test).                               */

struct syn_options {
	uint64_t seed;
	uint64_t insns;   /* instructions to execute (walk) */
	uint64_t psb_period; /* bytes between PSBs */
	uint8_t user_only;   /* OS=0 */
	uint8_t retcomp;     /* 0: DisRETC */
	uint8_t long_tnt;    /* pack up to 47 bits into TNT-64 */
	uint8_t tsc, mtc, cyc; /* TSCEn, MTCEn, CYCEn */
	uint8_t mtc_freq;    /* N */
	uint8_t cyc_thresh;  /* CycThresh field value */
	uint8_t kernel;      /* SYSCALLs and interrupts visit a kernel stub */
	uint8_t cr3_filter;
	uint64_t cr3, cr3_match;
	/* Rates are per million instructions. */
	uint32_t async_rate, ovf_rate, aex_rate, freq_rate, ret_nocomp_rate;
	uint32_t ovf_len;  /* mean overflow length in instructions */
	/* Clock. */
	uint32_t cpi_q8;   /* core cycles per instruction << 8 */
	uint32_t eax, ebx; /* CPUID 0x15: TSC/CTC = ebx/eax */
	uint8_t nom_ratio; /* max non-turbo ratio (TSC = nom x 100 MHz) */
	uint8_t cbr;       /* initial core:bus ratio */
	uint64_t tsc0;     /* TSC at the start */
	/* Ranges: IP filter and TraceStop, as IA32_RTIT_ADDRn. */
	uint8_t n_addr;
	uint8_t addr_cfg[4];
	uint64_t addr_a[4], addr_b[4];
};

void syn_options_default(struct syn_options *o);

/* The IA32_RTIT_CTL value that @o describes (TraceEn set). */
uint64_t syn_options_ctl(const struct syn_options *o);

/* ------------------------------------------------------------------------ */
/* The clock: core cycles, TSC, crystal clock (CTC).                        */

struct syn_clock {
	uint64_t cycles;      /* core cycles since the start */
	uint64_t tsc;         /* TSC now */
	uint64_t tsc_rem;     /* remainder of cycles * nom / cbr */
	uint32_t frac_q8;     /* fraction of a cycle carried (CPI) */
	uint32_t cpi_q8;
	uint32_t eax, ebx;
	uint8_t nom, cbr;
};

void syn_clock_init(struct syn_clock *c, const struct syn_options *o);
/* Advances by one instruction plus @extra cycles. */
void syn_clock_step(struct syn_clock *c, uint32_t extra);
/* Changes the core:bus ratio (a P-state change). */
void syn_clock_set_cbr(struct syn_clock *c, uint8_t cbr);
/* The crystal clock value at TSC @tsc and the TSC ticks since its last
 * tick (the TMA's FastCounter). */
uint64_t syn_clock_ctc(const struct syn_clock *c, uint64_t tsc,
		       uint32_t *fc);

/* ------------------------------------------------------------------------ */
/* The emitter.                                                             */

/* Why an instruction was not visible (enum order = precedence). */
enum syn_hidden {
	SYN_VISIBLE = 0,
	SYN_HID_OVERFLOW,
	SYN_HID_STOPPED, /* TraceStop (or not yet re-enabled) */
	SYN_HID_ENCLAVE, /* production enclave: ContextEn = 0 */
	SYN_HID_CPL,
	SYN_HID_CR3,
	SYN_HID_FILTER,
	SYN_HID_COUNT
};
const char *syn_hidden_name(int why);

/* Where bytes go: a FILE or a growing memory buffer (tests). */
struct syn_sink {
	FILE *file;      /* NULL: memory */
	uint8_t *mem;    /* memory sink: owned, free() it */
	size_t mem_len, mem_cap;
	uint8_t buf[1 << 16];
	size_t len;
	uint64_t total;  /* bytes written in all */
	int failed;
};

struct syn_emitter;

/* Allocates an emitter writing to @sink (which must outlive it) with the
 * trace configuration of @o and the enclave map of @cfg. NULL on no
 * memory. */
struct syn_emitter *syn_emit_new(const struct syn_options *o,
				 const struct pts_config *cfg,
				 struct syn_sink *sink);
void syn_emit_free(struct syn_emitter *em);

/* Starts the trace with execution at @ip in @where: PSB+ and, when tracing
 * is on there, MODE.Exec and FUP. */
int syn_emit_start(struct syn_emitter *em, uint64_t ip, struct syn_where where);
/* Applies one step; returns enum syn_hidden for instructions (what a
 * decoder can see of it), for events 0 or SYN_HID_OVERFLOW (its packets
 * lost), < 0 on a write error. */
int syn_emit_step(struct syn_emitter *em, const struct syn_step *s);
/* Ends the trace as software clearing TraceEn would: FUP, TIP.PGD. */
int syn_emit_finish(struct syn_emitter *em);

/* Arms an overflow: packets are dropped from the next one generated until
 * syn_emit_overflow_end(). */
void syn_emit_overflow_arm(struct syn_emitter *em);
int syn_emit_overflow_active(const struct syn_emitter *em);
int syn_emit_overflow_end(struct syn_emitter *em);
/* A P-state change: CBR (and TSC/TMA) now. */
int syn_emit_freq(struct syn_emitter *em, uint8_t cbr);
/* TraceStop hit: TriggerEn stays 0 until a SYN_RESTART. */
int syn_emit_stopped(const struct syn_emitter *em);
const struct syn_clock *syn_emit_clock(const struct syn_emitter *em);

/* Counters for reports. */
struct syn_emit_stats {
	uint64_t packets, psbs, ovfs, pges, pgds, tips, tnt_bits, fups;
	/* Packets other than TSC, TMA, MTC, CYC and CBR: the ones a decoder
	 * walking instructions stops for (libipt reads past the others). */
	uint64_t flow_packets;
	/* Of them, those that bind the instructions before them: not TNTs
	 * (their bits count in tnt_bits, at the branch), not those of PSB+
	 * (status: libipt reads past them to the next packet, an OVF right
	 * after included). */
	uint64_t bind_packets;
};
void syn_emit_stats(const struct syn_emitter *em, struct syn_emit_stats *st);

/* Sinks. */
void syn_sink_init(struct syn_sink *s, FILE *file);
int syn_sink_write(struct syn_sink *s, const void *p, size_t n);
int syn_sink_flush(struct syn_sink *s);

/* ------------------------------------------------------------------------ */
/* Truth outputs.                                                           */

struct syn_truth;

/* Opens the writers; either FILE may be NULL (not wanted). */
struct syn_truth *syn_truth_new(FILE *truth, FILE *visible);
/* Records @s with the emitter's verdict @hidden. */
void syn_truth_step(struct syn_truth *t, const struct syn_step *s,
		    int hidden, const struct pts_config *cfg);
/* A timing mark: the exact TSC and core cycles at this point. */
void syn_truth_time(struct syn_truth *t, uint64_t tsc, uint64_t cycles);
/* Flushes and frees; returns 0 or -PTS_ERR_IO. */
int syn_truth_free(struct syn_truth *t);

#endif /* PTS_TOOLS_SYNTH_H */
