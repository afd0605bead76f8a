/* ptscope cov: branch edges and an AFL-style edge bitmap of a trace, for
 * fuzzing users (the edge list in libxdc's layout, so that they can diff).
 * The flow walker decodes, the coverage sink (ptscope/coverage.h) turns
 * its records into edges. */
#include "cli.h"
#include "commands.h"
#include "flow_run.h"

#include <ptscope/coverage.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char cmd[] = "cov";

struct cov_cli {
	struct pts_cov_config cfg;
	const char *bitmap_path, *topa_desc;
	int quiet;
	struct pts_cov *cov;
	struct pts_out out;
	uint64_t errors;
	const char *cut; /* why the last packet was cut, if so */
};

static void help(void)
{
	fputs("usage: ptscope cov [OPTIONS] TRACE|--topa FILE\n"
	      "\n"
	      "Coverage of a raw Intel PT trace for fuzzing (TRACE; '-'\n"
	      "reads standard input): the branch edges in trace order\n"
	      "and/or an AFL-style edge bitmap.\n"
	      "\n"
	      "  --elf FILE[:BASE]      code from an ELF file\n"
	      "  --raw FILE[:FROM[-TO]]:ADDR  file bytes [FROM, TO) at ADDR\n"
	      "  --config FILE          trace configuration (images, cpu)\n"
	      "  --cpu FAMILY/MODEL[/STEPPING]|none  errata to apply\n"
	      "  --topa FILE            the trace is a ToPA buffer set (a\n"
	      "                         description file, see `topa`)\n"
	      "  --bitmap OUT           write the edge bitmap (one byte per\n"
	      "                         slot, saturating at 255); not over\n"
	      "                         one of the input files\n"
	      "  --bitmap-size N[K|M|G] bitmap bytes, a power of two from\n"
	      "                         64 to 1G (default 64K)\n"
	      "  --edges                print `SRC->DST` (hex) per executed\n"
	      "                         branch; ffffffffffffffff is tracing off\n"
	      "  --unique               print each distinct edge once with\n"
	      "                         its count: `SRC->DST COUNT`\n"
	      "  --filter A-B           count only edges from [A, B] (ends\n"
	      "                         included; up to 4 ranges, as kAFL)\n"
	      "  -q, --quiet            no summary on stderr (the first\n"
	      "                         error is said all the same)\n"
	      "  -h, --help             this text\n"
	      "\n"
	      "Exit status: 0 clean, 1 the trace had decode errors (a last\n"
	      "packet cut where a ToPA buffer ends is not one), 2 usage or\n"
	      "I/O error.\n",
	      stdout);
}

/* --bitmap-size: bytes, or KiB / MiB / GiB with a K, M or G suffix (as
 * its default and its largest are written), a power of two from 64 to 1G.
 * Returns 0 or -1. */
static int parse_bitmap_size(const char *arg, uint64_t *v)
{
	char num[32];
	const size_t n = strlen(arg);
	unsigned shift = 0;
	if (n > 1 && n < sizeof(num) && strchr("kKmMgG", arg[n - 1])) {
		const char unit = (char)(arg[n - 1] | 0x20);

		shift = unit == 'k' ? 10 : unit == 'm' ? 20 : 30;
		memcpy(num, arg, n - 1);
		num[n - 1] = '\0';
		arg = num;
	}
	if (pts_cli_number(arg, (1u << 30) >> shift, v) < 0)
		return -1;
	*v <<= shift;
	return *v < 64 || (*v & (*v - 1)) ? -1 : 0;
}

static char *put_edge(char *p, uint64_t src, uint64_t dst)
{
	p = pts_out_hex(p, src);
	*p++ = '-';
	*p++ = '>';
	return pts_out_hex(p, dst);
}

static void print_edges(void *ctx, const struct pts_cov_edge *e, size_t n)
{
	struct cov_cli *c = ctx;
	for (size_t i = 0; i < n; i++) {
		char *p = pts_out_reserve(&c->out, 40);
		char *end = put_edge(p, e[i].src, e[i].dst);
		*end++ = '\n';
		pts_out_commit(&c->out, (size_t)(end - p));
	}
}

/* The walker hands its blocks straight to the coverage sink: no records
 * (pts_cov_decode()). */
static int decode(void *ctx, struct pts_flow *flow, struct pts_input *chunk)
{
	struct cov_cli *c = ctx;
	return pts_cov_decode(c->cov, flow, chunk); /* never >= 0 */
}

static void print_unique(struct cov_cli *c)
{
	const struct pts_cov_count *u;
	size_t n = pts_cov_unique(c->cov, &u);
	for (size_t i = 0; i < n; i++) {
		char *p = pts_out_reserve(&c->out, 64);
		char *end = put_edge(p, u[i].src, u[i].dst);
		*end++ = ' ';
		end = pts_out_dec(end, u[i].count);
		*end++ = '\n';
		pts_out_commit(&c->out, (size_t)(end - p));
	}
}

static int write_bitmap(struct cov_cli *c)
{
	size_t size;
	const uint8_t *bm = pts_cov_bitmap(c->cov, &size);
	FILE *f = fopen(c->bitmap_path, "wb");
	int ok = f && fwrite(bm, 1, size, f) == size;
	if (f && fclose(f))
		ok = 0;
	if (!ok)
		pts_cli_write_error(cmd, c->bitmap_path);
	return ok ? 0 : -1;
}

static void summary(struct cov_cli *c, const struct pts_flow *flow)
{
	struct pts_cov_stats st;
	struct pts_flow_stats fs;
	size_t size, hit = 0;
	pts_cov_get_stats(c->cov, &st);
	pts_flow_get_stats(flow, &fs);
	const uint8_t *bm = pts_cov_bitmap(c->cov, &size);
	for (size_t i = 0; bm && i < size; i++)
		hit += bm[i] != 0;
	fprintf(stderr,
		"ptscope cov: %" PRIu64 " instructions, %" PRIu64
		" edges, %" PRIu64 " runs (%" PRIu64 " classified), %" PRIu64
		" errors, %" PRIu64 " bytes skipped",
		fs.insns, st.edges, st.runs, st.runs_built, c->errors,
		fs.skipped);
	if (bm)
		fprintf(stderr, ", bitmap %zu of %zu slots", hit, size);
	if (c->cut)
		fprintf(stderr, ", last packet truncated (%s)", c->cut);
	fputc('\n', stderr);
}

/* Instructions ran but no edge came from the --filter ranges: say so,
 * with the ranges as read (numbers without 0x are decimal, while --edges
 * prints hex without it: "--filter 400100-400200" covers no code). */
static void no_edge_in_filters(struct cov_cli *c,
			       const struct pts_flow_stats *fs)
{
	struct pts_cov_stats st;
	char ranges[4 * 48] = "";
	size_t n = 0;
	pts_cov_get_stats(c->cov, &st);
	if (!c->cfg.n_ranges || st.edges || !fs->insns)
		return;
	for (unsigned i = 0; i < c->cfg.n_ranges; i++)
		n += (size_t)snprintf(ranges + n, sizeof(ranges) - n,
				      "%s0x%" PRIx64 "-0x%" PRIx64,
				      i ? ", " : "", c->cfg.begin[i],
				      c->cfg.end[i]);
	pts_cli_error(cmd, "note: no edge came from the --filter ranges "
			   "(%s; numbers without 0x are decimal)", ranges);
}

/* Decodes @in with @img. Returns the exit status. */
static int run(struct cov_cli *c, struct pts_image *img,
	       const struct pts_image_opts *io, struct pts_trace_input *in)
{
	int err = pts_cov_new(&c->cfg, img, &c->cov);
	if (err < 0) {
		pts_cli_error(cmd, "%s", pts_strerror(err));
		return PTS_EXIT_USAGE;
	}
	struct pts_flow_config fc;
	pts_image_opts_flow_config(io, &fc);
	struct pts_flow *flow = pts_flow_new(&fc, img);
	if (!flow || pts_out_init(&c->out, stdout, 1 << 20) < 0) {
		pts_flow_free(flow);
		pts_cli_error(cmd, "out of memory");
		return PTS_EXIT_USAGE;
	}
	pts_cov_set_sink(c->cov, print_edges, c);
	int status = pts_flow_drive(cmd, flow, in, decode, c);
	struct pts_flow_stats fs;
	pts_flow_get_stats(flow, &fs);
	/* A last packet cut where a ToPA buffer ends is truncation, not an
	 * error (issue #7). */
	c->cut = in->cut_by && fs.truncated ? in->cut_by : NULL;
	c->errors = fs.errors - (c->cut ? fs.truncated : 0);
	pts_cov_end(c->cov);
	if (c->cfg.flags & PTS_COV_UNIQUE)
		print_unique(c);
	if (pts_out_fini(&c->out) < 0 && status == PTS_EXIT_OK) {
		pts_out_error(cmd, &c->out);
		status = PTS_EXIT_USAGE;
	}
	if (status == PTS_EXIT_OK && c->bitmap_path && write_bitmap(c) < 0)
		status = PTS_EXIT_USAGE;
	/* errors are said where they are, with --quiet too */
	if (fs.errors > fs.truncated) {
		char ip[32] = "";
		if (fs.first_error_ip)
			snprintf(ip, sizeof(ip), ", ip 0x%" PRIx64,
				 fs.first_error_ip);
		pts_cli_error(cmd, "first error at offset 0x%" PRIx64 "%s: %s "
				   "(%" PRIu64 " in all)",
			      fs.first_error_offset, ip,
			      pts_strerror(fs.first_error),
			      fs.errors - fs.truncated);
	} else if (c->errors) {
		/* only the last packet cut by the end of the data */
		pts_cli_error(cmd, "the data ends inside the packet at offset "
				   "0x%" PRIx64,
			      fs.truncated_offset);
	}
	if (!c->quiet)
		summary(c, flow);
	no_edge_in_filters(c, &fs);
	if (status == PTS_EXIT_OK && c->errors)
		status = PTS_EXIT_ERRORS;
	pts_flow_free(flow);
	return status;
}

static int add_filter(struct cov_cli *c, const char *arg)
{
	if (c->cfg.n_ranges == PTS_COV_MAX_RANGES)
		return pts_cli_usage_error(cmd, "at most %d --filter ranges",
					   PTS_COV_MAX_RANGES);
	unsigned i = c->cfg.n_ranges;
	/* numbers as everywhere else: 0x hex or decimal, no sign (strtoull
	 * took 0400 as octal and 5--1 as 5 to 2^64-1) */
	if (pts_parse_range(arg, arg + strlen(arg), &c->cfg.begin[i],
			    &c->cfg.end[i]) < 0)
		return pts_cli_usage_error(cmd,
					   "--filter: expected A-B (numbers, "
					   "0x hex or decimal), got '%s'",
					   arg);
	if (c->cfg.end[i] < c->cfg.begin[i])
		return pts_cli_usage_error(cmd, "--filter '%s': B is below A",
					   arg);
	c->cfg.n_ranges++;
	return 0;
}

static int parse(struct cov_cli *c, struct pts_image_opts *io, int argc,
		 char **argv)
{
	static const struct option longopts[] = {
		PTS_IMAGE_LONGOPTS,
		{"topa", required_argument, NULL, 'T'},
		{"bitmap", required_argument, NULL, 'b'},
		{"bitmap-size", required_argument, NULL, 's'},
		{"edges", no_argument, NULL, 'E'},
		{"unique", no_argument, NULL, 'U'},
		{"filter", required_argument, NULL, 'F'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int opt, status = 0;
	uint64_t v;
	while (!status &&
	       (opt = pts_cli_getopt(argc, argv, ":qh", longopts)) != -1) {
		status = pts_image_opts_apply(cmd, io, opt, optarg);
		if (status != 1)
			continue;
		status = 0;
		switch (opt) {
		case 'T': c->topa_desc = optarg; break;
		case 'b': c->bitmap_path = optarg; break;
		case 's':
			if (parse_bitmap_size(optarg, &v) < 0)
				return pts_cli_usage_error(
					cmd, "--bitmap-size: a power of two "
					     "from 64 to 1G, got '%s'", optarg);
			c->cfg.bitmap_size = (uint32_t)v;
			break;
		case 'E': c->cfg.flags |= PTS_COV_EDGES; break;
		case 'U': c->cfg.flags |= PTS_COV_UNIQUE; break;
		case 'F': status = add_filter(c, optarg); break;
		case 'q': c->quiet = 1; break;
		case 'h':
			help();
			return -1;
		default:
			return pts_cli_bad_option(cmd, opt, argv);
		}
	}
	if (c->bitmap_path || !(c->cfg.flags & (PTS_COV_EDGES | PTS_COV_UNIQUE)))
		c->cfg.flags |= PTS_COV_BITMAP;
	return status;
}

int pts_cmd_cov(int argc, char **argv)
{
	return pts_cmd_cov_input(argc, argv, NULL);
}

int pts_cmd_cov_input(int argc, char **argv, struct pts_trace_input *given)
{
	struct cov_cli c;
	memset(&c, 0, sizeof(c));
	struct pts_image_opts io = {.img = pts_image_new()};
	struct pts_trace_input opened = {0};
	struct pts_trace_input *in = given ? given : &opened;
	if (!io.img) {
		pts_cli_error(cmd, "out of memory");
		return PTS_EXIT_USAGE;
	}
	int status = parse(&c, &io, argc, argv);
	const int operands = argc - optind;
	const char *trace = NULL;
	if (status == 0 && (given || c.topa_desc))
		status = pts_cli_no_operand(cmd, argc, argv, optind);
	else if (status == 0 && !operands)
		status = pts_cli_usage_error(cmd, "no trace given (TRACE or "
						  "--topa FILE)");
	else if (status == 0)
		status = pts_cli_trace_operand(cmd, argc, argv, optind, &trace);
	if (status == 0 && given && c.topa_desc)
		status = pts_cli_usage_error(cmd, "--topa: the input is "
						  "given already");
	if (status == 0 && !given)
		status = c.topa_desc ? pts_trace_input_open_topa(
					       cmd, c.topa_desc, &opened)
			 : pts_trace_input_open(cmd, trace, &opened) < 0
				 ? PTS_EXIT_USAGE
				 : 0;
	/* Writing the bitmap over an input destroys it (the run itself
	 * would end well): refuse before decoding. */
	if (status == 0 && c.bitmap_path &&
	    (pts_trace_input_reads_file(in, c.bitmap_path) ||
	     pts_image_opts_reads_file(&io, c.bitmap_path)))
		status = pts_cli_usage_error(cmd, "--bitmap %s is one of the "
						  "input files",
					     c.bitmap_path);
	if (status == 0) {
		pts_image_opts_note_empty(cmd, &io);
		status = run(&c, io.img, &io, in);
	}
	pts_cov_free(c.cov);
	pts_trace_input_close(&opened);
	pts_image_free(io.img);
	return status < 0 ? PTS_EXIT_OK : status;
}
