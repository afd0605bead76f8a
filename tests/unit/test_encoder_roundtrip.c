/* The encoder is the decoder's inverse.
 *
 * 1. A table of packets with their bytes written out by hand from the SDM
 *    layouts (docs/pt-sgx-facts.md section 1): pts_pkt_encode() must give
 *    exactly these bytes and pts_pkt_parse() must give the packet back.
 *    The table holds every kind, every IP compression and the boundary
 *    values of each field.
 * 2. Payloads that do not fit their field are refused (-PTS_ERR_INVALID);
 *    a buffer one byte short gives -PTS_ERR_AGAIN and stays untouched.
 * 3. The whole table as one stream (PSB first), decoded by the streaming
 *    decoder in random chunks, one packet and one batch at a time.
 * 4. pts_pkt_make_ip() picks the shortest compression that reconstructs
 *    the IP (checked against every shorter one), for hand-picked cases and
 *    seeded random IP sequences, and the decoder reconstructs every IP.
 */
#include <ptscope/packets.h>

#include "check.h"
#include "feed.h"
#include "pkt_compare.h"
#include "rng.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

struct enc_case {
	struct pts_packet pkt; /* size is the expected size */
	uint8_t bytes[16];
};

#define IPP(k, c, p, n) {.kind = k, .size = n, .ipc = c, .u.ip = {p, 0}}
#define EXT(b1) 0x02, b1
#define PSB_BYTES                                                              \
	{0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,                       \
	 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82}

static const struct enc_case cases[] = {
	{{.kind = PTS_PKT_PSB, .size = 16}, PSB_BYTES},
	{{.kind = PTS_PKT_PAD, .size = 1}, {0x00}},
	{{.kind = PTS_PKT_PSBEND, .size = 2}, {EXT(0x23)}},
	{{.kind = PTS_PKT_OVF, .size = 2}, {EXT(0xf3)}},
	{{.kind = PTS_PKT_STOP, .size = 2}, {EXT(0x83)}},
	/* TNT: stop bit above the results, oldest result just below it */
	{{.kind = PTS_PKT_TNT8, .size = 1, .u.tnt = {0x1, 1}}, {0x06}},
	{{.kind = PTS_PKT_TNT8, .size = 1, .u.tnt = {0x0, 1}}, {0x04}},
	{{.kind = PTS_PKT_TNT8, .size = 1, .u.tnt = {0x22, 6}}, {0xc4}},
	{{.kind = PTS_PKT_TNT8, .size = 1, .u.tnt = {0x3f, 6}}, {0xfe}},
	{{.kind = PTS_PKT_TNT64, .size = 8, .u.tnt = {0x1, 1}},
	 {EXT(0xa3), 0x03, 0, 0, 0, 0, 0}},
	{{.kind = PTS_PKT_TNT64, .size = 8, .u.tnt = {0x7fffffffffff, 47}},
	 {EXT(0xa3), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	{{.kind = PTS_PKT_TNT64, .size = 8, .u.tnt = {0x0, 47}},
	 {EXT(0xa3), 0, 0, 0, 0, 0, 0x80}},
	/* IP packets: IPBytes in bits 7:5, then 0/2/4/6/6/8 payload bytes */
	{IPP(PTS_PKT_TIP, 0, 0, 1), {0x0d}},
	{IPP(PTS_PKT_TIP, 1, 0xffff, 3), {0x2d, 0xff, 0xff}},
	{IPP(PTS_PKT_TIP, 2, 0x12345678, 5), {0x4d, 0x78, 0x56, 0x34, 0x12}},
	{IPP(PTS_PKT_TIP, 3, 0xffffffff1000, 7),
	 {0x6d, 0x00, 0x10, 0xff, 0xff, 0xff, 0xff}},
	{IPP(PTS_PKT_TIP, 4, 0x123456789abc, 7),
	 {0x8d, 0xbc, 0x9a, 0x78, 0x56, 0x34, 0x12}},
	{IPP(PTS_PKT_TIP, 6, 0xffffffffffffffff, 9),
	 {0xcd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	{IPP(PTS_PKT_TIP_PGE, 0, 0, 1), {0x11}},
	{IPP(PTS_PKT_TIP_PGE, 2, 0x401000, 5), {0x51, 0x00, 0x10, 0x40, 0x00}},
	{IPP(PTS_PKT_TIP_PGD, 0, 0, 1), {0x01}},
	{IPP(PTS_PKT_TIP_PGD, 1, 0x1002, 3), {0x21, 0x02, 0x10}},
	{IPP(PTS_PKT_FUP, 3, 0x7fff00001000, 7),
	 {0x7d, 0x00, 0x10, 0x00, 0x00, 0xff, 0x7f}},
	{IPP(PTS_PKT_FUP, 6, 0x0123456789abcdef, 9),
	 {0xdd, 0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01}},
	{IPP(PTS_PKT_FUP, 0, 0, 1), {0x1d}},
	/* PIP: byte 2 = CR3[11:5] << 1 | NR, then CR3[51:12] */
	{{.kind = PTS_PKT_PIP, .size = 8, .u.pip = {0xafafa0, 0}},
	 {EXT(0x43), 0xfa, 0xfa, 0x0a, 0x00, 0x00, 0x00}},
	{{.kind = PTS_PKT_PIP, .size = 8, .u.pip = {0xfffffffffffe0, 1}},
	 {EXT(0x43), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	{{.kind = PTS_PKT_PIP, .size = 8, .u.pip = {0, 1}},
	 {EXT(0x43), 0x01, 0, 0, 0, 0, 0}},
	/* MODE: leaf in bits 7:5 */
	{{.kind = PTS_PKT_MODE_EXEC, .size = 2, .u.exec = {1, 0, 0}},
	 {0x99, 0x01}},
	{{.kind = PTS_PKT_MODE_EXEC, .size = 2, .u.exec = {0, 1, 1}},
	 {0x99, 0x06}},
	{{.kind = PTS_PKT_MODE_EXEC, .size = 2}, {0x99, 0x00}},
	{{.kind = PTS_PKT_MODE_TSX, .size = 2, .u.tsx = {1, 0}}, {0x99, 0x21}},
	{{.kind = PTS_PKT_MODE_TSX, .size = 2, .u.tsx = {0, 1}}, {0x99, 0x22}},
	{{.kind = PTS_PKT_MODE_TSX, .size = 2}, {0x99, 0x20}},
	/* timing */
	{{.kind = PTS_PKT_CBR, .size = 4, .u.cbr = {0x24}},
	 {EXT(0x03), 0x24, 0x00}},
	{{.kind = PTS_PKT_CBR, .size = 4, .u.cbr = {0xff}},
	 {EXT(0x03), 0xff, 0x00}},
	{{.kind = PTS_PKT_TSC, .size = 8, .u.tsc = 0x12345},
	 {0x19, 0x45, 0x23, 0x01, 0, 0, 0, 0}},
	{{.kind = PTS_PKT_TSC, .size = 8, .u.tsc = 0xffffffffffffff},
	 {0x19, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	{{.kind = PTS_PKT_MTC, .size = 2, .u.mtc_ctc = 0x94}, {0x59, 0x94}},
	{{.kind = PTS_PKT_TMA, .size = 7, .u.tma = {0x1234, 0x1ff}},
	 {EXT(0x73), 0x34, 0x12, 0x00, 0xff, 0x01}},
	{{.kind = PTS_PKT_TMA, .size = 7, .u.tma = {0xffff, 0}},
	 {EXT(0x73), 0xff, 0xff, 0x00, 0x00, 0x00}},
	/* CYC: 5 bits in byte 0 (bit 2: more), then 7 per byte (bit 0) */
	{{.kind = PTS_PKT_CYC, .size = 1, .u.cyc = 0}, {0x03}},
	{{.kind = PTS_PKT_CYC, .size = 1, .u.cyc = 31}, {0xfb}},
	{{.kind = PTS_PKT_CYC, .size = 2, .u.cyc = 32}, {0x07, 0x02}},
	{{.kind = PTS_PKT_CYC, .size = 2, .u.cyc = 4095}, {0xff, 0xfe}},
	{{.kind = PTS_PKT_CYC, .size = 3, .u.cyc = 4096}, {0x07, 0x01, 0x02}},
	{{.kind = PTS_PKT_CYC, .size = 10, .u.cyc = UINT64_MAX},
	 {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0e}},
	/* VMCS: the pointer's bits 51:12 */
	{{.kind = PTS_PKT_VMCS, .size = 7, .u.vmcs_base = 0xabcd000},
	 {EXT(0xc8), 0xcd, 0xab, 0x00, 0x00, 0x00}},
	{{.kind = PTS_PKT_VMCS, .size = 7, .u.vmcs_base = 0xffffffffff000},
	 {EXT(0xc8), 0xff, 0xff, 0xff, 0xff, 0xff}},
	{{.kind = PTS_PKT_MNT, .size = 11, .u.mnt = 0x2a2242e5d4c3b2a1},
	 {EXT(0xc3), 0x88, 0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0x42, 0x22, 0x2a}},
	/* PTW: byte 1 = IP << 7 | PayloadBytes << 5 | 0x12 */
	{{.kind = PTS_PKT_PTW, .size = 6, .u.ptw = {0x90abcdef, 0, 1}},
	 {EXT(0x92), 0xef, 0xcd, 0xab, 0x90}},
	{{.kind = PTS_PKT_PTW, .size = 10, .u.ptw = {UINT64_MAX, 1, 0}},
	 {EXT(0x32), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	/* power */
	{{.kind = PTS_PKT_EXSTOP, .size = 2}, {EXT(0x62)}},
	{{.kind = PTS_PKT_EXSTOP, .size = 2, .u.exstop = {1}}, {EXT(0xe2)}},
	{{.kind = PTS_PKT_MWAIT, .size = 10, .u.mwait = {0xb, 0x1}},
	 {EXT(0xc2), 0x0b, 0, 0, 0, 0x01, 0, 0, 0}},
	{{.kind = PTS_PKT_PWRE, .size = 4, .u.pwre = {15, 15, 1}},
	 {EXT(0x22), 0x80, 0xff}},
	{{.kind = PTS_PKT_PWRE, .size = 4, .u.pwre = {6, 1, 0}},
	 {EXT(0x22), 0x00, 0x61}},
	{{.kind = PTS_PKT_PWRX, .size = 7, .u.pwrx = {0, 5, 1, 0, 0}},
	 {EXT(0xa2), 0x05, 0x01, 0, 0, 0}},
	{{.kind = PTS_PKT_PWRX, .size = 7, .u.pwrx = {15, 15, 0, 1, 1}},
	 {EXT(0xa2), 0xff, 0x0c, 0, 0, 0}},
	/* event trace */
	{{.kind = PTS_PKT_CFE, .size = 4, .u.cfe = {1, 14, 0}},
	 {EXT(0x13), 0x01, 0x0e}},
	{{.kind = PTS_PKT_CFE, .size = 4, .u.cfe = {31, 0xff, 1}},
	 {EXT(0x13), 0x9f, 0xff}},
	{{.kind = PTS_PKT_EVD, .size = 11, .u.evd = {0xf00baa, 2}},
	 {EXT(0x53), 0x02, 0xaa, 0x0b, 0xf0, 0, 0, 0, 0, 0}},
	{{.kind = PTS_PKT_EVD, .size = 11, .u.evd = {UINT64_MAX, 0x1f}},
	 {EXT(0x53), 0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	/* PEBS via PT: BBP (SZ=1: 4-byte items), BIPs, BEP */
	{{.kind = PTS_PKT_BBP, .size = 3, .u.bbp = {1, 0x1f}},
	 {EXT(0x63), 0x9f}},
	{{.kind = PTS_PKT_BIP, .size = 5, .u.bip = {0xdeadbeef, 31}},
	 {0xfc, 0xef, 0xbe, 0xad, 0xde}},
	{{.kind = PTS_PKT_BEP, .size = 2}, {EXT(0x33)}},
	{{.kind = PTS_PKT_BBP, .size = 3, .u.bbp = {0, 1}}, {EXT(0x63), 0x01}},
	{{.kind = PTS_PKT_BIP, .size = 9, .u.bip = {0x1122334455667788, 0}},
	 {0x04, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11}},
	{{.kind = PTS_PKT_BEP, .size = 2, .u.bep = {1}}, {EXT(0xb3)}},
};

/* pts_pkt_parse's block context for a BIP of this size. */
static unsigned bip_ctx(const struct pts_packet *pkt)
{
	return pkt->kind != PTS_PKT_BIP ? 0 : pkt->size == 5 ? 4 : 8;
}

static void test_table(void)
{
	int seen[PTS_PKT_KIND_COUNT] = {0};
	char why[160];

	for (size_t i = 0; i < COUNT(cases); i++) {
		const struct enc_case *c = &cases[i];
		const char *name = pts_pkt_kind_name(c->pkt.kind);
		uint8_t buf[32];
		struct pts_packet got;

		seen[c->pkt.kind] = 1;
		memset(buf, 0xa5, sizeof(buf));
		const int n = pts_pkt_encode(&c->pkt, buf, sizeof(buf));
		CHECKF(n == c->pkt.size, "#%zu %s: size %d, want %d", i, name, n,
		      c->pkt.size);
		if (n != c->pkt.size)
			continue;
		CHECKF(memcmp(buf, c->bytes, (size_t)n) == 0 && buf[n] == 0xa5,
		      "#%zu %s: bytes differ", i, name);

		/* exactly enough room works, one byte less does not */
		memset(buf, 0xa5, sizeof(buf));
		CHECKF(pts_pkt_encode(&c->pkt, buf, (size_t)n) == n,
		      "#%zu %s: exact cap", i, name);
		memset(buf, 0xa5, sizeof(buf));
		CHECKF(pts_pkt_encode(&c->pkt, buf, (size_t)n - 1) ==
				      -PTS_ERR_AGAIN &&
			      buf[0] == 0xa5,
		      "#%zu %s: short cap", i, name);

		memset(&got, 0x5a, sizeof(got)); /* poison */
		const int r = pts_pkt_parse(c->bytes, (size_t)n,
					    bip_ctx(&c->pkt), &got);
		CHECKF(r == n, "#%zu %s: parse returned %d", i, name, r);
		got.offset = 0;
		if (r == n && c->pkt.kind <= PTS_PKT_FUP &&
		    c->pkt.kind >= PTS_PKT_TIP)
			got.u.ip.ip = 0; /* parse leaves the raw payload */
		if (r == n && pts_pkt_diff(&c->pkt, &got, why, sizeof(why)))
			CHECKF(0, "#%zu %s: parse: %s", i, name, why);
		/* every shorter prefix is truncated, not something else */
		for (int len = 1; len < n; len++)
			CHECKF(pts_pkt_parse(c->bytes, (size_t)len,
					    bip_ctx(&c->pkt),
					    &got) == -PTS_ERR_TRUNCATED,
			      "#%zu %s: %d-byte prefix not truncated", i, name,
			      len);
	}
	for (int k = 0; k < PTS_PKT_KIND_COUNT; k++)
		CHECKF(seen[k], "no encoder case for %s", pts_pkt_kind_name(k));
}

/* Payloads that do not fit are refused and nothing is written. */
static void test_invalid(void)
{
	static const struct pts_packet bad[] = {
		{.kind = PTS_PKT_TNT8, .u.tnt = {0, 0}},
		{.kind = PTS_PKT_TNT8, .u.tnt = {0, 7}},
		{.kind = PTS_PKT_TNT8, .u.tnt = {0x4, 2}},
		{.kind = PTS_PKT_TNT64, .u.tnt = {0, 0}},
		{.kind = PTS_PKT_TNT64, .u.tnt = {0, 48}},
		{.kind = PTS_PKT_TNT64, .u.tnt = {0x2, 1}},
		{.kind = PTS_PKT_TIP, .ipc = 5},
		{.kind = PTS_PKT_FUP, .ipc = 7},
		{.kind = PTS_PKT_TIP, .ipc = 0, .u.ip = {1, 0}},
		{.kind = PTS_PKT_TIP, .ipc = 1, .u.ip = {0x10000, 0}},
		{.kind = PTS_PKT_TIP_PGE, .ipc = 2, .u.ip = {0x100000000, 0}},
		{.kind = PTS_PKT_TIP_PGD, .ipc = 3, .u.ip = {1ull << 48, 0}},
		{.kind = PTS_PKT_FUP, .ipc = 4, .u.ip = {1ull << 48, 0}},
		{.kind = PTS_PKT_PIP, .u.pip = {0x10, 0}},
		{.kind = PTS_PKT_PIP, .u.pip = {1ull << 52, 0}},
		{.kind = PTS_PKT_PIP, .u.pip = {0, 2}},
		{.kind = PTS_PKT_MODE_EXEC, .u.exec = {2, 0, 0}},
		{.kind = PTS_PKT_MODE_EXEC, .u.exec = {0, 0, 2}},
		{.kind = PTS_PKT_MODE_TSX, .u.tsx = {0, 2}},
		{.kind = PTS_PKT_TSC, .u.tsc = 1ull << 56},
		{.kind = PTS_PKT_TMA, .u.tma = {0, 0x200}},
		{.kind = PTS_PKT_VMCS, .u.vmcs_base = 0x1001},
		{.kind = PTS_PKT_VMCS, .u.vmcs_base = 1ull << 52},
		{.kind = PTS_PKT_PTW, .u.ptw = {0, 2, 0}},
		{.kind = PTS_PKT_PTW, .u.ptw = {1ull << 32, 0, 0}},
		{.kind = PTS_PKT_PTW, .u.ptw = {0, 0, 2}},
		{.kind = PTS_PKT_EXSTOP, .u.exstop = {2}},
		{.kind = PTS_PKT_PWRE, .u.pwre = {16, 0, 0}},
		{.kind = PTS_PKT_PWRE, .u.pwre = {0, 0, 2}},
		{.kind = PTS_PKT_PWRX, .u.pwrx = {0, 16, 0, 0, 0}},
		{.kind = PTS_PKT_PWRX, .u.pwrx = {0, 0, 0, 2, 0}},
		{.kind = PTS_PKT_BBP, .u.bbp = {0, 32}},
		{.kind = PTS_PKT_BBP, .u.bbp = {2, 0}},
		{.kind = PTS_PKT_BIP, .u.bip = {0, 32}},
		{.kind = PTS_PKT_BIP, .size = 7},
		{.kind = PTS_PKT_BIP, .size = 5, .u.bip = {1ull << 32, 0}},
		{.kind = PTS_PKT_BEP, .u.bep = {2}},
		{.kind = PTS_PKT_CFE, .u.cfe = {32, 0, 0}},
		{.kind = PTS_PKT_CFE, .u.cfe = {0, 0, 2}},
		{.kind = PTS_PKT_EVD, .u.evd = {0, 0x20}},
		{.kind = PTS_PKT_KIND_COUNT},
	};
	uint8_t buf[32];

	for (size_t i = 0; i < COUNT(bad); i++) {
		memset(buf, 0xa5, sizeof(buf));
		const int r = pts_pkt_encode(&bad[i], buf, sizeof(buf));
		CHECKF(r == -PTS_ERR_INVALID && buf[0] == 0xa5,
		      "bad #%zu (%s): returned %d", i,
		      pts_pkt_kind_name(bad[i].kind), r);
	}
	CHECKF(pts_pkt_encode(NULL, buf, sizeof(buf)) == -PTS_ERR_INVALID,
	      "NULL packet accepted");
}

/* ------------------------------------------------------------------------ */
/* Streams.                                                                 */

struct stream {
	uint8_t *buf;
	size_t len, cap;
	struct pts_packet *want; /* the packets, with offsets and IPs */
	size_t n, max;
};

static void stream_add(struct stream *s, const struct pts_packet *pkt)
{
	if (s->len + 16 > s->cap) {
		s->cap = s->cap ? 2 * s->cap : 4096;
		s->buf = realloc(s->buf, s->cap);
	}
	if (s->n == s->max) {
		s->max = s->max ? 2 * s->max : 256;
		s->want = realloc(s->want, s->max * sizeof(*s->want));
	}
	if (!s->buf || !s->want)
		abort();
	const int r = pts_pkt_encode(pkt, s->buf + s->len, s->cap - s->len);
	CHECKF(r > 0, "stream: cannot encode %s", pts_pkt_kind_name(pkt->kind));
	if (r <= 0)
		return;
	struct pts_packet *w = &s->want[s->n++];
	*w = *pkt;
	w->offset = s->len;
	w->size = (uint8_t)r;
	s->len += (size_t)r;
}

/* Decodes @s with the streaming decoder (random chunks, batch size
 * @batch) and compares packet by packet. */
static void check_stream(const struct stream *s, uint64_t seed, int batch)
{
	struct pts_chunker chunker = {.max = 64};
	struct pts_feed_opts opts = {.batch = batch,
				     .chunk = pts_chunker_next,
				     .chunk_ctx = &chunker,
				     .copy = 1};
	struct pts_event ev;
	char why[160];
	size_t i = 0;

	pts_rng_seed(&chunker.rng, seed);
	struct pts_feed *feed = pts_feed_new(s->buf, s->len, &opts);
	if (!feed)
		abort();
	while (pts_feed_next(feed, &ev) > 0) {
		if (i >= s->n) {
			CHECKF(0, "seed %" PRIu64 ": extra packet %s at %" PRIu64,
			      seed, pts_pkt_kind_name(ev.pkt.kind),
			      ev.pkt.offset);
			break;
		}
		if (pts_pkt_diff(&s->want[i], &ev.pkt, why, sizeof(why))) {
			CHECKF(0, "seed %" PRIu64 " batch %d packet %zu (%s): %s",
			      seed, batch, i,
			      pts_pkt_kind_name(s->want[i].kind), why);
			break;
		}
		i++;
	}
	CHECKF(i == s->n && ev.status == -PTS_ERR_EOS,
	      "seed %" PRIu64 ": %zu of %zu packets, then %s", seed, i, s->n,
	      pts_errname(ev.status));
	pts_feed_free(feed);
}

/* The table as one stream; IP packets get the IP the decoder's last-IP
 * (reset at each PSB) reconstructs. */
static void test_table_stream(void)
{
	struct stream s = {0};
	struct pts_lastip lip;

	pts_lastip_reset(&lip);
	for (size_t i = 0; i < COUNT(cases); i++) {
		struct pts_packet pkt = cases[i].pkt;
		if (pkt.kind == PTS_PKT_PSB)
			pts_lastip_reset(&lip);
		if (pkt.kind >= PTS_PKT_TIP && pkt.kind <= PTS_PKT_FUP &&
		    pts_lastip_update(&lip, pkt.ipc, pkt.u.ip.payload,
				      &pkt.u.ip.ip) == 0)
			pkt.u.ip.ip = 0;
		stream_add(&s, &pkt);
	}
	for (uint64_t seed = 1; seed <= 20; seed++)
		check_stream(&s, seed, (int)(seed % 3 == 0 ? 0 : seed * 7 % 40));
	free(s.buf);
	free(s.want);
}

/* ------------------------------------------------------------------------ */
/* IP compression.                                                          */

/* Size of each IPBytes form, shortest first (SEXT_48 before UPDATE_48: at
 * equal size the CPU form that does not depend on last-IP). */
static const struct {
	unsigned ipc, bytes;
} forms[] = {{PTS_IPC_UPDATE_16, 2}, {PTS_IPC_UPDATE_32, 4},
	     {PTS_IPC_SEXT_48, 6},   {PTS_IPC_UPDATE_48, 6},
	     {PTS_IPC_FULL, 8}};

/* The IP that form @ipc with @ip's low bytes gives against @last. */
static uint64_t reconstruct(unsigned ipc, uint64_t ip, uint64_t last)
{
	struct pts_lastip lip = {last, 1};
	const unsigned bytes = ipc == PTS_IPC_UPDATE_16   ? 2
			       : ipc == PTS_IPC_UPDATE_32 ? 4
			       : ipc == PTS_IPC_FULL	  ? 8
							  : 6;
	const uint64_t payload = bytes == 8 ? ip : ip & ((1ull << (8 * bytes)) - 1);
	uint64_t out = ~ip;
	pts_lastip_update(&lip, ipc, payload, &out);
	return out;
}

/* pts_pkt_make_ip() into @pkt, checked against every shorter form. */
static void check_make_ip(struct pts_packet *out, uint64_t ip,
			  struct pts_lastip *lip, int kind)
{
	const uint64_t last = lip->have ? lip->ip : 0;
	struct pts_packet pkt;
	unsigned want = PTS_IPC_FULL;
	uint8_t buf[16];

	for (size_t f = 0; f < COUNT(forms); f++)
		if (reconstruct(forms[f].ipc, ip, last) == ip) {
			want = forms[f].ipc;
			break;
		}
	pts_pkt_make_ip(&pkt, kind, ip, lip);
	CHECKF(pkt.ipc == want && pkt.kind == kind && pkt.u.ip.ip == ip,
	      "make_ip(%#" PRIx64 ") against %#" PRIx64 ": ipc %u, want %u",
	      ip, last, pkt.ipc, want);
	CHECKF(reconstruct(pkt.ipc, pkt.u.ip.payload, last) == ip,
	      "make_ip(%#" PRIx64 "): payload %#" PRIx64 " does not give it",
	      ip, pkt.u.ip.payload);
	CHECKF(lip->have && lip->ip == ip, "make_ip(%#" PRIx64 "): last-IP",
	      ip);
	CHECKF(pts_pkt_encode(&pkt, buf, sizeof(buf)) == pkt.size,
	      "make_ip(%#" PRIx64 "): size %u", ip, pkt.size);
	*out = pkt;
}

static void test_make_ip_cases(void)
{
	static const struct {
		uint64_t last;
		int have;
		uint64_t ip;
		unsigned ipc;
	} cases_ip[] = {
		/* after a reset: against 0, whatever @ip the struct holds */
		{0xdeadbeefdeadbeef, 0, 0x1234, PTS_IPC_UPDATE_16},
		{0, 0, 0x401000, PTS_IPC_UPDATE_32},
		{0, 0, 0x7fff12345678, PTS_IPC_SEXT_48},
		{0, 0, 0xffffffff81000000, PTS_IPC_SEXT_48},
		{0, 0, 0x0001000000000000, PTS_IPC_FULL},
		{0x401000, 1, 0x401234, PTS_IPC_UPDATE_16},
		{0x401000, 1, 0x401000, PTS_IPC_UPDATE_16},
		{0x401000, 1, 0x7f0000001000, PTS_IPC_SEXT_48},
		{0x0001000000000000, 1, 0x0001234567890000, PTS_IPC_UPDATE_48},
		{0x0001000000000000, 1, 0x0002234567890000, PTS_IPC_FULL},
		{0xffffffff81000000, 1, 0xffffffff81234567, PTS_IPC_UPDATE_32},
	};

	for (size_t i = 0; i < COUNT(cases_ip); i++) {
		struct pts_lastip lip = {cases_ip[i].last,
					 (uint8_t)cases_ip[i].have};
		struct pts_packet pkt;
		pts_pkt_make_ip(&pkt, PTS_PKT_TIP, cases_ip[i].ip, &lip);
		CHECKF(pkt.ipc == cases_ip[i].ipc,
		      "make_ip case %zu: ipc %u, want %u", i, pkt.ipc,
		      cases_ip[i].ipc);
	}
}

/* An IP near @last or anywhere, the way code addresses scatter. */
static uint64_t random_ip(struct pts_rng *rng, uint64_t last)
{
	switch (pts_rng_below(rng, 6)) {
	case 0:
		return last ^ pts_rng_bits(rng, 12);
	case 1:
		return last ^ pts_rng_bits(rng, 28);
	case 2: /* user space */
		return pts_rng_bits(rng, 47);
	case 3: /* kernel space */
		return 0xffff800000000000ull | pts_rng_bits(rng, 47);
	case 4: /* non-canonical near last */
		return last ^ pts_rng_bits(rng, 44) ^ (1ull << 47);
	default:
		return pts_rng_next(rng);
	}
}

/* Random IP sequences with PSBs between them: each choice is the
 * shortest, and the decoder, fed the encoded stream, gives every IP back. */
static void test_make_ip_random(void)
{
	static const int ip_kinds[] = {PTS_PKT_TIP, PTS_PKT_TIP_PGE,
				       PTS_PKT_TIP_PGD, PTS_PKT_FUP};
	struct pts_rng rng;
	struct stream s = {0};
	struct pts_lastip lip;
	const uint64_t seed = 0x5eed0001;

	pts_rng_seed(&rng, seed);
	pts_lastip_reset(&lip);
	for (int i = 0; i < 20000; i++) {
		struct pts_packet pkt;
		if (i % 500 == 0) {
			/* the CPU resets its last-IP when it sends a PSB */
			memset(&pkt, 0, sizeof(pkt));
			pkt.kind = PTS_PKT_PSB;
			pts_lastip_reset(&lip);
		} else {
			const uint64_t ip = random_ip(&rng, lip.ip);
			check_make_ip(&pkt, ip, &lip,
				      ip_kinds[pts_rng_below(&rng, 4)]);
		}
		stream_add(&s, &pkt);
	}
	check_stream(&s, seed, 0);
	check_stream(&s, seed + 1, 64);
	free(s.buf);
	free(s.want);
}

int main(void)
{
	test_table();
	test_invalid();
	test_table_stream();
	test_make_ip_cases();
	test_make_ip_random();
	return pts_check_exit();
}
