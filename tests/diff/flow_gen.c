/* See flow_gen.h. The CPU model here follows docs/pt-sgx-facts.md 2.1-2.6
 * in its simplest form; the decoders under test must agree with it. */
#include "flow_gen.h"

#include "rng.h"

#include <ptscope/packets.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum kind { K_PLAIN, K_JCC, K_JMP, K_CALL, K_CALL0, K_CALLIND, K_JMPIND,
	    K_RET, K_SYSCALL, K_IRET };

struct ginsn {
	uint64_t ip;
	uint8_t size, kind;
	uint32_t fn, blk;    /* target function / block (by kind) */
	uint64_t target;     /* direct target, after layout */
};

struct gblock {
	uint32_t first, count; /* instructions */
};

struct gfunc {
	uint32_t first_blk, nblk;
};

static const uint8_t plains[][9] = {
	{1, 0x90},
	{3, 0x48, 0x89, 0xc3},
	{4, 0x48, 0x83, 0xc0, 0x01},
	{5, 0x0f, 0x1f, 0x44, 0x00, 0x00},
	{8, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
	{4, 0xf3, 0x0f, 0x1e, 0xfa},
	{3, 0x8b, 0x45, 0xfc},
};

struct gen {
	const struct flow_gen_opts *o;
	struct pts_rng rng;
	struct ginsn *ins;
	size_t nins, capins;
	struct gblock *blks;
	size_t nblks, capblks;
	struct gfunc *fns;
	uint32_t nfns;
	int32_t *index; /* code offset -> instruction */
	struct flow_gen *out;
	size_t trace_cap, truth_cap;
	/* CPU model */
	struct pts_lastip lip;
	uint64_t tnt_bits;
	unsigned tnt_count;
	uint64_t deferred[16];
	unsigned ndeferred;
	uint64_t hw[64];
	unsigned hw_top, hw_len;
	size_t since_psb;
	bool dropping; /* packets are being lost (overflow) */
	bool failed;
};

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	size_t n = *cap ? *cap * 2 : 1024;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * elem);
	if (!q)
		return false;
	*p = q;
	*cap = n;
	return true;
}

static struct ginsn *add_insn(struct gen *g, int kind, uint8_t size)
{
	if (!grow((void **)&g->ins, &g->capins, g->nins + 1, sizeof(*g->ins))) {
		g->failed = true;
		return NULL;
	}
	struct ginsn *i = &g->ins[g->nins++];
	memset(i, 0, sizeof(*i));
	i->kind = (uint8_t)kind;
	i->size = size;
	g->blks[g->nblks - 1].count++;
	return i;
}

static void new_block(struct gen *g)
{
	if (!grow((void **)&g->blks, &g->capblks, g->nblks + 1,
		  sizeof(*g->blks))) {
		g->failed = true;
		return;
	}
	g->blks[g->nblks++] = (struct gblock){(uint32_t)g->nins, 0};
}

static void add_plains(struct gen *g, unsigned n)
{
	for (unsigned k = 0; k < n; k++) {
		unsigned p = (unsigned)pts_rng_below(&g->rng, 7);
		struct ginsn *i = add_insn(g, K_PLAIN, plains[p][0]);
		if (i)
			i->blk = p; /* which encoding */
	}
}

/* Function @f: blocks with plain runs and a terminator each. */
static void lay_function(struct gen *g, uint32_t f)
{
	uint32_t nf = g->nfns - 1; /* the handler is last */
	uint32_t nb = 2 + (uint32_t)pts_rng_below(&g->rng, 5);
	g->fns[f].first_blk = (uint32_t)g->nblks;
	g->fns[f].nblk = nb;
	for (uint32_t b = 0; b < nb && !g->failed; b++) {
		new_block(g);
		add_plains(g, (unsigned)pts_rng_below(&g->rng, 6));
		if (b == nb - 1) {
			add_insn(g, K_RET, 1);
			break;
		}
		bool callee = f + 1 < nf;
		unsigned r = (unsigned)pts_rng_below(&g->rng, 1000);
		struct ginsn *i;
		if (r < g->o->syscall_per_mille) {
			add_insn(g, K_SYSCALL, 2);
		} else if (r < 450) {
			i = add_insn(g, K_JCC, 6);
			if (i)
				i->blk = g->fns[f].first_blk +
					 (uint32_t)pts_rng_below(&g->rng, nb);
		} else if (r < 550) {
			i = add_insn(g, K_JMP, 5);
			if (i)
				i->blk = g->fns[f].first_blk + b + 1 +
					 (uint32_t)pts_rng_below(&g->rng, nb - b - 1);
		} else if (r < 700 && callee) {
			i = add_insn(g, K_CALL, 5);
			if (i)
				i->fn = f + 1 + (uint32_t)pts_rng_below(&g->rng, nf - f - 1);
		} else if (r < 800 && callee) {
			add_insn(g, K_CALLIND, 2);
		} else if (r < 880) {
			add_insn(g, K_JMPIND, 2);
		} else if (r < 920) {
			add_insn(g, K_CALL0, 5);
			add_insn(g, K_PLAIN, 1); /* pop rax */
			g->ins[g->nins - 1].blk = 7;
		}
		/* else: falls through to the next block */
	}
}

static int layout(struct gen *g)
{
	g->nfns = g->o->functions + 2;
	g->fns = calloc(g->nfns, sizeof(*g->fns));
	if (!g->fns)
		return -1;
	/* Driver: call *%rax to any function; jmp back. */
	g->fns[0].first_blk = 0;
	g->fns[0].nblk = 2;
	new_block(g);
	add_insn(g, K_CALLIND, 2);
	new_block(g);
	struct ginsn *j = add_insn(g, K_JMP, 5);
	if (j)
		j->blk = 0;
	for (uint32_t f = 1; f + 1 < g->nfns && !g->failed; f++)
		lay_function(g, f);
	/* Interrupt handler. */
	uint32_t h = g->nfns - 1;
	g->fns[h].first_blk = (uint32_t)g->nblks;
	g->fns[h].nblk = 1;
	new_block(g);
	add_plains(g, 3);
	add_insn(g, K_IRET, 2);
	if (g->failed)
		return -1;

	uint64_t ip = g->out->base;
	for (size_t k = 0; k < g->nins; k++) {
		g->ins[k].ip = ip;
		ip += g->ins[k].size;
	}
	size_t size = (size_t)(ip - g->out->base);
	g->out->code = malloc(size);
	g->index = malloc(size * sizeof(*g->index));
	if (!g->out->code || !g->index)
		return -1;
	g->out->code_size = size;
	for (size_t k = 0; k < size; k++)
		g->index[k] = -1;
	for (size_t k = 0; k < g->nins; k++) {
		struct ginsn *i = &g->ins[k];
		uint8_t *c = g->out->code + (i->ip - g->out->base);
		g->index[i->ip - g->out->base] = (int32_t)k;
		int32_t disp;
		switch (i->kind) {
		case K_PLAIN:
			if (i->blk == 7)
				c[0] = 0x58;
			else
				memcpy(c, &plains[i->blk][1], i->size);
			break;
		case K_JCC:
		case K_JMP:
		case K_CALL:
		case K_CALL0:
			if (i->kind == K_CALL0)
				i->target = i->ip + 5;
			else if (i->kind == K_CALL)
				i->target = g->ins[g->blks[g->fns[i->fn].first_blk].first].ip;
			else
				i->target = g->ins[g->blks[i->blk].first].ip;
			disp = (int32_t)(i->target - (i->ip + i->size));
			if (i->kind == K_JCC) {
				c[0] = 0x0f;
				c[1] = (uint8_t)(0x80 + (i->ip & 0xf));
			} else {
				c[0] = i->kind == K_JMP ? 0xe9 : 0xe8;
			}
			memcpy(c + i->size - 4, &disp, 4);
			break;
		case K_CALLIND: c[0] = 0xff; c[1] = 0xd0; break;
		case K_JMPIND: c[0] = 0xff; c[1] = 0xe0; break;
		case K_RET: c[0] = 0xc3; break;
		case K_SYSCALL: c[0] = 0x0f; c[1] = 0x05; break;
		case K_IRET: c[0] = 0x48; c[1] = 0xcf; break;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The CPU model.                                                            */

static void emit(struct gen *g, struct pts_packet *p)
{
	if (g->dropping)
		return;
	struct flow_gen *o = g->out;
	if (!grow((void **)&o->trace, &g->trace_cap, o->trace_size + 32, 1)) {
		g->failed = true;
		return;
	}
	int n = pts_pkt_encode(p, o->trace + o->trace_size, 32);
	if (n < 0) {
		g->failed = true;
		return;
	}
	o->trace_size += (size_t)n;
	g->since_psb += (size_t)n;
}

static void emit_ip(struct gen *g, int kind, uint64_t ip)
{
	if (g->dropping)
		return; /* last-IP only follows what is written */
	struct pts_packet p;
	memset(&p, 0, sizeof(p));
	pts_pkt_make_ip(&p, kind, ip, &g->lip);
	emit(g, &p);
}

static void emit_simple(struct gen *g, int kind)
{
	struct pts_packet p;
	memset(&p, 0, sizeof(p));
	p.kind = (uint8_t)kind;
	emit(g, &p);
}

static void flush_tnt(struct gen *g)
{
	if (g->tnt_count) {
		struct pts_packet p;
		memset(&p, 0, sizeof(p));
		p.kind = PTS_PKT_TNT8;
		p.u.tnt.bits = g->tnt_bits;
		p.u.tnt.count = (uint8_t)g->tnt_count;
		emit(g, &p);
		g->tnt_bits = 0;
		g->tnt_count = 0;
	}
	for (unsigned k = 0; k < g->ndeferred; k++)
		emit_ip(g, PTS_PKT_TIP, g->deferred[k]);
	g->ndeferred = 0;
}

static void tnt_add(struct gen *g, int bit)
{
	g->tnt_bits = g->tnt_bits << 1 | (uint64_t)bit;
	if (++g->tnt_count == 6)
		flush_tnt(g);
}

static void tip(struct gen *g, uint64_t target)
{
	if (g->o->deferred_tips && g->tnt_count && g->ndeferred < 16) {
		g->deferred[g->ndeferred++] = target;
		return;
	}
	flush_tnt(g);
	emit_ip(g, PTS_PKT_TIP, target);
}

static void psb(struct gen *g, uint64_t ip)
{
	flush_tnt(g);
	emit_simple(g, PTS_PKT_PSB);
	pts_lastip_reset(&g->lip);
	struct pts_packet p;
	memset(&p, 0, sizeof(p));
	p.kind = PTS_PKT_MODE_EXEC;
	p.u.exec.csl = 1;
	emit(g, &p);
	emit_ip(g, PTS_PKT_FUP, ip);
	emit_simple(g, PTS_PKT_PSBEND);
	g->since_psb = 0;
	g->hw_len = 0;
}

static uint64_t fn_entry(const struct gen *g, uint32_t f)
{
	return g->ins[g->blks[g->fns[f].first_blk].first].ip;
}

static void see(struct gen *g, uint64_t ip)
{
	struct flow_gen *o = g->out;
	o->executed++;
	if (g->dropping || !g->o->keep_truth)
		return;
	if (!grow((void **)&o->truth, &g->truth_cap, o->ntruth + 1,
		  sizeof(*o->truth))) {
		g->failed = true;
		return;
	}
	o->truth[o->ntruth++] = ip;
}

static int walk(struct gen *g)
{
	uint64_t stack[512];
	unsigned depth = 0;
	uint64_t ip = fn_entry(g, 0), saved = 0;
	bool in_handler = false;
	uint64_t drop = 0;
	/* Overflows start right after an instruction that made a packet:
	 * what runs between it and the loss is seen by no decoder. */
	bool after_packet = false;
	uint32_t handler = g->nfns - 1, nf = g->nfns - 1;
	unsigned period = g->o->psb_period ? g->o->psb_period : 4096;
	g->dropping = false;
	psb(g, ip);
	for (;;) {
		if (g->failed)
			return -1;
		/* Boundary events, before the instruction at ip runs. */
		if (drop && --drop == 0) {
			/* Bits of lost branches are lost with them. */
			g->tnt_count = 0;
			g->tnt_bits = 0;
			g->ndeferred = 0;
			g->hw_len = 0; /* no compression across an OVF */
			g->dropping = false;
			emit_simple(g, PTS_PKT_OVF);
			/* libipt 2.0.5 forgets last-IP at OVF, the SDM keeps it:
			 * a full IP reads the same either way. */
			pts_lastip_reset(&g->lip);
			emit_ip(g, PTS_PKT_FUP, ip);
			g->out->events++;
		} else if (!drop && g->since_psb >= period) {
			psb(g, ip);
		} else if (!drop && !in_handler && g->o->async_per_mille &&
			   pts_rng_below(&g->rng, 1000) < g->o->async_per_mille) {
			flush_tnt(g);
			emit_ip(g, PTS_PKT_FUP, ip);
			emit_ip(g, PTS_PKT_TIP, fn_entry(g, handler));
			in_handler = true;
			saved = ip;
			ip = fn_entry(g, handler);
			continue;
		} else if (!drop && after_packet && g->o->ovf_per_million &&
			   pts_rng_below(&g->rng, 1000000) < g->o->ovf_per_million) {
			flush_tnt(g);
			g->dropping = true;
			drop = 5 + pts_rng_below(&g->rng, 200);
			g->hw_len = 0;
		}
		int32_t k = g->index[ip - g->out->base];
		if (k < 0)
			return -1; /* the model walked off its own code */
		const struct ginsn *i = &g->ins[k];
		see(g, ip);
		uint64_t next = ip + i->size;
		bool consumed = false;
		int taken;
		switch (i->kind) {
		case K_PLAIN:
		case K_CALL0:
			ip = next;
			break;
		case K_JCC:
			taken = (int)pts_rng_below(&g->rng, 2);
			tnt_add(g, taken);
			ip = taken ? i->target : next;
			consumed = true;
			break;
		case K_JMP:
			ip = i->target;
			break;
		case K_CALL:
		case K_CALLIND:
			stack[depth++] = next;
			g->hw_top = (g->hw_top + 1) % 64;
			g->hw[g->hw_top] = next;
			if (g->hw_len < 64)
				g->hw_len++;
			if (i->kind == K_CALL) {
				ip = i->target;
				break;
			}
			/* Any function after the caller's (the driver: any). */
			uint32_t lo = 1;
			for (uint32_t f = 1; f < nf; f++)
				if (fn_entry(g, f) <= ip)
					lo = f + 1;
			if (lo >= nf)
				lo = nf - 1;
			ip = fn_entry(g, lo + (uint32_t)pts_rng_below(&g->rng, nf - lo));
			tip(g, ip);
			consumed = true;
			break;
		case K_JMPIND: {
			/* A later block of the same function. */
			uint32_t b = 0;
			while (!(g->blks[b].first <= (uint32_t)k &&
				 (uint32_t)k < g->blks[b].first + g->blks[b].count))
				b++;
			uint32_t f = 1;
			while (!(g->fns[f].first_blk <= b &&
				 b < g->fns[f].first_blk + g->fns[f].nblk))
				f++;
			uint32_t last = g->fns[f].first_blk + g->fns[f].nblk - 1;
			uint32_t t = b + 1 + (uint32_t)pts_rng_below(&g->rng, last - b);
			ip = g->ins[g->blks[t].first].ip;
			tip(g, ip);
			consumed = true;
			break;
		}
		case K_RET:
			ip = stack[--depth];
			if (g->o->retcomp && g->hw_len && g->hw[g->hw_top] == ip) {
				g->hw_top = (g->hw_top + 63) % 64;
				g->hw_len--;
				tnt_add(g, 1);
			} else {
				/* Never deferred: a decoder tells a compressed
				 * RET from pending TNT bits (SDM 36.4.2.2). */
				flush_tnt(g);
				emit_ip(g, PTS_PKT_TIP, ip);
			}
			consumed = true;
			break;
		case K_SYSCALL:
			ip = next;
			if (drop)
				break;
			flush_tnt(g);
			emit_simple(g, PTS_PKT_TIP_PGD);
			emit_ip(g, PTS_PKT_TIP_PGE, ip);
			g->out->events += 2;
			consumed = true;
			break;
		case K_IRET:
			ip = saved;
			in_handler = false;
			tip(g, ip);
			consumed = true;
			break;
		}
		after_packet = consumed;
		if (consumed && !drop && g->out->executed >= g->o->insns) {
			flush_tnt(g);
			return 0;
		}
	}
}

int flow_gen_run(const struct flow_gen_opts *opts, struct flow_gen *out)
{
	struct gen g;
	memset(&g, 0, sizeof(g));
	memset(out, 0, sizeof(*out));
	g.o = opts;
	g.out = out;
	out->base = 0x400000;
	pts_rng_seed(&g.rng, opts->seed);
	pts_lastip_reset(&g.lip);
	int err = layout(&g);
	if (!err)
		err = walk(&g);
	free(g.ins);
	free(g.blks);
	free(g.fns);
	free(g.index);
	if (err || g.failed) {
		flow_gen_free(out);
		return -1;
	}
	return 0;
}

void flow_gen_free(struct flow_gen *g)
{
	free(g->code);
	free(g->trace);
	free(g->truth);
	memset(g, 0, sizeof(*g));
}

const char *flow_gen_case(unsigned c, struct flow_gen_opts *o)
{
	static const struct {
		const char *name;
		int retcomp, deferred;
		unsigned async, syscall, ovf;
	} cases[FLOW_GEN_CASES] = {
		{"plain", 0, 0, 0, 0, 0},
		{"retcomp", 1, 0, 0, 0, 0},
		{"deferred", 1, 1, 0, 0, 0},
		{"async", 1, 0, 5, 0, 0},
		{"syscall", 1, 0, 0, 30, 0},
		{"overflow", 1, 0, 0, 0, 200},
		{"all", 1, 1, 3, 20, 100},
		{"all-noretcomp", 0, 1, 3, 20, 100},
	};
	o->retcomp = cases[c].retcomp;
	o->deferred_tips = cases[c].deferred;
	o->async_per_mille = cases[c].async;
	o->syscall_per_mille = cases[c].syscall;
	o->ovf_per_million = cases[c].ovf;
	return cases[c].name;
}
