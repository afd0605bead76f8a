/* libFuzzer target: random bytes as a trace for the flow walker over a
 * fixed program (fuzz_program.h). Byte 0 picks the chunk size, the batch
 * size and the cache bound (small, to exercise flushes). The last byte
 * (part of the trace too) picks the entry point: bit 0 set,
 * pts_flow_next_ips() with an address array of PTS_FLOW_IPS_MIN + 3 *
 * (byte >> 1); else pts_flow_next(). Invariants:
 * no crash, hang or leak; records well formed; the walker always ends with
 * EOS; with the flat array, the records' addresses one after another from
 * its start, their count in nips, nothing written past its end.
 *
 * Corpus recipe (corpus/flow/): traces of the same program made by
 * flow_gen_run() with this target's layout options and walk options varied
 * (retcomp, deferred TIPs, interrupts, syscalls, overflows), cut to 4 KiB,
 * each with a leading selector byte. */
#include "fuzz_program.h"
#include "fuzz_target.h"

#include <ptscope/decoder.h>

#include <stdint.h>
#include <string.h>

/* The flat address array and what is behind it, which stays untouched. */
#define FLAT_MAX (PTS_FLOW_IPS_MIN + 3 * 127)
#define GUARD 8
#define CANARY UINT64_C(0x5a5a5a5a5a5a5a5a)
static uint64_t flat[FLAT_MAX + GUARD];

/* One call: pts_flow_next(), or pts_flow_next_ips() into @flat when
 * @cap; then checks what the flat array promises. */
static int next_records(struct pts_flow *flow, struct pts_input *in,
			struct pts_flow_rec *recs, int max, size_t cap)
{
	if (!cap)
		return pts_flow_next(flow, in, recs, max);
	for (size_t g = 0; g < GUARD; g++)
		flat[cap + g] = CANARY;
	size_t nips = SIZE_MAX;
	int n = pts_flow_next_ips(flow, in, recs, max, flat, cap, &nips);
	REQUIRE(n != -PTS_ERR_INVALID);
	const uint64_t *next = flat;
	for (int i = 0; i < n; i++) {
		if (recs[i].kind != PTS_FLOW_INSNS)
			continue;
		REQUIRE(recs[i].ips == next);
		next += recs[i].n;
	}
	REQUIRE(nips == (size_t)(next - flat) && nips <= cap);
	for (size_t g = 0; g < GUARD; g++)
		REQUIRE(flat[cap + g] == CANARY);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pts_image *image;
	const struct flow_gen *program = fuzz_program(&image);
	if (size < 1)
		return 0;
	uint8_t sel = data[0];
	uint8_t last = data[size - 1];
	size_t cap = last & 1 ? PTS_FLOW_IPS_MIN + 3 * (size_t)(last >> 1) : 0;
	data++;
	size--;
	size_t chunk = 1 + (size_t)(sel & 0x1f) * 97;
	int max = 1 + (sel >> 5) * 9;
	struct pts_flow_config cfg = {0};
	cfg.cache_bytes = (sel & 0x80) ? 1 : 0; /* flush at every call */
	cfg.idle_limit = 4096;
	struct pts_flow *flow = pts_flow_new(&cfg, image);
	REQUIRE(flow);
	struct pts_flow_rec recs[64];
	size_t pos = 0;
	struct pts_input in = {NULL, 0, 0};
	unsigned idle_calls = 0;
	uint64_t skipped = 0, skip_end = 0;
	for (;;) {
		int n = next_records(flow, &in, recs, max, cap);
		if (n == -PTS_ERR_EOS)
			break;
		if (n == -PTS_ERR_AGAIN) {
			if (pos == size) {
				pts_flow_end(flow);
				REQUIRE(++idle_calls < 4);
				continue;
			}
			size_t len = size - pos < chunk ? size - pos : chunk;
			in = (struct pts_input){data + pos, len, 0};
			pos += len;
			continue;
		}
		REQUIRE(n > 0 && n <= max);
		idle_calls = 0;
		for (int i = 0; i < n; i++) {
			const struct pts_flow_rec *r = &recs[i];
			REQUIRE(r->kind >= PTS_FLOW_INSNS &&
				r->kind <= PTS_FLOW_SKIP);
			if (r->kind == PTS_FLOW_INSNS) {
				REQUIRE(r->n >= 1 && r->ips[0] == r->ip);
				/* Code only comes from the image. */
				REQUIRE(r->ip >= program->base &&
					r->ips[r->n - 1] < program->base +
								program->code_size);
				char text[128];
				REQUIRE(pts_flow_disasm(flow, r, r->n - 1, text,
							sizeof(text)) > 0);
			} else if (r->kind == PTS_FLOW_EVENT) {
				char text[128];
				REQUIRE(r->type < PTS_EV_COUNT);
				REQUIRE(pts_flow_event_text(r, text, sizeof(text)) > 0);
			} else if (r->kind == PTS_FLOW_SKIP) {
				/* in the trace, in order, not overlapping */
				REQUIRE(r->offset >= skip_end &&
					r->offset < r->arg && r->arg <= size);
				skip_end = r->arg;
				skipped += r->arg - r->offset;
			} else {
				REQUIRE(r->error < 0);
			}
		}
	}
	struct pts_flow_stats st;
	pts_flow_get_stats(flow, &st);
	REQUIRE(st.skipped == skipped);
	pts_flow_free(flow);
	return 0;
}
