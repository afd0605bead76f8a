/* The one parser of the numbers users write in specs and description files
 * (pts_parse_u64 in packets.h). */
#include <ptscope/packets.h>

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
		if (x > (UINT64_MAX - d) / base)
			return -PTS_ERR_INVALID;
		x = x * base + d;
	}
	*v = x;
	return 0;
}
