/* Synthetic perf.data files for the perf.data reader's tests: a small but
 * complete Intel PT capture (attrs with ids, AUXTRACE_INFO, TIME_CONV,
 * sideband, two per-cpu queues) written in file or pipe mode. */
#ifndef PTS_TEST_PERFDATA_SYNTH_H
#define PTS_TEST_PERFDATA_SYNTH_H

#include <stddef.h>
#include <stdint.h>

/* A growable byte buffer. */
struct synth_buf {
	uint8_t *data;
	size_t len, cap;
};

/* What the synthetic capture holds, for the tests to compare against. */
enum {
	SYNTH_PMU_TYPE = 8,          /* not 6: the reader must not assume it */
	SYNTH_CONFIG = 0x300e601,    /* perf's default intel_pt// config */
	SYNTH_TID = 4242,
	SYNTH_OTHER_TID = 77,
	SYNTH_TIME_SHIFT = 31,
	SYNTH_TIME_MULT = 0x6aaaaaaa,
	SYNTH_SWITCH_TIME = 5000,    /* SWITCH_CPU_WIDE OUT on cpu 0 */
	SYNTH_CPU0_BUF0 = 37,        /* bytes of PT in queue 0, buffer 0
					(padded to 40 in the file) */
	SYNTH_CPU0_BUF1 = 24,
	SYNTH_CPU1_BUF = 16,
	/* overlap 2: PSB+ blocks of 26 bytes + TNTs */
	SYNTH_SNAP_A = 26 + 6 + 26 + 4,
	SYNTH_SNAP_REPEAT = 26 + 4,
	SYNTH_SNAP_B = SYNTH_SNAP_REPEAT + 26 + 6
};
/* time_zero and the TSC packet (0x960) put the trace at perf time 2999:
 * after ITRACE_START (1200), before the switch (5000). */
#define SYNTH_TIME_ZERO 1000ull
#define SYNTH_TSC 0x960ull
#define SYNTH_MMAP_ADDR 0x400000ull
#define SYNTH_MMAP_PATH "/usr/bin/synth-target"
#define SYNTH_COMM "synth"
#define SYNTH_CPUID "GenuineIntel,6,78,3"

struct synth_opts {
	int pipe;       /* pipe mode (attrs and features as records) */
	int unaligned;  /* pipe: an odd-sized record first, so that every
			   record after it starts at an odd offset */
	int features;   /* file mode: CPUID, NRCPUS and BUILD_ID sections */
	int nr_priv;    /* AUXTRACE_INFO priv entries (0: 17) */
	int overlap;    /* snapshot mode. 1: cpu 1's second buffer starts
			   8 bytes before the first ends by its AUX offset
			   (both a bare PSB); 2: cpu 1's buffers are two
			   snapshots whose data overlaps (put_snapshots) */
};

/* Writes the capture into @out (reset first). Returns 0, -1 on no memory.
 * The file offsets of interesting records are stored in the globals
 * below (valid after each call). */
int synth_perf_data(struct synth_buf *out, const struct synth_opts *opts);

extern uint64_t synth_auxtrace_offset; /* first AUXTRACE record */
extern uint64_t synth_mmap2_offset;

/* Appends @n bytes (aborts when out of memory: a test helper). */
void synth_buf_put(struct synth_buf *b, const void *p, size_t n);
void synth_buf_free(struct synth_buf *b);

/* Opens a private exact-size copy of @len bytes of @data (so that ASan
 * sees any read past the end); free *@copy after pts_perf_close(). */
struct pts_perf;
struct pts_perf_error;
int synth_open_copy(const uint8_t *data, size_t len, uint8_t **copy,
		    struct pts_perf **perf, struct pts_perf_error *err);

#endif
