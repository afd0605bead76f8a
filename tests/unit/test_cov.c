/* Coverage (decoder/coverage.c, issue #7) against the ground truth of
 * synthesized walks: the edges `ptscope cov --edges` reports must be
 * exactly the edges the executed steps imply, in order; the bitmap must be
 * the one built from those edges; --unique counts must be theirs; a
 * software filter must keep exactly the edges from inside its range; a
 * second decode through the same sink must give the same edges without
 * classifying anything again.
 *
 * The truth -> edges conversion (expected_edges) is written from the step
 * records alone, following the rules in ptscope/coverage.h:
 *   - a visible branch (SYN_COND taken or not, JUMP, CALL, IJUMP, ICALL,
 *     RET, FAR) goes to the next visible instruction, or to the address of
 *     an interrupt/enclave transition (FUP) that comes first;
 *   - tracing starts at a visible instruction after a gap: OFF -> it
 *     (an ENCLU too: an AEX resumes tracing at the AEP, whose ERESUME
 *     stops it again before any instruction);
 *   - tracing stops at a hidden instruction or a software restart: X ->
 *     OFF, X the last visible instruction, or the FUP address when an
 *     interrupt/ENCLU/restart stopped it;
 *   - the synthesizer ends the trace with FUP(next) TIP.PGD(): the pending
 *     branch goes to next, then next -> OFF (OFF -> next first when
 *     tracing was off before: an empty window at next).
 * ENCLU is reported by the trace as FUP + TIP/TIP.PGD (an event), never as
 * a branch instruction.
 *
 * usage: test_cov [INSNS [SEED]]   (default 200000, 1)
 * COV_DEBUG=SCENARIO prints that scenario's steps (kind, verdict) to stderr.
 */
#include "check.h"
#include "synth_run.h"

#include <ptscope/coverage.h>

#include <stdlib.h>
#include <string.h>

#define OFF PTS_COV_OFF

struct edges {
	struct pts_cov_edge *v;
	size_t n, cap;
};

static void push(struct edges *e, uint64_t src, uint64_t dst)
{
	if (e->n == e->cap) {
		e->cap = e->cap ? e->cap * 2 : 4096;
		e->v = realloc(e->v, e->cap * sizeof(*e->v));
		if (!e->v)
			abort();
	}
	e->v[e->n++] = (struct pts_cov_edge){src, dst};
}

static void collect(void *ctx, const struct pts_cov_edge *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		push(ctx, v[i].src, v[i].dst);
}

/* The truth, step by step (instructions and events). */
struct steps {
	struct syn_step *v;
	uint8_t *hidden;
	size_t n, cap;
};

static void on_step(void *ctx, const struct syn_step *s, int hidden)
{
	struct steps *t = ctx;
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 1 << 16;
		t->v = realloc(t->v, t->cap * sizeof(*t->v));
		t->hidden = realloc(t->hidden, t->cap);
		if (!t->v || !t->hidden)
			abort();
	}
	t->v[t->n] = *s;
	t->hidden[t->n++] = (uint8_t)hidden;
}

static int branch_kind(int kind)
{
	return kind >= SYN_COND && kind <= SYN_FAR;
}

/* Whether code at @w is traced (no filter ranges here): ring 0 with
 * OS=0 and production enclaves are not. */
static int traced(const struct syn_options *o, const struct pts_config *cfg,
		  struct syn_where w)
{
	if (o->user_only && w.cpl == 0)
		return 0;
	return w.encl < 0 ||
	       cfg->enclaves[w.encl].kind != PTS_ENCLAVE_PRODUCTION;
}

/* Whether tracing is on at @ip (code at @w): traced code, inside the
 * filter ranges when there are any. */
static int ip_traced(const struct syn_options *o, const struct pts_config *cfg,
		     struct syn_where w, uint64_t ip)
{
	int filtered = 0;
	if (!traced(o, cfg, w))
		return 0;
	for (unsigned n = 0; n < o->n_addr; n++) {
		if (o->addr_cfg[n] != PTS_ADDR_FILTER)
			continue;
		if (ip >= o->addr_a[n] && ip <= o->addr_b[n])
			return 1;
		filtered = 1;
	}
	return !filtered;
}

/* The edges the steps imply (rules above). */
static void expected_edges(const struct steps *t, const struct syn_options *o,
			   const struct pts_config *cfg, struct edges *out)
{
	int on = 0, pend = 0;
	uint64_t last = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct syn_step *s = &t->v[i];
		const int insn = syn_is_insn(s) && s->kind != SYN_ENCLU;
		if (syn_is_insn(s) && t->hidden[i]) {
			if (on)
				push(out, last, OFF);
			on = pend = 0;
			continue;
		}
		/* an event an overflow lost is not in the trace */
		if (!syn_is_insn(s) && t->hidden[i])
			continue;
		if (!on &&
		    (syn_is_insn(s) || ip_traced(o, cfg, s->at, s->ip))) {
			/* tracing starts here, even where an ENCLU or an
			 * event stops it again (an AEX to the AEP, then
			 * ERESUME; SYSRET, then a restart) */
			push(out, OFF, s->ip);
			on = 1;
			pend = 0;
			last = s->ip;
		}
		if (insn) {
			if (pend)
				push(out, last, s->ip);
			pend = branch_kind(s->kind);
			last = s->ip;
			continue;
		}
		if (!on)
			continue;
		/* An event where execution stood at s->ip. */
		if (pend)
			push(out, last, s->ip);
		pend = 0;
		last = s->ip;
		if (s->kind == SYN_RESTART || !traced(o, cfg, s->to)) {
			push(out, last, OFF);
			on = 0;
		}
	}
	if (t->n) {
		const struct syn_step *end = &t->v[t->n - 1];
		const uint64_t cur = end->next;
		const int at_cur = ip_traced(o, cfg, end->to, cur);
		if (on && !at_cur) {
			push(out, last, OFF); /* the last branch left */
		} else if (at_cur) {
			/* tracing back on at the last step's destination (a
			 * return from the enclave, an overflow resolved
			 * there) when it was off */
			if (!on)
				push(out, OFF, cur);
			else if (pend)
				push(out, last, cur);
			push(out, cur, OFF);
		}
	}
}

/* Decodes @trace through @cov (edges collected into @got). */
/* Decodes @trace with @flow (reset first: one walker serves every decode,
 * as a fuzzer's would) into @cov. */
static int decode(struct pts_cov *cov, struct pts_flow *flow,
		  const struct syn_sink *trace, struct edges *got)
{
	static struct pts_flow_rec recs[512];
	CHECK_EQ(pts_flow_reset(flow), 0);
	struct pts_input in = {trace->mem, trace->mem_len, 0};
	pts_cov_set_sink(cov, collect, got);
	pts_flow_end(flow);
	int n, errors = 0;
	while ((n = pts_flow_next(flow, &in, recs, 512)) > 0) {
		for (int i = 0; i < n; i++)
			errors += recs[i].kind == PTS_FLOW_ERROR;
		CHECK_EQ(pts_cov_feed(cov, recs, n), 0);
	}
	pts_cov_end(cov);
	CHECK_EQ(n, -PTS_ERR_EOS);
	return errors;
}

/* Equal lists; the first difference is shown with some context. */
static void compare(const char *name, const struct edges *got,
		    const struct edges *want)
{
	size_t n = got->n < want->n ? got->n : want->n, i = 0;
	while (i < n && got->v[i].src == want->v[i].src &&
	       got->v[i].dst == want->v[i].dst)
		i++;
	if (i == got->n && i == want->n)
		return;
	pts_check_failures++;
	fprintf(stderr, "%s: edges differ at #%zu (got %zu, want %zu)\n",
		name, i, got->n, want->n);
	for (size_t k = i > 3 ? i - 3 : 0; k < i + 4; k++)
		fprintf(stderr, "  #%zu got %llx->%llx want %llx->%llx\n", k,
			k < got->n ? (unsigned long long)got->v[k].src : 0ull,
			k < got->n ? (unsigned long long)got->v[k].dst : 0ull,
			k < want->n ? (unsigned long long)want->v[k].src : 0ull,
			k < want->n ? (unsigned long long)want->v[k].dst : 0ull);
}

/* Start and stop edges alternate, starting with a start (libxdc's
 * layout), and the last one is a stop. */
static void check_layout(const char *name, const struct edges *e)
{
	int on = 0, bad = 0;
	for (size_t i = 0; i < e->n; i++) {
		if (e->v[i].src == OFF)
			bad |= on || e->v[i].dst == OFF;
		if (e->v[i].src == OFF)
			on = 1;
		else if (e->v[i].dst == OFF)
			bad |= !on, on = 0;
		else
			bad |= !on;
	}
	if (bad || on)
		FAIL("%s: start/stop edges out of order", name);
}

static void check_bitmap(struct pts_cov *cov, const struct edges *want)
{
	size_t size;
	const uint8_t *got = pts_cov_bitmap(cov, &size);
	uint8_t *exp = calloc(size, 1);
	for (size_t i = 0; i < want->n; i++) {
		uint8_t *b = &exp[pts_cov_edge_hash(want->v[i].src,
						    want->v[i].dst) &
				  (size - 1)];
		if (*b < 255)
			(*b)++;
	}
	CHECK(got && memcmp(got, exp, size) == 0);
	free(exp);
}

/* Distinct edges in order of first appearance, with counts. */
static void check_unique(struct pts_cov *cov, const struct edges *want)
{
	const struct pts_cov_count *u;
	size_t nu = pts_cov_unique(cov, &u), k = 0;
	uint64_t total = 0;
	for (size_t i = 0; i < nu; i++)
		total += u[i].count;
	CHECK_EQ(total, want->n);
	/* Walk the list: each edge is either the next new one or seen. */
	for (size_t i = 0; i < want->n && k <= nu; i++) {
		size_t j = 0;
		while (j < k && (u[j].src != want->v[i].src ||
				 u[j].dst != want->v[i].dst))
			j++;
		if (j == k) {
			CHECK(k < nu && u[k].src == want->v[i].src &&
			      u[k].dst == want->v[i].dst);
			k++;
		}
		if (i > 20000)
			break; /* quadratic: the head is enough */
	}
}

struct scenario {
	const char *name;
	void (*setup)(struct syn_options *o);
	int enclave; /* enum pts_enclave_kind + 1, 0: none */
};

static void retcomp(struct syn_options *o) { o->retcomp = 1; }
static void no_retcomp(struct syn_options *o) { o->retcomp = 0; }
static void timing_on(struct syn_options *o)
{
	o->tsc = o->mtc = o->cyc = 1;
	o->cyc_thresh = 1;
	o->freq_rate = 30;
	o->psb_period = 1024;
}
static void hw_filter(struct syn_options *o)
{
	/* enclave_demo: from enclave_call to the SYSCALL's function. */
	o->n_addr = 1;
	o->addr_cfg[0] = PTS_ADDR_FILTER;
	o->addr_a[0] = 0x400140;
	o->addr_b[0] = 0x40022f;
	o->tsc = 1;
}
static void interrupts(struct syn_options *o)
{
	o->async_rate = 400;
	o->user_only = 1;
}
static void interrupts_os(struct syn_options *o)
{
	o->async_rate = 400;
	o->long_tnt = 1;
}
static void overflows(struct syn_options *o)
{
	o->ovf_rate = 80;
	o->user_only = 1;
}
static void enclave(struct syn_options *o)
{
	o->aex_rate = 2000;
	o->async_rate = 200;
	o->user_only = 1;
}

static const struct scenario scenarios[] = {
	{"retcomp", retcomp, 0},
	{"no-retcomp", no_retcomp, 0},
	{"timing", timing_on, 0},
	{"hw-filter", hw_filter, 0},
	{"interrupts user-only", interrupts, 0},
	{"interrupts OS=1", interrupts_os, 0},
	{"overflow", overflows, 0},
	{"production enclave", enclave, 1 + PTS_ENCLAVE_PRODUCTION},
	{"debug enclave", enclave, 1 + PTS_ENCLAVE_DEBUG},
};

static void add_enclave(struct pts_config *cfg, int kind)
{
	struct pts_enclave e;
	memset(&e, 0, sizeof(e));
	e.begin = 0x500000; /* enclave_text, fixtures/FORMATS.md */
	e.end = 0x501000;
	e.kind = (uint8_t)kind;
	e.aep = 0x400138;
	e.has_aep = 1;
	if (pts_config_add_enclave(cfg, &e, 0x500000) < 0)
		abort();
}

/* The software filter: edges from inside [a, b], starts into it. */
static void filter_edges(const struct edges *all, uint64_t a, uint64_t b,
			 struct edges *out)
{
	for (size_t i = 0; i < all->n; i++) {
		uint64_t at = all->v[i].src != OFF ? all->v[i].src
						   : all->v[i].dst;
		if (at >= a && at <= b)
			push(out, all->v[i].src, all->v[i].dst);
	}
}

static void run(const struct scenario *sc, const char *elf, uint64_t insns,
		uint64_t seed)
{
	struct pts_image *img = pts_image_new();
	struct syn_options o;
	struct pts_config cfg;
	struct syn_sink *sink = calloc(1, sizeof(*sink));
	struct steps t = {0};
	struct edges want = {0}, got = {0}, again = {0}, fwant = {0},
		     fgot = {0};
	pts_config_init(&cfg);
	syn_options_default(&o);
	o.seed = seed;
	o.insns = insns;
	sc->setup(&o);
	if (sc->enclave)
		add_enclave(&cfg, sc->enclave - 1);
	if (!img || !sink || pts_image_add_elf(img, 0, elf, 0) < 0)
		abort();
	syn_sink_init(sink, NULL);
	CHECK_EQ(syn_walk_to_memory(&o, &cfg, img, 0, sink, on_step, &t,
				    NULL),
		 0);
	expected_edges(&t, &o, &cfg, &want);
	if (getenv("COV_DEBUG") && !strcmp(getenv("COV_DEBUG"), sc->name))
		for (size_t i = 0; i < t.n; i++)
			fprintf(stderr, "step %zu: %llx -> %llx kind %u hidden %u\n", i,
				(unsigned long long)t.v[i].ip,
				(unsigned long long)t.v[i].next, t.v[i].kind,
				t.hidden[i]);

	struct pts_cov_config cc = {0};
	cc.flags = PTS_COV_BITMAP | PTS_COV_EDGES | PTS_COV_UNIQUE;
	cc.bitmap_size = 1u << 12; /* small: collisions count too */
	struct pts_cov *cov = NULL;
	CHECK_EQ(pts_cov_new(&cc, img, &cov), 0);
	struct pts_flow *flow = pts_flow_new(NULL, img);
	if (!flow)
		abort();
	CHECK_EQ(decode(cov, flow, sink, &got), 0);
	compare(sc->name, &got, &want);
	check_layout(sc->name, &got);
	check_bitmap(cov, &want);
	check_unique(cov, &want);

	/* Again through the same walker (reset) and sink: the fuzzing
	 * pattern. The same edges; no block is built again, and every run
	 * is found in the sink's cache by its id. */
	struct pts_cov_stats s1, s2;
	struct pts_flow_stats f1, f2;
	pts_cov_get_stats(cov, &s1);
	pts_flow_get_stats(flow, &f1);
	pts_cov_clear(cov);
	CHECK_EQ(decode(cov, flow, sink, &again), 0);
	pts_cov_get_stats(cov, &s2);
	pts_flow_get_stats(flow, &f2);
	compare(sc->name, &again, &want);
	check_bitmap(cov, &want);
	CHECK_EQ(f2.blocks_built, f1.blocks_built);
	CHECK_EQ(s2.runs_built, s1.runs_built);
	CHECK_EQ(s2.runs, 2 * s1.runs);
	CHECK_EQ(f2.insns, f1.insns);
	pts_cov_free(cov);

	/* A software filter over the function that makes the SYSCALL. */
	cc.flags = PTS_COV_EDGES;
	cc.n_ranges = 1;
	cc.begin[0] = 0x4001c0;
	cc.end[0] = 0x40022f;
	CHECK_EQ(pts_cov_new(&cc, img, &cov), 0);
	CHECK_EQ(decode(cov, flow, sink, &fgot), 0);
	filter_edges(&want, cc.begin[0], cc.end[0], &fwant);
	compare(sc->name, &fgot, &fwant);
	pts_cov_free(cov);
	pts_flow_free(flow);

	uint64_t starts = 0;
	for (size_t i = 0; i < want.n; i++)
		starts += want.v[i].src == OFF;
	printf("%-22s %8zu steps %8zu bytes %8zu edges (%llu starts, %zu "
	       "filtered) %s\n",
	       sc->name, t.n, sink->mem_len, want.n,
	       (unsigned long long)starts, fwant.n,
	       pts_check_failures ? "FAIL so far" : "ok");
	CHECK(want.n > insns / 20);
	free(t.v);
	free(t.hidden);
	free(want.v);
	free(got.v);
	free(again.v);
	free(fwant.v);
	free(fgot.v);
	free(sink->mem);
	free(sink);
	pts_config_fini(&cfg);
	pts_image_free(img);
}

/* Options and the hash the CLI and fuzzers rely on. */
static void check_api(void)
{
	struct pts_image *img = pts_image_new();
	struct pts_cov *cov = NULL;
	struct pts_cov_config cc = {0};
	cc.bitmap_size = 1000;
	CHECK_EQ(pts_cov_new(&cc, img, &cov), -PTS_ERR_INVALID);
	cc.bitmap_size = 0;
	cc.n_ranges = 1;
	cc.begin[0] = 2;
	cc.end[0] = 1;
	CHECK_EQ(pts_cov_new(&cc, img, &cov), -PTS_ERR_INVALID);
	CHECK_EQ(pts_cov_new(NULL, img, &cov), 0);
	size_t size;
	CHECK(pts_cov_bitmap(cov, &size) != NULL);
	CHECK_EQ(size, PTS_COV_DEFAULT_SIZE);
	CHECK(pts_cov_edge_hash(1, 2) != pts_cov_edge_hash(2, 1));
	CHECK_EQ(pts_cov_feed(cov, NULL, 0), 0);
	pts_cov_end(cov);
	pts_cov_free(cov);
	pts_cov_free(NULL);
	pts_image_free(img);
}

int main(int argc, char **argv)
{
	uint64_t insns = argc > 1 ? strtoull(argv[1], NULL, 0) : 200000;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
	const char *root = getenv("PTS_SOURCE_ROOT");
	char elf[4096];
	snprintf(elf, sizeof(elf), "%s/fixtures/bin/enclave_demo",
		 root ? root : ".");
	check_api();
	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		run(&scenarios[i], elf, insns, seed + i);
	return pts_check_exit();
}
