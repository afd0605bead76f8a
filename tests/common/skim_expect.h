/* What pts_pkt_skim_batch() should sum up of the packets it skips, worked
 * out apart from the decoder (tests and fuzz targets). */
#ifndef PTS_TEST_SKIM_EXPECT_H
#define PTS_TEST_SKIM_EXPECT_H

#include <ptscope/packets.h>

/* Adds the skipped packet @pk to @sum. */
void pts_test_skim_add(struct pts_skim *sum, const struct pts_packet *pk);

#endif
