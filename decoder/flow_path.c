/* Walk paths: the blocks a run of TNT bits takes, joined into one record.
 *
 * In a loop every block ends in a conditional branch and takes one TNT bit;
 * walked block by block, the cost per record (link check, record, resolve)
 * dominates. A path is keyed by its first block and the next TNT bits
 * (up to PATH_BITS, oldest first): it holds the instructions of every block
 * those bits lead through, copied into one array, and where the walk goes
 * on. Paths only cover blocks that end in a conditional branch and push
 * nothing, so walking one is exactly walking its blocks while TNT bits are
 * pending. They live in the block cache's memory and go with its flushes
 * (a generation number retires them). */
#include "flow_internal.h"

#include <string.h>

/* Most instructions one path holds. */
#define PATH_MAX_INSNS 512

/* The slot of (@b, @avail, @bits): a multiplicative hash of the block's
 * address and the bits (the key is three words; xxHash is not needed). */
static inline unsigned path_slot(const struct pts_block *b, unsigned avail,
				 unsigned bits)
{
	uint64_t k = (uint64_t)(uintptr_t)b ^ ((uint64_t)(bits << 4 | avail) << 52);
	return (unsigned)((k * 0x9e3779b97f4a7c15ull) >> (64 - PATH_SLOT_BITS));
}

/* A block a path may cover: ends in a conditional branch, pushes nothing,
 * runs in the walker's space and mode. */
static bool path_block(const struct pts_flow *f, const struct pts_block *b)
{
	return b->last_class == PTS_INSN_JCC && !b->npush && b->cr3 == f->cr3 &&
	       b->mode == f->mode;
}

/* The block after @b when it takes @bit: through its link, else from the
 * cache (linked then). NULL when the code there does not decode. */
static struct pts_block *path_next(struct pts_flow *f, struct pts_block *b,
				   unsigned bit)
{
	uint64_t last = b->ips[b->n - 1];
	uint64_t ip = bit ? b->target : last + b->sizes[b->n - 1];
	struct pts_block *n = b->succ[bit];
	if (n && n->ip == ip && n->cr3 == f->cr3 && n->mode == f->mode)
		return n;
	int err = pts_block_get(f->cache, f->img, f->cls, f->cr3, f->mode, ip,
				&n);
	if (err < 0)
		return NULL;
	if (err == 1 && pts_block_cache_full(f->cache))
		f->cache_full = true;
	b->succ[bit] = n;
	return n;
}

/* Builds the path of (@b, @avail, @bits) into @e. */
static void path_build(struct pts_flow *f, struct pts_block *b, unsigned avail,
		       unsigned bits, struct pts_flow_path *e)
{
	struct pts_block *blocks[PATH_BITS];
	uint32_t total = 0;
	unsigned m = 0;
	e->from = b;
	e->gen = f->path_gen;
	e->avail = (uint8_t)avail;
	e->bits = (uint8_t)bits;
	e->used = 0;
	while (m < avail && path_block(f, b) &&
	       total + b->n <= PATH_MAX_INSNS) {
		blocks[m++] = b;
		total += b->n;
		if (m == avail)
			break;
		b = path_next(f, b, (bits >> (avail - m)) & 1);
		if (!b)
			break;
	}
	if (m < 2)
		return; /* nothing gained: walk block by block */
	uint64_t *ips = pts_block_cache_alloc(f->cache, total * 9u);
	if (!ips)
		return;
	uint8_t *sizes = (uint8_t *)(ips + total);
	uint32_t at = 0;
	for (unsigned i = 0; i < m; i++) {
		memcpy(ips + at, blocks[i]->ips, blocks[i]->n * sizeof(*ips));
		memcpy(sizes + at, blocks[i]->sizes, blocks[i]->n);
		at += blocks[i]->n;
	}
	const struct pts_block *last = blocks[m - 1];
	unsigned bit = (bits >> (avail - m)) & 1;
	e->ips = ips;
	e->sizes = sizes;
	e->n = total;
	e->last = blocks[m - 1];
	e->last_bit = (uint8_t)bit;
	e->next_ip = bit ? last->target
			 : last->ips[last->n - 1] + last->sizes[last->n - 1];
	e->used = (uint8_t)m;
	if (pts_block_cache_full(f->cache))
		f->cache_full = true;
}

const struct pts_flow_path *pts_flow_path_get(struct pts_flow *f,
					      struct pts_block *b)
{
	unsigned avail = f->tnt_count < PATH_BITS ? f->tnt_count : PATH_BITS;
	unsigned bits = (unsigned)(f->tnt_bits >> (f->tnt_count - avail)) &
			((1u << avail) - 1);
	struct pts_flow_path *e = &f->paths[path_slot(b, avail, bits)];
	if (e->from != b || e->gen != f->path_gen || e->avail != avail ||
	    e->bits != bits)
		path_build(f, b, avail, bits, e);
	return e->used ? e : NULL;
}

void pts_flow_path_flush(struct pts_flow *f)
{
	/* Entries of an older generation never match (no memset of the
	 * whole table at every flush). */
	if (++f->path_gen == 0) {
		memset(f->paths, 0, sizeof(f->paths));
		f->path_gen = 1;
	}
}
