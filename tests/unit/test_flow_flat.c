/* pts_flow_next_ips() (every address into one flat caller array) against
 * pts_flow_next() on synthesized walks:
 *   - the same records in the same order, every field but ips alike (run
 *     ids too while the block cache is kept; sizes by content), and the
 *     same addresses;
 *   - each call: the INSNS records' ips one after another from the start
 *     of the array, *nips their sum, nothing written past @cap, at most
 *     @max records;
 *   - with many records per call, with few (records wait inside and are
 *     copied when handed out later), with cap == PTS_FLOW_IPS_MIN, with a
 *     block cache so small that it is flushed again and again, in random
 *     chunks of input;
 *   - every distance between the end of the walk and the end of the
 *     array (a sweep of @cap), on blocks of the most instructions too;
 *   - walks over enclave_demo with interrupts, overflows and timing
 *     (events between the runs), the same trace damaged (errors and
 *     resyncs), and over libc when present (long blocks, many segments);
 *   - invalid arguments.
 *
 * usage: test_flow_flat [INSNS [SEED]]   (default 100000, 1)
 */
#include "check.h"
#include "hand_trace.h"
#include "rng.h"
#include "synth_run.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Canaries behind the caller's array: nothing may be written there. */
#define GUARD 64
#define CANARY UINT64_C(0xdeadbeefcafef00d)

/* All records of one decode, with copies of what they point to. */
struct decoded {
	struct pts_flow_rec *recs;
	size_t nrecs, cap_recs;
	uint64_t *ips;   /* the INSNS records' addresses, in order */
	uint8_t *sizes;  /* and sizes */
	size_t nips, cap_ips;
	uint64_t errors, events;
};

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	*cap = need * 2 + 1024;
	p = realloc(p, *cap * elem);
	if (!p)
		abort();
	return p;
}

static void keep(struct decoded *d, const struct pts_flow_rec *r)
{
	d->recs = grow(d->recs, &d->cap_recs, d->nrecs + 1, sizeof(*r));
	d->recs[d->nrecs++] = *r;
	d->errors += r->kind == PTS_FLOW_ERROR;
	d->events += r->kind == PTS_FLOW_EVENT;
	if (r->kind != PTS_FLOW_INSNS)
		return;
	size_t cap = d->cap_ips;
	d->ips = grow(d->ips, &d->cap_ips, d->nips + r->n, sizeof(uint64_t));
	d->sizes = grow(d->sizes, &cap, d->nips + r->n, 1);
	memcpy(d->ips + d->nips, r->ips, r->n * sizeof(uint64_t));
	memcpy(d->sizes + d->nips, r->sizes, r->n);
	d->nips += r->n;
}

static void decoded_free(struct decoded *d)
{
	free(d->recs);
	free(d->ips);
	free(d->sizes);
	memset(d, 0, sizeof(*d));
}

/* How to decode. */
struct way {
	const char *name;
	bool flat;          /* pts_flow_next_ips(), else pts_flow_next() */
	int max;            /* records per call */
	size_t cap;         /* addresses per call (flat) */
	size_t cache_bytes; /* 0: the default (never flushed here) */
	bool chunks;        /* random chunks of input, else all at once */
};

/* One call's records: well formed as pts_flow_next_ips() promises. */
static void check_call(const char *what, const struct pts_flow_rec *recs,
		       int n, const uint64_t *ips, size_t cap, size_t nips)
{
	const uint64_t *next = ips;
	for (int i = 0; i < n; i++) {
		if (recs[i].kind != PTS_FLOW_INSNS)
			continue;
		CHECKF(recs[i].ips == next,
		       "%s: record %d's ips at +%td, want +%td", what, i,
		       recs[i].ips - ips, next - ips);
		next = recs[i].ips + recs[i].n;
	}
	CHECKF(nips == (size_t)(next - ips), "%s: nips %zu, records %td", what,
	       nips, next - ips);
	CHECK(nips <= cap);
	for (size_t g = 0; g < GUARD; g++)
		CHECKF(ips[cap + g] == CANARY, "%s: written past cap at +%zu",
		       what, g);
}

/* Decodes @trace as @w says into @out, through @flow (reset first). */
static void decode(const struct way *w, struct pts_flow *flow,
		   const uint8_t *trace, size_t size, struct decoded *out)
{
	static struct pts_flow_rec recs[256];
	uint64_t *ips = malloc((w->cap + GUARD) * sizeof(uint64_t));
	if (!ips)
		abort();
	for (size_t g = 0; g < w->cap + GUARD; g++)
		ips[g] = CANARY;
	struct pts_rng rng;
	pts_rng_seed(&rng, 5);
	CHECK_EQ(pts_flow_reset(flow), 0);
	size_t pos = 0;
	int n = 0;
	while (pos < size || n != -PTS_ERR_EOS) {
		size_t len = size - pos;
		if (w->chunks && len > 1)
			len = 1 + pts_rng_below(&rng, len < 3000 ? len : 3000);
		struct pts_input in = {trace + pos, len, 0};
		pos += len;
		if (pos == size)
			pts_flow_end(flow);
		for (;;) {
			size_t nips = SIZE_MAX;
			n = w->flat ? pts_flow_next_ips(flow, &in, recs, w->max,
							ips, w->cap, &nips)
				    : pts_flow_next(flow, &in, recs, w->max);
			if (w->flat)
				check_call(w->name, recs, n > 0 ? n : 0, ips,
					   w->cap, nips);
			if (n <= 0)
				break;
			CHECK(n <= w->max);
			for (int i = 0; i < n; i++)
				keep(out, &recs[i]);
		}
		CHECK_EQ(in.pos, in.size);
		CHECKF(n == -PTS_ERR_AGAIN || n == -PTS_ERR_EOS, "%s: %d",
		       w->name, n);
		if (n != -PTS_ERR_AGAIN && n != -PTS_ERR_EOS)
			break;
	}
	free(ips);
}

/* Whether two records agree but for ips (and sizes, compared by content
 * elsewhere); run ids only when @runs (the same blocks: a flushed cache
 * builds them again with new ids). */
static bool same_rec(const struct pts_flow_rec *a, const struct pts_flow_rec *b,
		     bool runs)
{
	uint64_t run_mask = runs ? UINT64_MAX : (UINT64_C(1) << 20) - 1;
	if (a->kind == PTS_FLOW_INSNS && (a->arg & run_mask) != (b->arg & run_mask))
		return false;
	return a->kind == b->kind && a->offset == b->offset && a->ip == b->ip &&
	       a->cr3 == b->cr3 && a->n == b->n && a->arg2 == b->arg2 &&
	       a->error == b->error && a->mode == b->mode &&
	       a->type == b->type && a->flags == b->flags &&
	       (a->kind == PTS_FLOW_INSNS || a->arg == b->arg);
}

static void compare(const char *name, const struct way *w,
		    const struct decoded *got, const struct decoded *want)
{
	size_t n = got->nrecs < want->nrecs ? got->nrecs : want->nrecs, i = 0;
	bool runs = !w->cache_bytes;
	while (i < n && same_rec(&got->recs[i], &want->recs[i], runs))
		i++;
	CHECKF(i == got->nrecs && i == want->nrecs,
	       "%s, %s: records differ at #%zu of %zu/%zu", name, w->name, i,
	       got->nrecs, want->nrecs);
	CHECKF(got->nips == want->nips &&
	       !memcmp(got->ips, want->ips, got->nips * sizeof(uint64_t)) &&
	       !memcmp(got->sizes, want->sizes, got->nips),
	       "%s, %s: addresses or sizes differ (%zu/%zu)", name, w->name,
	       got->nips, want->nips);
}

/* Every way of decoding @trace with pts_flow_next_ips() against
 * pts_flow_next() through the same walker; @cap from the least up in
 * steps of @cap_step. */
static void check_trace(const char *name, struct pts_image *img,
			const uint8_t *trace, size_t size, size_t cap_step)
{
	const struct way ways[] = {
		{"many records", true, 256, 4096, 0, false},
		{"cap MIN", true, 256, PTS_FLOW_IPS_MIN, 0, false},
		{"few records", true, 3, 1 << 16, 0, false},
		{"1 record, cap MIN", true, 1, PTS_FLOW_IPS_MIN, 0, false},
		{"chunks", true, 40, PTS_FLOW_IPS_MIN + 5, 0, true},
		{"flushes", true, 256, PTS_FLOW_IPS_MIN + 100, 4096, false},
		{"flushes, few", true, 2, PTS_FLOW_IPS_MIN, 4096, true},
	};
	const struct way ref = {"records", false, 64, 0, 0, false};
	struct pts_flow_config fc = {0};
	struct pts_flow *flow = pts_flow_new(&fc, img);
	fc.cache_bytes = 4096;
	struct pts_flow *small = pts_flow_new(&fc, img);
	if (!flow || !small)
		abort();
	struct decoded want = {0};
	decode(&ref, flow, trace, size, &want);
	CHECKF(want.nips > 0, "%s: nothing decoded", name);
	for (size_t w = 0; w < sizeof(ways) / sizeof(ways[0]); w++) {
		struct decoded got = {0};
		decode(&ways[w], ways[w].cache_bytes ? small : flow, trace,
		       size, &got);
		compare(name, &ways[w], &got, &want);
		decoded_free(&got);
	}
	/* The walk stops short of the end of the array at every distance. */
	for (size_t extra = 0; extra < 300; extra += cap_step) {
		const struct way sweep = {"cap sweep", true, 256,
					  PTS_FLOW_IPS_MIN + extra, 0, false};
		struct decoded got = {0};
		decode(&sweep, flow, trace, size, &got);
		compare(name, &sweep, &got, &want);
		decoded_free(&got);
	}
	struct pts_flow_stats st;
	pts_flow_get_stats(small, &st);
	CHECKF(st.cache_flushes > 0, "%s: the small cache was not flushed",
	       name);
	printf("%-18s %9zu insns %7zu records %5llu events %4llu errors %s\n",
	       name, want.nips, want.nrecs, (unsigned long long)want.events,
	       (unsigned long long)want.errors,
	       pts_check_failures ? "FAIL so far" : "ok");
	decoded_free(&want);
	pts_flow_free(small);
	pts_flow_free(flow);
}

/* Flips bytes all over @trace: errors, resyncs at the next PSB. */
static void damage(uint8_t *trace, size_t size, uint64_t seed)
{
	struct pts_rng rng;
	pts_rng_seed(&rng, seed);
	for (size_t i = 0; i < size / 2000; i++)
		trace[pts_rng_below(&rng, size)] ^=
			(uint8_t)(1 + pts_rng_below(&rng, 255));
}

/* A walk: synthesizer options that differ from the defaults. */
struct scenario {
	const char *name;
	uint8_t retcomp, timing, damaged;
	uint32_t async_rate, ovf_rate;
};

/* The trace of a walk over @img as @sc says (malloc'd; *@size bytes). */
static uint8_t *synthesize(const struct scenario *sc, struct pts_image *img,
			   uint64_t insns, uint64_t seed, size_t *size)
{
	struct syn_options o;
	syn_options_default(&o);
	o.seed = seed;
	o.insns = insns;
	o.retcomp = sc->retcomp;
	o.tsc = o.mtc = o.cyc = sc->timing;
	o.async_rate = sc->async_rate;
	o.ovf_rate = sc->ovf_rate;
	struct pts_config cfg;
	pts_config_init(&cfg);
	struct syn_sink *sink = calloc(1, sizeof(*sink));
	if (!sink)
		abort();
	syn_sink_init(sink, NULL);
	CHECK_EQ(syn_walk_to_memory(&o, &cfg, img, 0, sink, NULL, NULL, NULL),
		 0);
	uint8_t *trace = sink->mem;
	*size = sink->mem_len;
	if (sc->damaged)
		damage(trace, *size, seed);
	free(sink);
	pts_config_fini(&cfg);
	return trace;
}

/* The @n scenarios @sc over @elf (skipped when it is not there). */
static void run_elf(const char *elf, const struct scenario *sc, size_t n,
		    uint64_t insns, uint64_t seed)
{
	struct pts_image *img = pts_image_new();
	if (!img)
		abort();
	if (pts_image_add_elf(img, 0, elf, 0) < 0) {
		printf("no %s, skipped\n", elf);
		n = 0;
	}
	for (size_t i = 0; i < n; i++) {
		size_t size;
		uint8_t *trace = synthesize(&sc[i], img, insns, seed + i, &size);
		check_trace(sc[i].name, img, trace, size, 7);
		free(trace);
	}
	pts_image_free(img);
}

/* Blocks of the most instructions there are (PTS_BLOCK_MAX_INSNS): a
 * loop of 600 NOPs and a JNZ back, taken 180 times. */
static void run_long_blocks(void)
{
	static uint8_t code[606];
	memset(code, 0x90, 600);
	const int32_t back = -(int32_t)sizeof(code);
	code[600] = 0x0f; /* jnz 1000 */
	code[601] = 0x85;
	memcpy(code + 602, &back, sizeof(back));
	struct pts_image *img = pts_image_new();
	if (!img || pts_image_add_mem(img, 0, code, sizeof(code), 0x1000) < 0)
		abort();
	struct hand_trace t;
	memset(&t, 0, sizeof(t));
	ht_psb(&t);
	ht_mode(&t, 1, 0);
	ht_put_kind(&t, PTS_PKT_PSBEND);
	ht_put_ip(&t, PTS_PKT_TIP_PGE, 0x1000);
	for (int i = 0; i < 30; i++)
		ht_tnt(&t, 0x3f, 6);
	ht_put_ip(&t, PTS_PKT_TIP_PGD, 0);
	check_trace("long blocks", img, t.buf, t.len, 1);
	pts_image_free(img);
}

/* -PTS_ERR_INVALID for what pts_flow_next_ips() cannot take. */
static void check_invalid(void)
{
	struct pts_image *img = pts_image_new();
	struct pts_flow *flow = img ? pts_flow_new(NULL, img) : NULL;
	if (!flow)
		abort();
	static uint64_t ips[PTS_FLOW_IPS_MIN];
	struct pts_flow_rec recs[4];
	struct pts_input in = {NULL, 0, 0};
	size_t nips = 7;
	CHECK_EQ(pts_flow_next_ips(flow, &in, recs, 4, ips,
				   PTS_FLOW_IPS_MIN - 1, &nips),
		 -PTS_ERR_INVALID);
	CHECK_EQ(pts_flow_next_ips(flow, &in, recs, 4, NULL, PTS_FLOW_IPS_MIN,
				   &nips),
		 -PTS_ERR_INVALID);
	CHECK_EQ(pts_flow_next_ips(flow, &in, recs, 4, ips, PTS_FLOW_IPS_MIN,
				   NULL),
		 -PTS_ERR_INVALID);
	CHECK_EQ(pts_flow_next_ips(flow, &in, recs, 0, ips, PTS_FLOW_IPS_MIN,
				   &nips),
		 -PTS_ERR_INVALID);
	CHECK_EQ(pts_flow_next_ips(flow, &in, NULL, 4, ips, PTS_FLOW_IPS_MIN,
				   &nips),
		 -PTS_ERR_INVALID);
	CHECK_EQ(pts_flow_next_ips(NULL, &in, recs, 4, ips, PTS_FLOW_IPS_MIN,
				   &nips),
		 -PTS_ERR_INVALID);
	CHECK_EQ(nips, 7); /* untouched */
	/* Valid, nothing to decode yet: no address. */
	CHECK_EQ(pts_flow_next_ips(flow, &in, recs, 4, ips, PTS_FLOW_IPS_MIN,
				   &nips),
		 -PTS_ERR_AGAIN);
	CHECK_EQ(nips, 0);
	pts_flow_free(flow);
	pts_image_free(img);
}

int main(int argc, char **argv)
{
	static const struct scenario scenarios[] = {
		{.name = "retcomp", .retcomp = 1},
		{.name = "no-retcomp"},
		{.name = "timing", .retcomp = 1, .timing = 1},
		{.name = "interrupts", .retcomp = 1, .async_rate = 300},
		{.name = "overflow", .retcomp = 1, .ovf_rate = 80},
		{.name = "damaged", .retcomp = 1, .async_rate = 300,
		 .damaged = 1},
	};
	static const struct scenario libc = {.name = "libc", .retcomp = 1};
	const char *root = getenv("PTS_SOURCE_ROOT");
	char demo[4096];
	snprintf(demo, sizeof(demo), "%s/fixtures/bin/enclave_demo",
		 root ? root : ".");
	uint64_t insns = 100000, seed = 1;
	if (argc > 1)
		insns = strtoull(argv[1], NULL, 0);
	if (argc > 2)
		seed = strtoull(argv[2], NULL, 0);
	check_invalid();
	run_long_blocks();
	/* enclave_demo for events, libc for long blocks and segments. */
	run_elf(demo, scenarios, sizeof(scenarios) / sizeof(scenarios[0]),
		insns, seed);
	run_elf("/lib/x86_64-linux-gnu/libc.so.6", &libc, 1, insns, seed);
	return pts_check_exit();
}
