/* The streaming decoder: streams built from hand-written packet bytes are
 * decoded whole, split at every byte offset, in 1-byte chunks and in random
 * chunkings, with pts_pkt_next() and with pts_pkt_next_batch() of several
 * sizes; every way must give the same packets and the same errors and skips.
 * Then the exact events of small streams: error offsets, skip ranges,
 * resynchronization, TRUNCATED vs AGAIN, the initial skip, no_sync, last-IP,
 * the PEBS block context, SKD007, base offsets and reset.
 *
 * Each chunk is a heap copy of exactly its size, freed as soon as the
 * decoder asks for the next one, so that the sanitizers catch a decoder
 * that reads past a chunk or keeps a pointer into it.
 */
#include <ptscope/packets.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define FAIL(...)                                                              \
	do {                                                                   \
		printf("FAIL ");                                               \
		printf(__VA_ARGS__);                                           \
		printf("\n");                                                  \
		failures++;                                                    \
	} while (0)

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* ------------------------------------------------------------------------ */
/* Streams from packet bytes.                                                */

struct buf {
	uint8_t *p;
	size_t n, cap;
};

static void put(struct buf *b, const uint8_t *bytes, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		if (!b->p) {
			printf("out of memory\n");
			exit(1);
		}
	}
	memcpy(b->p + b->n, bytes, n);
	b->n += n;
}

#define PUT(b, ...)                                                            \
	put(b, (const uint8_t[]){__VA_ARGS__},                                 \
	    sizeof((const uint8_t[]){__VA_ARGS__}))

#define PSB_BYTES                                                              \
	0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02,      \
		0x82, 0x02, 0x82, 0x02, 0x82

static void put_psb_plus(struct buf *b)
{
	PUT(b, PSB_BYTES);
	PUT(b, 0x19, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x00); /* TSC */
	PUT(b, 0x02, 0x73, 0x34, 0x12, 0x00, 0x7f, 0x01);      /* TMA */
	PUT(b, 0x02, 0x03, 0x1c, 0x00);                        /* CBR */
	PUT(b, 0x02, 0x43, 0x01, 0x20, 0x30, 0x40, 0x00, 0x00); /* PIP */
	PUT(b, 0x99, 0x01);                                    /* MODE.Exec */
	PUT(b, 0x7d, 0x00, 0x10, 0x40, 0x00, 0x00, 0x00);      /* FUP sext48 */
	PUT(b, 0x02, 0x23);                                    /* PSBEND */
}

/* Hand-written valid packets (outside PEBS blocks), picked at random. */
static const struct {
	uint8_t len, weight;
	uint8_t bytes[16];
} packets[] = {
	{1, 20, {0x04}},
	{1, 20, {0xaa}},
	{1, 20, {0xfe}},
	{1, 10, {0x86}},
	{1, 6, {0x00}},
	{1, 8, {0x0d}},
	{3, 16, {0x2d, 0x34, 0x12}},
	{5, 12, {0x4d, 0x78, 0x56, 0x34, 0x12}},
	{7, 3, {0x6d, 0x00, 0x10, 0x40, 0x00, 0x80, 0xff}},
	{7, 3, {0x8d, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06}},
	{9, 2, {0xcd, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08}},
	{3, 4, {0x31, 0xcd, 0xab}},
	{1, 2, {0x11}},
	{1, 3, {0x01}},
	{5, 2, {0x41, 0x00, 0x20, 0x40, 0x00}},
	{3, 4, {0x3d, 0x10, 0x20}},
	{1, 2, {0x1d}},
	{1, 12, {0x03}},
	{1, 12, {0xfb}},
	{2, 12, {0x07, 0x02}},
	{2, 8, {0xff, 0xfe}},
	{3, 3, {0x07, 0x03, 0x02}},
	{9, 1, {0x07, 1, 1, 1, 1, 1, 1, 1, 0xfe}},
	{12, 1, {0x07, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0}},
	{2, 12, {0x59, 0xab}},
	{2, 4, {0x59, 0x02}},
	{8, 2, {0x19, 1, 2, 3, 4, 5, 6, 7}},
	{8, 2, {0x02, 0xa3, 0x5a, 0x03, 0, 0, 0, 0}},
	{8, 1, {0x02, 0x43, 0x03, 0x10, 0x32, 0x54, 0x76, 0x98}},
	{2, 2, {0x99, 0x02}},
	{2, 2, {0x99, 0x21}},
	{2, 1, {0x02, 0x83}},
	{4, 2, {0x02, 0x03, 0x20, 0x00}},
	{7, 2, {0x02, 0x73, 0xcd, 0xab, 0x00, 0xff, 0x01}},
	{7, 1, {0x02, 0xc8, 0x11, 0x22, 0x33, 0x44, 0x55}},
	{2, 2, {0x02, 0xf3}},
	{2, 1, {0x02, 0x23}},
	{11, 1, {0x02, 0xc3, 0x88, 1, 2, 3, 4, 5, 6, 7, 8}},
	{6, 1, {0x02, 0x12, 0x78, 0x56, 0x34, 0x12}},
	{10, 1, {0x02, 0xb2, 0, 0, 0, 0, 0, 0, 0x82, 0x02}},
	{2, 1, {0x02, 0xe2}},
	{10, 1, {0x02, 0xc2, 0x20, 0, 0, 0, 0x01, 0, 0, 0}},
	{4, 1, {0x02, 0x22, 0x80, 0x21}},
	{7, 1, {0x02, 0xa2, 0x31, 0x0d, 0, 0, 0}},
	{4, 1, {0x02, 0x13, 0x81, 0x0e}},
	{11, 1, {0x02, 0x53, 0x02, 1, 2, 3, 4, 5, 6, 7, 8}},
};

static void put_random_packet(struct buf *b)
{
	static unsigned total;
	unsigned pick;

	if (!total)
		for (size_t i = 0; i < sizeof(packets) / sizeof(packets[0]); i++)
			total += packets[i].weight;
	pick = (unsigned)(rnd() % (total + 2));
	if (pick >= total) {
		/* A PEBS block: BIP headers that would be TNT-8 outside. */
		if (pick == total) {
			PUT(b, 0x02, 0x63, 0x81);             /* BBP, 4-byte */
			PUT(b, 0x0c, 0x11, 0x22, 0x33, 0x44); /* BIP */
			PUT(b, 0x59, 0x10);                   /* MTC keeps it */
			PUT(b, 0x14, 0x55, 0x66, 0x77, 0x88); /* BIP */
			PUT(b, 0x02, 0xb3);                   /* BEP.IP */
			PUT(b, 0x3d, 0x00, 0x30);             /* FUP */
		} else {
			PUT(b, 0x02, 0x63, 0x02); /* BBP, 8-byte */
			PUT(b, 0xfc, 1, 2, 3, 4, 5, 6, 7, 8);
			PUT(b, 0x02, 0x33);
		}
		return;
	}
	for (size_t i = 0;; i++) {
		if (pick < packets[i].weight) {
			put(b, packets[i].bytes, packets[i].len);
			return;
		}
		pick -= packets[i].weight;
	}
}

/* PSB+ and random packets, a PSB+ every @period bytes or so. */
static void put_clean(struct buf *b, size_t bytes, size_t period)
{
	size_t end = b->n + bytes, last = b->n;

	put_psb_plus(b);
	while (b->n < end) {
		if (b->n - last >= period) {
			last = b->n;
			put_psb_plus(b);
		}
		put_random_packet(b);
	}
}

/* Bytes with no PSB in them, but with short runs of 02 82. */
static void put_garbage(struct buf *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t x = (uint8_t)rnd();

		if (x < 0x40)
			x = i & 1 ? 0x82 : 0x02;
		/* Never 8 pairs in a row. */
		if (i % 11 == 10)
			x = 0x55;
		put(b, &x, 1);
	}
}

/* An error, then garbage, then PSB+ and packets. */
static void put_error(struct buf *b)
{
	switch (rnd() % 9) {
	case 0:
		PUT(b, 0xd9);
		break;
	case 1:
		PUT(b, 0x02, 0x04);
		break;
	case 2:
		PUT(b, 0xad, 0x00, 0x00);
		break;
	case 3:
		PUT(b, 0x99, 0x40);
		break;
	case 4:
		PUT(b, 0x02, 0x52);
		break;
	case 5:
		PUT(b, 0x07, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0);
		break;
	case 6:
		PUT(b, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x23);
		break;
	case 7:
		PUT(b, 0x02, 0x73, 0x00, 0x00, 0x01, 0x00, 0x00);
		break;
	default:
		PUT(b, 0x02, 0xc3, 0x01);
		break;
	}
	put_garbage(b, rnd() % 40);
}

/* ------------------------------------------------------------------------ */
/* Decoding with a given chunking.                                           */

struct ev {
	int status; /* packet size, or -PTS_ERR_* */
	uint64_t begin, end;
	struct pts_packet pkt;
};

struct evs {
	struct ev *v;
	size_t n, cap;
};

static void add_ev(struct evs *l, const struct ev *e)
{
	if (l->n == l->cap) {
		l->cap = l->cap * 2 + 64;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		if (!l->v) {
			printf("out of memory\n");
			exit(1);
		}
	}
	l->v[l->n++] = *e;
}

/* Chooses chunk sizes. */
enum chunking { CH_WHOLE, CH_CUT, CH_ONE, CH_RANDOM };

struct feed {
	const uint8_t *data;
	size_t len, pos;
	enum chunking how;
	size_t cut;     /* CH_CUT: the one cut */
	size_t max;     /* CH_RANDOM: largest chunk */
};

static size_t chunk_size(struct feed *f)
{
	size_t left = f->len - f->pos, n;

	switch (f->how) {
	case CH_CUT:
		n = f->pos < f->cut ? f->cut - f->pos : left;
		break;
	case CH_ONE:
		n = 1;
		break;
	case CH_RANDOM:
		n = 1 + (size_t)(rnd() % f->max);
		if (rnd() & 1)
			n = 1 + (size_t)(rnd() % 17);
		break;
	default:
		n = left;
		break;
	}
	return n < left ? n : left;
}

/* Decodes @len bytes fed as @how says. @batch 0: pts_pkt_next(); else
 * pts_pkt_next_batch() with up to @batch packets. */
static void decode(const uint8_t *data, size_t len, enum chunking how,
		   size_t arg, const struct pts_pkt_config *cfg, int batch,
		   struct evs *out)
{
	struct pts_pkt_decoder *dec = pts_pkt_decoder_new(cfg);
	struct feed f = {data, len, 0, how, arg, arg ? arg : 1};
	struct pts_packet pk[300];
	struct pts_input in = {NULL, 0, 0};
	uint8_t *chunk = NULL;
	size_t rounds = 0;
	int ended = 0;

	out->n = 0;
	if (!dec) {
		FAIL("no decoder");
		return;
	}
	for (;;) {
		struct ev e;
		int r;

		if (++rounds > 4 * len + 1000) {
			FAIL("decoder does not end (%zu rounds)", rounds);
			break;
		}
		r = batch ? pts_pkt_next_batch(dec, &in, pk, batch)
			  : pts_pkt_next(dec, &in, pk);
		if (r > 0) {
			int n = batch ? r : 1;

			if (batch && r > batch) {
				FAIL("batch returned %d > %d", r, batch);
				break;
			}
			if (!batch && r != pk[0].size)
				FAIL("pts_pkt_next returned %d, size %u", r,
				     pk[0].size);
			for (int i = 0; i < n; i++) {
				memset(&e, 0, sizeof(e));
				e.status = pk[i].size;
				e.pkt = pk[i];
				add_ev(out, &e);
			}
			continue;
		}
		if (r == -PTS_ERR_AGAIN) {
			size_t n;

			if (in.pos != in.size)
				FAIL("AGAIN with %zu bytes left", in.size - in.pos);
			free(chunk);
			chunk = NULL;
			if (f.pos == f.len) {
				if (ended) {
					FAIL("AGAIN after pts_pkt_end()");
					break;
				}
				pts_pkt_end(dec);
				ended = 1;
				in.data = NULL;
				in.size = in.pos = 0;
				continue;
			}
			n = chunk_size(&f);
			chunk = malloc(n);
			if (!chunk) {
				FAIL("no memory");
				break;
			}
			memcpy(chunk, f.data + f.pos, n);
			f.pos += n;
			in.data = chunk;
			in.size = n;
			in.pos = 0;
			continue;
		}
		memset(&e, 0, sizeof(e));
		e.status = r;
		pts_pkt_error_range(dec, &e.begin, &e.end);
		add_ev(out, &e);
		if (r == -PTS_ERR_EOS)
			break;
		if (r != -PTS_ERR_TRUNCATED && r != -PTS_ERR_SKIPPED &&
		    r != -PTS_ERR_BAD_OPCODE && r != -PTS_ERR_BAD_PACKET &&
		    r != -PTS_ERR_BAD_IPC && r != -PTS_ERR_CYC_TOO_LONG) {
			FAIL("unexpected %s", pts_errname(r));
			break;
		}
	}
	/* The end stays the end. */
	if (pts_pkt_next(dec, NULL, pk) != -PTS_ERR_EOS)
		FAIL("no EOS after EOS");
	free(chunk);
	pts_pkt_decoder_free(dec);
}

static void describe(const struct ev *e, char *out, size_t cap)
{
	if (e->status > 0)
		snprintf(out, cap, "%s at 0x%" PRIx64 " size %u",
			 pts_pkt_kind_name(e->pkt.kind), e->pkt.offset,
			 e->pkt.size);
	else
		snprintf(out, cap, "%s [0x%" PRIx64 ", 0x%" PRIx64 ")",
			 pts_errname(e->status), e->begin, e->end);
}

static int same(const char *what, const struct evs *want,
		const struct evs *got)
{
	size_t n = want->n < got->n ? want->n : got->n;

	for (size_t i = 0; i < n; i++) {
		const struct ev *a = &want->v[i], *b = &got->v[i];

		if (a->status != b->status || a->begin != b->begin ||
		    a->end != b->end ||
		    (a->status > 0 &&
		     memcmp(&a->pkt, &b->pkt, sizeof(a->pkt)) != 0)) {
			char sa[96], sb[96];

			describe(a, sa, sizeof(sa));
			describe(b, sb, sizeof(sb));
			FAIL("%s: event %zu: %s, want %s", what, i, sb, sa);
			return 0;
		}
	}
	if (want->n != got->n) {
		FAIL("%s: %zu events, want %zu", what, got->n, want->n);
		return 0;
	}
	return 1;
}

/* ------------------------------------------------------------------------ */
/* Every split point, 1-byte chunks, random chunkings.                       */

static void chunk_invariance(const char *name, const uint8_t *data, size_t len,
			     const struct pts_pkt_config *cfg, int random_runs)
{
	static const int batches[] = {0, 1, 3, 64, 256};
	struct evs ref = {0}, got = {0};
	char what[128];

	decode(data, len, CH_WHOLE, 0, cfg, 64, &ref);
	if (ref.n == 0 || ref.v[ref.n - 1].status != -PTS_ERR_EOS)
		FAIL("%s: does not end with EOS", name);

	for (int b = 0; b < 5; b++) {
		snprintf(what, sizeof(what), "%s whole, batch %d", name,
			 batches[b]);
		decode(data, len, CH_WHOLE, 0, cfg, batches[b], &got);
		same(what, &ref, &got);
		snprintf(what, sizeof(what), "%s 1-byte chunks, batch %d", name,
			 batches[b]);
		decode(data, len, CH_ONE, 0, cfg, batches[b], &got);
		same(what, &ref, &got);
	}
	for (size_t cut = 1; cut < len; cut++) {
		int batch = batches[cut % 5];

		snprintf(what, sizeof(what), "%s cut at %zu, batch %d", name,
			 cut, batch);
		decode(data, len, CH_CUT, cut, cfg, batch, &got);
		if (!same(what, &ref, &got))
			break;
	}
	for (int i = 0; i < random_runs; i++) {
		size_t max = 1 + (size_t)(rnd() % 300);
		int batch = batches[rnd() % 5];

		snprintf(what, sizeof(what), "%s random chunks %d (max %zu)",
			 name, i, max);
		decode(data, len, CH_RANDOM, max, cfg, batch, &got);
		if (!same(what, &ref, &got))
			break;
	}
	free(ref.v);
	free(got.v);
}

static void invariance_suite(void)
{
	struct pts_pkt_config sync = {0}, nosync = {0}, skl = {0}, based = {0};
	struct buf b = {0};

	nosync.no_sync = 1;
	skl.cpu.family = 6;
	skl.cpu.model = 0x4e;
	based.base_offset = 1ull << 40;

	put_clean(&b, 2500, 300);
	chunk_invariance("clean", b.p, b.n, &sync, 40);
	chunk_invariance("clean, base offset", b.p, b.n, &based, 10);

	b.n = 0;
	put_garbage(&b, 37);
	put_clean(&b, 2000, 500);
	chunk_invariance("garbage head", b.p, b.n, &sync, 20);

	b.n = 0;
	put_clean(&b, 300, 300);
	for (int i = 0; i < 8; i++) {
		put_error(&b);
		put_clean(&b, 150 + rnd() % 100, 300);
	}
	chunk_invariance("errors", b.p, b.n, &sync, 40);
	chunk_invariance("errors, no_sync", b.p, b.n, &nosync, 20);

	/* Ends inside a TSC. */
	b.n = 0;
	put_clean(&b, 1500, 400);
	PUT(&b, 0x19, 0x01, 0x02);
	chunk_invariance("truncated tail", b.p, b.n, &sync, 20);

	/* Ends inside a PSB pattern, and with an unpaired 02. */
	b.n = 0;
	put_garbage(&b, 30);
	for (int i = 0; i < 9; i++)
		PUT(&b, 0x02, 0x82);
	PUT(&b, 0x02, 0x23, 0x04, 0x06);
	put_garbage(&b, 20);
	for (int i = 0; i < 16; i++)
		PUT(&b, 0x02, 0x82);
	PUT(&b, 0x02, 0x23);
	put_garbage(&b, 20);
	for (int i = 0; i < 8; i++)
		PUT(&b, 0x02, 0x82);
	PUT(&b, 0x02);
	chunk_invariance("psb runs", b.p, b.n, &sync, 40);

	/* Starts without a PSB; garbage in the middle. */
	b.n = 0;
	for (int i = 0; i < 200; i++)
		put_random_packet(&b);
	put_garbage(&b, 50);
	put_clean(&b, 500, 200);
	chunk_invariance("no_sync start", b.p, b.n, &nosync, 20);

	/* SKD007: OVF written into a 2-byte CYC; also at the very end. */
	b.n = 0;
	put_clean(&b, 200, 300);
	for (int i = 0; i < 20; i++) {
		PUT(&b, 0x07, 0x02, 0xf3);
		put_random_packet(&b);
		PUT(&b, 0x07, 0x02, 0x00);
	}
	PUT(&b, 0x07, 0x02);
	chunk_invariance("skd007", b.p, b.n, &skl, 40);
	chunk_invariance("skd007 off", b.p, b.n, &sync, 10);

	/* No PSB at all, and nothing at all. */
	b.n = 0;
	put_garbage(&b, 100);
	chunk_invariance("garbage only", b.p, b.n, &sync, 10);
	chunk_invariance("empty", b.p, 0, &sync, 1);

	free(b.p);
}

/* ------------------------------------------------------------------------ */
/* Exact events.                                                             */

struct want {
	int status; /* > 0: a packet of this kind + 1000 */
	uint64_t a, b; /* packet: offset, size; condition: range */
};

#define PKT_AT(kind, off, size) {1000 + PTS_PKT_##kind, off, size}
#define COND(err, a, b) {-PTS_ERR_##err, a, b}

static void expect(const char *name, const uint8_t *data, size_t len,
		   const struct pts_pkt_config *cfg, const struct want *w,
		   size_t nw)
{
	struct evs got = {0};

	decode(data, len, CH_WHOLE, 0, cfg, 0, &got);
	for (size_t i = 0; i < nw && i < got.n; i++) {
		const struct ev *e = &got.v[i];
		char s[96];
		int ok;

		if (w[i].status > 0)
			ok = e->status > 0 &&
			     e->pkt.kind == w[i].status - 1000 &&
			     e->pkt.offset == w[i].a && e->pkt.size == w[i].b;
		else
			ok = e->status == w[i].status && e->begin == w[i].a &&
			     e->end == w[i].b;
		if (!ok) {
			describe(e, s, sizeof(s));
			FAIL("%s: event %zu is %s", name, i, s);
			free(got.v);
			return;
		}
	}
	if (got.n != nw)
		FAIL("%s: %zu events, want %zu", name, got.n, nw);
	free(got.v);
}

static void exact_events(void)
{
	struct pts_pkt_config sync = {0}, nosync = {0};

	nosync.no_sync = 1;
	{
		/* Error at 19 is reported at 19; skip [19, 30); then the PSB. */
		static const uint8_t s[] = {PSB_BYTES, 0x02, 0x23, 0x04, 0xd9,
					    0x11, 0x22, 0x02, 0x82, 0x02, 0x82,
					    0x33, 0x44, 0x55, 0x66, PSB_BYTES,
					    0x02, 0x23};
		static const struct want w[] = {
			PKT_AT(PSB, 0, 16),     PKT_AT(PSBEND, 16, 2),
			PKT_AT(TNT8, 18, 1),    COND(BAD_OPCODE, 19, 20),
			COND(SKIPPED, 19, 30),  PKT_AT(PSB, 30, 16),
			PKT_AT(PSBEND, 46, 2),  COND(EOS, 19, 30),
		};

		expect("error and resync", s, sizeof(s), &sync, w,
		       sizeof(w) / sizeof(w[0]));
	}
	{
		/* The resync search starts at the bad packet itself. */
		static const uint8_t s[] = {PSB_BYTES, 0xad, PSB_BYTES};
		static const struct want w[] = {
			PKT_AT(PSB, 0, 16),    COND(BAD_IPC, 16, 17),
			COND(SKIPPED, 16, 17), PKT_AT(PSB, 17, 16),
			COND(EOS, 16, 17),
		};

		expect("bad ipc", s, sizeof(s), &sync, w,
		       sizeof(w) / sizeof(w[0]));
	}
	{
		/* A stream that ends inside a packet: TRUNCATED at its
		 * offset up to the end, then EOS. */
		static const uint8_t s[] = {PSB_BYTES, 0x02, 0x23, 0x19, 0x01,
					    0x02, 0x03};
		static const struct want w[] = {
			PKT_AT(PSB, 0, 16),
			PKT_AT(PSBEND, 16, 2),
			COND(TRUNCATED, 18, 22),
			COND(EOS, 18, 22),
		};

		expect("truncated", s, sizeof(s), &sync, w,
		       sizeof(w) / sizeof(w[0]));
	}
	{
		/* Bytes before the first PSB are skipped, the PSB of a run
		 * of pairs is its last 16 bytes. */
		static const uint8_t s[] = {0x11, 0x22, 0x33, 0x02, 0x82,
					    PSB_BYTES, 0x02, 0x23};
		static const struct want w[] = {
			COND(SKIPPED, 0, 5),
			PKT_AT(PSB, 5, 16),
			PKT_AT(PSBEND, 21, 2),
			COND(EOS, 0, 5),
		};

		expect("initial skip", s, sizeof(s), &sync, w,
		       sizeof(w) / sizeof(w[0]));
	}
	{
		/* no_sync decodes from byte 0. */
		static const uint8_t s[] = {0x04, 0x2d, 0x34, 0x12, 0x00};
		static const struct want w[] = {
			PKT_AT(TNT8, 0, 1),
			PKT_AT(TIP, 1, 3),
			PKT_AT(PAD, 4, 1),
			COND(EOS, 0, 0),
		};

		expect("no_sync", s, sizeof(s), &nosync, w,
		       sizeof(w) / sizeof(w[0]));
	}
	{
		/* No PSB at all: everything is one skip. */
		static const uint8_t s[] = {0x04, 0x2d, 0x34, 0x12, 0x02, 0x82};
		static const struct want w[] = {
			COND(SKIPPED, 0, 6),
			COND(EOS, 0, 6),
		};

		expect("no psb", s, sizeof(s), &sync, w,
		       sizeof(w) / sizeof(w[0]));
	}
	{
		/* A PSB ending the stream, then an unpaired 02: the PSB, then
		 * the 02 is a truncated packet. */
		static const uint8_t s[] = {0x55, PSB_BYTES, 0x02};
		static const struct want w[] = {
			COND(SKIPPED, 0, 1),
			PKT_AT(PSB, 1, 16),
			COND(TRUNCATED, 17, 18),
			COND(EOS, 17, 18),
		};

		expect("psb at the end", s, sizeof(s), &sync, w,
		       sizeof(w) / sizeof(w[0]));
	}
	{
		static const struct want w[] = {COND(EOS, 0, 0)};

		expect("empty", (const uint8_t *)"", 0, &sync, w, 1);
	}
}

/* Last-IP through the decoder: compressed against the last IP, kept across
 * OVF, reset at PSB. */
static void lastip_through_decoder(void)
{
	static const uint8_t s[] = {
		PSB_BYTES,
		0x4d, 0x00, 0x10, 0x40, 0x00,       /* TIP upd32 0x401000 */
		0x2d, 0x34, 0x12,                   /* TIP upd16 -> 0x401234 */
		0x1d,                               /* FUP suppressed */
		0x02, 0xf3,                         /* OVF */
		0x3d, 0x78, 0x56,                   /* FUP upd16 -> 0x405678 */
		0x6d, 0x00, 0x00, 0x00, 0x81, 0xff, 0xff, /* sext48 */
		0x31, 0x00, 0x10,                   /* PGE upd16 */
		PSB_BYTES,
		0x21, 0x00, 0x20,                   /* PGD upd16 -> 0x2000 */
	};
	static const uint64_t want[] = {0, 0x401000, 0x401234, 0, 0,
					0x405678, 0xffffffff81000000ull,
					0xffffffff81001000ull, 0, 0x2000};
	struct pts_pkt_config cfg = {0};
	struct evs got = {0};

	decode(s, sizeof(s), CH_ONE, 0, &cfg, 0, &got);
	if (got.n != 11) {
		FAIL("lastip: %zu events", got.n);
	} else {
		for (size_t i = 0; i < 10; i++)
			if (got.v[i].pkt.u.ip.ip != want[i] &&
			    (got.v[i].pkt.kind == PTS_PKT_TIP ||
			     got.v[i].pkt.kind == PTS_PKT_FUP ||
			     got.v[i].pkt.kind == PTS_PKT_TIP_PGE ||
			     got.v[i].pkt.kind == PTS_PKT_TIP_PGD))
				FAIL("lastip: packet %zu ip 0x%" PRIx64
				     ", want 0x%" PRIx64,
				     i, got.v[i].pkt.u.ip.ip, want[i]);
	}
	free(got.v);
}

/* The PEBS block context: BIP after BBP, kept by FUP, timing and power
 * packets, ended by any other packet (perf's rules). */
static void block_context(void)
{
	static const uint8_t s[] = {
		PSB_BYTES,
		0x02, 0x63, 0x81,             /* BBP 4-byte items */
		0x0c, 0x11, 0x22, 0x33, 0x44, /* BIP */
		0x1d,                         /* FUP: keeps */
		0x59, 0x01,                   /* MTC: keeps */
		0x02, 0x22, 0x00, 0x00,       /* PWRE: keeps */
		0x0c, 0x01, 0x02, 0x03, 0x04, /* BIP */
		0x0d,                         /* TIP: ends the block */
		0x0c,                         /* TNT-8 */
		0x02, 0x63, 0x00,             /* BBP 8-byte items */
		0x04, 1, 2, 3, 4, 5, 6, 7, 8, /* BIP */
		0x02, 0x33,                   /* BEP: ends */
		0x04,                         /* TNT-8 */
		0x02, 0x63, 0x00,             /* BBP */
		PSB_BYTES,                    /* PSB ends it too */
		0x04,                         /* TNT-8 */
	};
	static const uint8_t kinds[] = {
		PTS_PKT_PSB,  PTS_PKT_BBP, PTS_PKT_BIP, PTS_PKT_FUP,
		PTS_PKT_MTC,  PTS_PKT_PWRE, PTS_PKT_BIP, PTS_PKT_TIP,
		PTS_PKT_TNT8, PTS_PKT_BBP, PTS_PKT_BIP, PTS_PKT_BEP,
		PTS_PKT_TNT8, PTS_PKT_BBP, PTS_PKT_PSB, PTS_PKT_TNT8,
	};
	struct pts_pkt_config cfg = {0};
	struct evs got = {0};
	size_t n = sizeof(kinds);

	decode(s, sizeof(s), CH_WHOLE, 0, &cfg, 64, &got);
	if (got.n != n + 1) {
		FAIL("block context: %zu events", got.n);
	} else {
		for (size_t i = 0; i < n; i++)
			if (got.v[i].pkt.kind != kinds[i])
				FAIL("block context: packet %zu is %s, want %s",
				     i, pts_pkt_kind_name(got.v[i].pkt.kind),
				     pts_pkt_kind_name(kinds[i]));
		if (got.v[10].pkt.u.bip.payload != 0x0807060504030201ull)
			FAIL("block context: 8-byte BIP payload");
	}
	free(got.v);
}

/* SKD007 on a Skylake: a 2-byte CYC ending in 02 followed by F3 was an OVF;
 * libipt reports the OVF one byte later and drops the CYC. */
static void skd007(void)
{
	static const uint8_t s[] = {PSB_BYTES, 0x07, 0x02, 0xf3,
				    0x07, 0x02, 0x00, 0x07, 0x02};
	static const struct want w_skl[] = {
		PKT_AT(PSB, 0, 16), PKT_AT(OVF, 17, 2), PKT_AT(CYC, 19, 2),
		PKT_AT(PAD, 21, 1), PKT_AT(CYC, 22, 2), COND(EOS, 0, 0),
	};
	/* Without the erratum F3 is a CYC of its own. */
	static const struct want w_none[] = {
		PKT_AT(PSB, 0, 16), PKT_AT(CYC, 16, 2), PKT_AT(CYC, 18, 1),
		PKT_AT(CYC, 19, 2), PKT_AT(PAD, 21, 1), PKT_AT(CYC, 22, 2),
		COND(EOS, 0, 0),
	};
	struct pts_pkt_config skl = {0}, none = {0};

	skl.cpu.family = 6;
	skl.cpu.model = 0x5e;
	expect("skd007", s, sizeof(s), &skl, w_skl,
	       sizeof(w_skl) / sizeof(w_skl[0]));
	expect("skd007 off", s, sizeof(s), &none, w_none,
	       sizeof(w_none) / sizeof(w_none[0]));
}

/* Conditions met inside a batch come with the next call; AGAIN is not
 * sticky; pts_pkt_offset() follows; reset re-synchronizes. */
static void api_behaviour(void)
{
	static const uint8_t s[] = {PSB_BYTES, 0x04, 0x06, 0xd9, PSB_BYTES,
				    0x02, 0x23, 0x19, 0x01};
	struct pts_pkt_decoder *dec = pts_pkt_decoder_new(NULL);
	struct pts_input in = {s, sizeof(s), 0};
	struct pts_packet pk[16];
	uint64_t b, e;
	int r;

	r = pts_pkt_next_batch(dec, &in, pk, 16);
	if (r != 3 || pk[2].offset != 17 || pts_pkt_offset(dec) != 18)
		FAIL("batch before an error: %d", r);
	r = pts_pkt_next_batch(dec, &in, pk, 16);
	pts_pkt_error_range(dec, &b, &e);
	if (r != -PTS_ERR_BAD_OPCODE || b != 18 || e != 19)
		FAIL("error after a batch: %s [%" PRIu64 ", %" PRIu64 ")",
		     pts_errname(r), b, e);
	r = pts_pkt_next_batch(dec, &in, pk, 16);
	pts_pkt_error_range(dec, &b, &e);
	if (r != -PTS_ERR_SKIPPED || b != 18 || e != 19)
		FAIL("skip after the error: %s", pts_errname(r));
	r = pts_pkt_next_batch(dec, &in, pk, 16);
	if (r != 2 || pk[0].kind != PTS_PKT_PSB || pk[0].offset != 19)
		FAIL("packets after the skip: %d", r);
	/* The TSC is cut: AGAIN, again and again until the end. */
	if (pts_pkt_next_batch(dec, &in, pk, 16) != -PTS_ERR_AGAIN ||
	    pts_pkt_next(dec, &in, pk) != -PTS_ERR_AGAIN ||
	    pts_pkt_next(dec, NULL, pk) != -PTS_ERR_AGAIN)
		FAIL("AGAIN not repeated");
	pts_pkt_end(dec);
	r = pts_pkt_next(dec, NULL, pk);
	pts_pkt_error_range(dec, &b, &e);
	if (r != -PTS_ERR_TRUNCATED || b != 37 || e != 39)
		FAIL("TRUNCATED after end: %s [%" PRIu64 ", %" PRIu64 ")",
		     pts_errname(r), b, e);
	if (pts_pkt_next(dec, NULL, pk) != -PTS_ERR_EOS)
		FAIL("EOS after TRUNCATED");

	/* Reset at a PSB in the middle of the buffer. */
	pts_pkt_reset(dec, 1000 + 19, 1);
	in.data = s + 19;
	in.size = sizeof(s) - 19;
	in.pos = 0;
	r = pts_pkt_next(dec, &in, pk);
	if (r != 16 || pk[0].kind != PTS_PKT_PSB || pk[0].offset != 1019)
		FAIL("after reset at a PSB: %d", r);
	/* Reset and search. */
	pts_pkt_reset(dec, 500, 0);
	in.data = s + 16;
	in.size = sizeof(s) - 16;
	in.pos = 0;
	r = pts_pkt_next(dec, &in, pk);
	pts_pkt_error_range(dec, &b, &e);
	if (r != -PTS_ERR_SKIPPED || b != 500 || e != 503)
		FAIL("reset and search: %s [%" PRIu64 ", %" PRIu64 ")",
		     pts_errname(r), b, e);

	/* Misuse. */
	in.pos = in.size + 1;
	if (pts_pkt_next(dec, &in, pk) != -PTS_ERR_INVALID ||
	    pts_pkt_next(NULL, NULL, pk) != -PTS_ERR_INVALID ||
	    pts_pkt_next_batch(dec, NULL, pk, 0) != -PTS_ERR_INVALID)
		FAIL("misuse accepted");
	pts_pkt_decoder_free(dec);
	pts_pkt_decoder_free(NULL);
}

int main(void)
{
	exact_events();
	lastip_through_decoder();
	block_context();
	skd007();
	api_behaviour();
	invariance_suite();
	if (failures) {
		printf("%d failure(s)\n", failures);
		return 1;
	}
	printf("decoder stream: all passed\n");
	return 0;
}
