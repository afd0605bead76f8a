/* pts_cov_decode() (decoder/cov_walk.c: the walker's blocks straight into
 * the coverage sink; decoder/cov_fast.c: its walk through the dense block
 * nodes when edges only go to the bitmap) against the path it short-cuts,
 * pts_flow_next() records fed to pts_cov_feed(), on synthesized walks: the
 * same edges in the same order, the same bitmap, the same distinct edge
 * counts, the same edge and run counts.
 *   - walks over enclave_demo with return compression or not, timing,
 *     an IP filter, interrupts, overflows, production and debug enclaves
 *     (events and careful walks between blocks);
 *   - a walk over libc, when present (many blocks, many segments);
 *   - each decoded whole, in random chunks (-PTS_ERR_AGAIN between them),
 *     with a block cache so small that it is flushed again and again, and
 *     a second time through the same walker (pts_flow_reset());
 *   - the sink with edges, counts and a software filter (every edge goes
 *     through the slow path), and with the bitmap alone (the fast path);
 *   - a hand-made trace in two address spaces with other code at the same
 *     addresses (the fast path's IP -> node table holds one space);
 *   - hand-made compressed returns, one more than a full return stack.
 *
 * usage: test_cov_walk [INSNS [SEED]]   (default 100000, 1)
 */
#include "check.h"
#include "hand_trace.h"
#include "rng.h"
#include "synth_run.h"

#include <ptscope/coverage.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct edges {
	struct pts_cov_edge *v;
	size_t n, cap;
};

static void collect(void *ctx, const struct pts_cov_edge *v, size_t n)
{
	struct edges *e = ctx;
	if (e->n + n > e->cap) {
		e->cap = (e->n + n) * 2;
		e->v = realloc(e->v, e->cap * sizeof(*e->v));
		if (!e->v)
			abort();
	}
	memcpy(e->v + e->n, v, n * sizeof(*v));
	e->n += n;
}

/* What one decode gives. */
struct result {
	struct edges edges;
	uint8_t *bitmap;
	size_t bitmap_size;
	struct pts_cov_count *uniq;
	size_t nuniq;
	struct pts_cov_stats st;
	uint64_t insns;
};

static void result_free(struct result *r)
{
	free(r->edges.v);
	free(r->bitmap);
	free(r->uniq);
	memset(r, 0, sizeof(*r));
}

/* How to decode. */
struct way {
	const char *name;
	bool direct;        /* pts_cov_decode(), else records */
	bool chunks;        /* random chunks, else the whole trace */
	size_t cache_bytes; /* the walker's block cache bound (0: default) */
	uint32_t flags;     /* the sink's PTS_COV_* */
	bool filter;        /* a software filter range */
};

static void decode(const struct way *w, struct pts_image *img,
		   const struct syn_sink *trace, uint64_t lo, uint64_t hi,
		   struct result *r)
{
	struct pts_flow_config fc = {0};
	fc.cache_bytes = w->cache_bytes;
	struct pts_flow *flow = pts_flow_new(&fc, img);
	struct pts_cov_config cc = {0};
	cc.flags = w->flags;
	cc.bitmap_size = 1u << 12; /* small: collisions count too */
	if (w->filter) {
		cc.n_ranges = 1;
		cc.begin[0] = lo + (hi - lo) / 4;
		cc.end[0] = lo + (hi - lo) / 2;
	}
	struct pts_cov *cov = NULL;
	CHECK_EQ(pts_cov_new(&cc, img, &cov), 0);
	if (!flow || !cov)
		abort();
	pts_cov_set_sink(cov, collect, &r->edges);
	struct pts_rng rng;
	pts_rng_seed(&rng, 3);
	/* Twice through the same walker and sink: the second decode is the
	 * one kept, with a warm block cache. */
	for (int pass = 0; pass < 2; pass++) {
		CHECK_EQ(pts_flow_reset(flow), 0);
		pts_cov_clear(cov);
		r->edges.n = 0;
		size_t pos = 0;
		int n = 0;
		while (pos < trace->mem_len || n != -PTS_ERR_EOS) {
			size_t len = trace->mem_len - pos;
			if (w->chunks && len > 1)
				len = 1 + pts_rng_below(&rng, len < 5000 ? len
								   : 5000);
			struct pts_input in = {trace->mem + pos, len, 0};
			pos += len;
			if (pos == trace->mem_len)
				pts_flow_end(flow);
			if (w->direct) {
				n = pts_cov_decode(cov, flow, &in);
			} else {
				static struct pts_flow_rec recs[64];
				while ((n = pts_flow_next(flow, &in, recs, 64)) >
				       0)
					CHECK_EQ(pts_cov_feed(cov, recs, n), 0);
			}
			CHECK_EQ(in.pos, in.size);
			CHECK(n == -PTS_ERR_AGAIN || n == -PTS_ERR_EOS);
			if (n != -PTS_ERR_AGAIN && n != -PTS_ERR_EOS)
				break;
		}
		pts_cov_end(cov);
	}
	const uint8_t *bm = pts_cov_bitmap(cov, &r->bitmap_size);
	if (bm) {
		r->bitmap = malloc(r->bitmap_size);
		memcpy(r->bitmap, bm, r->bitmap_size);
	}
	const struct pts_cov_count *u;
	r->nuniq = pts_cov_unique(cov, &u);
	r->uniq = calloc(r->nuniq + 1, sizeof(*u));
	if (r->nuniq)
		memcpy(r->uniq, u, r->nuniq * sizeof(*u));
	pts_cov_get_stats(cov, &r->st);
	struct pts_flow_stats fs;
	pts_flow_get_stats(flow, &fs);
	r->insns = fs.insns;
	pts_cov_free(cov);
	pts_flow_free(flow);
}

static void compare(const char *name, const char *way, const struct result *got,
		    const struct result *want)
{
	size_t i = 0, n = got->edges.n < want->edges.n ? got->edges.n
						      : want->edges.n;
	while (i < n && got->edges.v[i].src == want->edges.v[i].src &&
	       got->edges.v[i].dst == want->edges.v[i].dst)
		i++;
	CHECKF(i == got->edges.n && i == want->edges.n,
	       "%s, %s: edges differ at #%zu of %zu/%zu", name, way, i,
	       got->edges.n, want->edges.n);
	CHECKF(got->bitmap_size == want->bitmap_size &&
	       (!got->bitmap_size ||
		!memcmp(got->bitmap, want->bitmap, got->bitmap_size)),
	       "%s, %s: bitmaps differ", name, way);
	CHECKF(got->nuniq == want->nuniq &&
	       !memcmp(got->uniq, want->uniq,
		       got->nuniq * sizeof(*got->uniq)),
	       "%s, %s: distinct edges differ", name, way);
	CHECKF(got->st.edges == want->st.edges && got->st.runs == want->st.runs,
	       "%s, %s: %llu edges %llu runs, want %llu %llu", name, way,
	       (unsigned long long)got->st.edges,
	       (unsigned long long)got->st.runs,
	       (unsigned long long)want->st.edges,
	       (unsigned long long)want->st.runs);
	CHECK_EQ(got->insns, want->insns);
}

/* Every way of decoding @trace against the records path, for each sink
 * configuration. */
static void check_trace(const char *name, struct pts_image *img,
			const struct syn_sink *trace, uint64_t lo, uint64_t hi)
{
	static const uint32_t slow = PTS_COV_BITMAP | PTS_COV_EDGES |
				     PTS_COV_UNIQUE;
	static const struct way sinks[] = {
		{"edges+counts", false, false, 0, slow, false},
		{"edges, filter", false, false, 0, PTS_COV_EDGES, true},
		{"bitmap", false, false, 0, PTS_COV_BITMAP, false},
	};
	for (size_t s = 0; s < sizeof(sinks) / sizeof(sinks[0]); s++) {
		struct result want = {0};
		decode(&sinks[s], img, trace, lo, hi, &want);
		CHECKF(want.insns > 0, "%s: nothing decoded", name);
		const struct way ways[] = {
			{"direct", true, false, 0, sinks[s].flags,
			 sinks[s].filter},
			{"direct, chunks", true, true, 0, sinks[s].flags,
			 sinks[s].filter},
			{"direct, flushes", true, false, 4096, sinks[s].flags,
			 sinks[s].filter},
		};
		for (size_t w = 0; w < sizeof(ways) / sizeof(ways[0]); w++) {
			struct result got = {0};
			decode(&ways[w], img, trace, lo, hi, &got);
			compare(name, ways[w].name, &got, &want);
			result_free(&got);
		}
		printf("%-22s %-14s %9llu insns %8zu edges %s\n", name,
		       sinks[s].name, (unsigned long long)want.insns,
		       want.edges.n, pts_check_failures ? "FAIL so far" : "ok");
		result_free(&want);
	}
}

/* A walk: synthesizer options that differ from the defaults. */
struct scenario {
	const char *name;
	uint8_t retcomp, timing, long_tnt, user_only;
	uint32_t async_rate, ovf_rate, aex_rate;
	uint64_t filter_a, filter_b; /* a hardware IP filter range, or 0 */
	int enclave; /* enum pts_enclave_kind + 1, 0: none */
};

static const struct scenario scenarios[] = {
	{.name = "retcomp", .retcomp = 1},
	{.name = "no-retcomp"},
	{.name = "timing", .retcomp = 1, .timing = 1},
	{.name = "hw-filter", .retcomp = 1, .filter_a = 0x400140,
	 .filter_b = 0x40022f},
	{.name = "interrupts", .retcomp = 1, .async_rate = 300, .long_tnt = 1},
	{.name = "overflow", .retcomp = 1, .ovf_rate = 80, .user_only = 1},
	{.name = "production enclave", .retcomp = 1, .aex_rate = 2000,
	 .async_rate = 200, .user_only = 1,
	 .enclave = 1 + PTS_ENCLAVE_PRODUCTION},
	{.name = "debug enclave", .aex_rate = 2000, .async_rate = 200,
	 .user_only = 1, .enclave = 1 + PTS_ENCLAVE_DEBUG},
};

static void apply(const struct scenario *sc, struct syn_options *o,
		  struct pts_config *cfg)
{
	o->retcomp = sc->retcomp;
	o->tsc = o->mtc = o->cyc = sc->timing;
	if (sc->timing)
		o->psb_period = 1024;
	o->long_tnt = sc->long_tnt;
	o->user_only = sc->user_only;
	o->async_rate = sc->async_rate;
	o->ovf_rate = sc->ovf_rate;
	o->aex_rate = sc->aex_rate;
	if (sc->filter_a) {
		o->n_addr = 1;
		o->addr_cfg[0] = PTS_ADDR_FILTER;
		o->addr_a[0] = sc->filter_a;
		o->addr_b[0] = sc->filter_b;
	}
	if (sc->enclave) {
		/* enclave_demo's enclave_text (fixtures/FORMATS.md). */
		struct pts_enclave e;
		memset(&e, 0, sizeof(e));
		e.begin = 0x500000;
		e.end = 0x501000;
		e.kind = (uint8_t)(sc->enclave - 1);
		e.aep = 0x400138;
		e.has_aep = 1;
		if (pts_config_add_enclave(cfg, &e, 0x500000) < 0)
			abort();
	}
}

/* Synthesizes a walk over @elf as @sc says and checks it. */
static void run(const struct scenario *sc, const char *elf, uint64_t insns,
		uint64_t seed, uint64_t lo, uint64_t hi)
{
	struct pts_image *img = pts_image_new();
	struct syn_options o;
	struct pts_config cfg;
	struct syn_sink *sink = calloc(1, sizeof(*sink));
	pts_config_init(&cfg);
	syn_options_default(&o);
	o.seed = seed;
	o.insns = insns;
	apply(sc, &o, &cfg);
	if (!img || !sink || pts_image_add_elf(img, 0, elf, 0) < 0) {
		printf("%s: no %s, skipped\n", sc->name, elf);
		free(sink);
		pts_config_fini(&cfg);
		pts_image_free(img);
		return;
	}
	syn_sink_init(sink, NULL);
	CHECK_EQ(syn_walk_to_memory(&o, &cfg, img, 0, sink, NULL, NULL, NULL),
		 0);
	check_trace(sc->name, img, sink, lo, hi);
	free(sink->mem);
	free(sink);
	pts_config_fini(&cfg);
	pts_image_free(img);
}

/* Two spaces (CR3 A and B) with indirect jumps at 0x1000 and 0x2000 that
 * TIPs send back and forth; at 0x2000, B has two NOPs before its jump.
 * Tracing goes off in A, a PIP switches to B, and on again at 0x1000: the
 * TIPs to 0x2000 must reach B's code there, not the node A left in the
 * fast path's table for that address. */
static void two_spaces(void)
{
	static const uint8_t jmp_rax[] = {0xff, 0xe0};
	static const uint8_t nops_jmp_rax[] = {0x90, 0x90, 0xff, 0xe0};
	const uint64_t cr3[2] = {0xa000, 0xb000};
	struct pts_image *img = pts_image_new();
	if (!img)
		abort();
	for (int s = 0; s < 2; s++) {
		CHECK_EQ(pts_image_add_mem(img, cr3[s], jmp_rax,
					   sizeof(jmp_rax), 0x1000), 0);
		CHECK_EQ(pts_image_add_mem(img, cr3[s], s ? nops_jmp_rax
							  : jmp_rax,
					   s ? sizeof(nops_jmp_rax)
					     : sizeof(jmp_rax), 0x2000), 0);
	}
	struct hand_trace t = {0};
	struct pts_packet pip;
	memset(&pip, 0, sizeof(pip));
	pip.kind = PTS_PKT_PIP;
	ht_psb(&t);
	pip.u.pip.cr3 = cr3[0];
	ht_put(&t, &pip);
	ht_mode(&t, 1, 0);
	ht_put_kind(&t, PTS_PKT_PSBEND);
	for (int s = 0; s < 2; s++) {
		if (s) {
			pip.u.pip.cr3 = cr3[1];
			ht_put(&t, &pip);
		}
		ht_put_ip(&t, PTS_PKT_TIP_PGE, 0x1000);
		for (int i = 0; i < 60; i++)
			ht_put_ip(&t, PTS_PKT_TIP, i & 1 ? 0x1000 : 0x2000);
		ht_put_ip(&t, PTS_PKT_TIP_PGD, 0);
	}
	static struct syn_sink trace;
	trace.mem = t.buf;
	trace.mem_len = t.len;
	check_trace("two spaces", img, &trace, 0x1000, 0x2004);
	pts_image_free(img);
}

/* CALL *%rax at 0x1020, again and again through its TIPs: 64 calls (a
 * full return stack), the last to a RET at 0x1010; then 66 compressed
 * returns (to the RET after the call). The fast path takes 64; the next
 * finds the stack empty (an error, as the walker reports it, and the last
 * bit is lost with the resync), though the ring's slot still holds a
 * return address. A second PSB+ starts over. */
static void return_past_stack(void)
{
	static const uint8_t call_ret[] = {0xff, 0xd0, 0xc3};
	static const uint8_t ret[] = {0xc3};
	struct pts_image *img = pts_image_new();
	if (!img)
		abort();
	CHECK_EQ(pts_image_add_mem(img, 0, call_ret, sizeof(call_ret),
				   0x1020), 0);
	CHECK_EQ(pts_image_add_mem(img, 0, ret, sizeof(ret), 0x1010), 0);
	struct hand_trace t = {0};
	for (int round = 0; round < 2; round++) {
		ht_psb(&t);
		ht_mode(&t, 1, 0);
		ht_put_kind(&t, PTS_PKT_PSBEND);
		ht_put_ip(&t, PTS_PKT_TIP_PGE, 0x1020);
		for (int call = 1; call < 64; call++)
			ht_put_ip(&t, PTS_PKT_TIP, 0x1020);
		ht_put_ip(&t, PTS_PKT_TIP, 0x1010);
		for (int bits = 0; bits < 66; bits += 6)
			ht_tnt(&t, 0x3f, 6);
	}
	static struct syn_sink trace;
	trace.mem = t.buf;
	trace.mem_len = t.len;
	check_trace("return past stack", img, &trace, 0x1010, 0x1023);
	pts_image_free(img);
}

int main(int argc, char **argv)
{
	/* enclave_demo for the events, libc for many blocks and segments. */
	static const struct scenario libc = {.name = "libc", .retcomp = 1};
	const uint64_t insns = argc > 1 ? strtoull(argv[1], NULL, 0) : 100000;
	const uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
	char demo[4096];
	snprintf(demo, sizeof(demo), "%s/fixtures/bin/enclave_demo",
		 getenv("PTS_SOURCE_ROOT") ? getenv("PTS_SOURCE_ROOT") : ".");
	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		run(&scenarios[i], demo, insns, seed + i, 0x400000, 0x400400);
	run(&libc, "/lib/x86_64-linux-gnu/libc.so.6", insns, seed, 0x26000,
	    0x17b000);
	two_spaces();
	return_past_stack();
	return pts_check_exit();
}
