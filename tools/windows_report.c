/* The windows report: see windows_report.h. Text: one line per window,
 * gap or (with --verify) violation, then a summary with the share of each
 * cause in time (TSC ticks) or, without timing, in bytes. JSON lines: one
 * object per record, then one "summary" object. */
#include "windows_report.h"
#include "windows_evidence.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Output space reserved per line: far above the longest line we print. */
#define LINE_MAX_ 1024
#define BATCH 256
/* Packets per call while the model has no skim actions: few, so that
 * skimming starts again soon after (PSB+ is read packet by packet). */
#define UNSKIMMED 8
/* Bytes a skimming call must go over for the next to skim too. */
#define SKIM_MIN 1024
#define STUCK_LIMIT 64


static uint64_t rec_bytes(const struct pts_win_record *r)
{
	return r->end.offset > r->begin.offset ? r->end.offset - r->begin.offset
					       : 0;
}

static int rec_ticks(const struct pts_win_record *r, uint64_t *ticks)
{
	if (!r->begin.has_time || !r->end.has_time || r->end.tsc < r->begin.tsc)
		return 0;
	*ticks = r->end.tsc - r->begin.tsc;
	return 1;
}

/* Appends printf output at @p (within @cap); returns the new length. */
static size_t put(char *p, size_t len, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static size_t put(char *p, size_t len, size_t cap, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (len >= cap)
		return len;
	va_start(ap, fmt);
	n = vsnprintf(p + len, cap - len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return len;
	return (size_t)n < cap - len ? len + (size_t)n : cap - 1;
}

/* Hand-made formatting for the lines printed per record: a gap every few
 * dozen packets makes printf the cost of the whole report. Each appends at
 * @len within @cap (the line buffer is far larger than any line), copying
 * whole strings and numbers, not a character at a time. */
static size_t app_mem(char *p, size_t len, size_t cap, const char *s,
		      size_t n)
{
	if (len + n >= cap)
		n = len + 1 < cap ? cap - 1 - len : 0;
	memcpy(p + len, s, n);
	len += n;
	p[len] = '\0';
	return len;
}

static size_t app(char *p, size_t len, size_t cap, const char *s)
{
	return app_mem(p, len, cap, s, strlen(s));
}

/* @n spaces (padding). */
static size_t app_spaces(char *p, size_t len, size_t cap, size_t n)
{
	static const char spaces[] = "                                ";

	while (n) {
		size_t k = n < sizeof(spaces) - 1 ? n : sizeof(spaces) - 1;

		len = app_mem(p, len, cap, spaces, k);
		n -= k;
	}
	return len;
}

/* @s left-aligned in @width columns (printf's %-Ns). */
static size_t app_left(char *p, size_t len, size_t cap, const char *s,
		       unsigned width)
{
	size_t n = strlen(s);

	len = app_mem(p, len, cap, s, n);
	return n < width ? app_spaces(p, len, cap, width - n) : len;
}

/* @v by @write (pts_out_dec(), pts_out_hex()) right-aligned in @width
 * columns (%Nu, %Nx), written in place; left out when it may not fit
 * (never seen: the line buffer is far larger than a line). */
static size_t app_num(char *p, size_t len, size_t cap,
		      char *(*write)(char *p, uint64_t v), uint64_t v,
		      unsigned width)
{
	if (len + 20 + width + 1 >= cap)
		return len;
	char *const at = p + len;
	size_t n = (size_t)(write(at, v) - at);
	if (n < width) {
		memmove(at + (width - n), at, n);
		memset(at, ' ', width - n);
		n = width;
	}
	len += n;
	p[len] = '\0';
	return len;
}

static size_t app_dec(char *p, size_t len, size_t cap, uint64_t v,
		      unsigned width)
{
	return app_num(p, len, cap, pts_out_dec, v, width);
}

static size_t app_hexw(char *p, size_t len, size_t cap, uint64_t v,
		       unsigned width)
{
	return app_num(p, len, cap, pts_out_hex, v, width);
}

static size_t app_hex(char *p, size_t len, size_t cap, uint64_t v)
{
	len = app_mem(p, len, cap, "0x", 2);
	return app_hexw(p, len, cap, v, 0);
}

static size_t put_ip(char *p, size_t len, size_t cap,
		     const struct pts_win_point *pt)
{
	if (!pt->has_ip)
		return app(p, len, cap, "-");
	return app_hex(p, len, cap, pt->ip);
}

/* " NAME=N" when N is not 0. */
static size_t app_count(char *p, size_t len, size_t cap, const char *name,
			uint64_t n)
{
	if (!n)
		return len;
	len = app(p, len, cap, name);
	return app_dec(p, len, cap, n, 0);
}

static size_t app_edge(char *p, size_t len, size_t cap,
		       const struct pts_win_point *pt)
{
	len = app(p, len, cap, pts_win_edge_name(pt->edge));
	if (!pt->has_ip)
		return len;
	len = app(p, len, cap, "@");
	return app_hex(p, len, cap, pt->ip);
}

static size_t text_gap_detail(char *p, size_t len, size_t cap,
			      const struct pts_win_record *r)
{
	len = app_edge(p, len, cap, &r->begin);
	len = app(p, len, cap, " -> ");
	len = app_edge(p, len, cap, &r->end);
	len = app(p, len, cap, " [");
	len = app(p, len, cap, pts_gap_basis_name(r->basis));
	len = app(p, len, cap, "]");
	if (r->cause == PTS_GAP_ENCLAVE) {
		len = app(p, len, cap, " ");
		len = app(p, len, cap, pts_enclave_edge_name(r->entry));
		len = app(p, len, cap, "/");
		len = app(p, len, cap, pts_enclave_edge_name(r->exit));
	}
	len = app_count(p, len, cap, " psb=", r->psbs);
	len = app_count(p, len, cap, " ovf=", r->ovfs);
	len = app_count(p, len, cap, " cbr-changes=", r->cbrs);
	if (r->flags & PTS_GAPF_UNCERTAIN)
		len = app(p, len, cap, " uncertain");
	if (r->flags & PTS_GAPF_TRAILING)
		len = app(p, len, cap, " trailing");
	if (r->detail[0]) {
		len = app(p, len, cap, " (");
		len = app(p, len, cap, r->detail);
		len = app(p, len, cap, ")");
	}
	return len;
}

static size_t format_text(const struct pts_win_record *r, char *p, size_t cap)
{
	uint64_t ticks;
	size_t len = 0;

	if (r->type == PTS_REC_VIOLATION) {
		len = app(p, len, cap, "violation ");
		len = app_left(p, len, cap, pts_rule_name(r->rule), 24);
		len = app(p, len, cap, " at ");
		len = app_hex(p, len, cap, r->begin.offset);
		if (r->begin.has_ip) {
			len = app(p, len, cap, " ip ");
			len = app_hex(p, len, cap, r->begin.ip);
		}
		len = app(p, len, cap, ": ");
		return app(p, len, cap, r->detail);
	}
	len = app_left(p, len, cap,
		       r->type == PTS_REC_WINDOW ? "window" : "gap", 6);
	len = app(p, len, cap, " ");
	len = app_hexw(p, len, cap, r->begin.offset, 10);
	len = app(p, len, cap, " ");
	len = app_hexw(p, len, cap, r->end.offset, 10);
	len = app(p, len, cap, " ");
	len = app_dec(p, len, cap, rec_bytes(r), 9);
	len = app(p, len, cap, " ");
	if (rec_ticks(r, &ticks))
		len = app_dec(p, len, cap, ticks, 12);
	else
		len = app(p, len, cap, "           -");
	len = app(p, len, cap, "  ");
	len = app_left(p, len, cap,
		       r->type == PTS_REC_WINDOW ? "-"
						 : pts_gap_cause_name(r->cause),
		       12);
	len = app(p, len, cap, " ");
	if (r->type == PTS_REC_GAP)
		return text_gap_detail(p, len, cap, r);
	len = put_ip(p, len, cap, &r->begin);
	len = app(p, len, cap, " .. ");
	len = put_ip(p, len, cap, &r->end);
	len = app(p, len, cap, " packets=");
	len = app_dec(p, len, cap, r->packets, 0);
	len = app(p, len, cap, " tnt=");
	len = app_dec(p, len, cap, r->tnt_bits, 0);
	len = app(p, len, cap, " tip=");
	return app_dec(p, len, cap, r->tips, 0);
}

/* JSON string contents: the details are ASCII we wrote, but escape anyway. */
static size_t put_json_str(char *p, size_t len, size_t cap, const char *s)
{
	len = app(p, len, cap, "\"");
	for (; *s && len + 8 < cap; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			len = put(p, len, cap, "\\%c", ch);
		else if (ch < 0x20)
			len = put(p, len, cap, "\\u%04x", ch);
		else
			p[len++] = (char)ch;
	}
	p[len < cap ? len : cap - 1] = '\0';
	return app(p, len, cap, "\"");
}

/* ,"KEY": and then @open (a '"' or a '{' to start the value, or ""). */
static size_t app_key(char *p, size_t len, size_t cap, const char *key,
		      const char *open)
{
	len = app(p, len, cap, ",\"");
	len = app(p, len, cap, key);
	len = app(p, len, cap, "\":");
	return app(p, len, cap, open);
}

/* ,"KEY":"VALUE" ,"KEY":N ,"KEY":"0xN" (VALUE is one of our names). */
static size_t app_kstr(char *p, size_t len, size_t cap, const char *key,
		       const char *value)
{
	len = app_key(p, len, cap, key, "\"");
	len = app(p, len, cap, value);
	return app(p, len, cap, "\"");
}

static size_t app_knum(char *p, size_t len, size_t cap, const char *key,
		       uint64_t v)
{
	len = app_key(p, len, cap, key, "");
	return app_dec(p, len, cap, v, 0);
}

static size_t app_khex(char *p, size_t len, size_t cap, const char *key,
		       uint64_t v)
{
	len = app_key(p, len, cap, key, "\"");
	len = app_hex(p, len, cap, v);
	return app(p, len, cap, "\"");
}

static size_t put_json_point(char *p, size_t len, size_t cap, const char *name,
			     const struct pts_win_point *pt)
{
	len = app_key(p, len, cap, name, "{\"offset\":");
	len = app_dec(p, len, cap, pt->offset, 0);
	len = app_kstr(p, len, cap, "edge", pts_win_edge_name(pt->edge));
	if (pt->has_ip)
		len = app_khex(p, len, cap, "ip", pt->ip);
	if (pt->has_time)
		len = app_knum(p, len, cap, "tsc", pt->tsc);
	return app(p, len, cap, "}");
}

static size_t format_jsonl(const struct pts_winrep *w,
			   const struct pts_win_record *r, char *p, size_t cap)
{
	static const char *const types[] = {"window", "gap", "violation"};
	uint64_t ticks;
	size_t len = app(p, 0, cap, "{");

	if (w->opts.jsonl_fields)
		len += w->opts.jsonl_fields(w->opts.jsonl_ctx, r, p + len,
					    cap - len);
	len = app(p, len, cap, "\"type\":\"");
	len = app(p, len, cap, types[r->type]);
	len = app(p, len, cap, "\"");

	if (r->type == PTS_REC_VIOLATION) {
		len = put(p, len, cap, ",\"rule\":\"%s\",\"offset\":%" PRIu64,
			  pts_rule_name(r->rule), r->begin.offset);
		if (r->begin.has_ip)
			len = put(p, len, cap, ",\"ip\":\"0x%" PRIx64 "\"",
				  r->begin.ip);
		len = app(p, len, cap, ",\"detail\":");
		len = put_json_str(p, len, cap, r->detail);
		return app(p, len, cap, "}");
	}
	len = put_json_point(p, len, cap, "begin", &r->begin);
	len = put_json_point(p, len, cap, "end", &r->end);
	len = app_knum(p, len, cap, "bytes", rec_bytes(r));
	if (rec_ticks(r, &ticks))
		len = app_knum(p, len, cap, "ticks", ticks);
	if (w->opts.tsc_hz && rec_ticks(r, &ticks))
		len = put(p, len, cap, ",\"ns\":%.0f",
			  (double)ticks * 1e9 / (double)w->opts.tsc_hz);
	if (r->type == PTS_REC_WINDOW) {
		len = app_knum(p, len, cap, "packets", r->packets);
		len = app_knum(p, len, cap, "tnt_bits", r->tnt_bits);
		len = app_knum(p, len, cap, "tips", r->tips);
		return app(p, len, cap, "}");
	}
	len = app_kstr(p, len, cap, "cause", pts_gap_cause_name(r->cause));
	len = app_kstr(p, len, cap, "basis", pts_gap_basis_name(r->basis));
	if (pts_gap_cause_enable(r->cause))
		len = app_kstr(p, len, cap, "enable",
			       pts_gap_cause_enable(r->cause));
	if (r->cause == PTS_GAP_ENCLAVE) {
		len = app_kstr(p, len, cap, "entry",
			       pts_enclave_edge_name(r->entry));
		len = app_kstr(p, len, cap, "exit",
			       pts_enclave_edge_name(r->exit));
	}
	if (r->enclave >= 0)
		len = app_knum(p, len, cap, "enclave", (uint64_t)r->enclave);
	if (r->candidates) {
		const char *sep = "";

		len = app(p, len, cap, ",\"candidates\":[");
		for (int c = 0; c < PTS_GAP_CAUSE_COUNT; c++)
			if (r->candidates & (1u << c)) {
				len = app(p, len, cap, sep);
				len = app(p, len, cap, "\"");
				len = app(p, len, cap, pts_gap_cause_name(c));
				len = app(p, len, cap, "\"");
				sep = ",";
			}
		len = app(p, len, cap, "]");
	}
	len = app_knum(p, len, cap, "psbs", r->psbs);
	len = app_knum(p, len, cap, "ovfs", r->ovfs);
	len = app_knum(p, len, cap, "cbr_changes", r->cbrs);
	len = app(p, len, cap, (r->flags & PTS_GAPF_UNCERTAIN)
				       ? ",\"uncertain\":true"
				       : ",\"uncertain\":false");
	len = app(p, len, cap, (r->flags & PTS_GAPF_TRAILING)
				       ? ",\"trailing\":true"
				       : ",\"trailing\":false");
	if (r->detail[0]) {
		len = app(p, len, cap, ",\"detail\":");
		len = put_json_str(p, len, cap, r->detail);
	}
	return app(p, len, cap, "}");
}

static void emit(struct pts_winrep *w, const struct pts_win_record *r)
{
	char *p;
	size_t len;

	if (r->type == PTS_REC_VIOLATION && !w->opts.verify)
		return;
	p = pts_out_reserve(w->out, LINE_MAX_);
	len = w->opts.jsonl ? format_jsonl(w, r, p, LINE_MAX_ - 1)
			    : format_text(r, p, LINE_MAX_ - 1);
	p[len] = '\n';
	pts_out_commit(w->out, len + 1);
}

/* @ret: what the model returned; > 0 says records are waiting. */
static void drain_model(struct pts_winrep *w, int ret)
{
	struct pts_win_record rec;

	if (ret < 0)
		w->failed = 1;
	if (ret == 0)
		return;
	while (pts_win_next(w->model, &rec) == 1)
		emit(w, &rec);
}


/* --- summary ------------------------------------------------------------------ */

uint64_t pts_winrep_violations(const struct pts_winrep *w)
{
	struct pts_win_summary s;
	uint64_t n = 0;

	pts_win_summary(w->model, &s);
	for (int r = 0; r < PTS_RULE_COUNT; r++)
		n += s.violations[r];
	return n;
}

/* Shares are of time when the trace has timing, else of bytes. The
 * total is summed in floating point: the tick sums may add up to more
 * than 64 bits (they saturate each, see struct pts_win_summary). */
static double share(uint64_t part, double total)
{
	return total > 0 ? 100.0 * (double)part / total : 0.0;
}

static void summary_text(struct pts_winrep *w, const struct pts_win_summary *s)
{
	double ticks = (double)s->window_ticks, bytes = (double)s->window_bytes;
	uint64_t nv = 0;
	int by_time, saturated = s->window_ticks == UINT64_MAX;
	char line[LINE_MAX_];

	for (int c = 0; c < PTS_GAP_CAUSE_COUNT; c++) {
		ticks += (double)s->gap_ticks[c];
		bytes += (double)s->gap_bytes[c];
		saturated |= s->gap_ticks[c] == UINT64_MAX;
	}
	by_time = ticks > 0;
	snprintf(line, sizeof(line),
		 "\nsummary: %" PRIu64 " window(s); share of %s\n"
		 "  %-13s %8s %12s %14s %7s\n",
		 s->windows, by_time ? "time (TSC ticks)" : "bytes (no timing)",
		 "", "count", "bytes", "ticks", "share");
	pts_out_puts(w->out, line);
	snprintf(line, sizeof(line), "  %-13s %8" PRIu64 " %12" PRIu64
				     " %14" PRIu64 " %6.1f%%\n",
		 "(windows)", s->windows, s->window_bytes, s->window_ticks,
		 share(by_time ? s->window_ticks : s->window_bytes,
		       by_time ? ticks : bytes));
	pts_out_puts(w->out, line);
	for (int c = 0; c < PTS_GAP_CAUSE_COUNT; c++) {
		if (!s->gaps[c])
			continue;
		snprintf(line, sizeof(line), "  %-13s %8" PRIu64 " %12" PRIu64
					     " %14" PRIu64 " %6.1f%%\n",
			 pts_gap_cause_name(c), s->gaps[c], s->gap_bytes[c],
			 s->gap_ticks[c],
			 share(by_time ? s->gap_ticks[c] : s->gap_bytes[c],
			       by_time ? ticks : bytes));
		pts_out_puts(w->out, line);
	}
	if (saturated)
		pts_out_puts(w->out, "note: a tick sum stopped at 2^64-1 (the "
				     "TSC jumps that far): shares are of "
				     "the sums shown\n");
	if (w->opts.tsc_hz && s->has_time) {
		snprintf(line, sizeof(line), "time: %.6f s traced\n",
			 (double)(s->last_tsc - s->first_tsc) /
				 (double)w->opts.tsc_hz);
		pts_out_puts(w->out, line);
	}
	snprintf(line, sizeof(line),
		 "enclave calls: %" PRIu64 " eenter, %" PRIu64 " eresume; "
		 "exits: %" PRIu64 " eexit, %" PRIu64 " aex\n",
		 s->eenter, s->eresume, s->eexit, s->aex);
	pts_out_puts(w->out, line);
	if (!w->opts.verify) {
		pts_out_puts(w->out, "violations: not checked (--verify)\n");
	} else {
		for (int r = 0; r < PTS_RULE_COUNT; r++)
			nv += s->violations[r];
		snprintf(line, sizeof(line), "violations: %" PRIu64 "\n", nv);
		pts_out_puts(w->out, line);
		for (int r = 0; r < PTS_RULE_COUNT; r++) {
			if (!s->violations[r])
				continue;
			snprintf(line, sizeof(line), "  %-24s %8" PRIu64 "\n",
				 pts_rule_name(r), s->violations[r]);
			pts_out_puts(w->out, line);
		}
	}
	if (s->backwards) {
		snprintf(line, sizeof(line),
			 "note: %" PRIu64 " record(s) end earlier than they "
			 "begin (the clock went back: CYC time ran past a "
			 "later MTC, or a TSC went back): their ticks are "
			 "left out\n",
			 s->backwards);
		pts_out_puts(w->out, line);
	}
	if (s->mtc_unrated && s->has_time)
		pts_out_puts(w->out, "note: MTC packets but no TSC/CTC ratio "
				     "(--cpuid15 or --config): only TSC "
				     "packets move time\n");
	if (w->opts.mtc_freq_assumed && s->has_time)
		pts_out_puts(w->out,
			     "note: no MTCFreq given (--mtc-freq, --ctl or "
			     "--config): MTC times are read with MTCFreq 0\n");
	if (!w->opts.have_map)
		pts_out_puts(w->out,
			     "note: no enclave map: an EENTER/ERESUME looks like "
			     "an interrupt (fup+tip.pgd); give --enclave or "
			     "images to tell them apart\n");
}

static void summary_jsonl(struct pts_winrep *w, const struct pts_win_summary *s)
{
	char line[LINE_MAX_ * 2];
	size_t len, cap = sizeof(line);
	const char *sep = "";

	len = put(line, 0, cap, "{");
	if (w->opts.jsonl_fields)
		len += w->opts.jsonl_fields(w->opts.jsonl_ctx, NULL, line + len,
					    cap - len);
	len = put(line, len, cap,
		  "\"type\":\"summary\",\"windows\":%" PRIu64
		  ",\"window_bytes\":%" PRIu64 ",\"window_ticks\":%" PRIu64
		  ",\"gaps\":{",
		  s->windows, s->window_bytes, s->window_ticks);
	for (int c = 0; c < PTS_GAP_CAUSE_COUNT; c++) {
		if (!s->gaps[c])
			continue;
		len = put(line, len, cap,
			  "%s\"%s\":{\"count\":%" PRIu64 ",\"bytes\":%" PRIu64
			  ",\"ticks\":%" PRIu64 "}",
			  sep, pts_gap_cause_name(c), s->gaps[c],
			  s->gap_bytes[c], s->gap_ticks[c]);
		sep = ",";
	}
	len = put(line, len, cap,
		  "},\"eenter\":%" PRIu64 ",\"eresume\":%" PRIu64
		  ",\"eexit\":%" PRIu64 ",\"aex\":%" PRIu64,
		  s->eenter, s->eresume, s->eexit, s->aex);
	if (w->opts.verify) {
		sep = "";
		len = put(line, len, cap, ",\"violations\":{");
		for (int r = 0; r < PTS_RULE_COUNT; r++) {
			if (!s->violations[r])
				continue;
			len = put(line, len, cap, "%s\"%s\":%" PRIu64, sep,
				  pts_rule_name(r), s->violations[r]);
			sep = ",";
		}
		len = put(line, len, cap, "}");
	}
	if (s->backwards)
		len = put(line, len, cap, ",\"backwards\":%" PRIu64,
			  s->backwards);
	len = put(line, len, cap, "}\n");
	pts_out_puts(w->out, line);
}

static void print_summary(struct pts_winrep *w)
{
	struct pts_win_summary s;

	pts_win_summary(w->model, &s);
	if (w->opts.jsonl)
		summary_jsonl(w, &s);
	else
		summary_text(w, &s);
}

/* --- driving the model ---------------------------------------------------- */

int pts_winrep_init(struct pts_winrep *w, const struct pts_trace_config *cfg,
		    const struct pts_winrep_opts *opts, struct pts_out *out)
{
	memset(w, 0, sizeof(*w));
	w->opts = *opts;
	w->out = out;
	w->model = pts_win_new(cfg);
	if (!w->model)
		return -PTS_ERR_NOMEM;
	pts_win_set_verify(w->model, opts->verify);
	if (!opts->jsonl) {
		char line[LINE_MAX_];

		snprintf(line, sizeof(line),
			 "%-6s %10s %10s %9s %12s  %-12s %s\n", "kind", "start",
			 "end", "bytes", "ticks", "cause",
			 "from -> to [basis] details");
		pts_out_puts(out, line);
	}
	return 0;
}

void pts_winrep_fini(struct pts_winrep *w)
{
	pts_win_free(w->model);
	w->model = NULL;
}

void pts_winrep_feed(struct pts_winrep *w, const struct pts_packet *pkts,
		     int n)
{
	for (int i = 0; i < n;) {
		const int ret = pts_win_feed_batch(w->model, pkts + i, n - i);

		if (ret <= 0) { /* cannot happen: not ended */
			w->failed = 1;
			return;
		}
		i += ret;
		drain_model(w, 1);
	}
}

void pts_winrep_lost(struct pts_winrep *w, int cause, uint64_t begin,
		     uint64_t end)
{
	drain_model(w, pts_win_lost(w->model, cause, begin, end));
}

void pts_winrep_evidence(struct pts_winrep *w,
			 const struct pts_win_evidence *ev)
{
	const int ret = pts_win_evidence(w->model, ev);

	/* NOSYNC: the model has no gap open there (the two decoders
	 * disagree after lost bytes); the evidence says nothing then. */
	if (ret != -PTS_ERR_NOSYNC)
		drain_model(w, ret);
}

int pts_winrep_decode(struct pts_winrep *w, struct pts_pkt_decoder *dec,
		      struct pts_input *in)
{
	struct pts_packet pkts[BATCH];
	uint64_t begin, end;

	for (;;) {
		/* Skimming, the packets that only add to a window's counts
		 * are summed up, not stored: faster while records are rare
		 * (SKIM_MIN). Without skim actions (in PSB+...), a few
		 * packets at a time: the model soon has actions again. */
		const int plain = w->ev || w->plain_next;
		struct pts_skim_call clock;
		const uint8_t *skim =
			plain ? NULL : pts_win_skim_actions(w->model, &clock);
		const uint64_t at = pts_pkt_offset(dec);
		struct pts_skim sum = {0};
		const int n = skim ? pts_pkt_skim_batch(dec, in, skim, pkts,
							BATCH, &sum, &clock)
				   : pts_pkt_next_batch(dec, in, pkts,
							plain ? BATCH
							      : UNSKIMMED);

		/* one plain batch after a short skim, then skim again */
		w->plain_next = skim && pts_pkt_offset(dec) - at < SKIM_MIN;

		if (sum.packets && pts_win_feed_skipped(w->model, &sum) < 0) {
			w->failed = 1;
			return -PTS_ERR_INVALID;
		}
		if (n > 0) {
			w->stuck = 0;
			if (w->ev)
				pts_winev_packets(w->ev, pkts, n);
			else
				pts_winrep_feed(w, pkts, n);
			continue;
		}
		if (n == -PTS_ERR_AGAIN) {
			w->stuck = 0;
			return n;
		}
		if (n == -PTS_ERR_EOS)
			return n;
		if (++w->stuck > STUCK_LIMIT) {
			fprintf(stderr, "ptscope: decoder stuck at offset 0x%llx\n",
				(unsigned long long)pts_pkt_offset(dec));
			return -PTS_ERR_NO_PROGRESS;
		}
		/* Skipped or undecodable bytes, or a last packet cut off by
		 * the end of the data: a gap the model must show. */
		pts_pkt_error_range(dec, &begin, &end);
		const int cut =
			(n == -PTS_ERR_TRUNCATED && w->opts.tail_truncated) ||
			(begin == 0 && w->opts.lead_truncated);
		const int cause = cut ? PTS_GAP_TRUNCATED
				      : PTS_GAP_DECODE_ERROR;
		if (w->ev)
			pts_winev_lost(w->ev, cause, begin, end);
		else
			pts_winrep_lost(w, cause, begin, end);
	}
}

void pts_winrep_truncated(struct pts_winrep *w, uint64_t offset)
{
	drain_model(w, pts_win_lost(w->model, PTS_GAP_TRUNCATED, offset,
				    offset));
}

void pts_winrep_finish(struct pts_winrep *w, uint64_t end)
{
	drain_model(w, pts_win_end(w->model, end));
	print_summary(w);
}
