/* The decoder's fast path (packets/decoder_fast.c) at its edges: runs of
 * one-byte packets (TNT-8, PAD, short CYC, IP packets without payload) that
 * end at window, chunk and batch edges; 02 inside such a run (TNT-64, OVF,
 * PSBEND, a TNT-64 without a stop bit); CYCs of 2 to 14 bytes anywhere; a
 * BBP followed by bytes that are BIPs there and TNT-8s elsewhere; long PAD
 * runs; every IP packet form, sign-extended ones included, at every edge
 * and back to back, and the reserved IPBytes. The reference is the slow
 * path alone: pts_pkt_next() fed one byte at a time never has the 16 bytes
 * the fast path needs. Every other way of
 * decoding (whole buffer, random chunks, batches around the window size)
 * must give the same packets, byte for byte, and the same errors; counting
 * (pts_pkt_count_batch), alone or between decoding calls, the kinds of
 * those packets and the same errors: by every way of counting this CPU
 * runs (decoder_blocks.c with VBMI, with AVX2, the table step alone).
 */
#include <ptscope/packets.h>

#include "check.h"
#include "packets_internal.h"
#include "skim_expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct buf {
	uint8_t p[1 << 16];
	size_t n;
};

static void put1(struct buf *b, unsigned byte)
{
	if (b->n < sizeof(b->p))
		b->p[b->n++] = (uint8_t)byte;
}

static void put_bytes(struct buf *b, unsigned n)
{
	while (n--)
		put1(b, (unsigned)rnd());
}

/* A one-byte packet of the kinds the fast path crosses in runs. */
static void put_one_byte(struct buf *b)
{
	static const uint8_t no_ip[] = {0x01, 0x0d, 0x11, 0x1d};
	unsigned r = (unsigned)rnd();

	switch (r % 4) {
	case 0:
		put1(b, 0x00);
		break;
	case 1:
		put1(b, (r >> 8 & 0xf8) | 3); /* CYC without Exp */
		break;
	case 2:
		put1(b, no_ip[(r >> 8) % 4]);
		break;
	default:
		/* TNT-8 with 1..6 results (not 02, not a bare stop bit). */
		put1(b, ((r >> 8) % 0x7c + 2) << 1);
		break;
	}
}

static void put_cyc(struct buf *b, unsigned len)
{
	put1(b, (unsigned)(rnd() & 0xf8) | 7);
	for (unsigned i = 1; i + 1 < len; i++)
		put1(b, (unsigned)rnd() | 1);
	put1(b, (unsigned)rnd() & 0xfe);
}

static void put_psb(struct buf *b)
{
	for (int i = 0; i < 8; i++) {
		put1(b, 0x02);
		put1(b, 0x82);
	}
}

/* A packet of two bytes or more, or an edge case. */
static void put_other(struct buf *b)
{
	static const uint8_t ip_op[] = {0x0d, 0x11, 0x01, 0x1d};
	static const uint8_t ip_len[] = {0, 2, 4, 6, 6, 0, 8, 0};
	static const uint8_t ipc[] = {1, 2, 3, 4, 6};
	unsigned r = (unsigned)rnd(), c;

	switch (r % 14) {
	case 0:
	case 1:
	case 2:
		c = ipc[(r >> 4) % 5];
		put1(b, c << 5 | ip_op[(r >> 8) % 4]);
		put_bytes(b, ip_len[c]);
		break;
	case 3:
	case 4:
		put_cyc(b, 2 + (r >> 4) % 13);
		break;
	case 5:
		put1(b, 0x59);
		put_bytes(b, 1);
		break;
	case 6:
		put1(b, 0x19);
		put_bytes(b, 7);
		break;
	case 7:
		put1(b, 0x02);
		put1(b, 0xa3);
		put_bytes(b, 5);
		put1(b, 1 + (r >> 8) % 255);
		break;
	case 8:
		put1(b, 0x02);
		put1(b, (r >> 4) & 1 ? 0xf3 : 0x23);
		break;
	case 9:
		put1(b, 0x99);
		put1(b, (r >> 4) & 0x3f);
		break;
	case 10:
		/* BBP, BIPs (xxxxx100: TNT-8 outside a block), then BEP or
		 * a packet that ends the block. */
		put1(b, 0x02);
		put1(b, 0x63);
		put1(b, (r & 0x80) | 0x01);
		for (unsigned i = (r >> 8) % 4; i; i--) {
			put1(b, (unsigned)(rnd() & 0xf8) | 4);
			put_bytes(b, r & 0x80 ? 4 : 8);
		}
		if ((r >> 12) & 1) {
			put1(b, 0x02);
			put1(b, 0x33);
		}
		break;
	case 11:
		/* Long runs of PAD. */
		for (unsigned i = 16 + (r >> 4) % 150; i; i--)
			put1(b, 0x00);
		break;
	case 12:
		put_psb(b);
		break;
	default:
		/* Rare errors: a TNT-64 without a stop bit, a lone 02. */
		if ((r >> 4) % 8 == 0) {
			put1(b, 0x02);
			put1(b, 0xa3);
			put_bytes(b, 0);
			for (int i = 0; i < 6; i++)
				put1(b, i == 0 ? (r >> 8) & 1 : 0);
		} else if ((r >> 4) % 8 == 1) {
			put1(b, 0x02);
			put1(b, 0x02);
			put_psb(b);
		}
		break;
	}
}

/* An IP packet of IPBytes @ipc (0..7) and opcode @op (TIP, TIP.PGE,
 * TIP.PGD, FUP). Sign-extended payloads alternate bit 47 between calls so
 * that both extensions and the partial updates after them are seen. */
static void put_ip(struct buf *b, unsigned ipc, unsigned op)
{
	static const uint8_t ip_len[] = {0, 2, 4, 6, 6, 0, 8, 0};
	static unsigned sign;

	put1(b, ipc << 5 | op);
	if (ipc == 3) {
		put_bytes(b, 5);
		sign ^= 0x80;
		put1(b, (unsigned)(rnd() & 0x7f) | sign);
	} else {
		put_bytes(b, ip_len[ipc]);
	}
}

/* The CPU both decoders are told (family 0: none, no errata). */
static struct pts_cpu cpu_under_test;

struct ev {
	int r;
	uint64_t begin, end;
	struct pts_packet pkt;
};

struct evs {
	struct ev v[1 << 16];
	size_t n;
};

/* Decodes @data in chunks of @chunk bytes (0: at random, 1 to 200) with
 * batches of @max (1: pts_pkt_next()). */
static void decode(const uint8_t *data, size_t len, size_t chunk, int max,
		   struct evs *out)
{
	static struct pts_packet pkts[256];
	struct pts_pkt_config cfg = {0};
	struct pts_pkt_decoder *dec;
	struct pts_input in = {data, 0, 0};
	size_t fed = 0;

	cfg.no_sync = 1;
	cfg.cpu = cpu_under_test;
	dec = pts_pkt_decoder_new(&cfg);
	out->n = 0;
	for (int guard = 0; dec && guard < 1 << 22; guard++) {
		int r = max == 1 ? pts_pkt_next(dec, &in, pkts)
				 : pts_pkt_next_batch(dec, &in, pkts, max);

		if (r == -PTS_ERR_AGAIN) {
			size_t n = chunk ? chunk : 1 + rnd() % 200;

			if (fed == len) {
				pts_pkt_end(dec);
				continue;
			}
			if (n > len - fed)
				n = len - fed;
			in.data = data + fed;
			in.size = n;
			in.pos = 0;
			fed += n;
			continue;
		}
		for (int i = 0; i < (r > 0 ? (max == 1 ? 1 : r) : 1); i++) {
			struct ev *e = &out->v[out->n < 65535 ? out->n++ : out->n];

			memset(e, 0, sizeof(*e));
			e->r = r > 0 ? 1 : r;
			if (r > 0)
				e->pkt = pkts[i];
			else
				pts_pkt_error_range(dec, &e->begin, &e->end);
		}
		if (r == -PTS_ERR_EOS || r == -PTS_ERR_TRUNCATED ||
		    r == -PTS_ERR_NO_PROGRESS)
			break;
	}
	pts_pkt_decoder_free(dec);
}

static void compare(const char *name, const struct evs *want,
		    const struct evs *got, size_t chunk, int max)
{
	size_t n = want->n < got->n ? want->n : got->n;

	for (size_t i = 0; i < n; i++) {
		if (!memcmp(&want->v[i], &got->v[i], sizeof(want->v[i])))
			continue;
		FAIL("%s (chunk %zu, max %d): event %zu: want r %d kind %u "
		     "off %llu size %u, got r %d kind %u off %llu size %u",
		     name, chunk, max, i, want->v[i].r, want->v[i].pkt.kind,
		     (unsigned long long)want->v[i].pkt.offset,
		     want->v[i].pkt.size, got->v[i].r, got->v[i].pkt.kind,
		     (unsigned long long)got->v[i].pkt.offset,
		     got->v[i].pkt.size);
		return;
	}
	if (want->n != got->n) {
		FAIL("%s (chunk %zu, max %d): %zu events, want %zu", name,
		     chunk, max, got->n, want->n);
	}
}

/* The decoder wants more of @b: its next chunk of @chunk bytes (0: 1 to
 * 200 at random) after the @fed first, or its end. */
static void next_chunk(struct pts_pkt_decoder *dec, struct pts_input *in,
		       const struct buf *b, size_t chunk, size_t *fed)
{
	const size_t n = chunk ? chunk : 1 + rnd() % 200;

	if (*fed == b->n) {
		pts_pkt_end(dec);
		return;
	}
	in->data = b->p + *fed;
	in->size = n < b->n - *fed ? n : b->n - *fed;
	in->pos = 0;
	*fed += in->size;
}

/* pts_pkt_count_batch over chunks of @chunk bytes (0: at random), with
 * batches of up to @max (<= 256), alone or (@mixed) chosen call by call against
 * pts_pkt_next_batch: its counts must be the kinds of the packets @want has
 * next, its conditions @want's; packets decoded between counts must be
 * @want's, byte for byte (the counting path keeps last-IP and the PEBS
 * block context as decoding does). */
static void count_compare(const char *name, const struct buf *b, size_t chunk,
			  int max, int mixed, const struct evs *want)
{
	static struct pts_packet pkts[256];
	struct pts_pkt_config cfg = {0};
	struct pts_pkt_decoder *dec;
	struct pts_input in = {b->p, 0, 0};
	size_t fed = 0, at = 0;

	cfg.no_sync = 1;
	cfg.cpu = cpu_under_test;
	dec = pts_pkt_decoder_new(&cfg);
	for (int guard = 0; dec && guard < 1 << 22; guard++) {
		uint64_t counts[PTS_PKT_KIND_COUNT] = {0};
		const int counting = !mixed || (rnd() & 1);
		const int m = 1 + (int)(rnd() % (unsigned)max);
		int r = counting ? pts_pkt_count_batch(dec, &in, counts, m)
				 : pts_pkt_next_batch(dec, &in, pkts, m);

		if (r == -PTS_ERR_AGAIN) {
			next_chunk(dec, &in, b, chunk, &fed);
			continue;
		}
		for (int i = 0; i < (r > 0 ? r : 1) && at < want->n; i++, at++) {
			const struct ev *e = &want->v[at];
			uint64_t begin, end;

			if (r < 0) {
				pts_pkt_error_range(dec, &begin, &end);
				CHECK(e->r == r && e->begin == begin &&
				      e->end == end);
			} else if (counting) {
				CHECK(e->r == 1 && counts[e->pkt.kind] > 0);
				counts[e->pkt.kind]--;
			} else {
				CHECK(!memcmp(&e->pkt, &pkts[i], sizeof(*pkts)));
			}
		}
		for (int k = 0; k < PTS_PKT_KIND_COUNT; k++)
			CHECK(counts[k] == 0);
		if (r == -PTS_ERR_EOS || r == -PTS_ERR_TRUNCATED ||
		    r == -PTS_ERR_NO_PROGRESS || r == 0)
			break;
	}
	if (at != want->n)
		FAIL("%s (chunk %zu, max %d, mixed %d): counted %zu events, "
		     "want %zu", name, chunk, max, mixed, at, want->n);
	pts_pkt_decoder_free(dec);
}

/* pts_pkt_skim_batch with @actions over chunks of @chunk bytes (0: at
 * random), batches of up to @max: the packets it stores must be @want's
 * packets that @actions keep or stop at, byte for byte, its conditions
 * @want's, what it skipped before each STOP packet, each condition and
 * the end the sum of @want's skipped packets there, and what it handed on
 * @want's packets that @actions call for, in order, each before the next
 * packet stored, and none after a STOP packet or a condition. */
static void skim_compare(const char *name, const struct buf *b, size_t chunk,
			 int max, const uint8_t *actions, int items,
			 const struct evs *want)
{
	static struct pts_packet pkts[256];
	struct pts_pkt_config cfg = {0};
	struct pts_pkt_decoder *dec;
	struct pts_input in = {b->p, 0, 0};
	struct pts_skim sum = {0}, expect = {0};
	struct pts_test_calls calls = {0};
	const struct pts_skim_call hook = pts_test_calls_hook(&calls, items);
	size_t fed = 0, at = 0;

	cfg.no_sync = 1;
	cfg.cpu = cpu_under_test;
	dec = pts_pkt_decoder_new(&cfg);
	for (int guard = 0; dec && guard < 1 << 22; guard++) {
		const int m = 1 + (int)(rnd() % (unsigned)max);
		int r = pts_pkt_skim_batch(dec, &in, actions, pkts, m, &sum,
					   &hook);

		if (r == -PTS_ERR_AGAIN) {
			next_chunk(dec, &in, b, chunk, &fed);
			continue;
		}
		for (int i = 0; i < (r > 0 ? r : 1); i++) {
			const struct ev *e;
			uint64_t begin, end;

			for (int t = 1; t > 0 && at < want->n &&
					want->v[at].r == 1;
			     at += t > 0) {
				t = pts_test_skim_take(actions, &expect, &calls,
						       &want->v[at].pkt);
				CHECK(t >= 0);
			}
			if (at == want->n) {
				FAIL("%s (chunk %zu): more events than %zu",
				     name, chunk, want->n);
				break;
			}
			e = &want->v[at++];
			if (r < 0) {
				pts_pkt_error_range(dec, &begin, &end);
				CHECK(e->r == r && e->begin == begin &&
				      e->end == end);
			} else {
				CHECK(!memcmp(&e->pkt, &pkts[i], sizeof(*pkts)));
				/* a STOP packet ends the batch */
				if (actions[pkts[i].kind] != PTS_SKIM_STOP)
					continue;
				CHECK(i == r - 1);
			}
			CHECK(!memcmp(&sum, &expect, sizeof(sum)));
			CHECK(pts_test_calls_done(&calls));
			memset(&sum, 0, sizeof(sum));
			memset(&expect, 0, sizeof(expect));
		}
		if (r == -PTS_ERR_EOS || r == -PTS_ERR_TRUNCATED ||
		    r == -PTS_ERR_NO_PROGRESS || r == 0)
			break;
	}
	CHECK(!memcmp(&sum, &expect, sizeof(sum)));
	CHECK(pts_test_calls_done(&calls));
	if (at != want->n)
		FAIL("%s (chunk %zu, max %d): skimmed %zu events, want %zu",
		     name, chunk, max, at, want->n);
	pts_test_calls_free(&calls);
	pts_pkt_decoder_free(dec);
}

/* Actions as a model would choose them: the common one-byte and flow
 * kinds skipped, a few kinds stopping, some handed on, the rest kept
 * (@round varies it). */
static void random_actions(uint8_t *actions, int round)
{
	for (int k = 0; k < PTS_PKT_KIND_COUNT; k++)
		actions[k] = (uint8_t)(rnd() % 8 == 0 ? PTS_SKIM_STOP
				       : rnd() % 3 == 0 ? PTS_SKIM_KEEP
				       : rnd() % 4 == 0 ? PTS_SKIM_CALL
							: PTS_SKIM_SKIP);
	if (round % 2)
		actions[PTS_PKT_TIP] = PTS_SKIM_STOP;
	if (round % 3 == 0)
		actions[PTS_PKT_CYC] = PTS_SKIM_KEEP;
	if (round % 3 == 1) /* the windows model's clock */
		actions[PTS_PKT_CYC] = actions[PTS_PKT_MTC] = PTS_SKIM_CALL;
}

static void check(const char *name, const struct buf *b)
{
	static struct evs want, got;
	static const size_t chunks[] = {0, 16, 17, 63, 64, 65, 100, 1 << 16};
	static const int maxes[] = {1, 2, 47, 48, 49, 256};

	decode(b->p, b->n, 1, 1, &want);
	for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
		for (size_t m = 0; m < sizeof(maxes) / sizeof(maxes[0]); m++) {
			decode(b->p, b->n, chunks[c], maxes[m], &got);
			compare(name, &want, &got, chunks[c], maxes[m]);
		}
		count_compare(name, b, chunks[c], 256, 0, &want);
		count_compare(name, b, chunks[c], 256, 1, &want);
		for (int round = 0; round < 4; round++) {
			uint8_t actions[PTS_PKT_KIND_COUNT];

			/* round 3: round 1's clock (CYCs and MTCs handed
			 * on) with them as values */
			random_actions(actions, round == 3 ? 1 : round);
			skim_compare(name, b, chunks[c], 256, actions,
				     round == 3, &want);
		}
	}
}

static void all_streams(void)
{
	static struct buf b;

	/* Runs of one-byte packets of every length around the window. */
	for (int round = 0; round < 4; round++) {
		b.n = 0;
		put_psb(&b);
		for (unsigned run = 0; run < 130 && b.n < 60000; run++) {
			for (unsigned i = 0; i < run; i++)
				put_one_byte(&b);
			put_other(&b);
		}
		check("runs", &b);
	}
	/* A dense mix, from random one-byte packet runs. */
	for (int round = 0; round < 6; round++) {
		b.n = 0;
		put_psb(&b);
		while (b.n < 20000) {
			for (unsigned i = (unsigned)(rnd() % 12); i; i--)
				put_one_byte(&b);
			put_other(&b);
		}
		check("mix", &b);
	}
	/* 02 in runs: what follows the 02 decides (TNT-64, OVF, error). */
	b.n = 0;
	put_psb(&b);
	for (int i = 0; i < 300; i++) {
		for (unsigned k = (unsigned)(rnd() % 70); k; k--)
			put_one_byte(&b);
		put1(&b, 0x02);
		put1(&b, i % 3 ? 0xa3 : i % 2 ? 0xf3 : 0x23);
		if (i % 3)
			put_bytes(&b, 6);
	}
	check("02 in runs", &b);
	/* BIP context right after BBP: 04 must be a BIP there. */
	b.n = 0;
	put_psb(&b);
	for (int i = 0; i < 200; i++) {
		for (unsigned k = (unsigned)(rnd() % 40); k; k--)
			put_one_byte(&b);
		put1(&b, 0x02);
		put1(&b, 0x63);
		put1(&b, 0x81);
		put1(&b, 0x04);
		put_bytes(&b, 4);
		for (unsigned k = (unsigned)(rnd() % 40); k; k--)
			put1(&b, 0x04);
	}
	check("bip after bbp", &b);
	/* Every IP packet form (IPBytes 0, 1, 2, 3, 4, 6 of each opcode)
	 * after runs of every length around the window, so that each form
	 * starts and ends at each chunk and batch edge; sext-48 IPs are
	 * followed by partial updates that keep their extended high bits. */
	for (int round = 0; round < 2; round++) {
		static const uint8_t ip_op[] = {0x0d, 0x11, 0x01, 0x1d};
		static const uint8_t ipcs[] = {0, 1, 2, 3, 4, 6};

		b.n = 0;
		put_psb(&b);
		for (unsigned run = 0; b.n < 60000; run = (run + 1) % 70) {
			unsigned ipc = ipcs[rnd() % 6];

			for (unsigned i = 0; i < run; i++)
				put_one_byte(&b);
			put_ip(&b, ipc, ip_op[rnd() % 4]);
			if (ipc == 3 && round)
				put_ip(&b, 1 + (unsigned)(rnd() % 2),
				       ip_op[rnd() % 4]);
		}
		check("ip forms", &b);
	}
	/* Runs of IP packets alone, every form back to back. */
	b.n = 0;
	put_psb(&b);
	while (b.n < 30000) {
		static const uint8_t ip_op[] = {0x0d, 0x11, 0x01, 0x1d};
		static const uint8_t ipcs[] = {0, 1, 2, 3, 4, 6};

		put_ip(&b, ipcs[rnd() % 6], ip_op[rnd() % 4]);
	}
	check("ip runs", &b);
	/* Reserved IPBytes (5, 7) at the edges: errors, left to the slow
	 * path; a PSB after each to go on. */
	b.n = 0;
	put_psb(&b);
	for (int i = 0; i < 100; i++) {
		for (unsigned k = (unsigned)(rnd() % 70); k; k--)
			put_ip(&b, (unsigned)(rnd() % 2) * 3, 0x0d);
		put_ip(&b, i % 2 ? 5 : 7, 0x1d);
		put_bytes(&b, 8);
		put_psb(&b);
	}
	check("reserved ipc", &b);
	/* Every byte as a packet's first byte, after runs of every length:
	 * the blocks size each from the table (by a permute, or by AVX2
	 * arithmetic that must give the same). */
	for (int round = 0; round < 2; round++) {
		b.n = 0;
		for (unsigned c = 0; c < 256; c++) {
			put_psb(&b);
			for (unsigned k = (c + (unsigned)round * 7) % 70; k; k--)
				put_one_byte(&b);
			put1(&b, c);
			put_bytes(&b, 15);
		}
		put_psb(&b);
		check("every first byte", &b);
	}
	/* PAD only, and PAD runs across every edge. */
	b.n = 0;
	put_psb(&b);
	for (int i = 0; i < 3000; i++)
		put1(&b, 0x00);
	check("pad", &b);
	/* SKD007 (Skylake): a CYC whose last byte is 02 may be followed by
	 * an OVF's second byte; both paths must leave it to the slow one.
	 * CYCs of 2 to 9 bytes, ending in 02 or not, at random offsets (so
	 * at every place of the counting blocks, their last byte too). */
	CHECK(pts_cpu_parse("6/78", &cpu_under_test) == 0);
	for (int round = 0; round < 2; round++) {
		b.n = 0;
		put_psb(&b);
		while (b.n < 30000) {
			unsigned len = 2 + (unsigned)(rnd() % 8);

			for (unsigned k = (unsigned)(rnd() % 20); k; k--)
				put_one_byte(&b);
			put1(&b, (unsigned)(rnd() & 0xf8) | 7);
			for (unsigned i = 2; i < len; i++)
				put1(&b, (unsigned)rnd() | 1);
			put1(&b, rnd() % 2 ? 0x02 : (unsigned)rnd() & 0xfe);
			if (rnd() % 2)
				put1(&b, 0xf3);
			if (round)
				put_other(&b);
		}
		check("skd007", &b);
	}
	memset(&cpu_under_test, 0, sizeof(cpu_under_test));
}

int main(void)
{
	/* Counting by 64-byte blocks with AVX-512 VBMI, with AVX2 only, and
	 * by the table step alone: as far as this CPU goes. */
	for (int cap = PTS_BLOCKS_VBMI; cap >= PTS_BLOCKS_NONE; cap--) {
		pts_fast_blocks_cap = cap;
		all_streams();
	}
	return pts_check_exit();
}
