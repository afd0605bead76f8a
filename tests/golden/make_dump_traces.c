/* Writes the small traces the `ptscope dump` golden tests run on, built
 * with the packet encoder (the recipe of fixtures/dump/):
 *
 *   make_dump_traces OUTDIR
 *
 *   all_kinds.pt  every packet kind and every IP compression, two PSB+
 *   garbage.pt    undecodable bytes between two PSBs (error, resync)
 *   truncated.pt  ends inside a TSC packet
 *   leading.pt    bytes before the first PSB (skipped to sync, no error)
 *   nosync.pt     no PSB at all, for --no-sync
 */
#include <ptscope/packets.h>

#include <stdio.h>
#include <string.h>

struct trace {
	uint8_t buf[4096];
	size_t len;
	struct pts_lastip lip; /* the CPU's last-IP, for IP compression */
	int failed;
};

static void put(struct trace *t, const struct pts_packet *pkt)
{
	const int n = pts_pkt_encode(pkt, t->buf + t->len, sizeof(t->buf) - t->len);
	if (n < 0) {
		fprintf(stderr, "make_dump_traces: cannot encode %s: %s\n",
			pts_pkt_kind_name(pkt->kind), pts_strerror(n));
		t->failed = 1;
		return;
	}
	t->len += (size_t)n;
	if (pkt->kind == PTS_PKT_PSB)
		pts_lastip_reset(&t->lip);
}

/* A packet without payload. */
static void put_kind(struct trace *t, int kind)
{
	struct pts_packet pkt;
	memset(&pkt, 0, sizeof(pkt));
	pkt.kind = (uint8_t)kind;
	put(t, &pkt);
}

/* An IP packet compressed as the CPU would. */
static void put_ip(struct trace *t, int kind, uint64_t ip)
{
	struct pts_packet pkt;
	pts_pkt_make_ip(&pkt, kind, ip, &t->lip);
	put(t, &pkt);
}

static void put_raw(struct trace *t, const uint8_t *bytes, size_t n)
{
	memcpy(t->buf + t->len, bytes, n);
	t->len += n;
}

#define PKT(...) (&(struct pts_packet){__VA_ARGS__})

/* A PSB+ as a CPU sends it when tracing is on. */
static void put_psb_plus(struct trace *t, uint64_t fup_ip)
{
	put_kind(t, PTS_PKT_PSB);
	put(t, PKT(.kind = PTS_PKT_TSC, .u.tsc = 0x12345678));
	put(t, PKT(.kind = PTS_PKT_TMA, .u.tma = {0x1234, 0x12}));
	put(t, PKT(.kind = PTS_PKT_CBR, .u.cbr = {0x24}));
	put(t, PKT(.kind = PTS_PKT_PIP, .u.pip = {0x1234000, 0}));
	put(t, PKT(.kind = PTS_PKT_MODE_EXEC, .u.exec = {1, 0, 0}));
	put_ip(t, PTS_PKT_FUP, fup_ip);
	put_kind(t, PTS_PKT_PSBEND);
}

static void make_all_kinds(struct trace *t)
{
	put_psb_plus(t, 0x401000);
	put(t, PKT(.kind = PTS_PKT_VMCS, .u.vmcs_base = 0xabcd000));
	put(t, PKT(.kind = PTS_PKT_MTC, .u.mtc_ctc = 0x94));
	put(t, PKT(.kind = PTS_PKT_CYC, .u.cyc = 0x57));
	put_ip(t, PTS_PKT_TIP_PGE, 0x401000);
	put(t, PKT(.kind = PTS_PKT_TNT8, .u.tnt = {0x6, 3}));
	put(t, PKT(.kind = PTS_PKT_TNT64, .u.tnt = {0x49324c9324cd, 47}));
	put_ip(t, PTS_PKT_TIP, 0x401234);           /* 16-bit update */
	put_ip(t, PTS_PKT_TIP, 0x7fff00001000);     /* sign-extended 48 */
	put_ip(t, PTS_PKT_TIP, 0xffffffff81000000); /* kernel, sext 48 */
	put_ip(t, PTS_PKT_TIP, 0xffffffff81234567); /* 32-bit update */
	put_ip(t, PTS_PKT_FUP, 0xffff000000001000); /* 48-bit update */
	put_ip(t, PTS_PKT_TIP, 0x0001000000000000); /* full */
	put(t, PKT(.kind = PTS_PKT_MODE_TSX, .u.tsx = {1, 0}));
	put_ip(t, PTS_PKT_FUP, 0x0001000000000010);
	put(t, PKT(.kind = PTS_PKT_MODE_TSX, .u.tsx = {0, 1}));
	put_ip(t, PTS_PKT_FUP, 0x0001000000000020);
	put_kind(t, PTS_PKT_TIP_PGD); /* IP suppressed */
	put(t, PKT(.kind = PTS_PKT_MODE_EXEC, .u.exec = {1, 0, 1}));
	put_ip(t, PTS_PKT_TIP_PGE, 0x401000);
	put(t, PKT(.kind = PTS_PKT_PTW, .u.ptw = {0x90abcdef, 0, 1}));
	put_ip(t, PTS_PKT_FUP, 0x401010);
	put(t, PKT(.kind = PTS_PKT_PTW, .u.ptw = {0x1234567890abcdef, 1, 0}));
	put(t, PKT(.kind = PTS_PKT_MWAIT, .u.mwait = {0xb, 0x1}));
	put(t, PKT(.kind = PTS_PKT_PWRE, .u.pwre = {0, 1, 1}));
	put(t, PKT(.kind = PTS_PKT_EXSTOP, .u.exstop = {1}));
	put_ip(t, PTS_PKT_FUP, 0x401020);
	put(t, PKT(.kind = PTS_PKT_PWRX, .u.pwrx = {0, 5, 1, 0, 0}));
	put(t, PKT(.kind = PTS_PKT_EVD, .u.evd = {0x7fff0000dead, 0}));
	put(t, PKT(.kind = PTS_PKT_CFE, .u.cfe = {1, 14, 1}));
	put_ip(t, PTS_PKT_FUP, 0x401030);
	put(t, PKT(.kind = PTS_PKT_CFE, .u.cfe = {3, 0, 0}));
	put(t, PKT(.kind = PTS_PKT_BBP, .u.bbp = {1, 1}));
	put(t, PKT(.kind = PTS_PKT_BIP, .size = 5, .u.bip = {0xdeadbeef, 2}));
	put(t, PKT(.kind = PTS_PKT_BEP, .u.bep = {1}));
	put_ip(t, PTS_PKT_FUP, 0x401040);
	put(t, PKT(.kind = PTS_PKT_MNT, .u.mnt = 0x2a2242e5d4c3b2a1));
	put_kind(t, PTS_PKT_PAD);
	put_kind(t, PTS_PKT_OVF);
	put_ip(t, PTS_PKT_FUP, 0xffffffff81001000);
	put_kind(t, PTS_PKT_STOP);
	/* After this PSB the CPU compresses against 0 (a 32-bit update
	 * here); ptdump's --lastip column keeps its old last-IP and shows
	 * ffffffff00402000 where the decoder has 0x402000. */
	put_psb_plus(t, 0x402000);
	put_ip(t, PTS_PKT_TIP_PGD, 0x402010);
}

static void make_garbage(struct trace *t)
{
	static const uint8_t junk[] = {0xc9, 0x02, 0x82, 0x02, 0x82, 0xd9,
				       0x99, 0x00, 0x12, 0x34};
	put_psb_plus(t, 0x401000);
	put_ip(t, PTS_PKT_TIP_PGE, 0x401000);
	put(t, PKT(.kind = PTS_PKT_TNT8, .u.tnt = {0x5, 3}));
	put_raw(t, junk, sizeof(junk));
	put_psb_plus(t, 0x401100);
	put_kind(t, PTS_PKT_TIP_PGD); /* IP suppressed */
}

static void make_truncated(struct trace *t)
{
	put_psb_plus(t, 0x401000);
	put(t, PKT(.kind = PTS_PKT_TSC, .u.tsc = 0xabcdef));
	t->len -= 4; /* cut the TSC after 4 of its 8 bytes */
}

static void make_leading(struct trace *t)
{
	static const uint8_t junk[] = {0x11, 0x22, 0x02, 0x82, 0x33};
	put_raw(t, junk, sizeof(junk));
	put_psb_plus(t, 0x401000);
	put_ip(t, PTS_PKT_TIP_PGE, 0x401000);
}

static void make_nosync(struct trace *t)
{
	put(t, PKT(.kind = PTS_PKT_TNT8, .u.tnt = {0x1, 1}));
	put_ip(t, PTS_PKT_TIP, 0x401000);
	put(t, PKT(.kind = PTS_PKT_CYC, .u.cyc = 4096));
	put_kind(t, PTS_PKT_PAD);
}

static int write_trace(const char *dir, const char *name,
		       void (*make)(struct trace *))
{
	static struct trace t;
	char path[4096];
	FILE *f;

	memset(&t, 0, sizeof(t));
	pts_lastip_reset(&t.lip);
	make(&t);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(t.buf, 1, t.len, f) != t.len || fclose(f) != 0) {
		perror(path);
		return 1;
	}
	return t.failed;
}

int main(int argc, char **argv)
{
	int failed = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: make_dump_traces OUTDIR\n");
		return 2;
	}
	failed |= write_trace(argv[1], "all_kinds.pt", make_all_kinds);
	failed |= write_trace(argv[1], "garbage.pt", make_garbage);
	failed |= write_trace(argv[1], "truncated.pt", make_truncated);
	failed |= write_trace(argv[1], "leading.pt", make_leading);
	failed |= write_trace(argv[1], "nosync.pt", make_nosync);
	return failed;
}
