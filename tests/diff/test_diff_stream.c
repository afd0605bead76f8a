/* Differential test, valid streams: random packets of every kind libipt
 * 2.0.5 knows, with random payloads and every IP compression, written by
 * libipt's encoder, decoded by libipt's packet decoder and by ptscope's
 * streaming decoder (random chunk sizes, both the per-packet and the batch
 * call), compared field by field.
 *
 * usage: test_diff_stream [PACKETS [SEED]]   (default 1000000, 0x5eed)
 */
#include "check.h"
#include "oracle.h"
#include "stream_gen.h"

#include <stdlib.h>

/* ptscope kinds libipt 2.0.5 cannot produce: PEBS-via-PT and Event Trace
 * packets are newer than it. */
static int newer_than_libipt(int kind)
{
	return kind == PTS_PKT_BBP || kind == PTS_PKT_BIP ||
	       kind == PTS_PKT_BEP || kind == PTS_PKT_CFE || kind == PTS_PKT_EVD;
}

static void compare_pass(const uint8_t *buf, const struct pts_gen_result *gen,
			 const char *label, int batch, size_t max_chunk,
			 uint64_t seed)
{
	struct pts_oracle_opts opts = {
		.label = label,
		.batch = batch,
		.chunk_seed = seed,
		.max_chunk = max_chunk,
	};
	struct pts_oracle_stats stats = {.reports_left = 20};
	int result = pts_oracle_compare(buf, gen->bytes, &opts, &stats);

	pts_oracle_print(label, &stats);
	CHECK_EQ(result, 0);
	CHECK_EQ(stats.mismatches, 0);
	CHECK_EQ(stats.packets, gen->packets);
	/* Every kind the generator can make was compared at least once. */
	for (int kind = 0; kind < PTS_PKT_KIND_COUNT; kind++) {
		if (newer_than_libipt(kind))
			continue;
		if (stats.kinds[kind] == 0)
			fprintf(stderr, "kind %s never compared\n",
				pts_pkt_kind_name(kind));
		CHECK(stats.kinds[kind] > 0);
	}
	/* A valid stream has no errors to agree on. */
	for (int err = 0; err < PTS_ERR_COUNT; err++)
		CHECK_EQ(stats.errors[err], 0);
}

int main(int argc, char **argv)
{
	uint64_t packets = argc > 1 ? strtoull(argv[1], NULL, 0) : 1000000;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x5eed;
	/* No packet libipt 2.0.5 encodes is longer than 16 bytes. */
	size_t cap = (size_t)packets * 16 + 64;
	struct pts_gen_result gen;
	uint8_t *buf = malloc(cap);
	int err;

	printf("seed 0x%" PRIx64 ", %" PRIu64 " packets\n", seed, packets);
	if (!buf) {
		fprintf(stderr, "no memory for %zu bytes\n", cap);
		return 1;
	}
	err = pts_gen_stream(buf, cap, packets, &pts_gen_all_kinds, seed, &gen);
	CHECK_EQ(err, 0);
	CHECK_EQ(gen.packets, packets);
	for (int type = 0; type < PTS_GEN_TYPES; type++)
		if (pts_gen_all_kinds.weight[type])
			CHECK(gen.per_type[type] > 0);
	printf("%zu bytes\n", gen.bytes);

	/* Small chunks cut most packets; large chunks and full batches take
	 * the fast path; small batches end at chunk edges and mid-chunk. */
	compare_pass(buf, &gen, "pts_pkt_next, chunks <= 64", 0, 64, seed + 1);
	compare_pass(buf, &gen, "pts_pkt_next_batch(256), chunks <= 1 MiB", 256,
		     1024 * 1024, seed + 2);
	compare_pass(buf, &gen, "pts_pkt_next_batch(3), chunks <= 300", 3, 300,
		     seed + 3);

	free(buf);
	return pts_check_exit();
}
