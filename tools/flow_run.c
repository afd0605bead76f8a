/* Trace input, image options and the flow decode loop shared by the
 * decoding subcommands (flow_run.h). */
#include "flow_run.h"

#include "cli.h"

#include <ptscope/model.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int pts_trace_input_open(const char *cmd, const char *path,
			 struct pts_trace_input *in)
{
	memset(in, 0, sizeof(*in));
	if (pts_cli_open_trace(cmd, path, &in->src) < 0)
		return -1;
	in->path = path;
	pts_progress_start(&in->progress, stderr, cmd,
			   pts_progress_file_size(path), pts_cli_now());
	return 0;
}

/* Reading a linearized buffer: its linear size is the total. */
static void start_topa_progress(const char *cmd, struct pts_trace_input *in)
{
	struct pts_topa_info info;
	memset(&info, 0, sizeof(info));
	pts_topa_get_info(in->topa, &info);
	in->cut_by = pts_cli_topa_cut_by(&info);
	pts_progress_start(&in->progress, stderr, cmd, info.linear_size,
			   pts_cli_now());
}

int pts_trace_input_open_topa(const char *cmd, const char *desc,
			      struct pts_trace_input *in)
{
	struct pts_topa *t = NULL;
	memset(in, 0, sizeof(*in));
	int err = pts_topa_new(&t);
	if (err == 0)
		err = pts_topa_load_desc(t, desc);
	if (err == 0)
		err = pts_topa_linearize(t);
	if (err < 0) {
		const char *msg = pts_strerror(err);
		if (t && pts_topa_errmsg(t)[0])
			msg = pts_topa_errmsg(t);
		/* a message about the file itself names it already */
		if (strncmp(msg, desc, strlen(desc)) == 0)
			pts_cli_error(cmd, "%s", msg);
		else
			pts_cli_error(cmd, "%s: %s", desc, msg);
		pts_topa_free(t);
		return err == -PTS_ERR_BAD_FORMAT || err == -PTS_ERR_BAD_CONFIG
			       ? PTS_EXIT_ERRORS
			       : PTS_EXIT_USAGE;
	}
	in->topa = t;
	in->own_topa = 1;
	start_topa_progress(cmd, in);
	return 0;
}

void pts_trace_input_topa(struct pts_trace_input *in, struct pts_topa *topa)
{
	memset(in, 0, sizeof(*in));
	in->topa = topa;
	pts_topa_rewind(topa);
	start_topa_progress("topa", in);
}

int pts_trace_input_reads_file(const struct pts_trace_input *in,
			       const char *path)
{
	return (in->path && pts_cli_same_file(in->path, path)) ||
	       pts_topa_reads_file(in->topa, path);
}

/* Chunks go out in slices of at most this: a ToPA region comes whole (it
 * may be hundreds of MiB) and progress moves between chunks only. */
#define PROGRESS_SLICE ((size_t)4 << 20)

int pts_trace_input_next(struct pts_trace_input *in, struct pts_input *chunk)
{
	if (!in->rest_len) {
		struct pts_input whole = {NULL, 0, 0};
		int r = in->src ? pts_source_next(in->src, &whole)
			: in->topa ? pts_topa_next(in->topa, &whole)
				   : 0;
		if (r != 1) {
			/* Erased before the command prints its summary. */
			pts_progress_end(&in->progress);
			*chunk = whole;
			return r;
		}
		in->rest = whole.data + whole.pos;
		in->rest_len = whole.size - whole.pos;
	}
	const size_t n =
		in->rest_len < PROGRESS_SLICE ? in->rest_len : PROGRESS_SLICE;
	*chunk = (struct pts_input){in->rest, n, 0};
	in->rest += n;
	in->rest_len -= n;
	in->bytes += n;
	pts_progress_update(&in->progress, in->bytes, pts_cli_now());
	return 1;
}

void pts_trace_input_close(struct pts_trace_input *in)
{
	pts_progress_end(&in->progress);
	pts_source_close(in->src);
	in->src = NULL;
	if (in->own_topa)
		pts_topa_free(in->topa);
	in->topa = NULL;
	in->own_topa = 0;
}

int pts_cli_config_image(const char *cmd, const char *cfg_path,
			 struct pts_image *img, const struct pts_image_spec *s)
{
	const int raw = s->kind != PTS_IMAGE_ELF;
	const int err =
		raw ? pts_image_add_raw(img, 0, s->path, s->from, s->to,
					s->addr)
		    : pts_image_add_elf(img, 0, s->path, s->base);
	if (err >= 0)
		return 0;
	char to[32] = "the end";
	if (s->to)
		snprintf(to, sizeof(to), "0x%" PRIx64, s->to);
	if (raw && err == -PTS_ERR_INVALID)
		pts_cli_error(cmd,
			      "%s:%d: image %s: bytes 0x%" PRIx64 " to %s at "
			      "0x%" PRIx64 ": FROM below TO, bytes inside the "
			      "file, the range not wrapping around",
			      cfg_path, s->line, s->path, s->from, to, s->addr);
	else
		pts_cli_error(cmd, "%s:%d: image %s: %s", cfg_path, s->line,
			      s->path, pts_cli_image_errstr(raw, err));
	return -1;
}

/* Loads the images a configuration file names, and its CPU unless --cpu
 * came first. */
static int load_config(const char *cmd, const char *path,
		       struct pts_image_opts *o)
{
	struct pts_config cfg;
	pts_config_init(&cfg);
	int line = 0;
	int err = pts_config_load(&cfg, path, &line);
	if (err < 0) {
		pts_cli_config_error(cmd, path, line, err, cfg.why);
		pts_config_fini(&cfg);
		return -1;
	}
	for (size_t i = 0; i < cfg.n_images && err >= 0; i++)
		err = pts_cli_config_image(cmd, path, o->img, &cfg.images[i]);
	if (!o->have_cpu)
		o->cpu = cfg.trace.cpu;
	for (int n = 0; n < 4; n++) {
		o->addr_a[n] = cfg.trace.addr_a[n];
		o->addr_b[n] = cfg.trace.addr_b[n];
		o->addr_cfg[n] = (uint8_t)((cfg.trace.ctl >> (32 + 4 * n)) & 0xf);
	}
	pts_config_fini(&cfg);
	return err < 0 ? -1 : 0;
}

void pts_image_opts_flow_config(const struct pts_image_opts *o,
				struct pts_flow_config *fc)
{
	memset(fc, 0, sizeof(*fc));
	fc->cpu = o->cpu;
	memcpy(fc->addr_a, o->addr_a, sizeof(fc->addr_a));
	memcpy(fc->addr_b, o->addr_b, sizeof(fc->addr_b));
	memcpy(fc->addr_cfg, o->addr_cfg, sizeof(fc->addr_cfg));
}

/* Whether the --elf @spec that named no file is an existing FILE with a
 * BASE after its last ':' that is no number ("FILE:zz", "FILE:"): the
 * spec then read as one path, and "no such file" would mislead. */
static int elf_base_unread(const char *spec)
{
	const char *colon = strrchr(spec, ':');
	char file[4096];
	struct stat st;
	if (errno != ENOENT || !colon ||
	    (size_t)(colon - spec) >= sizeof(file))
		return 0;
	memcpy(file, spec, (size_t)(colon - spec));
	file[colon - spec] = '\0';
	return stat(file, &st) == 0;
}

int pts_cli_add_image(const char *cmd, const char *opt,
		      struct pts_image *img, const char *arg)
{
	const int raw = !strcmp(opt, "--raw");
	const int err = raw ? pts_image_add_raw_spec(img, 0, arg)
			    : pts_image_add_elf_spec(img, 0, arg);
	if (err == -PTS_ERR_IO && !raw && elf_base_unread(arg))
		pts_cli_error(cmd, "%s %s: the BASE after the last ':' is "
				   "not a number (FILE[:BASE])",
			      opt, arg);
	else if (err < 0)
		pts_cli_error(cmd, "%s %s: %s", opt, arg,
			      pts_cli_image_errstr(raw, err));
	return err < 0 ? -1 : 0;
}

int pts_image_opts_apply(const char *cmd, struct pts_image_opts *o, int opt,
			 const char *arg)
{
	switch (opt) {
	case 'e':
	case 'r':
		return pts_cli_add_image(cmd, opt == 'r' ? "--raw" : "--elf",
					 o->img, arg) < 0
			       ? PTS_EXIT_USAGE
			       : 0;
	case 'c':
		if (o->nconfigs == PTS_IMAGE_OPTS_MAX_CONFIGS)
			return pts_cli_usage_error(cmd, "at most %d --config "
							"files",
						   PTS_IMAGE_OPTS_MAX_CONFIGS);
		o->configs[o->nconfigs++] = arg;
		return load_config(cmd, arg, o) < 0 ? PTS_EXIT_USAGE : 0;
	case 'C':
		if (pts_cli_parse_cpu(cmd, arg, &o->cpu))
			return PTS_EXIT_USAGE;
		o->have_cpu = 1;
		return 0;
	default:
		return 1;
	}
}

int pts_image_opts_reads_file(const struct pts_image_opts *o,
			      const char *path)
{
	for (int i = 0; i < o->nconfigs; i++)
		if (pts_cli_same_file(o->configs[i], path))
			return 1;
	return pts_image_reads_file(o->img, path);
}

void pts_image_opts_note_empty(const char *cmd,
			       const struct pts_image_opts *o)
{
	if (pts_image_generation(o->img) != 0)
		return;
	if (o->nconfigs)
		fprintf(stderr,
			"ptscope %s: note: no code given (%s has no image "
			"line; --elf, --raw): no instruction can be "
			"decoded\n",
			cmd, o->configs[o->nconfigs - 1]);
	else
		fprintf(stderr,
			"ptscope %s: note: no code given (--elf, --raw or "
			"--config): no instruction can be decoded\n",
			cmd);
}

int pts_flow_drive(const char *cmd, struct pts_flow *flow,
		   struct pts_trace_input *in,
		   int (*decode)(void *ctx, struct pts_flow *flow,
				 struct pts_input *chunk),
		   void *ctx)
{
	struct pts_input chunk = {NULL, 0, 0};
	int ended = 0;
	for (;;) {
		int n = decode(ctx, flow, &chunk);
		if (n > 0)
			continue;
		if (n == 0)
			return 1;
		if (n == -PTS_ERR_EOS)
			return 0;
		if (n != -PTS_ERR_AGAIN || ended) {
			pts_cli_error(cmd, "%s", pts_strerror(n));
			return PTS_EXIT_USAGE;
		}
		int r = pts_trace_input_next(in, &chunk);
		if (r < 0) {
			pts_cli_error(cmd, "read error: %s", pts_cli_errstr(r));
			return PTS_EXIT_USAGE;
		}
		if (r == 0) {
			pts_flow_end(flow); /* then EOS once all is out */
			ended = 1;
		}
	}
}

/* pts_flow_run()'s decode step: records, then @batch on them. */
struct batch_step {
	struct pts_flow_rec *recs;
	int (*batch)(void *ctx, const struct pts_flow_rec *recs, int n);
	void *ctx;
};

enum { BATCH_RECS = 512 };

static int batch_step(void *ctx, struct pts_flow *flow,
		      struct pts_input *chunk)
{
	struct batch_step *b = ctx;
	int n = pts_flow_next(flow, chunk, b->recs, BATCH_RECS);
	if (n > 0 && b->batch(b->ctx, b->recs, n))
		return 0;
	return n;
}

int pts_flow_run(const char *cmd, struct pts_flow *flow,
		 struct pts_trace_input *in,
		 int (*batch)(void *ctx, const struct pts_flow_rec *recs,
			      int n),
		 void *ctx)
{
	struct batch_step b = {malloc(BATCH_RECS * sizeof(*b.recs)), batch,
			       ctx};
	if (!b.recs) {
		pts_cli_error(cmd, "out of memory");
		return PTS_EXIT_USAGE;
	}
	int status = pts_flow_drive(cmd, flow, in, batch_step, &b);
	free(b.recs);
	return status;
}
