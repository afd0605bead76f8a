/* Token streams of decoded flows (flow_tokens.h). */
#include "flow_tokens.h"

#include "rng.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pts_toks_add(struct pts_toks *t, uint64_t x)
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

void pts_toks_free(struct pts_toks *t)
{
	free(t->v);
	t->v = NULL;
	t->n = t->cap = 0;
	t->insns = 0;
}

static int libipt_events(struct pt_insn_decoder *d, int status,
			 struct pts_toks *t)
{
	while (status & pts_event_pending) {
		struct pt_event ev;
		status = pt_insn_event(d, &ev, sizeof(ev));
		if (status < 0)
			return status;
		if (ev.status_update)
			continue;
		if (ev.type == ptev_enabled)
			pts_toks_add(t, PTS_TOK_EVENT(
				ev.variant.enabled.resumed ? PTS_TOK_RESUMED
							   : PTS_TOK_ENABLED));
		else if (ev.type == ptev_disabled ||
			 ev.type == ptev_async_disabled)
			pts_toks_add(t, PTS_TOK_EVENT(PTS_TOK_DISABLED));
		else if (ev.type == ptev_overflow)
			pts_toks_add(t, PTS_TOK_EVENT(PTS_TOK_OVERFLOW));
		else if (ev.type == ptev_cbr && t->with_cbr)
			pts_toks_add(t, PTS_TOK_CBR_OF(ev.variant.cbr.ratio));
	}
	return status;
}

void pts_toks_libipt(const struct pt_config *cfg,
		     int (*setup)(struct pt_image *img, void *ctx), void *ctx,
		     struct pts_toks *t)
{
	struct pt_insn_decoder *d = pt_insn_alloc_decoder(cfg);
	if (!d || setup(pt_insn_get_image(d), ctx) < 0) {
		fprintf(stderr, "libipt decoder set-up failed\n");
		exit(2);
	}
	for (;;) {
		int status = pt_insn_sync_forward(d);
		if (status < 0)
			break;
		for (;;) {
			status = libipt_events(d, status, t);
			if (status < 0 || (status & pts_eos))
				break;
			struct pt_insn insn;
			/* iclass ptic_error, for a call that fails before it
			 * fills the instruction in */
			memset(&insn, 0, sizeof(insn));
			status = pt_insn_next(d, &insn, sizeof(insn));
			if (status < 0) {
				/* As ptxed: the instruction may be complete. */
				if (insn.iclass != ptic_error) {
					pts_toks_add(t, insn.ip);
					t->insns++;
				}
				break;
			}
			pts_toks_add(t, insn.ip);
			t->insns++;
		}
		if (status == -pte_eos || (status >= 0 && (status & pts_eos)))
			break;
		pts_toks_add(t, PTS_TOK_EVENT(PTS_TOK_ERROR));
		if (getenv("FLOW_TOKENS_DEBUG")) {
			uint64_t off = 0;
			pt_insn_get_offset(d, &off);
			fprintf(stderr, "libipt error at %" PRIx64 ": %s\n", off,
				pt_errstr(pt_errcode(status)));
		}
	}
	pt_insn_free_decoder(d);
}

static void ptscope_rec(const struct pts_flow_rec *r, struct pts_toks *t)
{
	if (r->kind == PTS_FLOW_INSNS) {
		for (uint32_t k = 0; k < r->n; k++)
			pts_toks_add(t, r->ips[k]);
		t->insns += r->n;
	} else if (r->kind == PTS_FLOW_ERROR) {
		pts_toks_add(t, PTS_TOK_EVENT(PTS_TOK_ERROR));
		if (getenv("FLOW_TOKENS_DEBUG"))
			fprintf(stderr, "ptscope error at %" PRIx64 ": %s\n",
				r->offset, pts_strerror(r->error));
	} else if (r->kind == PTS_FLOW_EVENT &&
		   !(r->flags & PTS_EV_F_STATUS)) {
		if (r->type == PTS_EV_ENABLED)
			pts_toks_add(t, PTS_TOK_EVENT(
				(r->flags & PTS_EV_F_RESUMED) ? PTS_TOK_RESUMED
							      : PTS_TOK_ENABLED));
		else if (r->type == PTS_EV_DISABLED ||
			 r->type == PTS_EV_ASYNC_DISABLED)
			pts_toks_add(t, PTS_TOK_EVENT(PTS_TOK_DISABLED));
		else if (r->type == PTS_EV_OVERFLOW)
			pts_toks_add(t, PTS_TOK_EVENT(PTS_TOK_OVERFLOW));
		else if (r->type == PTS_EV_CBR && t->with_cbr)
			pts_toks_add(t, PTS_TOK_CBR_OF(r->arg));
	}
}

void pts_toks_ptscope(const struct pts_image *img,
		      const struct pts_flow_config *config,
		      const uint8_t *trace, size_t size, uint64_t seed,
		      struct pts_toks *t)
{
	struct pts_flow *f = pts_flow_new(config, img);
	if (!f) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	struct pts_rng rng;
	pts_rng_seed(&rng, seed);
	struct pts_flow_rec recs[64];
	size_t pos = 0;
	struct pts_input in = {NULL, 0, 0};
	for (;;) {
		int max = 1 + (int)pts_rng_below(&rng, 64);
		int n = pts_flow_next(f, &in, recs, max);
		if (n == -PTS_ERR_AGAIN) {
			if (pos == size) {
				pts_flow_end(f);
				continue;
			}
			size_t len = 1 + pts_rng_below(&rng, 4096);
			if (len > size - pos)
				len = size - pos;
			in = (struct pts_input){trace + pos, len, 0};
			pos += len;
			continue;
		}
		if (n < 0)
			break;
		for (int i = 0; i < n; i++)
			ptscope_rec(&recs[i], t);
	}
	pts_flow_free(f);
}

void pts_toks_show(const char *what, const struct pts_toks *t, size_t from,
		   size_t to, size_t at)
{
	static const char *const names[] = {"?", "enabled", "disabled",
					    "overflow", "error", "resumed",
					    "cbr", "?"};
	fprintf(stderr, "  %s:", what);
	for (size_t k = at > from + 4 ? at - 4 : from; k < to && k < at + 4;
	     k++) {
		if (PTS_TOK_IS_EVENT(t->v[k]) &&
		    (t->v[k] & 0xf) == PTS_TOK_CBR)
			fprintf(stderr, " [cbr: %x]", (unsigned)(t->v[k] >> 4 &
								 0xff));
		else if (PTS_TOK_IS_EVENT(t->v[k]))
			fprintf(stderr, " [%s]", names[t->v[k] & 7]);
		else
			fprintf(stderr, " %" PRIx64, t->v[k]);
		if (k == at)
			fprintf(stderr, "<");
	}
	fprintf(stderr, "\n");
}

int pts_toks_compare(const char *label, const char *a_name,
		     const struct pts_toks *a, const char *b_name,
		     const struct pts_toks *b, int insns_only)
{
	size_t i = 0, j = 0;
	for (;;) {
		if (insns_only) {
			while (i < a->n && PTS_TOK_IS_EVENT(a->v[i]))
				i++;
			while (j < b->n && PTS_TOK_IS_EVENT(b->v[j]))
				j++;
		}
		if (i == a->n && j == b->n)
			return 0;
		if (i == a->n || j == b->n || a->v[i] != b->v[j]) {
			fprintf(stderr, "%s: %s and %s differ at %zu/%zu\n",
				label, a_name, b_name, i, j);
			pts_toks_show(a_name, a, 0, a->n, i);
			pts_toks_show(b_name, b, 0, b->n, j);
			return 1;
		}
		i++;
		j++;
	}
}
