/* The flow walker's state, shared by flow.c (walking) and flow_sync.c
 * (packet queue, PSB+, OVF, events that need no code). Not installed. */
#ifndef PTS_DECODER_FLOW_INTERNAL_H
#define PTS_DECODER_FLOW_INTERNAL_H

#include "internal.h"

/* Packets kept ahead of the walker (timing packets are not kept). A step
 * runs only with LOOKAHEAD packets queued or the trace ended, so that a
 * step never waits for input halfway. The queue is a linear array,
 * compacted and topped up in batches (pts_pkt_next_batch) when it runs
 * low. */
#define QUEUE_CAP 512
#define LOOKAHEAD 48
/* Records a step may emit at most; output is buffered in between. */
#define PEND_CAP 640
#define STEP_RECS 16
/* CBRs outside PSB+ waiting beside the queue (see pts_flow.cbr): as many
 * as the queue holds packets, so that they rarely limit a batch; a step
 * may report all of them at once. */
#define CBR_CAP QUEUE_CAP
_Static_assert(PEND_CAP >= 2 * STEP_RECS + CBR_CAP,
	       "a step's records and every CBR waiting fit behind the output");
/* Addresses one iteration of the walk delivers at most: one block (a
 * careful walk stopped short of a block's end by an event may add the one
 * instruction of an SKD022 VM entry: still no more than a block). */
#define STEP_IPS PTS_BLOCK_MAX_INSNS
#define RETSTACK_SIZE 64
/* Entries of the walker's direct-mapped IP -> block table (a power of
 * two): where no link knows the next block (indirect branch targets), it
 * saves the block cache's hash lookup. */
#define IPMAP_BITS 12
/* The same for the coverage walk's node ids (cov_fast.c): 4 bytes an
 * entry, so larger (indirect branch and SYSRET targets of a walk over all
 * of libc missed a 2^12 table about one time in four). */
#define FMAP_BITS 16
/* Default for pts_flow_config.idle_limit. */
#define IDLE_LIMIT (1u << 22)

/* A decode error of the packet layer, queued in stream order. */
#define PKT_ERROR PTS_PKT_KIND_COUNT

enum flow_state {
	ST_NOSYNC,   /* looking for a PSB */
	ST_PSB,      /* inside PSB+ */
	ST_DISABLED, /* in sync, PacketEn = 0 */
	ST_ENABLED,  /* walking code */
	ST_DONE      /* the trace ended */
};

struct pts_text_cache;

struct pts_flow {
	const struct pts_image *img;
	uint64_t img_gen;
	struct pts_insn_classifier *cls;
	struct pts_block_cache *cache;
	struct pts_pkt_decoder *pkt;
	struct pts_pkt_config pkt_config; /* for pts_flow_reset() */
	struct pts_errata errata;
	/* IP filter ranges (SKL014). */
	uint64_t filter_a[4], filter_b[4];
	unsigned nfilter;

	/* Whether the last PSB queued has not seen its PSBEND (or OVF) yet:
	 * a PSBEND outside PSB+ is dropped (libipt ignores it). */
	bool q_in_psb;
	/* Packet queue: q[qhead .. qhead + qlen). */
	struct pts_packet q[QUEUE_CAP];
	unsigned qhead, qlen;
	/* CBRs outside PSB+, oldest first, from cbr_head (a ring). A CBR is
	 * an event of its own (libipt's ptev_cbr), reported where libipt's
	 * query decoder reads it: once the walk took every packet before it
	 * with no TNT bit pending, or, inside the packets of one event (FUP
	 * and its TIP, OVF and its FUP, MODE.Exec and its TIP.PGE), before
	 * that event. They wait here, never in the queue, so the lookahead
	 * (a TIP behind a TNT, the packets an async FUP binds, errata scans)
	 * reads past them: a frequency change may come between any two
	 * packets. With CBR_CAP waiting the queue takes no more packets
	 * until the walk has reported some. */
	struct {
		uint64_t offset;
		uint8_t ratio;
	} cbr[CBR_CAP];
	unsigned cbr_head, cbr_len;
	bool ended;    /* pts_flow_end() called */
	bool pkt_eos;  /* the packet decoder has nothing more */

	/* Walker state. */
	enum flow_state st;
	/* ST_NOSYNC: the stream offset from which bytes are skipped up to
	 * the next PSB (a SKIP record then); no_skip: none are (the data
	 * ended inside a packet, which the error reports). */
	uint64_t nosync_from;
	bool no_skip;
	uint64_t ip, cr3;
	uint8_t mode;
	uint8_t nr;
	uint64_t tnt_bits; /* pending TNT results, oldest at bit tnt_count-1 */
	uint64_t tnt_offset; /* stream offset of the TNT packet they came from */
	unsigned tnt_count;
	uint64_t offset;   /* offset of the last packet consumed */
	uint64_t disabled_at; /* IP where tracing stopped, for "resumed" */
	bool have_disabled_at;
	uint64_t retstack[RETSTACK_SIZE];
	/* Per return address: the link that remembers its block, or NULL. */
	struct pts_block **retlink[RETSTACK_SIZE];
	unsigned rs_top, rs_len;
	/* Return addresses again, popped by every return, compressed or
	 * not: an uncompressed return's TIP target is usually the top one,
	 * whose link then finds its block without a table lookup (the
	 * return stack above is libipt's and only compressed returns pop
	 * it). A hint: stale entries just do not match. */
	uint64_t hint_ip[RETSTACK_SIZE];
	struct pts_block **hint_link[RETSTACK_SIZE];
	/* The pts_node_extra of the call that pushed it (the coverage walk's
	 * pushes, in one (space, mode): see fmap), else 0. */
	uint32_t hint_extra[RETSTACK_SIZE];
	unsigned hint_top;
	uint64_t idle;     /* blocks since the last packet was consumed */
	uint32_t idle_limit;

	/* PSB+ being read. */
	bool psb_was_enabled, psb_have_fup;
	/* A MODE.Exec seen in it, and one that disagreed with an earlier
	 * one. */
	bool psb_have_mode, psb_mode_conflict;
	uint64_t psb_ip;
	/* After a PSB+ met while walking: its FUP is the IP where decoding
	 * goes on (SDM 36.3.7), the packets after it are for the
	 * instructions from there on. The walk must get to psb_ip before it
	 * takes another packet. */
	bool psb_stop;

	/* Output: straight into the caller's array during pts_flow_next(),
	 * what does not fit waits in @pend. */
	struct pts_flow_rec *out;
	int out_n, out_max;
	struct pts_flow_rec pend[PEND_CAP];
	unsigned pend_head, pend_len;
	/* During pts_flow_next_ips(): the caller's flat address array, which
	 * the INSNS records put into f->out copy their addresses into (NULL:
	 * they point into the cache), the addresses in it, and the most it
	 * may hold when the walk takes another block: its size less one
	 * iteration (STEP_IPS) and the copy's overrun; SIZE_MAX without an
	 * array. */
	uint64_t *flat;
	size_t flat_n, flat_walk_max;
	/* The link of the block walked last (or of the call that pushed the
	 * return address) that may know the block at @ip: saves a hash
	 * lookup. NULL after a cache flush. */
	struct pts_block **link;
	bool cache_full;
	/* Blocks by IP, a hint as the links are; emptied with the cache. */
	struct pts_block *ipmap[1u << IPMAP_BITS];

	/* The coverage sink the walk goes to instead of records, during
	 * pts_cov_decode() (NULL otherwise). */
	struct pts_cov *cov;

	struct pts_flow_stats stats;

	/* The coverage walk (cov_fast.c): the block it stopped at, which
	 * f->link then points to; indirect targets by IP (node ids), valid
	 * for one (space, mode) and one fill of the block cache. */
	struct pts_block *fast_next;
	uint32_t *fmap; /* 2^FMAP_BITS, made by the walk's first call */
	uint64_t fmap_cr3;
	uint8_t fmap_mode;
	bool fmap_valid;

	/* pts_flow_disasm()'s texts, made by its first call. */
	struct pts_text_cache *texts;
};

/* Queue access: the @i-th packet ahead (NULL when not there). */
static inline const struct pts_packet *pts_flow_peek(const struct pts_flow *f,
						     unsigned i)
{
	return i < f->qlen ? &f->q[f->qhead + i] : NULL;
}

/* How many packets after the OVF at the head a CBR among them is read
 * with: 1 when a FUP with an IP follows it (the overflow resolves there,
 * and libipt reports the CBRs before that FUP first), else 0 (libipt
 * reports the overflow at the OVF, then the CBRs after it). */
static inline unsigned pts_flow_ovf_group(const struct pts_flow *f)
{
	const struct pts_packet *next = pts_flow_peek(f, 1);
	return next && next->kind == PTS_PKT_FUP &&
	       next->ipc != PTS_IPC_SUPPRESSED;
}

/* The head packet; the queue must not be empty. */
static inline const struct pts_packet *pts_flow_head(const struct pts_flow *f)
{
	return &f->q[f->qhead];
}

/* Consumes the head packet (the queue must not be empty); returns it,
 * valid until the next refill. */
static inline const struct pts_packet *pts_flow_pop(struct pts_flow *f)
{
	const struct pts_packet *p = &f->q[f->qhead++];
	f->qlen--;
	f->offset = p->offset;
	f->idle = 0;
	return p;
}

/* The slot of @ip in a direct-mapped table of 2^@bits entries keyed by IP
 * (the walker's ipmap, the coverage walk's fmap): a multiplicative hash. */
static inline size_t pts_flow_ip_slot(uint64_t ip, unsigned bits)
{
	return (size_t)((ip * UINT64_C(0x9e3779b97f4a7c15)) >> (64 - bits));
}

/* Return stack, hint stack and TNT bits: used by the walk (flow.c) and the
 * coverage walk (cov_fast.c). */

/* Pushes return address @ip; @link (may be NULL) is the link that will
 * remember the block there (the calling block's fall-through), @extra the
 * call's pts_node_extra for the coverage walk (0: none). */
static inline void pts_flow_push_ret(struct pts_flow *f, uint64_t ip,
				     struct pts_block **link, uint32_t extra)
{
	f->rs_top = (f->rs_top + 1) % RETSTACK_SIZE;
	f->retstack[f->rs_top] = ip;
	f->retlink[f->rs_top] = link;
	f->hint_top = (f->hint_top + 1) % RETSTACK_SIZE;
	f->hint_ip[f->hint_top] = ip;
	f->hint_link[f->hint_top] = link;
	f->hint_extra[f->hint_top] = extra;
	if (f->rs_len < RETSTACK_SIZE)
		f->rs_len++; /* else the oldest entry is overwritten */
}

/* Pops the return stack (which must not be empty): the address, cut to
 * 32 bits in 32-bit code; *@link (unless NULL) gets the link pushed
 * with it. */
static inline uint64_t pts_flow_pop_ret(struct pts_flow *f,
					struct pts_block ***link)
{
	uint64_t ip = f->retstack[f->rs_top];
	if (link)
		*link = f->retlink[f->rs_top];
	f->rs_top = (f->rs_top + RETSTACK_SIZE - 1) % RETSTACK_SIZE;
	f->rs_len--;
	return f->mode == PTS_EXEC_32 ? ip & 0xffffffff : ip;
}

static inline void pts_flow_load_tnt(struct pts_flow *f)
{
	const struct pts_packet *p = pts_flow_pop(f);
	f->tnt_bits = p->u.tnt.bits;
	f->tnt_count = p->u.tnt.count;
	f->tnt_offset = p->offset;
}

/* The return addresses of the calls @b follows, in order. */
static inline void pts_flow_push_calls(struct pts_flow *f,
				       struct pts_block *b)
{
	for (unsigned k = 0; k < b->nsegs; k++) {
		uint32_t e = b->segs[k] & PTS_SEG_INDEX;
		if (b->segs[k] & PTS_SEG_PUSH)
			pts_flow_push_ret(f, b->ips[e] + b->sizes[e],
					  &b->seglink[k], 0);
	}
}

static inline int pts_flow_take_tnt(struct pts_flow *f)
{
	f->tnt_count--;
	return (int)((f->tnt_bits >> f->tnt_count) & 1);
}

/* Pops the hint stack (any return); returns the index popped. */
static inline unsigned pts_flow_pop_hint(struct pts_flow *f)
{
	unsigned t = f->hint_top;
	f->hint_top = (t + RETSTACK_SIZE - 1) % RETSTACK_SIZE;
	return t;
}

/* The block at f->ip when no link knows it: from the IP table or the
 * cache, then remembered in @link (may be NULL). 0 or a negative error. */
int pts_flow_lookup_block(struct pts_flow *f, struct pts_block **link,
			  struct pts_block **out);

/* Appends a record to the pending output. */
struct pts_flow_rec *pts_flow_emit(struct pts_flow *f, int kind);
/* Emits an event record of @type at @ip. */
struct pts_flow_rec *pts_flow_event(struct pts_flow *f, int type, uint64_t ip,
				    uint64_t offset);
/* Emits an error at @ip (offset: the head packet's, else the last one) and
 * drops to ST_NOSYNC: decoding resumes at the next PSB. */
void pts_flow_error(struct pts_flow *f, int err, uint64_t ip);
/* The same, for an error a TNT bit revealed: reported at the offset of the
 * TNT packet the bit came from, not at the packet that follows it. */
void pts_flow_error_tnt(struct pts_flow *f, int err, uint64_t ip);

/* Drops to ST_NOSYNC: what comes up to the next PSB is skipped. */
void pts_flow_lose_sync(struct pts_flow *f);
/* One step in the states that do not walk code. */
void pts_flow_step_nosync(struct pts_flow *f);
void pts_flow_step_psb(struct pts_flow *f);
void pts_flow_step_disabled(struct pts_flow *f);
/* Handles the OVF at the head of the queue. */
void pts_flow_overflow(struct pts_flow *f);
/* Handles a packet that needs no code (power, stop, CFE/EVD, BEP, ...) at
 * the head. Returns true when it did. */
bool pts_flow_codeless(struct pts_flow *f);
/* Ends the trace at f->ip: the end event, ST_DONE. */
void pts_flow_end_here(struct pts_flow *f);
/* After a packet was consumed, while enabled: libipt reports the end of
 * the trace as soon as no TNT bit is pending and no packet is left, before
 * walking on. Returns true when it ended the trace here. Inline: the walker
 * asks after every block. */
static inline bool pts_flow_at_end(struct pts_flow *f)
{
	if (f->qlen || f->tnt_count || !f->pkt_eos || f->st != ST_ENABLED)
		return false;
	pts_flow_end_here(f);
	return true;
}
/* Reports (@report) or drops the CBRs before the packet @ahead in the
 * queue (0: the head), all of them when there is none. Returns how many. */
unsigned pts_flow_cbrs(struct pts_flow *f, bool report, unsigned ahead);
/* Reports the CBRs before the packet @ahead. Returns whether the step
 * should end there: it reported some while the queue is short (with
 * CBR_CAP waiting the queue took no more packets; the next refill tops
 * it up before the walk looks ahead again). */
static inline bool pts_flow_cbr_stop(struct pts_flow *f, unsigned ahead)
{
	return f->cbr_len && pts_flow_cbrs(f, true, ahead) &&
	       f->qlen < LOOKAHEAD && !f->pkt_eos;
}
/* Enters PSB+ at the PSB at the head. */
void pts_flow_enter_psb(struct pts_flow *f);
/* Applies a MODE.Exec packet: the mode, and an event. */
void pts_flow_exec_mode(struct pts_flow *f, const struct pts_packet *p,
			uint64_t ip, uint8_t flags);
/* Reports a MODE.TSX packet: an event. */
void pts_flow_tsx(struct pts_flow *f, const struct pts_packet *p, uint64_t ip,
		  uint8_t flags);
/* Applies a PIP packet: the address space, and an event. */
void pts_flow_paging(struct pts_flow *f, const struct pts_packet *p,
		     uint64_t ip, uint8_t flags);

#endif
