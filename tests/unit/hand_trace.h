/* Hand-made traces for flow unit tests: packets encoded one by one into a
 * buffer, with the IP compression a CPU would choose. */
#ifndef PTS_TESTS_HAND_TRACE_H
#define PTS_TESTS_HAND_TRACE_H

#include <ptscope/packets.h>

#include <stddef.h>
#include <stdint.h>

struct hand_trace {
	uint8_t buf[4096];
	size_t len;
	struct pts_lastip lip;
};

/* Appends @p (CHECKs that it encodes and fits). */
void ht_put(struct hand_trace *t, const struct pts_packet *p);
/* Appends a packet of @kind without payload (PSBEND, OVF, ...). */
void ht_put_kind(struct hand_trace *t, int kind);
/* Appends an IP packet of @kind; @ip 0: IP suppressed. */
void ht_put_ip(struct hand_trace *t, int kind, uint64_t ip);
/* Appends a PSB (and resets the last IP, as the decoder does). */
void ht_psb(struct hand_trace *t);
/* Appends MODE.Exec with CS.L @csl and CS.D @csd. */
void ht_mode(struct hand_trace *t, int csl, int csd);
/* Appends a TNT-8 with the @count (1..6) results in @bits, the oldest in
 * bit count-1. */
void ht_tnt(struct hand_trace *t, uint64_t bits, unsigned count);

#endif
