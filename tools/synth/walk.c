/* The seeded walk over real machine code (issue #3, `--walk ELF`).
 * Straight-line code falls through; conditional branches go either way,
 * backward ones biased to iterate; direct jumps and calls follow their
 * targets; indirect ones go to function entries from the symbol table;
 * returns pop the walk's call stack; code that cannot be followed (no
 * bytes, no decode, HLT/UD2/WRMSR..., a return with nothing to return to)
 * restarts the walk at a random function entry, which the trace shows as
 * software switching tracing off and on again. Instructions are classified
 * once by the decoder's classifier and kept in a hash table: a long walk
 * revisits the same code millions of times. */
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
		if (in->iclass == SYN_BAD || a >= SYN_KSTUB_BASE)
			continue;
		int e = syn_walk_encl_at(w, a);
		int err = fn_add(e >= 0 ? &w->encl_fns[e] : &w->host_fns, a);
		if (err < 0)
			return err;
	}
	return w->host_fns.n ? 0 : -PTS_ERR_BAD_CONFIG;
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
	if ((err = collect_functions(w)) < 0)
		goto fail;
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
 * again at a function entry outside any enclave. */
void syn_walk_make_restart(struct syn_walk *w, struct syn_step *s, uint64_t ip)
{
	struct syn_where host = {3, -1};
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
	for (size_t i = 0; i < w->cfg->n_enclaves; i++) {
		w->encl[i].resume = 0;
		w->encl[i].eexit_to = 0;
	}
}

/* A conditional branch: backward ones iterate 7 times in 8. */
static int take_branch(struct syn_walk *w, const struct syn_insn *in)
{
	uint64_t r = syn_rand(w);
	if (in->target <= in->ip)
		return (r & 7) != 0;
	return (int)(r & 1);
}

int syn_walk_next(struct syn_walk *w, struct syn_step *s)
{
	memset(s, 0, sizeof(*s));
	if (w->queued) {
		*s = w->queue;
		w->queued = 0;
		goto done;
	}
	if (w->restart_here) {
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
		s->kind = SYN_JUMP;
		s->next = in->target;
		break;
	case PTS_INSN_CALL:
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
		break;
	}
	case PTS_INSN_FAR:
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
	return 0;
}
