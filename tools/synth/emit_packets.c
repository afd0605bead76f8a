/* How the emitter writes packets: the sink, TNT packing, CYC placement, IP
 * compression against last-IP, PSB+ and the timing packets. Which packets
 * a step needs is emit_state.c's business. */
#include "emit_internal.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Sinks.                                                                   */

void syn_sink_init(struct syn_sink *s, FILE *file)
{
	memset(s, 0, offsetof(struct syn_sink, buf));
	s->file = file;
	s->len = 0;
	s->total = 0;
	s->failed = 0;
}

int syn_sink_flush(struct syn_sink *s)
{
	if (!s->len)
		return s->failed ? -PTS_ERR_IO : 0;
	if (s->file) {
		if (fwrite(s->buf, 1, s->len, s->file) != s->len)
			s->failed = 1;
	} else {
		if (s->mem_cap - s->mem_len < s->len) {
			size_t cap = s->mem_cap ? s->mem_cap : 1 << 16;
			while (cap - s->mem_len < s->len)
				cap *= 2;
			uint8_t *grown = realloc(s->mem, cap);
			if (!grown) {
				s->failed = 1;
				s->len = 0;
				return -PTS_ERR_NOMEM;
			}
			s->mem = grown;
			s->mem_cap = cap;
		}
		memcpy(s->mem + s->mem_len, s->buf, s->len);
		s->mem_len += s->len;
	}
	s->len = 0;
	return s->failed ? -PTS_ERR_IO : 0;
}

int syn_sink_write(struct syn_sink *s, const void *p, size_t n)
{
	if (sizeof(s->buf) - s->len < n && syn_sink_flush(s) < 0)
		return -PTS_ERR_IO;
	memcpy(s->buf + s->len, p, n);
	s->len += n;
	s->total += n;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Packets.                                                                 */

/* The first packet generated after an overflow was armed starts the
 * overflow: what was pending goes out, then everything is dropped. */
static int overflow_starts(struct syn_emitter *em)
{
	em->ovf_armed = 0;
	int err = syn_tnt_flush(em);
	em->dropping = 1;
	return err;
}

static int put_raw(struct syn_emitter *em, const struct pts_packet *pkt)
{
	uint8_t b[16];
	int n = pts_pkt_encode(pkt, b, sizeof(b));
	if (n < 0)
		return -PTS_ERR_INTERNAL;
	em->st.packets++;
	if (pkt->kind != PTS_PKT_TSC && pkt->kind != PTS_PKT_TMA &&
	    pkt->kind != PTS_PKT_MTC && pkt->kind != PTS_PKT_CYC &&
	    pkt->kind != PTS_PKT_CBR) {
		em->st.flow_packets++;
		em->st.bind_packets += pkt->kind != PTS_PKT_TNT8 &&
				       pkt->kind != PTS_PKT_TNT64 &&
				       !em->in_psb_plus;
	}
	if (!em->mark_pending &&
	    (pkt->kind == PTS_PKT_TSC || pkt->kind == PTS_PKT_MTC ||
	     pkt->kind == PTS_PKT_CYC)) {
		em->mark_pending = 1;
		em->mark_tsc = em->clk.tsc;
		em->mark_cycles = em->clk.cycles;
	}
	return syn_sink_write(em->sink, b, (size_t)n);
}

int syn_put(struct syn_emitter *em, const struct pts_packet *pkt)
{
	if (em->ovf_armed) {
		int err = overflow_starts(em);
		if (err < 0)
			return err;
	}
	if (em->dropping)
		return 0;
	return put_raw(em, pkt);
}

int syn_simple(struct syn_emitter *em, int kind)
{
	struct pts_packet pkt;
	memset(&pkt, 0, sizeof(pkt));
	pkt.kind = (uint8_t)kind;
	return syn_put(em, &pkt);
}

int syn_tnt_flush(struct syn_emitter *em)
{
	if (!em->tnt_n)
		return 0;
	struct pts_packet pkt;
	int err = 0;
	memset(&pkt, 0, sizeof(pkt));
	if (em->tnt_has_cyc) {
		/* The CYC of a TNT gives the time of its first branch
		 * (SDM 36.3.6.2); it was taken when that bit came. */
		pkt.kind = PTS_PKT_CYC;
		pkt.u.cyc = em->tnt_cyc;
		err = put_raw(em, &pkt);
		memset(&pkt, 0, sizeof(pkt));
	}
	pkt.kind = em->tnt_n <= 6 ? PTS_PKT_TNT8 : PTS_PKT_TNT64;
	pkt.u.tnt.bits = em->tnt_bits;
	pkt.u.tnt.count = em->tnt_n;
	em->tnt_n = 0;
	em->tnt_bits = 0;
	em->tnt_has_cyc = 0;
	if (err < 0)
		return err;
	return put_raw(em, &pkt);
}

/* Cycles since the last CYC if a CYC may go out now (CycThresh), else 0.
 * Taking them resets the counter, as sending the CYC does. */
static uint64_t cyc_take(struct syn_emitter *em)
{
	if (!em->o.cyc || em->dropping)
		return 0;
	uint64_t d = em->clk.cycles - em->last_cyc;
	/* At most one CYC per cycle, and not before the threshold. */
	if (!d || d < em->cyc_thresh)
		return 0;
	em->last_cyc = em->clk.cycles;
	return d;
}

int syn_tnt_add(struct syn_emitter *em, int bit)
{
	if (em->ovf_armed) {
		int err = overflow_starts(em);
		if (err < 0)
			return err;
	}
	if (em->dropping)
		return 0;
	if (!em->tnt_n) {
		em->tnt_cyc = cyc_take(em);
		em->tnt_has_cyc = em->tnt_cyc != 0;
	}
	em->tnt_bits = em->tnt_bits << 1 | (unsigned)bit;
	em->tnt_n++;
	em->st.tnt_bits++;
	if (em->tnt_n == em->tnt_cap)
		return syn_tnt_flush(em);
	return 0;
}

/* Starts the packets of one instruction or event: pending TNT bits go
 * first (any other packet forces them out), then a CYC when the group
 * holds a CYC-eligible packet. */
int syn_group(struct syn_emitter *em, int cyc_eligible)
{
	int err = syn_tnt_flush(em);
	if (err < 0 || !cyc_eligible || em->ovf_armed)
		return err;
	uint64_t d = cyc_take(em);
	if (!d)
		return 0;
	struct pts_packet pkt;
	memset(&pkt, 0, sizeof(pkt));
	pkt.kind = PTS_PKT_CYC;
	pkt.u.cyc = d;
	return syn_put(em, &pkt);
}

static void count_ip(struct syn_emitter *em, int kind)
{
	if (kind == PTS_PKT_TIP)
		em->st.tips++;
	else if (kind == PTS_PKT_TIP_PGE)
		em->st.pges++;
	else if (kind == PTS_PKT_TIP_PGD)
		em->st.pgds++;
	else if (kind == PTS_PKT_FUP)
		em->st.fups++;
}

int syn_ip(struct syn_emitter *em, int kind, uint64_t ip)
{
	struct pts_packet pkt;
	if (em->ovf_armed) {
		int err = overflow_starts(em);
		if (err < 0)
			return err;
	}
	/* Dropped packets must not move last-IP: the CPU compresses
	 * against what it wrote. */
	if (em->dropping)
		return 0;
	if (em->full_ip)
		return syn_ip_full(em, kind, ip);
	pts_pkt_make_ip(&pkt, kind, ip, &em->lip);
	count_ip(em, kind);
	return put_raw(em, &pkt);
}

int syn_ip_full(struct syn_emitter *em, int kind, uint64_t ip)
{
	if (em->dropping)
		return 0;
	struct pts_packet pkt;
	memset(&pkt, 0, sizeof(pkt));
	pkt.kind = (uint8_t)kind;
	uint64_t s48 = (ip & (1ull << 47)) ? ip | 0xffff000000000000ull
					   : ip & 0x0000ffffffffffffull;
	pkt.ipc = s48 == ip ? PTS_IPC_SEXT_48 : PTS_IPC_FULL;
	pkt.u.ip.payload = s48 == ip ? ip & 0x0000ffffffffffffull : ip;
	pkt.u.ip.ip = ip;
	em->lip.ip = ip;
	em->lip.have = 1;
	em->full_ip = 0;
	count_ip(em, kind);
	return syn_put(em, &pkt);
}

int syn_ip_none(struct syn_emitter *em, int kind)
{
	struct pts_packet pkt;
	memset(&pkt, 0, sizeof(pkt));
	pkt.kind = (uint8_t)kind;
	pkt.ipc = PTS_IPC_SUPPRESSED;
	if (!em->dropping && !em->ovf_armed)
		count_ip(em, kind);
	return syn_put(em, &pkt);
}

int syn_mode_exec(struct syn_emitter *em)
{
	struct pts_packet pkt;
	memset(&pkt, 0, sizeof(pkt));
	pkt.kind = PTS_PKT_MODE_EXEC;
	pkt.u.exec.csl = 1; /* the walk runs 64-bit code only */
	if (!em->dropping)
		em->mode_since_psb = 1;
	return syn_put(em, &pkt);
}

void syn_ret_clear(struct syn_emitter *em)
{
	em->ret_n = 0;
}

/* TSC, TMA (with MTCEn) and optionally CBR: what tracing (re-)enabled,
 * a P-state change and PSB+ carry. */
int syn_time_packets(struct syn_emitter *em, int cbr)
{
	struct pts_packet pkt;
	int err = 0;
	if (em->o.tsc) {
		memset(&pkt, 0, sizeof(pkt));
		pkt.kind = PTS_PKT_TSC;
		pkt.u.tsc = em->clk.tsc & ((1ull << 56) - 1);
		err = syn_put(em, &pkt);
		if (err >= 0 && em->o.mtc) {
			uint32_t fc;
			uint64_t ctc = syn_clock_ctc(&em->clk, em->clk.tsc, &fc);
			memset(&pkt, 0, sizeof(pkt));
			pkt.kind = PTS_PKT_TMA;
			pkt.u.tma.ctc = (uint16_t)ctc;
			pkt.u.tma.fc = (uint16_t)(fc & 0x1ff);
			err = syn_put(em, &pkt);
		}
	}
	if (err >= 0 && cbr) {
		memset(&pkt, 0, sizeof(pkt));
		pkt.kind = PTS_PKT_CBR;
		pkt.u.cbr.ratio = em->clk.cbr;
		err = syn_put(em, &pkt);
	}
	return err;
}

/* PIP in PSB+ needs OS=1 and ContextEn (pt-sgx-facts 2.5). */
static int pip_allowed(const struct syn_emitter *em)
{
	return !em->o.user_only &&
	       syn_context_why(em, em->where) == SYN_VISIBLE;
}

/* PSB ... PSBEND, after the pending TNT went out. */
static int psb_plus(struct syn_emitter *em)
{
	struct pts_packet pkt;
	int err;
	em->psb_mark = em->sink->total;
	em->st.psbs++;
	/* The CPU resets its last-IP with every PSB, and only RETs whose
	 * CALL came after the PSB may be compressed (SDM 36.2.1.2). */
	pts_lastip_reset(&em->lip);
	syn_ret_clear(em);
	em->mode_since_psb = 0;
	if ((err = syn_simple(em, PTS_PKT_PSB)) < 0)
		return err;
	if ((err = syn_time_packets(em, 0)) < 0)
		return err;
	if (pip_allowed(em)) {
		memset(&pkt, 0, sizeof(pkt));
		pkt.kind = PTS_PKT_PIP;
		pkt.u.pip.cr3 = em->o.cr3 & ~0x1full & ((1ull << 52) - 1);
		if ((err = syn_put(em, &pkt)) < 0)
			return err;
	}
	memset(&pkt, 0, sizeof(pkt));
	pkt.kind = PTS_PKT_CBR;
	pkt.u.cbr.ratio = em->clk.cbr;
	if ((err = syn_put(em, &pkt)) < 0)
		return err;
	/* MODE.Exec and FUP only while PacketEn: inside a production enclave
	 * the PSB+ carries timing only (pt-sgx-facts 2.5, 4.4). */
	if (em->pe) {
		if ((err = syn_mode_exec(em)) < 0)
			return err;
		if ((err = syn_ip(em, PTS_PKT_FUP, em->cur)) < 0)
			return err;
	}
	return syn_simple(em, PTS_PKT_PSBEND);
}

int syn_psb_plus(struct syn_emitter *em)
{
	int err = syn_tnt_flush(em);
	if (err < 0 || em->dropping)
		return err;
	em->in_psb_plus = 1;
	err = psb_plus(em);
	em->in_psb_plus = 0;
	return err;
}

/* ------------------------------------------------------------------------ */
/* MTC.                                                                     */

/* The TSC at which the crystal clock reaches @ctc. */
static uint64_t tsc_at_ctc(const struct syn_clock *c, uint64_t ctc)
{
	return ctc / c->eax * c->ebx + ((ctc % c->eax) * c->ebx + c->eax - 1) /
						       c->eax;
}

void syn_mtc_reset(struct syn_emitter *em)
{
	unsigned n = em->o.mtc_freq;
	em->mtc_period = syn_clock_ctc(&em->clk, em->clk.tsc, NULL) >> n;
	em->next_mtc_tsc = tsc_at_ctc(&em->clk, (em->mtc_period + 1) << n);
}

/* One MTC for every change of CTC[N+7:N] up to now (SDM 36.4.2.12). */
int syn_mtc_catch_up(struct syn_emitter *em)
{
	if (!em->o.mtc || em->clk.tsc < em->next_mtc_tsc)
		return 0;
	unsigned n = em->o.mtc_freq;
	uint64_t now = syn_clock_ctc(&em->clk, em->clk.tsc, NULL) >> n;
	int err = 0;
	if (em->trigger) {
		/* More than 256 periods at once cannot be told apart; the
		 * decoder needs the next TSC then anyway. */
		uint64_t first = now - em->mtc_period > 256 ? now - 255
							    : em->mtc_period + 1;
		for (uint64_t p = first; p <= now && err >= 0; p++) {
			struct pts_packet pkt;
			err = syn_group(em, 1);
			if (err < 0)
				break;
			memset(&pkt, 0, sizeof(pkt));
			pkt.kind = PTS_PKT_MTC;
			pkt.u.mtc_ctc = (uint8_t)p;
			err = syn_put(em, &pkt);
		}
	}
	em->mtc_period = now;
	em->next_mtc_tsc = tsc_at_ctc(&em->clk, (now + 1) << n);
	return err;
}
