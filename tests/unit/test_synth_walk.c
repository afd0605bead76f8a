/* The walk's rules for code that does not come back (tools/synth/walk.c,
 * head comment), on walks whose steps are watched one by one:
 *
 *   - progs/walk_traps.c (built with the tests, without a C library):
 *     each trap in a function of its own. Per visit of a function, counted from
 *     its entry: exit_group's loop runs its SYSCALL a few times at most,
 *     the `pause; jmp` spin a few rounds, the loop with three back edges
 *     at most 64 rounds, the self-calling loop at most 8 frames deep, the
 *     retry loop around a SYSCALL rarely goes round; the function named
 *     abort never runs. Each is visited often (the walk leaves it and
 *     comes back), so one stuck visit cannot hide.
 *   - libc (skipped when absent): a walk like the benchmarks' spends no
 *     more than a small share of its instructions at any one address, and
 *     its far transfers (SYSCALL, SYSRET: one TIP each) stay a minority of
 *     its packets. Before these rules, seed 1 on Debian 12's glibc 2.36
 *     spent all but its first 100k instructions in `for (;;)
 *     exit_group()`: 98% of the packets were far TIPs, 15% of the
 *     instructions at one address.
 *
 * usage: test_synth_walk WALK_TRAPS_ELF [LIBC]
 */
#include "check.h"
#include "synth_run.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_LIBC "/lib/x86_64-linux-gnu/libc.so.6"

struct fn {
	uint64_t addr, end;
};

static int in_fn(const struct fn *f, uint64_t ip)
{
	return f->addr <= ip && ip < f->end;
}

static struct fn find_fn(const struct pts_image *img, const char *name)
{
	const struct pts_symbol *sym = pts_image_symbol_find(img, 0, name);
	struct fn f = {0, 0};
	if (!sym || !sym->size) {
		FAIL("walk_traps: no symbol %s with a size", name);
		return f;
	}
	f.addr = sym->addr;
	f.end = sym->addr + sym->size;
	return f;
}

/* ------------------------------------------------------------------------ */
/* walk_traps                                                               */

struct traps {
	struct fn leave, hang, abrt, checked, retry, scan, tree;
	/* visits (entries), and the worst visit */
	uint64_t leave_visits, leave_sys, leave_sys_max;
	uint64_t hang_visits, hang_run, hang_run_max;
	uint64_t checked_visits, abort_steps;
	uint64_t retry_visits, retry_sys;
	uint64_t scan_visits, scan_rounds, scan_rounds_max;
	uint64_t tree_depth, tree_depth_max;
};

static void max_into(uint64_t *max, uint64_t v)
{
	if (v > *max)
		*max = v;
}

static void on_trap_step(void *ctx, const struct syn_step *s, int hidden)
{
	struct traps *t = ctx;
	(void)hidden;
	if (s->kind == SYN_RESTART) { /* a new path: the next visit */
		t->tree_depth = 0;
		t->hang_run = 0;
		return;
	}
	if (!syn_is_insn(s))
		return;
	if (s->ip == t->leave.addr) {
		t->leave_visits++;
		t->leave_sys = 0;
	}
	if (in_fn(&t->leave, s->ip) && s->kind == SYN_FAR)
		max_into(&t->leave_sys_max, ++t->leave_sys);

	if (in_fn(&t->hang, s->ip)) {
		if (s->ip == t->hang.addr && !t->hang_run)
			t->hang_visits++;
		max_into(&t->hang_run_max, ++t->hang_run);
	} else {
		t->hang_run = 0;
	}

	if (s->ip == t->checked.addr)
		t->checked_visits++;
	if (in_fn(&t->abrt, s->ip))
		t->abort_steps++;

	if (s->ip == t->retry.addr)
		t->retry_visits++;
	if (in_fn(&t->retry, s->ip) && s->kind == SYN_FAR)
		t->retry_sys++;

	if (s->ip == t->scan.addr) {
		t->scan_visits++;
		t->scan_rounds = 0;
	}
	/* Every back edge of scan goes to its loop head. */
	if (in_fn(&t->scan, s->ip) && s->kind == SYN_COND &&
	    (s->flags & SYN_F_TAKEN) && s->next < s->ip)
		max_into(&t->scan_rounds_max, ++t->scan_rounds);

	if ((s->kind == SYN_CALL || s->kind == SYN_ICALL) &&
	    s->next == t->tree.addr)
		max_into(&t->tree_depth_max, ++t->tree_depth);
	if (s->kind == SYN_RET && in_fn(&t->tree, s->ip) && t->tree_depth)
		t->tree_depth--;
}

static void walk_traps(const char *elf, uint64_t seed)
{
	struct pts_image *img = pts_image_new();
	struct syn_sink *sink = calloc(1, sizeof(*sink));
	struct syn_options o;
	struct pts_config cfg;
	struct traps t;
	if (!img || !sink)
		abort();
	if (pts_image_add_elf(img, 0, elf, 0) < 0) {
		FAIL("%s: cannot load", elf);
		goto out;
	}
	memset(&t, 0, sizeof(t));
	t.leave = find_fn(img, "leave_process");
	t.hang = find_fn(img, "hang");
	t.abrt = find_fn(img, "abort");
	t.checked = find_fn(img, "checked");
	t.retry = find_fn(img, "retry_read");
	t.scan = find_fn(img, "scan");
	t.tree = find_fn(img, "tree_sum");
	pts_config_init(&cfg);
	syn_options_default(&o);
	o.seed = seed;
	o.insns = 300000;
	syn_sink_init(sink, NULL);
	CHECK_EQ(syn_walk_to_memory(&o, &cfg, img, 0, sink, on_trap_step, &t,
				    NULL),
		 0);
	printf("walk_traps seed %" PRIu64 ": exit loop %" PRIu64
	       " visits (max %" PRIu64 " SYSCALLs), spin %" PRIu64
	       " (max %" PRIu64 " steps), scan %" PRIu64 " (max %" PRIu64
	       " rounds), retry %" PRIu64 " (%" PRIu64
	       " SYSCALLs), recursion max %" PRIu64 ", checked %" PRIu64
	       ", abort steps %" PRIu64 "\n",
	       seed, t.leave_visits, t.leave_sys_max, t.hang_visits,
	       t.hang_run_max, t.scan_visits, t.scan_rounds_max,
	       t.retry_visits, t.retry_sys, t.tree_depth_max, t.checked_visits,
	       t.abort_steps);
	/* Visited often: the walk got out every time. */
	CHECK(t.leave_visits >= 20);
	CHECK(t.hang_visits >= 20);
	CHECK(t.scan_visits >= 20);
	CHECK(t.retry_visits >= 20);
	CHECK(t.checked_visits >= 20);
	/* Brent's check finds a loop of n steps within about 2n + the steps
	 * into it: a few rounds. */
	CHECKF(t.leave_sys_max <= 8, "exit_group loop: %" PRIu64 " SYSCALLs",
	       t.leave_sys_max);
	CHECKF(t.hang_run_max <= 16, "spin: %" PRIu64 " steps", t.hang_run_max);
	CHECKF(t.scan_rounds_max <= 64, "scan: %" PRIu64 " rounds",
	       t.scan_rounds_max);
	/* One frame from the caller, 8 recursive ones. */
	CHECKF(t.tree_depth_max <= 9, "recursion: %" PRIu64 " deep",
	       t.tree_depth_max);
	CHECK_EQ(t.abort_steps, 0);
	/* 1 round in 8 goes again: about 1.14 SYSCALLs a visit (7 in 8
	 * would be 8). */
	CHECKF(t.retry_sys * 2 < t.retry_visits * 3,
	       "retry loop: %" PRIu64 " SYSCALLs in %" PRIu64 " visits",
	       t.retry_sys, t.retry_visits);
	pts_config_fini(&cfg);
out:
	free(sink->mem);
	free(sink);
	pts_image_free(img);
}

/* ------------------------------------------------------------------------ */
/* libc                                                                     */

/* Instructions per address, in an open-addressing table. */
struct ipcount {
	uint64_t *ip, *n;
	size_t bits, used;
	uint64_t insns, far;
};

/* The slot of @ip (its key is ip + 1: address 0 is a valid IP in a
 * shared object's image), claimed when new. The table must have room. */
static size_t ipcount_slot(struct ipcount *c, uint64_t ip)
{
	size_t mask = ((size_t)1 << c->bits) - 1;
	size_t k = (size_t)(((ip + 1) * 0x9e3779b97f4a7c15ull) >> (64 - c->bits));
	while (c->ip[k] && c->ip[k] != ip + 1)
		k = (k + 1) & mask;
	if (!c->ip[k]) {
		c->ip[k] = ip + 1;
		c->used++;
	}
	return k;
}

static void ipcount_init(struct ipcount *c, size_t bits)
{
	c->bits = bits;
	c->used = 0;
	c->ip = calloc((size_t)1 << bits, sizeof(*c->ip));
	c->n = calloc((size_t)1 << bits, sizeof(*c->n));
	if (!c->ip || !c->n)
		abort();
}

static void ipcount_add(struct ipcount *c, uint64_t ip)
{
	if ((c->used + 1) * 2 > (size_t)1 << c->bits) {
		struct ipcount g = *c;
		ipcount_init(c, g.bits + 1);
		for (size_t i = 0; i < (size_t)1 << g.bits; i++)
			if (g.ip[i])
				c->n[ipcount_slot(c, g.ip[i] - 1)] = g.n[i];
		free(g.ip);
		free(g.n);
	}
	c->n[ipcount_slot(c, ip)]++;
}

static void on_libc_step(void *ctx, const struct syn_step *s, int hidden)
{
	struct ipcount *c = ctx;
	(void)hidden;
	if (!syn_is_insn(s))
		return;
	c->insns++;
	if (s->kind == SYN_FAR)
		c->far++;
	ipcount_add(c, s->ip);
}

static void walk_libc(const char *libc, uint64_t seed)
{
	struct pts_image *img = pts_image_new();
	struct syn_sink *sink = calloc(1, sizeof(*sink));
	struct ipcount c = {0};
	struct syn_emit_stats st;
	struct syn_options o;
	struct pts_config cfg;
	if (!img || !sink)
		abort();
	if (pts_image_add_elf(img, 0, libc, 0) < 0) {
		FAIL("%s: cannot load", libc);
		goto out;
	}
	ipcount_init(&c, 12);
	pts_config_init(&cfg);
	syn_options_default(&o);
	o.seed = seed;
	o.insns = 1000000;
	syn_sink_init(sink, NULL);
	memset(&st, 0, sizeof(st));
	CHECK_EQ(syn_walk_to_memory(&o, &cfg, img, 0, sink, on_libc_step, &c,
				    &st),
		 0);
	uint64_t hottest = 0;
	for (size_t i = 0; i < (size_t)1 << c.bits; i++)
		max_into(&hottest, c.n[i]);
	printf("libc seed %" PRIu64 ": %" PRIu64 " instructions at %zu "
	       "addresses, hottest %.2f%%; %" PRIu64 " packets, %" PRIu64
	       " TIPs, %" PRIu64 " far (%.1f%% of the packets)\n",
	       seed, c.insns, c.used, 100.0 * (double)hottest / (double)c.insns,
	       st.flow_packets, st.tips, c.far,
	       100.0 * (double)c.far / (double)st.flow_packets);
	CHECK_EQ(c.insns, o.insns);
	/* A trap shows as one address taking a large share: an exit loop
	 * a quarter of the instructions, libc's argp scan a sixth. */
	CHECKF(hottest * 100 < c.insns * 2,
	       "libc seed %" PRIu64 ": %" PRIu64 " of %" PRIu64
	       " instructions at one address",
	       seed, hottest, c.insns);
	CHECKF(c.far * 3 < st.flow_packets,
	       "libc seed %" PRIu64 ": %" PRIu64 " far transfers in %" PRIu64
	       " packets",
	       seed, c.far, st.flow_packets);
	pts_config_fini(&cfg);
out:
	free(c.ip);
	free(c.n);
	free(sink->mem);
	free(sink);
	pts_image_free(img);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s WALK_TRAPS_ELF [LIBC]\n", argv[0]);
		return 2;
	}
	for (uint64_t seed = 1; seed <= 3; seed++)
		walk_traps(argv[1], seed);
	const char *libc = argc > 2 ? argv[2] : DEFAULT_LIBC;
	FILE *f = fopen(libc, "rb");
	if (f) {
		fclose(f);
		for (uint64_t seed = 1; seed <= 3; seed++)
			walk_libc(libc, seed);
	} else {
		printf("%s: not here, libc walks skipped\n", libc);
	}
	return pts_check_exit();
}
