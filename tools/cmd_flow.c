/* ptscope flow: the executed instructions of a raw PT trace, given the
 * program's code (ELF files, raw files, or a --config file naming them). */
#include "cli.h"
#include "commands.h"
#include "flow_print.h"
#include "flow_run.h"

#include <ptscope/decoder.h>
#include <ptscope/model.h>

#include <inttypes.h>
#include <stdbool.h>

static const char *const cmd = "flow";

enum format { FMT_PTXED, FMT_JSONL, FMT_BLOCKS };

struct flow_opts {
	enum format format;
	int no_inst, quiet, resync;
};

static void help(void)
{
	printf("usage: ptscope flow [OPTIONS] TRACE\n\n"
	       "Decodes the instruction flow of a raw Intel PT trace (TRACE;\n"
	       "'-' reads standard input).\n\n"
	       "  --elf FILE[:BASE]         code from an ELF file (at its link address,\n"
	       "                            or its lowest segment at BASE;\n"
	       "                            BASE 0: the link address)\n"
	       "  --raw FILE[:FROM[-TO]]:ADDR  file bytes [FROM, TO) at ADDR\n"
	       "  --config FILE             trace configuration (images, cpu)\n"
	       "  -f, --format ptxed|jsonl|blocks  output (default ptxed)\n"
	       "  --no-inst                 ptxed: addresses only\n"
	       "  -q, --quiet               decode, print only counts and speed\n"
	       "  --cpu FAMILY/MODEL[/STEPPING]|none  errata to apply\n"
	       "  --resync-on-error         go on at the next PSB after an error\n"
	       "                            (default: stop at the first error)\n"
	       "  -h, --help                this text\n"
	       "\n"
	       "Bytes skipped to reach a PSB (before the first one, after an\n"
	       "error) show as\n"
	       "  [<from>-<to>: skipped <n> bytes to resync]\n"
	       "and are not errors (as in `ptscope dump`).\n"
	       "\n"
	       "Exit status: 0 clean, 1 the trace had decode errors (a last\n"
	       "packet cut where a ToPA buffer ends is not one), 2 usage or\n"
	       "I/O error.\n");
}

/* Whether @r is a last packet cut where a ToPA buffer ends: truncation,
 * not an error (issue #7). */
static bool cut_by_buffer(const struct pts_flow_rec *r,
			  const struct pts_trace_input *src)
{
	return r->kind == PTS_FLOW_ERROR && r->error == -PTS_ERR_TRUNCATED &&
	       src->cut_by;
}

/* Prints one batch, up to its first error unless resyncing, and counts
 * what it printed into @seen (what --quiet reports: the decoder's own
 * counters run ahead of a run that stops). Returns the number of error
 * records. */
static int print_batch(const struct pts_flow_printer *pr,
		       const struct pts_flow_rec *recs, int n,
		       const struct flow_opts *o,
		       const struct pts_trace_input *src,
		       struct pts_flow_stats *seen)
{
	int errors = 0;
	for (int i = 0; i < n; i++) {
		const struct pts_flow_rec *r = &recs[i];
		seen->insns += r->kind == PTS_FLOW_INSNS ? r->n : 0;
		seen->events += r->kind == PTS_FLOW_EVENT;
		seen->skipped += r->kind == PTS_FLOW_SKIP ? r->arg - r->offset
							  : 0;
		if (cut_by_buffer(r, src)) {
			seen->truncated++;
			if (!o->quiet)
				pts_flow_print_truncated(pr, r, src->bytes,
							 src->cut_by);
			continue;
		}
		if (r->kind == PTS_FLOW_ERROR) {
			errors++;
			seen->errors++;
			if (!o->quiet)
				pts_flow_print_error(pr, r);
			if (!o->resync)
				break;
			continue;
		}
		if (o->quiet)
			continue;
		if (r->kind == PTS_FLOW_EVENT) {
			pts_flow_print_event(pr, r);
		} else if (r->kind == PTS_FLOW_SKIP) {
			pts_flow_print_skip(pr, r);
		} else if (o->format == FMT_BLOCKS) {
			char *p = pts_out_reserve(pr->out, 64);
			char *e = pts_out_hex16(p, r->ips[0]);
			*e++ = ' ';
			e = pts_out_hex16(e, r->ips[r->n - 1]);
			*e++ = ' ';
			e = pts_out_dec(e, r->n);
			*e++ = '\n';
			pts_out_commit(pr->out, (size_t)(e - p));
		} else {
			pts_flow_print_insns(pr, r);
		}
	}
	return errors;
}

struct printer {
	struct pts_out out;
	struct pts_flow_printer pr;
	const struct flow_opts *o;
	const struct pts_trace_input *src;
	struct pts_flow_stats seen; /* of the records printed */
};

/* pts_flow_run() callback: prints; stops at an error unless resyncing. */
static int print_cb(void *ctx, const struct pts_flow_rec *recs, int n)
{
	struct printer *p = ctx;
	int e = print_batch(&p->pr, recs, n, p->o, p->src, &p->seen);
	return e && !p->o->resync;
}

/* Decodes the whole trace. Returns the exit status. */
static int run(struct pts_flow *flow, struct pts_trace_input *src,
	       const struct flow_opts *o)
{
	struct printer pr = {.o = o, .src = src};
	if (pts_out_init(&pr.out, stdout, 1 << 20) < 0)
		return PTS_EXIT_USAGE;
	pr.pr = (struct pts_flow_printer){.out = &pr.out,
					  .flow = flow,
					  .jsonl = o->format == FMT_JSONL,
					  .no_inst = (uint8_t)o->no_inst};
	double t0 = pts_cli_now();
	int status = pts_flow_run(cmd, flow, src, print_cb, &pr);
	if (status == 1)
		status = PTS_EXIT_OK;
	if (pts_out_fini(&pr.out) < 0 && status == PTS_EXIT_OK) {
		pts_out_error(cmd, &pr.out);
		status = PTS_EXIT_USAGE;
	}
	if (o->quiet) {
		struct pts_flow_stats st;
		pts_flow_get_stats(flow, &st);
		const struct pts_flow_stats *s = &pr.seen;
		double dt = pts_cli_now() - t0;
		double mb = (double)src->bytes / 1e6;
		/* ToPA input: a cut last packet is no error (issue #7) */
		const bool cut = s->truncated;
		fprintf(stderr,
			"instructions: %" PRIu64 "\nevents: %" PRIu64
			"\nerrors: %" PRIu64 "\nskipped: %" PRIu64 " bytes\n",
			s->insns, s->events, s->errors, s->skipped);
		if (cut)
			fprintf(stderr, "truncated: the last packet (%s)\n",
				src->cut_by);
		fprintf(stderr,
			"bytes: %" PRIu64 "\nblocks built: %" PRIu64
			"\nseconds: %.3f\ninstructions/s: %.0f\nMB/s: %.1f\n",
			src->bytes, st.blocks_built, dt,
			dt > 0 ? (double)s->insns / dt : 0.0,
			dt > 0 ? mb / dt : 0.0);
	}
	if (status == PTS_EXIT_OK && pr.seen.errors)
		status = PTS_EXIT_ERRORS;
	return status;
}

int pts_cmd_flow(int argc, char **argv)
{
	return pts_cmd_flow_input(argc, argv, NULL);
}

int pts_cmd_flow_input(int argc, char **argv, struct pts_trace_input *given)
{
	static const struct option longopts[] = {
		{"elf", required_argument, NULL, 'e'},
		{"raw", required_argument, NULL, 'r'},
		{"config", required_argument, NULL, 'c'},
		{"format", required_argument, NULL, 'f'},
		{"no-inst", no_argument, NULL, 'n'},
		{"quiet", no_argument, NULL, 'q'},
		{"cpu", required_argument, NULL, 'C'},
		{"resync-on-error", no_argument, NULL, 'R'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct flow_opts o = {0};
	struct pts_image *img = pts_image_new();
	struct pts_image_opts io = {.img = img};
	if (!img) {
		pts_cli_error(cmd, "out of memory");
		return PTS_EXIT_USAGE;
	}
	int status = PTS_EXIT_OK, opt;
	while (status == PTS_EXIT_OK &&
	       (opt = pts_cli_getopt(argc, argv, ":f:qh", longopts)) != -1) {
		switch (opt) {
		case 'e':
		case 'r':
		case 'c':
		case 'C':
			status = pts_image_opts_apply(cmd, &io, opt, optarg);
			break;
		case 'f': {
			/* in enum format's order */
			static const char *const names[] = {"ptxed", "jsonl",
							    "blocks", NULL};
			int i = 0;

			status = pts_cli_parse_choice(cmd, "--format", optarg,
						      names, &i);
			o.format = (enum format)i;
			break;
		}
		case 'n': o.no_inst = 1; break;
		case 'q': o.quiet = 1; break;
		case 'R': o.resync = 1; break;
		case 'h':
			help();
			pts_image_free(img);
			return PTS_EXIT_OK;
		default:
			status = pts_cli_bad_option(cmd, opt, argv);
			break;
		}
	}
	/* as `perf flow` refuses it: jsonl and blocks give no disassembly */
	if (status == PTS_EXIT_OK && o.no_inst && o.format != FMT_PTXED)
		status = pts_cli_usage_error(cmd, "--no-inst applies to flow's "
						  "default format only");
	const char *trace = NULL;
	if (status == PTS_EXIT_OK)
		status = given ? pts_cli_no_operand(cmd, argc, argv, optind)
			       : pts_cli_trace_operand(cmd, argc, argv, optind,
						       &trace);
	struct pts_trace_input opened = {0}, *src = given ? given : &opened;
	if (status == PTS_EXIT_OK && !given &&
	    pts_trace_input_open(cmd, trace, &opened) < 0)
		status = PTS_EXIT_USAGE;
	if (status == PTS_EXIT_OK) {
		struct pts_flow_config fc;
		pts_image_opts_note_empty(cmd, &io);
		pts_image_opts_flow_config(&io, &fc);
		struct pts_flow *flow = pts_flow_new(&fc, img);
		if (flow) {
			status = run(flow, src, &o);
		} else {
			pts_cli_error(cmd, "out of memory");
			status = PTS_EXIT_USAGE;
		}
		pts_flow_free(flow);
	}
	pts_trace_input_close(&opened);
	pts_image_free(img);
	return status;
}
