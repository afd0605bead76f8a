/* Unit tests of the ToPA layer (packets/topa_*.c), compiled with its
 * sources: the writer fills a layout as hardware would, the linearizer must
 * give back exactly the bytes written (the last ring-size bytes when the
 * buffer wrapped), and every malformed input fails with its named error. */
#include "topa_internal.h"

#include "check.h"
#include "rng.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A layout and what it must hold: @lead bytes written once, then a ring of
 * @ring bytes; or, with @stop, a linear buffer of @stop bytes. */
struct layout {
	const char *spec;
	uint64_t lead, ring, stop;
};

#define K *UINT64_C(1024)

static const struct layout layouts[] = {
	{"4K", 0, 4 K, 0},
	{"4K,8K,4K", 0, 16 K, 0},
	{"8K/4K,16K/4K", 0, 32 K, 0},
	{"4K,8K/16K,4K@1", 12 K, 20 K, 0},
	{"4K/4K/8K@2", 8 K, 8 K, 0},
	{"4K,4K,4K,4K,4K,4K,4K,4K/8K,4K", 0, 44 K, 0},
	{"128K/4K:int", 0, 132 K, 0},
	{"4K,8K:int,4K:stop", 0, 0, 16 K},
	{"4K/8K:stop/4K", 0, 0, 12 K},
	{"16K:int:stop", 0, 0, 16 K},
	{"single:4K", 0, 4 K, 0},
	{"single:256", 0, 256, 0},
	{"single:64K", 0, 64 K, 0},
};

/* Concatenates every slice pts_topa_next() gives. */
static uint8_t *collect(struct pts_topa *t, size_t *len)
{
	struct pts_input in;
	size_t n = 0, cap = 4096;
	uint8_t *buf = malloc(cap);
	int r;
	pts_topa_rewind(t);
	while (buf && (r = pts_topa_next(t, &in)) == 1) {
		CHECK(in.pos == 0 && in.size > 0);
		while (n + in.size > cap) {
			uint8_t *nb = realloc(buf, cap * 2);
			if (!nb)
				free(buf);
			buf = nb;
			cap *= 2;
		}
		if (buf)
			memcpy(buf + n, in.data, in.size);
		n += in.size;
	}
	*len = n;
	return buf;
}

/* Random bytes, never zero when @nonzero (so wrap detection can see
 * them). */
static void fill(uint8_t *buf, size_t len, uint64_t seed, int nonzero)
{
	struct pts_rng rng;
	pts_rng_seed(&rng, seed);
	for (size_t i = 0; i < len; i++) {
		buf[i] = (uint8_t)pts_rng_next(&rng);
		if (nonzero && buf[i] == 0)
			buf[i] = 0xa5;
	}
}

/* Checks the linear trace of @t against the bytes @data[0..@n) written
 * into layout @l. Returns 0 when it matches. */
static int expect_linear(struct pts_topa *t, const struct layout *l,
			 const uint8_t *data, uint64_t n, const char *what)
{
	uint64_t from = 0, to = n;
	int wrapped = 0;
	if (l->stop)
		to = n < l->stop ? n : l->stop;
	else if (n >= l->lead + l->ring) {
		from = n - l->ring;
		wrapped = 1;
	}
	int err = pts_topa_linearize(t);
	if (err < 0) {
		fprintf(stderr, "%s: %s n=%llu: linearize: %s\n", l->spec, what,
			(unsigned long long)n, pts_topa_errmsg(t));
		return 1;
	}
	struct pts_topa_info info;
	CHECK(pts_topa_get_info(t, &info) == 0);
	size_t len;
	uint8_t *got = collect(t, &len);
	int bad = !got || len != to - from ||
		  memcmp(got, data + from, (size_t)(to - from)) != 0 ||
		  info.linear_size != len || info.wrapped != wrapped ||
		  info.stop != (l->stop != 0) ||
		  info.stopped != (l->stop && n >= l->stop);
	if (bad)
		fprintf(stderr,
			"%s: %s n=%llu: got %zu bytes (wrapped %d stop %d "
			"stopped %d), want [%llu, %llu) (wrapped %d)\n",
			l->spec, what, (unsigned long long)n, len, info.wrapped,
			info.stop, info.stopped, (unsigned long long)from,
			(unsigned long long)to, wrapped);
	free(got);
	return bad;
}

/* Writes @n bytes into layout @l in pieces and checks the linearizer with
 * wrap detection, and with the wrap stated. */
static int round_trip(const struct layout *l, uint64_t n, int lazy)
{
	struct pts_topa_writer *w;
	if (pts_topa_writer_new(l->spec, &w) < 0) {
		fprintf(stderr, "%s: writer_new failed\n", l->spec);
		return 1;
	}
	pts_topa_writer_set_lazy(w, lazy);
	uint8_t *data = malloc(n ? n : 1);
	int bad = !data;
	for (int nonzero = 1; nonzero >= 0 && !bad; nonzero--) {
		fill(data, n, n * 31 + (uint64_t)lazy, nonzero);
		/* pieces of varying size, as a trace arrives */
		uint64_t done = 0, stored = 0, piece = 1;
		while (done < n) {
			uint64_t take = n - done < piece ? n - done : piece;
			stored += pts_topa_writer_write(w, data + done, take);
			done += take;
			piece = piece * 3 + 7;
		}
		CHECK(stored == (l->stop && n > l->stop ? l->stop : n));
		CHECK(pts_topa_writer_written(w) == stored);
		struct pts_topa *t;
		CHECK(pts_topa_new(&t) == 0);
		CHECK(pts_topa_writer_export(w, t) == 0);
		if (nonzero) {
			bad |= expect_linear(t, l, data, n,
					     lazy ? "detect/lazy" : "detect");
		} else if (!l->stop) {
			pts_topa_set_wrap(t, n >= l->lead + l->ring
						     ? PTS_TOPA_WRAP_YES
						     : PTS_TOPA_WRAP_NO);
			bad |= expect_linear(t, l, data, n, "stated");
		}
		pts_topa_free(t);
		/* the second pass writes into fresh regions */
		pts_topa_writer_free(w);
		if (pts_topa_writer_new(l->spec, &w) < 0)
			return 1;
		pts_topa_writer_set_lazy(w, lazy);
	}
	pts_topa_writer_free(w);
	free(data);
	return bad;
}

/* Every boundary of a 4K (or smaller) grid over 2.5 buffers, one byte
 * either side, and the middle: wrap at every region boundary and
 * mid-region. */
static void test_round_trips(void)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		const struct layout *l = &layouts[i];
		uint64_t total = l->stop ? l->stop : l->lead + l->ring;
		uint64_t step = total < 8192 ? total / 2 : 4096;
		int bad = 0;
		for (uint64_t b = 0; b <= total * 5 / 2 && bad < 3; b += step)
			for (int lazy = 0; lazy <= 1; lazy++) {
				bad += round_trip(l, b, lazy);
				bad += b ? round_trip(l, b - 1, lazy) : 0;
				bad += round_trip(l, b + 1, lazy);
				bad += round_trip(l, b + step / 2, lazy);
			}
		pts_check_failures += bad;
	}
}

static const char *save_dir;

/* Through the files: save (binary tables, then inline ones), load the
 * description, compare. */
static void test_save_load(void)
{
	static const struct {
		const char *spec;
		uint64_t n;
	} cases[] = {{"4K,8K/16K,4K@1", 40000},
		     {"8K/4K,16K:stop", 9000},
		     {"single:8K", 20000},
		     {"4K,4K", 4096}};
	char prefix[512];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (int inl = 0; inl <= 1; inl++) {
			struct pts_topa_writer *w;
			CHECK(pts_topa_writer_new(cases[i].spec, &w) == 0);
			uint8_t *data = malloc(cases[i].n);
			fill(data, cases[i].n, i, 1);
			pts_topa_writer_write(w, data, cases[i].n);
			snprintf(prefix, sizeof(prefix), "%s/c%zu%d", save_dir,
				 i, inl);
			CHECK(pts_topa_writer_save(w, prefix, inl) == 0);
			struct pts_topa *a, *b;
			CHECK(pts_topa_new(&a) == 0);
			CHECK(pts_topa_new(&b) == 0);
			CHECK(pts_topa_writer_export(w, a) == 0);
			strcat(prefix, ".desc");
			int err = pts_topa_load_desc(b, prefix);
			if (err < 0)
				fprintf(stderr, "load: %s\n",
					pts_topa_errmsg(b));
			CHECK(err == 0);
			CHECK(pts_topa_linearize(a) == 0);
			CHECK(pts_topa_linearize(b) == 0);
			size_t la, lb;
			uint8_t *ga = collect(a, &la), *gb = collect(b, &lb);
			CHECK(la > 0 && la == lb && memcmp(ga, gb, la) == 0);
			free(ga);
			free(gb);
			pts_topa_free(a);
			pts_topa_free(b);
			pts_topa_writer_free(w);
			free(data);
		}
	}
}

/* Files for the description tests: "zN" is N zero bytes, "dump" the
 * memory dump below; anything else does not exist. */
static uint8_t zeros[16384];
static uint8_t dump[0x10000];

static int fake_open(void *ctx, const char *path, const uint8_t **data,
		     uint64_t *len)
{
	(void)ctx;
	if (strcmp(path, "dump") == 0) {
		*data = dump;
		*len = sizeof(dump);
		return 0;
	}
	if (strcmp(path, "empty") == 0) {
		*data = zeros;
		*len = 0;
		return 0;
	}
	uint64_t n;
	if (path[0] == 'z' &&
	    pts_topa_parse_bytes(path + 1, path + strlen(path), &n) == 0 &&
	    n <= sizeof(zeros)) {
		*data = zeros;
		*len = n;
		return 0;
	}
	return -PTS_ERR_IO;
}

/* Parses @text and linearizes; returns the first error (0 for none). */
static int run_desc(const char *text, struct pts_topa **out)
{
	struct pts_topa *t = NULL;
	if (pts_topa_new(&t) < 0)
		return -PTS_ERR_NOMEM;
	pts_topa_set_opener(t, fake_open, NULL);
	int err = pts_topa_parse_desc(t, text, strlen(text), NULL, "desc");
	if (err == 0)
		err = pts_topa_linearize(t);
	*out = t;
	return err;
}

/* One table at 0x10000 with a 4K region at 0x100000, pointers at entry 0,
 * offset 0x800. */
#define MSRS "output_base 0x10000\noutput_mask_ptrs 0x000008000000007f\n"
#define TABLE MSRS "table 0x10000\n"
#define GOOD TABLE "entry 0x100000 4K\nentry end 0x10000\n"

static const struct {
	const char *text;
	int err;
	const char *msg;
} bad_inputs[] = {
	{GOOD "region 0x100000 z4K\n", 0, ""},
	{TABLE "entry raw 0x100002\nentry end 0x10000\nregion 0x100000 z4K\n",
	 PTS_ERR_BAD_FORMAT, "table 0x10000 entry 0: reserved bits 0x2 set"},
	{"maxphyaddr 36\n" TABLE "entry raw 0x1000000100000\nentry end "
	 "0x10000\n",
	 PTS_ERR_BAD_FORMAT,
	 "table 0x10000 entry 0: reserved bits 0x1000000000000 set"},
	{TABLE "entry 0x101000 8K\nentry end 0x10000\n", PTS_ERR_BAD_FORMAT,
	 "table 0x10000 entry 0: region base 0x101000 is not aligned to its "
	 "size (8K)"},
	{TABLE "entry end 0x10000\n", PTS_ERR_BAD_FORMAT,
	 "table 0x10000 entry 0: END in entry 0"},
	{TABLE "entry 0x100000 4K\nentry raw 0x10005\nregion 0x100000 z4K\n",
	 PTS_ERR_BAD_FORMAT, "table 0x10000 entry 1: INT or STOP on an END"},
	{"output_base 0x10000\noutput_mask_ptrs 0x000010010000007f\n"
	 "table 0x10000\nentry 0x100000 4K\nentry end 0x10000\n"
	 "region 0x100000 z4K\n",
	 PTS_ERR_BAD_CONFIG,
	 "OutputOffset 0x1001 is past the end of region 0x100000 (table "
	 "0x10000 entry 0, 4K)"},
	{GOOD, PTS_ERR_BAD_FORMAT,
	 "table 0x10000 entry 0: region 0x100000 (4K) is missing"},
	{TABLE "entry 0x100000 8K\nentry end 0x10000\nregion 0x100000 z4K\n",
	 PTS_ERR_BAD_FORMAT,
	 "table 0x10000 entry 0: region 0x100000 (8K) is not held whole: "
	 "z4K at 0x100000 has 4096 bytes"},
	{GOOD "region 0x100000 r0.bin\n", PTS_ERR_IO,
	 "desc:6: r0.bin: cannot open"},
	/* an empty file, or nothing after the offset, could hold no region */
	{GOOD "region 0x100000 empty\n", PTS_ERR_BAD_FORMAT,
	 "desc:6: empty: no bytes (an empty file)"},
	{GOOD "region 0x100000 z4K@0x1000\n", PTS_ERR_BAD_FORMAT,
	 "desc:6: z4K: no bytes after the offset"},
	{TABLE "entry 0x100000 4K\nregion 0x100000 z4K\n", PTS_ERR_BAD_FORMAT,
	 "table 0x10000 entry 1: no table file or memory dump holds it"},
	{TABLE "entry 0x100000 4K\nentry end 0x20000\nregion 0x100000 z4K\n",
	 PTS_ERR_BAD_FORMAT,
	 "table 0x20000 entry 0: no table file or memory dump holds it "
	 "(0x20000) (reached through the END in table 0x10000 entry 1)"},
	{"output_base 0x10000\noutput_mask_ptrs 0x2ff\ntable 0x10000\n"
	 "entry 0x100000 4K\nentry end 0x10000\nregion 0x100000 z4K\n",
	 PTS_ERR_BAD_CONFIG, "output pointers (table 0x10000, entry 5,"},
	{"wrapped yes\n" TABLE "entry 0x100000 4K stop\nregion 0x100000 z4K\n",
	 PTS_ERR_BAD_CONFIG,
	 "wrapped=yes, but the chain ends in a STOP entry (table 0x10000 "
	 "entry 0)"},
	{GOOD "region 0x100000 z4K\noutput_base 0x10080\n", PTS_ERR_BAD_CONFIG,
	 "IA32_RTIT_OUTPUT_BASE 0x10080: a ToPA table base must be 4K"},
	{GOOD "region 0x100000 z4K\noutput_base 0x10001\n", PTS_ERR_BAD_CONFIG,
	 "IA32_RTIT_OUTPUT_BASE 0x10001: reserved bits set"},
	{GOOD "region 0x100000 z4K\nstatus 0x108\n", PTS_ERR_BAD_CONFIG,
	 "IA32_RTIT_STATUS 0x108: reserved bits 0x108 set"},
	{"mode single\noutput_base 0x100000\noutput_mask_ptrs 0xf7f\n"
	 "region 0x100000 z4K\n",
	 PTS_ERR_BAD_CONFIG, "the mask 0xf7f is not a run of low ones"},
	{"mode single\noutput_base 0x100800\noutput_mask_ptrs 0xfff\n",
	 PTS_ERR_BAD_CONFIG,
	 "IA32_RTIT_OUTPUT_BASE 0x100800 is not aligned to the range size "
	 "(4K)"},
	{"mode single\noutput_base 0x100000\noutput_mask_ptrs "
	 "0x0000100000000fff\n",
	 PTS_ERR_BAD_CONFIG,
	 "OutputOffset 0x1000 is past the end of the range"},
	{"mode single\noutput_base 0x100000\noutput_mask_ptrs 0xfff\n"
	 "table 0x10000\nregion 0x100000 z4K\n",
	 PTS_ERR_BAD_CONFIG,
	 "single-range output reads no table, yet table 0x10000 is given"},
	{"mode single\noutput_base 0x100000\noutput_mask_ptrs 0xfff\n"
	 "region 0x100000 z2K\n",
	 PTS_ERR_BAD_FORMAT,
	 "single range 0x100000 (4K) is not held whole: z2K at 0x100000 has "
	 "2048 bytes"},
	{MSRS "\nfrob 1\n", PTS_ERR_BAD_FORMAT,
	 "desc:4: unknown directive 'frob'"},
	{MSRS "entry 0x100000 4K\n", PTS_ERR_BAD_FORMAT,
	 "desc:3: 'entry' outside a 'table'"},
	{"output_base 0xzz\n", PTS_ERR_BAD_FORMAT, "'0xzz' is not a number"},
	{"output_base 0x10000\n", PTS_ERR_BAD_CONFIG,
	 "IA32_RTIT_OUTPUT_MASK_PTRS not given"},
	{GOOD "region 0x100000 z4K@0x2000\n", PTS_ERR_BAD_FORMAT,
	 "z4K: offset 0x2000 is past the end of the file"},
	{GOOD "region 0x100000 z8K\nregion 0x101000 z4K\n", PTS_ERR_BAD_FORMAT,
	 "overlaps"},
	/* an inline table is added when the next directive comes: an
	 * overlap is named at the table's own line (it had none) */
	{MSRS "region 0x10000 z4K\n" "table 0x10000\nentry 0x100000 4K\n"
	 "entry end 0x10000\nregion 0x100000 z4K\n",
	 PTS_ERR_BAD_FORMAT, "desc:4: table 0x10000 at 0x10000 (16 bytes) "
	 "overlaps z4K"},
	/* a table given twice (a bare --table too) */
	{GOOD "table 0x10000\nentry 0x100000 4K\nregion 0x100000 z4K\n",
	 PTS_ERR_BAD_FORMAT, "desc:6: table 0x10000 is given twice"},
	{TABLE "entry 0x100000 3K\n", PTS_ERR_BAD_FORMAT,
	 "'3K' is not a ToPA region size"},
	{MSRS "table 0x10100\n", PTS_ERR_BAD_FORMAT,
	 "table 0x10100 is not 4K aligned"},
	{"start 0x10008\n" GOOD "region 0x100000 z4K\n", PTS_ERR_BAD_CONFIG,
	 "start table 0x10008 is not 4K aligned"},
	{"wrapped maybe\n", PTS_ERR_BAD_FORMAT, "unknown value 'maybe'"},
	{TABLE "entry 0x100000 4K bogus\n", PTS_ERR_BAD_FORMAT,
	 "unknown entry flag 'bogus'"},
	{"maxphyaddr 60\n", PTS_ERR_BAD_FORMAT, "maxphyaddr must be 32..52"},
	{"output_base\n", PTS_ERR_BAD_FORMAT, "'output_base' takes 1 argument"},
};

static void test_bad_inputs(void)
{
	for (size_t i = 0; i < sizeof(bad_inputs) / sizeof(bad_inputs[0]);
	     i++) {
		struct pts_topa *t = NULL;
		int err = run_desc(bad_inputs[i].text, &t);
		const char *msg = pts_topa_errmsg(t);
		if (err != -bad_inputs[i].err ||
		    !strstr(msg, bad_inputs[i].msg)) {
			FAIL("bad input %zu: got %d \"%s\", want %d \"%s\"", i,
			     err, msg, -bad_inputs[i].err, bad_inputs[i].msg);
		}
		pts_topa_free(t);
	}
	/* a real missing file names the file and the reason */
	struct pts_topa *t;
	CHECK(pts_topa_new(&t) == 0);
	CHECK(pts_topa_load_desc(t, "/nonexistent/ptscope.desc") ==
	      -PTS_ERR_IO);
	CHECK(strstr(pts_topa_errmsg(t), "/nonexistent/ptscope.desc: No such"));
	pts_topa_free(t);
}

/* One memory dump holding two tables and three regions:
 *   0x1000: region 0x4000 4K, region 0x8000 16K, END -> 0x2000
 *   0x2000: region 0x5000 4K, END -> 0x1000 */
static void build_dump(void)
{
	memset(dump, 0, sizeof(dump));
	pts_topa_store64(dump + 0x1000, pts_topa_entry_region(0x4000, 0, 0));
	pts_topa_store64(dump + 0x1008, pts_topa_entry_region(0x8000, 2, 0));
	pts_topa_store64(dump + 0x1010, pts_topa_entry_end(0x2000));
	pts_topa_store64(dump + 0x2000, pts_topa_entry_region(0x5000, 0, 0));
	pts_topa_store64(dump + 0x2008, pts_topa_entry_end(0x1000));
	memset(dump + 0x4000, 1, 0x1000);
	memset(dump + 0x8000, 2, 0x4000);
	memset(dump + 0x5000, 3, 0x800);
}

static void test_memory_dump(void)
{
	build_dump();
	/* pointers mid-way into the third region: not wrapped */
	struct pts_topa *t;
	struct pts_topa_info info;
	size_t len;
	int err = run_desc("output_base 0x2000\n"
			   "output_mask_ptrs 0x000008000000007f\n"
			   "memory 0 dump\ntable 0x1000\ntable 0x2000\n",
			   &t);
	CHECK(err == 0);
	CHECK(pts_topa_get_info(t, &info) == 0);
	CHECK(info.tables == 2 && info.regions == 3 && info.circular);
	CHECK(!info.wrapped && info.write_pos == 0x5800);
	uint8_t *got = collect(t, &len);
	CHECK(len == 0x5800 && got[0] == 1 && got[0x1000] == 2 &&
	      got[0x5000] == 3 && got[0x57ff] == 3);
	free(got);
	pts_topa_free(t);

	/* pointers resting on the END entry of table 0x1000 (hardware steps
	 * over it when the next byte comes): the end of the region before */
	CHECK(run_desc("output_base 0x1000\n"
		       "output_mask_ptrs 0x17f\nmemory 0 dump\n"
		       "table 0x1000\nwrapped no\n",
		       &t) == 0);
	CHECK(pts_topa_get_info(t, &info) == 0 && info.write_pos == 0x5000);
	pts_topa_free(t);
	/* and on the END of table 0x2000, which leads back to the ring's
	 * start: the whole ring is written, not none of it (it read as the
	 * start of table 0x1000, and without a wrap gave 0 bytes) */
	CHECK(run_desc("output_base 0x2000\n"
		       "output_mask_ptrs 0xff\nmemory 0 dump\n"
		       "table 0x1000\nwrapped no\n",
		       &t) == 0);
	CHECK(pts_topa_get_info(t, &info) == 0 && info.write_pos == 0x6000 &&
	      info.linear_size == 0x6000);
	got = collect(t, &len);
	CHECK(len == 0x6000 && got[0] == 1 && got[0x5fff] == 0);
	free(got);
	pts_topa_free(t);

	/* detection: with a byte written after the position, it wrapped */
	dump[0x5900] = 9;
	CHECK(run_desc("output_base 0x2000\n"
		       "output_mask_ptrs 0x000008000000007f\n"
		       "memory 0 dump\n",
		       &t) == 0);
	CHECK(pts_topa_get_info(t, &info) == 0 && info.wrapped &&
	      info.linear_size == 0x6000);
	got = collect(t, &len);
	CHECK(len == 0x6000 && got[0x100] == 9 && got[0x800] == 1 &&
	      got[0x5fff] == 3);
	free(got);
	pts_topa_free(t);
}

/* Zero-filled regions decide the wrap; a zero tail that is really old
 * PADs changes nothing, since the bytes handed out are the same. */
static void test_detect_zero_fill(void)
{
	struct pts_topa_writer *w;
	CHECK(pts_topa_writer_new("4K,4K", &w) == 0);
	uint8_t buf[6000];
	memset(buf, 0x55, sizeof(buf));
	memset(buf + 1000, 0, 100);
	pts_topa_writer_write(w, buf, sizeof(buf));
	struct pts_topa *t;
	struct pts_topa_info info;
	CHECK(pts_topa_new(&t) == 0 && pts_topa_writer_export(w, t) == 0);
	CHECK(pts_topa_linearize(t) == 0 && pts_topa_get_info(t, &info) == 0);
	CHECK(!info.wrapped && info.linear_size == sizeof(buf));
	pts_topa_free(t);
	pts_topa_writer_write(w, buf, 3000); /* 9000 bytes: wrapped */
	CHECK(pts_topa_new(&t) == 0 && pts_topa_writer_export(w, t) == 0);
	CHECK(pts_topa_linearize(t) == 0 && pts_topa_get_info(t, &info) == 0);
	CHECK(info.wrapped && info.linear_size == 8192 &&
	      info.write_pos == 9000 - 8192 && info.ring_size == 8192);
	pts_topa_free(t);
	pts_topa_writer_free(w);
}

static void test_writer_specs(void)
{
	static const char *const bad[] = {
		"",	"3K",	    "4K,",	     "4K/",
		"4K@1", "4K:bogus", "single:100",    "single:",
		"256M", "4K@x",	    "single:4K:stop"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct pts_topa_writer *w = (struct pts_topa_writer *)1;
		CHECK(pts_topa_writer_new(bad[i], &w) == -PTS_ERR_BAD_CONFIG);
		CHECK(w == NULL);
	}
	/* the MSRs a STOP leaves: that entry, offset one past the end */
	struct pts_topa_writer *w;
	uint64_t base, mask, status;
	uint8_t buf[5000] = {0};
	CHECK(pts_topa_writer_new("4K/4K:stop", &w) == 0);
	CHECK(pts_topa_writer_write(w, buf, sizeof(buf)) == sizeof(buf));
	CHECK(pts_topa_writer_write(w, buf, sizeof(buf)) == 8192 - 5000);
	pts_topa_writer_msrs(w, &base, &mask, &status);
	CHECK(base == 0x11000 && mask == (UINT64_C(0x1000) << 32 | 0x7f) &&
	      status == PTS_RTIT_STATUS_STOPPED);
	CHECK(pts_topa_writer_capacity(w) == 8192);
	pts_topa_writer_free(w);
}

static int rm_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[600];
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	return rmdir(dir);
}

int main(void)
{
	char tmpl[] = "/tmp/pts-topa-XXXXXX";
	save_dir = mkdtemp(tmpl);
	if (!save_dir) {
		perror("mkdtemp");
		return 1;
	}
	test_round_trips();
	test_save_load();
	test_bad_inputs();
	test_memory_dump();
	test_detect_zero_fill();
	test_writer_specs();
	rm_tree(save_dir);
	return pts_check_exit();
}
