/* The coverage sink: flow records -> branch edges, edge bitmap, distinct
 * edge counts (ptscope/coverage.h).
 *
 * The walker hands out instructions in runs that come from its block
 * cache, so the same few thousand runs repeat millions of times. Each
 * distinct run is classified once (capstone, through pts_insn_decode) into
 * its inner edges (a direct JMP/CALL the block followed) and whether its
 * last instruction is a branch, whose destination is the first address of
 * whatever comes next. After that a run costs one lookup in an
 * open-addressing table plus the edges themselves.
 *
 * A run is keyed by its run id (pts_flow_rec.run): the walker gives every
 * run of its cache a process-wide unique id, so the lookup is one
 * multiplication and one compare, whatever the run's length. Records
 * without an id (made by hand) are keyed by a hash of all their addresses
 * (plus space and mode) instead: the walker may hand out runs that go
 * through conditional branches, so the first address and the count do not
 * fix what lies between. A 64-bit XXH3 collision that also matches first
 * address, count, space and mode is not a practical worry.
 *
 * The bitmap hash of an edge is the XOR of one half per end
 * (pts_cov_edge_hash()), so each run keeps the half of its last address as
 * a source and of its first as a destination: the edge between two runs
 * costs one XOR. */
#include "coverage_internal.h"

#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define DEFAULT_CACHE_BYTES ((size_t)64 << 20)
#define MIN_TABLE 1024

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

int pts_cov_new(const struct pts_cov_config *config,
		const struct pts_image *img, struct pts_cov **out)
{
	struct pts_cov_config def = {0};
	if (!out || !img)
		return -PTS_ERR_INVALID;
	*out = NULL;
	if (!config)
		config = &def;
	uint32_t size = config->bitmap_size ? config->bitmap_size
					    : PTS_COV_DEFAULT_SIZE;
	if (!is_pow2(size) || size < 64 || size > (1u << 30) ||
	    config->n_ranges > PTS_COV_MAX_RANGES)
		return -PTS_ERR_INVALID;
	for (unsigned i = 0; i < config->n_ranges; i++)
		if (config->end[i] < config->begin[i])
			return -PTS_ERR_INVALID;
	struct pts_cov *c = calloc(1, sizeof(*c));
	if (!c)
		return -PTS_ERR_NOMEM;
	c->img = img;
	c->img_gen = pts_image_generation(img);
	c->flags = config->flags ? config->flags : PTS_COV_BITMAP;
	c->n_ranges = config->n_ranges;
	memcpy(c->begin, config->begin, sizeof(c->begin));
	memcpy(c->end, config->end, sizeof(c->end));
	c->limit = config->cache_bytes ? config->cache_bytes
				       : DEFAULT_CACHE_BYTES;
	c->bmask = size - 1;
	c->slow_edges = c->n_ranges ||
			(c->flags & (PTS_COV_EDGES | PTS_COV_UNIQUE));
	c->rmask = MIN_TABLE - 1;
	c->runs = calloc(MIN_TABLE, sizeof(*c->runs));
	c->cls = pts_insn_classifier_new();
	if (c->flags & PTS_COV_BITMAP)
		c->bitmap = calloc(size, 1);
	if (!c->runs || !c->cls || (!c->bitmap && (c->flags & PTS_COV_BITMAP))) {
		pts_cov_free(c);
		return -PTS_ERR_NOMEM;
	}
	*out = c;
	return 0;
}

void pts_cov_free(struct pts_cov *cov)
{
	if (!cov)
		return;
	pts_insn_classifier_free(cov->cls);
	free(cov->bitmap);
	free(cov->runs);
	free(cov->pool);
	free(cov->uniq.slots);
	free(cov->uniq.counts);
	free(cov);
}

void pts_cov_set_sink(struct pts_cov *cov,
		      void (*fn)(void *ctx, const struct pts_cov_edge *edges,
				 size_t n),
		      void *ctx)
{
	cov->sink = fn;
	cov->sink_ctx = ctx;
}

/* ------------------------------------------------------------------------ */
/* Edges.                                                                   */

static void flush_batch(struct pts_cov *c)
{
	if (c->nbatch && c->sink)
		c->sink(c->sink_ctx, c->batch, c->nbatch);
	c->nbatch = 0;
}

static inline size_t uniq_slot(uint64_t src, uint64_t dst, size_t mask)
{
	uint64_t h = (src ^ (dst * UINT64_C(0xff51afd7ed558ccd))) *
		     UINT64_C(0xc4ceb9fe1a85ec53);
	return (size_t)(h >> 17) & mask;
}

static int uniq_grow(struct uniq *u)
{
	size_t nsize = u->slots ? (u->mask + 1) * 2 : 1024;
	uint32_t *s = calloc(nsize, sizeof(*s));
	if (!s)
		return -PTS_ERR_NOMEM;
	for (size_t i = 0; i < u->n; i++) {
		size_t k = uniq_slot(u->counts[i].src, u->counts[i].dst,
				     nsize - 1);
		while (s[k])
			k = (k + 1) & (nsize - 1);
		s[k] = (uint32_t)(i + 1);
	}
	free(u->slots);
	u->slots = s;
	u->mask = nsize - 1;
	return 0;
}

static int uniq_count(struct uniq *u, uint64_t src, uint64_t dst)
{
	if ((u->n + 1) * 2 > u->mask + 1 || !u->slots) {
		if (uniq_grow(u) < 0)
			return -PTS_ERR_NOMEM;
	}
	size_t k = uniq_slot(src, dst, u->mask);
	for (; u->slots[k]; k = (k + 1) & u->mask) {
		struct pts_cov_count *e = &u->counts[u->slots[k] - 1];
		if (e->src == src && e->dst == dst) {
			e->count++;
			return 0;
		}
	}
	if (u->n == u->cap || u->n >= UINT32_MAX - 1) {
		size_t ncap = u->cap ? u->cap * 2 : 1024;
		struct pts_cov_count *nc =
			u->n < UINT32_MAX - 1
				? realloc(u->counts, ncap * sizeof(*nc))
				: NULL;
		if (!nc)
			return -PTS_ERR_NOMEM;
		u->counts = nc;
		u->cap = ncap;
	}
	u->counts[u->n] = (struct pts_cov_count){src, dst, 1};
	u->slots[k] = (uint32_t)++u->n;
	return 0;
}

static bool in_ranges(const struct pts_cov *c, uint64_t a)
{
	for (unsigned i = 0; i < c->n_ranges; i++)
		if (a >= c->begin[i] && a <= c->end[i])
			return true;
	return false;
}

void pts_cov_edge_slow(struct pts_cov *c, uint64_t src, uint64_t dst,
		       uint32_t hash)
{
	if (c->n_ranges &&
	    !in_ranges(c, src != PTS_COV_OFF ? src : dst))
		return;
	c->st.edges++;
	if (c->bitmap)
		bitmap_hit(c, hash);
	if (c->flags & PTS_COV_EDGES) {
		c->batch[c->nbatch++] = (struct pts_cov_edge){src, dst};
		if (c->nbatch == EDGE_BATCH)
			flush_batch(c);
	}
	if (c->flags & PTS_COV_UNIQUE)
		(void)uniq_count(&c->uniq, src, dst); /* a lost count on
							 no memory */
}

static void stop(struct pts_cov *c)
{
	if (c->on)
		edge(c, c->last, PTS_COV_OFF, c->last_half ^ dst_half(PTS_COV_OFF));
	c->on = false;
	c->pending = false;
	c->armed = false;
}

/* The pending branch goes to @ip. */
static inline void resolve(struct pts_cov *c, uint64_t ip)
{
	if (c->pending)
		edge(c, c->last, ip, c->last_half ^ dst_half(ip));
	c->pending = false;
}

/* ------------------------------------------------------------------------ */
/* Run cache.                                                               */

/* The key of @rec: its run id, else a hash of its addresses. */
static inline uint64_t run_key(const struct pts_flow_rec *rec)
{
	if (rec->run)
		return rec->run;
	return XXH3_64bits_withSeed(rec->ips, rec->n * sizeof(uint64_t),
				    rec->cr3 ^ rec->mode);
}

/* The first slot to probe for @key: ids are small consecutive numbers,
 * so they are mixed (a multiplicative hash) before masking. */
static inline size_t run_slot(uint64_t key, size_t mask)
{
	return (size_t)((key * UINT64_C(0x9e3779b97f4a7c15)) >> 32) & mask;
}

static void cache_flush(struct pts_cov *c)
{
	memset(c->runs, 0, (c->rmask + 1) * sizeof(*c->runs));
	c->rcount = 0;
	c->npool = 0;
	c->st.cache_flushes++;
}

static size_t cache_bytes(const struct pts_cov *c)
{
	return (c->rmask + 1) * sizeof(struct run) +
	       c->cappool * sizeof(struct inner);
}

static int cache_grow(struct pts_cov *c)
{
	size_t nsize = (c->rmask + 1) * 2;
	struct run *t = calloc(nsize, sizeof(*t));
	if (!t)
		return -PTS_ERR_NOMEM;
	for (size_t i = 0; i <= c->rmask; i++) {
		const struct run *r = &c->runs[i];
		if (!r->state)
			continue;
		size_t k = run_slot(r->key, nsize - 1);
		while (t[k].state)
			k = (k + 1) & (nsize - 1);
		t[k] = *r;
	}
	free(c->runs);
	c->runs = t;
	c->rmask = nsize - 1;
	return 0;
}

static int pool_add(struct pts_cov *c, uint64_t src, uint64_t dst)
{
	if (c->npool == c->cappool) {
		size_t ncap = c->cappool ? c->cappool * 2 : 4096;
		struct inner *np = realloc(c->pool, ncap * sizeof(*np));
		if (!np)
			return -PTS_ERR_NOMEM;
		c->pool = np;
		c->cappool = ncap;
	}
	c->pool[c->npool++] =
		(struct inner){src, dst, pts_cov_edge_hash(src, dst)};
	return 0;
}

/* Classifies the instructions of @rec into a new entry at slot @k. An
 * instruction that does not decode (it did for the walker, so only when
 * the image changed under it) counts as no branch. */
static int build(struct pts_cov *c, const struct pts_flow_rec *rec,
		 uint64_t key, struct run **out)
{
	if (cache_bytes(c) > c->limit)
		cache_flush(c);
	if ((c->rcount + 1) * 4 > (c->rmask + 1) * 3 && cache_grow(c) < 0)
		return -PTS_ERR_NOMEM;
	size_t first = c->npool;
	if (first > UINT32_MAX)
		return -PTS_ERR_NOMEM;
	bool last_branch = false;
	for (uint32_t i = 0; i < rec->n; i++) {
		struct pts_insn_info info;
		int err = pts_insn_decode(c->cls, c->img, rec->cr3, rec->mode,
					  rec->ips[i], &info);
		bool br = err >= 0 && is_branch(info.iclass);
		if (i + 1 == rec->n)
			last_branch = br;
		else if (br && pool_add(c, rec->ips[i], rec->ips[i + 1]) < 0)
			return -PTS_ERR_NOMEM;
	}
	if (c->npool - first > UINT16_MAX) {
		c->npool = first; /* cannot happen: runs are short */
		return -PTS_ERR_INTERNAL;
	}
	size_t k = run_slot(key, c->rmask);
	while (c->runs[k].state)
		k = (k + 1) & c->rmask;
	struct run *r = &c->runs[k];
	*r = (struct run){
		.key = key,
		.ip = rec->ips[0],
		.last = rec->ips[rec->n - 1],
		.cr3 = rec->cr3,
		.n = rec->n,
		.first = (uint32_t)first,
		.src_half = src_half(rec->ips[rec->n - 1]),
		.dst_half = dst_half(rec->ips[0]),
		.ninner = (uint16_t)(c->npool - first),
		.mode = rec->mode,
		.state = rec->run ? RUN_BY_ID : RUN_BY_HASH,
		.branch = last_branch,
	};
	c->rcount++;
	c->st.runs_built++;
	*out = r;
	return 0;
}

static inline struct run *lookup(struct pts_cov *c,
				 const struct pts_flow_rec *rec, uint64_t key)
{
	size_t k = run_slot(key, c->rmask);
	if (rec->run) {
		for (; c->runs[k].state; k = (k + 1) & c->rmask) {
			struct run *r = &c->runs[k];
			if (r->key == key && r->state == RUN_BY_ID)
				return r;
		}
		return NULL;
	}
	const uint64_t ip = rec->ips[0], last = rec->ips[rec->n - 1];
	for (; c->runs[k].state; k = (k + 1) & c->rmask) {
		struct run *r = &c->runs[k];
		if (r->key == key && r->state == RUN_BY_HASH && r->ip == ip &&
		    r->n == rec->n && r->last == last && r->cr3 == rec->cr3 &&
		    r->mode == rec->mode)
			return r;
	}
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* Records.                                                                 */

static int insns(struct pts_cov *c, const struct pts_flow_rec *rec)
{
	c->st.runs++;
	/* The walker's records (with a run id) hold ips[0] in @ip: no look
	 * into the run. */
	const uint64_t ip = rec->run ? rec->ip : rec->ips[0];
	const uint64_t key = run_key(rec);
	struct run *r = lookup(c, rec, key);
	if (!r) {
		int err = build(c, rec, key, &r);
		if (err < 0) {
			if (!c->on)
				edge(c, PTS_COV_OFF, ip,
				     pts_cov_edge_hash(PTS_COV_OFF, ip));
			else
				resolve(c, ip);
			c->on = true;
			set_last(c, rec->ips[rec->n - 1]);
			return err;
		}
	}
	if (!c->on)
		edge(c, PTS_COV_OFF, ip, src_half(PTS_COV_OFF) ^ r->dst_half);
	else if (c->pending)
		edge(c, c->last, ip, c->last_half ^ r->dst_half);
	c->on = true;
	/* No pool yet while no run had inner edges: NULL + 0 is undefined
	 * (clang's UBSan, fuzz_cov). */
	const struct inner *in = r->ninner ? c->pool + r->first : NULL;
	if (!c->slow_edges) {
		/* Bitmap only: the edges are their hashes. */
		c->st.edges += r->ninner;
		if (c->bitmap)
			for (unsigned i = 0; i < r->ninner; i++)
				bitmap_hit(c, in[i].hash);
	} else {
		for (unsigned i = 0; i < r->ninner; i++)
			edge(c, in[i].src, in[i].dst, in[i].hash);
	}
	c->last = r->last;
	c->last_half = r->src_half;
	c->pending = r->branch;
	return 0;
}

/* A window in which no instruction ran, opened at @ip (an enable, or an
 * overflow resolved there) and ended by an interrupt or a disable there
 * (an AEX's TIP.PGE at the AEP, then the ERESUME there; a return to user
 * space, then a restart): its start edge, which the stop edge then
 * follows. An overflow or an error ends such a window without edges:
 * where it stopped is not known. */
static void open_empty(struct pts_cov *c, uint64_t ip)
{
	if (c->on || !c->armed || c->armed_ip != ip)
		return;
	edge(c, PTS_COV_OFF, ip, pts_cov_edge_hash(PTS_COV_OFF, ip));
	c->on = true;
	c->pending = false;
	set_last(c, ip);
}

static void event(struct pts_cov *c, const struct pts_flow_rec *rec)
{
	switch (rec->type) {
	case PTS_EV_ENABLED:
		/* The window opens with its first instruction, or with an
		 * event at this IP before any (open_empty()). */
		if (!c->on && !(rec->flags & PTS_EV_F_IP_SUPPRESSED)) {
			c->armed = true;
			c->armed_ip = rec->ip;
		}
		return;
	case PTS_EV_ASYNC_BRANCH:
		/* An interrupt (or an enclave transition shown as one): the
		 * branch before it went to where execution stood. */
		open_empty(c, rec->ip);
		if (c->on)
			resolve(c, rec->ip);
		return;
	case PTS_EV_ASYNC_DISABLED:
		/* Tracing stops where execution stood (the FUP). */
		open_empty(c, rec->ip);
		if (c->on) {
			resolve(c, rec->ip);
			set_last(c, rec->ip);
		}
		stop(c);
		return;
	case PTS_EV_OVERFLOW:
		/* Resolved with tracing on, it resumes at the FUP's IP: a
		 * window opens there as at an enable. */
		stop(c);
		if (!(rec->flags & PTS_EV_F_IP_SUPPRESSED)) {
			c->armed = true;
			c->armed_ip = rec->ip;
		}
		return;
	case PTS_EV_DISABLED:
	case PTS_EV_END:
		stop(c);
		return;
	default:
		return;
	}
}

int pts_cov_feed(struct pts_cov *cov, const struct pts_flow_rec *recs, int n)
{
	if (!cov || (!recs && n > 0))
		return -PTS_ERR_INVALID;
	uint64_t gen = pts_image_generation(cov->img);
	if (gen != cov->img_gen) {
		cache_flush(cov);
		cov->img_gen = gen;
	}
	int ret = 0;
	for (int i = 0; i < n; i++) {
		const struct pts_flow_rec *r = &recs[i];
		if (r->kind == PTS_FLOW_INSNS && r->n) {
			int err = insns(cov, r);
			if (err < 0)
				ret = err;
		} else if (r->kind == PTS_FLOW_EVENT) {
			event(cov, r);
		} else if (r->kind == PTS_FLOW_ERROR) {
			stop(cov); /* the walker resyncs at the next PSB */
		}
	}
	return ret;
}

void pts_cov_end(struct pts_cov *cov)
{
	stop(cov);
	flush_batch(cov);
}

const uint8_t *pts_cov_bitmap(const struct pts_cov *cov, size_t *size)
{
	*size = cov->bitmap ? (size_t)cov->bmask + 1 : 0;
	return cov->bitmap;
}

void pts_cov_clear(struct pts_cov *cov)
{
	if (cov->bitmap)
		memset(cov->bitmap, 0, (size_t)cov->bmask + 1);
	if (cov->uniq.slots)
		memset(cov->uniq.slots, 0,
		       (cov->uniq.mask + 1) * sizeof(*cov->uniq.slots));
	cov->uniq.n = 0;
}

size_t pts_cov_unique(const struct pts_cov *cov,
		      const struct pts_cov_count **counts)
{
	*counts = cov->uniq.counts;
	return cov->uniq.n;
}

void pts_cov_get_stats(const struct pts_cov *cov, struct pts_cov_stats *st)
{
	*st = cov->st;
}
