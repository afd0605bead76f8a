/* The ground truth (every executed instruction, hidden ones marked with
 * why, and the events) and the expected visible flow (what a correct
 * decoder prints). Formats: fixtures/FORMATS.md. Written with a hand-made
 * hex formatter: a 100M-instruction walk writes a gigabyte of truth. */
#include "synth.h"

#include <stdlib.h>
#include <string.h>

struct syn_truth {
	FILE *truth, *visible;
	char tbuf[1 << 16], vbuf[1 << 16];
	size_t tlen, vlen;
	int gap;     /* the visible flow is inside a gap */
	int gap_why; /* and why it began */
	int failed;
};

static void flush_buf(FILE *f, char *buf, size_t *len, int *failed)
{
	if (f && *len && fwrite(buf, 1, *len, f) != *len)
		*failed = 1;
	*len = 0;
}

static char *room(struct syn_truth *t, int vis, size_t n)
{
	if (vis) {
		if (sizeof(t->vbuf) - t->vlen < n)
			flush_buf(t->visible, t->vbuf, &t->vlen, &t->failed);
		return t->vbuf + t->vlen;
	}
	if (sizeof(t->tbuf) - t->tlen < n)
		flush_buf(t->truth, t->tbuf, &t->tlen, &t->failed);
	return t->tbuf + t->tlen;
}

static size_t put_hex(char *p, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[16];
	size_t n = 0;
	do {
		tmp[n++] = digits[v & 0xf];
		v >>= 4;
	} while (v);
	for (size_t i = 0; i < n; i++)
		p[i] = tmp[n - 1 - i];
	return n;
}

static void put_line(struct syn_truth *t, int vis, const char *prefix,
		     uint64_t a, const char *mid, uint64_t b, const char *tail)
{
	FILE *f = vis ? t->visible : t->truth;
	if (!f)
		return;
	char *p = room(t, vis, 128), *q = p;
	size_t n = strlen(prefix);
	memcpy(q, prefix, n);
	q += n;
	q += put_hex(q, a);
	if (mid) {
		n = strlen(mid);
		memcpy(q, mid, n);
		q += n;
		q += put_hex(q, b);
	}
	if (tail) {
		n = strlen(tail);
		memcpy(q, tail, n);
		q += n;
	}
	*q++ = '\n';
	if (vis)
		t->vlen += (size_t)(q - p);
	else
		t->tlen += (size_t)(q - p);
}

struct syn_truth *syn_truth_new(FILE *truth, FILE *visible)
{
	struct syn_truth *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->truth = truth;
	t->visible = visible;
	if (truth)
		fputs("# ptscope-truth 1\n", truth);
	if (visible)
		fputs("# ptscope-visible 1\n", visible);
	return t;
}

/* Indexed by enum syn_hidden. */
static const char *const hidden_suffix[SYN_HID_COUNT] = {
	NULL, " overflow", " stopped", " enclave", " cpl", " cr3", " filter",
};

static const char *const event_names[SYN_KIND_COUNT] = {
	[SYN_FAR] = "far",     [SYN_ENCLU] = "enclu", [SYN_INTR] = "intr",
	[SYN_AEX] = "aex",     [SYN_RESTART] = "restart",
};

void syn_truth_step(struct syn_truth *t, const struct syn_step *s,
		    int hidden, const struct pts_config *cfg)
{
	char tail[48];
	const char *name = event_names[s->kind];
	if (name && t->truth) {
		/* "! KIND FROM -> TO [enclave N]": how control left. */
		snprintf(tail, sizeof(tail), "%s%s",
			 s->to.encl >= 0 ? " enclave " : "",
			 s->to.encl >= 0 ? (cfg->enclaves[s->to.encl].kind ==
							    PTS_ENCLAVE_DEBUG
						    ? "debug"
						    : "production")
					 : "");
		char prefix[24];
		snprintf(prefix, sizeof(prefix), "! %s ", name);
		/* Events come before the instruction lines they affect;
		 * instructions that are events too (ENCLU, FAR) come first. */
		if (syn_is_insn(s))
			put_line(t, 0, "", s->ip, NULL, 0,
				 hidden_suffix[hidden]);
		put_line(t, 0, prefix, s->ip, " -> ", s->next, tail);
	} else if (syn_is_insn(s) && t->truth) {
		put_line(t, 0, "", s->ip, NULL, 0, hidden_suffix[hidden]);
	}
	/* An ENCLU is the FUP of its transition: a decoder never reports it
	 * as executed (nor does libipt), so the visible flow leaves it out,
	 * as it does the exit the walk makes at any instruction to leave an
	 * enclave for a restart (syn_walk_leave_enclave()). */
	if (!syn_is_insn(s) || !t->visible || s->kind == SYN_ENCLU)
		return;
	if (hidden) {
		if (!t->gap) {
			t->gap = 1;
			t->gap_why = hidden;
		}
		return;
	}
	if (t->gap) {
		char *p = room(t, 1, 64);
		int n = snprintf(p, 64, "-- %s\n", syn_hidden_name(t->gap_why));
		t->vlen += (size_t)n;
		t->gap = 0;
	}
	put_line(t, 1, "", s->ip, NULL, 0, NULL);
}

void syn_truth_time(struct syn_truth *t, uint64_t tsc, uint64_t cycles)
{
	put_line(t, 0, "t ", tsc, " ", cycles, NULL);
}

int syn_truth_free(struct syn_truth *t)
{
	if (!t)
		return 0;
	if (t->visible && t->gap) {
		char *p = room(t, 1, 64);
		t->vlen += (size_t)snprintf(p, 64, "-- %s\n",
					    syn_hidden_name(t->gap_why));
	}
	flush_buf(t->truth, t->tbuf, &t->tlen, &t->failed);
	flush_buf(t->visible, t->vbuf, &t->vlen, &t->failed);
	int failed = t->failed;
	free(t);
	return failed ? -PTS_ERR_IO : 0;
}
