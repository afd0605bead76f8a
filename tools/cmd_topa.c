/* ptscope topa: raw ToPA or single-range output buffers (tables, regions,
 * output MSRs) turned into the linear trace in write order. `linear` writes
 * it out; `dump` decodes it streaming, slice by slice, without a copy;
 * `flow`, `windows` and `cov` are those commands reading the slices the
 * same way (flow_run.h). */
#include "cli.h"
#include "commands.h"
#include "flow_run.h"

#include <ptscope/topa.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char cmd[] = "topa";

#define BATCH 256
#define LINE_MAX_ 1024
/* Conditions in a row without a packet before the decoder counts as
 * stuck (as in `ptscope dump`). */
#define STUCK_LIMIT 64

/* The input options, turned into description lines (one parser for the
 * file and the command line), and the option behind each line, for
 * messages ("--maxphyaddr=0: ..." rather than "command line:7: ..."). */
struct text {
	char *buf;
	size_t len, cap;
	char **opts;
	unsigned nopts;
};

struct topa_cli {
	const char *desc;
	struct text lines;
	const char *out_path;
	int jsonl, quiet;
	struct pts_print_opts popts;
	struct pts_pkt_config config;
	struct pts_topa *t;
	struct pts_topa_info info;
	/* dump */
	struct pts_pkt_decoder *dec;
	struct pts_out out;
	struct pts_lastip lip;
	uint64_t packets, errors, skipped, truncated;
	unsigned stuck;
};

static void help(void)
{
	fputs("usage: ptscope topa INPUT... COMMAND [OPTIONS]\n"
	      "\n"
	      "Turns raw Intel PT output buffers (ToPA tables and regions,\n"
	      "or a single output range) and the output MSRs left when\n"
	      "tracing stopped into the linear trace, oldest byte first.\n"
	      "\n"
	      "input (a description file, options, or both: an option's\n"
	      "value wins over the file's; --table, --region and\n"
	      "--memory add to the file's, and may not overlap them):\n"
	      "  --desc=FILE          description file (format: README,\n"
	      "                       \"ptscope topa\", or ptscope/topa.h)\n"
	      "  --table=PHYS[=FILE[@OFF]]\n"
	      "                       ToPA table at PHYS, 64-bit entries as\n"
	      "                       hardware reads them (no FILE: --memory)\n"
	      "  --region=PHYS=FILE[@OFF]\n"
	      "                       output region (or single range) bytes\n"
	      "  --memory=PHYS=FILE[@OFF]\n"
	      "                       a memory dump: byte OFF of FILE at PHYS\n"
	      "  --output-base=VALUE  IA32_RTIT_OUTPUT_BASE\n"
	      "  --output-ptrs=VALUE  IA32_RTIT_OUTPUT_MASK_PTRS\n"
	      "                       (also --output-mask-ptrs)\n"
	      "  --status=VALUE       IA32_RTIT_STATUS\n"
	      "  --mode=topa|single   output scheme (default topa)\n"
	      "  --start=PHYS         table tracing began in (default: first)\n"
	      "  --wrapped=yes|no|detect\n"
	      "                       did the ring wrap; detect (default): a\n"
	      "                       byte after the write position is not 0\n"
	      "  --maxphyaddr=N       physical address width (default 52)\n"
	      "\n"
	      "commands:\n"
	      "  linear -o OUT        write the linear trace ('-': stdout)\n"
	      "  dump [OPTIONS]       its packets, from the first PSB on:\n"
	      "                       -f/--format=ptdump|jsonl, --lastip,\n"
	      "                       --no-offset, --cpu=CPU, -q/--quiet (no\n"
	      "                       packets; a summary on stderr)\n"
	      "  info                 tables, regions, write position, wrap\n"
	      "  flow [OPTIONS]       `ptscope flow` on the trace (--elf,\n"
	      "                       --raw, --config, --format, ...)\n"
	      "  windows [OPTIONS]    `ptscope windows` on the trace\n"
	      "  cov [OPTIONS]        `ptscope cov` on the trace (--edges,\n"
	      "                       --bitmap OUT, --unique, --filter)\n"
	      "The three read the buffers in place, slice by slice.\n"
	      "\n"
	      "A packet cut by a ToPA STOP shows as truncation, not as an\n"
	      "error:\n"
	      "  [<from>-<to>: truncated: trace ends inside a packet (ToPA "
	      "STOP)]\n"
	      "\n"
	      "Exit status: 0 clean, 1 malformed buffers or decode errors,\n"
	      "2 usage or I/O error.\n",
	      stdout);
}

/* Adds the line "@a @b[ @c]" that option @opt (as given) made. Returns 0
 * or -1 out of memory. */
static int text_add(struct text *x, const char *opt, const char *a,
		    const char *b, const char *c)
{
	char **opts = realloc(x->opts, (x->nopts + 1) * sizeof(*opts));
	if (!opts)
		return -1;
	x->opts = opts;
	if (!(opts[x->nopts] = strdup(opt)))
		return -1;
	x->nopts++;
	const char *parts[] = {a, " ", b, c ? " " : "", c ? c : "", "\n"};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		size_t n = strlen(parts[i]);
		if (x->len + n + 1 > x->cap) {
			size_t cap = (x->cap + n + 1) * 2;
			char *nb = realloc(x->buf, cap);
			if (!nb)
				return -1;
			x->buf = nb;
			x->cap = cap;
		}
		memcpy(x->buf + x->len, parts[i], n);
		x->len += n;
	}
	return 0;
}

/* --table/--region/--memory PHYS[=FILE]: one description line. */
static int add_placed(struct topa_cli *c, const char *directive,
		      const char *opt, char *arg, int file_needed)
{
	char given[LINE_MAX_];
	snprintf(given, sizeof(given), "--%s=%s", opt, arg);
	char *eq = strchr(arg, '=');
	if (eq)
		*eq++ = '\0';
	if ((!eq && file_needed) || (eq && !*eq))
		return pts_cli_usage_error(
			cmd, "--%s: expected %s, got '%s'", opt,
			file_needed ? "PHYS=FILE" : "PHYS[=FILE]",
			given + strlen(opt) + 3);
	if (strpbrk(arg, " \t#\n") || (eq && strpbrk(eq, " \t#\n")))
		return pts_cli_usage_error(
			cmd,
			"--%s: blanks and '#' cannot be given here; use "
			"a description file",
			opt);
	return text_add(&c->lines, given, directive, arg, eq) < 0
		       ? pts_cli_usage_error(cmd, "out of memory")
		       : 0;
}

/* Options up to the command word. Returns 0, -1 after --help, or an exit
 * status. */
static int parse_input(struct topa_cli *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"desc", required_argument, NULL, 'd'},
		{"table", required_argument, NULL, 'T'},
		{"region", required_argument, NULL, 'R'},
		{"memory", required_argument, NULL, 'M'},
		{"output-base", required_argument, NULL, 'B'},
		{"output-mask-ptrs", required_argument, NULL, 'P'},
		{"output-ptrs", required_argument, NULL, 'P'},
		{"status", required_argument, NULL, 'S'},
		{"mode", required_argument, NULL, 'm'},
		{"start", required_argument, NULL, 's'},
		{"wrapped", required_argument, NULL, 'w'},
		{"maxphyaddr", required_argument, NULL, 'x'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const char *const keys[128] = {
		['B'] = "output_base", ['P'] = "output_mask_ptrs",
		['S'] = "status",      ['m'] = "mode",
		['s'] = "start",       ['w'] = "wrapped",
		['x'] = "maxphyaddr",
	};
	int o, err;
	char given[LINE_MAX_];
	const char *word;
	while ((o = pts_cli_getopt(argc, argv, "+:h", longopts)) != -1) {
		switch (o) {
		case 'd':
			c->desc = optarg;
			break;
		case 'T':
			if ((err = add_placed(c, "table", "table", optarg, 0)))
				return err;
			break;
		case 'R':
			if ((err = add_placed(c, "region", "region", optarg,
					      1)))
				return err;
			break;
		case 'M':
			if ((err = add_placed(c, "memory", "memory", optarg,
					      1)))
				return err;
			break;
		case 'B':
		case 'P':
		case 'S':
		case 'm':
		case 's':
		case 'w':
		case 'x':
			/* the option as given (--output-ptrs has an
			 * alias): "--name=value" or "--name" "value" */
			word = argv[optind - 1 - (optarg == argv[optind - 1])];
			snprintf(given, sizeof(given), "%.*s=%s",
				 (int)strcspn(word, "="), word, optarg);
			if (strpbrk(optarg, " \t#\n") || !*optarg)
				return pts_cli_usage_error(cmd, "%s: bad value",
							   given);
			if (text_add(&c->lines, given, keys[o], optarg, NULL) <
			    0)
				return pts_cli_usage_error(cmd,
							   "out of memory");
			break;
		case 'h':
			help();
			return -1;
		default:
			return pts_cli_bad_option(cmd, o, argv);
		}
	}
	if (!c->desc && !c->lines.len)
		return pts_cli_usage_error(cmd, "no input: give --desc or "
						"--table/--region options");
	return 0;
}

/* Reports the error @err the parser found in the options' lines, naming
 * the option: a bad value is a usage error. Returns the exit status. */
static int option_error(struct topa_cli *c, int err)
{
	static const char origin[] = "command line:";
	const char *msg = pts_topa_errmsg(c->t);
	char *rest = NULL;
	unsigned long line = 0;
	if (!strncmp(msg, origin, sizeof(origin) - 1))
		line = strtoul(msg + sizeof(origin) - 1, &rest, 10);
	if (line < 1 || line > c->lines.nopts || strncmp(rest, ": ", 2)) {
		pts_cli_error(cmd, "%s", msg[0] ? msg : pts_strerror(err));
		return PTS_EXIT_USAGE;
	}
	return pts_cli_usage_error(cmd, "%s: %s", c->lines.opts[line - 1],
				   rest + 2);
}

/* Loads the description and the options, and linearizes. Returns an exit
 * status. */
static int load(struct topa_cli *c)
{
	int err = pts_topa_new(&c->t);
	if (err == 0 && c->desc)
		err = pts_topa_load_desc(c->t, c->desc);
	if (err == 0 && c->lines.len) {
		err = pts_topa_parse_desc(c->t, c->lines.buf, c->lines.len,
					  NULL, "command line");
		if (err < 0)
			return option_error(c, err);
	}
	if (err == 0)
		err = pts_topa_linearize(c->t);
	if (err == 0)
		err = pts_topa_get_info(c->t, &c->info);
	if (err == 0)
		return PTS_EXIT_OK;
	pts_cli_error(cmd, "%s",
		      c->t && pts_topa_errmsg(c->t)[0] ? pts_topa_errmsg(c->t)
						       : pts_strerror(err));
	return err == -PTS_ERR_BAD_FORMAT || err == -PTS_ERR_BAD_CONFIG
		       ? PTS_EXIT_ERRORS
		       : PTS_EXIT_USAGE;
}

static int run_linear(struct topa_cli *c)
{
	/* Truncating a region the linearizer maps loses it (and the run
	 * fails with EFAULT): refuse before opening. */
	if (pts_topa_reads_file(c->t, c->out_path))
		return pts_cli_usage_error(
			cmd, "-o %s is one of the input files",
			c->out_path);
	FILE *f = strcmp(c->out_path, "-") ? fopen(c->out_path, "wb") : stdout;
	if (!f) {
		pts_cli_error(cmd, "cannot create %s: %s", c->out_path,
			      strerror(errno));
		return PTS_EXIT_USAGE;
	}
	struct pts_input chunk;
	int ok = 1;
	while (ok && pts_topa_next(c->t, &chunk) == 1)
		ok = fwrite(chunk.data, 1, chunk.size, f) == chunk.size;
	ok &= (f == stdout ? fflush(f) : fclose(f)) == 0;
	if (!ok) {
		pts_cli_write_error(cmd, c->out_path);
		return PTS_EXIT_USAGE;
	}
	return PTS_EXIT_OK;
}

static int run_info(struct topa_cli *c)
{
	const struct pts_topa_info *i = &c->info;
	printf("mode         %s\n", i->mode ? "single" : "topa");
	if (!i->mode)
		printf("tables       %u\n", i->tables);
	printf("regions      %u\n"
	       "buffer       %llu bytes (ring %llu)\n",
	       i->regions, (unsigned long long)i->buffer_size,
	       (unsigned long long)i->ring_size);
	if (!i->mode)
		printf("position     table 0x%llx entry %u, byte %llu in write "
		       "order\n",
		       (unsigned long long)i->table, i->entry,
		       (unsigned long long)i->write_pos);
	else
		printf("position     byte %llu\n",
		       (unsigned long long)i->write_pos);
	printf("chain        %s\n"
	       "wrapped      %s\n"
	       "stopped      %s\n"
	       "linear       %llu bytes\n",
	       i->stop ? "ends in a STOP entry" : "circular",
	       i->wrapped ? "yes" : "no",
	       i->stopped ? "yes (the last packet may be cut)" : "no",
	       (unsigned long long)i->linear_size);
	if (fflush(stdout) == 0)
		return PTS_EXIT_OK;
	pts_cli_error(cmd, "cannot write the output: %s", strerror(errno));
	return PTS_EXIT_USAGE;
}

static void put_line(struct topa_cli *c, int len, char *p)
{
	if (len < 0)
		return;
	p[len] = '\n';
	pts_out_commit(&c->out, (size_t)len + 1);
}

/* A condition from the decoder. The stream ending inside a packet is
 * truncation, expected after a ToPA STOP, and not a decode error. */
static void emit_condition(struct topa_cli *c, int err)
{
	uint64_t begin, end;
	pts_pkt_error_range(c->dec, &begin, &end);
	char *p = pts_out_reserve(&c->out, LINE_MAX_);
	const size_t room = pts_out_room(&c->out) - 1;
	if (err == -PTS_ERR_TRUNCATED) {
		c->truncated++;
		put_line(c,
			 pts_cli_format_truncated(
				 p, room, c->jsonl, begin, end,
				 pts_cli_topa_cut_by(&c->info)),
			 p);
		return;
	}
	if (err == -PTS_ERR_SKIPPED)
		c->skipped += end - begin;
	else
		c->errors++;
	pts_lastip_reset(&c->lip);
	put_line(c,
		 c->jsonl ? pts_print_jsonl_error(err, begin, end, p, room)
			  : pts_print_ptdump_error(err, begin, end, p, room),
		 p);
}

/* Decodes what @in holds. Returns -PTS_ERR_AGAIN, -PTS_ERR_EOS or
 * -PTS_ERR_NO_PROGRESS. */
static int drain(struct topa_cli *c, struct pts_input *in)
{
	struct pts_packet pkts[BATCH];
	for (;;) {
		int n = pts_pkt_next_batch(c->dec, in, pkts, BATCH);
		if (n > 0) {
			c->stuck = 0;
			c->packets += (uint64_t)n;
			for (int i = 0; i < n && !c->quiet; i++) {
				char *p = pts_out_reserve(&c->out, LINE_MAX_);
				size_t room = pts_out_room(&c->out) - 1;
				put_line(c,
					 c->jsonl ? pts_print_jsonl(&pkts[i], p,
								    room)
						  : pts_print_ptdump(
							    &pkts[i], &c->popts,
							    &c->lip, p, room),
					 p);
			}
			continue;
		}
		if (n == -PTS_ERR_AGAIN || n == -PTS_ERR_EOS) {
			c->stuck = 0;
			return n;
		}
		if (++c->stuck > STUCK_LIMIT) {
			pts_cli_error(
				cmd, "decoder stuck at offset 0x%llx",
				(unsigned long long)pts_pkt_offset(c->dec));
			return -PTS_ERR_NO_PROGRESS;
		}
		emit_condition(c, n);
	}
}

static int run_dump(struct topa_cli *c)
{
	c->dec = pts_pkt_decoder_new(&c->config);
	if (!c->dec || pts_out_init(&c->out, stdout, (size_t)1 << 20) < 0) {
		pts_pkt_decoder_free(c->dec);
		pts_cli_error(cmd, "out of memory");
		return PTS_EXIT_USAGE;
	}
	pts_lastip_reset(&c->lip);
	struct pts_input chunk, none = {NULL, 0, 0};
	int r = -PTS_ERR_AGAIN;
	while (r == -PTS_ERR_AGAIN && pts_topa_next(c->t, &chunk) == 1)
		r = drain(c, &chunk);
	if (r == -PTS_ERR_AGAIN) {
		pts_pkt_end(c->dec);
		r = drain(c, &none);
	}
	int status = r == -PTS_ERR_NO_PROGRESS ? PTS_EXIT_USAGE
		     : c->errors	       ? PTS_EXIT_ERRORS
					       : PTS_EXIT_OK;
	if (pts_out_fini(&c->out) < 0) {
		pts_out_error(cmd, &c->out);
		status = PTS_EXIT_USAGE;
	}
	if (c->quiet)
		fprintf(stderr,
			"ptscope topa: %llu bytes, %llu packets, %llu errors, "
			"%llu bytes skipped, %s\n",
			(unsigned long long)c->info.linear_size,
			(unsigned long long)c->packets,
			(unsigned long long)c->errors,
			(unsigned long long)c->skipped,
			c->truncated ? "last packet truncated"
				     : "not truncated");
	pts_pkt_decoder_free(c->dec);
	return status;
}

/* The commands that decode the slices: the subcommand of that name. */
static int (*decoder_of(const char *what))(int, char **,
					    struct pts_trace_input *)
{
	return !strcmp(what, "flow")	  ? pts_cmd_flow_input
	       : !strcmp(what, "windows") ? pts_cmd_windows_input
	       : !strcmp(what, "cov")	  ? pts_cmd_cov_input
					  : NULL;
}

/* `flow`, `windows` or `cov` with the words from the command on. */
static int run_decoder(struct topa_cli *c, const char *what, int argc,
		       char **argv)
{
	struct pts_trace_input in;
	pts_trace_input_topa(&in, c->t);
	int sub_argc = argc - optind;
	char **sub_argv = argv + optind;
	optind = 0; /* getopt starts over on the subcommand's words */
	return decoder_of(what)(sub_argc, sub_argv, &in);
}

/* The command word and its options. Returns 0 or an exit status. */
static int parse_command(struct topa_cli *c, int argc, char **argv,
			 const char **what)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"format", required_argument, NULL, 'f'},
		{"lastip", no_argument, NULL, 'L'},
		{"no-offset", no_argument, NULL, 'O'},
		{"cpu", required_argument, NULL, 'C'},
		{"quiet", no_argument, NULL, 'q'},
		{NULL, 0, NULL, 0},
	};
	if (optind >= argc)
		return pts_cli_usage_error(
			cmd, "no command: linear, dump, info, flow, windows, "
			     "cov");
	*what = argv[optind];
	if (decoder_of(*what))
		return 0; /* its options are its own */
	const int linear = !strcmp(*what, "linear");
	const int dump = !strcmp(*what, "dump");
	if (!linear && !dump && strcmp(*what, "info"))
		return pts_cli_usage_error(cmd, "unknown command '%s'", *what);
	int o;
	optind++;
	while ((o = pts_cli_getopt(argc, argv, ":o:f:q", longopts)) != -1) {
		const int applies = linear ? o == 'o' : dump && o != 'o';
		if (o != ':' && o != '?' && !applies)
			return pts_cli_usage_error(cmd,
						   "%s: option '%s' does "
						   "not apply",
						   *what, argv[optind - 1]);
		switch (o) {
		case 'o':
			c->out_path = optarg;
			break;
		case 'f':
			if (pts_cli_parse_format(cmd, optarg, "ptdump",
						 &c->jsonl))
				return PTS_EXIT_USAGE;
			break;
		case 'L':
			c->popts.show_lastip = 1;
			break;
		case 'O':
			c->popts.show_offset = 0;
			break;
		case 'C':
			if (pts_cli_parse_cpu(cmd, optarg, &c->config.cpu))
				return PTS_EXIT_USAGE;
			break;
		case 'q':
			c->quiet = 1;
			break;
		default:
			return pts_cli_bad_option(cmd, o, argv);
		}
	}
	if (optind < argc)
		return pts_cli_usage_error(cmd, "unexpected '%s'",
					   argv[optind]);
	if (linear && !c->out_path)
		return pts_cli_usage_error(cmd, "linear: -o OUT is required");
	return pts_cli_ptdump_only(cmd, "dump", c->jsonl, &c->popts);
}

int pts_cmd_topa(int argc, char **argv)
{
	struct topa_cli c;
	const char *what = NULL;
	memset(&c, 0, sizeof(c));
	c.popts.show_offset = 1;
	optind = 1;
	int status = parse_input(&c, argc, argv);
	if (status == 0)
		status = parse_command(&c, argc, argv, &what);
	if (status == 0)
		status = load(&c);
	if (status == 0)
		status = decoder_of(what)	 ? run_decoder(&c, what, argc, argv)
			 : !strcmp(what, "linear") ? run_linear(&c)
			 : !strcmp(what, "dump")   ? run_dump(&c)
						   : run_info(&c);
	pts_topa_free(c.t);
	free(c.lines.buf);
	for (unsigned i = 0; i < c.lines.nopts; i++)
		free(c.lines.opts[i]);
	free(c.lines.opts);
	return status < 0 ? PTS_EXIT_OK : status;
}
