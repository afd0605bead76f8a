/* perf.data reader: synthetic captures in file mode and unaligned pipe
 * mode read the same; truncated and corrupted variants fail with an error
 * that names the offset and record type, and never crash (run under ASan:
 * every input is copied to an exact-size allocation).
 *
 * PTS_WRITE_SEEDS=DIR also writes the synthetic files there (the fuzz
 * target's seed corpus was made that way). */
#include "check.h"
#include "perfdata_synth.h"

#include <ptscope/perfdata.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Reads everything a consumer would: all records, all buffer bytes. */
static uint64_t touch_all(const struct pts_perf *perf)
{
	struct pts_perf_cursor cur;
	struct pts_perf_record rec;
	uint64_t sum = 0;
	pts_perf_cursor_init(perf, &cur);
	while (pts_perf_next_record(perf, &cur, &rec, NULL) != 0)
		sum += rec.type + rec.body_size;
	for (uint32_t i = 0; i < pts_perf_queue_count(perf); i++)
		for (uint32_t j = 0; j < pts_perf_queue_get(perf, i)->nr_buffers; j++) {
			const struct pts_perf_buffer *b =
				pts_perf_queue_buffer(perf, i, j);
			for (uint64_t k = 0; k < b->use_size; k++)
				sum += b->data[k];
		}
	struct pts_perf_pt_info pt;
	pts_perf_pt_info(perf, &pt);
	return sum + pt.filter.len;
}

/* What every well-formed synthetic capture must show. */
static void check_capture(const struct pts_perf *perf, int pipe,
			  int features)
{
	const struct pts_perf_summary *s = pts_perf_summary(perf);
	CHECK_EQ(s->pipe, pipe);
	CHECK_EQ(s->damaged, 0);
	CHECK_EQ(s->nr_bad_records, 0);
	CHECK_EQ(s->record_counts[PTS_PERF_RECORD_AUXTRACE], 4);
	CHECK_EQ(s->record_counts[PTS_PERF_RECORD_COMM], 2);
	CHECK_EQ(s->record_counts[PTS_PERF_RECORD_HEADER_ATTR], pipe ? 2 : 0);
	CHECK_EQ(s->nr_aux, 2);
	CHECK_EQ(s->aux_truncated, 1);
	CHECK_EQ(s->nr_lost_events, 3);
	if (pipe || features) {
		CHECK(s->cpuid.len == strlen(SYNTH_CPUID) &&
		      memcmp(s->cpuid.ptr, SYNTH_CPUID, s->cpuid.len) == 0);
		CHECK_EQ(s->nr_cpus_avail, 4);
	}
	/* the CPU behind the errata: SYNTH_CPUID's, none without it */
	struct pts_cpu cpu = {1, 1, 1};
	const int known = pipe || features;
	CHECK_EQ(pts_perf_cpu(perf, &cpu), known ? 0 : -PTS_ERR_INVALID);
	CHECK(cpu.family == (known ? 6 : 0) && cpu.model == (known ? 78 : 0) &&
	      cpu.stepping == (known ? 3 : 0));

	CHECK_EQ(pts_perf_attr_count(perf), 2);
	const struct pts_perf_attr *a = pts_perf_attr_get(perf, 0);
	CHECK(a && a->type == SYNTH_PMU_TYPE && a->nr_ids == 2 &&
	      a->ids[1] == 102 && a->sample_id_all);
	CHECK(pts_perf_attr_by_id(perf, 202) == pts_perf_attr_get(perf, 1));
	CHECK(pts_perf_attr_get(perf, 1)->context_switch);
	CHECK(pts_perf_pt_attr(perf) == a);

	struct pts_perf_pt_info pt;
	CHECK_EQ(pts_perf_pt_info(perf, &pt), 0);
	CHECK_EQ(pt.nr_priv, 17);
	CHECK_EQ(pt.pmu_type, SYNTH_PMU_TYPE);
	CHECK_EQ(pt.tsc_ctc_n, 100);
	CHECK_EQ(pt.have_sched_switch, 3);
	CHECK_EQ(pt.have_cap_event_trace, 0);
	struct pts_perf_pt_config cfg;
	CHECK_EQ(pts_perf_pt_config(perf, &cfg), 0);
	CHECK(cfg.tsc && cfg.mtc && cfg.branch && !cfg.cyc);
	CHECK_EQ(cfg.mtc_period, 3);
	CHECK_EQ(cfg.psb_period, 3);
	CHECK_EQ(cfg.rtit_ctl, SYNTH_CONFIG | 0xd); /* TraceEn, OS, User */

	struct pts_perf_time_conv tc;
	CHECK_EQ(pts_perf_time_conv(perf, &tc), 1);
	/* time_zero + tsc * mult >> shift, exactly (mult/2^31 = 5/6) */
	CHECK_EQ(pts_perf_tsc_to_time(&tc, 6ull << 31),
		 SYNTH_TIME_ZERO + 6ull * SYNTH_TIME_MULT);
	/* 1000 + 2400 * 0x6aaaaaaa / 2^31: mult is just under 5/6 */
	CHECK_EQ(pts_perf_tsc_to_time(&tc, SYNTH_TSC), 2999);

	/* queue 0: one stream cut inside a packet; perf's 3 padding bytes
	 * are trimmed so that the two slices join into the original */
	CHECK_EQ(pts_perf_queue_count(perf), 2);
	const struct pts_perf_queue *q = pts_perf_queue_get(perf, 0);
	CHECK(q && q->cpu == 0 && q->tid == -1 && q->nr_buffers == 2);
	CHECK_EQ(q->bytes, SYNTH_CPU0_BUF0 + SYNTH_CPU0_BUF1);
	CHECK_EQ(q->nr_aux, 2);
	CHECK_EQ(q->aux_truncated, 1);
	const struct pts_perf_buffer *b0 = pts_perf_queue_buffer(perf, 0, 0);
	const struct pts_perf_buffer *b1 = pts_perf_queue_buffer(perf, 0, 1);
	CHECK(b0 && b1);
	if (b0 && b1) {
		CHECK_EQ(b0->size, 40);
		CHECK_EQ(b0->use_size, SYNTH_CPU0_BUF0);
		CHECK(!b0->consecutive && b1->consecutive);
		CHECK_EQ(b0->record_offset, synth_auxtrace_offset);
		CHECK_EQ(b0->data[0], 0x02);
		CHECK_EQ(b0->data[SYNTH_CPU0_BUF0 - 4], 0x6d); /* the cut TIP */
		CHECK_EQ(b1->data[3], 0x0a);
		CHECK_EQ(b0->reference, 0x1000);
	}
	/* queue 1: a gap in the AUX offsets means data lost: resync */
	const struct pts_perf_buffer *c1 = pts_perf_queue_buffer(perf, 1, 1);
	CHECK(c1 && !c1->consecutive && c1->use_size == SYNTH_CPU1_BUF);
	CHECK(pts_perf_queue_buffer(perf, 1, 2) == NULL);

	/* threads: cpu 0 runs SYNTH_TID from ITRACE_START until the switch */
	int32_t pid = 0, tid = 0;
	CHECK_EQ(pts_perf_thread_at(perf, 0, 1199, &pid, &tid), 0);
	CHECK_EQ(pts_perf_thread_at(perf, 0, 1200, &pid, &tid), 1);
	CHECK_EQ(tid, SYNTH_TID);
	CHECK_EQ(pts_perf_thread_at(perf, 0, SYNTH_SWITCH_TIME, &pid, &tid), 1);
	CHECK_EQ(tid, SYNTH_OTHER_TID);
	CHECK_EQ(pts_perf_thread_at(perf, 1, 99999, &pid, &tid), 1);
	CHECK_EQ(tid, SYNTH_TID);
	CHECK_EQ(pts_perf_thread_at(perf, 7, 99999, &pid, &tid), 0);
	/* and which threads ever ran where */
	CHECK_EQ(pts_perf_thread_ran(perf, 0, SYNTH_TID), 1);
	CHECK_EQ(pts_perf_thread_ran(perf, 0, SYNTH_OTHER_TID), 1);
	CHECK_EQ(pts_perf_thread_ran(perf, 1, SYNTH_TID), 1);
	CHECK_EQ(pts_perf_thread_ran(perf, 1, SYNTH_OTHER_TID), 0);
	CHECK_EQ(pts_perf_thread_ran(perf, 7, SYNTH_TID), 0);
	struct pts_perf_str comm = pts_perf_comm_of(perf, SYNTH_TID);
	CHECK(comm.len == 5 && memcmp(comm.ptr, SYNTH_COMM, 5) == 0);

	/* records: MMAP2 with its trailer */
	struct pts_perf_cursor cur;
	struct pts_perf_record rec;
	int found = 0, rc;
	pts_perf_cursor_init(perf, &cur);
	while ((rc = pts_perf_next_record(perf, &cur, &rec, NULL)) != 0) {
		CHECK(rc == 1);
		if (rec.type != PTS_PERF_RECORD_MMAP2)
			continue;
		found++;
		CHECK_EQ(rec.offset, synth_mmap2_offset);
		CHECK_EQ(rec.u.mmap.addr, SYNTH_MMAP_ADDR);
		CHECK_EQ(rec.u.mmap.ino, 1234);
		CHECK_EQ(rec.u.mmap.cpumode, 2);
		CHECK(rec.u.mmap.filename.len == strlen(SYNTH_MMAP_PATH));
		CHECK_EQ(rec.sid.time, 1100);
		CHECK_EQ(rec.sid.id, 201);
		CHECK_EQ(rec.attr, 1);
	}
	CHECK_EQ(found, 1);
}

static void test_modes(void)
{
	struct synth_buf b = {0};
	struct synth_opts o = {0};
	uint8_t *copy;
	struct pts_perf *perf;
	struct pts_perf_error err;

	synth_perf_data(&b, &o);
	CHECK_EQ(synth_open_copy(b.data, b.len, &copy, &perf, &err), 0);
	if (perf)
		check_capture(perf, 0, 0);
	pts_perf_close(perf);
	free(copy);

	o.pipe = 1;
	o.unaligned = 1;
	synth_perf_data(&b, &o);
	CHECK_EQ(synth_open_copy(b.data, b.len, &copy, &perf, &err), 0);
	CHECK(synth_auxtrace_offset % 2 == 1); /* really unaligned */
	if (perf) {
		check_capture(perf, 1, 0);
		/* zero copy: the slice points into the caller's bytes */
		const struct pts_perf_buffer *b0 =
			pts_perf_queue_buffer(perf, 0, 0);
		CHECK(b0 && b0->data == copy + synth_auxtrace_offset + 48);
	}
	pts_perf_close(perf);
	free(copy);
	synth_buf_free(&b);
}

static void test_features(void)
{
	struct synth_buf b = {0};
	struct synth_opts o = {.features = 1};
	uint8_t *copy;
	struct pts_perf *perf;
	synth_perf_data(&b, &o);
	CHECK_EQ(synth_open_copy(b.data, b.len, &copy, &perf, NULL), 0);
	if (perf) {
		check_capture(perf, 0, 1);
		const struct pts_perf_summary *s = pts_perf_summary(perf);
		CHECK_EQ(s->nr_cpus_online, 2);
		CHECK_EQ(s->nr_cmdline, 2);
		CHECK(s->cmdline[1].len == 6);
		CHECK_EQ(pts_perf_build_id_count(perf), 1);
		const struct pts_perf_build_id *id = pts_perf_build_id_find(
			perf, SYNTH_MMAP_PATH, strlen(SYNTH_MMAP_PATH));
		CHECK(id && id->id[0] == 0xa0 && id->size == 20);

		/* the image is found under a sysroot, and in a build-id
		 * cache when not there */
		char dir[] = "/tmp/pts-perfdata-XXXXXX", path[512], got[512];
		CHECK(mkdtemp(dir) != NULL);
		snprintf(path, sizeof(path), "%s/usr", dir);
		mkdir(path, 0700);
		snprintf(path, sizeof(path), "%s/usr/bin", dir);
		mkdir(path, 0700);
		snprintf(path, sizeof(path), "%s%s", dir, SYNTH_MMAP_PATH);
		FILE *f = fopen(path, "w");
		CHECK(f != NULL);
		if (f)
			fclose(f);
		struct pts_perf_image_opts io = {.sysroot = dir,
						 .no_buildid_cache = 1};
		CHECK_EQ(pts_perf_image_path(perf, &io, SYNTH_MMAP_PATH,
					     strlen(SYNTH_MMAP_PATH), NULL, 0,
					     got, sizeof(got)),
			 1);
		CHECK(strcmp(got, path) == 0);
		CHECK_EQ(pts_perf_image_path(perf, &io, SYNTH_MMAP_PATH,
					     strlen(SYNTH_MMAP_PATH), NULL, 0,
					     got, 8),
			 -PTS_ERR_AGAIN);
		unlink(path);
		CHECK_EQ(pts_perf_image_path(perf, &io, SYNTH_MMAP_PATH,
					     strlen(SYNTH_MMAP_PATH), NULL, 0,
					     got, sizeof(got)),
			 0);
		/* build-id cache: DIR/.build-id/a0/a1a2.../elf */
		char cache[600];
		snprintf(cache, sizeof(cache), "%s/.build-id", dir);
		mkdir(cache, 0700);
		snprintf(cache, sizeof(cache), "%s/.build-id/a0", dir);
		mkdir(cache, 0700);
		snprintf(cache, sizeof(cache), "%s/.build-id/a0/"
			 "a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3", dir);
		f = fopen(cache, "w");
		if (f)
			fclose(f);
		io.no_buildid_cache = 0;
		io.buildid_dir = dir;
		CHECK_EQ(pts_perf_image_path(perf, &io, SYNTH_MMAP_PATH,
					     strlen(SYNTH_MMAP_PATH), NULL, 0,
					     got, sizeof(got)),
			 1);
		CHECK(strcmp(got, cache) == 0);
		unlink(cache);
		snprintf(cache, sizeof(cache), "%s/.build-id/a0", dir);
		rmdir(cache);
		snprintf(cache, sizeof(cache), "%s/.build-id", dir);
		rmdir(cache);
		snprintf(path, sizeof(path), "%s/usr/bin", dir);
		rmdir(path);
		snprintf(path, sizeof(path), "%s/usr", dir);
		rmdir(path);
		rmdir(dir);
	}
	pts_perf_close(perf);
	free(copy);
	synth_buf_free(&b);
}

/* Every prefix of a capture: no crash; a cut inside the records is
 * reported as truncation at the record it cuts, naming its type. */
static void test_truncation(int pipe)
{
	struct synth_buf b = {0};
	struct synth_opts o = {.pipe = pipe, .unaligned = pipe,
			       .features = !pipe};
	synth_perf_data(&b, &o);
	uint64_t aux_payload = synth_auxtrace_offset + 48 + 10;
	for (size_t len = 0; len < b.len; len++) {
		uint8_t *copy;
		struct pts_perf *perf = NULL;
		struct pts_perf_error err;
		memset(&err, 0, sizeof(err));
		int rc = synth_open_copy(b.data, len, &copy, &perf, &err);
		CHECK(rc >= -PTS_ERR_COUNT && rc <= 1);
		CHECK((rc < 0) == (perf == NULL));
		if (rc != 0)
			CHECK(err.msg[0] != 0 && err.code < 0);
		/* file mode: every cut is damage, also one among the
		 * features after the records */
		if (!pipe)
			CHECK(rc != 0);
		if (perf)
			touch_all(perf);
		if (len == aux_payload) {
			CHECK_EQ(rc, 1);
			CHECK_EQ(err.code, -PTS_ERR_TRUNCATED);
			CHECK_EQ(err.offset, synth_auxtrace_offset);
			CHECK_EQ(err.record_type, PTS_PERF_RECORD_AUXTRACE);
			CHECK(strstr(err.msg, "AUXTRACE") != NULL);
			/* what precedes the damage is there */
			CHECK(perf && pts_perf_attr_count(perf) == 2);
			CHECK(perf && pts_perf_queue_count(perf) == 0);
		}
		pts_perf_close(perf);
		free(copy);
	}
	synth_buf_free(&b);
}

static void expect_open(const struct synth_buf *b, int want_rc, int want_code,
			uint64_t want_offset, int32_t want_type)
{
	uint8_t *copy;
	struct pts_perf *perf;
	struct pts_perf_error err;
	int rc = synth_open_copy(b->data, b->len, &copy, &perf, &err);
	CHECK_EQ(rc, want_rc);
	CHECK_EQ(err.code, want_code);
	if (want_offset != UINT64_MAX)
		CHECK_EQ(err.offset, want_offset);
	CHECK_EQ(err.record_type, want_type);
	if (perf)
		touch_all(perf);
	pts_perf_close(perf);
	free(copy);
}

static void test_corruption(void)
{
	struct synth_buf b = {0};
	struct synth_opts o = {0};

	synth_perf_data(&b, &o);
	memcpy(b.data, "PERFILE3", 8);
	expect_open(&b, -PTS_ERR_BAD_FORMAT, -PTS_ERR_BAD_FORMAT, 0, -1);
	memcpy(b.data, "2ELIFREP", 8);
	expect_open(&b, -PTS_ERR_UNSUPPORTED, -PTS_ERR_UNSUPPORTED, 0, -1);

	synth_perf_data(&b, &o);
	b.data[16] = 7; /* attr_size */
	expect_open(&b, -PTS_ERR_BAD_FORMAT, -PTS_ERR_BAD_FORMAT, 16, -1);

	/* a record whose header.size is below 8 */
	synth_perf_data(&b, &o);
	b.data[synth_mmap2_offset + 6] = 4;
	b.data[synth_mmap2_offset + 7] = 0;
	expect_open(&b, 1, -PTS_ERR_BAD_FORMAT, synth_mmap2_offset,
		    PTS_PERF_RECORD_MMAP2);

	/* an AUXTRACE payload size beyond the file: cut (1G), or a size
	 * no capture has (2^46: it said "file truncated") */
	synth_perf_data(&b, &o);
	b.data[synth_auxtrace_offset + 11] = 0x40;
	expect_open(&b, 1, -PTS_ERR_TRUNCATED, synth_auxtrace_offset,
		    PTS_PERF_RECORD_AUXTRACE);
	synth_perf_data(&b, &o);
	b.data[synth_auxtrace_offset + 13] = 0x40;
	expect_open(&b, 1, -PTS_ERR_BAD_FORMAT, synth_auxtrace_offset,
		    PTS_PERF_RECORD_AUXTRACE);

	/* an MMAP2 too short for its fields: skipped, counted, reported by
	 * the iterator, and the records after it still read */
	synth_perf_data(&b, &o);
	{
		uint8_t *copy;
		struct pts_perf *perf;
		uint16_t size = 8 + 32;
		/* shrink: the bytes after become a record of unknown type 0
		 * that the reader steps over (its size is the rest) */
		uint16_t old;
		memcpy(&old, b.data + synth_mmap2_offset + 6, 2);
		memcpy(b.data + synth_mmap2_offset + 6, &size, 2);
		uint32_t zero = 0;
		uint16_t rest = (uint16_t)(old - size);
		memcpy(b.data + synth_mmap2_offset + size, &zero, 4);
		memcpy(b.data + synth_mmap2_offset + size + 6, &rest, 2);
		CHECK_EQ(synth_open_copy(b.data, b.len, &copy, &perf, NULL), 0);
		if (perf) {
			CHECK_EQ(pts_perf_summary(perf)->nr_bad_records, 1);
			CHECK_EQ(pts_perf_queue_count(perf), 2);
			struct pts_perf_cursor cur;
			struct pts_perf_record rec;
			struct pts_perf_error err;
			int rc, bad = 0;
			pts_perf_cursor_init(perf, &cur);
			while ((rc = pts_perf_next_record(perf, &cur, &rec,
							  &err)) != 0)
				if (rc < 0) {
					bad++;
					CHECK_EQ(err.offset, synth_mmap2_offset);
					CHECK_EQ(err.record_type,
						 PTS_PERF_RECORD_MMAP2);
				}
			CHECK_EQ(bad, 1);
		}
		pts_perf_close(perf);
		free(copy);
	}

	/* AUXTRACE_INFO with 8 priv entries: perf rejects it, so do we */
	o.nr_priv = 8;
	synth_perf_data(&b, &o);
	{
		uint8_t *copy;
		struct pts_perf *perf;
		struct pts_perf_pt_info pt;
		CHECK_EQ(synth_open_copy(b.data, b.len, &copy, &perf, NULL), 0);
		if (perf) {
			CHECK_EQ(pts_perf_pt_info(perf, &pt), -PTS_ERR_BAD_FORMAT);
			CHECK(pts_perf_pt_attr(perf) == NULL);
		}
		pts_perf_close(perf);
		free(copy);
	}
	/* 10 entries (perf 4.1): accepted, later fields 0 */
	o.nr_priv = 10;
	synth_perf_data(&b, &o);
	{
		uint8_t *copy;
		struct pts_perf *perf;
		struct pts_perf_pt_info pt;
		CHECK_EQ(synth_open_copy(b.data, b.len, &copy, &perf, NULL), 0);
		if (perf) {
			CHECK_EQ(pts_perf_pt_info(perf, &pt), 0);
			CHECK_EQ(pt.tsc_ctc_n, 0);
			CHECK_EQ(pt.per_cpu_mmaps, 1);
		}
		pts_perf_close(perf);
		free(copy);
	}
	synth_buf_free(&b);
}

/* Deterministic byte flips over both modes: only "no crash" is asked. */
static void test_flips(void)
{
	struct synth_buf b = {0};
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (int pipe = 0; pipe < 2; pipe++) {
		struct synth_opts o = {.pipe = pipe, .unaligned = pipe,
				       .features = !pipe};
		for (int round = 0; round < 3000; round++) {
			synth_perf_data(&b, &o);
			for (int k = 0; k < 1 + round % 4; k++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				b.data[x % b.len] ^= (uint8_t)(x >> 32 | 1);
			}
			uint8_t *copy;
			struct pts_perf *perf;
			if (synth_open_copy(b.data, b.len, &copy, &perf, NULL) >= 0)
				touch_all(perf);
			pts_perf_close(perf);
			free(copy);
		}
	}
	synth_buf_free(&b);
}

static void test_tsc(void)
{
	const uint64_t ref = 0x0123456789abcdefull;
	CHECK_EQ(pts_perf_tsc_extend(ref & 0xffffffffffffffull, ref), ref);
	/* the 56-bit counter wrapped after the packet: one span back */
	CHECK_EQ(pts_perf_tsc_extend(0xfffffffffffff0ull, 0x0200000000000010ull),
		 0x01fffffffffffff0ull);
	/* the packet is later than the reference by a little */
	CHECK_EQ(pts_perf_tsc_extend(0x10, 0x01fffffffffffff0ull),
		 0x0200000000000010ull);
	struct pts_perf_time_conv tc = {.valid = 1, .time_shift = 10,
					.time_mult = 3, .time_zero = 100};
	CHECK_EQ(pts_perf_tsc_to_time(&tc, 1024 * 5 + 512), 100 + 15 + 1);
	tc.valid = 0;
	CHECK_EQ(pts_perf_tsc_to_time(&tc, 12345), 0);
	CHECK(strcmp(pts_perf_record_name(71), "AUXTRACE") == 0);
	CHECK(strcmp(pts_perf_record_name(63), "UNKNOWN") == 0);
}

/* A packet of @kind as perf's decoder fetches and applies it; returns
 * whether its instruction count restarts. */
static int clock_feed(struct pts_perf_clock *c, int kind, uint64_t a,
		      uint32_t b)
{
	struct pts_packet p;
	memset(&p, 0, sizeof(p));
	p.kind = (uint8_t)kind;
	if (kind == PTS_PKT_TSC)
		p.u.tsc = a;
	else if (kind == PTS_PKT_MTC)
		p.u.mtc_ctc = (uint8_t)a;
	else if (kind == PTS_PKT_CYC)
		p.u.cyc = a;
	else if (kind == PTS_PKT_CBR)
		p.u.cbr.ratio = (uint8_t)a;
	else {
		p.u.tma.ctc = (uint16_t)a;
		p.u.tma.fc = (uint16_t)b;
	}
	pts_perf_clock_fetched(c, kind);
	return pts_perf_clock_packet(c, &p);
}

/* One packet of perf's look ahead; returns whether it ended there. */
static int cal_feed(struct pts_perf_clock *c, struct pts_perf_cyc_cal *cal,
		    int kind, uint64_t a)
{
	struct pts_packet p;
	memset(&p, 0, sizeof(p));
	p.kind = (uint8_t)kind;
	if (kind == PTS_PKT_MTC)
		p.u.mtc_ctc = (uint8_t)a;
	else if (kind == PTS_PKT_CYC)
		p.u.cyc = a;
	else if (kind == PTS_PKT_CBR)
		p.u.cbr.ratio = (uint8_t)a;
	return pts_perf_cyc_cal_step(c, cal, &p);
}

/* perf 6.1's CYC timing (intel_pt_calc_cyc_timestamp and the look ahead of
 * intel_pt_calc_cyc_to_tsc): cycles count from the last TSC or MTC right
 * after a CYC, or from a CBR change; TSC ticks per cycle are measured
 * from such an MTC to the next one, kept only within 1.25 times the
 * CBR's max non-turbo / CBR, which serves until then. */
static void test_clock_cyc(void)
{
	struct pts_perf_clock c;
	struct pts_perf_cyc_cal cal;
	const uint64_t t0 = 0x100000000ull;
	memset(&c, 0, sizeof(c));
	c.tsc_ctc_n = c.tsc_ctc_mult = 100; /* 100 TSC ticks per CTC tick */
	c.tsc_ctc_d = 1;
	c.mtc_shift = 3; /* an MTC period: 800 TSC ticks */
	c.ctc_rem_mask = 7;
	c.max_nonturbo = 24;
	pts_perf_clock_buffer(&c, t0 + 0x1000000, 0);
	CHECK_EQ(clock_feed(&c, PTS_PKT_TSC, t0, 0), 1);
	clock_feed(&c, PTS_PKT_TMA, 0, 0);
	/* no reference yet: CYCs count but move nothing */
	CHECK_EQ(clock_feed(&c, PTS_PKT_CYC, 100, 0), 0);
	CHECK_EQ(c.timestamp, t0);
	/* a CBR of 12: 2 ticks a cycle, counted from here */
	clock_feed(&c, PTS_PKT_CBR, 12, 0);
	CHECK_EQ(clock_feed(&c, PTS_PKT_CYC, 100, 0), 1);
	CHECK_EQ(c.timestamp, t0 + 200);
	clock_feed(&c, PTS_PKT_CYC, 50, 0);
	CHECK_EQ(c.timestamp, t0 + 300);
	/* an MTC right after a CYC: the count starts again there, and
	 * perf measures ahead; 200 cycles to the next such MTC (4 ticks a
	 * cycle, more than 1.25 x 2) is refused */
	CHECK_EQ(clock_feed(&c, PTS_PKT_MTC, 1, 0), 1);
	CHECK_EQ(c.timestamp, t0 + 800);
	CHECK(c.cal_due);
	pts_perf_cyc_cal_start(&c, &cal);
	CHECK(!c.cal_due);
	CHECK_EQ(cal_feed(&c, &cal, PTS_PKT_CYC, 200), 0);
	CHECK_EQ(cal_feed(&c, &cal, PTS_PKT_MTC, 2), 1);
	CHECK(!c.have_cyc_ratio);
	CHECK_EQ(clock_feed(&c, PTS_PKT_CYC, 100, 0), 1);
	CHECK_EQ(c.timestamp, t0 + 1000); /* still the CBR's 2 */
	/* the next one: 640 cycles to the MTC right after a CYC, two
	 * periods on, 2.5 ticks a cycle: kept (an MTC not right after a CYC
	 * does not end the look ahead, nor does a CBR of the same ratio) */
	clock_feed(&c, PTS_PKT_MTC, 2, 0);
	CHECK_EQ(c.timestamp, t0 + 1600);
	pts_perf_cyc_cal_start(&c, &cal);
	CHECK_EQ(cal_feed(&c, &cal, PTS_PKT_CBR, 12), 0);
	CHECK_EQ(cal_feed(&c, &cal, PTS_PKT_MTC, 3), 0);
	CHECK_EQ(cal_feed(&c, &cal, PTS_PKT_CYC, 640), 0);
	CHECK_EQ(cal_feed(&c, &cal, PTS_PKT_MTC, 4), 1);
	CHECK(c.have_cyc_ratio);
	clock_feed(&c, PTS_PKT_CYC, 101, 0);
	CHECK_EQ(c.timestamp, t0 + 1600 + 252); /* 252.5, truncated */
	/* a CYC never takes the time back (perf suppresses it) */
	clock_feed(&c, PTS_PKT_MTC, 4, 0);
	CHECK_EQ(c.timestamp, t0 + 3200);
	CHECK_EQ(c.cycle_cnt, 0);
	pts_perf_cyc_cal_start(&c, &cal);
	CHECK_EQ(cal_feed(&c, &cal, PTS_PKT_CYC, 10), 0);
	CHECK_EQ(cal_feed(&c, &cal, PTS_PKT_TSC, 0), 1); /* MTCs only */
	CHECK(!c.have_cyc_ratio);
	/* a TSC right after a CYC restarts the count too, measuring
	 * nothing */
	clock_feed(&c, PTS_PKT_CYC, 10, 0);
	CHECK_EQ(c.timestamp, t0 + 3220);
	clock_feed(&c, PTS_PKT_TSC, t0 + 4000, 0);
	CHECK(!c.cal_due);
	CHECK_EQ(c.cyc_ref, t0 + 4000);
	clock_feed(&c, PTS_PKT_CYC, 5, 0);
	CHECK_EQ(c.timestamp, t0 + 4010);
	/* a CBR change in the look ahead ends it */
	clock_feed(&c, PTS_PKT_TMA, 0, 0);
	clock_feed(&c, PTS_PKT_CYC, 5, 0);
	clock_feed(&c, PTS_PKT_MTC, 6, 0);
	CHECK(c.cal_due);
	pts_perf_cyc_cal_start(&c, &cal);
	CHECK_EQ(cal_feed(&c, &cal, PTS_PKT_CBR, 12), 0);
	CHECK_EQ(cal_feed(&c, &cal, PTS_PKT_CBR, 24), 1);
	CHECK(!c.have_cyc_ratio);
	/* a damaged CYC of 2^61 cycles: no time past 2^64 (no integer) */
	const uint64_t before = c.timestamp;
	clock_feed(&c, PTS_PKT_CYC, 1ull << 61, 0);
	clock_feed(&c, PTS_PKT_CYC, 1ull << 61, 0);
	CHECK(c.timestamp >= before);
	clock_feed(&c, PTS_PKT_CBR, 1, 0); /* 24 ticks a cycle */
	const uint64_t at_cbr = c.timestamp;
	CHECK_EQ(clock_feed(&c, PTS_PKT_CYC, 1ull << 61, 0), 1);
	CHECK_EQ(c.timestamp, at_cbr);
}

/* A TSC behind the time is a wrap of the 56-bit counter only when the
 * wrapped value stays below the buffer's reference (perf 6.1,
 * intel_pt_calc_tsc_timestamp): a bad TMA made MTC time run ahead, and the
 * next TSC put every later time 2^56 ticks (72 million s) ahead. */
static void test_clock_wrap(void)
{
	struct pts_perf_clock c;
	const uint64_t start = 0x100000000ull;
	memset(&c, 0, sizeof(c));
	c.tsc_ctc_n = c.tsc_ctc_mult = 100; /* 100 TSC ticks per CTC tick */
	c.tsc_ctc_d = 1;
	c.mtc_shift = 3;
	c.ctc_rem_mask = 7;
	pts_perf_clock_buffer(&c, start + 0x1000000, 0);
	clock_feed(&c, PTS_PKT_TSC, start, 0);
	CHECK_EQ(c.timestamp, start);
	/* CTC 0 in the TMA, then an MTC 200 periods on: 160000 ticks ahead,
	 * past perf's tolerance of 0x10000 for a TSC behind the time */
	clock_feed(&c, PTS_PKT_TMA, 0, 0);
	clock_feed(&c, PTS_PKT_MTC, 200, 0);
	CHECK_EQ(c.timestamp, start + 200 * 8 * 100);
	clock_feed(&c, PTS_PKT_TSC, start + 1000, 0);
	CHECK_EQ(c.timestamp, start + 200 * 8 * 100);
	/* a real wrap: the reference is past 2^56 */
	const uint64_t top = (1ull << 56) - 0x100;
	c.timestamp = 0;
	pts_perf_clock_buffer(&c, (1ull << 56) + 0x1000, 0);
	clock_feed(&c, PTS_PKT_TSC, top, 0);
	CHECK_EQ(c.timestamp, top);
	pts_perf_clock_buffer(&c, (1ull << 56) + 0x1000, 1);
	clock_feed(&c, PTS_PKT_TSC, 0x800, 0);
	CHECK_EQ(c.timestamp, (1ull << 56) + 0x800);
}

/* Snapshot mode: the trace, not the AUX offsets, says whether buffers
 * overlap (perf's PSB/TSC match). Two bare PSBs whose offsets overlap by 8
 * bytes: no TSC to match, so no overlap; the second buffer restarts. */
static void test_overlap(void)
{
	struct synth_buf b = {0};
	struct synth_opts o = {.overlap = 1};
	uint8_t *copy;
	struct pts_perf *perf;
	synth_perf_data(&b, &o);
	CHECK_EQ(synth_open_copy(b.data, b.len, &copy, &perf, NULL), 0);
	if (perf) {
		struct pts_perf_pt_info pt;
		CHECK_EQ(pts_perf_pt_info(perf, &pt), 0);
		CHECK_EQ(pt.snapshot_mode, 1);
		const struct pts_perf_buffer *b0 = pts_perf_queue_buffer(perf, 1, 0);
		const struct pts_perf_buffer *b1 = pts_perf_queue_buffer(perf, 1, 1);
		CHECK(b0 && b1);
		if (b0 && b1) {
			CHECK_EQ(b0->use_size, SYNTH_CPU1_BUF);
			CHECK_EQ(b1->skip, 0);
			CHECK_EQ(b1->use_size, SYNTH_CPU1_BUF);
			CHECK(!b1->consecutive);
		}
		CHECK_EQ(pts_perf_queue_get(perf, 1)->bytes, 2 * SYNTH_CPU1_BUF);
	}
	pts_perf_close(perf);
	free(copy);
	synth_buf_free(&b);
}

/* Two snapshots whose data overlaps although their AUX offsets say they
 * follow each other: the repeated bytes are found by the TSC of the first
 * one's last PSB+ and skipped; the joined stream has each packet once. */
#define PADDED(n) (((n) + 7) / 8 * 8)

static void test_snapshot_overlap(void)
{
	struct synth_buf b = {0};
	struct synth_opts o = {.overlap = 2};
	uint8_t *copy;
	struct pts_perf *perf;
	synth_perf_data(&b, &o);
	CHECK_EQ(synth_open_copy(b.data, b.len, &copy, &perf, NULL), 0);
	if (!perf) {
		free(copy);
		synth_buf_free(&b);
		return;
	}
	const struct pts_perf_buffer *b0 = pts_perf_queue_buffer(perf, 1, 0);
	const struct pts_perf_buffer *b1 = pts_perf_queue_buffer(perf, 1, 1);
	CHECK(b0 && b1);
	if (b0 && b1) {
		/* the first loses perf's padding, where the second has real
		 * data; the last keeps its padding (PAD packets) */
		CHECK_EQ(b0->use_size, SYNTH_SNAP_A);
		CHECK_EQ(b1->skip, SYNTH_SNAP_REPEAT);
		CHECK_EQ(b1->use_size, PADDED(SYNTH_SNAP_B) - SYNTH_SNAP_REPEAT);
		CHECK(b1->consecutive);
		/* three PSBs in the joined stream, not four */
		uint8_t joined[256];
		size_t n = 0;
		memcpy(joined, b0->data, (size_t)b0->use_size);
		n += (size_t)b0->use_size;
		memcpy(joined + n, b1->data, (size_t)b1->use_size);
		n += (size_t)b1->use_size;
		uint64_t offs[8];
		CHECK_EQ(pts_psb_list(joined, n, offs, 8), 3);
	}
	CHECK_EQ(pts_perf_queue_get(perf, 1)->bytes,
		 SYNTH_SNAP_A + PADDED(SYNTH_SNAP_B) - SYNTH_SNAP_REPEAT);
	pts_perf_close(perf);
	free(copy);
	synth_buf_free(&b);
}

static void write_seeds(const char *dir)
{
	static const struct synth_opts variants[] = {
		{0, 0, 0, 0, 0}, {0, 0, 1, 0, 0}, {1, 1, 0, 0, 0},
		{1, 0, 0, 10, 0}, {0, 0, 0, 0, 1}};
	struct synth_buf b = {0};
	for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		char path[1024];
		snprintf(path, sizeof(path), "%s/synth-%s-%zu.data", dir,
			 variants[i].pipe ? "pipe" : "file", i);
		synth_perf_data(&b, &variants[i]);
		FILE *f = fopen(path, "wb");
		if (f) {
			fwrite(b.data, 1, b.len, f);
			fclose(f);
		}
	}
	/* a capture cut inside the first AUXTRACE payload */
	char path[1024];
	snprintf(path, sizeof(path), "%s/synth-file-truncated.data", dir);
	synth_perf_data(&b, &variants[0]);
	FILE *f = fopen(path, "wb");
	if (f) {
		fwrite(b.data, 1, (size_t)synth_auxtrace_offset + 48 + 10, f);
		fclose(f);
	}
	synth_buf_free(&b);
}

int main(void)
{
	const char *seeds = getenv("PTS_WRITE_SEEDS");
	if (seeds)
		write_seeds(seeds);
	test_modes();
	test_features();
	test_truncation(0);
	test_truncation(1);
	test_corruption();
	test_flips();
	test_tsc();
	test_clock_wrap();
	test_clock_cyc();
	test_overlap();
	test_snapshot_overlap();
	return pts_check_exit();
}
