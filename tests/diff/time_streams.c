#include "time_streams.h"

#include "check.h"

#include <ptscope/packets.h>

#include <stdlib.h>
#include <string.h>

static void put(struct time_gen *g, const struct pts_packet *p)
{
	int n;

	if (g->cap - g->len < 32) {
		g->cap = g->cap ? 2 * g->cap : 65536;
		g->buf = realloc(g->buf, g->cap);
		if (!g->buf)
			abort();
	}
	n = pts_pkt_encode(p, g->buf + g->len, g->cap - g->len);
	CHECKF(n > 0, "cannot encode a %s", pts_pkt_kind_name(p->kind));
	if (n > 0)
		g->len += (size_t)n;
}

static struct pts_packet mk(int kind)
{
	struct pts_packet p;

	memset(&p, 0, sizeof(p));
	p.kind = (uint8_t)kind;
	return p;
}

static void g_simple(struct time_gen *g, int kind)
{
	struct pts_packet p = mk(kind);

	put(g, &p);
}

/* IP packets carry sign-extended 48-bit IPs: no last-IP context needed,
 * libipt resetting it at OVF and ptscope keeping it read them alike. */
static void g_ip(struct time_gen *g, int kind, uint64_t ip)
{
	struct pts_packet p = mk(kind);

	if (ip) {
		p.ipc = PTS_IPC_SEXT_48;
		p.u.ip.payload = ip & ((1ull << 48) - 1);
	}
	put(g, &p);
}

static void g_tnt(struct time_gen *g, unsigned count)
{
	struct pts_packet p = mk(PTS_PKT_TNT8);

	p.u.tnt.count = (uint8_t)count;
	p.u.tnt.bits = pts_rng_below(&g->rng, 1u << count);
	put(g, &p);
}

static void g_cyc(struct time_gen *g, uint64_t v)
{
	struct pts_packet p = mk(PTS_PKT_CYC);

	p.u.cyc = v;
	put(g, &p);
}

static void g_cbr(struct time_gen *g, uint8_t ratio)
{
	struct pts_packet p = mk(PTS_PKT_CBR);

	g->cbr = ratio;
	p.u.cbr.ratio = ratio;
	put(g, &p);
}

static void g_mtc_payload(struct time_gen *g, uint8_t v)
{
	struct pts_packet p = mk(PTS_PKT_MTC);

	p.u.mtc_ctc = v;
	put(g, &p);
}

/* TSC and TMA from the model clock: the TMA's fast counter is the TSC
 * ticks since the last CTC edge (masked to its 9 bits). */
static void g_tsc_tma(struct time_gen *g)
{
	struct pts_packet p = mk(PTS_PKT_TSC);
	uint64_t edge = g->ctc * g->ebx / g->eax;

	p.u.tsc = g->tsc;
	put(g, &p);
	p = mk(PTS_PKT_TMA);
	p.u.tma.ctc = (uint16_t)g->ctc;
	p.u.tma.fc = (uint16_t)((g->tsc - edge) & 0x1ff);
	put(g, &p);
}

/* Lets @ticks TSC ticks pass: an MTC at each 2^N CTC edge (some lost),
 * with CYCs now and then between them. Over many edges MTCs are lost in
 * bulk (a C-state-like gap). */
static void g_pass(struct time_gen *g, uint64_t ticks, int cyc)
{
	uint64_t end = g->tsc + ticks, step = 1ull << g->n;
	uint64_t ctc_end = end * g->eax / g->ebx;
	int bulk = ctc_end - g->ctc > 300 * step;

	while (!bulk && (g->ctc / step + 1) * step <= ctc_end) {
		uint64_t edge = (g->ctc / step + 1) * step;
		uint64_t at = edge * g->ebx / g->eax;

		g->cycles += (at - g->tsc) * g->cbr / (g->nom ? g->nom : 24);
		g->tsc = at;
		g->ctc = edge;
		if (cyc && g->cycles && pts_rng_below(&g->rng, 3)) {
			g_cyc(g, g->cycles);
			g->cycles = 0;
		}
		if (pts_rng_below(&g->rng, 1000) >= g->drop_mtc)
			g_mtc_payload(g, (uint8_t)(edge >> g->n));
	}
	g->cycles += (end - g->tsc) * g->cbr / (g->nom ? g->nom : 24);
	g->tsc = end;
	g->ctc = ctc_end;
	if (cyc && g->cycles) {
		g_cyc(g, g->cycles);
		g->cycles = 0;
	}
}

static void g_psb(struct time_gen *g, int enabled, uint64_t ip)
{
	g_simple(g, PTS_PKT_PSB);
	g_tsc_tma(g);
	g_cbr(g, g->cbr);
	if (enabled)
		g_ip(g, PTS_PKT_FUP, ip);
	g_simple(g, PTS_PKT_PSBEND);
}

void time_gen_init(struct time_gen *g, const struct time_conf *tc, uint64_t seed)
{
	memset(g, 0, sizeof(*g));
	g->n = tc->mtc_freq;
	g->eax = tc->eax;
	g->ebx = tc->ebx;
	g->nom = 24;
	g->cbr = 24;
	g->tsc = 0x123456789ull;
	g->ctc = g->tsc * g->eax / g->ebx;
	pts_rng_seed(&g->rng, seed);
}

/* The hand-made stream: each timing case in a known place. */
void time_gen_hand(struct time_gen *g)
{
	const uint64_t ip = 0x401000;
	uint64_t step = 1ull << g->n;

	/* PSB+ with TSC, TMA and CBR; tracing off. CYCs before any MTC:
	 * calibrated only from CBR with the nominal ratio, else lost. */
	g_psb(g, 0, 0);
	g_cyc(g, 12);
	g_ip(g, PTS_PKT_TIP_PGE, ip);
	g_cyc(g, 30);
	g_tnt(g, 3);
	/* The first MTCs after the TMA (N = 9: its high CTC bits are
	 * estimated), CYCs in each period: MTC calibration. */
	g_pass(g, step * g->ebx / g->eax / 2, 1);
	g_tnt(g, 2);
	g_pass(g, 3 * step * g->ebx / g->eax, 1);
	g_ip(g, PTS_PKT_TIP, ip + 0x40);
	/* A lost MTC: the next one is two periods on; a CYC spanning it. */
	g->drop_mtc = 1000;
	g_pass(g, step * g->ebx / g->eax, 0);
	g->drop_mtc = 0;
	g_pass(g, step * g->ebx / g->eax, 0);
	g_cyc(g, 700);
	g_tnt(g, 1);
	/* MTCs without CYCs in between, then one CYC over several periods
	 * (pt_time_adjust_cyc). */
	g_pass(g, 2 * step * g->ebx / g->eax, 0);
	g->cycles = 0;
	g_cyc(g, 5000);
	g_tnt(g, 4);
	/* Run the MTC payload over its wrap (0xff -> 0x00). */
	while (((g->ctc >> g->n) & 0xff) < 0xfc) {
		g->ctc = (g->ctc / step + 1) * step;
		g->tsc = g->ctc * g->ebx / g->eax;
	}
	g_simple(g, PTS_PKT_PSB);
	g_tsc_tma(g);
	g_cbr(g, 24);
	g_simple(g, PTS_PKT_PSBEND);
	for (int i = 0; i < 8; i++) {
		g_pass(g, step * g->ebx / g->eax, 1);
		g_tnt(g, 2);
	}
	/* A CBR change outside PSB+: calibration starts over. */
	g_cbr(g, 32);
	g_cyc(g, 100);
	g_tnt(g, 1);
	g_pass(g, 2 * step * g->ebx / g->eax, 1);
	g_tnt(g, 5);
	/* A CBR change inside PSB+ and PSB-to-PSB calibration. */
	g->cbr = 20;
	g_psb(g, 1, ip + 0x80);
	g_pass(g, step * g->ebx / g->eax / 3, 1);
	g_tnt(g, 2);
	g_cyc(g, 400);
	g_psb(g, 1, ip + 0x90);
	g_cyc(g, 60);
	g_tnt(g, 3);
	/* OVF resolved with tracing on: timing before its FUP. */
	g_simple(g, PTS_PKT_OVF);
	g_pass(g, step * g->ebx / g->eax, 1);
	g_ip(g, PTS_PKT_FUP, ip + 0x100);
	g_cyc(g, 77);
	g_tnt(g, 2);
	g_pass(g, 2 * step * g->ebx / g->eax, 1);
	g_ip(g, PTS_PKT_TIP, ip + 0x140);
	/* OVF resolved with tracing off: TIP.PGE later. */
	g_simple(g, PTS_PKT_OVF);
	g_cyc(g, 3);
	g_pass(g, step * g->ebx / g->eax, 0);
	g_ip(g, PTS_PKT_TIP_PGE, ip + 0x180);
	g_cyc(g, 90);
	g_tnt(g, 1);
	/* A TSC outside PSB+ (time was lost), then on. */
	g->tsc += 1000000;
	g->ctc = g->tsc * g->eax / g->ebx;
	g_tsc_tma(g);
	g_cbr(g, 28);
	g_cyc(g, 44);
	g_tnt(g, 3);
	g_pass(g, 3 * step * g->ebx / g->eax, 1);
	g_simple(g, PTS_PKT_PAD);
	g_ip(g, PTS_PKT_TIP_PGD, 0);
	g_pass(g, step * g->ebx / g->eax, 1);
	g_psb(g, 0, 0);
}

/* Calibration order: MTC periods calibrate, then the next PSB+'s TSC
 * measures the same cycles against TSC ticks; the CYC after it shows which
 * ratio is in force. The ticks per cycle differ on purpose (20 cycles
 * spent outside any MTC period count only for PSB-to-PSB). */
void time_gen_cal_order(struct time_gen *g)
{
	uint64_t period = (1ull << g->n) * g->ebx / g->eax;

	g_psb(g, 1, 0x401000);
	g_pass(g, 3 * period, 1);
	g_cyc(g, 20);
	g_tnt(g, 1);
	g->tsc += 5 * period;
	g->ctc = g->tsc * g->eax / g->ebx;
	g_psb(g, 1, 0x401000);
	g_cyc(g, 10);
	g_tnt(g, 1);
	g_pass(g, period / 2, 1);
	g_tnt(g, 1);
	/* The same without MTCs (all lost) after a CBR outside PSB+ reset
	 * calibration: PSB-to-PSB is the only reference left. */
	g_cbr(g, 30);
	g->drop_mtc = 1000;
	g_psb(g, 1, 0x401000);
	g_pass(g, 2 * period, 1);
	g_cyc(g, 20);
	g_psb(g, 1, 0x401000);
	g_cyc(g, 10);
	g_tnt(g, 1);
}

/* A random stream from the model clock. */
void time_gen_random(struct time_gen *g, unsigned steps)
{
	uint64_t ip = 0x400000;
	int enabled = 1;

	g->drop_mtc = 20;
	g_psb(g, 1, ip);
	for (unsigned i = 0; i < steps; i++) {
		uint64_t r = pts_rng_below(&g->rng, 1000);
		uint64_t period = (1ull << g->n) * g->ebx / g->eax;

		if (r < 450) {
			g_pass(g, pts_rng_below(&g->rng, 2 * period + 1),
			       pts_rng_below(&g->rng, 4) != 0);
		} else if (r < 700) {
			if (enabled)
				g_tnt(g, 1 + (unsigned)pts_rng_below(&g->rng, 6));
		} else if (r < 800) {
			if (enabled)
				g_ip(g, PTS_PKT_TIP, ip += 0x10);
		} else if (r < 830) {
			g_cyc(g, pts_rng_below(&g->rng, 1u << 20));
		} else if (r < 860) {
			g_cbr(g, (uint8_t)(8 + pts_rng_below(&g->rng, 40)));
		} else if (r < 880) {
			g_psb(g, enabled, ip);
		} else if (r < 890) {
			/* A frequency change: TSC, TMA, CBR outside PSB+. */
			g_tsc_tma(g);
			g_cbr(g, (uint8_t)(8 + pts_rng_below(&g->rng, 40)));
		} else if (r < 900) {
			g_simple(g, PTS_PKT_OVF);
			g_pass(g, pts_rng_below(&g->rng, 3 * period), 1);
			if (pts_rng_below(&g->rng, 2)) {
				g_ip(g, PTS_PKT_FUP, ip);
				enabled = 1;
			} else {
				g_ip(g, PTS_PKT_TIP_PGE, ip);
				enabled = 1;
			}
		} else if (r < 915) {
			if (enabled) {
				g_ip(g, PTS_PKT_TIP_PGD, 0);
				enabled = 0;
			} else {
				g_ip(g, PTS_PKT_TIP_PGE, ip);
				enabled = 1;
			}
		} else if (r < 925) {
			/* A long gap: MTCs lost in bulk. */
			g_pass(g, pts_rng_below(&g->rng, 600 * period), 1);
		} else {
			g_simple(g, PTS_PKT_PAD);
		}
	}
}
