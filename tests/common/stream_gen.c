#include "stream_gen.h"

#include "rng.h"

#include <string.h>

const struct pts_gen_profile pts_gen_all_kinds = {
	.name = "all-kinds",
	.weight =
		{
			[ppt_pad] = 2,	  [ppt_psb] = 2,     [ppt_psbend] = 2,
			[ppt_fup] = 2,	  [ppt_tip] = 2,     [ppt_tip_pge] = 2,
			[ppt_tip_pgd] = 2, [ppt_tnt_8] = 2,   [ppt_tnt_64] = 2,
			[ppt_mode] = 4,	  [ppt_pip] = 2,     [ppt_vmcs] = 2,
			[ppt_cbr] = 2,	  [ppt_tsc] = 2,     [ppt_tma] = 2,
			[ppt_mtc] = 2,	  [ppt_cyc] = 2,     [ppt_stop] = 2,
			[ppt_ovf] = 2,	  [ppt_mnt] = 2,     [ppt_exstop] = 2,
			[ppt_mwait] = 2,   [ppt_pwre] = 2,    [ppt_pwrx] = 2,
			[ppt_ptw] = 2,
		},
	.ipc_weight = {1, 1, 1, 1, 1, 0, 1},
	.psb_period = 1024,
	.poke_bits = 1,
};

const struct pts_gen_profile pts_gen_capture_like = {
	.name = "capture-like",
	.weight =
		{
			[ppt_tnt_8] = 550, [ppt_tip] = 120, [ppt_cyc] = 100,
			[ppt_pad] = 60,	   [ppt_mtc] = 40,  [ppt_tnt_64] = 20,
			[ppt_fup] = 10,	   [ppt_tip_pge] = 5, [ppt_tip_pgd] = 5,
			[ppt_mode] = 5,	   [ppt_tsc] = 2,   [ppt_cbr] = 1,
		},
	.ipc_weight = {5, 60, 30, 3, 0, 0, 2},
	.psb_period = 4096,
	.poke_bits = 0,
};

struct gen {
	struct pts_rng rng;
	const struct pts_gen_profile *profile;
	struct pt_encoder *enc;
	uint8_t *buf;
	uint32_t type_total, ipc_total;
	struct pts_gen_result *result;
	uint64_t max_packets;
	uint64_t last_psb;
	/* hw_timing: the clock so far */
	uint64_t tsc;
	uint8_t mtc;
};

static unsigned pick(struct gen *g, const uint16_t *weight, unsigned n,
		     uint32_t total)
{
	uint64_t x = pts_rng_below(&g->rng, total);

	for (unsigned i = 0; i < n; i++) {
		if (x < weight[i])
			return i;
		x -= weight[i];
	}
	return 0;
}

static unsigned bit(struct gen *g)
{
	return (unsigned)pts_rng_bits(&g->rng, 1);
}

static void random_ip(struct gen *g, struct pt_packet *p)
{
	p->payload.ip.ipc = (enum pt_ip_compression)pick(
		g, g->profile->ipc_weight, 7, g->ipc_total);
	/* libipt's encoder writes only the bytes the compression keeps. */
	p->payload.ip.ip = pts_rng_next(&g->rng);
}

static void random_tnt(struct gen *g, struct pt_packet *p, unsigned max_bits)
{
	/* bit_size 0 would encode a bare stop bit, which is not a TNT. */
	p->payload.tnt.bit_size = (uint8_t)(1 + pts_rng_below(&g->rng, max_bits));
	p->payload.tnt.payload = pts_rng_bits(&g->rng, p->payload.tnt.bit_size);
}

static void random_mode(struct gen *g, struct pt_packet *p)
{
	if (bit(g)) {
		p->payload.mode.leaf = pt_mol_tsx;
		p->payload.mode.bits.tsx.intx = bit(g);
		p->payload.mode.bits.tsx.abrt = bit(g);
	} else {
		p->payload.mode.leaf = pt_mol_exec;
		p->payload.mode.bits.exec.csl = bit(g);
		p->payload.mode.bits.exec.csd = bit(g);
	}
}

static void random_power(struct gen *g, struct pt_packet *p)
{
	switch (p->type) {
	case ppt_exstop:
		p->payload.exstop.ip = bit(g);
		break;
	case ppt_mwait:
		p->payload.mwait.hints = (uint32_t)pts_rng_bits(&g->rng, 32);
		p->payload.mwait.ext = (uint32_t)pts_rng_bits(&g->rng, 32);
		break;
	case ppt_pwre:
		p->payload.pwre.state = (uint8_t)pts_rng_bits(&g->rng, 4);
		p->payload.pwre.sub_state = (uint8_t)pts_rng_bits(&g->rng, 4);
		p->payload.pwre.hw = bit(g);
		break;
	default: /* ppt_pwrx */
		p->payload.pwrx.last = (uint8_t)pts_rng_bits(&g->rng, 4);
		p->payload.pwrx.deepest = (uint8_t)pts_rng_bits(&g->rng, 4);
		p->payload.pwrx.interrupt = bit(g);
		p->payload.pwrx.store = bit(g);
		p->payload.pwrx.autonomous = bit(g);
		break;
	}
}

/* hw_timing: the payload of timing packet @p as a running clock gives it
 * (the time moves on by up to 4095 cycles a packet; an MTC every CTC
 * period, CTC bit 3 up as perf's default mtc_period=3 has it, one
 * core frequency). */
static void clock_payload(struct gen *g, struct pt_packet *p)
{
	switch (p->type) {
	case ppt_tsc:
		g->tsc += 1 + pts_rng_bits(&g->rng, 12);
		p->payload.tsc.tsc = g->tsc & ((1ull << 56) - 1);
		break;
	case ppt_tma:
		p->payload.tma.ctc = (uint16_t)(g->mtc << 3);
		break;
	case ppt_mtc:
		p->payload.mtc.ctc = ++g->mtc;
		break;
	case ppt_cyc:
		p->payload.cyc.value = pts_rng_bits(
			&g->rng, (unsigned)pts_rng_below(&g->rng, 13));
		break;
	case ppt_cbr: /* no frequency change */
		p->payload.cbr.ratio = 32;
		break;
	default:
		break;
	}
}

static void random_packet(struct gen *g, enum pt_packet_type type,
			  struct pt_packet *p)
{
	memset(p, 0, sizeof(*p));
	p->type = type;
	switch (type) {
	case ppt_fup:
	case ppt_tip:
	case ppt_tip_pge:
	case ppt_tip_pgd:
		random_ip(g, p);
		break;
	case ppt_tnt_8:
		random_tnt(g, p, 6);
		break;
	case ppt_tnt_64:
		random_tnt(g, p, 47);
		break;
	case ppt_mode:
		random_mode(g, p);
		break;
	case ppt_pip:
		/* CR3 bits 51:5 travel in the packet. */
		p->payload.pip.cr3 = pts_rng_next(&g->rng) & 0x000fffffffffffe0ull;
		p->payload.pip.nr = bit(g);
		break;
	case ppt_vmcs:
		p->payload.vmcs.base = pts_rng_next(&g->rng) & 0x000ffffffffff000ull;
		break;
	case ppt_cbr:
		p->payload.cbr.ratio = (uint8_t)pts_rng_bits(&g->rng, 8);
		break;
	case ppt_tsc:
		p->payload.tsc.tsc = pts_rng_bits(&g->rng, 56);
		break;
	case ppt_tma:
		p->payload.tma.ctc = (uint16_t)pts_rng_bits(&g->rng, 16);
		p->payload.tma.fc = (uint16_t)pts_rng_bits(&g->rng, 9);
		break;
	case ppt_mtc:
		p->payload.mtc.ctc = (uint8_t)pts_rng_bits(&g->rng, 8);
		break;
	case ppt_cyc:
		/* Up to 61 bits: 9 bytes, the longest CYC libipt 2.0.5 reads
		 * back (its encoder writes longer ones its decoder rejects). */
		p->payload.cyc.value =
			pts_rng_bits(&g->rng, (unsigned)pts_rng_below(&g->rng, 62));
		break;
	case ppt_mnt:
		p->payload.mnt.payload = pts_rng_next(&g->rng);
		break;
	case ppt_exstop:
	case ppt_mwait:
	case ppt_pwre:
	case ppt_pwrx:
		random_power(g, p);
		break;
	case ppt_ptw:
		p->payload.ptw.plc = (uint8_t)pts_rng_below(&g->rng, 2);
		p->payload.ptw.payload =
			pts_rng_bits(&g->rng, p->payload.ptw.plc ? 64 : 32);
		p->payload.ptw.ip = bit(g);
		break;
	default: /* pad, psb, psbend, stop, ovf: no payload */
		break;
	}
	if (g->profile->hw_timing)
		clock_payload(g, p);
}

/* Sets bits libipt 2.0.5 does not read in the packet just written at
 * @pkt: decoders must ignore reserved bits, and ptscope must read the IF
 * and HW bits the SDM defines there. */
static void poke_bits(struct gen *g, const struct pt_packet *p, uint8_t *pkt)
{
	switch (p->type) {
	case ppt_mode:
		/* Exec: bit 2 IF, bits 4:3 reserved; TSX: bits 4:2 reserved. */
		pkt[1] |= (uint8_t)(pts_rng_bits(&g->rng, 3) << 2);
		break;
	case ppt_cbr:
		pkt[3] = (uint8_t)pts_rng_bits(&g->rng, 8);
		break;
	case ppt_pwre:
		/* Byte 2: bit 7 HW; the rest reserved (libipt's bit 3 kept). */
		pkt[2] |= (uint8_t)(pts_rng_bits(&g->rng, 8) & 0xf7);
		break;
	case ppt_pwrx:
		/* Byte 3 bit 1 and bits 7:4, bytes 4..6: reserved. */
		pkt[3] |= (uint8_t)(pts_rng_bits(&g->rng, 8) & 0xf2);
		pkt[4] = (uint8_t)pts_rng_bits(&g->rng, 8);
		pkt[5] = (uint8_t)pts_rng_bits(&g->rng, 8);
		pkt[6] = (uint8_t)pts_rng_bits(&g->rng, 8);
		break;
	default:
		break;
	}
}

/* Returns 1 when written, 0 when it does not fit or enough were written,
 * or a negative libipt error. */
static int put(struct gen *g, const struct pt_packet *p)
{
	uint64_t at = 0;
	int n;

	if (g->result->packets >= g->max_packets)
		return 0;
	pt_enc_get_offset(g->enc, &at);
	n = pt_enc_next(g->enc, p);
	if (n == -pte_eos)
		return 0;
	if (n < 0)
		return n;
	if (g->profile->poke_bits && pts_rng_below(&g->rng, 2))
		poke_bits(g, p, g->buf + at);
	if (p->type == ppt_psb)
		g->last_psb = at;
	g->result->packets++;
	g->result->per_type[p->type]++;
	g->result->bytes = (size_t)at + (size_t)n;
	return 1;
}

/* PSB+ as a CPU writes it: timing, frequency, mode and the current IP. */
static int put_psb_plus(struct gen *g)
{
	static const enum pt_packet_type seq[] = {ppt_psb, ppt_tsc, ppt_tma,
						  ppt_cbr, ppt_mode, ppt_fup,
						  ppt_psbend};
	struct pt_packet p;
	int status = 1;

	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]) && status == 1;
	     i++) {
		random_packet(g, seq[i], &p);
		if (seq[i] == ppt_mode) {
			p.payload.mode.leaf = pt_mol_exec;
			p.payload.mode.bits.exec.csl = 1;
			p.payload.mode.bits.exec.csd = 0;
		} else if (seq[i] == ppt_fup) {
			p.payload.ip.ipc = pt_ipc_sext_48;
		}
		status = put(g, &p);
	}
	return status;
}

int pts_gen_stream(uint8_t *buf, size_t cap, uint64_t max_packets,
		   const struct pts_gen_profile *profile, uint64_t seed,
		   struct pts_gen_result *result)
{
	struct pt_config config;
	struct gen g;
	int status;

	memset(result, 0, sizeof(*result));
	memset(&g, 0, sizeof(g));
	pts_rng_seed(&g.rng, seed);
	g.profile = profile;
	g.buf = buf;
	g.result = result;
	g.max_packets = max_packets;
	for (unsigned i = 0; i < PTS_GEN_TYPES; i++)
		g.type_total += profile->weight[i];
	for (unsigned i = 0; i < 7; i++)
		g.ipc_total += profile->ipc_weight[i];
	if (!g.type_total || !g.ipc_total)
		return -pte_invalid;

	pt_config_init(&config);
	config.begin = buf;
	config.end = buf + cap;
	g.enc = pt_alloc_encoder(&config);
	if (!g.enc)
		return -pte_nomem;

	status = put_psb_plus(&g);
	while (status == 1) {
		struct pt_packet p;

		if (profile->psb_period &&
		    result->bytes - g.last_psb >= profile->psb_period) {
			status = put_psb_plus(&g);
			continue;
		}
		random_packet(&g, (enum pt_packet_type)pick(&g, profile->weight,
							    PTS_GEN_TYPES,
							    g.type_total),
			      &p);
		status = put(&g, &p);
	}
	pt_free_encoder(g.enc);
	return status < 0 ? status : 0;
}
