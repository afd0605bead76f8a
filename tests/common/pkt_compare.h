/* Field-by-field comparison of two decoded packets, for tests that must
 * say exactly what differs (which field, both values), not just "differs".
 */
#ifndef PTS_TEST_PKT_COMPARE_H
#define PTS_TEST_PKT_COMPARE_H

#include <ptscope/packets.h>

#include <stddef.h>

/* Compares offset, kind, size, ipc and the payload fields that @want's kind
 * makes valid (other union bytes are unspecified and ignored).
 * Returns 0 when equal, else 1 and writes "FIELD: want X, got Y" for the
 * first differing field into @out (always NUL-terminated, @cap > 0). */
int pts_pkt_diff(const struct pts_packet *want, const struct pts_packet *got,
		 char *out, size_t cap);

#endif /* PTS_TEST_PKT_COMPARE_H */
