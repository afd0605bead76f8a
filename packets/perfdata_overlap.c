/* Snapshot mode: where a buffer's new data starts after the previous one
 * of its queue, found the way perf's Intel PT decoder finds it
 * (intel_pt_find_overlap; facts in docs/perf-data-facts.md section 5).
 *
 * Successive snapshots of the AUX ring repeat each other's data; the AUX
 * offsets perf records for them cannot be trusted to say by how much, so
 * perf compares the trace itself:
 *   - only data from a PSB on is usable: @b's bytes before its first PSB
 *     are dropped, and an @a without a PSB cannot overlap;
 *   - with TSC: the TSC in the last complete PSB+ of @a (the one before,
 *     when the last PSB+ is cut off) is looked for in the PSB+s of @b;
 *     the same TSC with at least as many bytes after it in @b as in @a
 *     means @b repeats @a up to @a's end: new data starts that many bytes
 *     after the match. A PSB+ of @b with a later TSC (56-bit compare, with
 *     wrap) means no overlap; PSB+s without TSC are passed over;
 *   - without TSC: the tail of @a from one of its PSBs is looked for,
 *     byte for byte, at @b's first PSB;
 *   - @a may end in up to 7 bytes of perf's zero padding where @b has real
 *     data: the start moves back over the last bytes of @a that @b does
 *     not repeat. */
#include "perfdata_internal.h"

#define PSB_SIZE 16
#define MAX_PADDING 7

static const uint8_t *next_psb(const uint8_t *p, size_t len)
{
	ptrdiff_t at = pts_psb_find(p, len, 0);
	return at < 0 ? NULL : p + at;
}

/* The PSB after the one at @p, or NULL. */
static const uint8_t *step_psb(const uint8_t *p, size_t len)
{
	if (len < 1)
		return NULL;
	ptrdiff_t at = pts_psb_find(p, len, 1);
	return at < 0 ? NULL : p + at;
}

static const uint8_t *last_psb(const uint8_t *p, size_t len)
{
	const uint8_t *last = NULL, *q = next_psb(p, len);
	while (q) {
		last = q;
		q = step_psb(q, len - (size_t)(q - p));
	}
	return last;
}

/* The TSC of the PSB+ at @p (@len bytes to the end of its buffer) and the
 * bytes from the TSC packet to that end. 0 when PSBEND (or an
 * undecodable packet, or the end) comes first. */
static int psb_tsc(const uint8_t *p, size_t len, uint64_t *tsc, size_t *rem)
{
	struct pts_packet pkt;
	while (len) {
		int n = pts_pkt_parse(p, len, 0, &pkt);
		if (n <= 0)
			return 0;
		if (pkt.kind == PTS_PKT_TSC) {
			*tsc = pkt.u.tsc;
			*rem = len;
			return 1;
		}
		if (pkt.kind == PTS_PKT_PSBEND)
			return 0;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* -1, 0, 1 as @x is before, equal to, after @y (56-bit, may wrap). */
static int tsc_cmp(uint64_t x, uint64_t y)
{
	const uint64_t half = 1ull << 55;
	if (x == y)
		return 0;
	return x < y ? (y - x < half ? -1 : 1) : (x - y < half ? 1 : -1);
}

/* Moves @start in @b back over @a's last bytes that @b does not repeat
 * (perf's padding). Returns the new start. */
static const uint8_t *back_over_padding(const uint8_t *start,
					const uint8_t *b, const uint8_t *a,
					size_t len_a)
{
	if ((size_t)(start - b) < MAX_PADDING || len_a < MAX_PADDING)
		return start;
	const uint8_t *p = start - MAX_PADDING, *q = a + len_a - MAX_PADDING;
	for (int i = 0; i < MAX_PADDING && *p == *q; i++, p++, q++)
		;
	return p;
}

/* The TSC match. Returns the start of new data in @b, or NULL when the
 * TSCs say nothing (no TSC in @a). */
static const uint8_t *by_tsc(const uint8_t *a, size_t len_a, const uint8_t *b,
			     size_t len_b, int *consecutive)
{
	uint64_t tsc_a, tsc_b;
	size_t rem_a, rem_b;
	const uint8_t *p = last_psb(a, len_a);
	if (!p)
		return b;
	size_t len = len_a - (size_t)(p - a);
	if (!psb_tsc(p, len, &tsc_a, &rem_a)) {
		/* the last PSB+ is cut off: the one before */
		p = last_psb(a, len_a - len);
		if (!p)
			return b;
		len = len_a - len - (size_t)(p - a);
		if (!psb_tsc(p, len, &tsc_a, &rem_a))
			return b;
		/* measured to the end of @a all the same: perf measures to
		 * the cut-off PSB+ and so decodes it twice */
		rem_a += len_a - (size_t)(p - a) - len;
	}
	for (;;) {
		if (psb_tsc(b, len_b, &tsc_b, &rem_b)) {
			int cmp = tsc_cmp(tsc_a, tsc_b);
			if (cmp == 0 && rem_b >= rem_a) {
				*consecutive = 1;
				return b + len_b - (rem_b - rem_a);
			}
			if (cmp < 0)
				return b; /* @b's trace is later: no overlap */
		}
		const uint8_t *n = step_psb(b, len_b);
		if (!n)
			return b + len_b;
		len_b -= (size_t)(n - b);
		b = n;
	}
}

/* The byte match: @a's tail from one of its PSBs at @b's start. */
static const uint8_t *by_bytes(const uint8_t *a, size_t len_a,
			       const uint8_t *b, size_t len_b, int *consecutive)
{
	/* @b cannot end inside @a: skip @a's front */
	while (len_b < len_a) {
		const uint8_t *n = step_psb(a, len_a);
		if (!n)
			return b;
		len_a -= (size_t)(n - a);
		a = n;
	}
	for (;;) {
		if (memcmp(a, b, len_a) == 0) {
			*consecutive = 1;
			return b + len_a;
		}
		const uint8_t *n = step_psb(a, len_a);
		if (!n)
			return b;
		len_a -= (size_t)(n - a);
		a = n;
	}
}

uint64_t pts_perf_snapshot_overlap(const uint8_t *a, size_t len_a,
				   const uint8_t *b, size_t len_b, int have_tsc,
				   int *consecutive, uint64_t *a_trim)
{
	const uint8_t *b0 = b, *a_full = a, *start;
	size_t len_full = len_a;
	*consecutive = 0;
	*a_trim = 0;
	const uint8_t *pb = next_psb(b, len_b);
	if (!pb)
		return len_b;
	len_b -= (size_t)(pb - b);
	b = pb;
	const uint8_t *pa = next_psb(a, len_a);
	if (!pa)
		return (uint64_t)(b - b0);
	len_a -= (size_t)(pa - a);
	a = pa;
	/* with TSC the TSCs decide, as in perf */
	start = have_tsc ? by_tsc(a, len_a, b, len_b, consecutive)
			 : by_bytes(a, len_a, b, len_b, consecutive);
	if (*consecutive && start > b) {
		const uint8_t *s = back_over_padding(start, b0, a_full, len_full);
		*a_trim = (uint64_t)(start - s);
		start = s;
	}
	return (uint64_t)(start - b0);
}
