/* The CLI's trace input (tools/flow_run.c): a ToPA region comes whole from
 * the linearizer, and goes on in slices of at most 4 MiB, so that the
 * progress line moves while a big region is decoded (`--progress topa`
 * printed nothing for 29 s). The bytes and their order are unchanged. */
#include "check.h"
#include "flow_run.h"

#include <ptscope/topa.h>

#include <stdlib.h>
#include <string.h>

enum { RANGE = 16 << 20, WRITTEN = 10 << 20, BASE = 0x1000000 };

int main(void)
{
	uint8_t *region = calloc(1, RANGE);
	struct pts_topa *topa = NULL;
	struct pts_trace_input in;
	struct pts_input chunk;
	uint64_t total = 0;
	int slices = 0, r;

	CHECK(region != NULL);
	if (!region)
		return pts_check_exit();
	for (size_t i = 0; i < WRITTEN; i++)
		region[i] = (uint8_t)(i * 7);
	CHECK_EQ(pts_topa_new(&topa), 0);
	CHECK_EQ(pts_topa_add_memory(topa, BASE, region, RANGE, "region"), 0);
	pts_topa_set_mode(topa, PTS_TOPA_MODE_SINGLE);
	pts_topa_set_wrap(topa, PTS_TOPA_WRAP_NO);
	/* a 16 MiB range written up to 10 MiB */
	pts_topa_set_msrs(topa, BASE, (uint64_t)WRITTEN << 32 | (RANGE - 1),
			  NULL);
	CHECK_EQ(pts_topa_linearize(topa), 0);
	pts_trace_input_topa(&in, topa);
	while ((r = pts_trace_input_next(&in, &chunk)) == 1) {
		CHECK(chunk.size <= (4u << 20));
		CHECK(memcmp(chunk.data + chunk.pos, region + total,
			     chunk.size - chunk.pos) == 0);
		total += chunk.size - chunk.pos;
		slices++;
	}
	CHECK_EQ(r, 0);
	CHECK_EQ(total, WRITTEN);
	CHECK_EQ(slices, 3);
	pts_trace_input_close(&in);
	pts_topa_free(topa);
	free(region);
	return pts_check_exit();
}
