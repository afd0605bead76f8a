/* Differential test of the flow walker: generated programs and traces
 * (flow_gen.c) decoded by libipt's instruction decoder (pt_insn) and by
 * ptscope (fed in random chunks). Both must give the generator's visible
 * flow, and the same enabled/disabled/overflow events at the same places.
 *
 * usage: diff_flow_libipt [INSNS [SEED]]   (default 200000, 1)
 */
#include "flow_gen.h"
#include "rng.h"

#include <ptscope/decoder.h>

#include <intel-pt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The decoded flow as tokens: an instruction address, or an event marker. */
#define EV_TOKEN(e) (0xfff0000000000000ull | (uint64_t)(e))
enum { TOK_ENABLED = 1, TOK_DISABLED, TOK_OVERFLOW, TOK_ERROR };

struct toks {
	uint64_t *v;
	size_t n, cap;
	uint64_t insns;
};

static void tok(struct toks *t, uint64_t x)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 1 << 16;
		t->v = realloc(t->v, t->cap * sizeof(*t->v));
		if (!t->v) {
			fprintf(stderr, "out of memory\n");
			exit(2);
		}
	}
	t->v[t->n++] = x;
}

static int read_code(uint8_t *buf, size_t size, const struct pt_asid *asid,
		     uint64_t ip, void *ctx)
{
	(void)asid;
	const struct flow_gen *g = ctx;
	if (ip < g->base || ip >= g->base + g->code_size)
		return -pte_nomap;
	size_t n = (size_t)(g->base + g->code_size - ip);
	if (n > size)
		n = size;
	memcpy(buf, g->code + (ip - g->base), n);
	return (int)n;
}

static int libipt_events(struct pt_insn_decoder *d, int status,
			 struct toks *t)
{
	while (status & pts_event_pending) {
		struct pt_event ev;
		status = pt_insn_event(d, &ev, sizeof(ev));
		if (status < 0)
			return status;
		if (ev.status_update)
			continue;
		if (ev.type == ptev_enabled)
			tok(t, EV_TOKEN(TOK_ENABLED));
		else if (ev.type == ptev_disabled || ev.type == ptev_async_disabled)
			tok(t, EV_TOKEN(TOK_DISABLED));
		else if (ev.type == ptev_overflow)
			tok(t, EV_TOKEN(TOK_OVERFLOW));
	}
	return status;
}

static void run_libipt(struct flow_gen *g, struct toks *t)
{
	struct pt_config cfg;
	pt_config_init(&cfg);
	cfg.begin = g->trace;
	cfg.end = g->trace + g->trace_size;
	struct pt_insn_decoder *d = pt_insn_alloc_decoder(&cfg);
	struct pt_image *img = pt_insn_get_image(d);
	pt_image_set_callback(img, read_code, g);
	for (;;) {
		int status = pt_insn_sync_forward(d);
		if (status < 0)
			break;
		for (;;) {
			status = libipt_events(d, status, t);
			if (status < 0 || (status & pts_eos))
				break;
			struct pt_insn insn;
			status = pt_insn_next(d, &insn, sizeof(insn));
			if (status < 0) {
				/* As ptxed: the instruction may be complete. */
				if (insn.iclass != ptic_error) {
					tok(t, insn.ip);
					t->insns++;
				}
				break;
			}
			tok(t, insn.ip);
			t->insns++;
		}
		if (status == -pte_eos || (status >= 0 && (status & pts_eos)))
			break;
		tok(t, EV_TOKEN(TOK_ERROR));
		if (getenv("FLOW_GEN_DUMP")) {
			uint64_t off = 0;
			pt_insn_get_offset(d, &off);
			fprintf(stderr, "libipt error at %" PRIx64 ": %s\n", off,
				pt_errstr(pt_errcode(status)));
		}
	}
	pt_insn_free_decoder(d);
}

static void run_ptscope(struct flow_gen *g, uint64_t seed, struct toks *t)
{
	struct pts_image *img = pts_image_new();
	pts_image_add_mem(img, 0, g->code, g->code_size, g->base);
	struct pts_flow *f = pts_flow_new(NULL, img);
	struct pts_rng rng;
	pts_rng_seed(&rng, seed);
	struct pts_flow_rec recs[64];
	size_t pos = 0;
	struct pts_input in = {NULL, 0, 0};
	for (;;) {
		int n = pts_flow_next(f, &in, recs, 1 + (int)pts_rng_below(&rng, 64));
		if (n == -PTS_ERR_AGAIN) {
			if (pos == g->trace_size) {
				pts_flow_end(f);
				continue;
			}
			size_t len = 1 + pts_rng_below(&rng, 4096);
			if (len > g->trace_size - pos)
				len = g->trace_size - pos;
			in = (struct pts_input){g->trace + pos, len, 0};
			pos += len;
			continue;
		}
		if (n < 0)
			break;
		for (int i = 0; i < n; i++) {
			const struct pts_flow_rec *r = &recs[i];
			if (r->kind == PTS_FLOW_INSNS) {
				for (uint32_t k = 0; k < r->n; k++)
					tok(t, r->ips[k]);
				t->insns += r->n;
			} else if (r->kind == PTS_FLOW_ERROR) {
				tok(t, EV_TOKEN(TOK_ERROR));
			} else if (!(r->flags & PTS_EV_F_STATUS)) {
				if (r->type == PTS_EV_ENABLED)
					tok(t, EV_TOKEN(TOK_ENABLED));
				else if (r->type == PTS_EV_DISABLED ||
					 r->type == PTS_EV_ASYNC_DISABLED)
					tok(t, EV_TOKEN(TOK_DISABLED));
				else if (r->type == PTS_EV_OVERFLOW)
					tok(t, EV_TOKEN(TOK_OVERFLOW));
			}
		}
	}
	pts_flow_free(f);
	pts_image_free(img);
}

static void show(const char *what, const struct toks *t, size_t at)
{
	fprintf(stderr, "  %s:", what);
	for (size_t k = at > 3 ? at - 3 : 0; k < t->n && k < at + 4; k++) {
		if ((t->v[k] >> 52) == 0xfff)
			fprintf(stderr, " [%s]", (const char *[]){"?", "enabled",
				"disabled", "overflow", "error"}[t->v[k] & 7]);
		else
			fprintf(stderr, " %" PRIx64, t->v[k]);
		if (k == at)
			fprintf(stderr, "<");
	}
	fprintf(stderr, "\n");
}

/* Compares token streams; with @insns_only events are skipped. */
static int compare(const char *label, const char *a_name, const struct toks *a,
		   const char *b_name, const struct toks *b, int insns_only)
{
	size_t i = 0, j = 0;
	for (;;) {
		if (insns_only) {
			while (i < a->n && (a->v[i] >> 52) == 0xfff)
				i++;
			while (j < b->n && (b->v[j] >> 52) == 0xfff)
				j++;
		}
		if (i == a->n && j == b->n)
			return 0;
		if (i == a->n || j == b->n || a->v[i] != b->v[j]) {
			fprintf(stderr, "%s: %s and %s differ at %zu/%zu\n", label,
				a_name, b_name, i, j);
			show(a_name, a, i);
			show(b_name, b, j);
			return 1;
		}
		i++;
		j++;
	}
}

/* With FLOW_GEN_DUMP=DIR set, writes DIR/NAME.pt and DIR/NAME.bin (code
 * at 0x400000) for a look with `ptscope dump` and `ptscope flow --raw`. */
static void dump(const char *name, const struct flow_gen *g)
{
	const char *dir = getenv("FLOW_GEN_DUMP");
	if (!dir)
		return;
	char path[4096];
	const struct { const char *ext; const uint8_t *p; size_t n; } files[] = {
		{"pt", g->trace, g->trace_size}, {"bin", g->code, g->code_size}};
	for (int k = 0; k < 2; k++) {
		snprintf(path, sizeof(path), "%s/%s.%s", dir, name, files[k].ext);
		FILE *f = fopen(path, "wb");
		if (f) {
			fwrite(files[k].p, 1, files[k].n, f);
			fclose(f);
		}
	}
}

int main(int argc, char **argv)
{
	uint64_t insns = argc > 1 ? strtoull(argv[1], NULL, 0) : 200000;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
	static const struct {
		const char *name;
		int retcomp, deferred;
		unsigned async, syscall, ovf;
	} cfgs[] = {
		{"plain", 0, 0, 0, 0, 0},
		{"retcomp", 1, 0, 0, 0, 0},
		{"deferred", 1, 1, 0, 0, 0},
		{"async", 1, 0, 5, 0, 0},
		{"syscall", 1, 0, 0, 30, 0},
		{"overflow", 1, 0, 0, 0, 200},
		{"all", 1, 1, 3, 20, 100},
		{"all-noretcomp", 0, 1, 3, 20, 100},
	};
	int failures = 0;
	for (size_t c = 0; c < sizeof(cfgs) / sizeof(cfgs[0]); c++) {
		struct flow_gen_opts o = {0};
		o.seed = seed * 1000 + c;
		o.insns = insns;
		o.functions = 150;
		o.retcomp = cfgs[c].retcomp;
		o.deferred_tips = cfgs[c].deferred;
		o.async_per_mille = cfgs[c].async;
		o.syscall_per_mille = cfgs[c].syscall;
		o.ovf_per_million = cfgs[c].ovf;
		o.keep_truth = 1;
		struct flow_gen g;
		if (flow_gen_run(&o, &g) < 0) {
			fprintf(stderr, "%s: generator failed\n", cfgs[c].name);
			return 2;
		}
		dump(cfgs[c].name, &g);
		struct toks truth = {0}, lib = {0}, ours = {0};
		for (size_t k = 0; k < g.ntruth; k++)
			tok(&truth, g.truth[k]);
		run_libipt(&g, &lib);
		run_ptscope(&g, o.seed, &ours);
		int bad = compare(cfgs[c].name, "truth", &truth, "ptscope", &ours, 1);
		bad |= compare(cfgs[c].name, "libipt", &lib, "ptscope", &ours, 0);
		if (compare(cfgs[c].name, "truth", &truth, "libipt", &lib, 1))
			fprintf(stderr, "  (libipt differs from the generator)\n");
		printf("%-14s %9zu insns truth, %9" PRIu64 " libipt, %9" PRIu64
		       " ptscope, %6zu trace bytes, %s\n", cfgs[c].name, g.ntruth,
		       lib.insns, ours.insns, g.trace_size, bad ? "MISMATCH" : "ok");
		failures += bad;
		free(truth.v);
		free(lib.v);
		free(ours.v);
		flow_gen_free(&g);
	}
	return failures ? 1 : 0;
}
