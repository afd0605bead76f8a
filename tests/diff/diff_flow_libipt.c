/* Differential test of the flow walker: generated programs and traces
 * (flow_gen.c) decoded by libipt's instruction decoder (pt_insn) and by
 * ptscope (fed in random chunks). Both must give the generator's visible
 * flow, and the same enabled/disabled/overflow events at the same places.
 *
 * usage: diff_flow_libipt [INSNS [SEED]]   (default 200000, 1)
 */
#include "flow_gen.h"
#include "flow_tokens.h"

#include <ptscope/decoder.h>

#include <intel-pt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int libipt_image(struct pt_image *img, void *ctx)
{
	return pt_image_set_callback(img, read_code, ctx);
}

static void run_libipt(struct flow_gen *g, struct pts_toks *t)
{
	struct pt_config cfg;
	pt_config_init(&cfg);
	cfg.begin = g->trace;
	cfg.end = g->trace + g->trace_size;
	pts_toks_libipt(&cfg, libipt_image, g, t);
}

static void run_ptscope(struct flow_gen *g, uint64_t seed, struct pts_toks *t)
{
	struct pts_image *img = pts_image_new();
	pts_image_add_mem(img, 0, g->code, g->code_size, g->base);
	pts_toks_ptscope(img, NULL, g->trace, g->trace_size, seed, t);
	pts_image_free(img);
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
	int failures = 0;
	for (unsigned c = 0; c < FLOW_GEN_CASES; c++) {
		struct flow_gen_opts o = {0};
		o.seed = seed * 1000 + c;
		o.insns = insns;
		o.functions = 150;
		const char *name = flow_gen_case(c, &o);
		o.keep_truth = 1;
		struct flow_gen g;
		if (flow_gen_run(&o, &g) < 0) {
			fprintf(stderr, "%s: generator failed\n", name);
			return 2;
		}
		dump(name, &g);
		struct pts_toks truth = {0}, lib = {.with_cbr = 1},
				ours = {.with_cbr = 1};
		for (size_t k = 0; k < g.ntruth; k++)
			pts_toks_add(&truth, g.truth[k]);
		run_libipt(&g, &lib);
		run_ptscope(&g, o.seed, &ours);
		int bad = pts_toks_compare(name, "truth", &truth,
					   "ptscope", &ours, 1);
		bad |= pts_toks_compare(name, "libipt", &lib, "ptscope",
					&ours, 0);
		if (pts_toks_compare(name, "truth", &truth, "libipt",
				     &lib, 1))
			fprintf(stderr, "  (libipt differs from the generator)\n");
		printf("%-14s %9zu insns truth, %9" PRIu64 " libipt, %9" PRIu64
		       " ptscope, %6zu trace bytes, %s\n", name, g.ntruth,
		       lib.insns, ours.insns, g.trace_size, bad ? "MISMATCH" : "ok");
		failures += bad;
		pts_toks_free(&truth);
		pts_toks_free(&lib);
		pts_toks_free(&ours);
		flow_gen_free(&g);
	}
	return failures ? 1 : 0;
}
