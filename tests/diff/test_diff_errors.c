/* Differential test, broken input: random garbage, packet-shaped garbage
 * and mutated valid streams. libipt 2.0.5 and ptscope must agree on every
 * packet up to the first error, ptscope must report the error libipt sees
 * at the same offset (never crash, never go quiet), skip to the next PSB,
 * and agree again from there.
 *
 * usage: test_diff_errors [ROUNDS [SEED]]   (default 30000, 0xbad)
 */
#include "check.h"
#include "oracle.h"
#include "rng.h"
#include "stream_gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_INPUT = 4096 };

/* Uniform random bytes: mostly fails within a few bytes. */
static size_t make_garbage(struct pts_rng *rng, uint8_t *buf)
{
	size_t len = 1 + (size_t)pts_rng_below(rng, 512);

	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)pts_rng_bits(rng, 8);
	return len;
}

/* Garbage made of opcode-shaped pieces (extended opcodes, IP headers,
 * whole and partial PSBs, CYC chains), so that decoding gets past the
 * first byte more often and reaches the payload checks. */
static size_t make_soup(struct pts_rng *rng, uint8_t *buf)
{
	static const uint8_t ext[] = {0xa3, 0x43, 0x83, 0x03, 0xc8, 0xf3, 0x82,
				      0x23, 0x73, 0xc3, 0x12, 0x32, 0x52, 0x72,
				      0x92, 0xb2, 0xd2, 0xf2, 0x62, 0xe2, 0xc2,
				      0x22, 0xa2, 0x63, 0x33, 0xb3, 0x13, 0x53};
	static const uint8_t first[] = {0x00, 0x19, 0x59, 0x99, 0x0d, 0x11,
					0x01, 0x1d, 0x03, 0x07, 0x02, 0xd9};
	size_t target = 1 + (size_t)pts_rng_below(rng, 600), len = 0;

	while (len < target && len + 32 < MAX_INPUT) {
		switch (pts_rng_below(rng, 6)) {
		case 0:
			buf[len++] = 0x02;
			buf[len++] = ext[pts_rng_below(rng, sizeof(ext))];
			break;
		case 1: {
			/* An opcode, now and then with random IPBytes. */
			uint8_t op = first[pts_rng_below(rng, sizeof(first))];

			if (pts_rng_below(rng, 4) == 0)
				op |= (uint8_t)(pts_rng_bits(rng, 3) << 5);
			buf[len++] = op;
			break;
		}
		case 2: {
			/* A PSB, often cut short. */
			size_t pairs = pts_rng_below(rng, 2)
					       ? 8
					       : 1 + (size_t)pts_rng_below(rng, 8);

			for (size_t i = 0; i < pairs; i++) {
				buf[len++] = 0x02;
				buf[len++] = 0x82;
			}
			break;
		}
		case 3: {
			/* A CYC chain, now and then past the 9 bytes libipt
			 * reads and the 15 ptscope reads. */
			size_t ext_bytes = (size_t)pts_rng_below(
				rng, pts_rng_below(rng, 4) ? 8 : 20);

			buf[len++] = 0x07;
			for (size_t i = 0; i < ext_bytes; i++)
				buf[len++] = (uint8_t)(pts_rng_bits(rng, 8) | 1);
			buf[len++] = (uint8_t)(pts_rng_bits(rng, 8) & 0xfe);
			break;
		}
		default:
			buf[len++] = (uint8_t)pts_rng_bits(rng, 8);
			break;
		}
	}
	return len;
}

/* One random edit of @buf (@len bytes, room for MAX_INPUT). */
static size_t mutate(struct pts_rng *rng, uint8_t *buf, size_t len)
{
	size_t at = (size_t)pts_rng_below(rng, len);

	switch (pts_rng_below(rng, 6)) {
	case 0:
		buf[at] = (uint8_t)pts_rng_bits(rng, 8);
		break;
	case 1:
		buf[at] ^= (uint8_t)(1u << pts_rng_below(rng, 8));
		break;
	case 2:
		if (len < MAX_INPUT) {
			memmove(buf + at + 1, buf + at, len - at);
			buf[at] = (uint8_t)pts_rng_bits(rng, 8);
			len++;
		}
		break;
	case 3:
		if (len > 1) {
			memmove(buf + at, buf + at + 1, len - at - 1);
			len--;
		}
		break;
	case 4:
		/* Cut the stream: the last packet is often truncated. */
		len = at + 1;
		break;
	default:
		/* An extended opcode where there was none. */
		buf[at] = 0x02;
		if (at + 1 < len)
			buf[at + 1] = (uint8_t)pts_rng_bits(rng, 8);
		break;
	}
	return len;
}

static size_t make_mutant(struct pts_rng *rng, uint8_t *buf)
{
	struct pts_gen_result gen;
	uint64_t packets = 20 + pts_rng_below(rng, 300);
	size_t len;

	if (pts_gen_stream(buf, MAX_INPUT / 2, packets, &pts_gen_all_kinds,
			   pts_rng_next(rng), &gen) < 0 ||
	    gen.bytes == 0)
		return 0;
	len = gen.bytes;
	for (uint64_t n = 1 + pts_rng_below(rng, 4); n > 0; n--)
		len = mutate(rng, buf, len);
	return len;
}

int main(int argc, char **argv)
{
	static const char *const what[] = {"garbage", "soup", "mutant"};
	uint64_t rounds = argc > 1 ? strtoull(argv[1], NULL, 0) : 30000;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 0xbad;
	struct pts_oracle_stats stats[3];
	static uint8_t buf[MAX_INPUT];
	struct pts_rng rng;

	printf("seed 0x%" PRIx64 ", %" PRIu64 " rounds\n", seed, rounds);
	memset(stats, 0, sizeof(stats));
	for (int k = 0; k < 3; k++)
		stats[k].reports_left = 10;
	pts_rng_seed(&rng, seed);
	for (uint64_t round = 0; round < rounds; round++) {
		int k = (int)(round % 3);
		size_t len = k == 0 ? make_garbage(&rng, buf)
			   : k == 1 ? make_soup(&rng, buf)
				    : make_mutant(&rng, buf);
		char label[64];
		struct pts_oracle_opts opts = {
			.label = label,
			/* Uniform garbage has hardly a PSB to sync on: decode
			 * it from its first byte; the others both ways. */
			.no_sync = k == 0 ? 1 : (uint8_t)pts_rng_bits(&rng, 1),
			.batch = pts_rng_bits(&rng, 1)
					 ? 0
					 : 1 + (int)pts_rng_below(&rng, 8),
			.chunk_seed = pts_rng_next(&rng),
			.max_chunk = 1 + (size_t)pts_rng_below(&rng, 64),
		};

		snprintf(label, sizeof(label), "%s round %" PRIu64, what[k], round);
		CHECK(pts_oracle_compare(buf, len, &opts, &stats[k]) >= 0);
	}

	for (int k = 0; k < 3; k++) {
		pts_oracle_print(what[k], &stats[k]);
		CHECK_EQ(stats[k].mismatches, 0);
	}
	/* The inputs must really exercise the error paths; else the test
	 * proves nothing. */
	CHECK(stats[0].errors[PTS_ERR_BAD_OPCODE] > 0);
	CHECK(stats[1].errors[PTS_ERR_BAD_PACKET] > 0);
	CHECK(stats[1].errors[PTS_ERR_BAD_IPC] > 0);
	CHECK(stats[1].errors[PTS_ERR_CYC_TOO_LONG] > 0);
	CHECK(stats[1].long_cyc > 0 && stats[1].newer_kinds > 0);
	CHECK(stats[2].errors[PTS_ERR_TRUNCATED] > 0);
	CHECK(stats[2].resyncs > 0);
	CHECK(stats[2].packets > rounds);
	return pts_check_exit();
}
