/* PSB search: a PSB at every position, fake patterns (runs of 02 82 that are
 * too short, at the wrong phase, or longer than a PSB), and random buffers
 * full of 02 and 82 bytes checked against a byte-by-byte reference of the
 * rule in psb_search.c: the PSB of a run of pairs is its last 16 bytes, the
 * end of the buffer ends a run, and only a PSB starting at or after @from
 * counts.
 */
#include <ptscope/packets.h>

#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A byte that can never be part of a PSB. */
static uint8_t filler(void)
{
	uint8_t b;

	do
		b = (uint8_t)next_rand();
	while ((b & 0x7f) == 0x02);
	return b;
}

static int pair_at(const uint8_t *buf, size_t len, size_t i)
{
	return i + 1 < len && buf[i] == 0x02 && buf[i + 1] == 0x82;
}

/* The reference: walk the maximal runs of pairs in order. */
static ptrdiff_t ref_find(const uint8_t *buf, size_t len, size_t from)
{
	size_t i = 0;

	while (i < len) {
		size_t s = i, e;

		if (!pair_at(buf, len, i)) {
			i++;
			continue;
		}
		e = s;
		while (pair_at(buf, len, e))
			e += 2;
		if (e - s >= 16 && e - 16 >= from)
			return (ptrdiff_t)(e - 16);
		i = e;
	}
	return -1;
}

static size_t ref_list(const uint8_t *buf, size_t len, uint64_t *offs,
		       size_t max)
{
	size_t n = 0, from = 0;
	ptrdiff_t at;

	while ((at = ref_find(buf, len, from)) >= 0) {
		if (n < max)
			offs[n] = (uint64_t)at;
		n++;
		from = (size_t)at + 16;
	}
	return n;
}

static void put_psb(uint8_t *p)
{
	for (int i = 0; i < 16; i += 2) {
		p[i] = 0x02;
		p[i + 1] = 0x82;
	}
}

/* Compares pts_psb_find() at every @from, and pts_psb_list(). */
static void compare(const char *what, const uint8_t *buf, size_t len)
{
	uint64_t got[64], want[64];
	size_t ng, nw;

	for (size_t from = 0; from <= len + 1; from++) {
		ptrdiff_t g = pts_psb_find(buf, len, from);
		ptrdiff_t w = ref_find(buf, len, from);

		if (g != w) {
			FAIL("%s (len %zu): find from %zu gives %td, want %td",
			     what, len, from, g, w);
			return;
		}
	}
	ng = pts_psb_list(buf, len, got, 64);
	nw = ref_list(buf, len, want, 64);
	if (ng != nw || memcmp(got, want, (ng < 64 ? ng : 64) * 8) != 0)
		FAIL("%s: list gives %zu PSBs, want %zu", what, ng, nw);
}

static void every_position(void)
{
	uint8_t buf[200];

	for (size_t p = 0; p + 16 <= sizeof(buf); p++) {
		uint64_t offs[4];

		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = filler();
		put_psb(buf + p);
		if (pts_psb_find(buf, sizeof(buf), 0) != (ptrdiff_t)p ||
		    pts_psb_find(buf, sizeof(buf), p) != (ptrdiff_t)p ||
		    pts_psb_find(buf, sizeof(buf), p + 1) != -1)
			FAIL("PSB at %zu not found exactly there", p);
		if (pts_psb_list(buf, sizeof(buf), offs, 4) != 1 || offs[0] != p)
			FAIL("PSB at %zu: list wrong", p);
		/* The buffer may end right after the PSB. */
		if (pts_psb_find(buf, p + 16, 0) != (ptrdiff_t)p)
			FAIL("PSB at %zu ending the buffer not found", p);
		if (p + 15 >= 16 && pts_psb_find(buf, p + 15, 0) != -1)
			FAIL("PSB at %zu cut by the buffer end found", p);
		compare("every position", buf, sizeof(buf));
	}
}

/* Runs of 14..40 bytes of pairs at every alignment, with and without an
 * unpaired 02 after them, in the middle and at the end of the buffer. */
static void long_runs(void)
{
	uint8_t buf[128];

	for (size_t run = 14; run <= 40; run += 2) {
		for (size_t at = 0; at < 18; at++) {
			for (int tail = 0; tail < 4; tail++) {
				size_t len = sizeof(buf), e = at + run;
				ptrdiff_t want = run >= 16 ? (ptrdiff_t)(e - 16) : -1;

				for (size_t i = 0; i < sizeof(buf); i++)
					buf[i] = filler();
				for (size_t i = 0; i < run; i += 2) {
					buf[at + i] = 0x02;
					buf[at + i + 1] = 0x82;
				}
				if (tail & 1)
					buf[e] = 0x02; /* unpaired 02 */
				if (tail & 2)
					len = e + (tail & 1);
				if (pts_psb_find(buf, len, 0) != want)
					FAIL("run of %zu at %zu (tail %d): %td, "
					     "want %td",
					     run, at, tail,
					     pts_psb_find(buf, len, 0), want);
				compare("long run", buf, len);
			}
		}
	}
}

/* Buffers made mostly of 02 and 82 in random order: many short runs, runs
 * at the odd phase, runs separated by one byte. */
static void random_patterns(void)
{
	uint8_t buf[300];

	for (int seed = 0; seed < 3000; seed++) {
		size_t len = 17 + next_rand() % (sizeof(buf) - 17);
		unsigned mode = seed % 3;

		for (size_t i = 0; i < len; i++) {
			unsigned r = (unsigned)(next_rand() % 16);

			if (mode == 0)
				buf[i] = r < 8 ? 0x02 : r < 15 ? 0x82 : filler();
			else
				buf[i] = r < 14 ? (i & 1 ? 0x82 : 0x02) : filler();
			if (mode == 2 && r == 15)
				buf[i] = 0x02;
		}
		compare("random", buf, len);
	}
}

static void edges(void)
{
	uint8_t buf[40];
	uint64_t offs[1];

	put_psb(buf);
	if (pts_psb_find(NULL, 16, 0) != -1 || pts_psb_find(buf, 15, 0) != -1 ||
	    pts_psb_find(buf, 16, 16) != -1 || pts_psb_find(buf, 16, 99) != -1)
		FAIL("edge cases of pts_psb_find");
	if (pts_psb_list(NULL, 16, offs, 1) != 0)
		FAIL("pts_psb_list(NULL)");
	/* Two PSBs back to back are one run: its last 16 bytes. */
	put_psb(buf + 16);
	buf[32] = 0x02;
	buf[33] = 0x23;
	if (pts_psb_find(buf, 34, 0) != 16)
		FAIL("back-to-back PSBs: %td", pts_psb_find(buf, 34, 0));
	/* The count is complete even when @max is smaller. */
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = 0;
	put_psb(buf);
	put_psb(buf + 20);
	offs[0] = 99;
	if (pts_psb_list(buf, 36, offs, 1) != 2 || offs[0] != 0)
		FAIL("list beyond max");
	if (pts_psb_list(buf, 36, NULL, 0) != 2)
		FAIL("list counting only");
}

int main(void)
{
	every_position();
	long_runs();
	random_patterns();
	edges();
	return pts_check_exit();
}
