/* A small seeded generator for tests, fuzz targets and benchmarks.
 *
 * Every random choice in the harness (payloads, chunk sizes, mutations)
 * comes from one 64-bit seed so that a failing run can be repeated exactly
 * by passing the seed it printed. splitmix64 is plenty for choosing test
 * data; nothing here needs cryptographic quality.
 */
#ifndef PTS_TEST_RNG_H
#define PTS_TEST_RNG_H

#include <stdint.h>

struct pts_rng {
	uint64_t state;
};

static inline void pts_rng_seed(struct pts_rng *rng, uint64_t seed)
{
	rng->state = seed;
}

static inline uint64_t pts_rng_next(struct pts_rng *rng)
{
	uint64_t z = (rng->state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, @n); 0 when @n is 0. The modulo bias is irrelevant for
 * the small ranges used here. */
static inline uint64_t pts_rng_below(struct pts_rng *rng, uint64_t n)
{
	return n ? pts_rng_next(rng) % n : 0;
}

/* The low @bits bits of a random value (@bits 0..64). */
static inline uint64_t pts_rng_bits(struct pts_rng *rng, unsigned bits)
{
	if (bits == 0)
		return 0;
	if (bits >= 64)
		return pts_rng_next(rng);
	return pts_rng_next(rng) & ((1ull << bits) - 1);
}

#endif /* PTS_TEST_RNG_H */
