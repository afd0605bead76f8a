#include "oracle.h"

#include "feed.h"
#include "libipt_map.h"
#include "pkt_compare.h"

#include <intel-pt.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { PSB_SIZE = 16 };

struct run {
	const uint8_t *buf;
	size_t len;
	const char *label;
	struct pts_oracle_stats *stats;
	struct pt_packet_decoder *ipt;
	struct pts_feed *feed;
	struct pts_ref_lastip lip;
	/* perf report -D's current output line (see count_perf_line). */
	uint64_t line_begin, line_end;
	uint8_t have_line;
};

/* Writes up to 16 bytes at @offset as hex: the reproducer in a report. */
static void hex_at(const struct run *r, uint64_t offset, char *out, size_t cap)
{
	size_t used = 0;

	out[0] = '\0';
	for (uint64_t i = offset; i < r->len && i < offset + 16; i++) {
		int n = snprintf(out + used, cap - used, "%s%02x",
				 used ? " " : "", r->buf[i]);
		if (n < 0 || (size_t)n >= cap - used)
			break;
		used += (size_t)n;
	}
}

static void describe_event(const struct pts_event *ev, char *out, size_t cap)
{
	if (ev->status > 0)
		snprintf(out, cap, "%s at 0x%" PRIx64 " (%u bytes)",
			 pts_pkt_kind_name(ev->pkt.kind), ev->pkt.offset,
			 ev->pkt.size);
	else
		snprintf(out, cap, "%s [0x%" PRIx64 ", 0x%" PRIx64 ")",
			 pts_errname(ev->status), ev->begin, ev->end);
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int mismatch(struct run *r, uint64_t offset, const char *fmt, ...)
{
	struct pts_oracle_stats *stats = r->stats;
	char bytes[64];
	va_list ap;

	stats->mismatches++;
	if (stats->reports_left <= 0)
		return 1;
	hex_at(r, offset, bytes, sizeof(bytes));
	fprintf(stderr, "MISMATCH %s: offset 0x%" PRIx64 ": ", r->label, offset);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n    bytes: %s\n", bytes);
	if (--stats->reports_left == 0)
		fprintf(stderr, "(further mismatches are counted, not shown)\n");
	return 1;
}

/* perf report -D prints one line per packet but lets a packet swallow the
 * zero bytes after it while the line is shorter than 8 bytes (PADs
 * included), so its packet counts are not libipt's. Counting its lines
 * lets the capture tests check the figures perf gives. */
static void count_perf_line(struct run *r, const struct pts_packet *pkt)
{
	if (pkt->kind == PTS_PKT_PAD && pkt->offset == r->line_end &&
	    pkt->offset - r->line_begin < 8 && r->have_line) {
		r->line_end++;
		return;
	}
	r->stats->perf_lines++;
	r->have_line = 1;
	r->line_begin = pkt->offset;
	r->line_end = pkt->offset + pkt->size;
}

/* Where decoding resumes after an error at @from: as libipt's
 * pt_sync_forward() chooses, the PSB of a run of 02 82 pairs is the run's
 * last 16 bytes (the end of the buffer ends a run). Unlike libipt, which
 * starts looking up to 15 bytes before the error, the run is counted from
 * @from on: ptscope never skips backwards into bytes it already decoded.
 * Returns the PSB's offset, or the buffer's length when there is none. */
static uint64_t next_psb(const struct run *r, uint64_t from)
{
	uint64_t i = from;

	while (i + PSB_SIZE <= r->len) {
		uint64_t end = i;

		while (end + 1 < r->len && r->buf[end] == 0x02 &&
		       r->buf[end + 1] == 0x82)
			end += 2;
		if (end - i >= PSB_SIZE)
			return end - PSB_SIZE;
		i = end > i ? end : i + 1;
	}
	return r->len;
}

/* An extended opcode libipt 2.0.5 does not know: PEBS-via-PT (BBP 02 63,
 * BEP 02 33/b3) and Event Trace (CFE 02 13, EVD 02 53) are newer. */
static int newer_opcode(const uint8_t *at, size_t avail)
{
	return avail >= 2 && at[0] == 0x02 &&
	       (at[1] == 0x63 || at[1] == 0x33 || at[1] == 0xb3 ||
		at[1] == 0x13 || at[1] == 0x53);
}

/* libipt failed at @at where ptscope decoded a packet or found the packet
 * cut by the end of the buffer (@ev). Returns 1 when that is one of the
 * documented differences (the comparison of this buffer ends there), 0 for
 * a mismatch. */
static int known_difference(struct run *r, uint64_t at, int ipt_err,
			    const struct pts_event *ev)
{
	const uint8_t *bytes = r->buf + at;
	int truncated = ev->status == -PTS_ERR_TRUNCATED && ev->begin == at;
	int kind = ev->status > 0 ? ev->pkt.kind : -1;

	if (ipt_err == -pte_bad_opc && newer_opcode(bytes, r->len - at) &&
	    (truncated || kind == PTS_PKT_BBP || kind == PTS_PKT_BEP ||
	     kind == PTS_PKT_CFE || kind == PTS_PKT_EVD)) {
		r->stats->newer_kinds++;
		return 1;
	}
	/* libipt 2.0.5 rejects a CYC once its 7-bit groups would pass bit 64
	 * (from the 10th byte on). The SDM sets no length limit; ptscope
	 * accepts up to 15 bytes (libipt's documented cap), then says
	 * CYC_TOO_LONG. Such a CYC, or one the end cuts before byte 16, is
	 * not comparable. */
	if (ipt_err == -pte_bad_packet && (bytes[0] & 3) == 3 &&
	    (truncated || (kind == PTS_PKT_CYC && ev->pkt.size >= 10 &&
			   ev->pkt.size <= 15))) {
		r->stats->long_cyc++;
		return 1;
	}
	return 0;
}

/* After an error at @at, ptscope must report the bytes from @at to the
 * next PSB (or to the end) as skipped; libipt is synchronized at that PSB
 * too. Returns 0 to go on (*done set at the end of the buffer) or a
 * mismatch. */
static int resync(struct run *r, uint64_t at, int *done)
{
	uint64_t psb = next_psb(r, at);
	struct pts_event ev;
	char got[96];

	pts_feed_next(r->feed, &ev);
	describe_event(&ev, got, sizeof(got));
	if (ev.status != -PTS_ERR_SKIPPED || ev.begin != at || ev.end != psb)
		return mismatch(r, at,
				"after the error ptscope must skip [0x%" PRIx64
				", 0x%" PRIx64 ") (to the %s); ptscope: %s",
				at, psb, psb == r->len ? "end" : "next PSB", got);
	if (psb == r->len) {
		pts_feed_next(r->feed, &ev);
		describe_event(&ev, got, sizeof(got));
		*done = 1;
		if (ev.status != -PTS_ERR_EOS)
			return mismatch(r, psb,
					"after skipping to the end ptscope "
					"must end; ptscope: %s",
					got);
		return 0;
	}
	if (pt_pkt_sync_set(r->ipt, psb) < 0)
		return mismatch(r, psb, "libipt cannot sync at this PSB");
	r->stats->resyncs++;
	return 0;
}

/* libipt failed with @ipt_err at @at; @ev is what ptscope said there. */
static int compare_error(struct run *r, uint64_t at, int ipt_err,
			 const struct pts_event *ev, int *done)
{
	char got[96];
	int want;

	describe_event(ev, got, sizeof(got));
	if (ipt_err == -pte_eos && at == r->len) {
		*done = 1;
		if (ev->status != -PTS_ERR_EOS)
			return mismatch(r, at, "libipt: end; ptscope: %s", got);
		return 0;
	}
	if (ipt_err != -pte_eos && known_difference(r, at, ipt_err, ev)) {
		*done = 1;
		return 0;
	}
	if (ev->status > 0)
		return mismatch(r, at, "libipt: %s; ptscope: %s",
				pt_errstr(pt_errcode(ipt_err)), got);
	want = pts_map_libipt_error(ipt_err, r->buf + at, r->len - at);
	if (ev->status != want || ev->begin != at || ev->end <= at)
		return mismatch(r, at,
				"libipt: %s, so ptscope must report %s here; "
				"ptscope: %s",
				pt_errstr(pt_errcode(ipt_err)), pts_errname(want),
				got);
	r->stats->errors[-want]++;
	if (want == -PTS_ERR_TRUNCATED) {
		struct pts_event end;

		*done = 1;
		pts_feed_next(r->feed, &end);
		describe_event(&end, got, sizeof(got));
		if (end.status != -PTS_ERR_EOS)
			return mismatch(r, at,
					"after TRUNCATED ptscope must end; "
					"ptscope: %s",
					got);
		return 0;
	}
	return resync(r, at, done);
}

static int compare_packet(struct run *r, uint64_t at, const struct pt_packet *p,
			  const struct pts_event *ev)
{
	struct pts_packet want;
	char why[160], got[96];

	if (pts_map_libipt(p, at, r->buf + at, &r->lip, &want) < 0)
		return mismatch(r, at, "libipt type %s has no ptscope kind",
				pts_libipt_type_name(p->type));
	if (ev->status <= 0) {
		describe_event(ev, got, sizeof(got));
		return mismatch(r, at, "libipt: %s (%u bytes); ptscope: %s",
				pts_libipt_type_name(p->type), p->size, got);
	}
	if (pts_pkt_diff(&want, &ev->pkt, why, sizeof(why)))
		return mismatch(r, at, "%s: %s (want = libipt)",
				pts_pkt_kind_name(want.kind), why);
	r->stats->packets++;
	r->stats->kinds[want.kind]++;
	count_perf_line(r, &ev->pkt);
	return 0;
}

/* Both decoders search the first PSB; ptscope reports the bytes before it
 * as skipped. Returns 0 to go on, 1 with *done when there is no PSB. */
static int start_synced(struct run *r, int *done)
{
	uint64_t start = r->len;
	struct pts_event ev;
	char got[96];
	int err = pt_pkt_sync_forward(r->ipt);

	if (err >= 0)
		pt_pkt_get_sync_offset(r->ipt, &start);
	else if (err != -pte_eos)
		return mismatch(r, 0, "libipt sync: %s",
				pt_errstr(pt_errcode(err)));
	if (start > 0) {
		pts_feed_next(r->feed, &ev);
		describe_event(&ev, got, sizeof(got));
		if (ev.status != -PTS_ERR_SKIPPED || ev.begin != 0 ||
		    ev.end != start)
			return mismatch(r, 0,
					"the first PSB is at 0x%" PRIx64
					": ptscope must skip [0, 0x%" PRIx64
					"); ptscope: %s",
					start, start, got);
	}
	if (err < 0) {
		*done = 1;
		pts_feed_next(r->feed, &ev);
		describe_event(&ev, got, sizeof(got));
		if (ev.status != -PTS_ERR_EOS)
			return mismatch(r, start,
					"no PSB: ptscope must end; ptscope: %s",
					got);
	}
	return 0;
}

static int run_compare(struct run *r, uint8_t no_sync)
{
	int done = 0;
	int err = no_sync ? pt_pkt_sync_set(r->ipt, 0) : start_synced(r, &done);

	if (err)
		return err < 0 ? mismatch(r, 0, "libipt sync_set failed") : err;
	while (!done) {
		struct pt_packet p;
		struct pts_event ev;
		uint64_t at = 0;
		int status;

		pt_pkt_get_offset(r->ipt, &at);
		status = pt_pkt_next(r->ipt, &p, sizeof(p));
		pts_feed_next(r->feed, &ev);
		if (status >= 0)
			err = compare_packet(r, at, &p, &ev);
		else
			err = compare_error(r, at, status, &ev, &done);
		if (err)
			return err;
	}
	return 0;
}

int pts_oracle_compare(const uint8_t *buf, size_t len,
		       const struct pts_oracle_opts *opts,
		       struct pts_oracle_stats *stats)
{
	struct pts_chunker chunker;
	struct pts_feed_opts fopts;
	struct pt_config config;
	struct run r;
	int result;

	memset(&r, 0, sizeof(r));
	r.buf = buf;
	r.len = len;
	r.label = opts->label ? opts->label : "buffer";
	r.stats = stats;

	memset(&fopts, 0, sizeof(fopts));
	fopts.config.no_sync = opts->no_sync;
	fopts.batch = opts->batch;
	fopts.copy = 1;
	if (opts->max_chunk) {
		pts_rng_seed(&chunker.rng, opts->chunk_seed);
		chunker.max = opts->max_chunk;
		fopts.chunk = pts_chunker_next;
		fopts.chunk_ctx = &chunker;
	}
	r.feed = pts_feed_new(buf, len, &fopts);

	/* libipt wants a non-empty buffer; an empty one has nothing to
	 * compare beyond ptscope ending at once. */
	pt_config_init(&config);
	config.begin = (uint8_t *)(uintptr_t)buf;
	config.end = (uint8_t *)(uintptr_t)buf + len;
	r.ipt = len ? pt_pkt_alloc_decoder(&config) : NULL;
	if (!r.feed || (len && !r.ipt)) {
		pts_feed_free(r.feed);
		pt_pkt_free_decoder(r.ipt);
		return -1;
	}
	if (len) {
		result = run_compare(&r, opts->no_sync);
	} else {
		struct pts_event ev;

		pts_feed_next(r.feed, &ev);
		result = ev.status == -PTS_ERR_EOS
				 ? 0
				 : mismatch(&r, 0, "empty input: ptscope must end");
	}
	pts_feed_free(r.feed);
	pt_pkt_free_decoder(r.ipt);
	return result;
}

void pts_oracle_print(const char *what, const struct pts_oracle_stats *stats)
{
	uint64_t errors = 0;

	for (int i = 0; i < PTS_ERR_COUNT; i++)
		errors += stats->errors[i];
	printf("%s: %" PRIu64 " packets equal, %" PRIu64 " errors at the same "
	       "offsets, %" PRIu64 " resyncs, stops at newer kinds %" PRIu64
	       ", at long CYC %" PRIu64 ", mismatches %" PRIu64 "\n",
	       what, stats->packets, errors, stats->resyncs, stats->newer_kinds,
	       stats->long_cyc, stats->mismatches);
}
