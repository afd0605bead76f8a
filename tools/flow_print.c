/* Flow records as text: see flow_print.h. */
#include "flow_print.h"

#include <inttypes.h>
#include <string.h>

/* '{' and the caller's fields; returns the length written at @p. */
static int open_object(const struct pts_flow_printer *p, char *at)
{
	at[0] = '{';
	if (p->fields_len) /* `flow` has none: @fields is NULL */
		memcpy(at + 1, p->fields, p->fields_len);
	return 1 + (int)p->fields_len;
}

void pts_flow_print_insns(const struct pts_flow_printer *p,
			  const struct pts_flow_rec *r)
{
	char text[160];
	for (uint32_t i = 0; i < r->n; i++) {
		char *at = pts_out_reserve(p->out, 256 + p->fields_len);
		size_t room = pts_out_room(p->out);
		int n;
		if (p->jsonl) {
			n = open_object(p, at);
			n += snprintf(at + n, room - (size_t)n,
				      "\"offset\":%" PRIu64 ",\"ip\":\"0x%" PRIx64
				      "\",\"size\":%u,\"mode\":\"%s\"}\n",
				      r->offset, r->ips[i], r->sizes[i],
				      pts_exec_mode_name(r->mode));
		} else {
			char *e = pts_out_hex16(at, r->ips[i]);
			if (!p->no_inst) {
				int len = pts_flow_disasm(p->flow, r, i, text,
							  sizeof(text));
				if (len < 0)
					len = snprintf(text, sizeof(text),
						       "(bad)");
				*e++ = ' ';
				*e++ = ' ';
				memcpy(e, text, (size_t)len);
				e += len;
			}
			*e++ = '\n';
			n = (int)(e - at);
		}
		pts_out_commit(p->out, (size_t)n);
	}
}

void pts_flow_print_event(const struct pts_flow_printer *p,
			  const struct pts_flow_rec *r)
{
	char text[160];
	if (!p->jsonl && (r->flags & PTS_EV_F_STATUS))
		return; /* ptxed does not show state from PSB+ */
	if (pts_flow_event_text(r, text, sizeof(text)) < 0)
		strcpy(text, "?");
	char *at = pts_out_reserve(p->out, 512 + p->fields_len);
	size_t room = pts_out_room(p->out);
	if (!p->jsonl) {
		pts_out_commit(p->out, (size_t)snprintf(at, room, "[%s]\n", text));
		return;
	}
	int n = open_object(p, at);
	n += snprintf(at + n, room - (size_t)n,
		      "\"offset\":%" PRIu64 ",\"event\":\"%s\",\"text\":\"%s\"",
		      r->offset, pts_flow_event_name(r->type), text);
	/* For async events @ip is where they happened; suppression concerns
	 * the target. */
	if (r->ip && (!(r->flags & PTS_EV_F_IP_SUPPRESSED) ||
		      r->type == PTS_EV_ASYNC_DISABLED ||
		      r->type == PTS_EV_ASYNC_BRANCH))
		n += snprintf(at + n, room - (size_t)n, ",\"ip\":\"0x%" PRIx64 "\"",
			      r->ip);
	n += snprintf(at + n, room - (size_t)n,
		      ",\"arg\":\"0x%" PRIx64 "\",\"status\":%s}\n", r->arg,
		      r->flags & PTS_EV_F_STATUS ? "true" : "false");
	pts_out_commit(p->out, (size_t)n);
}

void pts_flow_print_error(const struct pts_flow_printer *p,
			  const struct pts_flow_rec *r)
{
	char *at = pts_out_reserve(p->out, 256 + p->fields_len);
	size_t room = pts_out_room(p->out);
	int n;
	if (p->jsonl) {
		n = open_object(p, at);
		n += snprintf(at + n, room - (size_t)n,
			      "\"offset\":%" PRIu64 ",\"error\":\"%s\","
			      "\"message\":\"%s\",\"ip\":\"0x%" PRIx64 "\"}\n",
			      r->offset, pts_errname(r->error),
			      pts_strerror(r->error), r->ip);
	} else {
		n = snprintf(at, room, "[%" PRIx64 ", %" PRIx64 ": error: %s]\n",
			     r->offset, r->ip, pts_strerror(r->error));
	}
	pts_out_commit(p->out, (size_t)n);
}
