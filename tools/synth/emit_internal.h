/* The emitter's state, shared by emit_packets.c (how packets are written)
 * and emit_state.c (which packets a step makes). */
#ifndef PTS_TOOLS_SYNTH_EMIT_INTERNAL_H
#define PTS_TOOLS_SYNTH_EMIT_INTERNAL_H

#include "synth.h"

#define SYN_RETSTACK 64 /* as libipt's; the SDM suggests 64 too */

struct syn_emitter {
	struct syn_options o;
	const struct pts_config *cfg;
	struct syn_sink *sink;
	struct syn_clock clk;
	uint64_t rng;

	/* The enables (SDM 36.2.5); BranchEn is always 1. */
	uint8_t trigger, filter, pe;
	uint8_t stopped;    /* TraceStop hit, TriggerEn 0 until a restart */
	uint8_t has_filter; /* some ADDRn_CFG = 1 */
	uint64_t cur;       /* where execution stands */
	struct syn_where where;

	struct pts_lastip lip;
	uint8_t mode_since_psb; /* a MODE.Exec went out since the last PSB */
	uint8_t in_psb_plus;    /* syn_psb_plus() is writing */
	uint64_t psb_mark;      /* sink total at the last PSB */

	/* TNT bits waiting for their packet, oldest highest. */
	uint64_t tnt_bits;
	uint8_t tnt_n, tnt_cap;
	uint8_t tnt_has_cyc;
	uint64_t tnt_cyc;

	/* Cycle-accurate mode. */
	uint64_t last_cyc;   /* clock cycles at the last CYC */
	uint64_t cyc_thresh; /* minimum cycles between CYCs */
	/* MTC: the next TSC at which CTC[N+7:N] changes, and its value. */
	uint64_t next_mtc_tsc;
	uint64_t mtc_period; /* CTC >> N now */
	/* The model time of the first timing packet since the driver last
	 * took it (syn_emit_take_mark()): a truth time mark. */
	uint8_t mark_pending;
	uint64_t mark_tsc, mark_cycles;

	/* The compression stack: return addresses of CALLs a decoder saw
	 * since the last PSB, OVF or disable (ring of SYN_RETSTACK). */
	uint64_t ret[SYN_RETSTACK];
	unsigned ret_top, ret_n;

	/* Overflow: armed (drop from the next packet) and dropping. */
	uint8_t ovf_armed, dropping;
	/* The next IP packet goes out uncompressed: an OVF came since the
	 * last one (libipt resets last-IP at OVF, the SDM keeps it). */
	uint8_t full_ip;

	struct syn_emit_stats st;
};

/* emit_state.c: SYN_VISIBLE when ContextEn holds for code in @w, else
 * why not (CPL, production enclave, CR3 filter). */
int syn_context_why(const struct syn_emitter *em, struct syn_where w);

/* emit_packets.c */
int syn_put(struct syn_emitter *em, const struct pts_packet *pkt);
int syn_tnt_add(struct syn_emitter *em, int bit);
int syn_tnt_flush(struct syn_emitter *em);
int syn_group(struct syn_emitter *em, int cyc_eligible);
int syn_ip(struct syn_emitter *em, int kind, uint64_t ip);
int syn_ip_full(struct syn_emitter *em, int kind, uint64_t ip);
int syn_ip_none(struct syn_emitter *em, int kind);
int syn_mode_exec(struct syn_emitter *em);
int syn_simple(struct syn_emitter *em, int kind);
int syn_psb_plus(struct syn_emitter *em);
int syn_time_packets(struct syn_emitter *em, int cbr);
int syn_mtc_catch_up(struct syn_emitter *em);
void syn_mtc_reset(struct syn_emitter *em);
void syn_ret_clear(struct syn_emitter *em);

#endif
