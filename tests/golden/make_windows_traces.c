/* Writes the traces the `ptscope windows` golden cases run on (the recipe
 * of fixtures/windows/enclave*.exp and violations*.exp), built with the
 * encoder through tests/unit/windows_trace.c:
 *
 *   enclave.pt     user-only trace of a program calling a production
 *                  enclave (ELRANGE 0x7f0000000000-0x7f0000100000, AEP
 *                  0x401100): a syscall, EENTER/EEXIT, EENTER/AEX, the
 *                  ERESUME and EEXIT, with MTC timing (CPUID 0x15 2:200,
 *                  MTCFreq 3), a PSB+ and a CBR change inside a gap;
 *   violations.pt  the same enclave, with a leaked enclave IP, a TNT inside
 *                  an enclave gap, an exit at a wrong address and an
 *                  overflow inside an enclave gap;
 *   wild-tsc.pt    two windows and a gap, each over 2^63 TSC ticks long:
 *                  the summary's tick sums go past 64 bits.
 *
 * usage: make_windows_traces OUTDIR
 */
#include "windows_trace.h"

#include <stdio.h>
#include <string.h>

#define CODE 0x401000ull
#define SITE 0x401050ull
#define AEP 0x401100ull
#define ENCL 0x7f0000000000ull

static uint8_t mtc = 0x47;

static void tick(struct wtrace *t, int n)
{
	while (n--)
		wt_mtc(t, mtc++);
}

/* A PSB+ whose TSC and TMA agree with the MTCs sent so far: the crystal
 * clock (CTC) stands at the last MTC's value, 100 TSC ticks per CTC tick,
 * CTC 0x234 at TSC 1000000. */
static void header(struct wtrace *t, int with_fup, uint64_t ip)
{
	uint16_t ctc = mtc == 0x47 ? 0x234 : (uint16_t)((mtc - 1) << 3);

	wt_psb(t);
	wt_tsc(t, 1000000 + ((uint64_t)ctc - 0x234) * 100);
	wt_tma(t, ctc, 0);
	wt_cbr(t, 24);
	if (with_fup) {
		wt_mode64(t);
		wt_ip(t, PTS_PKT_FUP, ip);
	}
	wt_plain(t, PTS_PKT_PSBEND);
}

/* FUP(@at) + TIP.PGD(): tracing stops at an ENCLU (or an interrupt). */
static void stop_at(struct wtrace *t, uint64_t at)
{
	wt_ip(t, PTS_PKT_FUP, at);
	wt_pgd0(t);
}

static void make_enclave(struct wtrace *t)
{
	wt_init(t);
	mtc = 0x47;
	header(t, 1, CODE);
	wt_tnt(t, 4);
	tick(t, 1);
	wt_pgd0(t); /* SYSCALL */
	tick(t, 1);
	wt_ip(t, PTS_PKT_TIP_PGE, CODE + 0x12);
	wt_tnt(t, 3);
	wt_ip(t, PTS_PKT_TIP, SITE - 0x30);
	stop_at(t, SITE); /* EENTER */
	tick(t, 5);
	wt_ip(t, PTS_PKT_TIP_PGE, SITE + 3); /* EEXIT */
	wt_tnt(t, 2);
	stop_at(t, SITE); /* EENTER */
	tick(t, 2);
	header(t, 0, 0); /* a PSB+ inside the enclave gap */
	wt_cbr(t, 20);
	tick(t, 3);
	wt_ip(t, PTS_PKT_TIP_PGE, AEP); /* AEX */
	stop_at(t, AEP); /* ERESUME */
	tick(t, 4);
	wt_ip(t, PTS_PKT_TIP_PGE, SITE + 3); /* EEXIT */
	wt_tnt(t, 5);
	tick(t, 1);
	wt_pgd0(t); /* exit(2) */
}

static void make_violations(struct wtrace *t)
{
	wt_init(t);
	mtc = 0x47;
	header(t, 1, CODE);
	wt_tnt(t, 2);
	wt_ip(t, PTS_PKT_TIP, ENCL + 0x1230); /* leak */
	wt_ip(t, PTS_PKT_TIP, SITE - 0x30);
	stop_at(t, SITE);
	wt_tnt(t, 3); /* flow inside the gap */
	tick(t, 2);
	wt_ip(t, PTS_PKT_TIP_PGE, AEP);
	stop_at(t, AEP);
	tick(t, 2);
	wt_ip(t, PTS_PKT_TIP_PGE, 0x403000); /* neither AEP nor EEXIT */
	wt_tnt(t, 1);
	stop_at(t, SITE);
	wt_plain(t, PTS_PKT_OVF); /* overflow inside the gap */
	tick(t, 1);
	wt_ip(t, PTS_PKT_TIP_PGE, AEP);
	wt_tnt(t, 1);
}

static int write_trace(const char *dir, const char *name,
		       const struct wtrace *t)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || t->failed || fwrite(t->buf, 1, t->len, f) != t->len) {
		perror(path);
		if (f)
			fclose(f);
		return 1;
	}
	return fclose(f) != 0;
}

int main(int argc, char **argv)
{
	static struct wtrace t;
	int bad = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: make_windows_traces OUTDIR\n");
		return 2;
	}
	make_enclave(&t);
	bad |= write_trace(argv[1], "enclave.pt", &t);
	make_violations(&t);
	bad |= write_trace(argv[1], "violations.pt", &t);
	wt_make_wild_tsc(&t);
	bad |= write_trace(argv[1], "wild-tsc.pt", &t);
	return bad;
}
