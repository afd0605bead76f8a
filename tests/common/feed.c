#include "feed.h"

#include <stdlib.h>
#include <string.h>

struct pts_feed {
	struct pts_pkt_decoder *dec;
	const uint8_t *buf;
	size_t len;
	size_t fed; /* bytes handed to the decoder so far */
	struct pts_input in;
	uint8_t *copy; /* the current chunk's heap copy (opts.copy) */
	struct pts_feed_opts opts;
	uint8_t ended; /* pts_pkt_end() called */
	uint8_t done;  /* EOS, TRUNCATED or a harness error returned */
	/* Packets of the last batch not handed out yet. */
	struct pts_packet queue[PTS_FEED_BATCH_MAX];
	int qlen, qpos;
	/* The last error, to catch a decoder that repeats it forever. */
	struct pts_event last_err;
	uint64_t last_err_offset;
	int repeats;
};

struct pts_feed *pts_feed_new(const uint8_t *buf, size_t len,
			      const struct pts_feed_opts *opts)
{
	struct pts_feed *feed = calloc(1, sizeof(*feed));

	if (!feed)
		return NULL;
	feed->opts = *opts;
	if (feed->opts.batch > PTS_FEED_BATCH_MAX)
		feed->opts.batch = PTS_FEED_BATCH_MAX;
	feed->buf = buf;
	feed->len = len;
	feed->dec = pts_pkt_decoder_new(&feed->opts.config);
	if (!feed->dec) {
		free(feed);
		return NULL;
	}
	return feed;
}

void pts_feed_free(struct pts_feed *feed)
{
	if (!feed)
		return;
	pts_pkt_decoder_free(feed->dec);
	free(feed->copy);
	free(feed);
}

static int feed_chunk(struct pts_feed *feed)
{
	size_t left = feed->len - feed->fed;
	size_t n = feed->opts.chunk ? feed->opts.chunk(feed->opts.chunk_ctx, left)
				    : left;
	const uint8_t *data = feed->buf + feed->fed;

	if (n < 1)
		n = 1;
	if (n > left)
		n = left;
	/* The decoder asked for more: by contract it holds no pointer into
	 * the previous chunk any longer. */
	free(feed->copy);
	feed->copy = NULL;
	if (feed->opts.copy) {
		feed->copy = malloc(n);
		if (!feed->copy)
			return -PTS_ERR_NOMEM;
		memcpy(feed->copy, data, n);
		data = feed->copy;
	}
	feed->in.data = data;
	feed->in.size = n;
	feed->in.pos = 0;
	feed->fed += n;
	return 0;
}

static int decode_one(struct pts_feed *feed, struct pts_packet *pkt)
{
	int n;

	if (feed->qpos < feed->qlen) {
		*pkt = feed->queue[feed->qpos++];
		return pkt->size;
	}
	if (feed->opts.batch <= 0)
		return pts_pkt_next(feed->dec, &feed->in, pkt);
	n = pts_pkt_next_batch(feed->dec, &feed->in, feed->queue,
			       feed->opts.batch);
	if (n == 0)
		return -PTS_ERR_INTERNAL;
	if (n < 0)
		return n;
	feed->qlen = n;
	feed->qpos = 1;
	*pkt = feed->queue[0];
	return pkt->size;
}

/* A decoder that reports the same error at the same place again without
 * moving would make every caller loop forever. */
static int repeated_error(struct pts_feed *feed, const struct pts_event *ev)
{
	uint64_t offset = pts_pkt_offset(feed->dec);

	if (ev->status == feed->last_err.status &&
	    ev->begin == feed->last_err.begin && ev->end == feed->last_err.end &&
	    offset == feed->last_err_offset) {
		return ++feed->repeats > 2;
	}
	feed->last_err = *ev;
	feed->last_err_offset = offset;
	feed->repeats = 0;
	return 0;
}

int pts_feed_next(struct pts_feed *feed, struct pts_event *ev)
{
	int status;

	memset(ev, 0, sizeof(*ev));
	if (feed->done)
		return ev->status = -PTS_ERR_EOS;
	for (;;) {
		status = decode_one(feed, &ev->pkt);

		if (status == -PTS_ERR_AGAIN) {
			if (feed->fed < feed->len) {
				status = feed_chunk(feed);
				if (status < 0)
					break;
				continue;
			}
			if (!feed->ended) {
				pts_pkt_end(feed->dec);
				feed->ended = 1;
				continue;
			}
			/* Input asked for after the end was marked. */
			status = -PTS_ERR_NO_PROGRESS;
			break;
		}
		ev->status = status;
		if (status > 0) {
			feed->repeats = 0;
			return status;
		}
		pts_pkt_error_range(feed->dec, &ev->begin, &ev->end);
		if (repeated_error(feed, ev)) {
			status = -PTS_ERR_NO_PROGRESS;
			break;
		}
		if (status == -PTS_ERR_EOS || status == -PTS_ERR_TRUNCATED ||
		    status == -PTS_ERR_INTERNAL)
			feed->done = 1;
		return status;
	}
	feed->done = 1;
	memset(ev, 0, sizeof(*ev));
	return ev->status = status;
}

size_t pts_chunker_next(void *chunker, size_t left)
{
	struct pts_chunker *c = chunker;
	size_t max = c->max ? c->max : 1;

	(void)left;
	if (pts_rng_below(&c->rng, 2) == 0 || max <= 16)
		return 1 + (size_t)pts_rng_below(&c->rng, max < 16 ? max : 16);
	return 1 + (size_t)pts_rng_below(&c->rng, max);
}
