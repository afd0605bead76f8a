/* ptscope flow: the executed instructions of a raw PT trace, given the
 * program's code (ELF files, raw files, or a --config file naming them). */
#include "cli.h"
#include "commands.h"

#include <ptscope/decoder.h>
#include <ptscope/model.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static const char *const cmd = "flow";

enum format { FMT_PTXED, FMT_JSONL, FMT_BLOCKS };

struct flow_opts {
	enum format format;
	int no_inst, quiet, resync;
	struct pts_cpu cpu;
	int have_cpu;
};

static void help(void)
{
	printf("usage: ptscope flow [OPTIONS] TRACE\n\n"
	       "Decodes the instruction flow of a raw Intel PT trace.\n\n"
	       "  --elf FILE[:BASE]         code from an ELF file (at its link address,\n"
	       "                            or its lowest segment at BASE)\n"
	       "  --raw FILE[:FROM[-TO]]:ADDR  file bytes [FROM, TO) at ADDR\n"
	       "  --config FILE             trace configuration (images, cpu)\n"
	       "  --format ptxed|jsonl|blocks  output (default ptxed)\n"
	       "  --no-inst                 ptxed: addresses only\n"
	       "  --quiet                   decode, print only counts and speed\n"
	       "  --cpu FAMILY/MODEL[/STEPPING]|none  errata to apply\n"
	       "  --resync-on-error         go on at the next PSB after an error\n"
	       "                            (default: stop at the first error)\n");
}

/* Loads the images a configuration file names, and its CPU. */
static int load_config(const char *path, struct pts_image *img,
		       struct flow_opts *o)
{
	struct pts_config cfg;
	pts_config_init(&cfg);
	int line = 0;
	int err = pts_config_load(&cfg, path, &line);
	if (err < 0) {
		pts_cli_error(cmd, "%s:%d: %s", path, line, pts_strerror(err));
		pts_config_fini(&cfg);
		return -1;
	}
	for (size_t i = 0; i < cfg.n_images && err >= 0; i++) {
		const struct pts_image_spec *s = &cfg.images[i];
		err = s->kind == PTS_IMAGE_ELF
			      ? pts_image_add_elf(img, 0, s->path, s->base)
			      : pts_image_add_raw(img, 0, s->path, s->from,
						  s->to, s->addr);
		if (err < 0)
			pts_cli_error(cmd, "%s: %s", s->path, pts_strerror(err));
	}
	if (!o->have_cpu)
		o->cpu = cfg.trace.cpu;
	pts_config_fini(&cfg);
	return err < 0 ? -1 : 0;
}

static void print_insns(struct pts_out *out, struct pts_flow *flow,
			const struct pts_flow_rec *r, const struct flow_opts *o)
{
	char text[160];
	for (uint32_t i = 0; i < r->n; i++) {
		char *p = pts_out_reserve(out, 256);
		int n;
		if (o->format == FMT_JSONL) {
			n = snprintf(p, pts_out_room(out),
				     "{\"offset\":%" PRIu64 ",\"ip\":\"0x%" PRIx64
				     "\",\"size\":%u,\"mode\":\"%s\"}\n",
				     r->offset, r->ips[i], r->sizes[i],
				     pts_exec_mode_name(r->mode));
		} else if (o->no_inst) {
			n = snprintf(p, pts_out_room(out), "%016" PRIx64 "\n",
				     r->ips[i]);
		} else {
			if (pts_flow_disasm(flow, r, i, text, sizeof(text)) < 0)
				strcpy(text, "(bad)");
			n = snprintf(p, pts_out_room(out), "%016" PRIx64 "  %s\n",
				     r->ips[i], text);
		}
		pts_out_commit(out, (size_t)n);
	}
}

static void print_event(struct pts_out *out, const struct pts_flow_rec *r,
			const struct flow_opts *o)
{
	char text[160];
	if (pts_flow_event_text(r, text, sizeof(text)) < 0)
		strcpy(text, "?");
	char *p = pts_out_reserve(out, 512);
	int n;
	if (o->format == FMT_JSONL) {
		n = snprintf(p, pts_out_room(out),
			     "{\"offset\":%" PRIu64 ",\"event\":\"%s\",\"text\":\"%s\"",
			     r->offset, pts_flow_event_name(r->type), text);
		/* For async events @ip is where they happened; suppression
		 * concerns the target. */
		if (r->ip && (!(r->flags & PTS_EV_F_IP_SUPPRESSED) ||
			      r->type == PTS_EV_ASYNC_DISABLED ||
			      r->type == PTS_EV_ASYNC_BRANCH))
			n += snprintf(p + n, pts_out_room(out) - (size_t)n,
				      ",\"ip\":\"0x%" PRIx64 "\"", r->ip);
		n += snprintf(p + n, pts_out_room(out) - (size_t)n,
			      ",\"arg\":\"0x%" PRIx64 "\",\"status\":%s}\n",
			      r->arg, r->flags & PTS_EV_F_STATUS ? "true" : "false");
	} else if (r->flags & PTS_EV_F_STATUS) {
		return; /* ptxed does not show state from PSB+ */
	} else if (o->format == FMT_BLOCKS) {
		n = snprintf(p, pts_out_room(out), "[%s]\n", text);
	} else {
		n = snprintf(p, pts_out_room(out), "[%s]\n", text);
	}
	pts_out_commit(out, (size_t)n);
}

static void print_error(struct pts_out *out, const struct pts_flow_rec *r,
			const struct flow_opts *o)
{
	char *p = pts_out_reserve(out, 256);
	int n;
	if (o->format == FMT_JSONL)
		n = snprintf(p, pts_out_room(out),
			     "{\"offset\":%" PRIu64 ",\"error\":\"%s\","
			     "\"message\":\"%s\",\"ip\":\"0x%" PRIx64 "\"}\n",
			     r->offset, pts_errname(r->error),
			     pts_strerror(r->error), r->ip);
	else
		n = snprintf(p, pts_out_room(out),
			     "[%" PRIx64 ", %" PRIx64 ": error: %s]\n",
			     r->offset, r->ip, pts_strerror(r->error));
	pts_out_commit(out, (size_t)n);
}

/* Prints one batch; returns the number of error records in it. */
static int print_batch(struct pts_out *out, struct pts_flow *flow,
		       const struct pts_flow_rec *recs, int n,
		       const struct flow_opts *o)
{
	int errors = 0;
	for (int i = 0; i < n; i++) {
		const struct pts_flow_rec *r = &recs[i];
		if (r->kind == PTS_FLOW_ERROR) {
			errors++;
			if (!o->quiet)
				print_error(out, r, o);
			if (!o->resync)
				break;
			continue;
		}
		if (o->quiet)
			continue;
		if (r->kind == PTS_FLOW_EVENT) {
			print_event(out, r, o);
		} else if (o->format == FMT_BLOCKS) {
			char *p = pts_out_reserve(out, 64);
			pts_out_commit(out, (size_t)snprintf(
				p, pts_out_room(out),
				"%016" PRIx64 " %016" PRIx64 " %u\n", r->ips[0],
				r->ips[r->n - 1], r->n));
		} else {
			print_insns(out, flow, r, o);
		}
	}
	return errors;
}

/* Decodes the whole trace. Returns the exit status. */
static int run(struct pts_flow *flow, struct pts_source *src,
	       const struct flow_opts *o)
{
	struct pts_out out;
	if (pts_out_init(&out, stdout, 1 << 20) < 0)
		return PTS_EXIT_USAGE;
	enum { MAX = 512 };
	struct pts_flow_rec *recs = malloc(MAX * sizeof(*recs));
	if (!recs) {
		pts_out_fini(&out);
		return PTS_EXIT_USAGE;
	}
	double t0 = pts_cli_now();
	struct pts_input in = {NULL, 0, 0};
	int status = PTS_EXIT_OK, errors = 0;
	bool eof = false, stop = false;
	while (!stop) {
		int n = pts_flow_next(flow, &in, recs, MAX);
		if (n > 0) {
			int e = print_batch(&out, flow, recs, n, o);
			errors += e;
			stop = e && !o->resync;
			continue;
		}
		if (n == -PTS_ERR_EOS)
			break;
		if (n != -PTS_ERR_AGAIN) {
			pts_cli_error(cmd, "%s", pts_strerror(n));
			status = PTS_EXIT_USAGE;
			break;
		}
		if (eof)
			break; /* cannot happen: after the end comes EOS */
		int r = pts_source_next(src, &in);
		if (r < 0) {
			pts_cli_error(cmd, "read error: %s", pts_strerror(r));
			status = PTS_EXIT_USAGE;
			break;
		}
		if (r == 0) {
			eof = true;
			pts_flow_end(flow);
		}
	}
	free(recs);
	if (pts_out_fini(&out) < 0 && status == PTS_EXIT_OK) {
		pts_cli_error(cmd, "write error");
		status = PTS_EXIT_USAGE;
	}
	if (o->quiet) {
		struct pts_flow_stats st;
		pts_flow_get_stats(flow, &st);
		double dt = pts_cli_now() - t0;
		double mb = (double)pts_source_bytes(src) / 1e6;
		fprintf(stderr,
			"instructions: %" PRIu64 "\nevents: %" PRIu64
			"\nerrors: %" PRIu64 "\nbytes: %" PRIu64
			"\nblocks built: %" PRIu64 "\nseconds: %.3f\n"
			"instructions/s: %.0f\nMB/s: %.1f\n",
			st.insns, st.events, st.errors, pts_source_bytes(src),
			st.blocks_built, dt, dt > 0 ? (double)st.insns / dt : 0.0,
			dt > 0 ? mb / dt : 0.0);
	}
	if (status == PTS_EXIT_OK && errors)
		status = PTS_EXIT_ERRORS;
	return status;
}

int pts_cmd_flow(int argc, char **argv)
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
	if (!img) {
		pts_cli_error(cmd, "out of memory");
		return PTS_EXIT_USAGE;
	}
	int status = PTS_EXIT_OK, opt, err;
	while (status == PTS_EXIT_OK &&
	       (opt = pts_cli_getopt(argc, argv, ":h", longopts)) != -1) {
		switch (opt) {
		case 'e':
		case 'r':
			err = opt == 'e' ? pts_image_add_elf_spec(img, 0, optarg)
					 : pts_image_add_raw_spec(img, 0, optarg);
			if (err < 0) {
				pts_cli_error(cmd, "%s: %s", optarg,
					      pts_strerror(err));
				status = PTS_EXIT_USAGE;
			}
			break;
		case 'c':
			if (load_config(optarg, img, &o) < 0)
				status = PTS_EXIT_USAGE;
			break;
		case 'f':
			if (strcmp(optarg, "ptxed") == 0)
				o.format = FMT_PTXED;
			else if (strcmp(optarg, "jsonl") == 0)
				o.format = FMT_JSONL;
			else if (strcmp(optarg, "blocks") == 0)
				o.format = FMT_BLOCKS;
			else
				status = pts_cli_usage_error(
					cmd, "unknown format '%s'", optarg);
			break;
		case 'n': o.no_inst = 1; break;
		case 'q': o.quiet = 1; break;
		case 'R': o.resync = 1; break;
		case 'C':
			if (pts_cpu_parse(optarg, &o.cpu) < 0)
				status = pts_cli_usage_error(
					cmd, "bad cpu '%s'", optarg);
			o.have_cpu = 1;
			break;
		case 'h':
			help();
			pts_image_free(img);
			return PTS_EXIT_OK;
		default:
			status = pts_cli_bad_option(cmd, opt, argv);
			break;
		}
	}
	if (status == PTS_EXIT_OK && optind != argc - 1)
		status = pts_cli_usage_error(cmd, "expected one TRACE");
	struct pts_source *src = NULL;
	if (status == PTS_EXIT_OK &&
	    pts_cli_open_trace(cmd, argv[optind], &src) < 0)
		status = PTS_EXIT_USAGE;
	if (status == PTS_EXIT_OK) {
		struct pts_flow_config fc = {0};
		fc.cpu = o.cpu;
		struct pts_flow *flow = pts_flow_new(&fc, img);
		if (flow) {
			status = run(flow, src, &o);
		} else {
			pts_cli_error(cmd, "out of memory");
			status = PTS_EXIT_USAGE;
		}
		pts_flow_free(flow);
	}
	pts_source_close(src);
	pts_image_free(img);
	return status;
}
