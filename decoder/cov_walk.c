/* Coverage straight from the walker (pts_cov_decode()): the walker's
 * blocks go to the coverage sink as they are walked, not as instruction
 * records.
 *
 * pts_cov_feed() gets a run as a record, looks it up in its run cache by
 * run id (a random access into a table as large as the code walked) and
 * classifies it the first time. A block already knows all that: its
 * followed direct branches (the segments; every other instruction before
 * the last is plain), whether its last instruction is a branch (its class)
 * and its last address. So the edges are the same, in the same order,
 * without the record, the lookup or a second classification. Events and
 * errors still come as records: they go to pts_cov_feed() before the next
 * block, so the order holds. */
#include "cov_walk.h"

/* Records the walker keeps for the sink between blocks (events, errors). */
#define COV_RECS 64

/* Whether instruction @k of @b, not its last, is a followed branch. */
static bool is_seg(const struct pts_block *b, uint32_t k)
{
	for (unsigned i = 0; i < b->nsegs; i++)
		if ((uint32_t)(b->segs[i] & PTS_SEG_INDEX) == k)
			return true;
	return false;
}

/* The records emitted so far go to the sink, in order. */
static void feed_records(struct pts_flow *f)
{
	/* Event and error records need no cache: nothing can fail. */
	(void)pts_cov_feed(f->cov, f->out, f->out_n);
	f->out_n = 0;
	for (; f->pend_len; f->pend_len--) {
		(void)pts_cov_feed(f->cov, &f->pend[f->pend_head], 1);
		f->pend_head = (f->pend_head + 1) % PEND_CAP;
	}
}

void pts_cov_deliver(struct pts_flow *f, const struct pts_block *b,
		     uint32_t from, uint32_t n)
{
	struct pts_cov *c = f->cov;
	if (f->out_n || f->pend_len)
		feed_records(f);
	const uint64_t ip = from ? b->ips[from] : b->ip;
	const uint32_t end = from + n - 1;
	c->st.runs++;
	if (!c->on)
		edge(c, PTS_COV_OFF, ip, src_half(PTS_COV_OFF) ^ dst_half(ip));
	else if (c->pending)
		edge(c, c->last, ip, c->last_half ^ dst_half(ip));
	c->on = true;
	for (unsigned i = 0; i < b->nsegs; i++) {
		uint32_t e = b->segs[i] & PTS_SEG_INDEX;
		if (e >= from && e < end)
			edge(c, b->ips[e], b->ips[e + 1],
			     src_half(b->ips[e]) ^ dst_half(b->ips[e + 1]));
	}
	if (end == (uint32_t)b->n - 1) {
		set_last(c, b->last_ip);
		c->pending = is_branch(b->last_class);
	} else {
		set_last(c, b->ips[end]);
		c->pending = is_seg(b, end);
	}
}

int pts_cov_decode(struct pts_cov *cov, struct pts_flow *flow,
		   struct pts_input *in)
{
	if (!cov || !flow)
		return -PTS_ERR_INVALID;
	struct pts_flow_rec recs[COV_RECS];
	int n;
	flow->cov = cov;
	while ((n = pts_flow_next(flow, in, recs, COV_RECS)) > 0)
		(void)pts_cov_feed(cov, recs, n);
	flow->cov = NULL;
	return n;
}
