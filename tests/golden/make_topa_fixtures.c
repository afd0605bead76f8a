/* Writes the ToPA buffer sets the `ptscope topa` golden tests run on (the
 * recipe of fixtures/topa/): a packet stream made with the encoder, stored
 * by the ToPA writer as hardware would, plus the bytes the linear trace must
 * be, taken from the stream itself (not from the linearizer). Each stream
 * is one-byte filler packets with one PSB block where its case looks, so
 * decoding skips the filler up to that PSB and the outputs stay short:
 *
 *   make_topa_fixtures OUTDIR
 *
 *   ring.*     "4K,8K/4K", 20000 bytes written: wrapped, the oldest byte
 *              mid-packet; ring.expect.pt is the stream's last 16K
 *   stop.*     "4K/4K:stop": the STOP region ends inside a TSC packet;
 *              stop.expect.pt is the stream's first 8K
 *   single.*   "single:4K", 10000 bytes: wrapped
 *   plain.*    "8K,8K", 5000 bytes, tables inline in the description:
 *              not wrapped
 */
#include <ptscope/packets.h>
#include <ptscope/topa.h>

#include <stdio.h>
#include <string.h>

#define STREAM_MAX 24576

struct stream {
	uint8_t buf[STREAM_MAX];
	size_t len;
	struct pts_lastip lip;
	uint32_t rng;
	uint64_t ip, tsc;
	int failed;
};

static void put(struct stream *s, const struct pts_packet *pkt)
{
	int n = pts_pkt_encode(pkt, s->buf + s->len, sizeof(s->buf) - s->len);
	if (n < 0) {
		fprintf(stderr, "make_topa_fixtures: cannot encode %s: %s\n",
			pts_pkt_kind_name(pkt->kind), pts_strerror(n));
		s->failed = 1;
		return;
	}
	s->len += (size_t)n;
	if (pkt->kind == PTS_PKT_PSB)
		pts_lastip_reset(&s->lip);
}

static void put_kind(struct stream *s, int kind)
{
	struct pts_packet pkt;
	memset(&pkt, 0, sizeof(pkt));
	pkt.kind = (uint8_t)kind;
	put(s, &pkt);
}

static void put_ip(struct stream *s, int kind, uint64_t ip)
{
	struct pts_packet pkt;
	pts_pkt_make_ip(&pkt, kind, ip, &s->lip);
	put(s, &pkt);
}

static void put_tsc(struct stream *s, uint64_t tsc)
{
	struct pts_packet pkt;
	memset(&pkt, 0, sizeof(pkt));
	pkt.kind = PTS_PKT_TSC;
	pkt.u.tsc = tsc;
	put(s, &pkt);
}

static uint32_t next_rand(struct stream *s)
{
	s->rng = s->rng * 1103515245u + 12345u;
	return s->rng >> 8;
}

/* One random branch or timing packet. */
static void put_random(struct stream *s)
{
	struct pts_packet pkt;
	memset(&pkt, 0, sizeof(pkt));
	switch (next_rand(s) % 4) {
	case 0:
		pkt.kind = PTS_PKT_TNT8;
		pkt.u.tnt.count = 6;
		pkt.u.tnt.bits = next_rand(s) & 0x3f;
		put(s, &pkt);
		break;
	case 1:
		s->ip += 0x10 + next_rand(s) % 0x400;
		put_ip(s, PTS_PKT_TIP, s->ip);
		break;
	case 2:
		pkt.kind = PTS_PKT_CYC;
		pkt.u.cyc = 1 + next_rand(s) % 500;
		put(s, &pkt);
		break;
	default:
		pkt.kind = PTS_PKT_MTC;
		pkt.u.mtc_ctc = (uint8_t)next_rand(s);
		put(s, &pkt);
		break;
	}
}

/* PSB+ at the current end, then random packets up to a few bytes before
 * @until (packets never cross it). */
static void put_psb_block(struct stream *s, size_t until)
{
	put_kind(s, PTS_PKT_PSB);
	put_tsc(s, s->tsc += 1000);
	put_ip(s, PTS_PKT_FUP, s->ip);
	put_kind(s, PTS_PKT_PSBEND);
	while (s->len + 16 < until && !s->failed)
		put_random(s);
}

/* Filler up to @until: one-byte TNT packets that never form a PSB. The
 * decoder skips them when they come before the first PSB, so the golden
 * outputs stay short. */
static void put_filler(struct stream *s, size_t until)
{
	while (s->len < until) {
		uint8_t b = (uint8_t)(next_rand(s) & 0xfc);
		s->buf[s->len++] = b < 4 ? 0x04 : b;
	}
}

/* A stream of @len bytes: filler, then one PSB block from @psb_at to
 * @psb_end, then filler; with @tsc_at, PADs after the block up to a TSC
 * there (a STOP cut 4 bytes later falls inside it). */
static int fill(struct stream *s, size_t len, size_t psb_at, size_t psb_end,
		size_t tsc_at)
{
	memset(s, 0, sizeof(*s));
	s->rng = 7;
	s->ip = 0x401000;
	s->tsc = 0x100000;
	put_filler(s, psb_at);
	put_psb_block(s, psb_end);
	if (tsc_at) {
		while (s->len < tsc_at)
			put_kind(s, PTS_PKT_PAD);
		put_tsc(s, s->tsc += 977);
	}
	put_filler(s, len);
	if (s->failed || s->len != len || (tsc_at && s->buf[tsc_at] != 0x19)) {
		fprintf(stderr, "make_topa_fixtures: stream not as planned\n");
		return -1;
	}
	return 0;
}

static int save(const char *path, const uint8_t *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	int ok = f && fwrite(data, 1, len, f) == len;
	if (f)
		ok &= fclose(f) == 0;
	if (!ok)
		fprintf(stderr, "make_topa_fixtures: cannot write %s\n", path);
	return ok ? 0 : -1;
}

/* Writes @n stream bytes into @spec and saves NAME.desc etc. and
 * NAME.expect.pt = stream[@from, @to). */
static int make(const char *dir, const char *name, const char *spec,
		const struct stream *s, size_t n, size_t from, size_t to,
		int inline_tables)
{
	char path[4096];
	struct pts_topa_writer *w;
	if (n > s->len || to > n || pts_topa_writer_new(spec, &w) < 0) {
		fprintf(stderr, "make_topa_fixtures: %s: bad case\n", name);
		return -1;
	}
	pts_topa_writer_write(w, s->buf, n);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int err = pts_topa_writer_save(w, path, inline_tables);
	pts_topa_writer_free(w);
	if (err < 0) {
		fprintf(stderr, "make_topa_fixtures: cannot save %s\n", path);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s.expect.pt", dir, name);
	return save(path, s->buf + from, to - from);
}

int main(int argc, char **argv)
{
	static struct stream s;
	if (argc != 2) {
		fprintf(stderr, "usage: make_topa_fixtures OUTDIR\n");
		return 2;
	}
	const char *dir = argv[1];
	int err = 0;
	err |= fill(&s, 20000, 19920, 20000, 0) ||
	       make(dir, "ring", "4K,8K/4K", &s, 20000, 20000 - 16384, 20000,
		    0);
	err |= fill(&s, 10000, 8100, 8200, 8188) ||
	       make(dir, "stop", "4K/4K:stop", &s, 10000, 0, 8192, 0);
	err |= fill(&s, 10000, 9920, 10000, 0) ||
	       make(dir, "single", "single:4K", &s, 10000, 10000 - 4096, 10000,
		    0);
	err |= fill(&s, 5000, 0, 120, 0) ||
	       make(dir, "plain", "8K,8K", &s, 5000, 0, 5000, 1);
	return err ? 1 : 0;
}
