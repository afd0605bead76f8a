/* Internals of the windows model (model/enable_*.c, windows_*.c,
 * enclave_*.c, verify_*.c). Not installed. */
#ifndef PTS_MODEL_WINDOWS_INTERNAL_H
#define PTS_MODEL_WINDOWS_INTERNAL_H

#include <ptscope/windows.h>

#include "time_track.h"

#include <stdint.h>
#include <string.h>

#define PTS_ENCLU_SIZE 3        /* 0F 01 D7 */
#define PTS_WIN_ENTRY_SITES 16  /* EENTER sites remembered */
#define PTS_WIN_QUEUE 16        /* records queued between drains */

/* PacketEn as the model knows it. */
enum pts_win_state { PTS_ST_OFF = 0, PTS_ST_ON = 1 };

/* One packet kind in the fast path's tables (windows_fast.c). */
struct pts_win_fast_kind {
	uint64_t acc;      /* added per packet: counts in lanes, flags */
	uint64_t tnt_mask; /* ~0 for TNT: the bits it adds */
};
enum { FAST_ON, FAST_OFF, FAST_GAP, FAST_TABLES };

/* The window being built (PacketEn = 1). */
struct pts_win_open {
	struct pts_win_point begin;
	uint64_t packets, tnt_bits, tips;
};

/* The gap being built (PacketEn = 0) and what was seen inside it. */
struct pts_win_gap {
	struct pts_win_point begin;
	uint8_t lost_cause;  /* PTS_GAP_* when opened by lost bytes, else 0xff */
	uint8_t has_fup;     /* opened by FUP(x) + TIP.PGD */
	uint8_t has_pgd_ip;  /* the TIP.PGD carried an IP */
	uint8_t stop;        /* TraceStop seen */
	uint8_t flow_kind;   /* first flow packet inside (has_flow) */
	uint8_t has_flow;
	uint8_t has_pip;     /* PIP next to the disable or inside */
	uint8_t has_ev;      /* evidence from the flow decoder: the */
	uint8_t ev_class;    /* disabling instruction (enum pts_ev_insn) */
	uint8_t has_en_ev;   /* and the one where tracing resumed */
	uint8_t en_class;
	uint8_t last_cbr;
	uint64_t fup_ip, pgd_ip, pip_cr3, flow_offset;
	uint32_t psbs, ovfs, cbrs;
};

struct pts_win_model {
	struct pts_trace_config cfg;
	const struct pts_enclave *enclaves;
	size_t n_enclaves;
	uint8_t has_production; /* the map has a production enclave */
	struct pts_time time;

	uint8_t state;   /* enum pts_win_state */
	uint8_t started; /* a packet was seen */
	uint8_t ended;
	struct pts_win_open win;
	struct pts_win_gap gap;

	/* PSB+ being read. */
	uint8_t in_psb, psb_fup, psb_mode, psb_fup_timed;
	uint64_t psb_offset, psb_fup_ip, psb_fup_offset, psb_fup_tsc;
	/* Points made while set take this time instead of the current one
	 * (a decision taken later about an earlier packet). */
	uint8_t hold, held_has_time;
	uint64_t held_tsc;
	/* Decisions that wait for the next flow packet. */
	uint8_t pend_psb;  /* PSB+ had a FUP while off: BDM70 or re-enable */
	uint8_t pend_ovf;  /* OVF: a FUP next means enabled at its IP */
	uint8_t pend_mode; /* MODE.Exec while off: fine before TIP.PGE */
	uint8_t after_ovf_fup; /* the last packet was an OVF's FUP (APL12) */
	uint64_t pend_mode_offset;
	/* FUP waiting for its TIP/TIP.PGD (compound, SDM Table 36-15). */
	uint8_t has_fup;
	uint64_t fup_ip, fup_offset;
	/* Last IP seen while on, the last PIP's CR3 (the last CBR ratio is
	 * the clock's: time.last_cbr). */
	uint8_t has_ip;
	uint8_t pip_fresh; /* the last PIP is the last flow packet (but FUP,
			      MODE.Exec) */
	uint64_t last_ip, last_cr3;

	uint64_t entry_sites[PTS_WIN_ENTRY_SITES];
	unsigned n_entry_sites;
	/* AEPs learned from the code (an enclave gap closed at an ENCLU). */
	uint64_t aep_sites[PTS_WIN_ENTRY_SITES];
	unsigned n_aep_sites;
	/* The last gap ended with an AEX at aex_ip: the event that caused it
	 * is delivered at the AEP next (digest 4.3). */
	uint8_t after_aex;
	uint64_t aex_ip;
	uint8_t has_debug; /* the map has a debug enclave */

	struct pts_win_record queue[PTS_WIN_QUEUE];
	unsigned q_head, q_len;
	uint8_t overrun; /* a record was dropped: the caller did not drain */
	struct pts_win_record scratch; /* where a dropped record goes */

	struct pts_win_summary sum;

	/* windows_fast.c: what each packet kind does in a fast run while on,
	 * while off, and in a gap that has seen flow (indexed by the kind). */
	struct pts_win_fast_kind fast[FAST_TABLES][256];
	/* the same as pts_pkt_skim_batch() actions (pts_win_skim_actions()) */
	uint8_t skim[FAST_TABLES][PTS_PKT_KIND_COUNT];
	uint8_t no_fast; /* tests: every packet through the full model */
	uint8_t no_verify; /* pts_win_set_verify(m, 0) */
};

/* Clears the struct at @p (at most 256 bytes). memset of a struct of a few
 * hundred bytes becomes `rep stos` under GCC's generic x86 tuning, whose
 * start-up costs more than the stores themselves; a copy from a zero block
 * stays plain vector stores. Records and gaps are cleared several times
 * per enclave call. */
extern const unsigned char pts_win_zeros[256];
#define PTS_WIN_ZERO(p)                                                        \
	do {                                                                   \
		_Static_assert(sizeof(*(p)) <= sizeof(pts_win_zeros),          \
			       "pts_win_zeros is too small");                  \
		memcpy((p), pts_win_zeros, sizeof(*(p)));                      \
	} while (0)

/* enable_state.c: one packet through the full state machine; returns as
 * pts_win_feed(). */
int pts_win_feed_slow(struct pts_win_model *m, const struct pts_packet *pkt);

/* windows_fast.c: builds the fast path's tables from the map (call once
 * has_production and has_debug are set); pts_win_set_fast(m, 0) turns the
 * fast path off, for the tests that compare it with the full model. */
void pts_win_fast_init(struct pts_win_model *m);
void pts_win_set_fast(struct pts_win_model *m, int on);

/* enclave_map.c: lookups in the map; indices or -1. */
int pts_enclave_find(const struct pts_win_model *m, uint64_t ip,
		     int production_only);
int pts_enclave_find_aep(const struct pts_win_model *m, uint64_t ip);
int pts_enclave_find_eexit(const struct pts_win_model *m, uint64_t ip);
int pts_enclave_has_production(const struct pts_win_model *m);
void pts_enclave_note_entry(struct pts_win_model *m, uint64_t enclu_ip);
int pts_enclave_is_entry_return(const struct pts_win_model *m, uint64_t ip);
void pts_enclave_note_aep(struct pts_win_model *m, uint64_t aep);
int pts_enclave_is_learned_aep(const struct pts_win_model *m, uint64_t ip);
/* A FUP + TIP pair while on: counts a debug enclave's entry or exit. */
void pts_enclave_debug_branch(struct pts_win_model *m, uint64_t from,
			      uint64_t to);

/* windows_queue.c: the record queue and the running summary. */
struct pts_win_record *pts_win_push(struct pts_win_model *m, uint8_t type);
void pts_win_point_at(struct pts_win_model *m, struct pts_win_point *p,
		      uint64_t offset, uint8_t edge, int has_ip, uint64_t ip);
void pts_win_emit_window(struct pts_win_model *m,
			 const struct pts_win_point *end);

/* windows_classify.c: fills cause, basis, enclave fields of @rec for the
 * open gap closed at @rec->end, and queues the violations it implies. */
void pts_win_classify(struct pts_win_model *m, struct pts_win_record *rec);

/* verify_rules.c */
void pts_win_violation(struct pts_win_model *m, int rule, uint64_t offset,
		       int has_ip, uint64_t ip, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
/* Checks an IP packet's IP against the production enclaves (leak rule). */
void pts_win_check_ip(struct pts_win_model *m, const struct pts_packet *pkt,
		      int in_psb);
/* Notes a flow packet seen while PacketEn = 0. */
void pts_win_gap_flow(struct pts_win_model *m, uint8_t kind, uint64_t offset);

#endif
