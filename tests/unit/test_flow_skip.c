/* The flow walker's SKIP records: every byte it passes over to reach a PSB
 * is reported, in stream order, once:
 *   - bytes before the first PSB (and a trace with no PSB at all);
 *   - after a packet that does not decode, from that packet up to the next
 *     PSB (the range `ptscope dump` gives);
 *   - after a trace/code mismatch, from the first packet not consumed up
 *     to the next PSB;
 *   - nothing after a packet cut by the end of the data (the error says
 *     it all) and nothing when the error is at a PSB;
 *   - offsets count from the configured base_offset, records and counters
 *     do not depend on how the input is chunked, and pts_flow_reset()
 *     starts the count again.
 * Code: 0x1000 jmp 0x2000; 0x2000 nop; 0x2001 ret.
 */
#include "check.h"
#include "hand_trace.h"

#include <ptscope/decoder.h>

#include <stdio.h>
#include <string.h>

static const uint8_t code1[] = {0xe9, 0xfb, 0x0f, 0x00, 0x00};
static const uint8_t code2[] = {0x90, 0xc3};

static struct pts_image *make_image(void)
{
	struct pts_image *img = pts_image_new();
	CHECK(img != NULL);
	CHECK(pts_image_add_mem(img, 0, code1, sizeof(code1), 0x1000) == 0);
	CHECK(pts_image_add_mem(img, 0, code2, sizeof(code2), 0x2000) == 0);
	return img;
}

/* Bytes no packet decoder syncs on (no PSB pattern in them). */
static void garbage(struct hand_trace *t, size_t n)
{
	CHECK(t->len + n <= sizeof(t->buf));
	memset(t->buf + t->len, 0x55, n);
	t->len += n;
}

/* PSB+, tracing on at 0x1000, the RET at 0x2001 returns to 0x1000 (TIP),
 * whose walk ends at the next RET with a TIP.PGD. */
static void segment(struct hand_trace *t)
{
	ht_psb(t);
	struct pts_packet m = {.kind = PTS_PKT_MODE_EXEC,
			       .u.exec = {.csl = 1}};
	ht_put(t, &m);
	ht_put_kind(t, PTS_PKT_PSBEND);
	ht_put_ip(t, PTS_PKT_TIP_PGE, 0x1000);
	ht_put_ip(t, PTS_PKT_TIP, 0x1000);
	ht_put_ip(t, PTS_PKT_TIP_PGD, 0);
}

/* What a decode gives: the SKIP and ERROR records in order, and counts. */
struct outcome {
	uint64_t skip_from[8], skip_to[8], err_at[8];
	int err[8];
	unsigned nskip, nerr;
	uint64_t insns;
	struct pts_flow_stats st;
};

/* Decodes @t fed in chunks of @chunk bytes (0: all at once) into @o. */
static void decode_into(struct pts_flow *f, const struct hand_trace *t,
			size_t chunk, struct outcome *o)
{
	struct pts_flow_rec recs[4];
	size_t pos = 0;
	struct pts_input in = {NULL, 0, 0};
	memset(o, 0, sizeof(*o));
	for (;;) {
		int n = pts_flow_next(f, &in, recs, 4);
		if (n == -PTS_ERR_EOS)
			break;
		if (n == -PTS_ERR_AGAIN) {
			if (pos == t->len) {
				pts_flow_end(f);
				continue;
			}
			size_t len = chunk && t->len - pos > chunk
					     ? chunk
					     : t->len - pos;
			in = (struct pts_input){t->buf + pos, len, 0};
			pos += len;
			continue;
		}
		CHECK(n > 0);
		if (n <= 0)
			break;
		for (int i = 0; i < n; i++) {
			const struct pts_flow_rec *r = &recs[i];
			if (r->kind == PTS_FLOW_INSNS)
				o->insns += r->n;
			if (r->kind == PTS_FLOW_SKIP && o->nskip < 8) {
				o->skip_from[o->nskip] = r->offset;
				o->skip_to[o->nskip++] = r->arg;
			}
			if (r->kind == PTS_FLOW_ERROR && o->nerr < 8) {
				o->err_at[o->nerr] = r->offset;
				o->err[o->nerr++] = r->error;
			}
		}
	}
	pts_flow_get_stats(f, &o->st);
}

/* Decodes @t at @base whole, then byte by byte and in chunks of 7: the
 * outcomes must be the same. Returns the whole decode's in @o. */
static void decode(const struct hand_trace *t, uint64_t base,
		   struct outcome *o)
{
	struct pts_image *img = make_image();
	struct pts_flow_config fc = {.base_offset = base};
	const size_t chunks[] = {1, 7};
	struct pts_flow *f = pts_flow_new(&fc, img);
	CHECK(f != NULL);
	decode_into(f, t, 0, o);
	for (size_t c = 0; c < 2; c++) {
		struct outcome again;
		struct pts_flow *g = pts_flow_new(&fc, img);
		decode_into(g, t, chunks[c], &again);
		CHECK_EQ(again.nskip, o->nskip);
		CHECK(memcmp(again.skip_from, o->skip_from,
			     sizeof(o->skip_from)) == 0);
		CHECK(memcmp(again.skip_to, o->skip_to, sizeof(o->skip_to)) ==
		      0);
		CHECK_EQ(again.nerr, o->nerr);
		CHECK_EQ(again.insns, o->insns);
		CHECK_EQ(again.st.skipped, o->st.skipped);
		pts_flow_free(g);
	}
	/* The counter is the sum of the records. */
	uint64_t sum = 0;
	for (unsigned i = 0; i < o->nskip; i++)
		sum += o->skip_to[i] - o->skip_from[i];
	CHECK_EQ(o->st.skipped, sum);
	/* After a reset the same trace gives the same again. */
	struct outcome reset;
	CHECK(pts_flow_reset(f) == 0);
	decode_into(f, t, 0, &reset);
	CHECK_EQ(reset.nskip, o->nskip);
	CHECK_EQ(reset.skip_from[0], o->skip_from[0]);
	CHECK_EQ(reset.st.skipped, o->st.skipped);
	pts_flow_free(f);
	pts_image_free(img);
}

/* @o has exactly one SKIP record, [@from, @to), and @nerr errors. */
static void expect_one_skip(const struct outcome *o, uint64_t from,
			    uint64_t to, unsigned nerr)
{
	CHECK_EQ(o->nskip, 1);
	CHECK_EQ(o->skip_from[0], from);
	CHECK_EQ(o->skip_to[0], to);
	CHECK_EQ(o->nerr, nerr);
}

static void test_before_first_psb(void)
{
	struct hand_trace t = {0};
	garbage(&t, 37);
	segment(&t);
	struct outcome o;
	decode(&t, 0, &o);
	expect_one_skip(&o, 0, 37, 0);
	CHECK_EQ(o.insns, 6);
	/* At another base offset. */
	decode(&t, 1000, &o);
	expect_one_skip(&o, 1000, 1037, 0);
}

static void test_in_sync_from_the_start(void)
{
	struct hand_trace t = {0};
	segment(&t);
	segment(&t);
	struct outcome o;
	decode(&t, 0, &o);
	CHECK_EQ(o.nskip, 0);
	CHECK_EQ(o.st.skipped, 0);
	CHECK_EQ(o.insns, 12);
}

static void test_no_psb(void)
{
	struct hand_trace t = {0};
	garbage(&t, 300);
	struct outcome o;
	decode(&t, 0, &o);
	expect_one_skip(&o, 0, 300, 0);
	CHECK_EQ(o.insns, 0);
}

static void test_after_bad_packet(void)
{
	struct hand_trace t = {0};
	segment(&t);
	const size_t bad = t.len;
	t.buf[t.len++] = 0xd9; /* no packet starts so */
	t.buf[t.len++] = 0xff;
	garbage(&t, 20);
	const size_t psb = t.len;
	segment(&t);
	struct outcome o;
	decode(&t, 0, &o);
	expect_one_skip(&o, bad, psb, 1);
	CHECK_EQ(o.err_at[0], bad);
	CHECK_EQ(o.insns, 12);
	/* No PSB after it: skipped to the end. */
	t.len = psb;
	decode(&t, 0, &o);
	expect_one_skip(&o, bad, psb, 1);
}

static void test_after_mismatch(void)
{
	struct hand_trace t = {0};
	ht_psb(&t);
	ht_put_kind(&t, PTS_PKT_PSBEND);
	ht_put_ip(&t, PTS_PKT_TIP_PGE, 0x1000);
	/* A taken bit for the RET at 0x2001: a compressed return, but
	 * nothing was called (an error at the TNT). */
	const size_t tnt = t.len;
	ht_tnt(&t, 1, 1);
	const size_t next = t.len;
	ht_put_ip(&t, PTS_PKT_TIP, 0x1000);
	ht_put_ip(&t, PTS_PKT_TIP_PGD, 0);
	const size_t psb = t.len;
	segment(&t);
	struct outcome o;
	decode(&t, 0, &o);
	expect_one_skip(&o, next, psb, 1);
	CHECK_EQ(o.err_at[0], tnt);
	CHECK_EQ(o.err[0], -PTS_ERR_RETSTACK_EMPTY);
}

static void test_cut_packet(void)
{
	struct hand_trace t = {0};
	segment(&t);
	const size_t tip = t.len;
	ht_put_ip(&t, PTS_PKT_TIP, 0x1000);
	t.len -= 2; /* cut inside the TIP */
	struct outcome o;
	decode(&t, 0, &o);
	CHECK_EQ(o.nerr, 1);
	CHECK_EQ(o.err_at[0], tip);
	CHECK_EQ(o.err[0], -PTS_ERR_TRUNCATED);
	CHECK_EQ(o.nskip, 0);
	CHECK_EQ(o.st.skipped, 0);
}

int main(void)
{
	test_before_first_psb();
	test_in_sync_from_the_start();
	test_no_psb();
	test_after_bad_packet();
	test_after_mismatch();
	test_cut_packet();
	return pts_check_exit();
}
