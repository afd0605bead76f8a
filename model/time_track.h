/* Time from timing packets (docs/pt-sgx-facts.md section 6; SDM 36.8.3).
 * Internal to model/; libipt's pt_time.c is the reference algorithm.
 *
 * All times are in TSC ticks. The estimate follows the packets: a TSC gives
 * the full value, a TMA places the CTC (crystal clock) relative to it, each
 * MTC advances by the CTC delta times the TSC/CTC ratio (CPUID 0x15), each
 * CYC adds core cycles times a calibrated TSC-per-cycle ratio. */
#ifndef PTS_MODEL_TIME_TRACK_H
#define PTS_MODEL_TIME_TRACK_H

#include <ptscope/packets.h>

#include <stdint.h>

/* Fixed-point shift of the TSC-ticks-per-core-cycle ratio. */
#define PTS_TIME_FCR_SHIFT 8

struct pts_time {
	/* Configuration. */
	uint32_t eax, ebx; /* CPUID 0x15 ratio TSC/CTC = ebx/eax */
	uint8_t mtc_freq;  /* N of RTIT_CTL.MTCFreq */
	uint8_t nom_freq;  /* max non-turbo ratio, 0 unknown */

	/* Current estimate. */
	uint64_t tsc;  /* best estimate now */
	uint64_t base; /* TSC at the last MTC, or the TSC minus the TMA's FC */
	uint64_t fc;   /* ticks added by CYC since @base */
	uint32_t ctc;     /* CTC of the last MTC/TMA, masked to N+8 bits */
	uint32_t ctc_cyc; /* CTC of the period the last CYC belongs to */
	uint8_t have_tsc, have_tma, have_mtc;
	uint8_t cbr;	   /* the last nonzero CBR ratio */
	uint8_t last_cbr; /* the last CBR's ratio, 0 included */
	uint32_t lost_mtc, lost_cyc;
	uint8_t mtc_unrated; /* an MTC came without the ratio to read it */
	/* The last CTC delta converted to TSC ticks, and its result. */
	uint64_t memo_ctc, memo_tsc;
	uint8_t memo_valid;

	/* Calibration of the TSC-per-cycle ratio. */
	uint64_t fcr; /* ticks per cycle << PTS_TIME_FCR_SHIFT; 0 unknown */
	uint64_t cal_tsc;     /* last TSC, for PSB-to-PSB calibration */
	uint64_t cal_cyc_tsc; /* cycles since @cal_tsc */
	uint64_t cal_cyc_mtc; /* cycles since the last MTC */
	uint32_t cal_ctc;     /* CTC of the last MTC */
	uint8_t cal_have_mtc;
};

/* Sets up @t for a trace with the given CPUID 0x15 ratio (0: unknown), MTC
 * frequency and nominal ratio (0: unknown). */
void pts_time_init(struct pts_time *t, uint32_t eax, uint32_t ebx,
		   unsigned mtc_freq, unsigned nom_freq);

/* Applies one packet; others than TSC, TMA, MTC, CYC, CBR, OVF are ignored.
 * @in_psb is 1 between PSB and PSBEND (status packets calibrate
 * differently). Returns 1 when the packet moved time, 0 otherwise; timing
 * that cannot be placed is counted as lost, never an error. */
int pts_time_packet(struct pts_time *t, const struct pts_packet *pkt,
		    int in_psb);

/* Applies the timing packets @pkts[i] met outside PSB+ for each bit i set
 * in @which, in stream order: as pts_time_packet(t, &pkts[i], 0) for each,
 * minus the dispatch per packet (the windows model's fast path). */
void pts_time_packets(struct pts_time *t, const struct pts_packet *pkts,
		      uint64_t which);

/* Applies the timing packets of @items (pts_pkt_skim_batch()'s hook for
 * packets handed on a block at a time), as pts_time_packets() would. */
void pts_time_items(struct pts_time *t, const struct pts_skim_timing *items);

/* The current time: returns 1 and sets *@tsc, or 0 before the first TSC. */
int pts_time_now(const struct pts_time *t, uint64_t *tsc);

#endif
