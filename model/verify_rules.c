/* The verification rules that need packets, configuration and the enclave
 * map only (docs/pt-sgx-facts.md 4.7). Each violation is a record with the
 * rule's name, the stream offset and a one-line detail. Rules decided at a
 * gap's close live in windows_classify.c; the ones here fire on a packet.
 */
#include "windows_internal.h"

#include <stdarg.h>
#include <stdio.h>

void pts_win_violation(struct pts_win_model *m, int rule, uint64_t offset,
		       int has_ip, uint64_t ip, const char *fmt, ...)
{
	struct pts_win_record *rec;
	va_list ap;

	/* Nobody reads it: not even its detail is formatted (about 50 ns,
	 * a record every ~150 bytes on noisy traces). */
	if (m->no_verify)
		return;
	rec = pts_win_push(m, PTS_REC_VIOLATION);
	rec->rule = (uint8_t)rule;
	rec->begin.offset = offset;
	rec->begin.has_ip = (uint8_t)(has_ip != 0);
	rec->begin.ip = has_ip ? ip : 0;
	rec->begin.has_time = (uint8_t)pts_time_now(&m->time, &rec->begin.tsc);
	rec->end = rec->begin;
	va_start(ap, fmt);
	vsnprintf(rec->detail, sizeof(rec->detail), fmt, ap);
	va_end(ap);
}

/* Rule enclave-ip-leak: no IP inside a production enclave may appear in any
 * packet, PSB+ FUPs included (SDM 36.2.5.3: ContextEn is 0 inside, so no
 * packet carries architectural state from there). The most serious finding:
 * the trace reveals where the enclave executed. */
void pts_win_check_ip(struct pts_win_model *m, const struct pts_packet *pkt,
		      int in_psb)
{
	const struct pts_enclave *e;
	int idx;

	if (!m->has_production)
		return;
	idx = pts_enclave_find(m, pkt->u.ip.ip, 1);
	if (idx < 0)
		return;
	e = &m->enclaves[idx];
	pts_win_violation(m, PTS_RULE_ENCLAVE_IP_LEAK, pkt->offset, 1,
			  pkt->u.ip.ip,
			  "%s%s IP 0x%llx is inside production enclave %s%s"
			  "[0x%llx, 0x%llx)",
			  pts_pkt_kind_name(pkt->kind), in_psb ? " (in psb+)" : "",
			  (unsigned long long)pkt->u.ip.ip, e->name,
			  e->name[0] ? " " : "", (unsigned long long)e->begin,
			  (unsigned long long)e->end);
}

/* A flow packet while PacketEn = 0. Whether it breaks a rule depends on
 * the gap's cause, known at its close: inside a production-enclave gap any
 * of TNT, TIP, FUP, MODE, PIP, PTW does (flow-in-enclave-gap); elsewhere
 * TNT and TIP do (they need PacketEn: pge-pgd-unbalanced) while FUP, PIP and
 * MODE.TSX only need ContextEn (SDM Table 36-50 dependencies). The first
 * one is kept as the witness. */
void pts_win_gap_flow(struct pts_win_model *m, uint8_t kind, uint64_t offset)
{
	if (m->gap.has_flow)
		return;
	m->gap.has_flow = 1;
	m->gap.flow_kind = kind;
	m->gap.flow_offset = offset;
}

/* Evidence from the code: the flow decoder names the instruction at which
 * tracing stopped (or resumed) for the open gap, or reports a compressed RET that found
 * its return stack empty (SDM 36.2.1.2: only RETs whose CALL was traced
 * since the last PSB may be compressed). */
int pts_win_evidence(struct pts_win_model *m, const struct pts_win_evidence *ev)
{
	if (!m || !ev)
		return -PTS_ERR_INVALID;
	switch (ev->kind) {
	case PTS_EV_DISABLE_INSN:
	case PTS_EV_ENABLE_INSN:
		if (m->state != PTS_ST_OFF || m->gap.begin.edge == PTS_EDGE_START)
			return -PTS_ERR_NOSYNC;
		if (ev->kind == PTS_EV_ENABLE_INSN) {
			m->gap.has_en_ev = 1;
			m->gap.en_class = ev->insn_class;
		} else {
			m->gap.has_ev = 1;
			m->gap.ev_class = ev->insn_class;
		}
		break;
	case PTS_EV_RETSTACK_EMPTY:
		pts_win_violation(m, PTS_RULE_RETSTACK_EMPTY, ev->offset, 1,
				  ev->ip,
				  "compressed return at 0x%llx with an empty "
				  "return stack",
				  (unsigned long long)ev->ip);
		break;
	default:
		return -PTS_ERR_INVALID;
	}
	m->sum.packets_only = 0;
	return m->overrun ? -PTS_ERR_INTERNAL : (int)m->q_len;
}

void pts_win_set_verify(struct pts_win_model *m, int on)
{
	if (m)
		m->no_verify = (uint8_t)!on;
}
