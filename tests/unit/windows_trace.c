/* See windows_trace.h. */
#include "windows_trace.h"

#include <stdio.h>
#include <string.h>

void wt_init(struct wtrace *t)
{
	memset(t, 0, sizeof(*t));
	pts_lastip_reset(&t->lip);
}

static void put(struct wtrace *t, const struct pts_packet *pkt)
{
	int n = pts_pkt_encode(pkt, t->buf + t->len, sizeof(t->buf) - t->len);

	if (n < 0) {
		fprintf(stderr, "wt: cannot encode a %s: %s\n",
			pts_pkt_kind_name(pkt->kind), pts_strerror(n));
		t->failed = 1;
		return;
	}
	t->len += (size_t)n;
}

static struct pts_packet make(int kind)
{
	struct pts_packet p;

	memset(&p, 0, sizeof(p));
	p.kind = (uint8_t)kind;
	return p;
}

void wt_plain(struct wtrace *t, int kind)
{
	struct pts_packet p = make(kind);

	put(t, &p);
}

void wt_psb(struct wtrace *t)
{
	wt_plain(t, PTS_PKT_PSB);
	pts_lastip_reset(&t->lip);
}

void wt_ip(struct wtrace *t, int kind, uint64_t ip)
{
	struct pts_packet p = make(kind);

	pts_pkt_make_ip(&p, kind, ip, &t->lip);
	put(t, &p);
}

void wt_pgd0(struct wtrace *t)
{
	struct pts_packet p = make(PTS_PKT_TIP_PGD);

	p.ipc = PTS_IPC_SUPPRESSED;
	put(t, &p);
}

void wt_tnt(struct wtrace *t, unsigned count)
{
	struct pts_packet p = make(count <= 6 ? PTS_PKT_TNT8 : PTS_PKT_TNT64);

	p.u.tnt.count = (uint8_t)count;
	p.u.tnt.bits = 1;
	put(t, &p);
}

void wt_mode64(struct wtrace *t)
{
	struct pts_packet p = make(PTS_PKT_MODE_EXEC);

	p.u.exec.csl = 1;
	put(t, &p);
}

void wt_pip(struct wtrace *t, uint64_t cr3)
{
	struct pts_packet p = make(PTS_PKT_PIP);

	p.u.pip.cr3 = cr3;
	put(t, &p);
}

void wt_tsc(struct wtrace *t, uint64_t tsc)
{
	struct pts_packet p = make(PTS_PKT_TSC);

	p.u.tsc = tsc;
	put(t, &p);
}

void wt_tma(struct wtrace *t, uint16_t ctc, uint16_t fc)
{
	struct pts_packet p = make(PTS_PKT_TMA);

	p.u.tma.ctc = ctc;
	p.u.tma.fc = fc;
	put(t, &p);
}

void wt_mtc(struct wtrace *t, uint8_t ctc)
{
	struct pts_packet p = make(PTS_PKT_MTC);

	p.u.mtc_ctc = ctc;
	put(t, &p);
}

void wt_cyc(struct wtrace *t, uint64_t cycles)
{
	struct pts_packet p = make(PTS_PKT_CYC);

	p.u.cyc = cycles;
	put(t, &p);
}

void wt_cbr(struct wtrace *t, uint8_t ratio)
{
	struct pts_packet p = make(PTS_PKT_CBR);

	p.u.cbr.ratio = ratio;
	put(t, &p);
}

/* The values alternate between 2^56 - 1 and 2^55 - 2: from the first to
 * the second the TSC goes back by more than 2^55, which the clock reads
 * as one wrap of the 56 bits a TSC packet carries (time_track.c). */
void wt_tsc_jumps(struct wtrace *t, int n)
{
	static const uint64_t values[2] = {(1ull << 56) - 1, (1ull << 55) - 2};

	for (int i = 0; i < n; i++)
		wt_tsc(t, values[i & 1]);
}

/* 260 jumps of at least 2^55 ticks: 2^63 and a bit. */
void wt_make_wild_tsc(struct wtrace *t)
{
	wt_init(t);
	wt_psb(t);
	wt_tsc(t, 0);
	wt_plain(t, PTS_PKT_PSBEND);
	wt_ip(t, PTS_PKT_TIP_PGE, 0x401000);
	wt_tsc_jumps(t, 260);
	wt_ip(t, PTS_PKT_TIP_PGD, 0x401000);
	wt_tsc_jumps(t, 260);
	wt_ip(t, PTS_PKT_TIP_PGE, 0x401000);
	wt_tsc_jumps(t, 260);
	wt_pgd0(t);
}

void wt_bytes(struct wtrace *t, const uint8_t *b, size_t n)
{
	if (t->len + n > sizeof(t->buf)) {
		t->failed = 1;
		return;
	}
	memcpy(t->buf + t->len, b, n);
	t->len += n;
}

void wt_header(struct wtrace *t, int with_fup, uint64_t ip)
{
	wt_psb(t);
	wt_cbr(t, 24);
	if (with_fup) {
		wt_mode64(t);
		wt_ip(t, PTS_PKT_FUP, ip);
	}
	wt_plain(t, PTS_PKT_PSBEND);
}

static void keep(struct pts_win_model *m, struct wresult *r, int err)
{
	struct pts_win_record rec;

	if (err < 0 && !r->err)
		r->err = err;
	while (pts_win_next(m, &rec) == 1)
		if (r->n < WT_MAX_RECS)
			r->recs[r->n++] = rec;
}

/* wt_run() and wt_run_unverified(). */
static int run_model(const struct wtrace *t,
		     const struct pts_trace_config *cfg,
		     const struct pts_win_evidence *evidence,
		     uint64_t ev_after, int verify, struct wresult *r)
{
	struct pts_pkt_decoder *dec = pts_pkt_decoder_new(NULL);
	struct pts_win_model *m = pts_win_new(cfg);
	struct pts_input in = {t->buf, t->len, 0};
	struct pts_packet pkt;
	uint64_t begin, end;
	int n, ended = 0;

	memset(r, 0, sizeof(*r));
	pts_win_set_verify(m, verify);
	if (!dec || !m || t->failed) {
		pts_pkt_decoder_free(dec);
		pts_win_free(m);
		return -1;
	}
	for (;;) {
		n = pts_pkt_next(dec, &in, &pkt);
		if (n > 0) {
			keep(m, r, pts_win_feed(m, &pkt));
			if (evidence && pkt.offset == ev_after)
				keep(m, r, pts_win_evidence(m, evidence));
			continue;
		}
		if (n == -PTS_ERR_AGAIN && !ended) {
			pts_pkt_end(dec);
			ended = 1;
			continue;
		}
		if (n == -PTS_ERR_EOS || n == -PTS_ERR_AGAIN)
			break;
		pts_pkt_error_range(dec, &begin, &end);
		keep(m, r, pts_win_lost(m,
					n == -PTS_ERR_TRUNCATED
						? PTS_GAP_TRUNCATED
						: PTS_GAP_DECODE_ERROR,
					begin, end));
		if (n == -PTS_ERR_TRUNCATED)
			break;
	}
	keep(m, r, pts_win_end(m, t->len));
	pts_win_summary(m, &r->sum);
	pts_win_free(m);
	pts_pkt_decoder_free(dec);
	return 0;
}

int wt_run(const struct wtrace *t, const struct pts_trace_config *cfg,
	   const struct pts_win_evidence *evidence, uint64_t ev_after,
	   struct wresult *r)
{
	return run_model(t, cfg, evidence, ev_after, 1, r);
}

int wt_run_unverified(const struct wtrace *t,
		      const struct pts_trace_config *cfg, struct wresult *r)
{
	return run_model(t, cfg, NULL, 0, 0, r);
}

const struct pts_win_record *wt_find(const struct wresult *r, int type,
				     int nth)
{
	for (int i = 0; i < r->n; i++)
		if (r->recs[i].type == type && nth-- == 0)
			return &r->recs[i];
	return NULL;
}

int wt_count(const struct wresult *r, int type, int what)
{
	int n = 0;

	for (int i = 0; i < r->n; i++) {
		const struct pts_win_record *rec = &r->recs[i];

		if (rec->type != type)
			continue;
		if (what < 0 || (type == PTS_REC_GAP && rec->cause == what) ||
		    (type == PTS_REC_VIOLATION && rec->rule == what))
			n++;
	}
	return n;
}

void wt_dump(const struct wresult *r)
{
	static const char *const types[] = {"window", "gap", "violation"};

	for (int i = 0; i < r->n; i++) {
		const struct pts_win_record *rec = &r->recs[i];

		fprintf(stderr, "  %-9s %4llu..%-4llu", types[rec->type],
			(unsigned long long)rec->begin.offset,
			(unsigned long long)rec->end.offset);
		if (rec->type == PTS_REC_GAP)
			fprintf(stderr, " %s [%s] %s/%s",
				pts_gap_cause_name(rec->cause),
				pts_gap_basis_name(rec->basis),
				pts_enclave_edge_name(rec->entry),
				pts_enclave_edge_name(rec->exit));
		if (rec->type == PTS_REC_VIOLATION)
			fprintf(stderr, " %s", pts_rule_name(rec->rule));
		fprintf(stderr, " %s\n", rec->detail);
	}
}
