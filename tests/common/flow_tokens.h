/* A decoded instruction flow as a token stream (instruction addresses and
 * event markers), made by libipt's pt_insn or by ptscope, and compared:
 * the differential flow tests use these. */
#ifndef PTS_TESTS_FLOW_TOKENS_H
#define PTS_TESTS_FLOW_TOKENS_H

#include <ptscope/decoder.h>

#include <intel-pt.h>
#include <stddef.h>
#include <stdint.h>

/* Event markers: non-canonical addresses (bits 63:47 not all equal),
 * which no instruction has. Only these exact values: kernel addresses
 * share their top bits. A CBR's marker carries its ratio in bits 11:4. */
#define PTS_TOK_EVENT(e) (0xfff0000000000000ull | (uint64_t)(e))
#define PTS_TOK_IS_EVENT(x) (((x) & ~0xfffull) == PTS_TOK_EVENT(0))
#define PTS_TOK_CBR_OF(ratio) PTS_TOK_EVENT(PTS_TOK_CBR | (ratio) << 4)
enum {
	PTS_TOK_ENABLED = 1, PTS_TOK_DISABLED, PTS_TOK_OVERFLOW, PTS_TOK_ERROR,
	PTS_TOK_RESUMED, /* enabled where libipt's resumed flag is set */
	PTS_TOK_CBR      /* with_cbr only */
};

struct pts_toks {
	uint64_t *v;
	size_t n, cap;
	uint64_t insns;
	/* Set by the caller: CBR events (core clock changes outside PSB+)
	 * become markers too. */
	int with_cbr;
};

/* Appends @x (exits on no memory). */
void pts_toks_add(struct pts_toks *t, uint64_t x);
void pts_toks_free(struct pts_toks *t);

/* The flow libipt's pt_insn decodes with @cfg (begin/end set; the image is
 * set up by the caller through @setup on the decoder's image, with @ctx).
 * Enabled, disabled (also async), overflow events that are not status
 * updates and (@t->with_cbr) CBR events become markers; a decode error
 * becomes PTS_TOK_ERROR and the decoder resyncs. */
void pts_toks_libipt(const struct pt_config *cfg,
		     int (*setup)(struct pt_image *img, void *ctx), void *ctx,
		     struct pts_toks *t);

/* The flow ptscope decodes from @trace with code from @img and @config
 * (may be NULL), fed in random chunks (1..4096 bytes) with random record
 * counts asked for, from @seed; the same markers. */
void pts_toks_ptscope(const struct pts_image *img,
		      const struct pts_flow_config *config,
		      const uint8_t *trace, size_t size, uint64_t seed,
		      struct pts_toks *t);

/* Prints under @what the tokens of @t in [@from, @to) around token @at
 * (up to 4 on either side), marking it. */
void pts_toks_show(const char *what, const struct pts_toks *t, size_t from,
		   size_t to, size_t at);

/* Compares two streams (with @insns_only, markers are skipped); prints
 * where they differ under @label. Returns 0 when equal, 1 otherwise. */
int pts_toks_compare(const char *label, const char *a_name,
		     const struct pts_toks *a, const char *b_name,
		     const struct pts_toks *b, int insns_only);

#endif
