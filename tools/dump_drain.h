/* Draining a packet decoder for the commands that print packets (dump,
 * perf dump): packets and conditions (decode errors, skips) are counted and
 * handed to the caller's callbacks; a decoder that keeps reporting
 * conditions without consuming input is declared stuck. Internal to
 * tools/. */
#ifndef PTS_TOOLS_DUMP_DRAIN_H
#define PTS_TOOLS_DUMP_DRAIN_H

#include <ptscope/packets.h>

#include <stdint.h>

struct dump_drain {
	struct pts_pkt_decoder *dec; /* the caller's; not freed here */
	/* ptdump --lastip's own tracking: reset at every condition, since
	 * ptdump forgets its last-IP when it resyncs */
	struct pts_lastip lip;
	uint64_t packets;
	uint64_t counts[PTS_PKT_KIND_COUNT];
	uint64_t errors;
	uint64_t skipped; /* bytes */
	unsigned stuck;   /* conditions in a row without progress */
	/* Called with every batch of packets and every condition (with its
	 * byte range), after they are counted. @on_packets may be NULL: then
	 * packets are only counted (pts_pkt_count_batch(), faster). */
	void (*on_packets)(void *ctx, const struct pts_packet *pkts, int n);
	void (*on_condition)(void *ctx, int err, uint64_t begin, uint64_t end);
	void *ctx;
};

/* Decodes all that @in holds. Returns -PTS_ERR_AGAIN (more input wanted),
 * -PTS_ERR_EOS (done, after pts_pkt_end()) or -PTS_ERR_NO_PROGRESS (the
 * decoder is stuck). */
int pts_dump_drain(struct dump_drain *dd, struct pts_input *in);

/* Ends the stream (pts_pkt_end()) and decodes what is left; same returns
 * as pts_dump_drain(). */
int pts_dump_drain_end(struct dump_drain *dd);

#endif /* PTS_TOOLS_DUMP_DRAIN_H */
