/* What ptscope must produce, given what libipt 2.0.5 decoded.
 *
 * The differential tests and the capture tests compare ptscope's packet
 * decoder with libipt's. The translation from libipt's packet to ours lives
 * here, in one function, together with the places where ptscope
 * deliberately reads the SDM differently from libipt 2.0.5.
 */
#ifndef PTS_TEST_LIBIPT_MAP_H
#define PTS_TEST_LIBIPT_MAP_H

#include <ptscope/packets.h>

#include <intel-pt.h>

/* The test's own last-IP (SDM table "Compressed IP Payload Format"), so
 * that the reconstructed IP of each packet is checked against something
 * other than ptscope's own pts_lastip. */
struct pts_ref_lastip {
	uint64_t ip;
};

/* Fills @out with the packet ptscope must decode at @offset where libipt
 * decoded @in from the bytes @raw (the packet's @in->size bytes). Updates
 * @lip as a decoder does (IP packets update it, PSB resets it).
 * Returns 0, or -1 when @in has a type ptscope has no kind for. */
int pts_map_libipt(const struct pt_packet *in, uint64_t offset,
		   const uint8_t *raw, struct pts_ref_lastip *lip,
		   struct pts_packet *out);

/* The -PTS_ERR_* ptscope must report where libipt's pt_pkt_next() failed
 * with @pte on the bytes at @at (@avail > 0 of them up to the end of the
 * buffer). libipt uses one code, bad_packet, for things ptscope names
 * apart (reserved IP compression, overlong CYC). -pte_eos before the end
 * of the buffer means a packet cut by the end: TRUNCATED. */
int pts_map_libipt_error(int pte, const uint8_t *at, size_t avail);

/* Name of a libipt packet type, for reports. */
const char *pts_libipt_type_name(enum pt_packet_type type);

#endif /* PTS_TEST_LIBIPT_MAP_H */
