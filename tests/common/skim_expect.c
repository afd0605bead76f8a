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

static void record(void *ctx, const struct pts_packet *pkts, int n)
{
	struct pts_test_calls *c = ctx;

	if (n <= 0 || n > 64) {
		c->bad = 1;
		return;
	}
	if (c->n + (size_t)n > c->cap) {
		size_t cap = 2 * c->cap + (size_t)n + 64;
		struct pts_packet *p = realloc(c->pkts, cap * sizeof(*p));

		if (!p)
			abort();
		c->pkts = p;
		c->cap = cap;
	}
	memcpy(c->pkts + c->n, pkts, (size_t)n * sizeof(*pkts));
	c->n += (size_t)n;
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

struct pts_skim_call pts_test_calls_hook(struct pts_test_calls *c)
{
	struct pts_skim_call call = {record, c};

	return call;
}

int pts_test_calls_take(struct pts_test_calls *c,
			const struct pts_packet *want)
{
	if (c->taken == c->n)
		return 0;
	return !memcmp(&c->pkts[c->taken++], want, sizeof(*want));
}

int pts_test_calls_done(const struct pts_test_calls *c)
{
	return !c->bad && c->taken == c->n;
}

void pts_test_calls_free(struct pts_test_calls *c)
{
	free(c->pkts);
	memset(c, 0, sizeof(*c));
}
