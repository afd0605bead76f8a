/* The walker's state, shared by walk.c and enclave.c. */
#ifndef PTS_TOOLS_SYNTH_WALK_INTERNAL_H
#define PTS_TOOLS_SYNTH_WALK_INTERNAL_H

#include "walk.h"

#define SYN_WALK_STACK 512

/* One classified instruction (the decode cache's entry). */
enum { SYN_BAD = 0xff };
enum {
	SYN_SP_NONE = 0,
	SYN_SP_SYSCALL,     /* FAR */
	SYN_SP_RETURN_USER, /* FAR: SYSRET, IRET */
	SYN_SP_TAKEN_DIES,  /* JCC: the taken side calls a noreturn function */
	SYN_SP_FALL_DIES,   /* JCC: the fall-through side does */
};

struct syn_insn {
	uint64_t ip; /* 0: empty slot */
	uint64_t target;
	uint8_t size, iclass, flags, special;
};

struct syn_fnlist {
	uint64_t *addr;
	size_t n, cap;
};

struct syn_walk {
	struct syn_options o;
	const struct pts_config *cfg;
	struct pts_image *img;
	struct pts_insn_classifier *cls;
	uint64_t rng;

	struct syn_insn *cache;
	unsigned cache_bits;
	size_t cache_used;

	struct syn_fnlist host_fns, *encl_fns;
	/* Entries of the noreturn functions found by name (walk.c). */
	uint64_t noret[24];
	size_t n_noret;

	uint64_t ip;
	struct syn_where where;
	uint64_t stack[SYN_WALK_STACK];
	size_t depth;
	struct syn_walk_encl *encl; /* per enclave */
	uint64_t kret;              /* where ring 0 returns to */
	uint8_t restart_here;
	uint8_t restart_next; /* left an enclave to restart */
	uint8_t queued;
	struct syn_step queue;

	/* For take_branch (walk.c): the IP of the last SYSCALL (0: none
	 * since the restart), and the loop taken backward last: its head,
	 * the call depth it runs at, the rounds gone so far. */
	uint64_t last_syscall;
	struct {
		uint64_t head; /* 0: none */
		size_t depth;
		uint32_t rounds;
	} back;

	/* The no-progress check (walk.c): a checkpoint of the walk's state
	 * in the current stretch without choices. */
	struct {
		uint64_t ip; /* 0: no checkpoint yet */
		struct syn_where where;
		size_t depth; /* call depth at the checkpoint */
		size_t low;   /* lowest call depth since */
		uint64_t steps, span; /* steps since; the next one after span */
	} loop;
};

uint64_t syn_rand(struct syn_walk *w);
int syn_chance(struct syn_walk *w, uint32_t per_million);
const struct syn_insn *syn_walk_insn(struct syn_walk *w, uint64_t ip);
uint64_t syn_walk_random_fn(struct syn_walk *w, struct syn_where where);
int syn_walk_encl_at(const struct syn_walk *w, uint64_t ip);
void syn_walk_push(struct syn_walk *w, uint64_t ra);
void syn_walk_make_restart(struct syn_walk *w, struct syn_step *s,
			   uint64_t ip);

/* enclave.c */
int syn_walk_async(struct syn_walk *w, struct syn_step *s);
/* A restart before @ip inside an enclave entered by EENTER: @s becomes
 * the EEXIT back to the host and the restart follows there. Returns 1
 * when it did. */
int syn_walk_leave_enclave(struct syn_walk *w, struct syn_step *s,
			   uint64_t ip);
void syn_walk_far(struct syn_walk *w, const struct syn_insn *in,
		  struct syn_step *s);
void syn_walk_enclu(struct syn_walk *w, const struct syn_insn *in,
		    struct syn_step *s);

#endif
