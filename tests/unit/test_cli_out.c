/* The CLI's number writers (tools/cli.c), which `flow` uses for every
 * instruction line: the same digits as printf, for the edge values and
 * for scattered ones, and not a byte written past the end they return. */
#include "check.h"
#include "cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

typedef char *(*writer_fn)(char *p, uint64_t v);

/* @write's text of @v must be @want (what printf makes of it by @fmt),
 * and the byte after it still the guard. */
static void same_as_printf(writer_fn write, const char *fmt,
			   const char *want, uint64_t v)
{
	char got[40];
	memset(got, '#', sizeof(got));
	char *end = write(got, v);
	const size_t n = (size_t)(end - got);
	CHECKF(n == strlen(want) && memcmp(got, want, n) == 0,
	       "%s of 0x%" PRIx64 ": got '%.*s', want '%s'", fmt, v, (int)n,
	       got, want);
	CHECKF(got[n] == '#', "%s of 0x%" PRIx64 ": wrote past its end", fmt,
	       v);
}

static void check_value(uint64_t v)
{
	char want[32];
	snprintf(want, sizeof(want), "%" PRIu64, v);
	same_as_printf(pts_out_dec, "%" PRIu64, want, v);
	snprintf(want, sizeof(want), "%" PRIx64, v);
	same_as_printf(pts_out_hex, "%" PRIx64, want, v);
	snprintf(want, sizeof(want), "%016" PRIx64, v);
	same_as_printf(pts_out_hex16, "%016" PRIx64, want, v);
}

int main(void)
{
	static const uint64_t edges[] = {
		0, 1, 9, 10, 11, 15, 16, 99, 100, 255, 256, 4095, 4096,
		999999999, 1000000000, 0xffffffffull, 0x100000000ull,
		0x7fffffffffffffffull, 0x8000000000000000ull,
		10000000000000000000ull, UINT64_MAX};
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
		check_value(edges[i]);
	/* scattered values of every length: xorshift64, shifted right by
	 * 0..63 bits */
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < 100000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		check_value(x >> (i % 64));
	}
	return pts_check_exit();
}
