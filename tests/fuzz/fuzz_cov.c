/* libFuzzer target: random bytes as a trace for the coverage sink over the
 * walker's fuzz program (fuzz_program.h), decoded two ways that must agree:
 * pts_cov_decode() (the walker's blocks straight into the sink, with its
 * inline fast path) and pts_flow_next() records fed to pts_cov_feed() (the
 * run cache). Byte 0 picks the chunk size, whether the block cache is
 * flushed at every call, and the sink: the bitmap alone (the fast path),
 * or edges, distinct counts and a filter range too (the slow path).
 * Invariants: no crash, hang or leak; both ways end with EOS and give the
 * same bitmap, edges, distinct edges and counts.
 *
 * Corpus (corpus/cov/): the flow target's traces (the same program), with
 * their selector bytes varied. */
#include "fuzz_program.h"
#include "fuzz_target.h"

#include <ptscope/coverage.h>

#include <stdbool.h>
#include <string.h>

enum { BITMAP_SIZE = 1 << 10, MAX_EDGES = 1 << 13 };

struct outcome {
	struct pts_cov_edge edges[MAX_EDGES];
	size_t nedges;
	uint64_t dropped; /* edges past MAX_EDGES: counted, not kept */
	uint8_t bitmap[BITMAP_SIZE];
	struct pts_cov_stats st;
	size_t nuniq;
	uint64_t uniq_mix; /* of every distinct edge and its count */
};

static void collect(void *ctx, const struct pts_cov_edge *v, size_t n)
{
	struct outcome *o = ctx;
	for (size_t i = 0; i < n; i++) {
		if (o->nedges < MAX_EDGES)
			o->edges[o->nedges++] = v[i];
		else
			o->dropped++;
	}
}

/* One decode of @data in chunks of @chunk bytes; @direct: through
 * pts_cov_decode(), else records. */
static void decode(const uint8_t *data, size_t size, uint8_t sel, bool direct,
		   struct outcome *o)
{
	struct pts_image *image;
	const struct flow_gen *program = fuzz_program(&image);
	size_t chunk = 1 + (size_t)(sel & 0x1f) * 131;
	struct pts_flow_config fc = {0};
	fc.cache_bytes = (sel & 0x80) ? 1 : 0; /* flush at every call */
	fc.idle_limit = 4096;
	struct pts_cov_config cc = {0};
	cc.bitmap_size = BITMAP_SIZE;
	if (sel & 0x40) {
		cc.flags = PTS_COV_BITMAP | PTS_COV_EDGES | PTS_COV_UNIQUE;
		cc.n_ranges = 1;
		cc.begin[0] = program->base + program->code_size / 4;
		cc.end[0] = program->base + program->code_size / 2;
	}
	struct pts_flow *flow = pts_flow_new(&fc, image);
	struct pts_cov *cov = NULL;
	REQUIRE(flow && pts_cov_new(&cc, image, &cov) == 0);
	pts_cov_set_sink(cov, collect, o);
	size_t pos = 0;
	int n;
	do {
		size_t len = size - pos < chunk ? size - pos : chunk;
		struct pts_input in = {data + pos, len, 0};
		pos += len;
		if (pos == size)
			pts_flow_end(flow);
		if (direct) {
			n = pts_cov_decode(cov, flow, &in);
		} else {
			struct pts_flow_rec recs[32];
			while ((n = pts_flow_next(flow, &in, recs, 32)) > 0)
				REQUIRE(pts_cov_feed(cov, recs, n) == 0);
		}
		REQUIRE(in.pos == in.size);
		REQUIRE(n == -PTS_ERR_AGAIN || n == -PTS_ERR_EOS);
	} while (n == -PTS_ERR_AGAIN);
	REQUIRE(pos == size);
	pts_cov_end(cov);
	size_t bsize;
	const uint8_t *bm = pts_cov_bitmap(cov, &bsize);
	REQUIRE(bm && bsize == BITMAP_SIZE);
	memcpy(o->bitmap, bm, bsize);
	pts_cov_get_stats(cov, &o->st);
	const struct pts_cov_count *u;
	o->nuniq = pts_cov_unique(cov, &u);
	for (size_t i = 0; i < o->nuniq; i++)
		o->uniq_mix = (o->uniq_mix ^ u[i].src ^ u[i].dst * 3 ^
			       u[i].count * 5) * UINT64_C(0x9e3779b97f4a7c15);
	pts_cov_free(cov);
	pts_flow_free(flow);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct outcome direct, records;
	if (size < 1)
		return 0;
	memset(&direct, 0, sizeof(direct));
	memset(&records, 0, sizeof(records));
	decode(data + 1, size - 1, data[0], true, &direct);
	decode(data + 1, size - 1, data[0], false, &records);
	REQUIRE(direct.st.edges == records.st.edges &&
		direct.st.runs == records.st.runs);
	REQUIRE(direct.nedges == records.nedges &&
		direct.dropped == records.dropped);
	REQUIRE(!memcmp(direct.edges, records.edges,
			direct.nedges * sizeof(direct.edges[0])));
	REQUIRE(!memcmp(direct.bitmap, records.bitmap, BITMAP_SIZE));
	REQUIRE(direct.nuniq == records.nuniq &&
		direct.uniq_mix == records.uniq_mix);
	return 0;
}
