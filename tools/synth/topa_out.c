/* The ToPA output stage of `ptscope synth` (topa_out.h). The trace is
 * synthesized into its file first and copied into the buffers afterwards:
 * the writer behaves as the CPU's output logic, so the order does not
 * matter, and the emitter stays unaware of output schemes. */
#include "topa_out.h"

#include <ptscope/topa.h>

#include <stdio.h>
#include <stdlib.h>

int syn_topa_save(const char *spec, const char *trace_path,
		  const char *prefix, struct syn_topa_result *res)
{
	struct pts_topa_writer *w = NULL;
	int err = pts_topa_writer_new(spec, &w);
	if (err < 0)
		return err;
	FILE *f = fopen(trace_path, "rb");
	uint8_t *buf = malloc(1 << 16);
	res->trace_bytes = res->stored = 0;
	if (!f || !buf)
		err = f ? -PTS_ERR_NOMEM : -PTS_ERR_IO;
	size_t n;
	while (err == 0 && (n = fread(buf, 1, 1 << 16, f)) > 0) {
		res->trace_bytes += n;
		res->stored += pts_topa_writer_write(w, buf, n);
	}
	if (err == 0 && ferror(f))
		err = -PTS_ERR_IO;
	if (err == 0)
		err = pts_topa_writer_save(w, prefix, 0);
	res->capacity = pts_topa_writer_capacity(w);
	if (f)
		fclose(f);
	free(buf);
	pts_topa_writer_free(w);
	return err;
}
