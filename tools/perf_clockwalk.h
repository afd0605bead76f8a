/* perf's sample time along one AUXTRACE queue (internal to tools/): a
 * packet decoder of its own walks the queue's buffers and feeds the timing
 * packets to perf's clock (pts_perf_clock).
 *
 * Two ways to use a walk, not to be mixed: pts_clockwalk_at() gives the
 * time just before the first flow packet after an offset (enough to know
 * which thread runs: tools/perf_procs.c); pts_clockwalk_run() and friends
 * replay the decoder states of perf 6.1 run by run to give every
 * instruction the time `perf script --itrace=i0ns` prints (perf_flow.c). */
#ifndef PTS_TOOLS_PERF_CLOCKWALK_H
#define PTS_TOOLS_PERF_CLOCKWALK_H

#include "perf_cmd.h"

/* What the last instruction of a run needs from the trace, as perf's
 * decoder sees it (pts_clockwalk_run). */
enum clockwalk_need {
	CW_NONE = 0, /* no packet: plain instruction, direct jump or call */
	CW_BIT,      /* conditional branch: a TNT bit */
	CW_RET,      /* near RET: a TNT bit when one is pending, else a TIP */
	CW_TIP       /* indirect or far branch: a TIP (deferred behind TNT
			bits, or TIP.PGD) */
};

/* perf 6.1's sample time (intel-pt-decoder.c, intel-pt.c) for
 * `--itrace=i0ns`: perf decodes with an instruction period of 1, so every
 * instruction is one decoder state, and a state's time is the decoder's
 * "sample timestamp", which is only brought up to the current timestamp
 * when the state leaves the decoder in sync or inside a TNT packet whose
 * first bit was used (not while it walks towards the branch that uses a
 * freshly fetched TNT, TIP or FUP, nor towards the IP of a PSB+ FUP).
 * perf fetches packets lazily: once in sync it reads up to the next
 * TNT/TIP/FUP before walking on, so timing packets in between count only
 * from the instruction that uses that packet. States on the way (TIP.PGE,
 * a changed CBR, every PSB+, the TIP after an async FUP, OVF and other
 * errors) also bring the sample time up. TIP.PGE and errors set perf's
 * queue time to an estimate: 2 TSC ticks per instruction since the last
 * TSC/MTC, scaled by max-non-turbo / CBR; otherwise the queue time only
 * moves forward. With CYCs, the clock moves between MTCs as perf's does
 * (pts_perf_clock), CYCs in a PSB+ read while in sync not counted, and the
 * ticks per cycle measured by looking ahead from an MTC right after a CYC
 * (within its buffer, as perf does). */
#define CW_LOOKAHEAD 64

struct perf_sampler {
	uint64_t sample;   /* perf's sample_timestamp */
	uint64_t insn_cnt; /* instructions since the last TSC/MTC */
	uint64_t psb_ip;   /* psb_wait: the FUP IP of the PSB+ ahead */
	uint64_t psb_fup_ip; /* the FUP in the PSB+ being read (0: none) */
	uint64_t resync_ip; /* resync: where the flow goes on */
	uint64_t skip_to;   /* packets before: timing only (skipped) */
	uint64_t fetch_to;  /* packets from here on wait (0: none) */
	struct pts_packet cur; /* the fetched flow packet instructions use */
	/* Packets read ahead (perf looks into PSB+ for its FUP). */
	struct pts_packet la[CW_LOOKAHEAD];
	uint32_t la_head, la_len;
	uint32_t tnt_left;
	uint8_t have_cur, tnt_used, need_fetch;
	uint8_t nopsb, synced, in_psb, psb_wait, pge, resync;
	uint8_t cbr_seen; /* the clock's CBR at the last state */
};

/* perf's times for one run (pts_clockwalk_run): instruction i of @n gets
 * @last when i == n - 1, else @head when i < @split, else @body. */
struct clockwalk_times {
	uint64_t head, body, last;
	uint32_t split;
};

struct clock_walk {
	struct perf_cmd *pc;
	uint32_t qi, j, nr_buffers;
	uint64_t soff; /* stream offset of buffer j */
	uint64_t buf_start; /* stream offset of buffer j - 1, being read */
	struct pts_pkt_decoder *dec;
	struct pts_input in;
	struct pts_perf_clock clock;
	struct pts_packet pending; /* the flow packet we stopped at */
	int have_pending, ended;
	uint64_t stamp; /* perf keeps a queue's sample time monotonic */
	/* Called with every packet decoded, in stream order, once the
	 * clock has taken it (NULL: none). */
	void (*on_packet)(void *ctx, const struct clock_walk *c,
			  const struct pts_packet *pkt);
	void *ctx;
	struct perf_sampler smp; /* pts_clockwalk_run() and _event() */
};

/* Starts a walk of queue @qi. Returns 0 or -PTS_ERR_NOMEM. */
int pts_clockwalk_init(struct clock_walk *c, struct perf_cmd *pc, uint32_t qi);
void pts_clockwalk_fini(struct clock_walk *c);

/* perf's TSC value for instructions the flow tagged with offset @off:
 * walks on to the first flow packet after @off (left in @c->pending,
 * @c->have_pending 0 at the end of the queue). Never goes backwards. */
uint64_t pts_clockwalk_at(struct clock_walk *c, uint64_t off);

/* The other way to use a walk (not mixed with pts_clockwalk_at): perf's
 * times for a run of @n instructions @ips in flow order whose last one
 * needs @need (TSC units, perf's per-queue time: never goes backwards). A
 * PSB+ with a FUP splits a run: perf walks to the FUP's IP before it reads
 * the PSB+ (timing packets in it count from that instruction on). */
void pts_clockwalk_run(struct clock_walk *c, const uint64_t *ips,
		       uint32_t n, int need, struct clockwalk_times *t);
/* An event of the flow in between runs: @async_done when the flow reached
 * the IP of an asynchronous FUP (async branch or disable), whose TIP or
 * TIP.PGD perf then reads. Returns the time of the event. */
uint64_t pts_clockwalk_event(struct clock_walk *c, int async_done);
/* An error of the flow at stream offset @off, which goes on at the next
 * run: perf fails too and syncs again at the next IP packet, and at the
 * next, ... until one takes it where the flow goes on (each failure an
 * error state of its own). Returns the time of the error. */
uint64_t pts_clockwalk_error(struct clock_walk *c, uint64_t off);
/* The flow skipped the bytes up to stream offset @end (to a PSB, after an
 * error or lost sync): it goes on at a packet from @end on. perf, failing
 * at every IP in between, cannot sync there either; only the timing
 * packets in between move its clock. */
void pts_clockwalk_skip(struct clock_walk *c, uint64_t end);

#endif
