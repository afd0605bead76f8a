/* Differential test of the flow walker on synthesized traces of real
 * programs: `ptscope synth`'s walk over real ELFs (bash, libc), decoded by
 * libipt's instruction decoder (pt_insn) and by ptscope (fed in random
 * chunks). Both must give the same instruction addresses and the same
 * enabled/disabled/overflow events in the same places; neither may report
 * a decode error, with one exception below.
 *
 * Where libipt 2.0.5 is wrong: a conditional branch that leaves the IP
 * filter range gives TIP.PGD with no IP (SDM: the target follows from the
 * code; pt-sgx-facts 2.3). libipt binds a suppressed TIP.PGD only to far
 * branches and CPL/CR3 changes (pt_insn_at_disabled_event), so it errors
 * at the Jcc and resyncs at the next PSB; ptscope reports the disable
 * there. In the filter scenarios that pair ([error] against [disabled]
 * after a Jcc) is counted, and the comparison goes on where libipt
 * resumes.
 *
 * Each scenario sets the synthesizer's options for one feature: return
 * compression on and off (and compressible returns sent as TIP), async
 * events with and without ring 0, TNT-64, an IP filter range, overflows,
 * timing packets, and a storm of CBRs among PSB+ and overflows.
 *
 * usage: diff_flow_synth [INSNS [SEED [ELF...]]]
 *        (default 1000000 instructions, seed 1, bash and libc; exit 77
 *        when none of the ELFs exists)
 */
#include "flow_setup.h"
#include "flow_tokens.h"
#include "synth_run.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* timing: 1 timing packets, 2 the same with a CBR after almost every
 * instruction and a PSB every 512 bytes (PSB+ after PSB+ with no flow
 * packet between them). */
struct scenario {
	const char *name;
	uint8_t retcomp, user_only, long_tnt, filter, timing;
	uint32_t async_rate, ovf_rate, ret_nocomp_rate;
};

static const struct scenario scenarios[] = {
	/* name            rc us lt fl tm async ovf  nocomp */
	{"plain",           1, 0, 0, 0, 0,    0,   0,    0},
	{"no-retcomp",      0, 0, 0, 0, 0,    0,   0,    0},
	{"ret-as-tip",      1, 0, 0, 0, 0,    0,   0, 300000},
	{"async user-only", 1, 1, 0, 0, 0,  300,   0,    0},
	{"async OS=1 tnt64", 1, 0, 1, 0, 0, 300,   0,    0},
	{"ip-filter",       1, 0, 0, 1, 0,    0,   0,    0},
	{"ip-filter async", 0, 1, 0, 1, 0,  300,   0,    0},
	{"overflow",        1, 1, 0, 0, 0,    0, 100,    0},
	{"overflow OS=1",   0, 0, 1, 0, 0,  100, 100,    0},
	{"timing",          1, 0, 0, 0, 1,   50,   0,    0},
	{"cbr storm",       1, 1, 0, 0, 2,   50, 100,    0},
};

/* The middle half of the functions as one filter range (inclusive). */
static void filter_range(const struct pts_image *img, struct syn_options *o)
{
	const struct pts_symbol *syms;
	size_t n = pts_image_functions(img, 0, &syms);
	if (n < 8)
		return;
	o->n_addr = 1;
	o->addr_cfg[0] = PTS_ADDR_FILTER;
	o->addr_a[0] = syms[n / 4].addr;
	o->addr_b[0] = syms[3 * n / 4].addr - 1;
}

static void setup(const struct scenario *sc, const struct pts_image *img,
		  struct syn_options *o)
{
	o->retcomp = sc->retcomp;
	o->user_only = sc->user_only;
	o->long_tnt = sc->long_tnt;
	o->async_rate = sc->async_rate;
	o->ovf_rate = sc->ovf_rate;
	o->ret_nocomp_rate = sc->ret_nocomp_rate;
	if (sc->filter)
		filter_range(img, o);
	if (sc->timing) {
		o->tsc = o->mtc = o->cyc = 1;
		o->cyc_thresh = 2;
		o->freq_rate = sc->timing == 2 ? 900000 : 20;
		o->psb_period = sc->timing == 2 ? 512 : 2048;
	}
}

/* Whether @ip holds a conditional branch. */
static int is_jcc(struct pts_insn_classifier *cls, const struct pts_image *img,
		  uint64_t ip)
{
	struct pts_insn_info info;
	return pts_insn_decode(cls, img, 0, PTS_EXEC_64, ip, &info) > 0 &&
	       info.iclass == PTS_INSN_JCC;
}

/* Whether libipt's @a at @i and ptscope's @b at @j are the libipt
 * limitation described at the top: libipt's error where ptscope disables
 * after a conditional branch. */
static int jcc_pgd_at(struct pts_insn_classifier *cls,
		      const struct pts_image *img, const struct pts_toks *a,
		      size_t i, const struct pts_toks *b, size_t j)
{
	return i < a->n && j < b->n && j &&
	       a->v[i] == PTS_TOK_EVENT(PTS_TOK_ERROR) &&
	       b->v[j] == PTS_TOK_EVENT(PTS_TOK_DISABLED) &&
	       !PTS_TOK_IS_EVENT(b->v[j - 1]) && is_jcc(cls, img, b->v[j - 1]);
}

/* Where libipt resumed in ptscope's flow: the first place within
 * RESUME_WINDOW tokens that agrees for RESUME_MATCH tokens, to libipt's
 * end or to libipt's next error of the same kind, else the one that agrees
 * the longest. (libipt may stop again a few instructions after it resumes,
 * and the same few instructions may also occur earlier in ptscope's flow:
 * only the place where the next limitation follows is the right one.) */
#define RESUME_MATCH 65536
#define RESUME_WINDOW 200000

/* Compares libipt's @a with ptscope's @b, allowing (when @jcc_pgd) the
 * libipt limitation described at the top; *@skips counts its uses.
 * Returns 0 when equal. */
static int compare(const char *label, const struct pts_toks *a,
		   const struct pts_toks *b, const struct pts_image *img,
		   int jcc_pgd, size_t *skips)
{
	struct pts_insn_classifier *cls = pts_insn_classifier_new();
	struct pts_toks ra = {0}, rb = {0};
	size_t i = 0, j = 0;
	*skips = 0;
	while (jcc_pgd && i < a->n && j < b->n) {
		if (a->v[i] == b->v[j]) {
			i++, j++;
			continue;
		}
		if (!jcc_pgd_at(cls, img, a, i, b, j))
			break;
		/* libipt goes on at its next instruction: find the place in
		 * ptscope's flow from which RESUME_MATCH tokens agree. */
		size_t k = i + 1;
		while (k < a->n && PTS_TOK_IS_EVENT(a->v[k]))
			k++;
		if (k == a->n) {
			/* libipt found no PSB after it: its flow ends. */
			(*skips)++;
			i = a->n;
			j = b->n;
			break;
		}
		/* The candidate with the longest agreement wins (a loop
		 * repeats; its right iteration agrees the longest). */
		size_t m = b->n, best = 0;
		for (size_t c = j + 1; c < b->n && c < j + 1 + RESUME_WINDOW;
		     c++) {
			size_t l = 0;
			while (l < RESUME_MATCH && k + l < a->n &&
			       c + l < b->n && a->v[k + l] == b->v[c + l])
				l++;
			if (l > best) {
				best = l;
				m = c;
			}
			if (k + l == a->n || l == RESUME_MATCH ||
			    (l && jcc_pgd_at(cls, img, a, k + l, b, c + l))) {
				m = c;
				break;
			}
		}
		if (m == b->n)
			break;
		(*skips)++;
		i = k;
		j = m;
	}
	pts_insn_classifier_free(cls);
	/* The rest (or all of it) must be equal. */
	ra.v = a->v + i;
	ra.n = a->n - i;
	rb.v = b->v + j;
	rb.n = b->n - j;
	return pts_toks_compare(label, "libipt", &ra, "ptscope", &rb, 0);
}

static int libipt_image(struct pt_image *img, void *ctx)
{
	return pt_image_set_callback(img, pts_test_libipt_read, ctx);
}

/* Runs one scenario over @elf. Returns 0 when both decoders agree. */
static int run(const char *elf, const struct scenario *sc, uint64_t insns,
	       uint64_t seed)
{
	struct pts_image *img = pts_image_new();
	if (!img || pts_image_add_elf(img, 0, elf, 0) < 0) {
		fprintf(stderr, "%s: cannot load\n", elf);
		pts_image_free(img);
		return 1;
	}
	struct syn_options o;
	struct pts_config cfg;
	struct syn_sink sink;
	struct syn_emit_stats st;
	syn_options_default(&o);
	o.seed = seed;
	o.insns = insns;
	setup(sc, img, &o);
	pts_config_init(&cfg);
	syn_options_to_config(&o, &cfg);
	syn_sink_init(&sink, NULL);
	int err = syn_walk_to_memory(&o, &cfg, img, 0, &sink, NULL, NULL, &st);
	int bad = 1;
	if (err < 0) {
		fprintf(stderr, "%s: synthesis failed: %s\n", sc->name,
			pts_strerror(err));
	} else {
		struct pt_config pc;
		struct pts_toks lib = {.with_cbr = 1}, ours = {.with_cbr = 1};
		pts_test_libipt_config(&cfg.trace, sink.mem,
				       sink.mem + sink.mem_len, &pc);
		pts_toks_libipt(&pc, libipt_image, img, &lib);
		pts_toks_ptscope(img, NULL, sink.mem, sink.mem_len, seed, &ours);
		const char *dump = getenv("FLOW_SYNTH_DUMP"); /* FILE.pt */
		FILE *df = dump ? fopen(dump, "wb") : NULL;
		if (df) {
			fwrite(sink.mem, 1, sink.mem_len, df);
			fclose(df);
		}
		size_t errors = 0, events = 0, skips = 0, cbrs = 0;
		for (size_t i = 0; i < ours.n; i++) {
			errors += ours.v[i] == PTS_TOK_EVENT(PTS_TOK_ERROR);
			events += PTS_TOK_IS_EVENT(ours.v[i]);
			cbrs += PTS_TOK_IS_EVENT(ours.v[i]) &&
				(ours.v[i] & 0xf) == PTS_TOK_CBR;
		}
		bad = compare(sc->name, &lib, &ours, img, sc->filter, &skips);
		for (size_t i = 0; i < lib.n; i++)
			errors += lib.v[i] == PTS_TOK_EVENT(PTS_TOK_ERROR);
		/* the timing scenario changes the core clock: CBR events
		 * are compared too */
		bad |= errors != skips || !ours.insns || (sc->timing && !cbrs);
		printf("%-10s %-17s %8" PRIu64 " insns %9zu bytes %6zu events "
		       "(%" PRIu64 " PGD, %" PRIu64 " OVF, %zu CBR), "
		       "%zu errors, %zu libipt Jcc/PGD errors: %s\n",
		       strrchr(elf, '/') ? strrchr(elf, '/') + 1 : elf, sc->name,
		       ours.insns, sink.mem_len, events, (uint64_t)st.pgds,
		       (uint64_t)st.ovfs, cbrs, errors - skips, skips,
		       bad ? "MISMATCH" : "ok");
		pts_toks_free(&lib);
		pts_toks_free(&ours);
	}
	free(sink.mem);
	pts_config_fini(&cfg);
	pts_image_free(img);
	return bad;
}

int main(int argc, char **argv)
{
	uint64_t insns = argc > 1 ? strtoull(argv[1], NULL, 0) : 1000000;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
	static const char *const defaults[] = {
		"/usr/bin/bash", "/lib/x86_64-linux-gnu/libc.so.6"};
	const char *const *elves = argc > 3 ? (const char *const *)argv + 3
					    : defaults;
	int nelves = argc > 3 ? argc - 3 : 2;
	int failures = 0, ran = 0;
	for (int e = 0; e < nelves; e++) {
		if (access(elves[e], R_OK) != 0) {
			fprintf(stderr, "no %s: skipped\n", elves[e]);
			continue;
		}
		const char *only = getenv("FLOW_SYNTH_ONLY"); /* a name */
		for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]);
		     i++) {
			if (only && strcmp(only, scenarios[i].name) != 0)
				continue;
			failures += run(elves[e], &scenarios[i], insns,
					seed + i);
			ran++;
		}
	}
	if (!ran)
		return 77;
	return failures ? 1 : 0;
}
