/* ptscope dump: the packets of a raw PT trace, as libipt's ptdump prints
 * them or as JSON lines. Streams the trace in chunks through the packet
 * decoder, so memory does not grow with the trace; decode errors show at
 * their offset and decoding resumes at the next PSB. */
#include "cli.h"
#include "progress.h"
#include "commands.h"
#include "dump_drain.h"

#include <string.h>

static const char cmd[] = "dump";

/* Output space reserved per line: far above the longest line we print. */
#define LINE_MAX_ 1024
struct dump {
	int jsonl; /* --format jsonl, else ptdump */
	int quiet;
	struct pts_print_opts popts;
	struct pts_pkt_config config;
	const char *trace;

	struct dump_drain drain; /* the decoder and the counts */
	struct pts_out out;
};

static void help(void)
{
	fputs("usage: ptscope dump [OPTIONS] TRACE\n"
	      "\n"
	      "Prints the packets of a raw Intel PT trace (TRACE; '-' reads\n"
	      "standard input), one per line, as libipt's ptdump does.\n"
	      "Decode errors show at their offset as\n"
	      "  [<offset>: error decoding packet: <message>]\n"
	      "and decoding resumes at the next PSB; skipped bytes show as\n"
	      "  [<from>-<to>: skipped <n> bytes to resync]\n"
	      "\n"
	      "options:\n"
	      "  -f, --format=FMT  ptdump (default) or jsonl (one JSON object\n"
	      "                    per packet, error and skip)\n"
	      "      --lastip      ptdump: show the last-IP after each IP packet\n"
	      "                    (tracked as ptdump does: kept across PSBs)\n"
	      "      --no-offset   ptdump: leave out the offset column\n"
	      "      --cpu=CPU     FAMILY/MODEL[/STEPPING] or none (default):\n"
	      "                    decode with that CPU's errata workarounds\n"
	      "      --no-sync     the trace starts at a packet boundary: decode\n"
	      "                    from byte 0 instead of the first PSB\n"
	      "  -q, --quiet       decode only; print packet counts and MB/s on\n"
	      "                    stderr (errors are still printed)\n"
	      "  -h, --help        this text\n"
	      "\n"
	      "Exit status: 0 clean, 1 the trace had decode errors, 2 usage or\n"
	      "I/O error.\n",
	      stdout);
}

static int parse_args(struct dump *d, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"format", required_argument, NULL, 'f'},
		{"lastip", no_argument, NULL, 'L'},
		{"no-offset", no_argument, NULL, 'O'},
		{"cpu", required_argument, NULL, 'C'},
		{"no-sync", no_argument, NULL, 'S'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	while ((c = pts_cli_getopt(argc, argv, ":f:qh", longopts)) != -1) {
		switch (c) {
		case 'f':
			if (pts_cli_parse_format(cmd, optarg, "ptdump",
						 &d->jsonl))
				return PTS_EXIT_USAGE;
			break;
		case 'L':
			d->popts.show_lastip = 1;
			break;
		case 'O':
			d->popts.show_offset = 0;
			break;
		case 'C':
			if (pts_cli_parse_cpu(cmd, optarg, &d->config.cpu))
				return PTS_EXIT_USAGE;
			break;
		case 'S':
			d->config.no_sync = 1;
			break;
		case 'q':
			d->quiet = 1;
			break;
		case 'h':
			help();
			return -1;
		default:
			return pts_cli_bad_option(cmd, c, argv);
		}
	}
	/* as `perf dump` refuses them: options that would change nothing */
	if (pts_cli_ptdump_only(cmd, "dump", d->jsonl, &d->popts))
		return PTS_EXIT_USAGE;
	return pts_cli_trace_operand(cmd, argc, argv, optind, &d->trace);
}

static void emit_packets(void *ctx, const struct pts_packet *pkts, int n)
{
	struct dump *d = ctx;

	for (int i = 0; i < n; i++) {
		char *p = pts_out_reserve(&d->out, LINE_MAX_);
		const size_t room = pts_out_room(&d->out) - 1; /* '\n' */
		pts_out_line(&d->out, p,
			     d->jsonl
				     ? pts_print_jsonl(&pkts[i], p, room)
				     : pts_print_ptdump(&pkts[i], &d->popts,
							&d->drain.lip, p, room));
	}
}

/* An error or a skip the decoder reported: print it where it happened. */
static void emit_condition(void *ctx, int err, uint64_t begin, uint64_t end)
{
	struct dump *d = ctx;
	char *p = pts_out_reserve(&d->out, LINE_MAX_);
	const size_t room = pts_out_room(&d->out) - 1;

	pts_out_line(&d->out, p,
		     d->jsonl
			     ? pts_print_jsonl_error(err, begin, end, p, room)
			     : pts_print_ptdump_error(err, begin, end, p, room));
}

/* A drain's return: whether the decoder got stuck (said on stderr). */
static int stuck(const struct dump *d, int r)
{
	if (r != -PTS_ERR_NO_PROGRESS)
		return 0;
	pts_cli_error(cmd, "decoder stuck at offset 0x%llx",
		      (unsigned long long)pts_pkt_offset(d->drain.dec));
	return 1;
}

static void print_summary(const struct dump *d, uint64_t bytes, double secs)
{
	const struct dump_drain *dd = &d->drain;

	fprintf(stderr,
		"ptscope dump: %llu bytes, %llu packets in %.3f s: %.1f MB/s\n",
		(unsigned long long)bytes, (unsigned long long)dd->packets, secs,
		secs > 0 ? (double)bytes / 1e6 / secs : 0.0);
	for (int k = 0; k < PTS_PKT_KIND_COUNT; k++)
		if (dd->counts[k])
			fprintf(stderr, "  %-10s %12llu\n", pts_pkt_kind_name(k),
				(unsigned long long)dd->counts[k]);
	fprintf(stderr, "  %-10s %12llu\n  %-10s %12llu\n", "errors",
		(unsigned long long)dd->errors, "skipped",
		(unsigned long long)dd->skipped);
}

/* Streams the whole source through the decoder. Returns an exit status. */
static int run(struct dump *d, struct pts_source *src)
{
	struct pts_input chunk;
	struct pts_progress progress;
	const double t0 = pts_cli_now();
	int r, status = PTS_EXIT_OK;

	pts_progress_start(&progress, stderr, cmd,
			   pts_progress_file_size(d->trace), t0);
	while ((r = pts_source_next(src, &chunk)) == 1) {
		if (stuck(d, pts_dump_drain(&d->drain, &chunk)))
			break;
		pts_progress_update(&progress, pts_source_bytes(src),
				    pts_cli_now());
	}
	pts_progress_end(&progress);
	if (r < 0) {
		pts_cli_error(cmd, "cannot read %s: %s", d->trace,
			      pts_cli_errstr(r));
		status = PTS_EXIT_USAGE;
	} else if (r == 0 && stuck(d, pts_dump_drain_end(&d->drain))) {
		r = -1;
	}
	if (r != 0 && status == PTS_EXIT_OK) /* stuck */
		status = PTS_EXIT_USAGE;
	if (pts_out_fini(&d->out) < 0) {
		pts_out_error(cmd, &d->out);
		status = PTS_EXIT_USAGE;
	}
	if (d->quiet)
		print_summary(d, pts_source_bytes(src), pts_cli_now() - t0);
	if (status == PTS_EXIT_OK && d->drain.errors)
		status = PTS_EXIT_ERRORS;
	return status;
}

int pts_cmd_dump(int argc, char **argv)
{
	struct dump d;
	struct pts_source *src = NULL;
	int status;

	memset(&d, 0, sizeof(d));
	d.popts.show_offset = 1;
	optind = 1;
	status = parse_args(&d, argc, argv);
	if (status != 0)
		return status < 0 ? PTS_EXIT_OK : status;

	if (pts_cli_open_trace(cmd, d.trace, &src) < 0)
		return PTS_EXIT_USAGE;
	d.drain.dec = pts_pkt_decoder_new(&d.config);
	/* --quiet: only counts, which the decoder's counting path gives. */
	d.drain.on_packets = d.quiet ? NULL : emit_packets;
	d.drain.on_condition = emit_condition;
	d.drain.ctx = &d;
	if (!d.drain.dec || pts_out_init(&d.out, stdout, (size_t)1 << 20) < 0) {
		pts_cli_error(cmd, "out of memory");
		pts_pkt_decoder_free(d.drain.dec);
		pts_source_close(src);
		return PTS_EXIT_USAGE;
	}
	pts_lastip_reset(&d.drain.lip);
	status = run(&d, src);
	pts_pkt_decoder_free(d.drain.dec);
	pts_source_close(src);
	return status;
}
