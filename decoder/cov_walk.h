/* The walker's blocks straight to the coverage sink (pts_cov_decode()):
 * shared by flow.c, which hands each block over, and cov_walk.c. Not
 * installed. */
#ifndef PTS_DECODER_COV_WALK_H
#define PTS_DECODER_COV_WALK_H

#include "coverage_internal.h"
#include "flow_internal.h"

/* Instructions [@from, @from + @n) of @b go to f->cov, after the records
 * emitted before them: any part of a block, any sink. */
void pts_cov_deliver(struct pts_flow *f, const struct pts_block *b,
		     uint32_t from, uint32_t n);

/* The whole of @b to f->cov. Inline for the walker's common case, which
 * is one call per block: no record waits, tracing was on already, edges
 * only go to the bitmap. Then a block's edges are the one into it, its
 * followed direct branches (never its last instruction) and, later, the
 * one out of its last instruction. Anything else: pts_cov_deliver(). */
static inline void pts_cov_block(struct pts_flow *f, const struct pts_block *b)
{
	struct pts_cov *c = f->cov;
	if ((f->out_n | f->pend_len) || !c->on || c->slow_edges || !c->bitmap) {
		pts_cov_deliver(f, b, 0, b->n);
		return;
	}
	c->st.runs++;
	if (c->pending) {
		c->st.edges++;
		bitmap_hit(c, c->last_half ^ dst_half(b->ip));
	}
	for (unsigned i = 0; i < b->nsegs; i++) {
		uint32_t e = b->segs[i] & PTS_SEG_INDEX;
		c->st.edges++;
		bitmap_hit(c, src_half(b->ips[e]) ^ dst_half(b->ips[e + 1]));
	}
	set_last(c, b->last_ip);
	c->pending = is_branch(b->last_class);
}

/* Walks on from @b (the block at f->ip, not yet delivered) through the
 * dense nodes while each block's packet is at hand and edges only go to
 * the bitmap (cov_fast.c). Returns false when it took nothing (the walker
 * goes on with @b), else true with f->ip (and f->link) at the next block,
 * or the trace ended, or f->ip where a lookup failed. */
bool pts_cov_walk_fast(struct pts_flow *f, struct pts_block *b);

#endif
