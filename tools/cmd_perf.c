/* ptscope perf: a Linux perf.data capture. `info` says what the file holds,
 * `dump` prints the packets of each AUXTRACE queue (one PT stream per CPU
 * or thread) as `ptscope dump` does. The PT bytes are decoded in place from
 * the mapped file. */
#include "cli.h"
#include "commands.h"
#include "dump_drain.h"
#include "perf_cmd.h"

#include <ptscope/perfdata.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char cmd[] = "perf";

/* Output space reserved per line: the longest packet line plus the queue
 * fields and a JSON-escaped 16-byte comm stay far below this. */
#define LINE_MAX_ 1024

/* What decoding one queue found; also the per-line context of `dump`. */
struct queue_walk {
	struct perf_cmd *pc;
	const struct pts_perf_queue *q;
	uint32_t qi;
	const struct pts_perf_buffer *buf; /* the buffer being fed */
	struct dump_drain drain;
	int print;
	/* time and thread of the current position */
	int have_time;
	uint64_t time;
	int32_t tid;
	struct pts_perf_str comm;
	uint64_t resyncs;
	/* With --tid: the '#' lines wait for the first line of the thread
	 * (a queue or buffer without one gets none), and a per-cpu queue's
	 * packets before its first TSC (the PSB, the start of PSB+) for the
	 * thread that TSC places there. */
	char pending[2][320];
	uint32_t npending, nheld;
	struct pts_packet held[32];
};

static void help(void)
{
	fputs("usage: ptscope perf [OPTIONS] (info|dump|flow|windows) PERF.DATA\n"
	      "\n"
	      "Reads a Linux perf.data file holding Intel PT (perf record -e\n"
	      "intel_pt//), in file or pipe mode ('-' reads standard input).\n"
	      "\n"
	      "actions:\n"
	      "  info     what the capture holds: events, PT configuration,\n"
	      "           time conversion, queues (one per CPU or thread) with\n"
	      "           their buffers, bytes and packets (also counted as\n"
	      "           `perf report -D` counts them), threads, lost data\n"
	      "  dump     the packets of every queue, as `ptscope dump` prints\n"
	      "           them; each queue and buffer starts with a '#' line.\n"
	      "           Offsets are positions in the queue's stream (its\n"
	      "           buffers joined). --format jsonl adds queue, cpu, tid,\n"
	      "           comm and perf time (ns, of the last TSC) to each line\n"
	      "  flow     the executed instructions of every queue, decoded\n"
	      "           with the code the MMAP records name (found under\n"
	      "           --sysroot, through --remap or in the build-id cache).\n"
	      "           --format ptxed (default) as `ptscope flow`; jsonl\n"
	      "           adds queue, cpu, tid, comm and perf time (ns) to each\n"
	      "           line; perf prints what `perf script --itrace=i0ns\n"
	      "           -F comm,tid,cpu,time,ip,sym` prints, to diff with it\n"
	      "  windows  the windows report of `ptscope windows` per queue,\n"
	      "           configured from the PT event; AUX records flagged\n"
	      "           TRUNCATED become \"truncated\" gaps. --format text\n"
	      "           (default) or jsonl (queue fields and perf time first)\n"
	      "\n"
	      "options:\n"
	      "      --sysroot=DIR  look for mapped files under DIR (also\n"
	      "                     --symfs, as perf calls it); then in the\n"
	      "                     build-id cache ~/.debug\n"
	      "      --remap=OLD=NEW  a mapped path starting with OLD is\n"
	      "                     looked for with NEW in its place (first;\n"
	      "                     up to 16 times)\n"
	      "      --cpu=N        only the queue(s) of CPU N\n"
	      "      --tid=N        only thread N (queues of N; in per-cpu\n"
	      "                     queues the stretches where N runs;\n"
	      "                     exit 2 when N has no line there; -q\n"
	      "                     counts per-cpu queues whole; windows:\n"
	      "                     per-thread queues only)\n"
	      "  -f, --format=FMT   dump: ptdump (default) or jsonl; flow: ptxed\n"
	      "                     (default), jsonl or perf; windows: text\n"
	      "                     (default) or jsonl\n"
	      "      --no-inst      flow, ptxed: addresses only\n"
	      "      --verify       windows: check the verification rules\n"
	      "      --enclave=SPEC windows: an enclave, as `ptscope windows`\n"
	      "      --lastip       dump, ptdump: show the last-IP\n"
	      "      --no-offset    dump, ptdump: leave out the offset column\n"
	      "      --order=ORDER  dump, flow: with several queues, print\n"
	      "                     in time order (time: default of flow, as\n"
	      "                     perf script) or queue after queue (queue:\n"
	      "                     default of dump, as perf report -D);\n"
	      "                     without time conversion always by queue\n"
	      "  -q, --quiet        dump, flow: print only the summary on stderr\n"
	      "                     (of whole queues: not with --tid)\n"
	      "  -v, --verbose      info: also list every mapped file and\n"
	      "                     buffer (offsets; bytes repeated in\n"
	      "                     snapshots, skipped)\n"
	      "  -h, --help         this text\n"
	      "\n"
	      "Exit status: 0 clean, 1 the file is damaged (truncated or\n"
	      "corrupt: what precedes the damage is shown) or the trace had\n"
	      "decode errors, 2 usage or I/O error.\n",
	      stdout);
}

/* --cpu or --tid: a number up to INT32_MAX into @id. Returns 0, or prints
 * why not and returns -1. */
static int parse_id(const char *opt, int64_t *id)
{
	uint64_t v;
	if (pts_cli_parse_u64(cmd, opt, optarg, INT32_MAX, &v) < 0)
		return -1;
	*id = (int64_t)v;
	return 0;
}

/* Options only some actions read (a bit per enum perf_action), and the
 * one format they need (FORMAT_DEFAULT: any): given elsewhere they would
 * be ignored without a word. */
#define FOR(a) (1u << (a))
#define IMAGES_READERS \
	(FOR(ACTION_INFO) | FOR(ACTION_FLOW) | FOR(ACTION_WINDOWS))
static const struct {
	char opt;
	const char *name;
	unsigned actions;
	enum perf_format format;
} scoped[] = {
	{'R', "--sysroot (--symfs)", IMAGES_READERS, FORMAT_DEFAULT},
	{'M', "--remap", IMAGES_READERS, FORMAT_DEFAULT},
	{'n', "--no-inst", FOR(ACTION_FLOW), FORMAT_PTXED},
	{'V', "--verify", FOR(ACTION_WINDOWS), FORMAT_DEFAULT},
	{'E', "--enclave", FOR(ACTION_WINDOWS), FORMAT_DEFAULT},
	{'L', "--lastip", FOR(ACTION_DUMP), FORMAT_PTDUMP},
	{'O', "--no-offset", FOR(ACTION_DUMP), FORMAT_PTDUMP},
	{'Q', "--order", FOR(ACTION_DUMP) | FOR(ACTION_FLOW), FORMAT_DEFAULT},
	{'q', "--quiet", FOR(ACTION_DUMP) | FOR(ACTION_FLOW), FORMAT_DEFAULT},
	{'v', "--verbose", FOR(ACTION_INFO), FORMAT_DEFAULT},
	{'f', "--format",
	 FOR(ACTION_DUMP) | FOR(ACTION_FLOW) | FOR(ACTION_WINDOWS),
	 FORMAT_DEFAULT},
};
#undef IMAGES_READERS
#undef FOR

/* Refuses an option in @seen that @pc's action or format does not read.
 * Returns 0 or the exit status. */
static int check_scoped(const struct perf_cmd *pc, const char *seen,
			const char *action)
{
	for (size_t i = 0; i < sizeof(scoped) / sizeof(scoped[0]); i++) {
		if (!seen[(int)scoped[i].opt])
			continue;
		if (!(scoped[i].actions & (1u << pc->action)))
			return pts_cli_usage_error(
				cmd, "%s does not apply to %s (see --help)",
				scoped[i].name, action);
		if (scoped[i].format != FORMAT_DEFAULT &&
		    scoped[i].format != pc->format)
			return pts_cli_usage_error(
				cmd, "%s applies to %s's default format only",
				scoped[i].name, action);
	}
	return 0;
}

static int parse_args(struct perf_cmd *pc, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"sysroot", required_argument, NULL, 'R'},
		{"symfs", required_argument, NULL, 'R'},
		{"remap", required_argument, NULL, 'M'},
		{"cpu", required_argument, NULL, 'C'},
		{"tid", required_argument, NULL, 'T'},
		{"format", required_argument, NULL, 'f'},
		{"lastip", no_argument, NULL, 'L'},
		{"no-offset", no_argument, NULL, 'O'},
		{"quiet", no_argument, NULL, 'q'},
		{"no-inst", no_argument, NULL, 'n'},
		{"verify", no_argument, NULL, 'V'},
		{"enclave", required_argument, NULL, 'E'},
		{"verbose", no_argument, NULL, 'v'},
		{"order", required_argument, NULL, 'Q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;
	char seen[128] = {0};

	while ((c = pts_cli_getopt(argc, argv, ":f:qvh", longopts)) != -1) {
		if (c > 0 && c < 128)
			seen[c] = 1;
		switch (c) {
		case 'R': {
			struct stat st;
			/* a typo would only show as "files not found" */
			const char *why = stat(optarg, &st) != 0
						  ? strerror(errno)
					  : !S_ISDIR(st.st_mode) ? "not a directory"
								 : NULL;

			if (why)
				return pts_cli_usage_error(
					cmd, "--sysroot %s: %s", optarg, why);
			pc->sysroot = optarg;
			break;
		}
		case 'M':
			if (!strchr(optarg, '=') ||
			    pc->nr_remaps == PTS_PERF_MAX_REMAPS)
				return pts_cli_usage_error(
					cmd, "--remap: expected OLD=NEW (at "
					     "most 16), got '%s'",
					optarg);
			pc->remaps[pc->nr_remaps++] = optarg;
			break;
		case 'C':
			if (parse_id("--cpu", &pc->cpu) < 0)
				return PTS_EXIT_USAGE;
			break;
		case 'T':
			if (parse_id("--tid", &pc->tid) < 0)
				return PTS_EXIT_USAGE;
			break;
		case 'f': {
			/* in enum perf_format's order, after FORMAT_DEFAULT */
			static const char *const names[] = {
				"ptdump", "jsonl", "ptxed", "perf", "text", NULL};
			int i;

			if (pts_cli_parse_choice(cmd, "--format", optarg,
						 names, &i))
				return PTS_EXIT_USAGE;
			pc->format = (enum perf_format)(FORMAT_DEFAULT + 1 + i);
			break;
		}
		case 'n':
			pc->no_inst = 1;
			break;
		case 'Q': {
			static const char *const names[] = {"time", "queue",
							    NULL};
			int i;

			if (pts_cli_parse_choice(cmd, "--order", optarg, names,
						 &i))
				return PTS_EXIT_USAGE;
			pc->order_by = i ? ORDER_QUEUE : ORDER_TIME;
			break;
		}
		case 'V':
			pc->verify = 1;
			break;
		case 'E':
			if (pc->nr_enclaves == PTS_PERF_MAX_ENCLAVES)
				return pts_cli_usage_error(cmd, "at most %d "
							   "enclaves",
							   PTS_PERF_MAX_ENCLAVES);
			pc->enclaves[pc->nr_enclaves++] = optarg;
			break;
		case 'L':
			pc->popts.show_lastip = 1;
			break;
		case 'O':
			pc->popts.show_offset = 0;
			break;
		case 'q':
			pc->quiet = 1;
			break;
		case 'v':
			pc->verbose = 1;
			break;
		case 'h':
			help();
			return -1;
		default:
			return pts_cli_bad_option(cmd, c, argv);
		}
	}
	if (optind + 2 != argc)
		return pts_cli_usage_error(cmd, "expected an action and one "
						"perf.data file");
	/* the counts come from the queues' decoders, not from the lines a
	 * thread gets */
	if (seen['q'] && seen['T'])
		return pts_cli_usage_error(cmd, "--quiet counts whole queues: "
						"it does not take --tid");
	static const char *const actions[] = {"info", "dump", "flow",
					      "windows"};
	/* Which formats each action prints; the first is its default. */
	static const enum perf_format formats[4][3] = {
		{FORMAT_TEXT, FORMAT_TEXT, FORMAT_TEXT},
		{FORMAT_PTDUMP, FORMAT_JSONL, FORMAT_JSONL},
		{FORMAT_PTXED, FORMAT_JSONL, FORMAT_PERF},
		{FORMAT_TEXT, FORMAT_JSONL, FORMAT_JSONL}};
	for (int i = 0; i < 4; i++) {
		if (strcmp(argv[optind], actions[i]) != 0)
			continue;
		pc->action = (enum perf_action)i;
		pc->path = argv[optind + 1];
		if (pc->format == FORMAT_DEFAULT || i == ACTION_INFO)
			pc->format = formats[i][0];
		for (int k = 0; k < 3; k++)
			if (pc->format == formats[i][k])
				return check_scoped(pc, seen, actions[i]);
		return pts_cli_usage_error(cmd, "--format: not one %s prints",
					   actions[i]);
	}
	return pts_cli_usage_error(cmd, "unknown action '%s'", argv[optind]);
}

/* ------------------------------------------------------------------------ */
/* Walking one queue's packets.                                             */

/* Appends @s JSON-escaped (control bytes as \u00XX). */
size_t pts_perfcmd_json_str(char *p, size_t room, const char *s, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len && n + 7 < room; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '"' || ch == '\\') {
			p[n++] = '\\';
			p[n++] = (char)ch;
		} else if (ch < 0x20 || ch == 0x7f) {
			n += (size_t)snprintf(p + n, room - n, "\\u%04x", ch);
		} else {
			p[n++] = (char)ch;
		}
	}
	return n;
}

/* Which thread runs now: per-cpu queues follow the switch sideband once a
 * time is known; otherwise the AUXTRACE record's tid stands. */
static void update_thread(struct queue_walk *w)
{
	int32_t pid = -1, tid = w->q->tid;
	if (w->q->cpu >= 0 && w->have_time)
		pts_perf_thread_at(w->pc->perf, w->q->cpu, w->time, &pid, &tid);
	if (tid != w->tid || !w->comm.ptr) {
		w->comm = pts_perf_comm_of(w->pc->perf, tid);
		w->tid = tid;
	}
}

/* Prints a '#' line now. */
static void put_comment(struct queue_walk *w, const char *text)
{
	pts_perfcmd_mark(w->pc, w->time);
	char *p = pts_out_reserve(&w->pc->out, LINE_MAX_);
	size_t room = pts_out_room(&w->pc->out) - 1;
	int len = snprintf(p, room, "%s", text);
	pts_out_line(&w->pc->out, p,
		     len < 0 || (size_t)len >= room ? (int)room - 1 : len);
}

/* Whether the line at the current position is printed; the '#' lines
 * that waited for it come first. */
static int line_wanted(struct queue_walk *w)
{
	if (!w->print || (w->pc->tid >= 0 && w->tid != w->pc->tid))
		return 0;
	for (uint32_t i = 0; i < w->npending; i++)
		put_comment(w, w->pending[i]);
	w->npending = 0;
	return 1;
}

/* The queue fields that start every jsonl line, ending in ','. */
static size_t jsonl_prefix(const struct queue_walk *w, char *p, size_t room)
{
	int n = snprintf(p, room, "{\"queue\":%" PRIu32 ",\"cpu\":%" PRId32
				  ",\"tid\":%" PRId32 ",\"comm\":\"",
			 w->q->idx, w->q->cpu, w->tid);
	size_t len = n > 0 ? (size_t)n : 0;
	len += pts_perfcmd_json_str(p + len, room - len, w->comm.ptr, w->comm.len);
	if (w->have_time)
		n = snprintf(p + len, room - len, "\",\"time\":%" PRIu64 ",",
			     w->time);
	else
		n = snprintf(p + len, room - len, "\",\"time\":null,");
	return len + (n > 0 ? (size_t)n : 0);
}

/* A jsonl line: the @n prefix bytes at @p, then the object of @len bytes a
 * printer wrote over the prefix's last byte; its '{' becomes ','. */
static void put_jsonl(struct queue_walk *w, char *p, size_t n, int len)
{
	if (len <= 0)
		return;
	p[n - 1] = ',';
	pts_out_line(&w->pc->out, p, (int)n - 1 + len);
}

static void print_packet(struct queue_walk *w, const struct pts_packet *pkt);

/* The packets held, printed as the thread now placed (without a time:
 * no TSC preceded them). */
static void release(struct queue_walk *w)
{
	const int have_time = w->have_time;
	const uint32_t n = w->nheld;
	w->have_time = 0;
	w->nheld = 0;
	for (uint32_t i = 0; i < n; i++)
		print_packet(w, &w->held[i]);
	w->have_time = have_time;
}

static void emit_packet(struct queue_walk *w, const struct pts_packet *pkt)
{
	if (pkt->kind == PTS_PKT_TSC && w->pc->tc.valid) {
		uint64_t tsc = pts_perf_tsc_extend(pkt->u.tsc, w->buf->reference);
		w->time = pts_perf_tsc_to_time(&w->pc->tc, tsc);
		w->have_time = 1;
		update_thread(w);
		release(w);
	}
	const uint32_t room = sizeof(w->held) / sizeof(w->held[0]);
	if (w->pc->tid >= 0 && w->q->cpu >= 0 && !w->have_time &&
	    w->pc->tc.valid && w->nheld < room) {
		w->held[w->nheld++] = *pkt;
		return;
	}
	print_packet(w, pkt);
}

static void print_packet(struct queue_walk *w, const struct pts_packet *pkt)
{
	if (!line_wanted(w))
		return;
	w->pc->tid_lines++;
	pts_perfcmd_mark(w->pc, w->time);
	char *p = pts_out_reserve(&w->pc->out, LINE_MAX_);
	size_t room = pts_out_room(&w->pc->out) - 1;
	if (w->pc->format == FORMAT_PTDUMP) {
		pts_out_line(&w->pc->out, p,
			     pts_print_ptdump(pkt, &w->pc->popts,
					      &w->drain.lip, p, room));
		return;
	}
	size_t n = jsonl_prefix(w, p, room);
	put_jsonl(w, p, n, pts_print_jsonl(pkt, p + n - 1, room - n + 1));
}

static void emit_packets(void *ctx, const struct pts_packet *pkts, int n)
{
	for (int i = 0; i < n; i++)
		emit_packet(ctx, &pkts[i]);
}

static void emit_condition(void *ctx, int err, uint64_t begin, uint64_t end)
{
	struct queue_walk *w = ctx;

	release(w);
	if (!line_wanted(w))
		return;
	w->pc->tid_lines++;
	pts_perfcmd_mark(w->pc, w->time);
	char *p = pts_out_reserve(&w->pc->out, LINE_MAX_);
	size_t room = pts_out_room(&w->pc->out) - 1;
	if (w->pc->format == FORMAT_PTDUMP) {
		pts_out_line(&w->pc->out, p,
			     pts_print_ptdump_error(err, begin, end, p, room));
		return;
	}
	size_t n = jsonl_prefix(w, p, room);
	put_jsonl(w, p, n, pts_print_jsonl_error(err, begin, end, p + n - 1,
						 room - n + 1));
}

static void comment(struct queue_walk *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A '#' line in ptdump output; nothing in jsonl (the lines carry it).
 * With --tid it waits for the thread's first line (line_wanted()); a
 * buffer's line replaces that of the buffer before when none came. */
static void comment(struct queue_walk *w, const char *fmt, ...)
{
	char text[sizeof(w->pending[0])];
	if (!w->print || w->pc->format != FORMAT_PTDUMP)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (w->pc->tid < 0) {
		put_comment(w, text);
		return;
	}
	if (w->npending == 2)
		w->npending = 1;
	memcpy(w->pending[w->npending++], text, sizeof(text));
}

/* Feeds every buffer of queue @qi through one decoder; a buffer that does
 * not continue its predecessor ends the stream there and restarts at the
 * next PSB. Returns 0 or -PTS_ERR_NO_PROGRESS / -PTS_ERR_NOMEM. */
static int walk_queue(struct perf_cmd *pc, uint32_t qi, int print,
		      struct queue_walk *w)
{
	memset(w, 0, sizeof(*w));
	w->pc = pc;
	w->qi = qi;
	w->q = pts_perf_queue_get(pc->perf, qi);
	w->print = print;
	w->tid = w->q->tid;
	w->comm = pts_perf_comm_of(pc->perf, w->tid);
	const struct pts_pkt_config config = {.cpu = pc->machine};
	w->drain.dec = pts_pkt_decoder_new(&config);
	if (!w->drain.dec)
		return -PTS_ERR_NOMEM;
	w->drain.on_packets = emit_packets;
	w->drain.on_condition = emit_condition;
	w->drain.ctx = w;
	pts_lastip_reset(&w->drain.lip);
	comment(w, "# queue %" PRIu32 ": cpu %" PRId32 ", tid %" PRId32
		   "%s%.*s%s, %" PRIu32 " buffer(s), %" PRIu64 " bytes",
		w->q->idx, w->q->cpu, w->q->tid, w->comm.len ? " (" : "",
		(int)w->comm.len, w->comm.ptr, w->comm.len ? ")" : "",
		w->q->nr_buffers, w->q->bytes);
	uint64_t soff = 0;
	int rc = 0;
	for (uint32_t j = 0;
	     j < w->q->nr_buffers && rc != -PTS_ERR_NO_PROGRESS; j++) {
		w->buf = pts_perf_queue_buffer(pc->perf, qi, j);
		if (j > 0 && !w->buf->consecutive) {
			rc = pts_dump_drain_end(&w->drain);
			pts_pkt_reset(w->drain.dec, soff, 0);
			pts_lastip_reset(&w->drain.lip);
			w->resyncs++;
		}
		comment(w, "# buffer %" PRIu32 ": file offset 0x%" PRIx64
			   ", stream offset 0x%" PRIx64 ", %" PRIu64
			   " bytes, aux offset 0x%" PRIx64 "%s",
			j, w->buf->data_offset + w->buf->skip, soff,
			w->buf->use_size, w->buf->aux_offset + w->buf->skip,
			j == 0 ? "" : w->buf->consecutive ? ", continues"
							  : ", not consecutive: resync");
		struct pts_input in = {w->buf->data, (size_t)w->buf->use_size, 0};
		if (rc != -PTS_ERR_NO_PROGRESS)
			rc = pts_dump_drain(&w->drain, &in);
		soff += w->buf->use_size;
		pts_perfcmd_progress(pc, w->buf->use_size);
	}
	if (rc != -PTS_ERR_NO_PROGRESS)
		rc = pts_dump_drain_end(&w->drain);
	release(w);
	pts_pkt_decoder_free(w->drain.dec);
	w->drain.dec = NULL;
	return rc == -PTS_ERR_NO_PROGRESS ? rc : 0;
}

int pts_perfcmd_next_mmap(struct perf_cmd *pc, struct pts_perf_cursor *cur,
			  struct pts_perf_record *rec)
{
	int rc;
	while ((rc = pts_perf_next_record(pc->perf, cur, rec, NULL)) != 0)
		if (rc > 0 && (rec->type == PTS_PERF_RECORD_MMAP ||
			       rec->type == PTS_PERF_RECORD_MMAP2))
			return 1;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Actions.                                                                  */


/* printf into the output buffer; a line longer than 4 KiB is cut. */
static void outf(struct perf_cmd *pc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void outf(struct perf_cmd *pc, const char *fmt, ...)
{
	char *p = pts_out_reserve(&pc->out, 4096);
	size_t room = pts_out_room(&pc->out);
	va_list ap;
	va_start(ap, fmt);
	int len = vsnprintf(p, room, fmt, ap);
	va_end(ap);
	if (len > 0)
		pts_out_commit(&pc->out, (size_t)len < room ? (size_t)len
							    : room - 1);
}

static void info_file(struct perf_cmd *pc)
{
	const struct pts_perf_summary *s = pts_perf_summary(pc->perf);
	outf(pc, "file:        %s (%" PRIu64 " bytes, %s mode)\n", pc->path,
	     s->file_size, s->pipe ? "pipe" : "file");
	outf(pc, "records:     %" PRIu64 " in [0x%" PRIx64 ", 0x%" PRIx64
		 ")%s",
	     s->nr_records, s->data_offset, s->data_end,
	     s->nr_bad_records ? "" : "\n");
	if (s->nr_bad_records)
		outf(pc, ", %" PRIu64 " malformed (skipped)\n",
		     s->nr_bad_records);
	outf(pc, "            ");
	for (uint32_t t = 0; t < PTS_PERF_RECORD_MAX; t++)
		if (s->record_counts[t])
			outf(pc, " %s %" PRIu64, pts_perf_record_name(t),
			     s->record_counts[t]);
	outf(pc, "\n");
	if (s->version.len || s->hostname.len)
		outf(pc, "recorded:    perf %.*s%son %.*s, %.*s %.*s\n",
		     (int)s->version.len, s->version.ptr,
		     s->version.len ? " " : "(version unknown) ",
		     (int)s->hostname.len, s->hostname.ptr,
		     (int)s->osrelease.len, s->osrelease.ptr, (int)s->arch.len,
		     s->arch.ptr);
	if (s->cpuid.len || s->nr_cpus_avail)
		outf(pc, "cpu:         %.*s%s%.*s%s, %" PRIu32 " online of %" PRIu32
			 "\n",
		     (int)s->cpuid.len, s->cpuid.ptr, s->cpudesc.len ? " (" : "",
		     (int)s->cpudesc.len, s->cpudesc.ptr,
		     s->cpudesc.len ? ")" : "", s->nr_cpus_online,
		     s->nr_cpus_avail);
	if (s->nr_cmdline) {
		outf(pc, "cmdline:    ");
		uint32_t n = s->nr_cmdline < 16 ? s->nr_cmdline : 16;
		for (uint32_t i = 0; i < n; i++)
			outf(pc, " %.*s", (int)s->cmdline[i].len,
			     s->cmdline[i].ptr);
		outf(pc, "%s\n", s->nr_cmdline > 16 ? " ..." : "");
	}
	for (uint32_t i = 0; i < pts_perf_attr_count(pc->perf); i++) {
		const struct pts_perf_attr *a = pts_perf_attr_get(pc->perf, i);
		outf(pc, "event %-5" PRIu32 " %.*s%stype %" PRIu32
			 ", config 0x%" PRIx64 ", sample_type 0x%" PRIx64
			 ", %" PRIu32 " id(s)%s%s\n",
		     i, (int)a->name.len, a->name.ptr, a->name.len ? ": " : "",
		     a->type, a->config, a->sample_type, a->nr_ids,
		     a->sample_id_all ? ", sample_id_all" : "",
		     a->context_switch ? ", context_switch" : "");
	}
}

static void info_pt(struct perf_cmd *pc)
{
	const struct pts_perf_summary *s = pts_perf_summary(pc->perf);
	struct pts_perf_pt_info pt;
	int rc = pts_perf_pt_info(pc->perf, &pt);
	if (rc == -PTS_ERR_UNSUPPORTED) {
		outf(pc, "intel_pt:    none: AUXTRACE type %" PRIu32
			 " is not Intel PT\n",
		     pt.type);
		return;
	}
	if (rc < 0) {
		char why[96];
		outf(pc, "intel_pt:    none: %s\n",
		     pts_perfcmd_pt_info_error(&pt, why, sizeof(why)));
		return;
	}
	static const char *const sched[] = {"none", "sched_switch tracepoint",
					    "per-thread SWITCH",
					    "cpu-wide SWITCH_CPU_WIDE"};
	outf(pc, "intel_pt:    PMU type %" PRIu64 "%s, %" PRIu32
		 " priv entries, %s buffers, snapshot %s, switches: %s\n",
	     pt.pmu_type,
	     s->intel_pt_pmu_type == pt.pmu_type ? " (intel_pt)" : "",
	     pt.nr_priv, pt.per_cpu_mmaps ? "per-cpu" : "per-thread",
	     pt.snapshot_mode ? "yes" : "no",
	     pt.have_sched_switch < 4 ? sched[pt.have_sched_switch] : "?");
	struct pts_perf_pt_config cfg;
	if (pts_perf_pt_config(pc->perf, &cfg) < 0) {
		outf(pc, "config:      no event has PMU type %" PRIu64
			 ": perf decodes nothing\n",
		     pt.pmu_type);
	} else {
		outf(pc, "config:      RTIT_CTL 0x%" PRIx64 ":%s%s%s%s%s%s%s%s"
			 " mtc_period %u psb_period %u cyc_thresh %u\n",
		     cfg.rtit_ctl, cfg.os ? " os" : "", cfg.user ? " user" : "",
		     cfg.branch ? " branch" : "", cfg.tsc ? " tsc" : "",
		     cfg.mtc ? " mtc" : "", cfg.cyc ? " cyc" : "",
		     cfg.noretcomp ? " noretcomp" : "", cfg.ptw ? " ptw" : "",
		     cfg.mtc_period, cfg.psb_period, cfg.cyc_thresh);
	}
	outf(pc, "timing:      TSC:CTC %" PRIu64 "/%" PRIu64
		 ", max non-turbo ratio %" PRIu64 ", filter %s%.*s\n",
	     pt.tsc_ctc_n, pt.tsc_ctc_d, pt.max_nonturbo_ratio,
	     pt.filter.len ? "" : "none", (int)pt.filter.len, pt.filter.ptr);
	if (pc->tc.valid)
		outf(pc, "time:        perf ns = %" PRIu64 " + TSC * %" PRIu64
			 " >> %" PRIu64 "%s\n",
		     pc->tc.time_zero, pc->tc.time_mult, pc->tc.time_shift,
		     pc->tc.cap_user_time_short ? " (short TSC)" : "");
	else
		outf(pc, "time:        no conversion (timeless)\n");
}

/* Returns the number of decode errors met. */
static uint64_t info_queues(struct perf_cmd *pc)
{
	const struct pts_perf_summary *s = pts_perf_summary(pc->perf);
	uint32_t nq = pts_perf_queue_count(pc->perf);
	uint64_t bytes = 0, packets = 0, perf_packets = 0, nb = 0, errors = 0;
	for (uint32_t i = 0; i < nq; i++) {
		const struct pts_perf_queue *q = pts_perf_queue_get(pc->perf, i);
		nb += q->nr_buffers;
		bytes += q->bytes;
	}
	outf(pc, "queues:      %" PRIu32 ", %" PRIu64 " buffers, %" PRIu64
		 " bytes of PT\n",
	     nq, nb, bytes);
	for (uint32_t i = 0; i < nq; i++) {
		const struct pts_perf_queue *q = pts_perf_queue_get(pc->perf, i);
		if (!pts_perfcmd_queue_selected(pc, q))
			continue;
		struct queue_walk w;
		int rc = walk_queue(pc, i, 0, &w);
		struct pts_perf_str comm = pts_perf_comm_of(pc->perf, q->tid);
		/* perf's count: each buffer on its own, padding included */
		struct pts_perf_pkt_count c = {0};
		for (uint32_t j = 0; j < q->nr_buffers && rc == 0; j++)
			rc = pts_perf_count_packets(
				pts_perf_queue_buffer(pc->perf, i, j), &c);
		packets += w.drain.packets;
		perf_packets += c.perf_packets;
		errors += w.drain.errors + (rc < 0);
		outf(pc, "  queue %-4" PRIu32 " cpu %" PRId32 ", tid %" PRId32
			 "%s%.*s%s: %" PRIu32 " buffer(s), %" PRIu64
			 " bytes, %" PRIu64 " packets (perf -D: %" PRIu64
			 "), %" PRIu64 " decode errors%s\n",
		     q->idx, q->cpu, q->tid, comm.len ? " (" : "",
		     (int)comm.len, comm.ptr, comm.len ? ")" : "",
		     q->nr_buffers, q->bytes, w.drain.packets, c.perf_packets,
		     w.drain.errors, rc < 0 ? " (decoder stuck)" : "");
		outf(pc, "             AUX records %" PRIu64 " (%" PRIu64
			 " bytes); truncated %" PRIu64 ", partial %" PRIu64
			 ", collision %" PRIu64 ", overwrite %" PRIu64
			 "; %" PRIu64 " resync(s) between buffers\n",
		     q->nr_aux, q->aux_bytes, q->aux_truncated, q->aux_partial,
		     q->aux_collision, q->aux_overwrite, w.resyncs);
		for (uint32_t j = 0; pc->verbose && j < q->nr_buffers; j++) {
			const struct pts_perf_buffer *b =
				pts_perf_queue_buffer(pc->perf, i, j);
			outf(pc, "    buffer %-3" PRIu32 " file 0x%" PRIx64
				 ", %" PRIu64 " bytes, aux offset 0x%" PRIx64
				 ", reference 0x%" PRIx64 "%s",
			     j, b->data_offset, b->use_size, b->aux_offset,
			     b->reference, b->consecutive ? ", continues" : "");
			if (b->skip)
				outf(pc, ", %" PRIu64 " repeated bytes skipped",
				     b->skip);
			outf(pc, "\n");
		}
	}
	outf(pc, "packets:     %" PRIu64 " (%" PRIu64
		 " as perf report -D counts them)\n",
	     packets, perf_packets);
	outf(pc, "lost data:   AUX truncated %" PRIu64 ", partial %" PRIu64
		 ", collision %" PRIu64 "; LOST %" PRIu64 " events, "
		 "LOST_SAMPLES %" PRIu64 "\n",
	     s->aux_truncated, s->aux_partial, s->aux_collision,
	     s->nr_lost_events, s->nr_lost_samples);
	return errors;
}

/* Threads (COMM) and mapped files (MMAP/MMAP2) from one record pass. */
static void info_sideband(struct perf_cmd *pc)
{
	struct pts_perf_cursor cur;
	struct pts_perf_record rec;
	uint64_t maps = 0, found = 0, threads = 0;
	struct pts_perf_image_opts iopts = {.sysroot = pc->sysroot,
					    .remaps = pc->remaps,
					    .nr_remaps = pc->nr_remaps};
	char path[4096];
	pts_perf_cursor_init(pc->perf, &cur);
	outf(pc, "threads:    ");
	int rc;
	while ((rc = pts_perf_next_record(pc->perf, &cur, &rec, NULL)) != 0) {
		if (rc < 0)
			continue;
		if (rec.type == PTS_PERF_RECORD_COMM &&
		    (++threads <= 32 || pc->verbose)) {
			outf(pc, " %" PRIu32 ":%.*s%s", rec.u.comm.tid,
			     (int)rec.u.comm.comm.len, rec.u.comm.comm.ptr,
			     rec.u.comm.exec ? "(exec)" : "");
		}
	}
	if (threads > 32 && !pc->verbose)
		outf(pc, " ... (%" PRIu64 " COMM records, -v lists all)",
		     threads);
	outf(pc, "%s\n", threads ? "" : " none named");
	pts_perf_cursor_init(pc->perf, &cur);
	while (pts_perfcmd_next_mmap(pc, &cur, &rec)) {
		const struct pts_perf_mmap *m = &rec.u.mmap;
		maps++;
		int ok = pts_perf_image_path(
				 pc->perf, &iopts, m->filename.ptr,
				 m->filename.len,
				 m->build_id_size ? m->build_id : NULL,
				 m->build_id_size, path, sizeof(path)) == 1;
		found += ok;
		if (pc->verbose)
			outf(pc, "  map %" PRId32 "/%" PRId32 " 0x%" PRIx64
				 "+0x%" PRIx64 " %.*s: %s\n",
			     (int32_t)m->pid, (int32_t)m->tid, m->addr, m->len,
			     (int)m->filename.len, m->filename.ptr,
			     ok ? path : "not found");
	}
	outf(pc, "maps:        %" PRIu64 " (%" PRIu64
		 " files found%s%s), %" PRIu32 " build ids\n",
	     maps, found, pc->sysroot ? " under " : "",
	     pc->sysroot ? pc->sysroot : "", pts_perf_build_id_count(pc->perf));
}

static int do_info(struct perf_cmd *pc)
{
	const struct pts_perf_summary *s = pts_perf_summary(pc->perf);
	info_file(pc);
	info_pt(pc);
	uint64_t errors = info_queues(pc);
	info_sideband(pc);
	outf(pc, "status:      %s%s\n",
	     s->damaged ? "damaged (see the message on stderr)" : "complete",
	     errors ? ", with decode errors" : "");
	return errors ? PTS_EXIT_ERRORS : PTS_EXIT_OK;
}

static int dump_queue(struct perf_cmd *pc, uint32_t qi, void *ctx,
		      struct perf_totals *t)
{
	struct queue_walk w;
	int rc = walk_queue(pc, qi, !pc->quiet, &w);
	t->items += w.drain.packets;
	t->errors += w.drain.errors;
	t->skipped += w.drain.skipped;
	return rc;
}

static int do_dump(struct perf_cmd *pc)
{
	struct perf_totals t;
	pts_perfcmd_each_queue(pc, cmd, dump_queue, NULL, &t);
	if (pc->quiet)
		fprintf(stderr,
			"ptscope perf: %" PRIu32 " queue(s), %" PRIu64
			" bytes, %" PRIu64 " packets, %" PRIu64
			" errors, %" PRIu64 " bytes skipped\n",
			t.queues, t.bytes, t.items, t.errors, t.skipped);
	if (pts_perfcmd_tid_unseen(pc))
		return PTS_EXIT_USAGE;
	return t.failed || t.errors ? PTS_EXIT_ERRORS : PTS_EXIT_OK;
}

int pts_perfcmd_open(const char *who, const char *path,
		     struct pts_perf **perf)
{
	struct pts_perf_error err;
	const int rc = pts_perf_open(path, perf, &err);
	/* no file, no memory, or no perf.data at all (its magic) */
	if (rc < 0 && (err.code == -PTS_ERR_IO ||
		       err.code == -PTS_ERR_NOMEM || err.offset == 0)) {
		pts_cli_error(who, "cannot read %s: %s", path, err.msg);
		return -PTS_EXIT_USAGE;
	}
	if (rc < 0) {
		pts_cli_error(who,
			      "%s is damaged, nothing before it to read: %s",
			      path, err.msg);
		return -PTS_EXIT_ERRORS;
	}
	if (rc == 1)
		pts_cli_error(who, "%s is damaged, reading what precedes it: %s",
			      path, err.msg);
	return rc;
}

int pts_cmd_perf(int argc, char **argv)
{
	struct perf_cmd pc;
	memset(&pc, 0, sizeof(pc));
	pc.cpu = pc.tid = -1;
	pc.popts.show_offset = 1;
	int rc = parse_args(&pc, argc, argv);
	if (rc != 0)
		return rc < 0 ? PTS_EXIT_OK : rc;
	int orc = pts_perfcmd_open(cmd, pc.path, &pc.perf);
	if (orc < 0)
		return -orc;
	int status = pts_perfcmd_check_selection(&pc);
	if (status != 0) {
		pts_perf_close(pc.perf);
		return status;
	}
	pts_perf_time_conv(pc.perf, &pc.tc);
	pts_perf_cpu(pc.perf, &pc.machine);
	if (pts_out_init(&pc.out, stdout, 1 << 20) < 0) {
		pts_cli_error(cmd, "out of memory");
		pts_perf_close(pc.perf);
		return PTS_EXIT_USAGE;
	}
	switch (pc.action) {
	case ACTION_INFO: status = do_info(&pc); break;
	case ACTION_DUMP: status = do_dump(&pc); break;
	case ACTION_FLOW: status = pts_perfcmd_flow(&pc); break;
	case ACTION_WINDOWS: status = pts_perfcmd_windows(&pc); break;
	}
	if (pts_out_fini(&pc.out) < 0) {
		pts_out_error(cmd, &pc.out);
		status = PTS_EXIT_USAGE;
	}
	pts_perf_close(pc.perf);
	if (orc == 1 && status == PTS_EXIT_OK)
		status = PTS_EXIT_ERRORS;
	return status;
}
