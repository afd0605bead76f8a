/* Driving a source through the emitter (synth.c), for the CLI and tests. */
#ifndef PTS_TOOLS_SYNTH_RUN_H
#define PTS_TOOLS_SYNTH_RUN_H

#include "synth.h"
#include "walk.h"

/* IA32_RTIT_CTL.ToPA (windows.h has no name for it). */
#define SYN_CTL_TOPA (1ull << 8)

struct syn_driver {
	const struct syn_options *o;
	const struct pts_config *cfg;
	struct syn_emitter *em;
	struct syn_truth *truth; /* may be NULL */
	uint64_t start;
	struct syn_where start_where;
	/* The source: next() returns 0 with a step, 1 at its end, < 0. */
	void *source;
	int (*next)(void *source, struct syn_step *s);
	void (*restart_here)(void *source); /* may be NULL */
	/* Called after every step with the emitter's verdict (tests): an
	 * enum syn_hidden reason, or 0 when its packets are in the trace
	 * (an event's are lost only in an overflow). */
	void (*on_step)(void *ctx, const struct syn_step *s, int hidden);
	void *ctx;
	/* Results. */
	uint64_t insns, visible;
};

/* Runs until o->insns instructions or the source ends, then ends the
 * trace. Returns 0 or a negative error. */
int syn_drive(struct syn_driver *d);

/* The configuration @o describes (CTL, ranges, CPUID 0x15, nominal
 * frequency) into @cfg->trace. */
void syn_options_to_config(const struct syn_options *o,
			   struct pts_config *cfg);

/* Emitter: the model time (TSC, core cycles) of the first timing packet
 * since the last call, for the truth's "t" lines. Returns 1 and sets them,
 * or 0 when no timing packet went out. */
int syn_emit_take_mark(struct syn_emitter *em, uint64_t *tsc,
		       uint64_t *cycles);

/* Adapters for struct syn_driver. */
int syn_walk_source_next(void *walk, struct syn_step *s);
void syn_walk_source_restart(void *walk);

/* One whole walk synthesis in memory (tests): the image @img walked from
 * @start (0: a function entry) with @o and @cfg; the trace in @sink's
 * memory. @on_step may be NULL. Returns 0 or a negative error. */
int syn_walk_to_memory(const struct syn_options *o, const struct pts_config *cfg,
		       struct pts_image *img, uint64_t start,
		       struct syn_sink *sink,
		       void (*on_step)(void *, const struct syn_step *, int),
		       void *ctx, struct syn_emit_stats *stats);

/* run_ptrace.c: records @argv (argv[0] the program path) single-stepped
 * under ptrace. Adds the executable file mappings seen to @cfg as images.
 * Returns 0 and sets *@out or a negative error. */
struct syn_run;
int syn_run_start(const struct syn_options *o, char *const argv[],
		  struct syn_run **out);
int syn_run_next(void *run, struct syn_step *s);
uint64_t syn_run_ip(const struct syn_run *r);
int syn_run_images(struct syn_run *r, struct pts_config *cfg);
void syn_run_free(struct syn_run *r);

#endif
