/* perf.data reader on the real captures in $PTS_CAPTURES (skips, exit 77,
 * without them): what Linux perf 6.1 says about each file must hold here.
 *
 * How the expected numbers were made (perf 6.1, Debian bookworm, once):
 *   perf report -D -i FILE > out.txt
 *   record counts: the "Aggregated stats" table at the end of out.txt;
 *   AUXTRACE size/idx/cpu/tid: the PERF_RECORD_AUXTRACE lines;
 *   packets per buffer: lines matching '^\.  [0-9a-f]{8}:  ' after each
 *     "Intel Processor Trace data" line (quipper file mode: 9164 + 77467 =
 *     86631; hase-loopy: 540).
 * perf 6.1 cannot read the pipe-mode file: it takes each AUXTRACE payload
 * from 16 bytes too early and then stops ("bad event header size"). Its
 * numbers come from the two payloads re-wrapped in a minimal file-mode
 * perf.data (header, one attr, AUXTRACE_INFO, AUXTRACE records) that
 * perf 6.1 reads: 51442 and 35152 packets. The pipe file's own record count
 * (667) and its end are ptscope's; perf never gets there.
 * hase-loopy's first TSC, 0xafe29d5f88f96, converted with its priv[] time
 * fields gives 969349987536703 ns: after ITRACE_START (969349987535241)
 * and before the first instruction perf script shows (969349.987566).
 *
 * With argv[1] = the ptscope binary, `ptscope perf info` must print the
 * same packet total, and find hase-loopy's binary through --remap. */
#include "check.h"

#include <ptscope/perfdata.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct expect_queue {
	uint32_t idx;
	int32_t cpu, tid;
	uint64_t bytes;
	uint64_t perf_packets;
	const char *comm;
};

struct expect_file {
	const char *path; /* under $PTS_CAPTURES */
	int pipe;
	uint64_t file_size, records, auxtrace, switches, aux;
	uint64_t pmu_type, time_mult, tsc_ctc_n;
	uint32_t nr_queues;
	struct expect_queue q[2];
	uint64_t total_perf_packets;
	struct pts_cpu machine; /* HEADER_CPUID (perf info's "cpu:") */
};

static const struct expect_file files[] = {
	{"quipper-echo/perf.data.intel_pt-4.14", 0, 181764, 257, 2, 152, 10,
	 6, 1789569706, 100, 2,
	 {{0, 0, 3174, 12240, 9164, "echo"},
	  {3, 3, 3174, 137728, 77467, "echo"}},
	 86631, {6, 78, 3}},
	{"quipper-echo/perf.data.piped.intel_pt-4.14", 1, 185680, 667, 2, 552,
	 8, 6, 1789569706, 100, 2,
	 {{0, 0, 3587, 76400, 51442, "echo"},
	  {3, 3, 3587, 68192, 35152, "echo"}},
	 86594, {6, 78, 3}},
	{"hase-loopy/loopy-20180404T162955.perf", 0, 37756, 249, 1, 228, 7,
	 6, 672770566, 266, 1,
	 {{2, 2, 19233, 1392, 540, "loopy"}},
	 540, {6, 94, 3}},
};

/* The perf time of the first TSC packet of buffer @b (0 when none). */
static uint64_t first_tsc_time(const struct pts_perf *perf,
			       const struct pts_perf_buffer *b)
{
	struct pts_perf_time_conv tc;
	pts_perf_time_conv(perf, &tc);
	struct pts_pkt_decoder *dec = pts_pkt_decoder_new(NULL);
	struct pts_input in = {b->data, (size_t)b->use_size, 0};
	struct pts_packet pkt;
	uint64_t t = 0;
	CHECK(dec != NULL);
	while (dec && pts_pkt_next(dec, &in, &pkt) > 0)
		if (pkt.kind == PTS_PKT_TSC) {
			t = pts_perf_tsc_to_time(
				&tc, pts_perf_tsc_extend(pkt.u.tsc, b->reference));
			break;
		}
	pts_pkt_decoder_free(dec);
	return t;
}

static void check_file(const char *dir, const struct expect_file *e)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, e->path);
	struct pts_perf *perf;
	struct pts_perf_error err;
	int rc = pts_perf_open(path, &perf, &err);
	CHECK_EQ(rc, 0);
	if (rc != 0) {
		fprintf(stderr, "%s: %s\n", path, err.msg);
		pts_perf_close(perf);
		return;
	}
	const struct pts_perf_summary *s = pts_perf_summary(perf);
	CHECK_EQ(s->pipe, e->pipe);
	CHECK_EQ(s->file_size, e->file_size);
	CHECK_EQ(s->nr_records, e->records);
	CHECK_EQ(s->nr_bad_records, 0);
	CHECK_EQ(s->record_counts[PTS_PERF_RECORD_AUXTRACE], e->auxtrace);
	CHECK_EQ(s->record_counts[PTS_PERF_RECORD_SWITCH_CPU_WIDE],
		 e->switches);
	CHECK_EQ(s->nr_aux, e->aux);
	if (e->pipe) /* read completely: the records end at the file's end */
		CHECK_EQ(s->data_end, e->file_size);

	struct pts_perf_pt_info pt;
	CHECK_EQ(pts_perf_pt_info(perf, &pt), 0);
	CHECK_EQ(pt.pmu_type, e->pmu_type);
	CHECK_EQ(pt.time_shift, 31);
	CHECK_EQ(pt.time_mult, e->time_mult);
	CHECK_EQ(pt.cap_user_time_zero, 1);
	CHECK_EQ(pt.tsc_bit, 0x400);
	CHECK_EQ(pt.noretcomp_bit, 0x800);
	CHECK_EQ(pt.have_sched_switch, 3);
	CHECK_EQ(pt.per_cpu_mmaps, 1);
	CHECK_EQ(pt.mtc_freq_bits, 0x3c000);
	CHECK_EQ(pt.tsc_ctc_n, e->tsc_ctc_n);
	CHECK_EQ(pt.tsc_ctc_d, 2);
	CHECK(pts_perf_pt_attr(perf) != NULL);
	CHECK_EQ(pts_perf_pt_attr(perf)->config, 0x300e601);
	struct pts_cpu cpu;
	CHECK_EQ(pts_perf_cpu(perf, &cpu), 0);
	CHECK(cpu.family == e->machine.family &&
	      cpu.model == e->machine.model &&
	      cpu.stepping == e->machine.stepping);

	CHECK_EQ(pts_perf_queue_count(perf), e->nr_queues);
	uint64_t total = 0;
	for (uint32_t i = 0; i < e->nr_queues && i < pts_perf_queue_count(perf);
	     i++) {
		const struct pts_perf_queue *q = pts_perf_queue_get(perf, i);
		const struct expect_queue *x = &e->q[i];
		CHECK_EQ(q->idx, x->idx);
		CHECK_EQ(q->cpu, x->cpu);
		CHECK_EQ(q->tid, x->tid);
		CHECK_EQ(q->nr_buffers, 1);
		CHECK_EQ(q->bytes, x->bytes);
		struct pts_perf_str comm = pts_perf_comm_of(perf, q->tid);
		CHECK(comm.len == strlen(x->comm) &&
		      memcmp(comm.ptr, x->comm, comm.len) == 0);
		const struct pts_perf_buffer *b = pts_perf_queue_buffer(perf, i, 0);
		struct pts_perf_pkt_count c = {0};
		CHECK_EQ(pts_perf_count_packets(b, &c), 0);
		CHECK_EQ(c.perf_packets, x->perf_packets);
		CHECK_EQ(c.errors, 0);
		total += c.perf_packets;
		if (x->tid == 19233) /* hase-loopy: see the comment on top */
			CHECK_EQ(first_tsc_time(perf, b), 969349987536703ull);
	}
	CHECK_EQ(total, e->total_perf_packets);
	pts_perf_close(perf);
}

/* The capture cut at many lengths and with bytes flipped: the reader never
 * crashes (this test also runs under ASan), reports truncation with the
 * offset and type of the record it cuts, and keeps what precedes it. */
static void check_damaged(const char *dir, const struct expect_file *e)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, e->path);
	FILE *f = fopen(path, "rb");
	if (!f)
		return;
	uint8_t *all = malloc((size_t)e->file_size);
	size_t n = all ? fread(all, 1, (size_t)e->file_size, f) : 0;
	fclose(f);
	CHECK_EQ(n, e->file_size);
	for (size_t len = 0; all && len < n; len += 1 + len / 16) {
		uint8_t *copy = malloc(len ? len : 1);
		if (!copy)
			break;
		memcpy(copy, all, len);
		struct pts_perf *perf;
		struct pts_perf_error err;
		int rc = pts_perf_open_mem(copy, len, &perf, &err);
		CHECK(rc < 0 || rc == 1 || (e->pipe && rc == 0));
		if (rc == 1) {
			CHECK(err.code == -PTS_ERR_TRUNCATED ||
			      err.code == -PTS_ERR_BAD_FORMAT);
			CHECK(err.offset < len || err.record_type < 0);
			CHECK(strstr(err.msg, "offset 0x") == err.msg);
			for (uint32_t i = 0; i < pts_perf_queue_count(perf); i++) {
				const struct pts_perf_buffer *b =
					pts_perf_queue_buffer(perf, i, 0);
				CHECK(b->data_offset + b->size <= len);
			}
		}
		pts_perf_close(perf);
		free(copy);
	}
	/* flipped bytes in the record headers' region */
	uint64_t x = 0x2545f4914f6cdd1dull;
	for (int round = 0; all && round < 200; round++) {
		uint8_t *copy = malloc(n);
		if (!copy)
			break;
		memcpy(copy, all, n);
		for (int k = 0; k < 4; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			copy[x % 0x8000] ^= (uint8_t)(x >> 40 | 1);
		}
		struct pts_perf *perf;
		if (pts_perf_open_mem(copy, n, &perf, NULL) >= 0) {
			struct pts_perf_cursor cur;
			struct pts_perf_record rec;
			pts_perf_cursor_init(perf, &cur);
			while (pts_perf_next_record(perf, &cur, &rec, NULL) != 0)
				;
		}
		pts_perf_close(perf);
		free(copy);
	}
	free(all);
}

/* Runs @cmdline; it must exit with @status and its standard output must
 * have a line holding @want. */
static void check_output(const char *cmdline, const char *want, int status)
{
	char line[4096];
	FILE *p = popen(cmdline, "r");
	CHECK(p != NULL);
	if (!p)
		return;
	int found = 0;
	while (fgets(line, sizeof(line), p))
		found |= strstr(line, want) != NULL;
	CHECK_EQ(pclose(p), status << 8);
	CHECK(found);
	if (!found)
		fprintf(stderr, "%s: no line with '%s'\n", cmdline, want);
}

/* `ptscope perf info` prints the perf -D packet total of @e; with a path
 * remap it finds hase-loopy's binary (mapped twice) beside the capture. */
static void check_cli(const char *ptscope, const char *dir,
		      const struct expect_file *e)
{
	char cmdline[8192], want[64];
	snprintf(cmdline, sizeof(cmdline), "'%s' perf info '%s/%s'", ptscope,
		 dir, e->path);
	snprintf(want, sizeof(want), "(%llu as perf report -D counts them)",
		 (unsigned long long)e->total_perf_packets);
	check_output(cmdline, want, 0);
	if (e->q[0].tid == 3174) {
		/* Skylake's BDM70 (the CPU from HEADER_CPUID): the FUP in the
		 * PSB+ before the first TIP.PGE is stray. flow met the code
		 * first at the FUP's 0xffffffffb960d300 ("trace does not match
		 * the code", no code being mapped); it starts at the PGE. */
		snprintf(cmdline, sizeof(cmdline),
			 "'%s' perf flow --cpu 0 '%s/%s' 2>/dev/null", ptscope,
			 dir, e->path);
		check_output(cmdline,
			     "[60, ffffffffb960d302: error: no code mapped "
			     "at address]", 1);
	}
	if (e->q[0].tid != 19233)
		return;
	snprintf(cmdline, sizeof(cmdline),
		 "'%s' perf info --remap /home/joerg/git/angr/hase/tests/bin/"
		 "loopy='%s/hase-loopy' '%s/%s'",
		 ptscope, dir, dir, e->path);
	check_output(cmdline, "maps:        5 (2 files found)", 0);
}

int main(int argc, char **argv)
{
	const char *dir = getenv("PTS_CAPTURES");
	char probe[4096];
	snprintf(probe, sizeof(probe), "%s/%s", dir ? dir : ".", files[0].path);
	FILE *f = dir ? fopen(probe, "rb") : NULL;
	if (!f) {
		printf("skipped: no captures at %s\n", dir ? dir : "$PTS_CAPTURES");
		return 77;
	}
	fclose(f);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		check_file(dir, &files[i]);
		check_damaged(dir, &files[i]);
		if (argc > 1)
			check_cli(argv[1], dir, &files[i]);
	}
	return pts_check_exit();
}
