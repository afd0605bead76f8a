/* The flow decoder's evidence for the windows model: windows_evidence.h. */
#include "windows_evidence.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLOW_BATCH 256
/* Packets held for the flow decoder at most. Far more than it looks ahead
 * (it reports a packet once a few dozen behind it are queued), so the
 * bound only matters inside long gaps, where the flow decoder has nothing
 * to report and no evidence is pending. */
#define HOLD_MAX (1u << 16)
/* A queued lost-bytes range: offset = begin, u.ip.ip = end, ipc = cause. */
#define LOST_KIND 0xff

struct pts_winev {
	struct pts_winrep *rep;
	const struct pts_image *img;
	struct pts_flow *flow;
	struct pts_insn_classifier *cls;
	struct pts_flow_rec recs[FLOW_BATCH];
	/* Packets waiting for the flow decoder: [pq_head, pq_len). */
	struct pts_packet *pq;
	size_t pq_head, pq_len, pq_cap;
	/* Evidence waiting for its place in the packet stream. */
	struct pts_win_evidence *eq;
	size_t eq_head, eq_len, eq_cap;
	/* The flow decoder has reported up to this stream offset. */
	uint64_t flow_at;
	uint8_t flow_seen, flow_done;
	/* The last instruction it delivered (a bare TIP.PGD binds to it). */
	uint8_t has_last, last_mode;
	uint64_t last_ip, last_cr3;
	struct pts_winev_stats st;
	int first_error;
	uint64_t first_error_offset, first_error_ip;
};

struct pts_winev *pts_winev_new(struct pts_winrep *rep,
				const struct pts_image *img,
				const struct pts_cpu *cpu)
{
	return pts_winev_new_at(rep, img, cpu, 0);
}

struct pts_winev *pts_winev_new_at(struct pts_winrep *rep,
				   const struct pts_image *img,
				   const struct pts_cpu *cpu,
				   uint64_t base_offset)
{
	struct pts_winev *ev = calloc(1, sizeof(*ev));
	struct pts_flow_config fc;

	if (!ev)
		return NULL;
	memset(&fc, 0, sizeof(fc));
	fc.base_offset = base_offset;
	if (cpu)
		fc.cpu = *cpu;
	ev->rep = rep;
	ev->img = img;
	ev->flow = pts_flow_new(&fc, img);
	ev->cls = pts_insn_classifier_new();
	if (!ev->flow || !ev->cls) {
		pts_winev_free(ev);
		return NULL;
	}
	rep->ev = ev;
	return ev;
}

void pts_winev_free(struct pts_winev *ev)
{
	if (!ev)
		return;
	if (ev->rep && ev->rep->ev == ev)
		ev->rep->ev = NULL;
	pts_flow_free(ev->flow);
	pts_insn_classifier_free(ev->cls);
	free(ev->pq);
	free(ev->eq);
	free(ev);
}

/* Makes room for one more element at the end of a [head, len) queue. */
static int queue_room(void **buf, size_t *head, size_t *len, size_t *cap,
		      size_t elem)
{
	if (*head == *len)
		*head = *len = 0;
	if (*len < *cap)
		return 0;
	if (*head > *cap / 2) {
		memmove(*buf, (char *)*buf + *head * elem,
			(*len - *head) * elem);
		*len -= *head;
		*head = 0;
		return 0;
	}
	size_t ncap = *cap ? *cap * 2 : 256;
	void *nb = realloc(*buf, ncap * elem);
	if (!nb)
		return -PTS_ERR_NOMEM;
	*buf = nb;
	*cap = ncap;
	return 0;
}

/* --- what an instruction is, for the model ------------------------------- */

/* The opcode after legacy prefixes (and REX in 64-bit mode). */
static const uint8_t *opcode(const uint8_t *b, const uint8_t *end, int mode)
{
	while (b < end) {
		switch (*b) {
		case 0x26: case 0x2e: case 0x36: case 0x3e: case 0x64:
		case 0x65: case 0x66: case 0x67: case 0xf0: case 0xf2:
		case 0xf3:
			b++;
			continue;
		default:
			break;
		}
		break;
	}
	if (b < end && mode != PTS_EXEC_16 && mode != PTS_EXEC_32 &&
	    (*b & 0xf0) == 0x40)
		b++;
	return b;
}

/* SYSCALL-like: into ring 0 (SYSCALL, SYSENTER, INT n, INT3, INTO, INT1);
 * SYSRET-like: back to ring 3 (SYSRET, SYSEXIT, IRET); other far
 * transfers keep the ring or say nothing about it. */
static uint8_t far_class(const uint8_t *op, const uint8_t *end)
{
	if (op >= end)
		return PTS_EV_INSN_OTHER;
	switch (op[0]) {
	case 0xcc: case 0xcd: case 0xce: case 0xf1:
		return PTS_EV_INSN_SYSCALL;
	case 0xcf:
		return PTS_EV_INSN_RET_USER;
	case 0x0f:
		if (op + 1 >= end)
			return PTS_EV_INSN_OTHER;
		if (op[1] == 0x05 || op[1] == 0x34)
			return PTS_EV_INSN_SYSCALL;
		if (op[1] == 0x07 || op[1] == 0x35)
			return PTS_EV_INSN_RET_USER;
		return PTS_EV_INSN_OTHER;
	default:
		return PTS_EV_INSN_OTHER;
	}
}

/* MOV CR3 (0F 22 /r, ModRM.reg = 3) and WRMSR (0F 30): the two ways code
 * changes a PT enable without a branch (CR3 filter; TraceEn). */
static uint8_t other_class(const uint8_t *op, const uint8_t *end)
{
	if (op + 1 >= end || op[0] != 0x0f)
		return PTS_EV_INSN_OTHER;
	if (op[1] == 0x30)
		return PTS_EV_INSN_WRMSR;
	if (op[1] == 0x22 && op + 2 < end && ((op[2] >> 3) & 7) == 3)
		return PTS_EV_INSN_MOV_CR3;
	return PTS_EV_INSN_OTHER;
}

/* Classifies the instruction at @ip. Returns 0 and sets *@out, or < 0 when
 * there is no code there (then there is no evidence). */
static int insn_class(struct pts_winev *ev, uint64_t cr3, int mode,
		      uint64_t ip, uint8_t *out)
{
	uint8_t buf[16];
	struct pts_insn_info info;
	int n = pts_image_fetch(ev->img, cr3, ip, buf, 15);

	if (n < 0)
		return n;
	int size = pts_insn_classify(ev->cls, mode, ip, buf, (size_t)n, &info);
	if (size < 0)
		return size;
	const uint8_t *end = buf + size, *op = opcode(buf, end, mode);
	switch (info.iclass) {
	case PTS_INSN_ENCLU:
		*out = PTS_EV_INSN_ENCLU;
		break;
	case PTS_INSN_FAR:
		*out = far_class(op, end);
		break;
	case PTS_INSN_OTHER:
		*out = other_class(op, end);
		break;
	case PTS_INSN_JCC:
		*out = PTS_EV_INSN_COND_BRANCH;
		break;
	case PTS_INSN_JMP:
	case PTS_INSN_CALL:
	case PTS_INSN_JMP_IND:
	case PTS_INSN_CALL_IND:
	case PTS_INSN_RET:
		*out = PTS_EV_INSN_NEAR_BRANCH;
		break;
	default:
		*out = PTS_EV_INSN_OTHER;
		break;
	}
	return 0;
}

/* --- flow records -> evidence ---------------------------------------------- */

static void push_evidence(struct pts_winev *ev, uint8_t kind, uint64_t offset,
			  uint64_t cr3, int mode, uint64_t ip)
{
	struct pts_win_evidence e;

	memset(&e, 0, sizeof(e));
	e.kind = kind;
	e.offset = offset;
	e.ip = ip;
	if (kind != PTS_EV_RETSTACK_EMPTY &&
	    insn_class(ev, cr3, mode, ip, &e.insn_class) < 0)
		return;
	if (queue_room((void **)&ev->eq, &ev->eq_head, &ev->eq_len,
		       &ev->eq_cap, sizeof(e)) < 0)
		return; /* no memory: the evidence is lost, not the report */
	ev->eq[ev->eq_len++] = e;
}

static void on_event(struct pts_winev *ev, const struct pts_flow_rec *r)
{
	const int suppressed = (r->flags & PTS_EV_F_IP_SUPPRESSED) != 0;

	switch (r->type) {
	case PTS_EV_ASYNC_DISABLED:
		/* FUP + TIP.PGD(): stopped before the instruction at the FUP,
		 * which is the ENCLU for an enclave entry (checklist 1). */
		push_evidence(ev, PTS_EV_DISABLE_INSN, r->offset, r->cr3,
			      r->mode, r->ip);
		break;
	case PTS_EV_DISABLED:
		/* A bare TIP.PGD binds to the branch just delivered. */
		if (suppressed && ev->has_last)
			push_evidence(ev, PTS_EV_DISABLE_INSN, r->offset,
				      ev->last_cr3, ev->last_mode,
				      ev->last_ip);
		break;
	case PTS_EV_ENABLED:
		if (!suppressed)
			push_evidence(ev, PTS_EV_ENABLE_INSN, r->offset, r->cr3,
				      r->mode, r->ip);
		break;
	default:
		return; /* the last instruction still stands */
	}
	ev->has_last = 0;
}

static void on_records(struct pts_winev *ev, const struct pts_flow_rec *recs,
		       int n)
{
	for (int i = 0; i < n; i++) {
		const struct pts_flow_rec *r = &recs[i];

		switch (r->kind) {
		case PTS_FLOW_INSNS:
			ev->has_last = 1;
			ev->last_ip = r->ips[r->n - 1];
			ev->last_cr3 = r->cr3;
			ev->last_mode = r->mode;
			break;
		case PTS_FLOW_EVENT:
			on_event(ev, r);
			break;
		case PTS_FLOW_ERROR:
			ev->has_last = 0;
			/* a last packet cut off: the packet side shows it as
			 * a truncated gap, it is no error of the images */
			if (r->error == -PTS_ERR_TRUNCATED)
				break;
			if (!ev->st.errors++) {
				ev->first_error = r->error;
				ev->first_error_offset = r->offset;
				ev->first_error_ip = r->ip;
			}
			if (r->error == -PTS_ERR_RETSTACK_EMPTY)
				push_evidence(ev, PTS_EV_RETSTACK_EMPTY,
					      r->offset, 0, 0, r->ip);
			break;
		default:
			break;
		}
		if (!ev->flow_seen || r->offset > ev->flow_at)
			ev->flow_at = r->offset;
		ev->flow_seen = 1;
	}
}

int pts_winev_flow(struct pts_winev *ev, struct pts_input chunk)
{
	for (;;) {
		const int n = pts_flow_next(ev->flow, &chunk, ev->recs,
					    FLOW_BATCH);

		if (n > 0) {
			on_records(ev, ev->recs, n);
			continue;
		}
		if (n == -PTS_ERR_EOS)
			ev->flow_done = 1;
		return n == -PTS_ERR_AGAIN || n == -PTS_ERR_EOS ? 0 : n;
	}
}

/* --- packets -> model, evidence in its place ---------------------------------- */

static void push_packet(struct pts_winev *ev, const struct pts_packet *p)
{
	if (queue_room((void **)&ev->pq, &ev->pq_head, &ev->pq_len,
		       &ev->pq_cap, sizeof(*p)) < 0) {
		/* No memory: the packet goes to the model at once. */
		pts_winev_drain(ev);
		pts_winrep_feed(ev->rep, p, 1);
		return;
	}
	ev->pq[ev->pq_len++] = *p;
}

void pts_winev_packets(struct pts_winev *ev, const struct pts_packet *pkts,
		       int n)
{
	for (int i = 0; i < n; i++)
		push_packet(ev, &pkts[i]);
	pts_winev_drain(ev);
}

void pts_winev_lost(struct pts_winev *ev, int cause, uint64_t begin,
		    uint64_t end)
{
	struct pts_packet p;

	memset(&p, 0, sizeof(p));
	p.kind = LOST_KIND;
	p.offset = begin;
	p.ipc = (uint8_t)cause;
	p.u.ip.ip = end;
	push_packet(ev, &p);
	pts_winev_drain(ev);
}

/* The packet at @offset may go to the model: the flow decoder has
 * reported that far (so any evidence about it is queued), or ended, or
 * too many packets wait. */
static int may_feed(const struct pts_winev *ev, uint64_t offset)
{
	return ev->flow_done || (ev->flow_seen && offset <= ev->flow_at) ||
	       ev->pq_len - ev->pq_head > HOLD_MAX;
}

/* Gives the evidence that belongs before the packet at @offset: what
 * concerns earlier packets (the TIP.PGD it names is fed) and the enable
 * evidence about this very packet (a TIP.PGE: before it closes the gap). */
static void give_evidence(struct pts_winev *ev, uint64_t offset)
{
	while (ev->eq_head < ev->eq_len) {
		const struct pts_win_evidence *e = &ev->eq[ev->eq_head];

		if (e->offset > offset ||
		    (e->offset == offset && e->kind != PTS_EV_ENABLE_INSN))
			return;
		pts_winrep_evidence(ev->rep, e);
		ev->st.evidence++;
		ev->eq_head++;
	}
}

void pts_winev_drain(struct pts_winev *ev)
{
	while (ev->pq_head < ev->pq_len &&
	       may_feed(ev, ev->pq[ev->pq_head].offset)) {
		const struct pts_packet *p = &ev->pq[ev->pq_head];

		give_evidence(ev, p->offset);
		if (p->kind == LOST_KIND) {
			pts_winrep_lost(ev->rep, p->ipc, p->offset, p->u.ip.ip);
			ev->pq_head++;
			continue;
		}
		/* A run up to the next evidence: one batch for the model. */
		const uint64_t limit = ev->eq_head < ev->eq_len
					       ? ev->eq[ev->eq_head].offset
					       : UINT64_MAX;
		size_t end = ev->pq_head + 1;
		while (end < ev->pq_len && ev->pq[end].kind != LOST_KIND &&
		       ev->pq[end].offset < limit &&
		       may_feed(ev, ev->pq[end].offset))
			end++;
		pts_winrep_feed(ev->rep, p, (int)(end - ev->pq_head));
		ev->pq_head = end;
	}
}

void pts_winev_finish(struct pts_winev *ev, const char *cmd)
{
	struct pts_input none = {NULL, 0, 0};
	char text[32];

	pts_flow_end(ev->flow);
	if (pts_winev_flow(ev, none) < 0)
		fprintf(stderr, "ptscope %s: flow decoder: out of memory\n",
			cmd);
	ev->flow_done = 1;
	pts_winev_drain(ev);
	give_evidence(ev, UINT64_MAX);
	if (!ev->st.errors)
		return;
	snprintf(text, sizeof(text), "%" PRIu64, ev->st.errors);
	/* the hint only where the code is what disagrees: a packet that
	 * does not decode is the trace's fault (the model shows it too) */
	const int code = ev->first_error == -PTS_ERR_NOMAP ||
			 ev->first_error == -PTS_ERR_BAD_INSN ||
			 ev->first_error == -PTS_ERR_TRACE_MISMATCH ||
			 ev->first_error == -PTS_ERR_RETSTACK_EMPTY ||
			 ev->first_error == -PTS_ERR_BAD_MODE;
	fprintf(stderr,
		"ptscope %s: flow decoder: %s error(s), the first at offset "
		"0x%" PRIx64 " ip 0x%" PRIx64 ": %s%s\n",
		cmd, text, ev->first_error_offset, ev->first_error_ip,
		pts_strerror(ev->first_error),
		code ? " (images wrong or missing?)" : "");
}

void pts_winev_get_stats(const struct pts_winev *ev,
			 struct pts_winev_stats *st)
{
	*st = ev->st;
}
