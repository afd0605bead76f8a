/* Snapshot overlap (packets/perfdata_overlap.c): where the new data of a
 * snapshot starts after the previous one, by perf's PSB/TSC match, the
 * byte match without TSC, and the padding rule. */
#include "check.h"
#include "perfdata_internal.h"

#include <string.h>

struct bytes {
	uint8_t b[512];
	size_t n;
};

static void add(struct bytes *s, const uint8_t *p, size_t n)
{
	memcpy(s->b + s->n, p, n);
	s->n += n;
}

/* PSB+ with a TSC (unless @tsc is 0), then @n TNT8 packets of value @v. */
static void psb_block(struct bytes *s, uint64_t tsc, int n, uint8_t v)
{
	static const uint8_t psb[16] = {2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82,
					2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82};
	static const uint8_t psbend[2] = {2, 0x23};
	add(s, psb, 16);
	if (tsc) {
		uint8_t t[8] = {0x19};
		for (int i = 0; i < 7; i++)
			t[1 + i] = (uint8_t)(tsc >> (8 * i));
		add(s, t, 8);
	}
	add(s, psbend, 2);
	for (int i = 0; i < n; i++)
		add(s, &v, 1);
}

/* A: two PSB+ blocks (TSC 0x1000, then 0x2000 with @n TNTs); B: A again
 * from its second PSB on. Returns where A's second PSB is. */
static size_t repeat_tail(struct bytes *a, struct bytes *b, int n)
{
	a->n = b->n = 0;
	psb_block(a, 0x1000, 5, 0x0a);
	size_t second = a->n;
	psb_block(a, 0x2000, n, 0x0c);
	add(b, a->b + second, a->n - second);
	return second;
}

static uint64_t overlap(const struct bytes *a, const struct bytes *b,
			int have_tsc, int *cons, uint64_t *trim)
{
	return pts_perf_snapshot_overlap(a->b, a->n, b->b, b->n, have_tsc, cons,
					 trim);
}

/* B repeats A from A's second PSB on, then has new data: by TSC. */
static void test_tsc_match(void)
{
	struct bytes a, b;
	int cons;
	uint64_t trim;
	repeat_tail(&a, &b, 7);
	size_t repeated = b.n;
	psb_block(&b, 0x3000, 3, 0x0e);
	CHECK_EQ(overlap(&a, &b, 1, &cons, &trim), repeated);
	CHECK_EQ(cons, 1);
	CHECK_EQ(trim, 0);
	/* the same by bytes */
	CHECK_EQ(overlap(&a, &b, 0, &cons, &trim), repeated);
	CHECK_EQ(cons, 1);
}

/* B's first PSB+ is later than A's last: no overlap, not consecutive. */
static void test_later(void)
{
	struct bytes a = {0}, b = {0};
	int cons;
	uint64_t trim;
	psb_block(&a, 0x1000, 5, 0x0a);
	psb_block(&b, 0x5000, 5, 0x0a);
	CHECK_EQ(overlap(&a, &b, 1, &cons, &trim), 0);
	CHECK_EQ(cons, 0);
	/* bytes before B's first PSB are never usable */
	struct bytes c = {0};
	uint8_t junk[3] = {0x0a, 0x0a, 0x0a};
	add(&c, junk, 3);
	psb_block(&c, 0x5000, 5, 0x0a);
	CHECK_EQ(overlap(&a, &c, 1, &cons, &trim), 3);
	CHECK_EQ(cons, 0);
}

/* B holds nothing new (all of it repeats A), or no PSB at all. */
static void test_nothing_new(void)
{
	struct bytes a, b, c = {0};
	int cons;
	uint64_t trim;
	repeat_tail(&a, &b, 7);
	CHECK_EQ(overlap(&a, &b, 1, &cons, &trim), b.n);
	uint8_t tnt[4] = {0x0a, 0x0a, 0x0a, 0x0a};
	add(&c, tnt, 4);
	CHECK_EQ(overlap(&a, &c, 1, &cons, &trim), c.n);
	CHECK_EQ(cons, 0);
}

/* A ends in perf's zero padding where B has real bytes: the new data
 * starts at the first byte A does not repeat, and A loses its padding. */
static void test_padding(void)
{
	struct bytes a, b;
	int cons;
	uint64_t trim;
	size_t second = repeat_tail(&a, &b, 4);
	size_t real_end = a.n;
	uint8_t more[3] = {0x0e, 0x0e, 0x0e};
	add(&b, more, 3); /* real data where A has padding */
	psb_block(&b, 0x3000, 2, 0x0e);
	uint8_t pad[3] = {0, 0, 0};
	add(&a, pad, 3);
	CHECK_EQ(overlap(&a, &b, 1, &cons, &trim), real_end - second);
	CHECK_EQ(cons, 1);
	CHECK_EQ(trim, 3);
}

/* A's last PSB+ is cut off by the end of the buffer: the PSB+ before it
 * gives the TSC, and everything of A is still skipped. */
static void test_cut_psb(void)
{
	struct bytes a, b;
	int cons;
	uint64_t trim;
	repeat_tail(&a, &b, 6);
	/* A ends inside the TSC of its next PSB+; B has that PSB+ whole */
	size_t a_end = a.n;
	psb_block(&a, 0x3000, 2, 0x0e);
	size_t b_start = b.n;
	add(&b, a.b + a_end, a.n - a_end);
	a.n = a_end + 20;
	CHECK_EQ(overlap(&a, &b, 1, &cons, &trim), b_start + 20);
	CHECK_EQ(cons, 1);
}

int main(void)
{
	test_tsc_match();
	test_later();
	test_nothing_new();
	test_padding();
	test_cut_psb();
	return pts_check_exit();
}
