/* `ptscope synth --topa SPEC`: the synthesized trace written into a ToPA
 * layout as hardware would write it (topa_out.c). */
#ifndef PTS_TOOLS_SYNTH_TOPA_OUT_H
#define PTS_TOOLS_SYNTH_TOPA_OUT_H

#include <stdint.h>

struct syn_topa_result {
	uint64_t trace_bytes; /* bytes of the trace */
	uint64_t stored;      /* bytes the buffers took (fewer after STOP) */
	uint64_t capacity;    /* lead-in plus ring */
};

/* Writes the trace in the file @trace_path into a fresh ToPA layout
 * @spec (ptscope/topa.h, pts_topa_writer_new), wrapping rings and stopping
 * at a full STOP region, and saves @prefix.desc with one file per table
 * and region beside it, the output MSRs hardware would leave included.
 * Returns 0, -PTS_ERR_BAD_CONFIG for a bad @spec, -PTS_ERR_IO,
 * -PTS_ERR_NOMEM. */
int syn_topa_save(const char *spec, const char *trace_path,
		  const char *prefix, struct syn_topa_result *res);

#endif
