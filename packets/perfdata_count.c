/* perf.data: counting a buffer's packets the way `perf report -D` lists
 * them, so that ptscope's dump can be checked against perf's line by line
 * count. Kept apart from the reader: it is the one perfdata file that needs
 * the packet decoder. */
#include "perfdata_internal.h"

/* Stuck decoder guard: conditions in a row without a packet. */
#define STUCK_LIMIT 64

struct merge {
	uint64_t end;  /* offset after the packet being merged into */
	unsigned len;  /* its length so far */
};

/* perf's dump adds zero bytes that follow a packet to it while it is
 * shorter than 8 bytes: such PADs are no line of their own. */
static void count(struct pts_perf_pkt_count *c, struct merge *m,
		  const struct pts_packet *pkt)
{
	c->packets++;
	if (pkt->kind == PTS_PKT_PAD && pkt->offset == m->end && m->len < 8) {
		m->len++;
		m->end++;
		return;
	}
	c->perf_packets++;
	m->len = pkt->size;
	m->end = pkt->offset + pkt->size;
}

int pts_perf_count_packets(const struct pts_perf_buffer *b,
			   struct pts_perf_pkt_count *c)
{
	/* perf -D starts at byte 0 of each buffer: no PSB search */
	struct pts_pkt_config cfg = {.no_sync = 1};
	struct pts_pkt_decoder *dec = pts_pkt_decoder_new(&cfg);
	if (!dec)
		return -PTS_ERR_NOMEM;
	struct pts_input in = {b->data - b->skip, (size_t)b->size, 0};
	struct pts_packet pkt;
	struct merge m = {UINT64_MAX, 8};
	int ended = 0, stuck = 0, rc = 0;
	for (;;) {
		int r = pts_pkt_next(dec, &in, &pkt);
		if (r > 0) {
			stuck = 0;
			count(c, &m, &pkt);
			continue;
		}
		if (r == -PTS_ERR_AGAIN && !ended) {
			pts_pkt_end(dec);
			ended = 1;
			continue;
		}
		if (r == -PTS_ERR_EOS || r == -PTS_ERR_AGAIN)
			break;
		if (++stuck > STUCK_LIMIT) {
			rc = -PTS_ERR_NO_PROGRESS;
			break;
		}
		if (r != -PTS_ERR_SKIPPED)
			c->errors++;
	}
	pts_pkt_decoder_free(dec);
	return rc;
}
