/* Real Intel PT captures (../shared/captures, see its README), decoded by
 * ptscope and by libipt 2.0.5: no error, the same packets, and the packet
 * counts the README and `perf report -D` give.
 *
 * perf report -D lets a packet swallow the zero bytes after it while its
 * line is shorter than 8 bytes, so its counts are of lines, not of
 * libipt's packets (each 0x00 is a PAD). Both counts are asserted: the
 * README's 6,219 for keeper-raw and perf's 86,631 for quipper-echo are
 * line counts (PAD runs merged); libipt and ptscope see 7,966 and 105,109
 * packets, 1,996 and 20,016 of them PADs.
 *
 * Skips (exit 77) when PTS_CAPTURES is unset or the folder is absent.
 */
#include "check.h"
#include "oracle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct file {
	uint8_t *data;
	size_t size;
};

static int read_file(const char *dir, const char *name, struct file *f)
{
	char path[4096];
	FILE *in;
	long size;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	memset(f, 0, sizeof(*f));
	in = fopen(path, "rb");
	if (!in) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fseek(in, 0, SEEK_END) == 0 && (size = ftell(in)) > 0 &&
	    fseek(in, 0, SEEK_SET) == 0) {
		f->data = malloc((size_t)size);
		if (f->data && fread(f->data, 1, (size_t)size, in) == (size_t)size)
			f->size = (size_t)size;
	}
	fclose(in);
	if (!f->size) {
		fprintf(stderr, "%s: cannot read\n", path);
		free(f->data);
		return -1;
	}
	return 0;
}

static uint64_t le(const uint8_t *p, int bytes)
{
	uint64_t v = 0;

	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* One AUXTRACE buffer: the raw PT bytes of one CPU's copy-out. */
struct aux {
	const uint8_t *data;
	uint64_t size;
	uint32_t cpu;
};

enum { MAX_AUX = 8, AUXTRACE = 71, AUXTRACE_HEADER = 48 };

/* Collects the PERF_RECORD_AUXTRACE payloads of a perf.data file, just
 * enough for this test (perf-data-facts.md sections 0 and 2): records are
 * {u32 type, u16 misc, u16 size}; an AUXTRACE record is 48 bytes (u64 size,
 * offset, reference; u32 idx, tid, cpu, reserved) and its `size` payload
 * bytes follow it without being counted in the header. File mode: a
 * 104-byte header whose data section is {u64 offset, u64 size} at byte 40.
 * Pipe mode: a 16-byte header, records to the end, not 8-aligned.
 * Returns the number of buffers, or -1 when a record leaves the data
 * section (the walk must land exactly on its end). */
static int aux_buffers(const struct file *f, struct aux *out, int max)
{
	uint64_t pos, end;
	int n = 0;

	if (f->size < 16 || memcmp(f->data, "PERFILE2", 8) != 0)
		return -1;
	if (le(f->data + 8, 8) == 104 && f->size >= 104) {
		pos = le(f->data + 40, 8);
		end = pos + le(f->data + 48, 8);
	} else {
		pos = 16;
		end = f->size;
	}
	if (end > f->size || pos > end)
		return -1;
	while (end - pos >= 8) {
		const uint8_t *rec = f->data + pos;
		uint64_t size = le(rec + 6, 2), payload = 0;

		if (size < 8 || size > end - pos)
			return -1;
		if (le(rec, 4) == AUXTRACE) {
			if (size != AUXTRACE_HEADER || n == max)
				return -1;
			payload = le(rec + 8, 8);
			if (payload > end - pos - size)
				return -1;
			out[n].data = rec + size;
			out[n].size = payload;
			out[n].cpu = (uint32_t)le(rec + 40, 4);
			n++;
		}
		pos += size + payload;
	}
	return pos == end ? n : -1;
}

/* Compares one trace buffer twice (small chunks with pts_pkt_next, one
 * chunk with batches) and adds the first pass to @total. */
static void compare_buffer(const char *label, const uint8_t *data, size_t size,
			   struct pts_oracle_stats *total)
{
	struct pts_oracle_opts chunked = {
		.label = label, .chunk_seed = size, .max_chunk = 61};
	struct pts_oracle_opts batched = {.label = label, .batch = 128};
	struct pts_oracle_stats one = {.reports_left = 10};
	struct pts_oracle_stats two = {.reports_left = 10};

	CHECK_EQ(pts_oracle_compare(data, size, &chunked, &one), 0);
	CHECK_EQ(pts_oracle_compare(data, size, &batched, &two), 0);
	pts_oracle_print(label, &one);
	CHECK_EQ(two.packets, one.packets);
	/* Real captures decode without a single error. */
	for (int err = 0; err < PTS_ERR_COUNT; err++)
		CHECK_EQ(one.errors[err] + two.errors[err], 0);
	CHECK_EQ(one.mismatches + two.mismatches, 0);

	total->packets += one.packets;
	total->perf_lines += one.perf_lines;
	for (int kind = 0; kind < PTS_PKT_KIND_COUNT; kind++)
		total->kinds[kind] += one.kinds[kind];
}

static void check_keeper(const char *dir)
{
	struct pts_oracle_stats total = {0};
	struct file f;

	if (read_file(dir, "keeper-raw/traced_data.bin", &f) < 0) {
		CHECK(!"keeper-raw readable");
		return;
	}
	compare_buffer("keeper-raw", f.data, f.size, &total);
	CHECK_EQ(total.packets, 7966);
	CHECK_EQ(total.kinds[PTS_PKT_PAD], 1996);
	CHECK_EQ(total.perf_lines, 6219);
	free(f.data);
}

struct perf_expect {
	const char *name;
	int buffers;
	uint32_t cpu[2];
	uint64_t size[2];
	uint64_t packets, pads, perf_lines; /* perf_lines 0: not known */
};

static void check_perf(const char *dir, const struct perf_expect *want)
{
	struct pts_oracle_stats total = {0};
	struct aux aux[MAX_AUX];
	struct file f;
	int n;

	if (read_file(dir, want->name, &f) < 0) {
		CHECK(!"perf.data readable");
		return;
	}
	n = aux_buffers(&f, aux, MAX_AUX);
	CHECK_EQ(n, want->buffers);
	for (int i = 0; i < n && i < want->buffers; i++) {
		char label[256];

		snprintf(label, sizeof(label), "%s cpu %u", want->name,
			 aux[i].cpu);
		CHECK_EQ(aux[i].cpu, want->cpu[i]);
		CHECK_EQ(aux[i].size, want->size[i]);
		compare_buffer(label, aux[i].data, aux[i].size, &total);
	}
	CHECK_EQ(total.packets, want->packets);
	CHECK_EQ(total.kinds[PTS_PKT_PAD], want->pads);
	if (want->perf_lines)
		CHECK_EQ(total.perf_lines, want->perf_lines);
	free(f.data);
}

int main(void)
{
	/* perf_lines from `perf report -D` (perf 6.1) on each file; perf 6.1
	 * cannot read the pipe-mode file past its first buffer, so there is
	 * no perf figure for it. The pipe-mode file is a recording of its own
	 * (other tid, other TSC and CR3 values in its first PSB+), so its
	 * buffers are not those of the file-mode one. */
	static const struct perf_expect files[] = {
		{"quipper-echo/perf.data.intel_pt-4.14", 2, {0, 3},
		 {12240, 137728}, 105109, 20016, 86631},
		{"quipper-echo/perf.data.piped.intel_pt-4.14", 2, {0, 3},
		 {76400, 68192}, 102726, 17625, 0},
		{"hase-loopy/loopy-20180404T162955.perf", 1, {2, 0}, {1392, 0},
		 735, 225, 540},
	};
	const char *dir = getenv("PTS_CAPTURES");
	FILE *readme;
	char path[4096];

	if (!dir || !*dir) {
		printf("skip: PTS_CAPTURES is not set\n");
		return 77;
	}
	snprintf(path, sizeof(path), "%s/README.md", dir);
	readme = fopen(path, "r");
	if (!readme) {
		printf("skip: no captures at %s\n", dir);
		return 77;
	}
	fclose(readme);

	check_keeper(dir);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		check_perf(dir, &files[i]);
	return pts_check_exit();
}
