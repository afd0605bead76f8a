/* The coverage sink's state, shared by coverage.c (records, run cache,
 * edges) and cov_walk.c (blocks straight from the walker). Not
 * installed. */
#ifndef PTS_DECODER_COVERAGE_INTERNAL_H
#define PTS_DECODER_COVERAGE_INTERNAL_H

#include <ptscope/coverage.h>

#include <stdbool.h>

#define EDGE_BATCH 1024

/* run.state */
enum { RUN_FREE, RUN_BY_ID, RUN_BY_HASH };

/* A classified run. @inner edges start at @first in the pool. */
struct run {
	uint64_t key;   /* run id, or the hash of the addresses */
	uint64_t last;  /* the last instruction */
	uint32_t first;
	uint32_t src_half, dst_half; /* edge hash halves of @last, @ip */
	uint16_t ninner;
	uint8_t state;  /* RUN_* */
	uint8_t branch; /* the last instruction is a branch */
	/* RUN_BY_HASH only: what the hash must match besides. */
	uint64_t ip, cr3;
	uint32_t n;
	uint8_t mode;
};

struct inner {
	uint64_t src, dst;
	uint32_t hash;
};

/* Distinct edges: open addressing over indexes into @counts. */
struct uniq {
	uint32_t *slots; /* index + 1; 0 free */
	size_t mask;
	struct pts_cov_count *counts;
	size_t n, cap;
};

struct pts_cov {
	const struct pts_image *img;
	uint64_t img_gen;
	struct pts_insn_classifier *cls;
	uint32_t flags;
	unsigned n_ranges;
	uint64_t begin[PTS_COV_MAX_RANGES], end[PTS_COV_MAX_RANGES];

	uint8_t *bitmap;
	uint32_t bmask;

	/* Run cache. */
	struct run *runs;
	size_t rmask, rcount;
	struct inner *pool;
	size_t npool, cappool;
	size_t limit;

	/* Per trace. A window opens with its first instruction, or with
	 * the interrupt or disable at its enable's IP when none ran first
	 * (coverage.c, open_empty()). */
	bool on;      /* the window is open: its start edge is out */
	bool pending; /* @last is a branch waiting for its destination */
	bool armed;   /* an enable at @armed_ip, the window not open yet */
	uint64_t armed_ip;
	uint64_t last; /* last traced instruction (or the FUP address) */
	uint32_t last_half; /* edge hash half of @last as a source */
	/* Edges go anywhere but to the bitmap (filter, sink, counts): the
	 * one test on the fast path. */
	bool slow_edges;

	struct pts_cov_edge batch[EDGE_BATCH];
	size_t nbatch;
	void (*sink)(void *ctx, const struct pts_cov_edge *edges, size_t n);
	void *sink_ctx;

	struct uniq uniq;
	struct pts_cov_stats st;
};

/* The edge hash half of @a as a source and as a destination:
 * pts_cov_edge_hash(s, d) == src_half(s) ^ dst_half(d) (the hash XORs a
 * term per end, and address 0 makes a zero term). */
static inline uint32_t src_half(uint64_t a)
{
	return pts_cov_edge_hash(a, 0);
}

static inline uint32_t dst_half(uint64_t a)
{
	return pts_cov_edge_hash(0, a);
}

static inline void bitmap_hit(struct pts_cov *c, uint32_t hash)
{
	uint8_t *b = &c->bitmap[hash & c->bmask];
	*b = (uint8_t)(*b + (*b != 255));
}

/* An edge that goes anywhere but to the bitmap: filter, sink, counts. */
void pts_cov_edge_slow(struct pts_cov *c, uint64_t src, uint64_t dst,
		       uint32_t hash);

/* The one place an edge goes out. */
static inline void edge(struct pts_cov *c, uint64_t src, uint64_t dst,
			uint32_t hash)
{
	if (c->slow_edges) {
		pts_cov_edge_slow(c, src, dst, hash);
		return;
	}
	c->st.edges++;
	if (c->bitmap)
		bitmap_hit(c, hash);
}

/* @ip is now the last traced instruction. */
static inline void set_last(struct pts_cov *c, uint64_t ip)
{
	c->last = ip;
	c->last_half = src_half(ip);
}


/* Whether an instruction of class @iclass makes an edge: a bit test, not a
 * switch (the walker asks once per block). */
static inline bool is_branch(int iclass)
{
	const unsigned branches =
		1u << PTS_INSN_JCC | 1u << PTS_INSN_JMP | 1u << PTS_INSN_CALL |
		1u << PTS_INSN_JMP_IND | 1u << PTS_INSN_CALL_IND |
		1u << PTS_INSN_RET | 1u << PTS_INSN_FAR;
	return (branches >> iclass) & 1;
}

#endif
