/* Fuzz target for the windows model fed by the packet decoder.
 *
 * Input layout: byte 0 options (bits 1:0 ring: unknown config, user-only,
 * kernel-only, both; bit 2 an IP filter range; bit 3 CR3 filter; bit 4 a
 * production enclave map; bit 5 MTC timing config; bit 6 the skimming
 * run's rules off), byte 1 chunk seed,
 * byte 2 largest chunk - 1, then the trace (decoded from its first PSB).
 * Shorter inputs are all trace with nothing configured.
 *
 * Invariants (abort on violation):
 * - the model never reports an error (its queue never overflows);
 * - windows and gaps tile the stream: each begins where the one before
 *   ended, none ends before it begins, the last ends at the trace's end;
 * - no two windows follow each other (a gap is between);
 * - causes, bases, rules and edges are in range; a needs-images gap lists
 *   two or more candidates, any other none;
 * - the summary counts what the records say;
 * - fed as `ptscope windows` feeds it (pts_pkt_skim_batch() with the
 *   model's actions, pts_win_feed_skipped()), the model gives the same
 *   records; with its rules off (pts_win_set_verify(), as `windows`
 *   without --verify), the same windows and gaps and no violation.
 */
#include "fuzz_target.h"

#include "feed.h"
#include "win_compare.h"

#include <ptscope/windows.h>

#include <stdlib.h>
#include <string.h>

enum { HEADER = 3 };

static struct pts_enclave encl = {
	.begin = 0x7f0000000000ull,
	.end = 0x7f0000100000ull,
	.aep = 0x401100,
	.has_aep = 1,
	.kind = PTS_ENCLAVE_PRODUCTION,
	.name = "fuzz",
};

static void make_config(uint8_t opt, struct pts_trace_config *cfg)
{
	static const uint64_t rings[4] = {0, PTS_CTL_USER, PTS_CTL_OS,
					  PTS_CTL_USER | PTS_CTL_OS};

	memset(cfg, 0, sizeof(*cfg));
	if (opt & 3) {
		cfg->known = PTS_CFG_CTL;
		cfg->ctl = PTS_CTL_TRACEEN | PTS_CTL_BRANCHEN | rings[opt & 3];
	}
	if (opt & 4)
		pts_config_add_range(cfg, "0x400000-0x4fffff", PTS_ADDR_FILTER);
	if ((opt & 8) && (cfg->known & PTS_CFG_CTL)) {
		cfg->ctl |= PTS_CTL_CR3FILTER;
		cfg->cr3_match = 0x1000;
		cfg->known |= PTS_CFG_CR3;
	}
	if (opt & 16) {
		cfg->enclaves = &encl;
		cfg->n_enclaves = 1;
	}
	if (opt & 32) {
		cfg->known |= PTS_CFG_CPUID15 | PTS_CFG_MTCFREQ | PTS_CFG_NOMFREQ;
		cfg->cpuid_15_eax = 2;
		cfg->cpuid_15_ebx = 200;
		cfg->mtc_freq = 3;
		cfg->nom_freq = 24;
	}
}

struct tiling {
	int have_prev;
	uint8_t prev_type;
	uint64_t prev_end;
	uint64_t windows, gaps[PTS_GAP_CAUSE_COUNT], rules[PTS_RULE_COUNT];
};

static int popcount(uint32_t v)
{
	int n = 0;

	for (; v; v &= v - 1)
		n++;
	return n;
}

static void check_record(struct tiling *t, const struct pts_win_record *r)
{
	REQUIRE(r->type <= PTS_REC_VIOLATION);
	if (r->type == PTS_REC_VIOLATION) {
		REQUIRE(r->rule < PTS_RULE_COUNT);
		t->rules[r->rule]++;
		return;
	}
	REQUIRE(r->begin.edge < PTS_EDGE_COUNT && r->end.edge < PTS_EDGE_COUNT);
	REQUIRE(r->begin.offset <= r->end.offset);
	if (t->have_prev) {
		REQUIRE(r->begin.offset == t->prev_end);
		REQUIRE(!(r->type == PTS_REC_WINDOW &&
			  t->prev_type == PTS_REC_WINDOW));
	}
	if (r->type == PTS_REC_WINDOW) {
		t->windows++;
	} else {
		REQUIRE(r->cause < PTS_GAP_CAUSE_COUNT);
		REQUIRE(r->basis <= PTS_BASIS_NONE);
		REQUIRE(r->entry <= PTS_ENCL_UNKNOWN && r->exit <= PTS_ENCL_UNKNOWN);
		if (r->cause == PTS_GAP_NEEDS_IMAGES)
			REQUIRE(popcount(r->candidates) >= 2);
		else
			REQUIRE(r->candidates == 0);
		t->gaps[r->cause]++;
	}
	t->have_prev = 1;
	t->prev_type = r->type;
	t->prev_end = r->end.offset;
}

/* Every record of the model fed packet by packet, for the skimming run to
 * give again. */
struct records {
	struct pts_win_record *rec;
	size_t n, cap;
};

static void drain(struct pts_win_model *m, int err, struct tiling *t,
		  struct records *keep)
{
	struct pts_win_record rec;

	REQUIRE(err >= 0);
	while (pts_win_next(m, &rec) == 1) {
		check_record(t, &rec);
		if (keep->n == keep->cap) {
			keep->cap = keep->cap ? 2 * keep->cap : 64;
			keep->rec = realloc(keep->rec,
					    keep->cap * sizeof(*keep->rec));
			REQUIRE(keep->rec != NULL);
		}
		keep->rec[keep->n++] = rec;
	}
}

/* Moves *@at past @want's violations when the rules are off (!@verify). */
static void pass_violations(const struct records *want, size_t *at,
			    int verify)
{
	while (!verify && *at < want->n &&
	       want->rec[*at].type == PTS_REC_VIOLATION)
		++*at;
}

/* The next records of the skimming run's model must be @want's next (but
 * for violations when its rules are off). */
static void drain_same(struct pts_win_model *m, int err,
		       const struct records *want, size_t *at, int verify)
{
	struct pts_win_record rec;

	REQUIRE(err >= 0);
	while (pts_win_next(m, &rec) == 1) {
		pass_violations(want, at, verify);
		REQUIRE(*at < want->n);
		REQUIRE(pts_test_same_record(&rec, &want->rec[(*at)++]));
	}
}

/* The trace fed as `ptscope windows` feeds it: pts_pkt_skim_batch() with
 * the model's actions (pts_pkt_next_batch() where it has none), batches
 * and chunks the seed picks, the rules on or off (@verify). The records
 * must be @want's (its windows and gaps, with the rules off). */
static void check_skimming(const struct pts_trace_config *cfg,
			   const uint8_t *data, size_t size,
			   struct pts_chunker *chunker,
			   const struct records *want, int verify)
{
	static struct pts_packet pkts[128];
	struct pts_win_model *m = pts_win_new(cfg);
	struct pts_pkt_decoder *dec = pts_pkt_decoder_new(NULL);
	struct pts_input in = {data, 0, 0};
	size_t fed = 0, at = 0;

	REQUIRE(m && dec);
	pts_win_set_verify(m, verify);
	for (size_t guard = 0; guard <= 4 * size + 16; guard++) {
		struct pts_skim_call clock;
		const uint8_t *actions = pts_win_skim_actions(m, &clock);
		const int max = 1 + (int)pts_rng_below(&chunker->rng, 128);
		struct pts_skim sum = {0};
		const int n = actions ? pts_pkt_skim_batch(dec, &in, actions,
							   pkts, max, &sum,
							   &clock)
				      : pts_pkt_next_batch(dec, &in, pkts, max);
		uint64_t begin, end;

		REQUIRE(pts_win_feed_skipped(m, &sum) == 0);
		for (int j = 0; j < n;) {
			const int got = pts_win_feed_batch(m, pkts + j, n - j);

			REQUIRE(got > 0);
			j += got;
			drain_same(m, 0, want, &at, verify);
		}
		if (n > 0)
			continue;
		if (n == -PTS_ERR_AGAIN) {
			size_t k = pts_chunker_next(chunker, size - fed);

			if (fed == size) {
				pts_pkt_end(dec);
				continue;
			}
			in.data = data + fed;
			in.size = k < 1 ? 1 : k > size - fed ? size - fed : k;
			in.pos = 0;
			fed += in.size;
			continue;
		}
		REQUIRE(n != -PTS_ERR_NO_PROGRESS && n != -PTS_ERR_INTERNAL);
		if (n == -PTS_ERR_EOS)
			break;
		pts_pkt_error_range(dec, &begin, &end);
		drain_same(m,
			   pts_win_lost(m,
					n == -PTS_ERR_TRUNCATED
						? PTS_GAP_TRUNCATED
						: PTS_GAP_DECODE_ERROR,
					begin, end),
			   want, &at, verify);
		if (n == -PTS_ERR_TRUNCATED)
			break;
	}
	drain_same(m, pts_win_end(m, size), want, &at, verify);
	pass_violations(want, &at, verify);
	REQUIRE(at == want->n);
	pts_pkt_decoder_free(dec);
	pts_win_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pts_trace_config cfg;
	struct pts_chunker chunker = {.max = 16};
	struct pts_feed_opts opts = {.chunk = pts_chunker_next,
				     .chunk_ctx = &chunker};
	struct pts_win_summary sum;
	struct pts_win_model *m;
	struct pts_feed *feed;
	struct pts_event ev;
	struct tiling t;
	struct records recs = {0};
	uint8_t opt = 0;
	int st;

	if (size >= HEADER) {
		opt = data[0];
		pts_rng_seed(&chunker.rng, data[1]);
		chunker.max = (size_t)data[2] + 1;
		data += HEADER;
		size -= HEADER;
	} else {
		pts_rng_seed(&chunker.rng, 1);
	}
	make_config(opt, &cfg);
	memset(&t, 0, sizeof(t));
	m = pts_win_new(&cfg);
	feed = pts_feed_new(data, size, &opts);
	REQUIRE(m && feed);
	while ((st = pts_feed_next(feed, &ev)) != -PTS_ERR_EOS) {
		REQUIRE(st != -PTS_ERR_NO_PROGRESS && st != -PTS_ERR_INTERNAL);
		if (st > 0)
			drain(m, pts_win_feed(m, &ev.pkt), &t, &recs);
		else
			drain(m,
			      pts_win_lost(m,
					   st == -PTS_ERR_TRUNCATED
						   ? PTS_GAP_TRUNCATED
						   : PTS_GAP_DECODE_ERROR,
					   ev.begin, ev.end),
			      &t, &recs);
		if (st == -PTS_ERR_TRUNCATED)
			break;
	}
	drain(m, pts_win_end(m, size), &t, &recs);
	if (t.have_prev)
		REQUIRE(t.prev_end == size);
	REQUIRE(pts_win_summary(m, &sum) == 0);
	REQUIRE(sum.windows == t.windows);
	for (int c = 0; c < PTS_GAP_CAUSE_COUNT; c++)
		REQUIRE(sum.gaps[c] == t.gaps[c]);
	for (int r = 0; r < PTS_RULE_COUNT; r++)
		REQUIRE(sum.violations[r] == t.rules[r]);
	pts_feed_free(feed);
	pts_win_free(m);
	check_skimming(&cfg, data, size, &chunker, &recs, !(opt & 64));
	free(recs.rec);
	return 0;
}
