/* Fuzz target for the packet layer: the streaming decoder fed in chunks
 * the input chooses, the one-shot parser, the PSB search and both printers.
 *
 * Input layout: byte 0 options (bit 0 no_sync; bit 1 batch calls; bits 3:2
 * CPU, for errata: none, Skylake, Broadwell, Apollo Lake; bit 4 printer
 * --lastip; bit 5 skimming hands CYCs and MTCs on as values), bytes 1-2
 * chunk seed, byte 3 largest chunk - 1, then the trace. Shorter inputs are
 * all trace with default options.
 *
 * Invariants (abort on violation; libFuzzer and the replay test report it):
 * - packets lie inside the trace, 1..16 bytes, offsets strictly rising;
 * - the events (packets, errors and their ranges) do not depend on the
 *   chunking nor on pts_pkt_next vs pts_pkt_next_batch;
 * - pts_pkt_count_batch, alone and mixed call by call with
 *   pts_pkt_next_batch, counts the kinds of exactly those packets and
 *   reports the same conditions (whole and chunked);
 * - pts_pkt_skim_batch stores those packets its actions keep, sums up the
 *   others as they are, and reports the same conditions (chunked);
 * - the stream ends (EOS or TRUNCATED) after a bounded number of events;
 * - a skip ends where pts_psb_find() from its start says, at a PSB packet
 *   or at the end; every PSB packet is 16 bytes of 02 82; every offset
 *   pts_psb_list() gives is a PSB for pts_psb_find();
 * - pts_pkt_parse agrees on kind and size (without errata; BIPs excepted);
 * - the printers give text of the length they return (ptdump: one line,
 *   after any "[...]" diagnostic lines; JSON: one object) and
 *   -PTS_ERR_AGAIN for a 1-byte buffer.
 *
 * corpus/packets/ holds seeds made with libipt's encoder or by hand (valid
 * streams, truncated ones, garbage, PEBS/Event Trace packets, long CYCs,
 * PSB patterns inside payloads) and the inputs fuzzing found, each named
 * after what it caught.
 */
#include "fuzz_target.h"

#include "feed.h"
#include "pkt_compare.h"
#include "skim_expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { HEADER = 4 };

struct events {
	struct pts_event *ev;
	size_t count, cap;
};

struct setup {
	const uint8_t *trace;
	size_t len;
	struct pts_pkt_config config;
	int batch;
	uint16_t seed;
	size_t max_chunk;
	uint8_t lastip;
	uint8_t items; /* skimming hands CYCs and MTCs on as values */
};

static void parse_input(const uint8_t *data, size_t size, struct setup *s)
{
	static const struct pts_cpu cpus[4] = {
		{0, 0, 0}, {6, 78, 3}, {6, 61, 0}, {6, 92, 9}};

	memset(s, 0, sizeof(*s));
	s->trace = data;
	s->len = size;
	s->max_chunk = 16;
	if (size < HEADER)
		return;
	s->config.no_sync = data[0] & 1;
	s->batch = (data[0] & 2) ? 1 + data[1] % 64 : 0;
	s->config.cpu = cpus[(data[0] >> 2) & 3];
	s->lastip = (data[0] >> 4) & 1;
	s->items = (data[0] >> 5) & 1;
	s->seed = (uint16_t)(data[1] | data[2] << 8);
	s->max_chunk = (size_t)data[3] + 1;
	s->trace = data + HEADER;
	s->len = size - HEADER;
}

/* Decodes the whole trace into @out. Each event consumes bytes or is
 * followed by one that does, so 3 per byte (+ the end) is a generous
 * bound; a decoder that goes past it does not progress. */
static void decode(const struct setup *s, int chunked, int batch,
		   struct events *out)
{
	struct pts_chunker chunker = {.max = s->max_chunk};
	struct pts_feed_opts opts = {.config = s->config, .batch = batch,
				     .copy = 1};
	size_t limit = 3 * s->len + 8;
	struct pts_feed *feed;

	pts_rng_seed(&chunker.rng, s->seed);
	if (chunked) {
		opts.chunk = pts_chunker_next;
		opts.chunk_ctx = &chunker;
	}
	out->count = 0;
	out->cap = 0;
	out->ev = NULL;
	feed = pts_feed_new(s->trace, s->len, &opts);
	REQUIRE(feed != NULL);
	for (;;) {
		struct pts_event *ev;

		REQUIRE(out->count < limit);
		if (out->count == out->cap) {
			out->cap = out->cap ? 2 * out->cap : 64;
			out->ev = realloc(out->ev, out->cap * sizeof(*out->ev));
			REQUIRE(out->ev != NULL);
		}
		ev = &out->ev[out->count++];
		pts_feed_next(feed, ev);
		REQUIRE(ev->status != -PTS_ERR_NO_PROGRESS);
		REQUIRE(ev->status != -PTS_ERR_INTERNAL);
		if (ev->status == -PTS_ERR_EOS || ev->status == -PTS_ERR_TRUNCATED)
			break;
	}
	pts_feed_free(feed);
}

static void check_packets(const struct setup *s, const struct events *evs)
{
	uint64_t next = 0; /* the lowest offset the next packet may have */

	for (size_t i = 0; i < evs->count; i++) {
		const struct pts_event *ev = &evs->ev[i];

		if (ev->status < 0) {
			REQUIRE(ev->begin <= ev->end && ev->end <= s->len + 1);
			continue;
		}
		REQUIRE(ev->status == ev->pkt.size);
		REQUIRE(ev->pkt.size >= 1 && ev->pkt.size <= 16);
		REQUIRE(ev->pkt.kind < PTS_PKT_KIND_COUNT);
		REQUIRE(ev->pkt.offset >= next);
		REQUIRE(ev->pkt.offset + ev->pkt.size <= s->len);
		next = ev->pkt.offset + ev->pkt.size;
	}
}

static void same_events(const struct events *a, const struct events *b)
{
	char why[160];

	REQUIRE(a->count == b->count);
	for (size_t i = 0; i < a->count; i++) {
		const struct pts_event *x = &a->ev[i], *y = &b->ev[i];

		REQUIRE(x->status == y->status);
		if (x->status > 0) {
			if (pts_pkt_diff(&x->pkt, &y->pkt, why, sizeof(why))) {
				fprintf(stderr, "event %zu: %s\n", i, why);
				REQUIRE(!"same packet whole and chunked");
			}
		} else {
			REQUIRE(x->begin == y->begin && x->end == y->end);
		}
	}
}

/* The decoder asked for more: the trace's next chunk after the @fed first
 * bytes (@chunker's size, or all that is left without one), or its end. */
static void next_chunk(const struct setup *s, struct pts_pkt_decoder *dec,
		       struct pts_input *in, struct pts_chunker *chunker,
		       size_t *fed)
{
	const size_t left = s->len - *fed;
	const size_t n = chunker ? pts_chunker_next(chunker, left) : left;

	REQUIRE(in->pos == in->size);
	if (!left) {
		pts_pkt_end(dec);
		return;
	}
	in->data = s->trace + *fed;
	in->size = n < 1 ? 1 : n > left ? left : n;
	in->pos = 0;
	*fed += in->size;
}

/* Decodes the trace (whole, or in the chunks the seed chooses) with
 * pts_pkt_count_batch, or (@mixed) with it and pts_pkt_next_batch chosen
 * call by call, batch sizes at random up to 128 (so that the 64-byte
 * counting blocks run too): each count must be the kinds of the
 * packets @want has next, each packet and condition @want's next. So the
 * counting path leaves the decoder exactly as decoding would. */
static void check_counting(const struct setup *s, int chunked, int mixed,
			   const struct events *want)
{
	static struct pts_packet pkts[128];
	struct pts_chunker chunker = {.max = s->max_chunk};
	struct pts_pkt_decoder *dec = pts_pkt_decoder_new(&s->config);
	struct pts_input in = {s->trace, 0, 0};
	struct pts_rng pick;
	size_t fed = 0, at = 0;
	char why[160];

	REQUIRE(dec != NULL);
	pts_rng_seed(&chunker.rng, s->seed);
	pts_rng_seed(&pick, s->seed ^ 0xc0de);
	for (size_t guard = 0; guard <= 3 * s->len + 8; guard++) {
		uint64_t counts[PTS_PKT_KIND_COUNT] = {0};
		const int counting = !mixed || pts_rng_bits(&pick, 1);
		const int max = 1 + (int)pts_rng_below(&pick, 128);
		int r = counting ? pts_pkt_count_batch(dec, &in, counts, max)
				 : pts_pkt_next_batch(dec, &in, pkts, max);

		if (r == -PTS_ERR_AGAIN) {
			next_chunk(s, dec, &in, chunked ? &chunker : NULL,
				   &fed);
			continue;
		}
		REQUIRE(r != 0 && at + (r > 0 ? (size_t)r : 1) <= want->count);
		for (int i = 0; i < r; i++) {
			const struct pts_event *ev = &want->ev[at + (size_t)i];

			REQUIRE(ev->status > 0);
			if (counting) {
				REQUIRE(counts[ev->pkt.kind] > 0);
				counts[ev->pkt.kind]--;
			} else if (pts_pkt_diff(&ev->pkt, &pkts[i], why,
						sizeof(why))) {
				fprintf(stderr, "packet %zu: %s\n",
					at + (size_t)i, why);
				REQUIRE(!"same packet counting between");
			}
		}
		for (int k = 0; k < PTS_PKT_KIND_COUNT; k++)
			REQUIRE(counts[k] == 0);
		if (r > 0) {
			at += (size_t)r;
			continue;
		}
		{
			const struct pts_event *ev = &want->ev[at++];
			uint64_t begin, end;

			pts_pkt_error_range(dec, &begin, &end);
			REQUIRE(ev->status == r && ev->begin == begin &&
				ev->end == end);
		}
		if (r == -PTS_ERR_EOS || r == -PTS_ERR_TRUNCATED)
			break;
	}
	REQUIRE(at == want->count);
	pts_pkt_decoder_free(dec);
}

/* Decodes the trace in the seed's chunks with pts_pkt_skim_batch and
 * actions the seed picks, batches up to 128 (so that the 64-byte blocks
 * run too): the packets stored must be @want's that the actions keep or
 * stop at, each STOP packet the last of its batch, its conditions @want's,
 * the sum of what it skipped before each STOP packet, each condition
 * and the end @want's skipped packets there, and what it handed on @want's
 * packets that the actions call for, in order and none past a STOP
 * packet or a condition. */
static void check_skimming(const struct setup *s, const struct events *want)
{
	static struct pts_packet pkts[128];
	struct pts_chunker chunker = {.max = s->max_chunk};
	struct pts_pkt_decoder *dec = pts_pkt_decoder_new(&s->config);
	struct pts_input in = {s->trace, 0, 0};
	struct pts_skim sum = {0}, expect = {0};
	struct pts_test_calls calls = {0};
	const struct pts_skim_call hook = pts_test_calls_hook(&calls, s->items);
	uint8_t actions[PTS_PKT_KIND_COUNT];
	struct pts_rng pick;
	size_t fed = 0, at = 0;
	char why[160];

	REQUIRE(dec != NULL);
	pts_rng_seed(&chunker.rng, s->seed);
	pts_rng_seed(&pick, s->seed ^ 0x5c1e);
	for (int k = 0; k < PTS_PKT_KIND_COUNT; k++)
		actions[k] = (uint8_t)pts_rng_below(&pick, 4);
	for (size_t guard = 0; guard <= 3 * s->len + 8; guard++) {
		const int max = 1 + (int)pts_rng_below(&pick, 128);
		int r = pts_pkt_skim_batch(dec, &in, actions, pkts, max, &sum,
					   &hook);

		if (r == -PTS_ERR_AGAIN) {
			next_chunk(s, dec, &in, &chunker, &fed);
			continue;
		}
		REQUIRE(r != 0);
		for (int i = 0; i < (r > 0 ? r : 1); i++) {
			const struct pts_event *ev;

			for (int t = 1; t > 0 && at < want->count &&
					want->ev[at].status > 0;
			     at += t > 0) {
				t = pts_test_skim_take(actions, &expect, &calls,
						       &want->ev[at].pkt);
				REQUIRE(t >= 0);
			}
			REQUIRE(at < want->count);
			ev = &want->ev[at++];
			if (r < 0) {
				uint64_t begin, end;

				pts_pkt_error_range(dec, &begin, &end);
				REQUIRE(ev->status == r && ev->begin == begin &&
					ev->end == end);
			} else {
				REQUIRE(ev->status > 0);
				if (pts_pkt_diff(&ev->pkt, &pkts[i], why,
						 sizeof(why))) {
					fprintf(stderr, "packet %zu: %s\n",
						at - 1, why);
					REQUIRE(!"same packet skimming");
				}
				if (actions[pkts[i].kind] != PTS_SKIM_STOP)
					continue;
				REQUIRE(i == r - 1);
			}
			REQUIRE(!memcmp(&sum, &expect, sizeof(sum)));
			REQUIRE(pts_test_calls_done(&calls));
			memset(&sum, 0, sizeof(sum));
			memset(&expect, 0, sizeof(expect));
		}
		if (r == -PTS_ERR_EOS || r == -PTS_ERR_TRUNCATED)
			break;
	}
	REQUIRE(at == want->count);
	REQUIRE(!memcmp(&sum, &expect, sizeof(sum)));
	REQUIRE(pts_test_calls_done(&calls));
	pts_test_calls_free(&calls);
	pts_pkt_decoder_free(dec);
}

static int psb_at(const struct setup *s, uint64_t offset)
{
	static const uint8_t psb[16] = {2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82,
					2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82};

	return offset + 16 <= s->len && memcmp(s->trace + offset, psb, 16) == 0;
}

/* Where decoding (re)starts: a search (at the start with sync, after every
 * error) must end at the PSB pts_psb_find() names from the same offset. A
 * PSB met while decoding is just 16 bytes of 02 82 (in a longer run it need
 * not be the one a search would pick). */
static void check_psbs(const struct setup *s, const struct events *evs)
{
	size_t max = s->len / 2 + 1, found;
	uint64_t *offs = malloc(max * sizeof(*offs));

	REQUIRE(offs != NULL);
	found = pts_psb_list(s->trace, s->len, offs, max);
	REQUIRE(found <= max);
	REQUIRE((found > 0) == (pts_psb_find(s->trace, s->len, 0) >= 0));
	for (size_t i = 0; i < found; i++)
		REQUIRE(pts_psb_find(s->trace, s->len, offs[i]) ==
			(ptrdiff_t)offs[i]);
	free(offs);

	for (size_t i = 0; i < evs->count; i++) {
		const struct pts_event *ev = &evs->ev[i];
		const struct pts_event *next = i + 1 < evs->count ? ev + 1 : NULL;
		ptrdiff_t psb;

		if (ev->status > 0) {
			if (ev->pkt.kind == PTS_PKT_PSB)
				REQUIRE(psb_at(s, ev->pkt.offset));
			/* With sync, the first packet starts the first PSB. */
			if (i == 0 && !s->config.no_sync)
				REQUIRE(ev->pkt.kind == PTS_PKT_PSB &&
					pts_psb_find(s->trace, s->len, 0) == 0);
			continue;
		}
		if (ev->status != -PTS_ERR_SKIPPED || !next)
			continue;
		psb = pts_psb_find(s->trace, s->len, (size_t)ev->begin);
		if (next->status > 0)
			REQUIRE(next->pkt.kind == PTS_PKT_PSB &&
				next->pkt.offset == ev->end &&
				psb == (ptrdiff_t)ev->end);
		else
			REQUIRE(ev->end == s->len && psb < 0);
	}
}

/* pts_pkt_parse must read each packet as the stream decoder did, except
 * where the decoder uses context the parser lacks: errata (which change
 * what a CYC next to an OVF is) and PEBS blocks (a BIP header is a TNT-8
 * byte outside one). */
static void check_parse(const struct setup *s, const struct events *evs)
{
	if (s->config.cpu.family != 0)
		return;
	for (size_t i = 0; i < evs->count; i++) {
		const struct pts_packet *want = &evs->ev[i].pkt;
		struct pts_packet pkt;

		if (evs->ev[i].status <= 0 || want->kind == PTS_PKT_BIP)
			continue;
		REQUIRE(pts_pkt_parse(s->trace + want->offset,
				      s->len - want->offset, 0,
				      &pkt) == want->size);
		REQUIRE(pkt.kind == want->kind && pkt.size == want->size);
	}
}

/* A ptdump line: non-empty, no newline at its end; diagnostics ptdump
 * prints before it ("[<offset>: error ...]") each end with a newline. */
static void check_ptdump_text(const char *text)
{
	const char *nl;

	while ((nl = strchr(text, '\n')) != NULL) {
		REQUIRE(text[0] == '[' && nl > text && nl[-1] == ']');
		text = nl + 1;
	}
	REQUIRE(text[0] != '\0');
}

static void check_printers(const struct setup *s, const struct events *evs)
{
	struct pts_print_opts popts = {.show_offset = 1,
				       .show_lastip = s->lastip};
	struct pts_lastip lip;
	char line[512];

	pts_lastip_reset(&lip);
	for (size_t i = 0; i < evs->count; i++) {
		const struct pts_packet *pkt = &evs->ev[i].pkt;
		struct pts_lastip scratch = lip;
		int n;

		if (evs->ev[i].status <= 0)
			continue;
		REQUIRE(pts_print_ptdump(pkt, &popts, &scratch, line, 1) ==
			-PTS_ERR_AGAIN);
		n = pts_print_ptdump(pkt, &popts, &lip, line, sizeof(line));
		REQUIRE(n > 0 && (size_t)n < sizeof(line));
		REQUIRE(strlen(line) == (size_t)n);
		check_ptdump_text(line);

		REQUIRE(pts_print_jsonl(pkt, line, 1) == -PTS_ERR_AGAIN);
		n = pts_print_jsonl(pkt, line, sizeof(line));
		REQUIRE(n > 1 && (size_t)n < sizeof(line));
		REQUIRE(strlen(line) == (size_t)n && line[0] == '{' &&
			line[n - 1] == '}' && !strchr(line, '\n'));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct events whole, chunked;
	struct setup s;

	parse_input(data, size, &s);
	decode(&s, 0, 0, &whole);
	decode(&s, 1, s.batch, &chunked);
	check_packets(&s, &whole);
	same_events(&whole, &chunked);
	check_counting(&s, 0, 0, &whole);
	check_counting(&s, 1, 1, &whole);
	check_skimming(&s, &whole);
	check_psbs(&s, &whole);
	check_parse(&s, &whole);
	check_printers(&s, &whole);
	free(whole.ev);
	free(chunked.ev);
	return 0;
}
