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

/* Appends the string literal @s at @e (no NUL); evaluates to the end. */
#define PUT_LIT(e, s) ((char *)memcpy((e), (s), sizeof(s) - 1) + sizeof(s) - 1)

/* One JSON line per instruction: what is the same for all of a record's
 * instructions (the offset, the mode) is written once, then copied: a
 * line by snprintf() took 6 times as long. */
static void print_insns_jsonl(const struct pts_flow_printer *p,
			      const struct pts_flow_rec *r)
{
	char offset[48], tail[48];
	char *e = PUT_LIT(offset, "\"offset\":");
	e = PUT_LIT(pts_out_dec(e, r->offset), ",\"ip\":\"0x");
	const size_t offset_len = (size_t)(e - offset);
	const char *mode = pts_exec_mode_name(r->mode);
	const size_t mode_len = strnlen(mode, 24); /* "64-bit": far less */
	e = PUT_LIT(tail, ",\"mode\":\"");
	memcpy(e, mode, mode_len);
	e = PUT_LIT(e + mode_len, "\"}\n");
	const size_t tail_len = (size_t)(e - tail);
	for (uint32_t i = 0; i < r->n; i++) {
		char *at = pts_out_reserve(p->out, 256 + p->fields_len);
		e = at + open_object(p, at);
		memcpy(e, offset, offset_len);
		e = pts_out_hex(e + offset_len, r->ips[i]);
		e = pts_out_dec(PUT_LIT(e, "\",\"size\":"), r->sizes[i]);
		memcpy(e, tail, tail_len);
		pts_out_commit(p->out, (size_t)(e + tail_len - at));
	}
}

void pts_flow_print_insns(const struct pts_flow_printer *p,
			  const struct pts_flow_rec *r)
{
	char text[160];
	if (p->jsonl) {
		print_insns_jsonl(p, r);
		return;
	}
	for (uint32_t i = 0; i < r->n; i++) {
		char *at = pts_out_reserve(p->out, 256 + p->fields_len);
		char *e = pts_out_hex16(at, r->ips[i]);
		if (!p->no_inst) {
			int len = pts_flow_disasm(p->flow, r, i, text,
						  sizeof(text));
			if (len < 0)
				len = snprintf(text, sizeof(text), "(bad)");
			*e++ = ' ';
			*e++ = ' ';
			memcpy(e, text, (size_t)len);
			e += len;
		}
		*e++ = '\n';
		pts_out_commit(p->out, (size_t)(e - at));
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

void pts_flow_print_skip(const struct pts_flow_printer *p,
			 const struct pts_flow_rec *r)
{
	char *at = pts_out_reserve(p->out, 256 + p->fields_len);
	char *e;
	if (p->jsonl) {
		e = PUT_LIT(at + open_object(p, at), "\"offset\":");
		e = PUT_LIT(pts_out_dec(e, r->offset), ",\"skipped\":");
		e = PUT_LIT(pts_out_dec(e, r->arg - r->offset), ",\"end\":");
		e = PUT_LIT(pts_out_dec(e, r->arg), "}");
	} else {
		/* 60 characters at most: the room is there */
		e = at + pts_print_ptdump_error(-PTS_ERR_SKIPPED, r->offset,
						r->arg, at, 128);
	}
	*e++ = '\n';
	pts_out_commit(p->out, (size_t)(e - at));
}

void pts_flow_print_truncated(const struct pts_flow_printer *p,
			      const struct pts_flow_rec *r, uint64_t end,
			      const char *why)
{
	char *at = pts_out_reserve(p->out, 256);
	const size_t room = pts_out_room(p->out) - 1;
	const int n = pts_cli_format_truncated(at, room, p->jsonl, r->offset,
					       end, why);
	at[n] = '\n';
	pts_out_commit(p->out, (size_t)n + 1);
}
