/* Execution sources: the seeded walk over real machine code (walk.c, with
 * the enclave and kernel scenario in enclave.c) and the ptrace recording
 * (run_ptrace.c). Internal to tools/synth. */
#ifndef PTS_TOOLS_SYNTH_WALK_H
#define PTS_TOOLS_SYNTH_WALK_H

#include "synth.h"

/* The kernel stub that stands for ring 0 (a SYSCALL entry ending in SYSRET,
 * an interrupt entry ending in IRET): real bytes, so a decoder tracing
 * ring 0 (OS=1) can follow it like any code. */
#define SYN_KSTUB_BASE 0xffffffff81000000ull
#define SYN_KSTUB_SYSCALL (SYN_KSTUB_BASE + 0x00)
#define SYN_KSTUB_IRQ (SYN_KSTUB_BASE + 0x10)
#define SYN_KSTUB_SIZE 0x20
extern const uint8_t syn_kstub[SYN_KSTUB_SIZE];

struct syn_walk;

/* A walker over the code in @img (which it extends with the kernel stub
 * when @o->kernel), starting at @start, with the enclave map of @cfg.
 * Returns 0 and sets *@out, -PTS_ERR_NOMEM, or -PTS_ERR_BAD_CONFIG when
 * there is no function entry to walk from. */
int syn_walk_new(const struct syn_options *o, const struct pts_config *cfg,
		 struct pts_image *img, uint64_t start, struct syn_walk **out);
void syn_walk_free(struct syn_walk *w);
/* Where the walk starts. */
uint64_t syn_walk_ip(const struct syn_walk *w);
struct syn_where syn_walk_where(const struct syn_walk *w);
/* The next step. Returns 0 or a negative error. */
int syn_walk_next(struct syn_walk *w, struct syn_step *s);
/* The next step is a restart in place (after a TraceStop). */
void syn_walk_restart_here(struct syn_walk *w);

/* enclave.c: ENCLU, AEX, interrupts and the kernel stub. The walker's
 * state they need is in struct syn_walk (walk.c); these are its parts. */
struct syn_walk_encl {
	uint64_t eexit_to; /* NLIP of the ENCLU that entered */
	uint64_t resume;   /* enclave IP saved by an AEX, 0 none */
	size_t depth;      /* host call depth at entry */
};

#endif
