/* The seeded walk over real machine code (issue #3, `--walk ELF`).
 * Straight-line code falls through; conditional branches go either way,
 * backward ones biased to iterate; direct jumps and calls follow their
 * targets; indirect ones go to function entries from the symbol table;
 * returns pop the walk's call stack; code that cannot be followed (no
 * bytes, no decode, HLT/UD2/WRMSR..., a return with nothing to return to)
 * restarts the walk at a random function entry, which the trace shows as
 * software switching tracing off and on again.
 *
 * Code that does not come back ends the path the same way, so that a walk
 * over a library looks like the library at work rather than like a
 * process dying over and over:
 *
 *   - Noreturn functions, known by name (_exit, exit, abort, __libc_fatal,
 *     __stack_chk_fail, __assert_fail...; see noreturn_names): a direct
 *     call or jump to one restarts the walk at that instruction (the
 *     process would end there); they are never indirect targets or
 *     restart entries; and a conditional branch one of whose sides calls
 *     one within a few straight-line instructions (the stack canary's
 *     `jne` to `call __stack_chk_fail`, an assert) is an error check: the
 *     walk always goes the other way.
 *   - Loops with no way out, found without names: between two choices
 *     (a conditional branch, an indirect target, an interrupt or AEX, a
 *     restart) the walk is a function of where it is (IP, ring, enclave)
 *     and its call stack, so when that state repeats the walk would go
 *     round the same instructions forever: libc's `for (;;)
 *     exit_group()` after main returns (the walk lets every SYSCALL
 *     return: it cannot know that exit_group does not), a `jmp .`. Such a
 *     loop is found (loop_closed) and restarts the walk where the state
 *     came back, after a few rounds.
 *   - Loops and recursion the walk's bias would not let go of: a loop
 *     goes round at most SYN_LOOP_ROUNDS times in a row, a loop around a
 *     SYSCALL (a retry, a futex wait) rarely goes round (take_branch),
 *     and a call that would recurse SYN_RECURSION deep from one call site
 *     restarts the walk (recursing).
 *
 * None of this draws more random numbers or changes a walk that meets
 * none of it: the fixtures over fixtures/bin/enclave_demo stay as they
 * were.
 *
 * Instructions are classified once by the decoder's classifier and kept
 * in a hash table: a long walk revisits the same code millions of
 * times. */
#include "walk_internal.h"

#include <stdlib.h>
#include <string.h>

uint64_t syn_rand(struct syn_walk *w)
{
	uint64_t z = (w->rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int syn_chance(struct syn_walk *w, uint32_t per_million)
{
	return per_million && syn_rand(w) % 1000000 < per_million;
}

/* ------------------------------------------------------------------------ */
/* The decode cache.                                                        */

static size_t slot_of(const struct syn_walk *w, uint64_t ip)
{
	return (size_t)((ip * 0x9e3779b97f4a7c15ull) >> (64 - w->cache_bits));
}

static int cache_grow(struct syn_walk *w)
{
	unsigned bits = w->cache_bits ? w->cache_bits + 1 : 16;
	struct syn_insn *old = w->cache;
	size_t old_n = w->cache ? (size_t)1 << w->cache_bits : 0;
	w->cache = calloc((size_t)1 << bits, sizeof(*w->cache));
	if (!w->cache) {
		w->cache = old;
		return -PTS_ERR_NOMEM;
	}
	w->cache_bits = bits;
	size_t mask = ((size_t)1 << bits) - 1;
	for (size_t i = 0; i < old_n; i++) {
		if (!old[i].ip)
			continue;
		size_t k = slot_of(w, old[i].ip);
		while (w->cache[k].ip)
			k = (k + 1) & mask;
		w->cache[k] = old[i];
	}
	free(old);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Noreturn functions.                                                      */

/* Functions that end the process or the thread (libc's and the C
 * runtime's; a program's own are not known by name: the loop rules below
 * catch how they end). */
static const char *const noreturn_names[] = {
	"_exit",	  "_Exit",	  "exit",	  "quick_exit",
	"abort",	  "__libc_fatal", "__fortify_fail", "__chk_fail",
	"__stack_chk_fail", "__assert_fail", "__assert_perror_fail",
	"__assert",	  "err",	  "errx",	  "verr",
	"verrx",	  "pthread_exit", "thrd_exit",
};

static void find_noreturn(struct syn_walk *w)
{
	size_t cap = sizeof(w->noret) / sizeof(w->noret[0]);
	for (size_t i = 0; i < sizeof(noreturn_names) / sizeof(noreturn_names[0]);
	     i++) {
		const struct pts_symbol *sym =
			pts_image_symbol_find(w->img, 0, noreturn_names[i]);
		if (sym && w->n_noret < cap)
			w->noret[w->n_noret++] = sym->addr;
	}
}

static int is_noreturn(const struct syn_walk *w, uint64_t addr)
{
	for (size_t i = 0; i < w->n_noret; i++)
		if (w->noret[i] == addr)
			return 1;
	return 0;
}

/* Whether the code at @ip, run straight (plain instructions and direct
 * jumps, at most 8), reaches a direct call or jump to a noreturn
 * function: an error path. Decodes on its own, not through the cache,
 * which may be growing under classify(). */
static int dies_ahead(struct syn_walk *w, uint64_t ip)
{
	for (int i = 0; i < 8 && w->n_noret; i++) {
		struct pts_insn_info info;
		if (pts_insn_decode(w->cls, w->img, 0, PTS_EXEC_64, ip, &info) <
		    0)
			return 0;
		switch (info.iclass) {
		case PTS_INSN_PLAIN:
			ip += info.size;
			break;
		case PTS_INSN_JMP:
			if (is_noreturn(w, info.target))
				return 1;
			ip = info.target;
			break;
		case PTS_INSN_CALL:
			return !(info.flags & PTS_INSN_F_CALL0) &&
			       is_noreturn(w, info.target);
		default:
			return 0;
		}
	}
	return 0;
}

static void classify(struct syn_walk *w, struct syn_insn *in)
{
	struct pts_insn_info info;
	int n = pts_insn_decode(w->cls, w->img, 0, PTS_EXEC_64, in->ip, &info);
	if (n < 0) {
		in->iclass = SYN_BAD;
		return;
	}
	in->size = info.size;
	in->iclass = info.iclass;
	in->flags = info.flags;
	in->target = info.target;
	in->special = SYN_SP_NONE;
	if (info.iclass == PTS_INSN_FAR) {
		uint8_t b[3] = {0, 0, 0};
		pts_image_fetch(w->img, 0, in->ip, b, sizeof(b));
		/* REX.W is the only prefix the stub and libc use here. */
		const uint8_t *p = b[0] == 0x48 ? b + 1 : b;
		if (p[0] == 0x0f && p[1] == 0x05)
			in->special = SYN_SP_SYSCALL;
		else if ((p[0] == 0x0f && p[1] == 0x07) || p[0] == 0xcf)
			in->special = SYN_SP_RETURN_USER;
	}
	if (info.iclass == PTS_INSN_JCC) {
		int taken = dies_ahead(w, info.target);
		int fall = dies_ahead(w, in->ip + info.size);
		if (taken != fall)
			in->special = taken ? SYN_SP_TAKEN_DIES
					    : SYN_SP_FALL_DIES;
	}
}

const struct syn_insn *syn_walk_insn(struct syn_walk *w, uint64_t ip)
{
	size_t mask = ((size_t)1 << w->cache_bits) - 1;
	size_t k = slot_of(w, ip);
	while (w->cache[k].ip) {
		if (w->cache[k].ip == ip)
			return &w->cache[k];
		k = (k + 1) & mask;
	}
	if ((w->cache_used + 1) * 2 > mask + 1) {
		if (cache_grow(w) < 0)
			return NULL;
		return syn_walk_insn(w, ip);
	}
	w->cache[k].ip = ip;
	classify(w, &w->cache[k]);
	w->cache_used++;
	return &w->cache[k];
}

/* ------------------------------------------------------------------------ */
/* Function entries.                                                        */

/* A random function entry in the same region as @where (outside enclaves,
 * or inside the same enclave). */
uint64_t syn_walk_random_fn(struct syn_walk *w, struct syn_where where)
{
	const struct syn_fnlist *l = where.encl >= 0 ? &w->encl_fns[where.encl]
						     : &w->host_fns;
	if (!l->n)
		l = &w->host_fns;
	return l->addr[syn_rand(w) % l->n];
}

static int fn_add(struct syn_fnlist *l, uint64_t addr)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		uint64_t *grown = realloc(l->addr, cap * sizeof(*grown));
		if (!grown)
			return -PTS_ERR_NOMEM;
		l->addr = grown;
		l->cap = cap;
	}
	l->addr[l->n++] = addr;
	return 0;
}

int syn_walk_encl_at(const struct syn_walk *w, uint64_t ip)
{
	for (size_t i = 0; i < w->cfg->n_enclaves; i++)
		if (w->cfg->enclaves[i].begin <= ip &&
		    ip < w->cfg->enclaves[i].end)
			return (int)i;
	return -1;
}

static int collect_functions(struct syn_walk *w)
{
	const struct pts_symbol *syms;
	size_t n = pts_image_functions(w->img, 0, &syms);
	size_t ne = w->cfg->n_enclaves;
	w->encl_fns = calloc(ne ? ne : 1, sizeof(*w->encl_fns));
	if (!w->encl_fns)
		return -PTS_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		uint64_t a = syms[i].addr;
		/* Only entries whose first instruction decodes. */
		const struct syn_insn *in = syn_walk_insn(w, a);
		if (!in)
			return -PTS_ERR_NOMEM;
		if (in->iclass == SYN_BAD || a >= SYN_KSTUB_BASE ||
		    is_noreturn(w, a))
			continue;
		int e = syn_walk_encl_at(w, a);
		int err = fn_add(e >= 0 ? &w->encl_fns[e] : &w->host_fns, a);
		if (err < 0)
			return err;
	}
	return w->host_fns.n ? 0 : -PTS_ERR_BAD_CONFIG;
}

/* ------------------------------------------------------------------------ */
/* Loops without a way out.                                                 */

/* Brent's cycle finding over the stretch since the last choice: a
 * checkpoint of the state after 1, 2, 4, 8... steps. Coming back to the
 * checkpoint proves a loop, found within about twice its length plus the
 * steps that led into it. The call stack counts by its depth only if the
 * walk has not returned below the checkpoint's depth since: above that,
 * the frames under the checkpoint are the ones it had. Checkpoints are
 * taken in ring 3 only, so that the restart is in user code (the kernel
 * stub's SYSRET always leads back there). */
static void loop_reset(struct syn_walk *w)
{
	w->loop.ip = 0;
	w->loop.steps = 0;
	w->loop.span = 1;
}

static int loop_closed(const struct syn_walk *w)
{
	return w->loop.ip == w->ip && w->loop.steps &&
	       w->loop.depth == w->depth &&
	       w->loop.low >= w->depth && w->loop.where.cpl == w->where.cpl &&
	       w->loop.where.encl == w->where.encl;
}

/* After step @s (w->ip and w->where already past it). */
static void loop_track(struct syn_walk *w, const struct syn_step *s)
{
	switch (s->kind) {
	case SYN_COND:
	case SYN_IJUMP:
	case SYN_ICALL:
	case SYN_INTR:
	case SYN_AEX:
	case SYN_RESTART:
		loop_reset(w);
		return;
	default:
		break;
	}
	if (w->depth < w->loop.low)
		w->loop.low = w->depth;
	if (++w->loop.steps < w->loop.span || w->where.cpl != 3)
		return;
	w->loop.ip = w->ip;
	w->loop.where = w->where;
	w->loop.depth = w->loop.low = w->depth;
	w->loop.steps = 0;
	w->loop.span *= 2;
}

/* ------------------------------------------------------------------------ */
/* The walk.                                                                */

int syn_walk_new(const struct syn_options *o, const struct pts_config *cfg,
		 struct pts_image *img, uint64_t start, struct syn_walk **out)
{
	struct syn_walk *w = calloc(1, sizeof(*w));
	if (!w)
		return -PTS_ERR_NOMEM;
	w->o = *o;
	w->cfg = cfg;
	w->img = img;
	w->rng = o->seed;
	w->cls = pts_insn_classifier_new();
	w->encl = calloc(cfg->n_enclaves ? cfg->n_enclaves : 1,
			 sizeof(*w->encl));
	int err = -PTS_ERR_NOMEM;
	if (!w->cls || !w->encl || cache_grow(w) < 0)
		goto fail;
	if (o->kernel &&
	    (err = pts_image_add_mem(img, 0, syn_kstub, sizeof(syn_kstub),
				     SYN_KSTUB_BASE)) < 0)
		goto fail;
	find_noreturn(w);
	if ((err = collect_functions(w)) < 0)
		goto fail;
	loop_reset(w);
	const struct syn_insn *in = start ? syn_walk_insn(w, start) : NULL;
	w->ip = in && in->iclass != SYN_BAD ? start
					    : syn_walk_random_fn(w, w->where);
	w->where.cpl = 3;
	w->where.encl = -1;
	if (syn_walk_encl_at(w, w->ip) >= 0)
		w->ip = syn_walk_random_fn(w, w->where);
	*out = w;
	return 0;
fail:
	syn_walk_free(w);
	return err;
}

void syn_walk_free(struct syn_walk *w)
{
	if (!w)
		return;
	pts_insn_classifier_free(w->cls);
	free(w->cache);
	free(w->host_fns.addr);
	if (w->encl_fns)
		for (size_t i = 0; i < w->cfg->n_enclaves; i++)
			free(w->encl_fns[i].addr);
	free(w->encl_fns);
	free(w->encl);
	free(w);
}

uint64_t syn_walk_ip(const struct syn_walk *w)
{
	return w->ip;
}

struct syn_where syn_walk_where(const struct syn_walk *w)
{
	return w->where;
}

void syn_walk_restart_here(struct syn_walk *w)
{
	w->restart_here = 1;
}

void syn_walk_push(struct syn_walk *w, uint64_t ra)
{
	if (w->depth == SYN_WALK_STACK) {
		/* Drop the oldest frame: its return will restart the walk. */
		memmove(w->stack, w->stack + 1,
			(SYN_WALK_STACK - 1) * sizeof(w->stack[0]));
		w->depth--;
		for (size_t i = 0; i < w->cfg->n_enclaves; i++)
			if (w->encl[i].depth)
				w->encl[i].depth--;
	}
	w->stack[w->depth++] = ra;
}

/* Restarts the walk: tracing goes off before @ip (not executed) and on
 * again at a function entry outside any enclave. Inside an enclave the
 * thread leaves by EEXIT first (syn_walk_leave_enclave()). */
void syn_walk_make_restart(struct syn_walk *w, struct syn_step *s, uint64_t ip)
{
	struct syn_where host = {3, -1};
	if (syn_walk_leave_enclave(w, s, ip))
		return;
	w->restart_next = 0;
	s->kind = SYN_RESTART;
	s->ip = ip;
	s->size = 0;
	s->at = w->where;
	s->to = host;
	s->next = w->restart_here ? ip : syn_walk_random_fn(w, host);
	s->extra_cycles = 500;
	if (w->restart_here)
		s->to = w->where;
	w->restart_here = 0;
	w->depth = 0;
	w->back.head = 0;
	w->last_syscall = 0;
	for (size_t i = 0; i < w->cfg->n_enclaves; i++) {
		w->encl[i].resume = 0;
		w->encl[i].eexit_to = 0;
	}
}

/* A conditional branch: forward ones go either way, backward ones go
 * round again 7 times in 8, with two exceptions.
 * - A loop around the last SYSCALL is a retry or a wait (EINTR, a futex):
 *   real code rarely goes round those, so its back edge is taken 1 time
 *   in 8.
 * - A loop goes round at most SYN_LOOP_ROUNDS times in a row. The cap is
 *   for loops with several back edges to one head (libc's argp option
 *   scan has four): 7 in 8 at each keeps the walk there for thousands of
 *   rounds, a trace of one loop's TNT bits. A loop with one back edge
 *   gets that far once in 5000 visits: ordinary loops hardly change.
 *   Rounds count from the first back edge taken to a head until one to
 *   another head is taken, the loop's function returns or the walk
 *   restarts.
 * The random number is drawn in every case, so that the rest of the walk
 * does not shift when a rule applies. */
#define SYN_LOOP_ROUNDS 64

static int take_branch(struct syn_walk *w, const struct syn_insn *in)
{
	uint64_t r = syn_rand(w);
	/* An error check (see dies_ahead): the way that goes on. */
	if (in->special == SYN_SP_TAKEN_DIES || in->special == SYN_SP_FALL_DIES)
		return in->special == SYN_SP_FALL_DIES;
	if (in->target > in->ip)
		return (int)(r & 1);
	if (in->target <= w->last_syscall && w->last_syscall < in->ip)
		return (r & 7) == 0; /* a retry loop: round again 1 in 8 */
	if (w->back.head != in->target || w->back.depth != w->depth) {
		w->back.head = in->target;
		w->back.depth = w->depth;
		w->back.rounds = 0;
	}
	if ((r & 7) == 0 || w->back.rounds >= SYN_LOOP_ROUNDS)
		return 0;
	w->back.rounds++;
	return 1;
}

/* Recursion: a call whose return address is on the walk's stack
 * SYN_RECURSION times already. A function that calls itself in a loop
 * is a branching process: with 7 rounds in 8 each call makes several
 * more, and the walk never comes back out (libc's argp option tree).
 * Such a call ends the path like code the walk cannot follow. */
#define SYN_RECURSION 8

static int recursing(const struct syn_walk *w, uint64_t ra)
{
	unsigned seen = 0;
	for (size_t i = w->depth; i-- > 0;)
		if (w->stack[i] == ra && ++seen == SYN_RECURSION)
			return 1;
	return 0;
}

int syn_walk_next(struct syn_walk *w, struct syn_step *s)
{
	memset(s, 0, sizeof(*s));
	if (w->queued) {
		*s = w->queue;
		w->queued = 0;
		goto done;
	}
	if (w->restart_here || w->restart_next || loop_closed(w)) {
		syn_walk_make_restart(w, s, w->ip);
		goto done;
	}
	if (syn_walk_async(w, s))
		goto done;

	const struct syn_insn *in = syn_walk_insn(w, w->ip);
	if (!in)
		return -PTS_ERR_NOMEM;
	if (in->iclass == SYN_BAD) {
		syn_walk_make_restart(w, s, w->ip);
		goto done;
	}
	uint64_t nlip = in->ip + in->size;
	s->ip = in->ip;
	s->size = in->size;
	s->at = s->to = w->where;
	s->next = nlip;
	switch (in->iclass) {
	case PTS_INSN_PLAIN:
	case PTS_INSN_PTWRITE: /* PTWEn is off: an ordinary instruction */
		s->kind = SYN_SEQ;
		break;
	case PTS_INSN_JCC:
		s->kind = SYN_COND;
		if (take_branch(w, in)) {
			s->flags = SYN_F_TAKEN;
			s->next = in->target;
		}
		break;
	case PTS_INSN_JMP:
		if (is_noreturn(w, in->target)) {
			syn_walk_make_restart(w, s, in->ip);
			break;
		}
		s->kind = SYN_JUMP;
		s->next = in->target;
		break;
	case PTS_INSN_CALL:
		if (is_noreturn(w, in->target) || recursing(w, nlip)) {
			syn_walk_make_restart(w, s, in->ip);
			break;
		}
		s->kind = SYN_CALL;
		s->next = in->target;
		if (in->flags & PTS_INSN_F_CALL0)
			s->flags = SYN_F_CALL0; /* gets the IP: no return */
		else
			syn_walk_push(w, nlip);
		break;
	case PTS_INSN_JMP_IND:
		s->kind = SYN_IJUMP;
		s->next = syn_walk_random_fn(w, w->where);
		break;
	case PTS_INSN_CALL_IND:
		if (recursing(w, nlip)) {
			syn_walk_make_restart(w, s, in->ip);
			break;
		}
		s->kind = SYN_ICALL;
		s->next = syn_walk_random_fn(w, w->where);
		syn_walk_push(w, nlip);
		break;
	case PTS_INSN_RET: {
		size_t floor = w->where.encl >= 0 ? w->encl[w->where.encl].depth
						  : 0;
		if (w->depth <= floor) {
			syn_walk_make_restart(w, s, in->ip);
			break;
		}
		s->kind = SYN_RET;
		s->next = w->stack[--w->depth];
		if (w->depth < w->back.depth)
			w->back.head = 0; /* left the loop's function */
		break;
	}
	case PTS_INSN_FAR:
		if (in->special == SYN_SP_SYSCALL)
			w->last_syscall = in->ip;
		syn_walk_far(w, in, s);
		break;
	case PTS_INSN_ENCLU:
		syn_walk_enclu(w, in, s);
		break;
	default: /* OTHER: HLT, UD2, WRMSR, MOV CR3...: cannot follow */
		syn_walk_make_restart(w, s, in->ip);
		break;
	}
done:
	w->ip = s->next;
	w->where = s->to;
	loop_track(w, s);
	return 0;
}
