/* PSB search: where a decoder can (re)start, and where a trace can be cut
 * for parallel decoding.
 *
 * Which PSB: a PSB is 16 bytes of the pair 02 82. Bytes before a PSB can end
 * in 02 82 too (a payload, the end of another PSB), so a run of pairs longer
 * than 16 bytes is ambiguous at its start but not at its end: the bytes after
 * a PSB start a new packet, and a run that went on would make that packet a
 * second, incomplete PSB. So, as libipt's pt_sync_forward() does, the PSB of
 * a run is its last 16 bytes; the end of the buffer ends a run. Runs longer
 * than 16 bytes thus give one PSB (of 32 bytes of back-to-back PSBs, the
 * second).
 *
 * Speed: a PSB covers 16 consecutive bytes, so it always contains exactly one
 * of the positions from+15, from+31, ... The scan reads one byte in 16 and
 * looks closer only where that byte is 02 or 82.
 */
#include "packets_internal.h"

/* Any byte of a PSB is 02 or 82. */
static inline int pts_psb_byte(uint8_t b)
{
	return (b & 0x7f) == PTS_OPC_EXT;
}

static inline int pts_psb_pair(const uint8_t *buf, size_t at)
{
	return buf[at] == PTS_OPC_EXT && buf[at + 1] == PTS_EXT_PSB;
}

/* The run of pairs through @g (a candidate byte), counted from @from on:
 * sets [*start, *end). Returns 0 when @g is in no pair at or after @from. */
static int pts_psb_run_at(const uint8_t *buf, size_t len, size_t from, size_t g,
			  size_t *start, size_t *end)
{
	size_t s, e;

	if (buf[g] == PTS_OPC_EXT && g + 1 < len && buf[g + 1] == PTS_EXT_PSB)
		s = g;
	else if (buf[g] == PTS_EXT_PSB && g > from && buf[g - 1] == PTS_OPC_EXT)
		s = g - 1;
	else
		return 0;

	for (e = s + 2; e + 1 < len && pts_psb_pair(buf, e); e += 2)
		;
	while (s >= from + 2 && pts_psb_pair(buf, s - 2))
		s -= 2;
	*start = s;
	*end = e;
	return 1;
}

ptrdiff_t pts_psb_find(const uint8_t *buf, size_t len, size_t from)
{
	size_t g, s, e;

	if (!buf || from >= len || len - from < PTS_PSB_SIZE)
		return -1;

	g = from + PTS_PSB_SIZE - 1;
	while (g < len) {
		/* Most trace bytes are neither 02 nor 82: one probe per 16
		 * bytes is all the scan costs there. */
		if (!pts_psb_byte(buf[g])) {
			g += PTS_PSB_SIZE;
			continue;
		}
		if (!pts_psb_run_at(buf, len, from, g, &s, &e)) {
			g += PTS_PSB_SIZE;
			continue;
		}
		if (e - s >= PTS_PSB_SIZE)
			return (ptrdiff_t)(e - PTS_PSB_SIZE);
		/* No PSB starts inside a short run; the next one can start at
		 * its end at the earliest. */
		g = e + PTS_PSB_SIZE - 1;
		if (g <= e)
			return -1;
	}
	return -1;
}

size_t pts_psb_list(const uint8_t *buf, size_t len, uint64_t *offs, size_t max)
{
	size_t count = 0, from = 0;

	if (!buf)
		return 0;
	for (;;) {
		ptrdiff_t at = pts_psb_find(buf, len, from);

		if (at < 0)
			return count;
		if (offs && count < max)
			offs[count] = (uint64_t)at;
		count++;
		from = (size_t)at + PTS_PSB_SIZE;
	}
}
