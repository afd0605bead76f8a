/* Flow records as text: event names, ptxed's event spellings, lazy
 * disassembly of delivered instructions (each text kept: text_cache.h). */
#include "flow_internal.h"
#include "text_cache.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

static const char *const event_names[PTS_EV_COUNT] = {
#define PTS_FLOW_EV_NAME_(name, str) [PTS_EV_##name] = str,
	PTS_FLOW_EVENTS(PTS_FLOW_EV_NAME_)
#undef PTS_FLOW_EV_NAME_
};

const char *pts_flow_event_name(int type)
{
	if (type < 0 || type >= PTS_EV_COUNT)
		return "invalid";
	return event_names[type];
}

int pts_flow_disasm(struct pts_flow *flow, const struct pts_flow_rec *rec,
		    uint32_t i, char *out, size_t cap)
{
	if (!flow || !rec || !out || rec->kind != PTS_FLOW_INSNS || i >= rec->n)
		return -PTS_ERR_INVALID;
	const struct pts_text_key k = {rec->ips[i], rec->cr3, rec->mode,
				       rec->sizes[i]};
	if (!flow->texts)
		flow->texts = pts_text_cache_new();
	if (flow->texts) {
		int n = pts_text_cache_find(flow->texts, flow->img, &k, out,
					    cap);
		if (n != -1)
			return n;
	}
	uint8_t bytes[15];
	int n = pts_image_fetch(flow->img, rec->cr3, rec->ips[i], bytes,
				rec->sizes[i]);
	if (n < 0)
		return n;
	n = pts_insn_disasm(flow->cls, rec->mode, rec->ips[i], bytes,
			    (size_t)n, out, cap);
	if (flow->texts)
		pts_text_cache_put(flow->texts, &k, out, n);
	return n;
}

/* Appends to a bounded buffer; remembers overflow. */
struct sbuf {
	char *p;
	size_t cap, len;
	bool full;
};

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void put(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t room = b->len < b->cap ? b->cap - b->len : 0;
	int n = vsnprintf(b->p + b->len, room, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= room) {
		b->full = true;
		return;
	}
	b->len += (size_t)n;
}

/* Control flow events of Event Trace (CFE types, libipt's spellings). */
static void cfe_text(struct sbuf *b, uint64_t arg)
{
	unsigned type = arg & 0xff, vector = (arg >> 8) & 0xff;
	switch (type) {
	case 1: put(b, "interrupt %u", vector); break;
	case 2: put(b, "iret"); break;
	case 3: put(b, "smi"); break;
	case 4: put(b, "rsm"); break;
	case 5: put(b, "sipi: %x", vector); break;
	case 6: put(b, "init"); break;
	case 7: put(b, "vmentry"); break;
	case 8: put(b, "vmexit"); break;
	case 9: put(b, "vmexit, intr: %u", vector); break;
	case 10: put(b, "shutdown"); break;
	case 12: put(b, "uintr %u", vector); break;
	case 13: put(b, "uiret"); break;
	default: put(b, "cfe %u, vector: %u", type, vector); break;
	}
}

int pts_flow_event_text(const struct pts_flow_rec *rec, char *out, size_t cap)
{
	if (!rec || !out || !cap)
		return -PTS_ERR_INVALID;
	struct sbuf b = {out, cap, 0, false};
	out[0] = 0;
	uint64_t a = rec->arg;
	switch (rec->type) {
	case PTS_EV_ENABLED:
		put(&b, "%s", rec->flags & PTS_EV_F_RESUMED ? "resumed" : "enabled");
		break;
	case PTS_EV_DISABLED:
	case PTS_EV_ASYNC_DISABLED:
		put(&b, "disabled");
		break;
	case PTS_EV_ASYNC_BRANCH:
		put(&b, "interrupt");
		break;
	case PTS_EV_PAGING:
		put(&b, "paging, cr3: %016" PRIx64 "%s", a,
		    rec->arg2 ? ", nr" : "");
		break;
	case PTS_EV_OVERFLOW:
		put(&b, "overflow");
		break;
	case PTS_EV_EXEC_MODE:
		put(&b, "exec mode: %s", pts_exec_mode_name((int)a));
		break;
	case PTS_EV_TSX:
		put(&b, "%s", (a & 2) ? "aborted"
			      : (a & 1) ? "begin transaction" : "committed");
		break;
	case PTS_EV_STOP:
		put(&b, "stopped");
		break;
	case PTS_EV_VMCS:
		put(&b, "vmcs, base: %016" PRIx64, a);
		break;
	case PTS_EV_EXSTOP:
		put(&b, "exstop");
		break;
	case PTS_EV_MWAIT:
		put(&b, "mwait %" PRIx64 " %" PRIx64, a, rec->arg2);
		break;
	case PTS_EV_PWRE:
		put(&b, "pwre c%u.%u%s", (unsigned)((a & 0xff) + 1) & 0xf,
		    (unsigned)(((a >> 8) & 0xff) + 1) & 0xf,
		    (a >> 16) & 1 ? " hw" : "");
		break;
	case PTS_EV_PWRX:
		put(&b, "pwrx %s%s%sc%u (c%u)", (a >> 16) & 1 ? "int: " : "",
		    (a >> 17) & 1 ? "st: " : "", (a >> 18) & 1 ? "hw: " : "",
		    (unsigned)((a & 0xff) + 1) & 0xf,
		    (unsigned)(((a >> 8) & 0xff) + 1) & 0xf);
		break;
	case PTS_EV_PTWRITE:
		put(&b, "ptwrite: %" PRIx64, a);
		break;
	case PTS_EV_CFE:
		cfe_text(&b, a);
		break;
	case PTS_EV_EVD:
		put(&b, "evd %" PRIu64 ": %016" PRIx64, a, rec->arg2);
		break;
	case PTS_EV_CBR:
		put(&b, "cbr: %" PRIx64, a);
		break;
	case PTS_EV_END:
		put(&b, "end of trace");
		break;
	default:
		put(&b, "%s", pts_flow_event_name(rec->type));
		break;
	}
	return b.full ? -PTS_ERR_AGAIN : (int)b.len;
}
