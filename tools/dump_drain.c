/* The decode loop of the packet-printing commands (see dump_drain.h). */
#include "dump_drain.h"

/* Packets per pts_pkt_next_batch() call. */
#define BATCH 256
/* Packets per pts_pkt_count_batch() call: nothing to buffer, so a view's
 * worth at a time. */
#define COUNT_BATCH (1 << 20)
/* A decoder that reports this many conditions in a row without consuming
 * input or giving a packet is stuck: stop rather than loop forever. */
#define STUCK_LIMIT 64

static void condition(struct dump_drain *dd, int err)
{
	uint64_t begin, end;

	pts_pkt_error_range(dd->dec, &begin, &end);
	if (err == -PTS_ERR_SKIPPED)
		dd->skipped += end - begin;
	else
		dd->errors++;
	pts_lastip_reset(&dd->lip);
	dd->on_condition(dd->ctx, err, begin, end);
}

int pts_dump_drain(struct dump_drain *dd, struct pts_input *in)
{
	struct pts_packet pkts[BATCH];

	for (;;) {
		/* Nobody to hand packets to: count them without storing
		 * them, the decoder's fastest path. */
		const int n = dd->on_packets
				      ? pts_pkt_next_batch(dd->dec, in, pkts, BATCH)
				      : pts_pkt_count_batch(dd->dec, in,
							    dd->counts, COUNT_BATCH);
		if (n > 0) {
			dd->stuck = 0;
			dd->packets += (uint64_t)n;
			if (!dd->on_packets)
				continue;
			for (int i = 0; i < n; i++)
				dd->counts[pkts[i].kind]++;
			dd->on_packets(dd->ctx, pkts, n);
			continue;
		}
		if (n == -PTS_ERR_AGAIN) {
			dd->stuck = 0;
			return n;
		}
		if (n == -PTS_ERR_EOS)
			return n;
		if (++dd->stuck > STUCK_LIMIT)
			return -PTS_ERR_NO_PROGRESS;
		condition(dd, n);
	}
}

int pts_dump_drain_end(struct dump_drain *dd)
{
	struct pts_input none = {NULL, 0, 0};

	pts_pkt_end(dd->dec);
	return pts_dump_drain(dd, &none);
}
