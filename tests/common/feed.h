/* Drives ptscope's streaming packet decoder over one in-memory buffer, cut
 * into chunks whose sizes a callback chooses, and turns the decoder's
 * protocol (AGAIN -> next chunk, end of buffer -> pts_pkt_end) into a plain
 * sequence of events. Shared by the differential tests, the capture tests
 * and the fuzz targets, so that each of them checks decoding rather than
 * re-implementing the feeding loop.
 */
#ifndef PTS_TEST_FEED_H
#define PTS_TEST_FEED_H

#include <ptscope/packets.h>

#include "rng.h"

/* One thing the decoder said. */
struct pts_event {
	int status;            /* > 0: a packet of this size; < 0: -PTS_ERR_* */
	struct pts_packet pkt; /* valid when status > 0 */
	uint64_t begin, end;   /* pts_pkt_error_range() when status < 0 */
};

/* Chooses the size of the next chunk; @left (> 0) bytes remain. Results
 * outside 1..@left are clamped. */
typedef size_t (*pts_feed_chunk_fn)(void *ctx, size_t left);

#define PTS_FEED_BATCH_MAX 256

struct pts_feed_opts {
	struct pts_pkt_config config;
	/* 0: pts_pkt_next; 1..PTS_FEED_BATCH_MAX: pts_pkt_next_batch asking
	 * for up to that many packets per call. */
	int batch;
	/* NULL: the whole buffer as a single chunk. */
	pts_feed_chunk_fn chunk;
	void *chunk_ctx;
	/* 1: hand each chunk in a heap copy of exactly its size, freed when
	 * the decoder asks for the next one, so that a sanitizer catches reads
	 * past a chunk and reads of a chunk already given back. */
	uint8_t copy;
};

struct pts_feed;

/* Starts decoding @buf (@len bytes, which must outlive the feed). NULL on
 * no memory. */
struct pts_feed *pts_feed_new(const uint8_t *buf, size_t len,
			      const struct pts_feed_opts *opts);
void pts_feed_free(struct pts_feed *feed);

/* Fills @ev with the next event and returns its status.
 * -PTS_ERR_EOS and -PTS_ERR_TRUNCATED end the stream; every later call
 * returns -PTS_ERR_EOS.
 * Returns -PTS_ERR_NO_PROGRESS (and ends the stream) when the decoder asks
 * for input after pts_pkt_end() or repeats one error without moving on:
 * a decoder bug the caller reports.
 * Returns -PTS_ERR_INTERNAL when pts_pkt_next_batch() returns 0. */
int pts_feed_next(struct pts_feed *feed, struct pts_event *ev);

/* A chunk chooser for pts_feed_opts.chunk: half of the chunks are 1..16
 * bytes (packets cut everywhere), the rest up to @max bytes. */
struct pts_chunker {
	struct pts_rng rng;
	size_t max;
};
size_t pts_chunker_next(void *chunker, size_t left);

#endif /* PTS_TEST_FEED_H */
