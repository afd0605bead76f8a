/* The walker's block cache across traces and changes, on hand-made code
 * and traces:
 *   - pts_flow_reset(): the same trace decoded again gives the same
 *     records (run ids too: the blocks are kept) and builds no block; a
 *     fresh walker gives the same records up to run ids;
 *   - run ids: non-zero, one id names one address sequence;
 *   - an image change drops the cached blocks and their successor links:
 *     the walk follows the new code;
 *   - a cache that fills up is flushed between calls, links and all, and
 *     the records stay the same;
 *   - 32-bit code (MODE.Exec CS.D): the coverage sink's edges.
 *
 * Code (64-bit):
 *   1000 mov ecx, 5         1005 dec ecx         1007 jnz 1005
 *   1009 call 1020          100e jmp 1000
 *   1020 nop                1021 ret
 * Each round of the loop takes the TNT bits 1 1 1 1 0 (jnz) and 1 (the
 * compressed ret): one TNT-8.
 */
#include "check.h"
#include "hand_trace.h"

#include <ptscope/coverage.h>
#include <ptscope/decoder.h>

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t loop_code[] = {
	0xb9, 0x05, 0x00, 0x00, 0x00, /* 1000 mov ecx, 5 */
	0xff, 0xc9,                   /* 1005 dec ecx */
	0x75, 0xfc,                   /* 1007 jnz 1005 */
	0xe8, 0x12, 0x00, 0x00, 0x00, /* 1009 call 1020 */
	0xeb, 0xf0,                   /* 100e jmp 1000 */
};
static const uint8_t callee[] = {0x90, 0xc3}; /* 1020 nop; ret */

/* @rounds rounds of the loop, then tracing stops at the next jnz. */
static void loop_trace(struct hand_trace *t, unsigned rounds)
{
	memset(t, 0, sizeof(*t));
	ht_psb(t);
	ht_mode(t, 1, 0);
	ht_put_kind(t, PTS_PKT_PSBEND);
	ht_put_ip(t, PTS_PKT_TIP_PGE, 0x1000);
	for (unsigned i = 0; i < rounds; i++)
		ht_tnt(t, 0x3d, 6); /* 1 1 1 1 0, ret 1 */
	ht_put_ip(t, PTS_PKT_TIP_PGD, 0);
}

/* Records as text, one line each; @ids adds the run ids. */
struct text {
	char *s;
	size_t len, cap;
};

/* Room for @n more bytes and the NUL. */
static void reserve(struct text *t, size_t n)
{
	if (t->s && t->cap - t->len > n)
		return;
	t->cap = t->cap * 2 + n + 4096;
	t->s = realloc(t->s, t->cap);
	if (!t->s)
		abort();
}

/* Appends printf-style text (short: one field). */
__attribute__((format(printf, 2, 3))) static void add(struct text *t,
						      const char *fmt, ...)
{
	reserve(t, 64);
	va_list ap;
	va_start(ap, fmt);
	t->len += (size_t)vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
}

static void add_str(struct text *t, const char *str)
{
	size_t n = strlen(str);
	reserve(t, n);
	memcpy(t->s + t->len, str, n + 1);
	t->len += n;
}

/* Run ids seen, to check that one id names one address sequence. */
#define MAX_RUNS 256
struct runs {
	uint64_t id[MAX_RUNS];
	const uint64_t *ips[MAX_RUNS]; /* a copy */
	uint32_t n[MAX_RUNS];
	size_t count;
};

static void check_run(struct runs *rs, const struct pts_flow_rec *r)
{
	CHECK(r->run != 0);
	for (size_t i = 0; i < rs->count; i++) {
		if (rs->id[i] != r->run)
			continue;
		CHECK_EQ(rs->n[i], r->n);
		CHECK(rs->n[i] == r->n &&
		      !memcmp(rs->ips[i], r->ips, r->n * sizeof(uint64_t)));
		return;
	}
	if (rs->count == MAX_RUNS)
		return;
	uint64_t *copy = malloc(r->n * sizeof(uint64_t));
	if (!copy)
		abort();
	memcpy(copy, r->ips, r->n * sizeof(uint64_t));
	rs->id[rs->count] = r->run;
	rs->ips[rs->count] = copy;
	rs->n[rs->count++] = r->n;
}

static void runs_free(struct runs *rs)
{
	for (size_t i = 0; i < rs->count; i++)
		free((void *)rs->ips[i]);
	rs->count = 0;
}

/* Decodes @t with @f (@max records per call) into @out. */
static void decode(struct pts_flow *f, const struct hand_trace *t, int max,
		   bool ids, struct text *out, struct runs *rs)
{
	struct pts_input in = {t->buf, t->len, 0};
	struct pts_flow_rec recs[64];
	int n;
	out->len = 0;
	add_str(out, "");
	pts_flow_end(f);
	while ((n = pts_flow_next(f, &in, recs, max)) > 0) {
		for (int i = 0; i < n; i++) {
			const struct pts_flow_rec *r = &recs[i];
			add(out, "%llu:%u ", (unsigned long long)r->offset,
			    r->kind);
			if (r->kind == PTS_FLOW_INSNS) {
				if (ids)
					add(out, "run %llx mode %u ",
					    (unsigned long long)r->run,
					    r->mode);
				for (uint32_t k = 0; k < r->n; k++)
					add(out, "%llx/%u ",
					    (unsigned long long)r->ips[k],
					    r->sizes[k]);
				if (rs)
					check_run(rs, r);
			} else if (r->kind == PTS_FLOW_EVENT) {
				add(out, "ev %u ip %llx ", r->type,
				    (unsigned long long)r->ip);
			} else if (r->kind == PTS_FLOW_SKIP) {
				add(out, "skip to %llx ",
				    (unsigned long long)r->arg);
			} else {
				add(out, "err %d ip %llx ", r->error,
				    (unsigned long long)r->ip);
			}
			add_str(out, "\n");
		}
	}
	CHECK_EQ(n, -PTS_ERR_EOS);
}

static struct pts_image *loop_image(void)
{
	struct pts_image *img = pts_image_new();
	CHECK(img != NULL);
	CHECK(pts_image_add_mem(img, 0, loop_code, sizeof(loop_code),
				0x1000) == 0);
	CHECK(pts_image_add_mem(img, 0, callee, sizeof(callee), 0x1020) == 0);
	return img;
}

static void reset_and_ids(void)
{
	struct hand_trace t;
	loop_trace(&t, 50);
	struct pts_image *img = loop_image();
	struct pts_flow *f = pts_flow_new(NULL, img);
	struct text a = {0}, b = {0}, c = {0}, a0 = {0}, c0 = {0};
	struct runs rs = {0};
	struct pts_flow_stats s1, s2;

	decode(f, &t, 64, true, &a, &rs);
	pts_flow_get_stats(f, &s1);
	CHECK_EQ(s1.insns, 50 * 15 + 3);
	CHECK(strstr(a.s, "1021/1") != NULL);

	/* Reset: the same records, run ids included; no block built. */
	CHECK_EQ(pts_flow_reset(f), 0);
	decode(f, &t, 64, true, &b, &rs);
	pts_flow_get_stats(f, &s2);
	CHECK(strcmp(a.s, b.s) == 0);
	CHECK_EQ(s2.blocks_built, s1.blocks_built);
	CHECK_EQ(s2.insns, s1.insns);

	/* A reset in the middle of a trace forgets it entirely. */
	struct pts_input half = {t.buf, t.len / 2, 0};
	struct pts_flow_rec recs[8];
	while (pts_flow_next(f, &half, recs, 8) > 0)
		;
	CHECK_EQ(pts_flow_reset(f), 0);
	decode(f, &t, 7, true, &b, &rs);
	CHECK(strcmp(a.s, b.s) == 0);

	/* A fresh walker: the same records, other run ids. */
	struct pts_flow *g = pts_flow_new(NULL, img);
	decode(g, &t, 64, true, &c, &rs);
	CHECK(strcmp(a.s, c.s) != 0);
	CHECK_EQ(pts_flow_reset(f), 0);
	decode(f, &t, 64, false, &a0, NULL);
	CHECK_EQ(pts_flow_reset(g), 0);
	decode(g, &t, 64, false, &c0, NULL);
	CHECK(strcmp(a0.s, c0.s) == 0);

	pts_flow_free(g);
	pts_flow_free(f);
	pts_image_free(img);
	runs_free(&rs);
	free(a.s), free(b.s), free(c.s), free(a0.s), free(c0.s);
}

/* New code at 1020 (nop; nop; ret) after a decode: the cached blocks and
 * the links that lead to them must not be used. */
static void image_change(void)
{
	static const uint8_t callee2[] = {0x90, 0x90, 0xc3};
	struct hand_trace t;
	loop_trace(&t, 20);
	struct pts_image *img = loop_image();
	struct pts_flow *f = pts_flow_new(NULL, img);
	struct text a = {0}, b = {0}, c = {0};
	struct runs rs = {0};
	decode(f, &t, 64, false, &a, &rs);
	CHECK(strstr(a.s, "1022/1") == NULL);

	CHECK(pts_image_add_mem(img, 0, callee2, sizeof(callee2), 0x1020) ==
	      0);
	CHECK_EQ(pts_flow_reset(f), 0);
	decode(f, &t, 64, false, &b, &rs);
	CHECK(strstr(b.s, "1021/1 1022/1") != NULL);
	struct pts_flow_stats st;
	pts_flow_get_stats(f, &st);
	CHECK(st.cache_flushes >= 1);
	CHECK_EQ(st.errors, 0);

	struct pts_flow *g = pts_flow_new(NULL, img);
	decode(g, &t, 64, false, &c, NULL);
	CHECK(strcmp(b.s, c.s) == 0);

	/* Mid-trace: the change is seen at the next call. */
	loop_trace(&t, 20);
	struct pts_image *img2 = loop_image();
	struct pts_flow *h = pts_flow_new(NULL, img2);
	struct pts_input in = {t.buf, t.len, 0};
	struct pts_flow_rec recs[4];
	pts_flow_end(h);
	int n = pts_flow_next(h, &in, recs, 4);
	CHECK(n > 0);
	CHECK(pts_image_add_mem(img2, 0, callee2, sizeof(callee2), 0x1020) ==
	      0);
	bool saw_new = false;
	while ((n = pts_flow_next(h, &in, recs, 4)) > 0)
		for (int i = 0; i < n; i++)
			for (uint32_t k = 0; recs[i].kind == PTS_FLOW_INSNS &&
					     k < recs[i].n;
			     k++)
				saw_new |= recs[i].ips[k] == 0x1022;
	CHECK(saw_new);

	pts_flow_free(h);
	pts_flow_free(g);
	pts_flow_free(f);
	pts_image_free(img2);
	pts_image_free(img);
	runs_free(&rs);
	free(a.s), free(b.s), free(c.s);
}

/* A block cache of one byte is full after every block: flushed (blocks,
 * links, return links) at the start of every call. */
static void cache_flush(void)
{
	struct hand_trace t;
	loop_trace(&t, 30);
	struct pts_image *img = loop_image();
	struct pts_flow_config tiny = {0};
	tiny.cache_bytes = 1;
	struct pts_flow *f = pts_flow_new(NULL, img);
	struct pts_flow *g = pts_flow_new(&tiny, img);
	struct text a = {0}, b = {0};
	struct runs rs = {0};
	decode(f, &t, 64, false, &a, NULL);
	decode(g, &t, 3, false, &b, &rs);
	CHECK(strcmp(a.s, b.s) == 0);
	struct pts_flow_stats st;
	pts_flow_get_stats(g, &st);
	CHECK(st.cache_flushes > 10);
	pts_flow_free(g);
	pts_flow_free(f);
	pts_image_free(img);
	runs_free(&rs);
	free(a.s), free(b.s);
}

/* 32-bit code: 49 is DEC ECX here (a REX prefix in 64-bit code).
 *   1000 mov ecx, 3     1005 dec ecx     1006 jnz 1005
 *   1008 call 1010      100d jmp 1020    1010 ret
 *   1020 jmp eax (tracing stops: TIP.PGD)
 */
struct edges {
	struct pts_cov_edge v[64];
	size_t n;
};

static void collect(void *ctx, const struct pts_cov_edge *e, size_t n)
{
	struct edges *out = ctx;
	for (size_t i = 0; i < n && out->n < 64; i++)
		out->v[out->n++] = e[i];
}

static void cov_32bit(void)
{
	static const uint8_t code[] = {
		0xb9, 0x03, 0x00, 0x00, 0x00, /* 1000 mov ecx, 3 */
		0x49,                         /* 1005 dec ecx */
		0x75, 0xfd,                   /* 1006 jnz 1005 */
		0xe8, 0x03, 0x00, 0x00, 0x00, /* 1008 call 1010 */
		0xeb, 0x11,                   /* 100d jmp 1020 */
		0x90, 0xc3,                   /* 100f nop; 1010 ret */
	};
	static const uint8_t tail[] = {0xff, 0xe0}; /* 1020 jmp eax */
	struct pts_image *img = pts_image_new();
	CHECK(pts_image_add_mem(img, 0, code, sizeof(code), 0x1000) == 0);
	CHECK(pts_image_add_mem(img, 0, tail, sizeof(tail), 0x1020) == 0);
	/* The code at 100f: nop at 100f, ret at 1010. */
	struct hand_trace t;
	memset(&t, 0, sizeof(t));
	ht_psb(&t);
	ht_mode(&t, 0, 1); /* CS.L 0, CS.D 1: 32-bit */
	ht_put_kind(&t, PTS_PKT_PSBEND);
	ht_put_ip(&t, PTS_PKT_TIP_PGE, 0x1000);
	ht_tnt(&t, 0xd, 4); /* jnz 1 1 0, ret 1 */
	ht_put_ip(&t, PTS_PKT_TIP_PGD, 0);

	struct pts_cov_config cc = {0};
	cc.flags = PTS_COV_EDGES | PTS_COV_BITMAP;
	struct pts_cov *cov = NULL;
	CHECK_EQ(pts_cov_new(&cc, img, &cov), 0);
	struct edges got = {0};
	pts_cov_set_sink(cov, collect, &got);
	struct pts_flow *f = pts_flow_new(NULL, img);
	struct pts_cov_stats st[2];
	/* Twice through one walker and sink: runs found by their ids. */
	for (int round = 0; round < 2; round++) {
		struct pts_input in = {t.buf, t.len, 0};
		struct pts_flow_rec recs[32];
		int n;
		CHECK_EQ(pts_flow_reset(f), 0);
		got.n = 0;
		pts_flow_end(f);
		while ((n = pts_flow_next(f, &in, recs, 32)) > 0) {
			for (int i = 0; i < n; i++)
				if (recs[i].kind == PTS_FLOW_INSNS)
					CHECK_EQ(recs[i].mode, PTS_EXEC_32);
			CHECK_EQ(pts_cov_feed(cov, recs, n), 0);
		}
		pts_cov_end(cov);
		static const struct pts_cov_edge want[] = {
			{PTS_COV_OFF, 0x1000}, {0x1006, 0x1005},
			{0x1006, 0x1005},      {0x1006, 0x1008},
			{0x1008, 0x1010},      {0x1010, 0x100d},
			{0x100d, 0x1020},      {0x1020, PTS_COV_OFF},
		};
		size_t nwant = sizeof(want) / sizeof(want[0]);
		CHECK_EQ(got.n, nwant);
		for (size_t i = 0; i < nwant && i < got.n; i++) {
			if (got.v[i].src != want[i].src ||
			    got.v[i].dst != want[i].dst)
				FAIL("32-bit edge %zu: got %llx->%llx\n", i,
				     (unsigned long long)got.v[i].src,
				     (unsigned long long)got.v[i].dst);
		}
		pts_cov_get_stats(cov, &st[round]);
	}
	CHECK_EQ(st[1].runs, 2 * st[0].runs);
	CHECK_EQ(st[1].runs_built, st[0].runs_built);
	size_t size;
	const uint8_t *bm = pts_cov_bitmap(cov, &size);
	CHECK(bm[pts_cov_edge_hash(0x1006, 0x1005) & (size - 1)] >= 4);
	pts_flow_free(f);
	pts_cov_free(cov);
	pts_image_free(img);
}

int main(void)
{
	reset_and_ids();
	image_change();
	cache_flush();
	cov_32bit();
	return pts_check_exit();
}
