/* The coverage walk (pts_cov_decode() with edges for the bitmap only):
 * from block to block through the dense node array (struct pts_node) on
 * TNT bits and TIPs, the followed branches' edges and return addresses
 * from the dense extras (struct pts_node_extra).
 *
 * The walker goes from block to block through the blocks themselves, which
 * lie ~250 bytes apart with their addresses; on a walk over all of libc
 * that working set is larger than the CPU's middle cache and each step
 * waits on memory. Coverage needs no addresses, only each block's edge
 * hash halves and its successors: 32 bytes a node, two to a cache line.
 *
 * A node is taken only when its last instruction's packet is at hand (a
 * TNT bit for a conditional branch, a TIP with IP for an indirect branch,
 * an uncompressed return or a far transfer, a taken bit and a return
 * address for a compressed return); the walker does everything else
 * (events, disables, errors, the end of the trace) from the node where
 * this walk stopped. Per node it does what the walker's fast path does
 * (flow.c, step_enabled(), resolve(), compressed_ret(), pts_cov_block()):
 * the same edges, return stack, hint stack, idle count and packets
 * consumed. */
#include "cov_walk.h"

#include <stdlib.h>
#include <string.h>

/* The next TNT bit (1 taken, 0 not), pending or first in the packet at
 * the head; -1 when there is none. */
static inline int next_bit(const struct pts_flow *f)
{
	if (f->tnt_count)
		return (int)(f->tnt_bits >> (f->tnt_count - 1) & 1);
	const struct pts_packet *h = pts_flow_peek(f, 0);
	if (!h || (h->kind != PTS_PKT_TNT8 && h->kind != PTS_PKT_TNT64) ||
	    !h->u.tnt.count)
		return -1;
	return (int)(h->u.tnt.bits >> (h->u.tnt.count - 1) & 1);
}

/* Whether a TIP with an IP is at the head. */
static inline bool tip_at_head(const struct pts_flow *f)
{
	const struct pts_packet *h = pts_flow_peek(f, 0);
	return h && h->kind == PTS_PKT_TIP && h->ipc != PTS_IPC_SUPPRESSED;
}

/* Whether the walk can take node @nd whole (the walker's hot cases). */
static inline bool can_take(const struct pts_flow *f,
			    const struct pts_node *nd)
{
	int bit;
	switch (nd->last_class) {
	case PTS_INSN_JCC:
		return next_bit(f) >= 0;
	case PTS_INSN_RET:
		/* Compressed: a taken bit and an address on the stack (or
		 * an error the walker reports); else a TIP. */
		bit = next_bit(f);
		return bit >= 0 ? bit == 1 && f->rs_len : tip_at_head(f);
	case PTS_INSN_JMP_IND:
	case PTS_INSN_CALL_IND:
	case PTS_INSN_FAR: /* with a TIP: no status packets, same context */
		return tip_at_head(f);
	default:
		return false;
	}
}

/* The node at @ip: from the walk's own table (whose entry is checked
 * against the node's address: the next step reads that node anyway),
 * else from the walker's lookup (which may build the block). 0 when
 * there is none (the walker then meets the error at f->ip). */
static uint32_t find_node(struct pts_flow *f, uint64_t ip)
{
	size_t k = pts_flow_ip_slot(ip, FMAP_BITS);
	uint32_t node = f->fmap[k];
	if (node && pts_block_cache_nodes(f->cache)[node].ip == ip)
		return node;
	struct pts_block *b;
	f->ip = ip;
	if (pts_flow_lookup_block(f, NULL, &b) < 0)
		return 0;
	f->fmap[k] = b->node;
	return b->node;
}

/* The edges of node @nd's followed branches and the return addresses its
 * calls push (of block @b), in order. Returns whether any pushed. */
static bool follow_segs(struct pts_flow *f, const struct pts_node *nd,
			const struct pts_node_extra *ex, struct pts_block *b)
{
	bool push = false;
	for (unsigned k = 0; k < nd->nsegs; k++) {
		const struct pts_node_extra *e = &ex[nd->extra + k];
		bitmap_hit(f->cov, e->hash);
		if (e->ret) {
			pts_flow_push_ret(f, e->ret,
					  pts_block_seglink(b, nd->n1 + 1u, k),
					  nd->extra + k);
			push = true;
		}
	}
	return push;
}

/* The node a return to @ip goes to, when the call that pushed it (hint
 * @t) knows it or can learn it; else 0. */
static uint32_t return_node(struct pts_flow *f, unsigned t, uint64_t ip)
{
	uint32_t e = f->hint_ip[t] == ip ? f->hint_extra[t] : 0;
	if (!e)
		return 0;
	struct pts_node_extra *ex = pts_block_cache_extras(f->cache);
	if (ex[e].ret_node)
		return ex[e].ret_node;
	uint32_t node = find_node(f, ip);
	pts_block_cache_extras(f->cache)[e].ret_node = node;
	return node;
}

/* As the walker after a block: with no bit pending and no packet left,
 * the trace ends at @ip, the next block's address. */
static bool ends_at(struct pts_flow *f, uint64_t ip)
{
	if (f->tnt_count || f->qlen || !f->pkt_eos)
		return false;
	f->ip = ip;
	return pts_flow_at_end(f);
}

/* The walk's tables hold nodes of one (space, mode): emptied when the
 * walk starts in another. False when there is no memory for them. */
static bool enter_context(struct pts_flow *f)
{
	const size_t fmap_size = sizeof(*f->fmap) << FMAP_BITS;
	if (!f->fmap && !(f->fmap = malloc(fmap_size)))
		return false;
	if (f->fmap_valid && f->fmap_cr3 == f->cr3 && f->fmap_mode == f->mode)
		return true;
	memset(f->fmap, 0, fmap_size);
	memset(f->hint_extra, 0, sizeof(f->hint_extra));
	f->fmap_cr3 = f->cr3;
	f->fmap_mode = f->mode;
	f->fmap_valid = true;
	return true;
}

bool pts_cov_walk_fast(struct pts_flow *f, struct pts_block *b)
{
	struct pts_cov *c = f->cov;
	if ((f->out_n | f->pend_len) || !c->on || c->slow_edges || !c->bitmap)
		return false;
	if (!enter_context(f))
		return false;
	struct pts_block_cache *cache = f->cache;
	struct pts_node *nodes = pts_block_cache_nodes(cache);
	uint32_t half = c->last_half, x = b->node, last = 0;
	bool pending = c->pending;
	uint64_t insns = 0, edges = 0, runs = 0;
	for (;;) {
		struct pts_node *nd = &nodes[x];
		/* The walker reports the idle limit; the queue is topped up
		 * between its steps. */
		if (!can_take(f, nd) || f->idle + 1 > f->idle_limit ||
		    (f->qlen < LOOKAHEAD && !f->pkt_eos) || f->cache_full)
			break;
		runs++;
		if (pending) {
			edges++;
			bitmap_hit(c, half ^ nd->dst_half);
		}
		bool push = false;
		if (nd->nsegs) {
			edges += nd->nsegs;
			push = follow_segs(
				f, nd, pts_block_cache_extras(cache),
				pts_block_cache_node_block(cache, x));
		}
		half = nd->src_half;
		pending = true; /* every class can_take() allows branches */
		insns += nd->n1 + 1u;
		last = x;
		unsigned cls = nd->last_class;
		uint64_t ip;
		uint32_t next;
		if (cls == PTS_INSN_JCC) {
			/* As the walker: the bit's packet is taken before the
			 * block, unless it pushes; that shows in idle. */
			if (!f->tnt_count && !push)
				pts_flow_load_tnt(f);
			f->idle++;
			if (!f->tnt_count)
				pts_flow_load_tnt(f);
			unsigned bit = (unsigned)pts_flow_take_tnt(f);
			next = nd->link[bit];
			if (next) {
				ip = nodes[next].ip;
			} else {
				const struct pts_block *blk =
					pts_block_cache_node_block(cache, x);
				ip = bit ? blk->target : blk->next;
			}
			if (ends_at(f, ip)) {
				x = 0;
				break;
			}
			if (!next) {
				next = find_node(f, ip);
				nodes = pts_block_cache_nodes(cache);
				nodes[x].link[bit] = next;
			}
		} else if (cls == PTS_INSN_RET && next_bit(f) >= 0) {
			/* As resolve() and compressed_ret(): the bit's packet
			 * is taken after the block. */
			f->idle++;
			if (!f->tnt_count)
				pts_flow_load_tnt(f);
			unsigned t = pts_flow_pop_hint(f);
			pts_flow_take_tnt(f);
			ip = pts_flow_pop_ret(f, NULL);
			next = return_node(f, t, ip);
			if (ends_at(f, ip)) {
				x = 0;
				break;
			}
			if (!next)
				next = find_node(f, ip);
			nodes = pts_block_cache_nodes(cache);
		} else {
			f->idle++;
			ip = pts_flow_pop(f)->u.ip.ip;
			next = 0;
			if (cls == PTS_INSN_CALL_IND) {
				uint32_t e = nd->extra + nd->nsegs;
				pts_flow_push_ret(
					f, pts_block_cache_extras(cache)[e].ret,
					&pts_block_cache_node_block(cache, x)
						 ->succ[0],
					e);
			} else if (cls == PTS_INSN_RET) {
				next = return_node(f, pts_flow_pop_hint(f), ip);
				nodes = pts_block_cache_nodes(cache);
			}
			if (ends_at(f, ip)) {
				x = 0;
				break;
			}
			if (!next) {
				next = nodes[x].link[0];
				if (!next || nodes[next].ip != ip) {
					next = find_node(f, ip);
					nodes = pts_block_cache_nodes(cache);
					nodes[x].link[0] = next;
				}
			}
		}
		if (!next) {
			x = 0; /* f->ip does not decode */
			break;
		}
		x = next;
	}
	if (!last)
		return false;
	if (x) {
		/* The walker goes on at node @x. */
		f->ip = nodes[x].ip;
		f->fast_next = pts_block_cache_node_block(cache, x);
		f->link = &f->fast_next;
	} else if (f->st == ST_ENABLED) {
		f->link = NULL; /* the walker looks f->ip up and fails */
	}
	c->last_half = half;
	c->pending = pending;
	c->last = pts_block_cache_node_block(cache, last)->last_ip;
	c->st.runs += runs;
	c->st.edges += edges;
	f->stats.insns += insns;
	return true;
}
