/* The one parser of the numbers and ranges users write in specs, options
 * and description files (pts_parse_u64, pts_parse_range in packets.h). */
#include <ptscope/packets.h>

#include <stdbool.h>
#include <string.h>

int pts_parse_u64(const char *s, const char *end, uint64_t *v)
{
	unsigned base = 10;
	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (s >= end)
		return -PTS_ERR_INVALID;
	uint64_t x = 0;
	bool too_large = false;
	for (; s < end; s++) {
		unsigned d;
		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			return -PTS_ERR_INVALID;
		/* read on to the end: a bad digit further on is bad syntax */
		if (x > (UINT64_MAX - d) / base)
			too_large = true;
		x = x * base + d;
	}
	if (too_large)
		return -PTS_ERR_TOO_LARGE;
	*v = x;
	return 0;
}

int pts_parse_range(const char *s, const char *end, uint64_t *a, uint64_t *b)
{
	const char *dash = s < end ? memchr(s, '-', (size_t)(end - s)) : NULL;
	uint64_t x, y;
	int err;

	if (!dash)
		return -PTS_ERR_INVALID;
	if ((err = pts_parse_u64(s, dash, &x)) < 0 ||
	    (err = pts_parse_u64(dash + 1, end, &y)) < 0)
		return err;
	*a = x;
	*b = y;
	return 0;
}
