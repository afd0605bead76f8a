/* Breaks the synthesized production-enclave trace
 * (fixtures/synth/enclave-production/trace.pt) once per verification rule,
 * for the golden cases of fixtures/windows/broken/ (`ptscope windows
 * --verify` must exit 1 on each). Each case is one edit of the original
 * bytes at a packet boundary (offsets from `ptscope dump` of it):
 *
 *   leak.pt       the TIP at 0x28 (to 0x400320) becomes TIP(0x500040), an
 *                 IP inside ELRANGE, then TIP(0x400320): enclave-ip-leak;
 *   tnt-in-gap.pt a TNT (one taken bit) between the TIP.PGD at 0x24 and the
 *                 TIP.PGE at 0x25: flow-in-enclave-gap;
 *   wrong-pge.pt  the TIP.PGE at 0x25 lands on 0x400150 instead of the
 *                 EEXIT target 0x400136: enclave-exit-unexpected;
 *   lost-pge.pt   that TIP.PGE is gone (the gap is cut: tracing never
 *                 comes back on, yet a TIP follows): flow-in-enclave-gap;
 *   ovf-in-gap.pt an OVF inside that gap: ovf-in-enclave-gap;
 *   not-enclu.pt  the second EENTER's FUP (0x3a) points at 0x40012e, the
 *                 MOV before the ENCLU: with images, entry-not-enclu;
 *   unexplained.pt the TIP at 0x28 (the RET at 0x400137 to 0x400320)
 *                 becomes TIP.PGD() + TIP.PGE(0x400320): with images the
 *                 bare TIP.PGD binds to that RET, a near branch, which can
 *                 only leave an IP filter range, and none is configured
 *                 (and with User=1 no ring is left): unexplained-gap;
 *   retstack.pt   that TIP and the TNT after it (0x2b, three taken bits)
 *                 become OVF + FUP(0x400136) (the resync, after which no
 *                 RET may be compressed, SDM 36.4.2.16) and one TNT with
 *                 four taken bits: the first, for the RET at 0x400137,
 *                 compressed right after the resync, finds the return
 *                 stack empty (SDM 36.2.1.2): with images, retstack-empty.
 *
 * usage: make_windows_broken TRACE OUTDIR
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct edit {
	const char *name;
	size_t at;       /* offset of the edit */
	size_t del;      /* bytes removed there */
	uint8_t ins[16]; /* bytes inserted there */
	size_t n_ins;
};

/* TIP with IPBytes 011: 48 bits, sign-extended (SDM Table 36-18). */
#define TIP48(ip)                                                              \
	0x6d, (uint8_t)(ip), (uint8_t)((ip) >> 8), (uint8_t)((ip) >> 16),     \
		(uint8_t)((ip) >> 24), 0, 0

/* FUP with IPBytes 011. */
#define FUP48(ip)                                                              \
	0x7d, (uint8_t)(ip), (uint8_t)((ip) >> 8), (uint8_t)((ip) >> 16),     \
		(uint8_t)((ip) >> 24), 0, 0

static const struct edit edits[] = {
	{"leak", 0x28, 3, {TIP48(0x500040), TIP48(0x400320)}, 14},
	{"tnt-in-gap", 0x25, 0, {0x06}, 1},
	{"wrong-pge", 0x26, 1, {0x50}, 1},
	{"lost-pge", 0x25, 3, {0}, 0},
	{"ovf-in-gap", 0x25, 0, {0x02, 0xf3}, 2},
	{"not-enclu", 0x3b, 1, {0x2e}, 1},
	/* TIP.PGD (IPBytes 000), TIP.PGE (IPBytes 001: 0x0320 on the last-IP
	 * 0x400136). */
	{"unexplained", 0x28, 3, {0x01, 0x31, 0x20, 0x03}, 4},
	/* OVF, FUP (IPBytes 011), TNT.8 (four taken bits). */
	{"retstack", 0x28, 4, {0x02, 0xf3, FUP48(0x400136), 0x3e}, 10},
};

static int write_case(const char *dir, const struct edit *e,
		      const uint8_t *buf, size_t len)
{
	char path[4096];
	FILE *f;

	if (e->at + e->del > len)
		return -1;
	snprintf(path, sizeof(path), "%s/%s.pt", dir, e->name);
	f = fopen(path, "wb");
	if (!f)
		return -1;
	fwrite(buf, 1, e->at, f);
	fwrite(e->ins, 1, e->n_ins, f);
	fwrite(buf + e->at + e->del, 1, len - e->at - e->del, f);
	return fclose(f);
}

int main(int argc, char **argv)
{
	static uint8_t buf[1 << 16];
	size_t len;
	FILE *f;

	if (argc != 3) {
		fprintf(stderr, "usage: make_windows_broken TRACE OUTDIR\n");
		return 2;
	}
	f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++)
		if (write_case(argv[2], &edits[i], buf, len) < 0) {
			fprintf(stderr, "%s: cannot write\n", edits[i].name);
			return 1;
		}
	return 0;
}
