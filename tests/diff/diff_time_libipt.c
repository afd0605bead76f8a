/* ptscope's clock (model/time_track.c) against libipt 2.0.5's time
 * estimate on the same bytes.
 *
 * time_track.c says it follows libipt's pt_time.c (TSC, TMA, MTC with one
 * CTC wrap corrected, CYC with a calibrated ratio, calibration from MTC
 * periods, PSB-to-PSB TSCs and CBR with the nominal ratio). This test
 * holds it to that: libipt's query decoder walks each trace, driven only by
 * its status bits, and after every query pt_qry_time() (TSC, lost MTCs,
 * lost CYCs) must equal what struct pts_time gives after the same packets.
 *
 * Which packets libipt has applied at a query (libipt 2.0.5,
 * pt_query_decoder.c): the decoder applies timing packets as it passes
 * them, and pt_qry_time() answers with a copy of that time taken when the
 * query's own packet was decoded, before reading ahead to the next
 * query-relevant packet. So the copy holds every timing packet before:
 *   - the TNT a pt_qry_cond_branch() loads into its cache (later bits of
 *     the same TNT leave the copy alone), the packet just after it;
 *   - the TIP of a pt_qry_indirect_branch(), the packet just after it;
 *   - the packet that publishes a pt_qry_event()'s event: the TIP, TIP.PGE
 *     or TIP.PGD an event bound to TIP is delivered at, the FUP of a FUP
 *     event (overflow resolved with tracing on), the PSBEND of PSB+
 *     status events, the packet itself for stand-alone ones (with a CBR
 *     the CBR itself counts: it is applied before its event).
 * PSB+ is read in one go when the PSB is decoded: its packets are before
 * the PSBEND. ptscope gets in_psb = 1 for them, as libipt uses its header
 * variants there (PSB-to-PSB calibration, CBR that keeps calibration).
 *
 * lost_mtc and lost_cyc map one to one: both count MTCs whose CTC is
 * behind the last one even after one wrap and CYCs met without a ratio,
 * MTCs clear the CYC count, TSCs both (pt_time_update_mtc/_cyc/_tsc).
 * (An MTC's CTC is below 2^(N+8), so one wrap always suffices and lost_mtc
 * stays 0 on both sides; MTCs lost in bulk go unnoticed by both alike.)
 *
 * One deliberate difference: an OVF makes libipt 2.0.5 reset its whole
 * calibration (pt_qry_decode_ovf -> pt_qry_reset -> pt_tcal_init), the
 * TSC-per-cycle ratio included, so CYCs after it are lost until the next
 * calibration. ptscope keeps the ratio and restarts only the measurements
 * (time_track.c: "The ratio itself stays"), as libipt does from 2.1 on
 * with its keep_tcal_on_ovf flag (pt_tcal_update_ovf). The comparison
 * runs on a copy of ptscope's state whose ratio is cleared at each OVF;
 * the state itself is checked at each OVF for the documented behaviour:
 * ratio unchanged, measurements restarted.
 *
 * The fast paths pts_time_packets() (runs of packets outside PSB+) and
 * pts_time_items() (the same runs as a skim hands them on) are held to
 * pts_time_packet() on the same packets, the latter in everything the
 * clock holds.
 *
 * Calibration order: with MTCs seen since the last reset, libipt 2.0.5
 * keeps the MTC-based ratio at the next PSB+'s TSC; without MTCs it takes
 * the PSB-to-PSB one (the "cal-order" streams check both, with CYCs right
 * after the PSB+ that would show the other ratio).
 *
 * Streams (time_streams.c): hand-made ones (TMA acting as the first MTC and, with N = 9,
 * TMA lacking the high CTC bits; MTC wraps; a lost MTC; a CYC spanning
 * MTC periods; CYCs before any calibration; CBR changes inside and outside
 * PSB+; OVF resolved with tracing on and off; a TSC outside PSB+), random
 * ones from a small clock model, and walks of /usr/bin/bash from the
 * synthesizer with timing packets, frequency changes and overflows. Each
 * runs with and without the nominal ratio known.
 *
 * usage: diff_time_libipt [SEED]
 *        DIFF_TIME_DUMP=DIR writes each stream to DIR/LABEL.pt;
 *        DIFF_TIME_VERBOSE=1 prints every comparison point.
 */
#include "check.h"
#include "rng.h"
#include "synth_run.h"
#include "time_streams.h"
#include "time_track.h"

#include <intel-pt.h>
#include <ptscope/packets.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Mismatch reports printed per stream; the rest are only counted. */
#define MAX_REPORTS 8

/* ------------------------------------------------------------------------ */
/* The packets of a trace, as ptscope decodes them.                         */

struct trace {
	struct pts_packet *v;
	uint8_t *in_psb;
	size_t n, cap;
};

static int decode_all(const uint8_t *buf, size_t len, struct trace *t)
{
	struct pts_pkt_decoder *dec = pts_pkt_decoder_new(NULL);
	struct pts_input in = {buf, len, 0};
	struct pts_packet p;
	int in_psb = 0, ended = 0;

	if (!dec)
		return -1;
	memset(t, 0, sizeof(*t));
	for (;;) {
		int r = pts_pkt_next(dec, &in, &p);

		if (r == -PTS_ERR_AGAIN && !ended) {
			pts_pkt_end(dec);
			ended = 1;
			continue;
		}
		if (r == -PTS_ERR_EOS)
			break;
		/* Bytes before the first PSB: libipt skips them too. */
		if (r == -PTS_ERR_SKIPPED)
			continue;
		if (r < 0) {
			FAIL("ptscope cannot decode the stream: %s",
			     pts_strerror(r));
			break;
		}
		if (t->n == t->cap) {
			t->cap = t->cap ? 2 * t->cap : 4096;
			t->v = realloc(t->v, t->cap * sizeof(*t->v));
			t->in_psb = realloc(t->in_psb, t->cap);
			if (!t->v || !t->in_psb)
				abort();
		}
		if (p.kind == PTS_PKT_PSB)
			in_psb = 1;
		t->v[t->n] = p;
		t->in_psb[t->n] = (uint8_t)(in_psb && p.kind != PTS_PKT_PSB);
		t->n++;
		if (p.kind == PTS_PKT_PSBEND)
			in_psb = 0;
	}
	pts_pkt_decoder_free(dec);
	return 0;
}

static void trace_free(struct trace *t)
{
	free(t->v);
	free(t->in_psb);
}

/* The index of the packet at @offset, or t->n when none starts there. */
static size_t pkt_at(const struct trace *t, uint64_t offset)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->n && t->v[lo].offset == offset ? lo : t->n;
}

/* ------------------------------------------------------------------------ */
/* ptscope's side: three clocks fed the same packets up to a cutoff.        */

struct side {
	const struct trace *t;
	const struct time_conf *tc;
	struct pts_time real; /* pts_time_packet(), as is */
	struct pts_time cmp;  /* the same, ratio cleared at OVF (libipt 2.0.5) */
	struct pts_time fast; /* pts_time_packets() outside PSB+ */
	struct pts_time items; /* pts_time_items() outside PSB+ */
	size_t next, next_fast;
	uint64_t ovfs;
};

static void side_reset(struct side *s, size_t from)
{
	const struct time_conf *tc = s->tc;

	pts_time_init(&s->real, tc->eax, tc->ebx, tc->mtc_freq, tc->nom_freq);
	s->cmp = s->fast = s->items = s->real;
	s->next = s->next_fast = from;
}

static int is_timing(int kind)
{
	return kind == PTS_PKT_TSC || kind == PTS_PKT_TMA ||
	       kind == PTS_PKT_MTC || kind == PTS_PKT_CYC ||
	       kind == PTS_PKT_CBR || kind == PTS_PKT_OVF;
}

/* The timing packets of @run (bit i of @which: @run[i]) as the items
 * a skim hands on: CYCs and MTCs as values, the others as packets. */
static void apply_items(struct pts_time *t, const struct pts_packet *run,
			uint64_t which)
{
	uint64_t values[64], mtc = 0, pkt = 0;
	struct pts_packet pkts[64];
	int n = 0, np = 0;

	for (; which; which &= which - 1) {
		const struct pts_packet *p = &run[__builtin_ctzll(which)];

		if (p->kind == PTS_PKT_CYC) {
			values[n] = p->u.cyc;
		} else if (p->kind == PTS_PKT_MTC) {
			values[n] = p->u.mtc_ctc;
			mtc |= 1ull << n;
		} else {
			pkts[np++] = *p;
			pkt |= 1ull << n;
		}
		n++;
	}
	if (n) {
		const struct pts_skim_timing items = {values, mtc, pkt, pkts,
						      n};

		pts_time_items(t, &items);
	}
}

/* Whether two clocks fed alike agree in everything they hold. */
static int same_clock(const struct pts_time *a, const struct pts_time *b)
{
	return a->tsc == b->tsc && a->base == b->base && a->fc == b->fc &&
	       a->ctc == b->ctc && a->ctc_cyc == b->ctc_cyc &&
	       a->have_tsc == b->have_tsc && a->have_tma == b->have_tma &&
	       a->have_mtc == b->have_mtc && a->cbr == b->cbr &&
	       a->last_cbr == b->last_cbr && a->lost_mtc == b->lost_mtc &&
	       a->lost_cyc == b->lost_cyc && a->fcr == b->fcr &&
	       a->cal_tsc == b->cal_tsc && a->cal_cyc_tsc == b->cal_cyc_tsc &&
	       a->cal_cyc_mtc == b->cal_cyc_mtc && a->cal_ctc == b->cal_ctc &&
	       a->cal_have_mtc == b->cal_have_mtc;
}

/* The fast paths: runs of up to 64 packets outside PSB+ at once, as
 * packets and as items. */
static void advance_fast(struct side *s, uint64_t cutoff)
{
	const struct trace *t = s->t;

	while (s->next_fast < t->n && t->v[s->next_fast].offset < cutoff) {
		size_t i = s->next_fast, k = 0;
		uint64_t which = 0;

		if (t->in_psb[i]) {
			pts_time_packet(&s->fast, &t->v[i], 1);
			pts_time_packet(&s->items, &t->v[i], 1);
			s->next_fast++;
			continue;
		}
		while (k < 64 && i + k < t->n && !t->in_psb[i + k] &&
		       t->v[i + k].offset < cutoff) {
			if (is_timing(t->v[i + k].kind))
				which |= 1ull << k;
			k++;
		}
		pts_time_packets(&s->fast, &t->v[i], which);
		apply_items(&s->items, &t->v[i], which);
		s->next_fast += k;
	}
}

/* Applies the packets before @cutoff. */
static void advance(struct side *s, uint64_t cutoff)
{
	const struct trace *t = s->t;

	while (s->next < t->n && t->v[s->next].offset < cutoff) {
		const struct pts_packet *p = &t->v[s->next];
		int in_psb = t->in_psb[s->next];
		uint64_t fcr = s->real.fcr;

		pts_time_packet(&s->real, p, in_psb);
		pts_time_packet(&s->cmp, p, in_psb);
		if (p->kind == PTS_PKT_OVF) {
			/* ptscope's documented OVF: the ratio stays, the
			 * measurements across the overflow start over. */
			CHECKF(s->real.fcr == fcr && !s->real.cal_have_mtc &&
				       !s->real.cal_cyc_mtc &&
				       !s->real.cal_cyc_tsc && !s->real.cal_tsc,
			       "OVF at %#" PRIx64 ": ratio %" PRIu64
			       " -> %" PRIu64 " or calibration kept",
			       p->offset, fcr, s->real.fcr);
			/* libipt 2.0.5 forgets the ratio (see the top). */
			s->cmp.fcr = 0;
			s->ovfs++;
		}
		s->next++;
	}
	advance_fast(s, cutoff);
}

/* ------------------------------------------------------------------------ */
/* libipt's side: the query decoder, driven by its status bits.             */

struct stats {
	uint64_t points, tnt, tip, events, resyncs, ovfs, lost_cyc, lost_mtc;
	uint64_t timed; /* points with a time on both sides */
};

struct run {
	const char *label;
	struct side side;
	struct pt_query_decoder *dec;
	struct stats *st;
	uint64_t cut; /* the cutoff of the last time copy */
	int reports;
};

static void report(struct run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void report(struct run *r, const char *fmt, ...)
{
	va_list ap;

	pts_check_failures++;
	if (r->reports++ >= MAX_REPORTS)
		return;
	fprintf(stderr, "%s: ", r->label);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Compares the clocks at a query whose time copy holds the packets before
 * @cutoff; @what names the query. */
static void compare(struct run *r, uint64_t cutoff, const char *what)
{
	struct side *s = &r->side;
	uint64_t lib_tsc = 0, our_tsc = 0, after = 0;
	uint32_t lib_mtc = 0, lib_cyc = 0;
	int lib_has, our_has, err;

	r->cut = cutoff;
	advance(s, cutoff);
	err = pt_qry_time(r->dec, &lib_tsc, &lib_mtc, &lib_cyc);
	lib_has = err >= 0;
	if (err < 0 && err != -pte_no_time)
		report(r, "pt_qry_time: %s", pt_errstr(pt_errcode(err)));
	our_has = pts_time_now(&s->cmp, &our_tsc);
	pt_qry_get_offset(r->dec, &after);
	r->st->points++;
	if (getenv("DIFF_TIME_VERBOSE"))
		printf("%s: %s before %#" PRIx64 ": libipt %#" PRIx64
		       " lost %u/%u, ptscope %#" PRIx64 " ratio %" PRIu64 "\n",
		       r->label, what, cutoff, lib_tsc, lib_mtc, lib_cyc,
		       our_tsc, s->cmp.fcr);
	if (lib_has && our_has)
		r->st->timed++;
	r->st->lost_cyc += lib_cyc;
	r->st->lost_mtc += lib_mtc;
	if (lib_has != our_has || (lib_has && lib_tsc != our_tsc) ||
	    lib_mtc != s->cmp.lost_mtc || lib_cyc != s->cmp.lost_cyc)
		report(r,
		       "%s, packets before %#" PRIx64 " (decoder at %#" PRIx64
		       "): libipt %s%#" PRIx64 " lost mtc %u cyc %u, "
		       "ptscope %s%#" PRIx64 " lost mtc %u cyc %u "
		       "(ratio %" PRIu64 ")",
		       what, cutoff, after, lib_has ? "" : "(no time) ",
		       lib_tsc, lib_mtc, lib_cyc, our_has ? "" : "(no time) ",
		       our_tsc, s->cmp.lost_mtc, s->cmp.lost_cyc, s->cmp.fcr);

	/* The fast path must end where the packet-by-packet one does. */
	if (s->fast.tsc != s->real.tsc || s->fast.have_tsc != s->real.have_tsc ||
	    s->fast.fcr != s->real.fcr ||
	    s->fast.lost_mtc != s->real.lost_mtc ||
	    s->fast.lost_cyc != s->real.lost_cyc)
		report(r,
		       "pts_time_packets before %#" PRIx64 ": %#" PRIx64
		       " ratio %" PRIu64 ", pts_time_packet: %#" PRIx64
		       " ratio %" PRIu64,
		       cutoff, s->fast.tsc, s->fast.fcr, s->real.tsc,
		       s->real.fcr);
	if (!same_clock(&s->items, &s->fast))
		report(r,
		       "pts_time_items before %#" PRIx64 ": %#" PRIx64
		       " ratio %" PRIu64 " lost cyc %u, pts_time_packets: "
		       "%#" PRIx64 " ratio %" PRIu64 " lost cyc %u",
		       cutoff, s->items.tsc, s->items.fcr, s->items.lost_cyc,
		       s->fast.tsc, s->fast.fcr, s->fast.lost_cyc);
}

#define K(kind) (1u << PTS_PKT_##kind)

/* The packet kinds an event is published at (see the top). */
static uint32_t event_kinds(const struct pt_event *ev)
{
	const uint32_t tip = K(TIP) | K(TIP_PGE) | K(TIP_PGD);

	if (ev->status_update)
		return K(PSBEND);
	switch (ev->type) {
	case ptev_enabled:
		return K(TIP_PGE);
	case ptev_disabled:
	case ptev_async_disabled:
		return K(TIP_PGD);
	case ptev_async_branch:
	case ptev_exec_mode:
	case ptev_async_paging:
	case ptev_async_vmcs:
		return tip;
	case ptev_paging:
		return K(PIP);
	case ptev_vmcs:
		return K(VMCS);
	case ptev_stop:
		return K(STOP);
	case ptev_cbr:
		return K(CBR);
	case ptev_mnt:
		return K(MNT) | K(PSBEND);
	case ptev_overflow:
		/* IP suppressed: resolved with tracing off, stand-alone at
		 * the OVF; else bound to the FUP after it. */
		return ev->ip_suppressed ? K(OVF) : K(FUP);
	case ptev_tsx:
		return ev->ip_suppressed ? K(MODE_TSX) : K(FUP);
	case ptev_exstop:
		return ev->ip_suppressed ? K(EXSTOP) : K(FUP);
	case ptev_ptwrite:
		return ev->ip_suppressed ? K(PTW) : K(FUP);
	case ptev_mwait:
		return K(FUP);
	case ptev_pwre:
		return K(PWRE);
	case ptev_pwrx:
		return K(PWRX);
	default:
		return 0;
	}
}

/* Where an event's time copy was taken, searching from the decoder's
 * position before the query (@before). */
static uint64_t event_cutoff(struct run *r, uint64_t before,
			     const struct pt_event *ev)
{
	const struct trace *t = r->side.t;
	uint32_t kinds = event_kinds(ev);
	size_t i = pkt_at(t, before);

	for (; i < t->n; i++) {
		const struct pts_packet *p = &t->v[i];

		if (!(kinds & (1u << p->kind)))
			continue;
		return p->kind == PTS_PKT_CBR ? p->offset + p->size
					      : p->offset;
	}
	report(r, "event %d at %#" PRIx64 ": no packet to bind it to",
	       (int)ev->type, before);
	return before;
}

/* The end of the @kinds packet at @before (the TNT or TIP a branch query
 * decoded), or @before after a report. */
static uint64_t branch_cutoff(struct run *r, uint64_t before, uint32_t kinds,
			      uint8_t *bits)
{
	const struct trace *t = r->side.t;
	size_t i = pkt_at(t, before);

	if (i == t->n || !(kinds & (1u << t->v[i].kind))) {
		report(r, "no %s packet at %#" PRIx64,
		       kinds & K(TIP) ? "TIP" : "TNT", before);
		return before;
	}
	if (bits)
		*bits = t->v[i].u.tnt.count;
	return t->v[i].offset + t->v[i].size;
}

/* libipt failed a query: count it, resynchronize both sides at the next
 * PSB. Returns the new status, < 0 at the end. */
static int resync(struct run *r, int err)
{
	uint64_t off = 0;
	int status;

	if (err != -pte_eos)
		report(r, "libipt query failed: %s",
		       pt_errstr(pt_errcode(err)));
	status = pt_qry_sync_forward(r->dec, NULL);
	if (status < 0)
		return status;
	r->st->resyncs++;
	pt_qry_get_sync_offset(r->dec, &off);
	side_reset(&r->side, pkt_at(r->side.t, off));
	return status;
}

/* Walks @buf with libipt and compares at every query. */
static void run_stream(const char *label, const uint8_t *buf, size_t len,
		       const struct time_conf *tc, struct stats *st)
{
	struct trace t;
	struct pt_config pc;
	struct run r;
	uint64_t off = 0;
	uint8_t tnt_left = 0;
	int status;

	const char *dump = getenv("DIFF_TIME_DUMP"); /* a directory */

	if (dump) {
		char path[4096];
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s.pt", dump, label);
		for (char *c = path + strlen(dump) + 1; *c; c++)
			if (*c == '/' || *c == ' ')
				*c = '_';
		f = fopen(path, "wb");
		if (f) {
			fwrite(buf, 1, len, f);
			fclose(f);
		}
	}
	if (decode_all(buf, len, &t) < 0) {
		FAIL("%s: no memory", label);
		return;
	}
	memset(&r, 0, sizeof(r));
	r.label = label;
	r.st = st;
	r.side.t = &t;
	r.side.tc = tc;
	pt_config_init(&pc);
	pc.begin = (uint8_t *)buf;
	pc.end = (uint8_t *)buf + len;
	pc.cpuid_0x15_eax = tc->eax;
	pc.cpuid_0x15_ebx = tc->ebx;
	pc.mtc_freq = tc->mtc_freq;
	pc.nom_freq = tc->nom_freq;
	r.dec = pt_qry_alloc_decoder(&pc);
	if (!r.dec) {
		FAIL("%s: pt_qry_alloc_decoder failed", label);
		trace_free(&t);
		return;
	}
	status = pt_qry_sync_forward(r.dec, NULL);
	CHECKF(status >= 0, "%s: pt_qry_sync_forward: %s", label,
	       pt_errstr(pt_errcode(status)));
	pt_qry_get_sync_offset(r.dec, &off);
	side_reset(&r.side, pkt_at(&t, off));
	while (status >= 0) {
		uint64_t before = 0, ip;
		int taken;

		pt_qry_get_offset(r.dec, &before);
		if (!tnt_left && (status & pts_event_pending)) {
			struct pt_event ev;

			status = pt_qry_event(r.dec, &ev, sizeof(ev));
			if (status < 0) {
				status = resync(&r, status);
				continue;
			}
			st->events++;
			compare(&r, event_cutoff(&r, before, &ev), "event");
			continue;
		}
		if (!tnt_left && (status & pts_eos))
			break;
		status = pt_qry_cond_branch(r.dec, &taken);
		if (status >= 0) {
			/* A new TNT loads the cache and takes the copy;
			 * its other bits only use the cache. */
			if (!tnt_left) {
				uint8_t bits = 1;
				uint64_t cut = branch_cutoff(
					&r, before, K(TNT8) | K(TNT64), &bits);

				tnt_left = (uint8_t)(bits ? bits - 1 : 0);
				compare(&r, cut, "cond branch");
			} else {
				tnt_left--;
				compare(&r, r.cut, "cond branch (cached)");
			}
			st->tnt++;
			continue;
		}
		if (status != -pte_bad_query || tnt_left) {
			status = resync(&r, status);
			tnt_left = 0;
			continue;
		}
		status = pt_qry_indirect_branch(r.dec, &ip);
		if (status < 0) {
			status = resync(&r, status);
			continue;
		}
		st->tip++;
		compare(&r, branch_cutoff(&r, before, K(TIP), NULL),
			"indirect branch");
	}
	st->ovfs += r.side.ovfs;
	pt_qry_free_decoder(r.dec);
	trace_free(&t);
}

/* ------------------------------------------------------------------------ */
/* Synthesized walks.                                                        */

struct synth_case {
	const char *name;
	uint8_t mtc_freq, cyc_thresh;
	uint32_t freq_rate, ovf_rate, async_rate;
};

static void run_synth(const char *elf, const struct synth_case *sc,
		      uint64_t seed, struct stats *st)
{
	struct pts_image *img = pts_image_new();
	struct syn_options o;
	struct pts_config cfg;
	struct syn_sink sink;
	struct syn_emit_stats es;
	char label[128];
	int err;

	if (!img || pts_image_add_elf(img, 0, elf, 0) < 0) {
		FAIL("%s: cannot load", elf);
		pts_image_free(img);
		return;
	}
	syn_options_default(&o);
	o.seed = seed;
	o.insns = 60000;
	o.tsc = o.mtc = o.cyc = 1;
	o.mtc_freq = sc->mtc_freq;
	o.cyc_thresh = sc->cyc_thresh;
	o.freq_rate = sc->freq_rate;
	o.ovf_rate = sc->ovf_rate;
	o.async_rate = sc->async_rate;
	o.psb_period = 2048;
	pts_config_init(&cfg);
	syn_options_to_config(&o, &cfg);
	syn_sink_init(&sink, NULL);
	err = syn_walk_to_memory(&o, &cfg, img, 0, &sink, NULL, NULL, &es);
	CHECKF(err >= 0, "%s: synthesis failed: %s", sc->name,
	       pts_strerror(err));
	if (err >= 0) {
		for (int nom = 0; nom < 2; nom++) {
			struct time_conf tc = {o.eax, o.ebx, o.mtc_freq,
					   nom ? o.nom_ratio : 0};

			snprintf(label, sizeof(label), "synth %s nom=%u",
				 sc->name, tc.nom_freq);
			run_stream(label, sink.mem, sink.mem_len, &tc, st);
		}
	}
	free(sink.mem);
	pts_config_fini(&cfg);
	pts_image_free(img);
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x71;
	static const struct time_conf confs[] = {
		/* N = 3: the TMA holds every bit an MTC has. */
		{2, 200, 3, 24},
		{2, 200, 3, 0},
		/* N = 9: 17 CTC bits, the TMA's 16 are not enough. */
		{2, 200, 9, 24},
		{2, 200, 9, 0},
		/* A ratio that does not divide: rounding per MTC. */
		{3, 250, 5, 30},
		{7, 601, 0, 0},
	};
	static const struct synth_case synths[] = {
		{"N=3 thresh=2", 3, 2, 200, 100, 300},
		{"N=9 thresh=0", 9, 0, 100, 50, 0},
		{"N=6 thresh=5", 6, 5, 400, 200, 100},
	};
	struct stats st;
	const char *elf = "/usr/bin/bash";

	memset(&st, 0, sizeof(st));
	for (size_t c = 0; c < sizeof(confs) / sizeof(confs[0]); c++) {
		const struct time_conf *tc = &confs[c];
		struct time_gen g;
		char label[128];

		time_gen_init(&g, tc, seed + c);
		time_gen_hand(&g);
		snprintf(label, sizeof(label),
			 "hand N=%u ratio=%u/%u nom=%u", tc->mtc_freq, tc->ebx,
			 tc->eax, tc->nom_freq);
		run_stream(label, g.buf, g.len, tc, &st);
		free(g.buf);
		time_gen_init(&g, tc, seed + c);
		time_gen_cal_order(&g);
		snprintf(label, sizeof(label),
			 "cal-order N=%u ratio=%u/%u nom=%u", tc->mtc_freq,
			 tc->ebx, tc->eax, tc->nom_freq);
		run_stream(label, g.buf, g.len, tc, &st);
		free(g.buf);
		for (unsigned k = 0; k < 4; k++) {
			uint64_t s = seed * 1000 + c * 10 + k;

			time_gen_init(&g, tc, s);
			time_gen_random(&g, 20000);
			snprintf(label, sizeof(label),
				 "random seed=%#" PRIx64 " N=%u ratio=%u/%u "
				 "nom=%u",
				 s, tc->mtc_freq, tc->ebx, tc->eax,
				 tc->nom_freq);
			run_stream(label, g.buf, g.len, tc, &st);
			free(g.buf);
		}
	}
	if (access(elf, R_OK) == 0) {
		for (size_t i = 0; i < sizeof(synths) / sizeof(synths[0]); i++)
			run_synth(elf, &synths[i], seed + i, &st);
	} else {
		fprintf(stderr, "no %s: synthesized walks skipped\n", elf);
	}
	printf("%" PRIu64 " query points (%" PRIu64 " with time): %" PRIu64
	       " TNT, %" PRIu64 " TIP, %" PRIu64 " events; %" PRIu64
	       " OVF, %" PRIu64 " resyncs; lost cyc %" PRIu64 " mtc %" PRIu64
	       " summed over points\n",
	       st.points, st.timed, st.tnt, st.tip, st.events, st.ovfs,
	       st.resyncs, st.lost_cyc, st.lost_mtc);
	/* The comparison must have had something to compare. */
	CHECK(st.timed > 1000);
	CHECK(st.ovfs > 0);
	CHECK(st.lost_cyc > 0);
	return pts_check_exit();
}
