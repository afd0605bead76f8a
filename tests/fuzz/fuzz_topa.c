/* Fuzz target for the ToPA layer: the description parser, the binary table
 * walk and the writer/linearizer round trip.
 *
 * Input layout: byte 0 picks the mode (bits 1:0) and the wrap setting
 * (bits 3:2: detect, no, yes; 3 leaves the description's).
 *   mode 0: a description; its text runs to the first NUL byte, and the
 *           bytes after it are the contents of every file it names (the
 *           fuzzer never touches the file system).
 *   mode 1: binary tables: after byte 0, bytes 0-1 OUTPUT_BASE (4K pages),
 *           2-3 the entry index, 4-5 OutputOffset, 6 flags (bit 0: single
 *           range), then a memory dump at physical address 0 holding a
 *           table at 0.
 *   mode 2: a writer layout spec (to the first NUL), then bytes to write;
 *           the linearizer must give back the bytes written (the last
 *           ring-size ones when wrapped).
 *   mode 3: as mode 0, linearized twice (the second run must agree).
 *
 * Invariants (abort on violation):
 * - errors come with a message; successes hand out exactly linear_size
 *   bytes, no more than the buffer holds, in slices of 1 byte or more;
 * - write_pos <= buffer_size; wrapped only on a circular chain;
 * - mode 2: the round trip gives back what was written.
 */
#include "fuzz_target.h"

#include <ptscope/topa.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct blob {
	const uint8_t *data;
	size_t len;
};

static int open_blob(void *ctx, const char *path, const uint8_t **data,
		     uint64_t *len)
{
	const struct blob *b = ctx;
	(void)path;
	*data = b->data;
	*len = b->len;
	return 0;
}

/* Checks the stream of a linearized set; returns its byte count. */
static uint64_t drain(struct pts_topa *t, uint8_t *copy, size_t cap)
{
	struct pts_topa_info info;
	struct pts_input in;
	uint64_t total = 0;
	REQUIRE(pts_topa_get_info(t, &info) == 0);
	REQUIRE(info.write_pos <= info.buffer_size);
	REQUIRE(info.linear_size <= info.buffer_size);
	REQUIRE(info.ring_size <= info.buffer_size);
	REQUIRE(!info.wrapped || info.circular);
	REQUIRE(!(info.stop && info.circular));
	pts_topa_rewind(t);
	while (pts_topa_next(t, &in) == 1) {
		REQUIRE(in.size > 0 && in.pos == 0);
		if (copy && total + in.size <= cap)
			memcpy(copy + total, in.data, in.size);
		/* touch every byte so a sanitizer sees a bad slice */
		volatile uint8_t sink = 0;
		for (size_t i = 0; i < in.size; i += 64)
			sink ^= in.data[i];
		sink ^= in.data[in.size - 1];
		(void)sink;
		total += in.size;
	}
	REQUIRE(total == info.linear_size);
	return total;
}

static void check_result(struct pts_topa *t, int err)
{
	if (err < 0) {
		REQUIRE(pts_topa_errmsg(t)[0] != '\0');
		REQUIRE(pts_topa_next(t, &(struct pts_input){0}) < 0);
		return;
	}
	drain(t, NULL, 0);
}

static void apply_wrap(struct pts_topa *t, unsigned wrap)
{
	if (wrap < 3)
		pts_topa_set_wrap(t, (enum pts_topa_wrap)wrap);
}

static void run_desc(const uint8_t *data, size_t size, unsigned wrap, int twice)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t text_len = nul ? (size_t)(nul - data) : size;
	struct blob b = {nul ? nul + 1 : data + size,
			 nul ? size - text_len - 1 : 0};
	struct pts_topa *t;
	if (pts_topa_new(&t) < 0)
		return;
	pts_topa_set_opener(t, open_blob, &b);
	int err = pts_topa_parse_desc(t, (const char *)data, text_len, "fuzz",
				      "fuzz");
	if (err == 0) {
		apply_wrap(t, wrap);
		err = pts_topa_linearize(t);
		check_result(t, err);
		if (twice && err == 0) {
			struct pts_topa_info a, c;
			pts_topa_get_info(t, &a);
			REQUIRE(pts_topa_linearize(t) == 0);
			pts_topa_get_info(t, &c);
			REQUIRE(memcmp(&a, &c, sizeof(a)) == 0);
		}
	} else {
		REQUIRE(pts_topa_errmsg(t)[0] != '\0');
	}
	pts_topa_free(t);
}

static void run_tables(const uint8_t *data, size_t size, unsigned wrap)
{
	if (size < 7)
		return;
	uint64_t base = (uint64_t)(data[0] | data[1] << 8) << 12;
	uint64_t idx = (uint64_t)(data[2] | data[3] << 8);
	uint64_t off = (uint64_t)(data[4] | data[5] << 8);
	struct pts_topa *t;
	if (pts_topa_new(&t) < 0)
		return;
	if (data[6] & 1) {
		pts_topa_set_mode(t, PTS_TOPA_MODE_SINGLE);
		idx = (UINT64_C(1) << (idx % 20)) - 1; /* a mask, mostly */
		pts_topa_set_msrs(t, base, idx | off << 32, NULL);
	} else {
		pts_topa_set_msrs(t, base, 0x7f | idx << 7 | off << 32, NULL);
	}
	apply_wrap(t, wrap);
	int err = pts_topa_add_memory(t, 0, data + 7, size - 7, "dump");
	if (err == 0 && (err = pts_topa_add_table(t, 0)) == 0)
		err = pts_topa_linearize(t);
	check_result(t, err);
	pts_topa_free(t);
}

static void run_writer(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	if (!nul || nul - data > 200)
		return;
	char spec[201];
	memcpy(spec, data, (size_t)(nul - data));
	spec[nul - data] = '\0';
	/* keep the fuzzer to small buffers: no megabyte regions */
	if (strchr(spec, 'M') || strchr(spec, 'm'))
		return;
	const uint8_t *bytes = nul + 1;
	size_t n = size - (size_t)(nul - data) - 1;
	struct pts_topa_writer *w;
	if (pts_topa_writer_new(spec, &w) < 0)
		return;
	uint64_t cap = pts_topa_writer_capacity(w);
	/* write the input, then repeat it to wrap a few times */
	uint64_t total = n ? n * (1 + (bytes[0] & 3)) : 0;
	uint8_t *all = malloc(total ? total : 1);
	uint8_t *got = malloc(cap ? cap : 1);
	uint64_t stored = 0;
	for (uint64_t i = 0; all && i < total; i += n) {
		memcpy(all + i, bytes, n);
		stored += pts_topa_writer_write(w, bytes, n);
	}
	struct pts_topa *t;
	if (all && got && pts_topa_new(&t) == 0) {
		REQUIRE(pts_topa_writer_export(w, t) == 0);
		/* detection is exact when no written byte is zero; else say
		 * whether it wrapped (a STOP chain never does) */
		int zeros = n && memchr(bytes, 0, n) != NULL;
		for (int pass = 0; pass < 2; pass++) {
			struct pts_topa_info info;
			REQUIRE(pts_topa_linearize(t) == 0);
			REQUIRE(pts_topa_get_info(t, &info) == 0);
			if (pass == 0 && zeros && !info.stop) {
				pts_topa_set_wrap(
					t, stored >= cap ? PTS_TOPA_WRAP_YES
							 : PTS_TOPA_WRAP_NO);
				continue;
			}
			uint64_t len = drain(t, got, cap);
			uint64_t want = !info.stop && stored >= cap
						? info.ring_size
						: stored;
			REQUIRE(len == want && len <= stored);
			REQUIRE(memcmp(got, all + stored - len, len) == 0);
			REQUIRE(info.wrapped == (!info.stop && stored >= cap));
			break;
		}
		pts_topa_free(t);
	}
	free(all);
	free(got);
	pts_topa_writer_free(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned mode = data[0] & 3, wrap = (data[0] >> 2) & 3;
	data++;
	size--;
	switch (mode) {
	case 0:
		run_desc(data, size, wrap, 0);
		break;
	case 1:
		run_tables(data, size, wrap);
		break;
	case 2:
		run_writer(data, size);
		break;
	default:
		run_desc(data, size, wrap, 1);
		break;
	}
	return 0;
}
