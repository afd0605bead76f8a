/* perf.data with COMPRESSED records: the unit tests' synthetic capture
 * (two per-cpu queues, switches, sideband; perfdata_synth.c) recompressed
 * here record by record. The sideband goes into a zstd stream flushed in
 * small steps, so that records are cut between COMPRESSED records (perf's
 * reader keeps the rest of a record for the next one); AUXTRACE records
 * stay outside as perf record -z writes them, or go inside with their
 * data. The reader must give the same records and the same PT bytes as
 * from the plain file; every truncation and every corrupted payload byte
 * gives an error or fewer records, never a crash (run under ASan). */
#include "check.h"
#include "perfdata_synth.h"

#include <ptscope/perfdata.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PTS_HAVE_ZSTD
#include <zstd.h>

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

/* Compresses @n bytes as COMPRESSED records: the input goes in steps of
 * @step bytes, each flushed into a record of its own. */
static void compress_into(struct synth_buf *out, ZSTD_CCtx *cc,
			  const uint8_t *p, size_t n, size_t step)
{
	for (size_t at = 0; at < n; at += step) {
		size_t len = n - at < step ? n - at : step;
		ZSTD_inBuffer in = {p + at, len, 0};
		uint8_t z[4096];
		size_t left;
		do {
			ZSTD_outBuffer o = {z, sizeof(z), 0};
			left = ZSTD_compressStream2(cc, &o, &in, ZSTD_e_flush);
			CHECK(!ZSTD_isError(left));
			if (!o.pos)
				continue;
			uint32_t type = PTS_PERF_RECORD_COMPRESSED;
			uint16_t misc = 0, size = (uint16_t)(8 + o.pos);
			synth_buf_put(out, &type, 4);
			synth_buf_put(out, &misc, 2);
			synth_buf_put(out, &size, 2);
			synth_buf_put(out, z, o.pos);
		} while (left || in.pos < in.size);
	}
}

/* The capture with its data section recompressed (@aux_inside: AUXTRACE
 * records and data too). */
static void recompress(const struct synth_buf *plain, struct synth_buf *out,
		       int aux_inside, size_t step)
{
	uint64_t off = rd64(plain->data + 40), size = rd64(plain->data + 48);
	CHECK(off + size == plain->len); /* no feature sections */
	out->len = 0;
	synth_buf_put(out, plain->data, off);
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	struct synth_buf pending = {0};
	for (uint64_t pos = off; pos < off + size;) {
		const uint8_t *h = plain->data + pos;
		uint32_t type;
		uint16_t hsize;
		memcpy(&type, h, 4);
		memcpy(&hsize, h + 6, 2);
		uint64_t len = hsize;
		if (type == PTS_PERF_RECORD_AUXTRACE)
			len += rd64(h + 8);
		if (type == PTS_PERF_RECORD_AUXTRACE && !aux_inside) {
			compress_into(out, cc, pending.data, pending.len, step);
			pending.len = 0;
			synth_buf_put(out, h, len);
		} else {
			synth_buf_put(&pending, h, len);
		}
		pos += len;
	}
	compress_into(out, cc, pending.data, pending.len, step);
	uint64_t new_size = out->len - off;
	memcpy(out->data + 48, &new_size, 8);
	ZSTD_freeCCtx(cc);
	synth_buf_free(&pending);
}

/* Records (type, body) and queue bytes in order, hashed. */
static uint64_t digest(const struct pts_perf *perf, uint64_t *nrec)
{
	struct pts_perf_cursor cur;
	struct pts_perf_record rec;
	uint64_t h = 1469598103934665603ull;
	*nrec = 0;
	pts_perf_cursor_init(perf, &cur);
	while (pts_perf_next_record(perf, &cur, &rec, NULL) > 0) {
		h = (h ^ rec.type) * 1099511628211ull;
		for (size_t i = 0; i < rec.body_size; i++)
			h = (h ^ rec.body[i]) * 1099511628211ull;
		++*nrec;
	}
	for (uint32_t i = 0; i < pts_perf_queue_count(perf); i++) {
		const struct pts_perf_queue *q = pts_perf_queue_get(perf, i);
		h = (h ^ (uint64_t)q->cpu) * 1099511628211ull;
		for (uint32_t j = 0; j < q->nr_buffers; j++) {
			const struct pts_perf_buffer *b =
				pts_perf_queue_buffer(perf, i, j);
			for (uint64_t k = 0; k < b->use_size; k++)
				h = (h ^ b->data[k]) * 1099511628211ull;
		}
	}
	return h;
}

static void test_same_as_plain(const struct synth_buf *plain, int aux_inside,
			       size_t step)
{
	struct pts_perf *p0, *p1;
	struct synth_buf z = {0};
	recompress(plain, &z, aux_inside, step);
	CHECK_EQ(pts_perf_open_mem(plain->data, plain->len, &p0, NULL), 0);
	uint8_t *copy;
	struct pts_perf_error err;
	int rc = synth_open_copy(z.data, z.len, &copy, &p1, &err);
	if (rc != 0)
		fprintf(stderr, "open: %s\n", err.msg);
	CHECK_EQ(rc, 0);
	uint64_t n0, n1;
	CHECK_EQ(digest(p0, &n0), digest(p1, &n1));
	CHECK_EQ(n0, n1);
	const struct pts_perf_summary *s0 = pts_perf_summary(p0),
				      *s1 = pts_perf_summary(p1);
	CHECK_EQ(s1->nr_records, s0->nr_records);
	CHECK(s1->nr_compressed >= 1);
	CHECK(s1->decompressed_bytes > 0);
	CHECK_EQ(memcmp(s0->record_counts, s1->record_counts,
			sizeof(s0->record_counts)), 0);
	CHECK_EQ(pts_perf_queue_count(p1), pts_perf_queue_count(p0));
	int32_t pid, tid;
	CHECK_EQ(pts_perf_thread_at(p1, 0, SYNTH_SWITCH_TIME + 1, &pid, &tid),
		 pts_perf_thread_at(p0, 0, SYNTH_SWITCH_TIME + 1, &pid, &tid));
	CHECK_EQ(pts_perf_comm_of(p1, SYNTH_TID).len,
		 pts_perf_comm_of(p0, SYNTH_TID).len);
	pts_perf_close(p0);
	pts_perf_close(p1);
	free(copy);
	synth_buf_free(&z);
}

/* Prefixes and payload bytes flipped (every one near the start, where the
 * zstd frame header and first blocks are, then a sample, to keep the test
 * fast under ASan): no crash, errors named. */
static size_t next_at(size_t at, size_t start)
{
	return at + (at - start < 192 ? 1 : 5);
}

static void test_damage(const struct synth_buf *plain)
{
	struct synth_buf z = {0};
	recompress(plain, &z, 1, 24);
	uint64_t off = rd64(z.data + 40);
	for (size_t len = off; len < z.len; len = next_at(len, off)) {
		struct pts_perf *p;
		struct pts_perf_error err;
		uint8_t *copy;
		int rc = synth_open_copy(z.data, len, &copy, &p, &err);
		CHECK(rc == 1 || rc < 0);
		if (rc == 1) {
			CHECK(err.msg[0] != 0 && err.offset < len);
			uint64_t n;
			digest(p, &n);
		}
		pts_perf_close(p);
		free(copy);
	}
	for (size_t at = off; at < z.len; at = next_at(at, off)) {
		struct pts_perf *p;
		struct pts_perf_error err;
		uint8_t *copy;
		z.data[at] ^= 0xa5;
		int rc = synth_open_copy(z.data, z.len, &copy, &p, &err);
		z.data[at] ^= 0xa5;
		if (rc >= 0) {
			struct pts_perf_cursor cur;
			struct pts_perf_record rec;
			pts_perf_cursor_init(p, &cur);
			while ((rc = pts_perf_next_record(p, &cur, &rec, &err)))
				if (rc < 0)
					CHECK(err.msg[0] && err.offset < z.len);
			uint64_t n;
			digest(p, &n);
		}
		pts_perf_close(p);
		free(copy);
	}
	synth_buf_free(&z);
}

int main(void)
{
	struct synth_buf plain = {0};
	struct synth_opts o = {0};
	CHECK_EQ(synth_perf_data(&plain, &o), 0);
	for (int inside = 0; inside <= 1; inside++) {
		test_same_as_plain(&plain, inside, 7);   /* records cut */
		test_same_as_plain(&plain, inside, 100);
		test_same_as_plain(&plain, inside, 1 << 16);
	}
	test_damage(&plain);
	synth_buf_free(&plain);
	return pts_check_exit();
}

#else /* !PTS_HAVE_ZSTD */

int main(void)
{
	/* Without libzstd there is nothing to compress with; the refusal is
	 * checked by tests/golden/run_perf_zstd.sh on a committed file. */
	printf("built without libzstd: skipped\n");
	return 77;
}

#endif
