/* Random Intel PT packet streams written with libipt's encoder.
 *
 * The bytes come from libipt's pt_enc_next, not from ptscope's encoder, so
 * that a misreading shared by ptscope's encoder and decoder cannot cancel
 * out. A profile says which packets appear and how often.
 */
#ifndef PTS_TEST_STREAM_GEN_H
#define PTS_TEST_STREAM_GEN_H

#include <intel-pt.h>

#include <stddef.h>
#include <stdint.h>

#define PTS_GEN_TYPES (ppt_ptw + 1)

struct pts_gen_profile {
	const char *name;
	/* Relative weight of each libipt packet type; ppt_mode is split
	 * evenly between MODE.Exec and MODE.TSX. */
	uint16_t weight[PTS_GEN_TYPES];
	/* Relative weight of each IP compression (index = IPBytes; 5 and 7
	 * are reserved and must stay 0). */
	uint16_t ipc_weight[7];
	/* A PSB+ (PSB TSC TMA CBR MODE.Exec FUP PSBEND) once this many bytes
	 * followed the last PSB; 0: PSBs only by weight. */
	uint32_t psb_period;
	/* 1: after encoding, also set payload bits that libipt 2.0.5 ignores
	 * (reserved bits of MODE, CBR, PWRE, PWRX; the PWRE HW bit 7 and the
	 * MODE.Exec IF bit it does not know), so the comparison covers them. */
	uint8_t poke_bits;
	/* 1: timing packets as a running clock writes them (TSCs that only
	 * move on, MTCs one CTC period apart, CYCs of up to 4095 cycles: one
	 * or two bytes); 0: random payloads, for the decoders' corners. */
	uint8_t hw_timing;
};

/* Every packet type libipt 2.0.5 encodes, equally often, every IP
 * compression, PSB+ about every KiB, bits poked. */
extern const struct pts_gen_profile pts_gen_all_kinds;
/* Shaped like a real user-space branch trace: mostly TNT-8, TIPs with
 * 16/32-bit compressed IPs, CYC and MTC, some PAD, PSB+ every 4 KiB. */
extern const struct pts_gen_profile pts_gen_capture_like;

struct pts_gen_result {
	size_t bytes;
	uint64_t packets;
	uint64_t per_type[PTS_GEN_TYPES];
};

/* Fills @buf (@cap bytes) until @max_packets packets are written or the
 * next one does not fit; the stream starts with a PSB+ and ends at a packet
 * boundary. Same @seed, same bytes.
 * Returns 0, or the negative libipt error of a packet its encoder rejected
 * (a generator bug). */
int pts_gen_stream(uint8_t *buf, size_t cap, uint64_t max_packets,
		   const struct pts_gen_profile *profile, uint64_t seed,
		   struct pts_gen_result *result);

#endif /* PTS_TEST_STREAM_GEN_H */
