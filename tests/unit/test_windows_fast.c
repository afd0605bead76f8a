/* The windows model's fast path (model/windows_fast.c) against the full
 * state machine: random packet streams from libipt's encoder, whole and
 * with bytes broken, decoded once, then fed to two models, one through
 * pts_win_feed_batch() in batches of random sizes (the fast path), one
 * packet by packet with the fast path off. Every record (windows, gaps,
 * violations) and the summary must be the same, field by field, under
 * each configuration that changes what the fast path may do: nothing
 * known, a ring, timing (the clock moves in fast runs), a production
 * enclave (TIPs are checked for leaks), a debug enclave (FUP + TIP pairs),
 * the CR3 filter (the PIP before a disable). A third model is fed as
 * `ptscope windows` feeds it, from pts_pkt_skim_batch() (the packets that
 * only add to counts summed up, not stored): the same again.
 *
 * usage: test_windows_fast [SEED]   (default: a fixed one)
 */
#include "check.h"
#include "feed.h"
#include "stream_gen.h"
#include "win_compare.h"
#include "windows_internal.h"

#include <stdlib.h>
#include <string.h>

enum { STREAM_BYTES = 48 << 10, MAX_EVENTS = STREAM_BYTES + 64 };

/* What the decoder said, in order: a packet or lost bytes. */
struct step {
	int lost; /* 0: packet; else the cause of the lost bytes */
	struct pts_packet pkt;
	uint64_t begin, end;
};

static struct step steps[MAX_EVENTS];

/* Decodes @buf into steps[] as the windows report does (windows_report.c:
 * an error or skip is a decode-error gap, a cut last packet truncated).
 * Returns the count, or -1 when the decoder misbehaved. */
static int decode(const uint8_t *buf, size_t len, struct pts_rng *rng,
		  uint64_t *end)
{
	struct pts_chunker chunker = {*rng, 4096};
	struct pts_feed_opts opts = {.batch = 64,
				     .chunk = pts_chunker_next,
				     .chunk_ctx = &chunker};
	struct pts_feed *feed = pts_feed_new(buf, len, &opts);
	struct pts_event ev;
	int n = 0, st;

	if (!feed)
		return -1;
	while ((st = pts_feed_next(feed, &ev)) != -PTS_ERR_EOS && n < MAX_EVENTS) {
		if (st == -PTS_ERR_NO_PROGRESS || st == -PTS_ERR_INTERNAL) {
			pts_feed_free(feed);
			return -1;
		}
		memset(&steps[n], 0, sizeof(steps[n]));
		if (st > 0) {
			steps[n].pkt = ev.pkt;
		} else {
			steps[n].lost = st == -PTS_ERR_TRUNCATED
						? PTS_GAP_TRUNCATED
						: PTS_GAP_DECODE_ERROR;
			steps[n].begin = ev.begin;
			steps[n].end = ev.end;
		}
		n++;
		if (st == -PTS_ERR_TRUNCATED)
			break;
	}
	*end = len;
	pts_feed_free(feed);
	return n;
}

struct records {
	struct pts_win_record *rec;
	size_t n, cap;
	int err;
};

static void take(struct pts_win_model *m, int ret, struct records *r)
{
	struct pts_win_record rec;

	if (ret < 0 && !r->err)
		r->err = ret;
	while (pts_win_next(m, &rec) == 1) {
		if (r->n == r->cap) {
			r->cap = r->cap ? 2 * r->cap : 256;
			r->rec = realloc(r->rec, r->cap * sizeof(*r->rec));
			if (!r->rec)
				abort();
		}
		r->rec[r->n++] = rec;
	}
}

/* Runs steps[0, n) through a model; @fast: batches of random sizes
 * through pts_win_feed_batch(), else one by one with the fast path off. */
static void run(const struct pts_trace_config *cfg, int n, uint64_t end,
		int fast, struct pts_rng *rng, struct records *r,
		struct pts_win_summary *sum)
{
	struct pts_win_model *m = pts_win_new(cfg);
	static struct pts_packet batch[300];

	if (!m)
		abort();
	pts_win_set_fast(m, fast);
	for (int i = 0; i < n;) {
		if (steps[i].lost) {
			take(m, pts_win_lost(m, steps[i].lost, steps[i].begin,
					     steps[i].end),
			     r);
			i++;
			continue;
		}
		if (!fast) {
			take(m, pts_win_feed(m, &steps[i++].pkt), r);
			continue;
		}
		int k = 0, want = 1 + (int)pts_rng_below(rng, 300);

		while (i < n && k < want && !steps[i].lost)
			batch[k++] = steps[i++].pkt;
		for (int j = 0; j < k;) {
			int got = pts_win_feed_batch(m, batch + j, k - j);

			if (got <= 0) {
				take(m, got < 0 ? got : -PTS_ERR_INTERNAL, r);
				break;
			}
			j += got;
			take(m, 0, r);
		}
	}
	take(m, pts_win_end(m, end), r);
	pts_win_summary(m, sum);
	pts_win_free(m);
}

/* Feeds pts_win_feed_batch() @pkts[0, n), draining records into @r. */
static void feed_all(struct pts_win_model *m, const struct pts_packet *pkts,
		     int n, struct records *r)
{
	for (int j = 0; j < n;) {
		int got = pts_win_feed_batch(m, pkts + j, n - j);

		if (got <= 0) {
			take(m, got < 0 ? got : -PTS_ERR_INTERNAL, r);
			break;
		}
		j += got;
		take(m, 0, r);
	}
}

/* Runs @buf through the decoder and a model as `ptscope windows` does:
 * pts_pkt_skim_batch() with the model's actions (batches of random
 * sizes, chunks of random sizes), pts_pkt_next_batch() where it has none,
 * errors as lost bytes. */
static void run_skim(const struct pts_trace_config *cfg, const uint8_t *buf,
		     size_t len, struct pts_rng *rng, struct records *r,
		     struct pts_win_summary *sum)
{
	struct pts_win_model *m = pts_win_new(cfg);
	struct pts_pkt_decoder *dec = pts_pkt_decoder_new(NULL);
	struct pts_input in = {buf, 0, 0};
	static struct pts_packet batch[300];
	size_t fed = 0;

	if (!m || !dec)
		abort();
	for (int guard = 0; guard < 1 << 22; guard++) {
		struct pts_skim_call clock;
		const uint8_t *actions = pts_win_skim_actions(m, &clock);
		const int max = 1 + (int)pts_rng_below(rng, 300);
		struct pts_skim skipped = {0};
		const int n = actions ? pts_pkt_skim_batch(dec, &in, actions,
							   batch, max, &skipped,
							   &clock)
				      : pts_pkt_next_batch(dec, &in, batch, max);
		uint64_t begin, end;

		if (skipped.packets)
			CHECK(pts_win_feed_skipped(m, &skipped) == 0);
		if (n > 0) {
			feed_all(m, batch, n, r);
			continue;
		}
		if (n == -PTS_ERR_AGAIN) {
			size_t k = 1 + (size_t)pts_rng_below(rng, 4096);

			if (fed == len) {
				pts_pkt_end(dec);
				continue;
			}
			in.data = buf + fed;
			in.size = k < len - fed ? k : len - fed;
			in.pos = 0;
			fed += in.size;
			continue;
		}
		if (n == -PTS_ERR_EOS || n == -PTS_ERR_NO_PROGRESS)
			break;
		pts_pkt_error_range(dec, &begin, &end);
		take(m, pts_win_lost(m, n == -PTS_ERR_TRUNCATED
						? PTS_GAP_TRUNCATED
						: PTS_GAP_DECODE_ERROR,
				     begin, end),
		     r);
		if (n == -PTS_ERR_TRUNCATED)
			break;
	}
	take(m, pts_win_end(m, len), r);
	pts_win_summary(m, sum);
	pts_win_free(m);
	pts_pkt_decoder_free(dec);
}

static void show(const char *who, const struct pts_win_record *r)
{
	fprintf(stderr,
		"  %s: type %u cause %u rule %u [%llx %u %llx t%llu] -> [%llx "
		"%u %llx t%llu] packets %llu tnt %llu tips %llu '%s'\n",
		who, r->type, r->cause, r->rule,
		(unsigned long long)r->begin.offset, r->begin.edge,
		(unsigned long long)r->begin.ip,
		(unsigned long long)r->begin.tsc,
		(unsigned long long)r->end.offset, r->end.edge,
		(unsigned long long)r->end.ip, (unsigned long long)r->end.tsc,
		(unsigned long long)r->packets,
		(unsigned long long)r->tnt_bits, (unsigned long long)r->tips,
		r->detail);
}

/* Returns the number of timed windows (to see that the clock was used). */
static int compare(const char *what, const struct records *fast,
		   const struct records *full,
		   const struct pts_win_summary *sf,
		   const struct pts_win_summary *sl)
{
	int timed = 0;

	CHECKF(fast->err == 0 && full->err == 0, "%s: model errors %d %d",
	       what, fast->err, full->err);
	CHECKF(fast->n == full->n, "%s: %zu records fast, %zu full", what,
	       fast->n, full->n);
	for (size_t i = 0; i < fast->n && i < full->n; i++) {
		if (!pts_test_same_record(&fast->rec[i], &full->rec[i])) {
			FAIL("%s: record %zu differs", what, i);
			show("fast", &fast->rec[i]);
			show("full", &full->rec[i]);
			break;
		}
		timed += fast->rec[i].type == PTS_REC_WINDOW &&
			 fast->rec[i].end.has_time;
	}
	CHECKF(memcmp(sf, sl, sizeof(*sf)) == 0, "%s: summaries differ", what);
	return timed;
}

static struct pts_enclave production = {
	.begin = 0x7f0000000000ull,
	.end = 0x7fff00000000ull,
	.aep = 0x401100,
	.has_aep = 1,
	.kind = PTS_ENCLAVE_PRODUCTION,
	.name = "prod",
};

static struct pts_enclave debug = {
	.begin = 0x400000,
	.end = 0x7f0000000000ull,
	.kind = PTS_ENCLAVE_DEBUG,
	.name = "dbg",
};

/* The configurations, by number: each changes what may be fast. */
static void make_config(int which, struct pts_trace_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	switch (which) {
	case 0: /* nothing known */
		break;
	case 1: /* user only, with timing that moves at MTC and CYC */
		cfg->known = PTS_CFG_CTL | PTS_CFG_CPUID15 | PTS_CFG_MTCFREQ |
			     PTS_CFG_NOMFREQ;
		cfg->ctl = PTS_CTL_TRACEEN | PTS_CTL_BRANCHEN | PTS_CTL_USER;
		cfg->cpuid_15_eax = 2;
		cfg->cpuid_15_ebx = 200;
		cfg->mtc_freq = 3;
		cfg->nom_freq = 24;
		break;
	case 2: /* a production enclave: every IP checked */
		cfg->enclaves = &production;
		cfg->n_enclaves = 1;
		break;
	case 3: /* a debug enclave: FUP + TIP pairs counted */
		cfg->enclaves = &debug;
		cfg->n_enclaves = 1;
		break;
	case 4: /* the CR3 filter: the last PIP before a disable matters */
		cfg->known = PTS_CFG_CTL | PTS_CFG_CR3;
		cfg->ctl = PTS_CTL_TRACEEN | PTS_CTL_BRANCHEN | PTS_CTL_USER |
			   PTS_CTL_OS | PTS_CTL_CR3FILTER;
		cfg->cr3_match = 0x1000;
		break;
	}
}

/* Breaks @n random bytes of @buf (decode errors, skips, odd packets). */
static void damage(uint8_t *buf, size_t len, struct pts_rng *rng, int n)
{
	for (int i = 0; i < n; i++)
		buf[pts_rng_below(rng, len)] = (uint8_t)pts_rng_bits(rng, 8);
}

int main(int argc, char **argv)
{
	const uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x5eed;
	static uint8_t buf[STREAM_BYTES];
	struct pts_gen_profile profiles[4] = {pts_gen_capture_like,
					       pts_gen_all_kinds,
					       pts_gen_capture_like};
	struct pts_rng rng;
	int timed = 0;

	/* A capture-like mix whose windows are long: fast runs while on,
	 * with the timing packets of a running clock (CYCs of one or two
	 * bytes, in the skim's runs). */
	profiles[2].weight[ppt_tip_pge] = profiles[2].weight[ppt_tip_pgd] = 1;
	profiles[2].hw_timing = 1;
	/* Dense in what the fast path leaves to the full model or settles
	 * once per run: OVF then FUP (APL12), PIP before a disable (the CR3
	 * filter's witness), flow packets in gaps. */
	profiles[3] = (struct pts_gen_profile){
		.name = "enables",
		.weight = {[ppt_ovf] = 4, [ppt_fup] = 8, [ppt_tnt_8] = 10,
			   [ppt_tip_pge] = 8, [ppt_tip_pgd] = 8, [ppt_pip] = 4,
			   [ppt_tip] = 6, [ppt_mtc] = 3, [ppt_cyc] = 3,
			   [ppt_pad] = 2, [ppt_mode] = 3},
		.ipc_weight = {5, 60, 30, 3, 0, 0, 2},
		.psb_period = 1024,
	};
	pts_rng_seed(&rng, seed);
	for (int round = 0; round < 32; round++) {
		const struct pts_gen_profile *prof = &profiles[round % 4];
		struct pts_gen_result gen;
		uint64_t end;
		int n;

		if (pts_gen_stream(buf, sizeof(buf), UINT64_MAX, prof,
				   pts_rng_next(&rng), &gen) < 0) {
			FAIL("round %d: the generator failed", round);
			continue;
		}
		if ((round / 4) % 2)
			damage(buf, gen.bytes, &rng, 1 + round);
		n = decode(buf, gen.bytes, &rng, &end);
		if (n < 0) {
			FAIL("round %d: the decoder misbehaved", round);
			continue;
		}
		for (int c = 0; c < 5; c++) {
			struct pts_trace_config cfg;
			struct records fast = {0}, full = {0}, skim = {0};
			struct pts_win_summary sf, sl, ss;
			char what[96];

			make_config(c, &cfg);
			run(&cfg, n, end, 1, &rng, &fast, &sf);
			run(&cfg, n, end, 0, &rng, &full, &sl);
			run_skim(&cfg, buf, gen.bytes, &rng, &skim, &ss);
			snprintf(what, sizeof(what),
				 "seed 0x%llx round %d (%s%s) config %d",
				 (unsigned long long)seed, round, prof->name,
				 (round / 4) % 2 ? ", damaged" : "", c);
			timed += compare(what, &fast, &full, &sf, &sl);
			snprintf(what + strlen(what), sizeof(what) - strlen(what),
				 " skim");
			compare(what, &skim, &full, &ss, &sl);
			free(fast.rec);
			free(full.rec);
			free(skim.rec);
		}
	}
	/* The timing configuration must have dated windows, or the clock in
	 * fast runs went untested. */
	CHECK(timed > 0);
	return pts_check_exit();
}
