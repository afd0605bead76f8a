/* Timing-packet streams for diff_time_libipt: a model clock (TSC, CTC,
 * core cycles at a CBR) writes the TSC, TMA, MTC, CYC and CBR packets a CPU
 * would, among a little flow (TNT, TIP, PGE/PGD, FUP, OVF, PSB+).
 * Written with ptscope's encoder; libipt reads them back in the test. */
#ifndef PTS_TEST_TIME_STREAMS_H
#define PTS_TEST_TIME_STREAMS_H

#include "rng.h"

#include <stddef.h>
#include <stdint.h>

/* What the clock of a trace is configured with. */
struct time_conf {
	uint32_t eax, ebx; /* CPUID 0x15 */
	uint8_t mtc_freq, nom_freq;
};

/* A stream being written and its model clock (@buf is malloc()ed). */
struct time_gen {
	uint8_t *buf;
	size_t len, cap;
	unsigned n;	  /* MTC frequency */
	uint32_t eax, ebx; /* TSC/CTC */
	uint64_t tsc, ctc; /* the model clock */
	uint8_t nom, cbr;
	uint64_t cycles; /* core cycles not yet sent in a CYC */
	struct pts_rng rng;
	uint32_t drop_mtc; /* per 1000 MTCs lost */
};

void time_gen_init(struct time_gen *g, const struct time_conf *tc,
		   uint64_t seed);
/* Each timing case in a known place. */
void time_gen_hand(struct time_gen *g);
/* Which calibration wins at a PSB+: after MTCs and without them. */
void time_gen_cal_order(struct time_gen *g);
/* @steps random steps of the model clock and the flow. */
void time_gen_random(struct time_gen *g, unsigned steps);

#endif
