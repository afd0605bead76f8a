#include "skim_expect.h"

#include <stdlib.h>
#include <string.h>

void pts_test_skim_add(struct pts_skim *sum, const struct pts_packet *pk)
{
	sum->packets++;
	if (pk->kind == PTS_PKT_TNT8 || pk->kind == PTS_PKT_TNT64) {
		sum->tnt_packets++;
		sum->tnt_bits += pk->u.tnt.count;
	} else if (pk->kind == PTS_PKT_TIP) {
		sum->tips++;
		if (pk->ipc != PTS_IPC_SUPPRESSED) {
			sum->last_ip = pk->u.ip.ip;
			sum->has_ip = 1;
		}
	}
}

/* Room for @n more packets in @c, or 0 when a call handed on a number
 * no call may (at most 64, at least 1). */
static int room(struct pts_test_calls *c, int n)
{
	if (n <= 0 || n > 64) {
		c->bad = 1;
		return 0;
	}
	if (c->n + (size_t)n > c->cap) {
		size_t cap = 2 * c->cap + (size_t)n + 64;
		struct pts_packet *p = realloc(c->pkts, cap * sizeof(*p));
		uint8_t *bare = realloc(c->bare, cap);

		if (!p || !bare)
			abort();
		c->pkts = p;
		c->bare = bare;
		c->cap = cap;
	}
	return 1;
}

static void record(void *ctx, const struct pts_packet *pkts, int n)
{
	struct pts_test_calls *c = ctx;

	if (!room(c, n))
		return;
	memcpy(c->pkts + c->n, pkts, (size_t)n * sizeof(*pkts));
	memset(c->bare + c->n, 0, (size_t)n);
	c->n += (size_t)n;
}

static void record_items(void *ctx, const struct pts_skim_timing *t)
{
	struct pts_test_calls *c = ctx;
	const struct pts_packet *next = t->pkts;

	/* an item is an MTC or a packet, not both */
	c->bad |= (t->mtc & t->pkt) != 0;
	if (c->bad || !room(c, t->n))
		return;
	for (int i = 0; i < t->n; i++, c->n++) {
		struct pts_packet *p = &c->pkts[c->n];

		c->bare[c->n] = !(t->pkt >> i & 1);
		if (!c->bare[c->n]) {
			*p = *next++;
			continue;
		}
		memset(p, 0, sizeof(*p));
		if (t->mtc >> i & 1) {
			p->kind = PTS_PKT_MTC;
			p->u.mtc_ctc = (uint8_t)t->value[i];
			/* an MTC's payload is one byte */
			c->bad |= t->value[i] > 0xff;
		} else {
			p->kind = PTS_PKT_CYC;
			p->u.cyc = t->value[i];
		}
	}
}

int pts_test_skim_take(const uint8_t *actions, struct pts_skim *sum,
		       struct pts_test_calls *c, const struct pts_packet *want)
{
	switch (actions[want->kind]) {
	case PTS_SKIM_SKIP:
		pts_test_skim_add(sum, want);
		return 1;
	case PTS_SKIM_CALL:
		return pts_test_calls_take(c, want) ? 1 : -1;
	default:
		return 0;
	}
}

struct pts_skim_call pts_test_calls_hook(struct pts_test_calls *c,
					 int items)
{
	struct pts_skim_call call = {record, c, items ? record_items : NULL};

	return call;
}

int pts_test_calls_take(struct pts_test_calls *c,
			const struct pts_packet *want)
{
	const struct pts_packet *got;

	if (c->taken == c->n)
		return 0;
	got = &c->pkts[c->taken];
	if (!c->bare[c->taken++])
		return !memcmp(got, want, sizeof(*want));
	if (got->kind != want->kind)
		return 0;
	return want->kind == PTS_PKT_MTC ? got->u.mtc_ctc == want->u.mtc_ctc
					 : got->u.cyc == want->u.cyc;
}

int pts_test_calls_done(const struct pts_test_calls *c)
{
	return !c->bad && c->taken == c->n;
}

void pts_test_calls_free(struct pts_test_calls *c)
{
	free(c->pkts);
	free(c->bare);
	memset(c, 0, sizeof(*c));
}
