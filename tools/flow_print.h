/* Printing flow records (ptscope/decoder.h) as `ptscope flow` does: ptxed
 * text or JSON lines. Shared by `flow` and `perf flow`; the latter puts its
 * queue fields (cpu, tid, comm, perf time) first in every JSON object. */
#ifndef PTS_TOOLS_FLOW_PRINT_H
#define PTS_TOOLS_FLOW_PRINT_H

#include "cli.h"

#include <ptscope/decoder.h>

#include <stddef.h>

struct pts_flow_printer {
	struct pts_out *out;   /* not owned */
	struct pts_flow *flow; /* for disassembly */
	uint8_t jsonl;         /* else ptxed text */
	uint8_t no_inst;       /* ptxed: addresses only */
	/* jsonl: fields after '{', ending in ','; @fields_len 0: none. */
	const char *fields;
	size_t fields_len;
};

/* One line per instruction of the INSNS record @r. */
void pts_flow_print_insns(const struct pts_flow_printer *p,
			  const struct pts_flow_rec *r);
/* The EVENT record @r ([text] in ptxed, which leaves out PSB+ status). */
void pts_flow_print_event(const struct pts_flow_printer *p,
			  const struct pts_flow_rec *r);
/* The ERROR record @r. */
void pts_flow_print_error(const struct pts_flow_printer *p,
			  const struct pts_flow_rec *r);
/* The SKIP record @r: dump's line ("[b-e: skipped N bytes to resync]"),
 * in jsonl {"offset":b,"skipped":N,"end":e}. */
void pts_flow_print_skip(const struct pts_flow_printer *p,
			 const struct pts_flow_rec *r);
/* The ERROR record @r of a last packet cut where a ToPA buffer ends, at
 * stream offset @end, for the reason @why (pts_cli_topa_cut_by()): the
 * truncation line of `topa dump`, not an error. */
void pts_flow_print_truncated(const struct pts_flow_printer *p,
			      const struct pts_flow_rec *r, uint64_t end,
			      const char *why);

#endif
