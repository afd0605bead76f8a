/* Wrapping a synthesized trace in a perf.data file (`synth --perf-data`). */
#ifndef PTS_TOOLS_PERF_SYNTH_H
#define PTS_TOOLS_PERF_SYNTH_H

#include <ptscope/model.h>

/* Writes @out_path: the raw trace in @trace_path as one per-thread queue
 * (pid = tid = 4242, comm @comm, cpu 0), a MMAP per executable segment of
 * @cfg's ELF images and per raw image, the PT event configured from
 * @cfg's CTL and timing (1 TSC tick = 1 ns of perf time). @compress as
 * pts_perf_write_opts.compress: 0 none, 1 sideband in zstd COMPRESSED
 * records (`perf record -z`), 2 the AUXTRACE data too.
 * Returns 0, -PTS_ERR_IO, or -PTS_ERR_UNSUPPORTED (@compress without
 * libzstd). */
int pts_synth_perf_data(const char *trace_path, const struct pts_config *cfg,
			const char *comm, const char *out_path, int compress);

#endif
