/* The block cache: runs of classified instructions that need no trace
 * (through direct jumps and calls), keyed by (address, space, mode), so that
 * capstone runs once per block and the walker hands out instruction runs
 * without work per instruction.
 *
 * Memory is a bump arena; the bound is enforced by emptying everything at
 * once (cheap, and no block can be referenced across a flush point). */
#include "internal.h"

#include <ptscope/coverage.h>

#include <stdatomic.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define CHUNK_SIZE (1u << 20)
#define DEFAULT_BYTES (64u << 20)

struct chunk {
	struct chunk *next;
	size_t used;
	_Alignas(64) uint8_t mem[CHUNK_SIZE];
	/* Never allocated, mapped and zeroed with the chunk: the addresses a
	 * copy may read past a block at the end of @mem
	 * (PTS_BLOCK_IPS_OVERREAD). Inside a chunk, what follows a block's
	 * ips[] is its other arrays, the next block or unused mapped memory:
	 * initialised, as mmap() zeroes pages. */
	uint64_t overread_pad[PTS_BLOCK_IPS_OVERREAD];
};

struct pts_block_cache {
	/* Nodes [1, nnodes) and their blocks, extras [1, nextras): first,
	 * where internal.h's inline accessors read them. */
	struct pts_node_arrays arrays;
	struct chunk *chunks;  /* in use, newest first */
	struct chunk *spare;   /* emptied by a flush, reused first */
	size_t bytes, limit;
	struct pts_block **table;
	size_t mask;           /* table size - 1 */
	size_t count;
	uint64_t built;
	uint32_t nnodes, capnodes, capblocks;
	uint32_t nextras, capextras;
	/* Scratch for one block while it is decoded. */
	uint64_t ips[PTS_BLOCK_MAX_INSNS];
	uint8_t sizes[PTS_BLOCK_MAX_INSNS];
	uint16_t segs[PTS_BLOCK_MAX_SEGS];
	unsigned nsegs, npush;
};

struct pts_block_cache *pts_block_cache_new(size_t bytes)
{
	struct pts_block_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->limit = bytes ? bytes : DEFAULT_BYTES;
	c->mask = 4095;
	c->table = calloc(c->mask + 1, sizeof(*c->table));
	c->nnodes = c->nextras = 1;
	if (!c->table) {
		free(c);
		return NULL;
	}
	return c;
}

static void free_chunks(struct chunk *ch)
{
	while (ch) {
		struct chunk *next = ch->next;
		munmap(ch, sizeof(*ch));
		ch = next;
	}
}

void pts_block_cache_free(struct pts_block_cache *cache)
{
	if (!cache)
		return;
	free_chunks(cache->chunks);
	free_chunks(cache->spare);
	free(cache->table);
	free(cache->arrays.nodes);
	free(cache->arrays.blocks);
	free(cache->arrays.extras);
	free(cache);
}

void pts_block_cache_flush(struct pts_block_cache *cache)
{
	while (cache->chunks) {
		struct chunk *ch = cache->chunks;
		cache->chunks = ch->next;
		ch->used = 0;
		ch->next = cache->spare;
		cache->spare = ch;
	}
	memset(cache->table, 0, (cache->mask + 1) * sizeof(*cache->table));
	cache->count = 0;
	cache->bytes = 0;
	cache->nnodes = cache->nextras = 1;
}

bool pts_block_cache_full(const struct pts_block_cache *cache)
{
	return cache->bytes >= cache->limit;
}

/* Room for @more elements of @size in the array *@arr of *@cap, which
 * grows by doubling (from 4096) and counts against the bound. */
static bool reserve(struct pts_block_cache *c, void **arr, uint32_t *cap,
		    uint32_t used, uint32_t more, size_t size)
{
	if (used + more <= *cap)
		return true;
	uint32_t ncap = *cap ? *cap : 4096;
	while (ncap < used + more)
		ncap *= 2;
	void *p = realloc(*arr, (size_t)ncap * size);
	if (!p)
		return false;
	*arr = p;
	c->bytes += (ncap - *cap) * size;
	*cap = ncap;
	return true;
}

/* The node of @b, with its extras. False on no memory. */
static bool add_node(struct pts_block_cache *c, struct pts_block *b)
{
	struct pts_node_arrays *a = &c->arrays;
	uint32_t nx = b->nsegs + (b->last_class == PTS_INSN_CALL_IND);
	if (!reserve(c, (void **)&a->nodes, &c->capnodes, c->nnodes, 1,
		     sizeof(*a->nodes)) ||
	    !reserve(c, (void **)&a->blocks, &c->capblocks, c->nnodes, 1,
		     sizeof(*a->blocks)) ||
	    !reserve(c, (void **)&a->extras, &c->capextras, c->nextras, nx,
		     sizeof(*a->extras)))
		return false;
	b->node = c->nnodes++;
	a->nodes[b->node] = (struct pts_node){
		.ip = b->ip,
		.src_half = pts_cov_edge_hash(b->last_ip, 0),
		.dst_half = pts_cov_edge_hash(0, b->ip),
		.extra = nx ? c->nextras : 0,
		.n1 = (uint8_t)(b->n - 1),
		.last_class = b->last_class,
		.nsegs = b->nsegs,
	};
	a->blocks[b->node] = b;
	for (unsigned k = 0; k < b->nsegs; k++) {
		uint32_t e = b->segs[k] & PTS_SEG_INDEX;
		a->extras[c->nextras++] = (struct pts_node_extra){
			.ret = b->segs[k] & PTS_SEG_PUSH
				       ? b->ips[e] + b->sizes[e] : 0,
			.hash = pts_cov_edge_hash(b->ips[e], b->ips[e + 1]),
		};
	}
	if (b->last_class == PTS_INSN_CALL_IND)
		a->extras[c->nextras++] =
			(struct pts_node_extra){.ret = b->next};
	return true;
}

uint64_t pts_block_cache_built(const struct pts_block_cache *cache)
{
	return cache->built;
}

/* A chunk with its pages already in place (page-aligned, so 64-aligned):
 * blocks fill it one after another anyway, and one populating mmap costs
 * less than a page fault every 4 KiB (5-9% of a first walk over all of
 * libc, on a VM). NULL on no memory. */
static struct chunk *new_chunk(void)
{
	void *p = mmap(NULL, sizeof(struct chunk), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* @size bytes aligned to @align (16 or 64: a block's hot part is one
 * cache line; chunks are page-aligned). */
static void *arena_alloc_aligned(struct pts_block_cache *c, size_t size,
				 size_t align)
{
	size = (size + 15) & ~(size_t)15;
	struct chunk *ch = c->chunks;
	if (ch)
		ch->used = (ch->used + align - 1) & ~(align - 1);
	if (!ch || ch->used > CHUNK_SIZE || CHUNK_SIZE - ch->used < size) {
		ch = c->spare;
		if (ch)
			c->spare = ch->next;
		else if (!(ch = new_chunk()))
			return NULL;
		ch->used = 0;
		ch->next = c->chunks;
		c->chunks = ch;
		c->bytes += sizeof(*ch);
	}
	void *p = ch->mem + ch->used;
	ch->used += size;
	return p;
}

static void *arena_alloc(struct pts_block_cache *c, size_t size)
{
	return arena_alloc_aligned(c, size, 16);
}

uint64_t pts_run_id_new(void)
{
	/* Starts at 1: run 0 means "no id". Relaxed: only uniqueness
	 * matters. */
	static _Atomic uint64_t next = 1;
	return atomic_fetch_add_explicit(&next, 1, memory_order_relaxed);
}

void *pts_block_cache_alloc(struct pts_block_cache *cache, size_t size)
{
	return arena_alloc(cache, size);
}

static inline size_t slot(const struct pts_block_cache *c, uint64_t ip,
			  uint64_t cr3, int mode)
{
	uint64_t key[2] = {ip, cr3 ^ ((uint64_t)mode << 62)};
	return (size_t)XXH3_64bits(key, sizeof(key)) & c->mask;
}

/* Doubles the table when it gets crowded (chains stay ~1 long). */
static void maybe_grow(struct pts_block_cache *c)
{
	if (c->count <= c->mask)
		return;
	size_t nsize = (c->mask + 1) * 2;
	struct pts_block **t = calloc(nsize, sizeof(*t));
	if (!t)
		return; /* longer chains, still correct */
	struct pts_block **old = c->table;
	size_t oldsize = c->mask + 1;
	c->table = t;
	c->mask = nsize - 1;
	for (size_t i = 0; i < oldsize; i++) {
		struct pts_block *b = old[i];
		while (b) {
			struct pts_block *next = b->hnext;
			size_t s = slot(c, b->ip, b->cr3, b->mode);
			b->hnext = t[s];
			t[s] = b;
			b = next;
		}
	}
	free(old);
}

/* Whether the run goes on through the direct branch @info at @ip: a JMP
 * or CALL whose target is known, while the segment budget lasts. */
static bool follows(const struct pts_block_cache *c,
		    const struct pts_insn_info *info)
{
	return (info->iclass == PTS_INSN_JMP || info->iclass == PTS_INSN_CALL) &&
	       (info->flags & PTS_INSN_F_TARGET) &&
	       c->nsegs < PTS_BLOCK_MAX_SEGS;
}

/* Decodes the run at @ip into the scratch arrays; returns the count or the
 * error of the first instruction. A followed branch whose target does not
 * decode ends the run (the walker then meets the error there). */
static int decode_run(struct pts_block_cache *c, const struct pts_image *img,
		      struct pts_insn_classifier *cls, uint64_t cr3, int mode,
		      uint64_t ip, struct pts_insn_info *last)
{
	const uint8_t *bytes = NULL;
	int avail = pts_image_read(img, cr3, ip, &bytes);
	if (avail < 0)
		return avail;
	int n = 0;
	c->nsegs = c->npush = 0;
	while (n < PTS_BLOCK_MAX_INSNS) {
		struct pts_insn_info info;
		int size;
		if (avail >= 15) {
			size = pts_insn_classify(cls, mode, ip, bytes, 15, &info);
		} else {
			/* Near the end of a mapping: the instruction may go
			 * on in the next one. */
			size = pts_insn_decode(cls, img, cr3, mode, ip, &info);
		}
		if (size < 0) {
			if (n == 0)
				return size;
			break;
		}
		c->ips[n] = ip;
		c->sizes[n] = (uint8_t)size;
		*last = info;
		n++;
		if (info.iclass == PTS_INSN_PLAIN) {
			ip += (uint64_t)size;
		} else if (n < PTS_BLOCK_MAX_INSNS && follows(c, &info)) {
			uint16_t seg = (uint16_t)(n - 1);
			if (info.iclass == PTS_INSN_CALL &&
			    !(info.flags & PTS_INSN_F_CALL0)) {
				seg |= PTS_SEG_PUSH;
			}
			c->segs[c->nsegs++] = seg;
			ip = info.target;
			avail = pts_image_read(img, cr3, ip, &bytes);
			if (avail < 0)
				break;
			continue;
		} else {
			break;
		}
		if (avail > size) {
			bytes += size;
			avail -= size;
		} else {
			avail = pts_image_read(img, cr3, ip, &bytes);
			if (avail < 0)
				break;
		}
	}
	/* A followed branch whose target did not decode is the run's last
	 * instruction, resolved by the walker like an unfollowed one. */
	if (c->nsegs && (int)(c->segs[c->nsegs - 1] & PTS_SEG_INDEX) == n - 1)
		c->nsegs--;
	return n;
}

int pts_block_get(struct pts_block_cache *cache, const struct pts_image *img,
		  struct pts_insn_classifier *cls, uint64_t cr3, int mode,
		  uint64_t ip, struct pts_block **blk)
{
	size_t s = slot(cache, ip, cr3, mode);
	for (struct pts_block *b = cache->table[s]; b; b = b->hnext) {
		if (b->ip == ip && b->cr3 == cr3 && b->mode == mode) {
			*blk = b;
			return 0;
		}
	}
	struct pts_insn_info last = {0};
	int n = decode_run(cache, img, cls, cr3, mode, ip, &last);
	if (n < 0)
		return n;
	cache->built++;
	size_t nn = (size_t)n, ns = cache->nsegs;
	/* Block with its ips, then links, segs, sizes: each part stays
	 * aligned. */
	struct pts_block *b = arena_alloc_aligned(
		cache, sizeof(*b) + nn * 9 + ns * (sizeof(struct pts_block *) + 2),
		64);
	if (!b)
		return -PTS_ERR_NOMEM;
	memset(b, 0, sizeof(*b));
	b->seglink = pts_block_seglink(b, (uint32_t)nn, 0);
	memset(b->seglink, 0, ns * sizeof(struct pts_block *));
	b->segs = (uint16_t *)(b->seglink + ns);
	b->sizes = (uint8_t *)(b->segs + ns);
	memcpy(b->ips, cache->ips, nn * sizeof(uint64_t));
	memcpy(b->sizes, cache->sizes, nn);
	memcpy(b->segs, cache->segs, ns * sizeof(uint16_t));
	for (size_t i = 0; i < ns; i++)
		b->npush += (cache->segs[i] & PTS_SEG_PUSH) != 0;
	b->nsegs = (uint8_t)ns;
	b->ip = ip;
	b->cr3 = cr3;
	b->n = (uint32_t)n;
	b->mode = (uint8_t)mode;
	b->last_class = last.iclass;
	b->last_flags = last.flags;
	b->target = last.target;
	b->last_ip = cache->ips[n - 1];
	b->next = b->last_ip + cache->sizes[n - 1];
	b->id = pts_run_id_new();
	if (!add_node(cache, b))
		return -PTS_ERR_NOMEM;
	b->hnext = cache->table[s];
	cache->table[s] = b;
	cache->count++;
	maybe_grow(cache);
	*blk = b;
	return 1;
}
