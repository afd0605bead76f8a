/* The windows model's fast path: runs of packets that cannot change
 * PacketEn, applied without going through the per-packet state machine.
 *
 * Most of a trace is TNT, compressed TIPs, CYC, MTC and PAD while tracing
 * is on; none of them can open or close a window (enable_state.c). A table
 * per packet kind says what each one does here; the loop reads it once per
 * packet, does its work without a branch per kind (random packet kinds make
 * a switch mispredict most of the time) and stops at the first packet the
 * table calls slow, which enable_state.c then handles. Fields that only the
 * slow path reads (has_fup, pip_fresh, after_ovf_fup) are settled once per
 * run, not per packet.
 *
 * The fast path must give exactly what the full model gives:
 * tests/unit/test_windows_fast.c runs both over random streams.
 */
#include "windows_internal.h"

#include <string.h>

/* What a packet kind does in a run (packed into struct pts_win_model.fast). */
enum {
	FK_TNT = 1 << 0,   /* adds its bits to the window */
	FK_TIP = 1 << 1,   /* counts as a TIP, moves the last IP */
	FK_TIME = 1 << 2,  /* a timing packet: the clock moves */
	FK_EVENT = 1 << 3, /* not neutral: clears after_ovf_fup */
	FK_FLOW = 1 << 4,  /* and not FUP or MODE.Exec: clears pip_fresh */
	FK_SLOW = 1 << 7   /* ends the run: enable_state.c takes it */
};

/* Kinds that are fast in any state (outside PSB+): timing that only moves
 * the clock, and packets that say nothing about PacketEn. CBR is fast only
 * while on: it counts frequency changes inside gaps. */
static const uint8_t neutral_kinds[] = {PTS_PKT_PAD, PTS_PKT_MTC,
					PTS_PKT_CYC, PTS_PKT_TSC,
					PTS_PKT_TMA, PTS_PKT_MNT,
					PTS_PKT_VMCS};

/* The loop adds a kind's packed entry to one accumulator: 16-bit lanes
 * count TIPs, events and flow packets of a block (at most FAST_BLOCK), bit
 * 48 is the timing flag and bit 63 the slow one. */
#define LANE_TIP 0
#define LANE_EVENT 16
#define LANE_FLOW 32
#define LANE_TIME 48
#define LANE_MASK 0xffffull
#define PACKED_SLOW (1ull << 63)

/* The kinds whose effect in a run struct pts_skim sums up: TNT packets and
 * their bits, TIPs and the last IP, PAD. */
static int summed_kind(int kind)
{
	return kind == PTS_PKT_TNT8 || kind == PTS_PKT_TNT64 ||
	       kind == PTS_PKT_TIP || kind == PTS_PKT_PAD;
}

/* Skim actions by a table's flags: slow kinds stop the batch, the summed
 * ones are skipped when fast, the timing ones go to the clock as they
 * come (nothing fast reads it), the other fast ones are kept. */
static void skim_actions(uint8_t *out, const uint8_t *flags)
{
	for (int k = 0; k < PTS_PKT_KIND_COUNT; k++)
		out[k] = (flags[k] & FK_SLOW) ? PTS_SKIM_STOP
			 : summed_kind(k)     ? PTS_SKIM_SKIP
			 : (flags[k] & FK_TIME) ? PTS_SKIM_CALL
						: PTS_SKIM_KEEP;
}

static void pack(struct pts_win_fast_kind *out, const uint8_t *flags)
{
	for (int k = 0; k < 256; k++) {
		const unsigned f = flags[k];

		out[k].acc = (f & FK_SLOW) ? PACKED_SLOW
			   : (uint64_t)((f / FK_TIP) & 1) << LANE_TIP |
				     (uint64_t)((f / FK_EVENT) & 1) << LANE_EVENT |
				     (uint64_t)((f / FK_FLOW) & 1) << LANE_FLOW |
				     (uint64_t)((f / FK_TIME) & 1) << LANE_TIME;
		out[k].tnt_mask = (f & FK_TNT) ? ~0ull : 0;
	}
}

void pts_win_fast_init(struct pts_win_model *m)
{
	const uint8_t flow = FK_EVENT | FK_FLOW;
	uint8_t fast_on[256], fast_off[256], fast_gap[256];

	memset(fast_off, FK_SLOW, sizeof(fast_off));
	for (size_t i = 0; i < sizeof(neutral_kinds); i++)
		fast_off[neutral_kinds[i]] = 0;
	fast_off[PTS_PKT_MTC] = fast_off[PTS_PKT_CYC] = FK_TIME;
	fast_off[PTS_PKT_TSC] = fast_off[PTS_PKT_TMA] = FK_TIME;

	/* While on: branches and CBR; MODE.Exec only matters while off. */
	memcpy(fast_on, fast_off, sizeof(fast_on));
	fast_on[PTS_PKT_CBR] = FK_TIME;
	fast_on[PTS_PKT_TNT8] = fast_on[PTS_PKT_TNT64] = FK_TNT | flow;
	fast_on[PTS_PKT_MODE_TSX] = fast_on[PTS_PKT_PTW] = flow;
	fast_on[PTS_PKT_MODE_EXEC] = FK_EVENT;

	/* In a gap whose first flow packet is noted already, more flow
	 * packets change nothing until the gap closes. */
	memcpy(fast_gap, fast_off, sizeof(fast_gap));
	fast_gap[PTS_PKT_TNT8] = fast_gap[PTS_PKT_TNT64] = flow;
	fast_gap[PTS_PKT_MODE_TSX] = fast_gap[PTS_PKT_PTW] = flow;

	/* An IP must be checked against production enclaves (the leak rule),
	 * and a FUP + TIP pair may cross a debug enclave's edge. */
	if (!m->has_production && !m->has_debug) {
		fast_on[PTS_PKT_TIP] = FK_TIP | flow;
		fast_gap[PTS_PKT_TIP] = flow;
		fast_gap[PTS_PKT_FUP] = FK_EVENT;
	}
	pack(m->fast[FAST_ON], fast_on);
	pack(m->fast[FAST_OFF], fast_off);
	pack(m->fast[FAST_GAP], fast_gap);
	skim_actions(m->skim[FAST_ON], fast_on);
	skim_actions(m->skim[FAST_OFF], fast_off);
	skim_actions(m->skim[FAST_GAP], fast_gap);
}

/* Which table applies now, or NULL when every packet must take the slow
 * path: inside PSB+ (its packets are read as a group), before the first
 * packet, while a held time is in force, and while the start of the trace
 * waits for its first timestamp. Flow packets are only fast when no
 * decision waits for the next one (the pend_* flags; never set while on,
 * but the tables must not depend on that) and, in a gap, once its first
 * flow packet is noted and the state is known to be off (after the start
 * or lost bytes a flow packet means on: enable_state.c). */
static const struct pts_win_fast_kind *fast_table(const struct pts_win_model *m)
{
	const struct pts_win_gap *g = &m->gap;
	int pend = m->pend_psb || m->pend_mode || m->pend_ovf;

	if (m->in_psb || !m->started || m->hold || m->no_fast)
		return NULL;
	if (m->state == PTS_ST_ON)
		return m->fast[pend ? FAST_OFF : FAST_ON];
	if (g->begin.edge == PTS_EDGE_START && !g->begin.has_time)
		return NULL;
	if (!pend && g->has_flow && g->begin.edge != PTS_EDGE_START &&
	    g->begin.edge != PTS_EDGE_SKIP)
		return m->fast[FAST_GAP];
	return m->fast[FAST_OFF];
}

/* Packets applied between two looks at the timing packets among them. */
#define FAST_BLOCK 64

/* The last IP a TIP of @pkts[0, n] gives, if any (@n: the last TIP of the
 * run): looked for once per run rather than kept up to date at each
 * packet. Only TIPs with their IP suppressed make it look further back. */
static void last_tip_ip(struct pts_win_model *m,
			const struct pts_win_fast_kind *tab,
			const struct pts_packet *pkts, int n)
{
	for (int i = n; i >= 0; i--)
		if (((tab[pkts[i].kind].acc >> LANE_TIP) & LANE_MASK) &&
		    pkts[i].ipc != PTS_IPC_SUPPRESSED) {
			m->has_ip = 1;
			m->last_ip = pkts[i].u.ip.ip;
			return;
		}
}

/* Applies packets of @pkts[0, n) up to the first slow one. Returns how
 * many were applied. Per packet the loop only loads, adds and masks (the
 * kinds come in no order: a branch on them would mispredict). The timing
 * packets of each block are noted as it is read and applied to the clock
 * after it, in order: nothing in a run reads the clock. */
static int fast_run(struct pts_win_model *m, const struct pts_packet *pkts,
		    int n)
{
	const struct pts_win_fast_kind *tab = fast_table(m);
	uint64_t tnt_bits = 0, tips = 0, events = 0, flows = 0;
	int i = 0, slow = 0, last_tip = 0;

	if (!tab)
		return 0;
	while (i < n && !slow) {
		const int start = i;
		const int end = n - i < FAST_BLOCK ? n : i + FAST_BLOCK;
		uint64_t acc = 0, timed = 0;

		for (; i < end; i++) {
			const struct pts_win_fast_kind *k = &tab[pkts[i].kind];

			if (k->acc & PACKED_SLOW) {
				slow = 1;
				break;
			}
			/* A bit per timing packet, not a list: a store at a
			 * moving index would stall the loads after it. */
			timed |= ((k->acc >> LANE_TIME) & 1) << (i - start);
			acc += k->acc;
			tnt_bits += pkts[i].u.tnt.count & k->tnt_mask;
			last_tip = (k->acc >> LANE_TIP) & 1 ? i : last_tip;
		}
		pts_time_packets(&m->time, pkts + start, timed);
		tips += (acc >> LANE_TIP) & LANE_MASK;
		events |= (acc >> LANE_EVENT) & LANE_MASK;
		flows |= (acc >> LANE_FLOW) & LANE_MASK;
	}
	if (m->state == PTS_ST_ON) {
		m->win.packets += (uint64_t)i;
		m->win.tnt_bits += tnt_bits;
		m->win.tips += tips;
	}
	if (tips) {
		m->has_fup = 0;
		last_tip_ip(m, tab, pkts, last_tip);
	}
	if (events)
		m->after_ovf_fup = 0;
	if (flows)
		m->pip_fresh = 0;
	return i;
}

int pts_win_feed(struct pts_win_model *m, const struct pts_packet *pkt)
{
	if (!m || !pkt || m->ended)
		return -PTS_ERR_INVALID;
	if (fast_run(m, pkt, 1))
		return (int)m->q_len;
	return pts_win_feed_slow(m, pkt);
}

int pts_win_feed_batch(struct pts_win_model *m, const struct pts_packet *pkts,
		       int n)
{
	if (!m || !pkts || n < 0 || m->ended)
		return -PTS_ERR_INVALID;
	for (int i = 0; i < n;) {
		int ret;

		i += fast_run(m, pkts + i, n - i);
		if (i == n)
			break;
		ret = pts_win_feed_slow(m, &pkts[i++]);
		if (ret < 0)
			return ret;
		if (ret > 0)
			return i;
	}
	return n;
}

/* pts_pkt_skim_batch() hands the timing packets here. */
static void clock_packets(void *model, const struct pts_packet *pkts, int n)
{
	struct pts_win_model *m = model;

	pts_time_packets(&m->time, pkts, n < 64 ? (1ull << n) - 1 : ~0ull);
	if (m->state == PTS_ST_ON)
		m->win.packets += (uint64_t)n;
}

/* The same for the blocks it crosses 64 bytes at a time. */
static void clock_items(void *model, const struct pts_skim_timing *items)
{
	struct pts_win_model *m = model;

	pts_time_items(&m->time, items);
	if (m->state == PTS_ST_ON)
		m->win.packets += (uint64_t)items->n;
}

const uint8_t *pts_win_skim_actions(struct pts_win_model *m,
				    struct pts_skim_call *call)
{
	const struct pts_win_fast_kind *tab = m ? fast_table(m) : NULL;

	if (!tab || m->ended || !call)
		return NULL;
	call->fn = clock_packets;
	call->timing = clock_items;
	call->ctx = m;
	return m->skim[(tab - m->fast[0]) / 256];
}

/* fast_run() for packets known by their sum: the same lanes of the same
 * table, for TNTs, TIPs and PADs in any order (PADs do nothing). */
int pts_win_feed_skipped(struct pts_win_model *m, const struct pts_skim *sum)
{
	const struct pts_win_fast_kind *tab;
	uint64_t tnt, tip;

	if (!m || !sum || m->ended)
		return -PTS_ERR_INVALID;
	if (!sum->packets)
		return 0;
	tab = fast_table(m);
	if (!tab)
		return -PTS_ERR_INVALID;
	tnt = sum->tnt_packets ? tab[PTS_PKT_TNT8].acc : 0;
	tip = sum->tips ? tab[PTS_PKT_TIP].acc : 0;
	if ((tnt | tip) & PACKED_SLOW)
		return -PTS_ERR_INVALID;
	if (m->state == PTS_ST_ON) {
		m->win.packets += sum->packets;
		m->win.tnt_bits += sum->tnt_bits & tab[PTS_PKT_TNT8].tnt_mask;
		m->win.tips += ((tip >> LANE_TIP) & 1) * sum->tips;
	}
	if ((tip >> LANE_TIP) & 1) {
		m->has_fup = 0;
		if (sum->has_ip) {
			m->has_ip = 1;
			m->last_ip = sum->last_ip;
		}
	}
	if (((tnt | tip) >> LANE_EVENT) & 1)
		m->after_ovf_fup = 0;
	if (((tnt | tip) >> LANE_FLOW) & 1)
		m->pip_fresh = 0;
	return 0;
}

void pts_win_set_fast(struct pts_win_model *m, int on)
{
	m->no_fast = (uint8_t)!on;
}
