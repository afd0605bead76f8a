/* What pts_pkt_skim_batch() should sum up of the packets it skips and hand
 * on of the packets it calls for, worked out apart from the decoder (tests
 * and fuzz targets). */
#ifndef PTS_TEST_SKIM_EXPECT_H
#define PTS_TEST_SKIM_EXPECT_H

#include <ptscope/packets.h>

#include <stddef.h>

/* Adds the skipped packet @pk to @sum. */
void pts_test_skim_add(struct pts_skim *sum, const struct pts_packet *pk);

/* The packets a skim handed on (PTS_SKIM_CALL), in the order it did, for
 * taking one by one against the expected ones. */
struct pts_test_calls {
	struct pts_packet *pkts;
	/* 1: handed on as a bare value (struct pts_skim_timing): only its
	 * kind and value are set */
	uint8_t *bare;
	size_t n, cap, taken;
	/* handed on more than 64 at once or none, an item both an MTC and
	 * a packet, an MTC payload over a byte */
	int bad;
};

/* The next expected packet @want, by @actions: skipped ones go into @sum,
 * handed-on ones are taken from @c. Returns 1 when it was one of those, 0
 * when the batch must hold it (KEEP, STOP), -1 when it is not the next
 * packet handed on. */
int pts_test_skim_take(const uint8_t *actions, struct pts_skim *sum,
		       struct pts_test_calls *c, const struct pts_packet *want);

/* A struct pts_skim_call that records into @c (set up zeroed); with
 * @items, CYCs and MTCs crossed 64 bytes at a time come as values
 * (pts_skim_call.timing). */
struct pts_skim_call pts_test_calls_hook(struct pts_test_calls *c,
					 int items);

/* Whether the next packet handed on is @want, byte for byte, or by its
 * kind and value when it came as one (and takes it). */
int pts_test_calls_take(struct pts_test_calls *c,
			const struct pts_packet *want);

/* Whether every packet handed on was taken and no call was bad. */
int pts_test_calls_done(const struct pts_test_calls *c);

void pts_test_calls_free(struct pts_test_calls *c);

#endif
