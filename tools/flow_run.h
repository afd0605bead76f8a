/* What the decoding subcommands (flow, cov, windows, and `topa` in front
 * of them) share: where the trace bytes come from (a file or a linearized
 * ToPA buffer), the image options, and the flow decode loop. */
#ifndef PTS_TOOLS_FLOW_RUN_H
#define PTS_TOOLS_FLOW_RUN_H

#include <ptscope/decoder.h>
#include <ptscope/model.h>
#include <ptscope/packets.h>
#include <ptscope/topa.h>

#include "progress.h"

#include <getopt.h>

/* A trace in chunks: a raw file (or standard input) or the slices of a
 * linearized ToPA buffer, read straight from the regions. */
struct pts_trace_input {
	struct pts_source *src; /* owned: closed by pts_trace_input_close() */
	struct pts_topa *topa;  /* borrowed, unless @own_topa */
	int own_topa;
	uint64_t bytes;         /* handed out so far */
	/* What is left of the source's last chunk (see PROGRESS_SLICE). */
	const uint8_t *rest;
	size_t rest_len;
	/* ToPA input: why its last packet may be cut ("ToPA STOP", "end of
	 * buffer"); a cut packet there is truncation, not a decode error.
	 * NULL for a file, where it is an error. */
	const char *cut_by;
	const char *path; /* the trace file ("-": standard input); NULL: ToPA */
	struct pts_progress progress; /* ends with the input */
};

/* Whether @in reads the file @path: the trace, or a file of the ToPA
 * buffers or their description. */
int pts_trace_input_reads_file(const struct pts_trace_input *in,
			       const char *path);

/* Adds the image of configuration @cfg_path that @s describes to @img;
 * on failure says why, naming the file and its line, and returns -1. */
int pts_cli_config_image(const char *cmd, const char *cfg_path,
			 struct pts_image *img, const struct pts_image_spec *s);

/* Opens the trace @path ("-": standard input). Returns 0, or prints why
 * not (as @cmd) and returns -1. */
int pts_trace_input_open(const char *cmd, const char *path,
			 struct pts_trace_input *in);
/* Loads the ToPA description @desc and linearizes it (owned by @in).
 * Returns 0, or prints why not and returns PTS_EXIT_ERRORS (a malformed
 * buffer) or PTS_EXIT_USAGE. */
int pts_trace_input_open_topa(const char *cmd, const char *desc,
			      struct pts_trace_input *in);
/* Reads from the linearized @topa, from its oldest byte. */
void pts_trace_input_topa(struct pts_trace_input *in, struct pts_topa *topa);
/* The next chunk. Returns 1, 0 at the end, or a negative -PTS_ERR_*. */
int pts_trace_input_next(struct pts_trace_input *in, struct pts_input *chunk);
void pts_trace_input_close(struct pts_trace_input *in);

/* The image options: --elf, --raw, --config, --cpu. */
#define PTS_IMAGE_LONGOPTS                                                    \
	{"elf", required_argument, NULL, 'e'},                                \
		{"raw", required_argument, NULL, 'r'},                        \
		{"config", required_argument, NULL, 'c'},                     \
		{"cpu", required_argument, NULL, 'C'}

#define PTS_IMAGE_OPTS_MAX_CONFIGS 16

struct pts_image_opts {
	struct pts_image *img; /* filled */
	struct pts_cpu cpu;    /* --cpu, else the configuration's */
	int have_cpu;
	/* The --config files read (pts_image_opts_reads_file()). */
	const char *configs[PTS_IMAGE_OPTS_MAX_CONFIGS];
	int nconfigs;
	/* The configuration's IP filter ranges (ADDRn_A/B and ADDRn_CFG from
	 * RTIT_CTL): the SKL014 workaround needs them. */
	uint64_t addr_a[4], addr_b[4];
	uint8_t addr_cfg[4];
};

/* The walker configuration the options give: CPU (errata) and filter
 * ranges. */
void pts_image_opts_flow_config(const struct pts_image_opts *o,
				struct pts_flow_config *fc);

/* Option @opt's image @arg into the default space of @img: "--raw"
 * FILE[:FROM[-TO]]:ADDR, any other (--elf, synth's --walk) FILE[:BASE].
 * Returns 0, or -1 after saying why. */
int pts_cli_add_image(const char *cmd, const char *opt,
		      struct pts_image *img, const char *arg);

/* Applies image option @opt ('e', 'r', 'c' or 'C') with @arg. Returns 1
 * when @opt is not one of them, 0 when applied, or PTS_EXIT_USAGE after a
 * message. */
int pts_image_opts_apply(const char *cmd, struct pts_image_opts *o, int opt,
			 const char *arg);

/* Whether the options read the file @path: a --config file, or code an
 * image maps. */
int pts_image_opts_reads_file(const struct pts_image_opts *o,
			      const char *path);

/* Before decoding: a note on standard error when the options gave no code
 * at all, the likely reason why every instruction will be an error. */
void pts_image_opts_note_empty(const char *cmd,
			       const struct pts_image_opts *o);

/* Decodes all of @in with @flow, handing each batch of records to @batch
 * (a nonzero return stops the decode). Read errors are printed as @cmd.
 * Returns 0, 1 when @batch stopped it, or PTS_EXIT_USAGE. */
int pts_flow_run(const char *cmd, struct pts_flow *flow,
		 struct pts_trace_input *in,
		 int (*batch)(void *ctx, const struct pts_flow_rec *recs,
			      int n),
		 void *ctx);

/* The input loop of pts_flow_run() around @decode, which decodes what
 * @chunk holds with @flow and returns as pts_flow_next() does (> 0: call
 * again; -PTS_ERR_AGAIN: the next chunk; -PTS_ERR_EOS: done) or 0 to stop
 * the decode (then this returns 1). Same returns as pts_flow_run(). */
int pts_flow_drive(const char *cmd, struct pts_flow *flow,
		   struct pts_trace_input *in,
		   int (*decode)(void *ctx, struct pts_flow *flow,
				 struct pts_input *chunk),
		   void *ctx);

#endif /* PTS_TOOLS_FLOW_RUN_H */
