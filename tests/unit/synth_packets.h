/* Synthesized bytes read back as packets, for the synth unit tests
 * (test_synth_enclave.c, test_synth_filters.c): they assert packet
 * sequences, so they compare one line per trace, not bytes. */
#ifndef PTS_TESTS_SYNTH_PACKETS_H
#define PTS_TESTS_SYNTH_PACKETS_H

#include "synth.h"

#include <stddef.h>

/* MTC, CYC, TSC, TMA: the packets a signature leaves out. */
int synth_is_timing(int kind);

/* Decodes the memory of @sink into @pkts (at most @max), CHECKing that
 * every packet decodes; returns how many. */
size_t synth_decode(const struct syn_sink *sink, struct pts_packet *pkts,
		    size_t max);

/* One line for @pkts without the timing packets: kind names, IP packets
 * with their IP in hex or "()" when suppressed ("psb cbr ... fup(400133)
 * tip.pgd()"). */
void synth_signature(const struct pts_packet *pkts, size_t n, char *out,
		     size_t cap);

#endif
