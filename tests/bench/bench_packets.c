/* Packet decoding throughput, ptscope against libipt 2.0.5 on the same
 * bytes in one run, and ptscope's memory as the trace grows. A benchmark,
 * not a test: it prints figures and asserts no time (it fails only when the
 * decoders disagree on the packet count, which would make the figures
 * meaningless).
 *
 * The stream is capture-like (mostly TNT-8, compressed TIPs, CYC/MTC, PAD,
 * PSB+ every 4 KiB) and written by libipt's encoder. Timed: ptscope's
 * pts_pkt_next_batch over 1 MiB chunks, its pts_pkt_count_batch (the same
 * decoding, no packets stored: `dump --quiet`; also by the ways of counting
 * that CPUs with less than AVX-512 VBMI run), its pts_pkt_next, libipt's
 * pt_pkt_next; best of a few runs each, in CPU time. Memory: peak RSS of this process
 * (which holds the whole stream), and of `ptscope dump --quiet FILE` on a
 * 16 MiB and on the full file in child processes, which must not grow with
 * the trace.
 *
 * usage: bench_packets [PTSCOPE [MIB]]
 *   PTSCOPE  the ptscope executable (memory runs skipped without it)
 *   MIB      stream size in MiB (default 256)
 */
#include "packets_internal.h" /* pts_fast_blocks_cap */
#include "stream_gen.h"

#include <ptscope/packets.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

enum { RUNS = 3, CHUNK = 1 << 20, BATCH = 1024 };

struct result {
	uint64_t packets;
	uint64_t errors;
	uint64_t checksum; /* keeps the decoded packets observable */
};

/* CPU time of this process: on a shared machine (CI, other builds) wall
 * time measures the neighbours too; decoding is single-threaded, so on an
 * idle machine the two agree. */
static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double tv_seconds(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
}

enum which { PTS_BATCH, PTS_COUNT, PTS_NEXT, LIBIPT };

/* ptscope over 1 MiB chunk views of @buf: batched, counted or packet by
 * packet. */
static struct result run_ptscope(const uint8_t *buf, size_t len,
				 enum which which)
{
	static struct pts_packet pkts[BATCH];
	uint64_t counts[PTS_PKT_KIND_COUNT] = {0};
	const int batch = which != PTS_NEXT;
	struct pts_pkt_decoder *dec = pts_pkt_decoder_new(NULL);
	struct pts_input in = {buf, 0, 0};
	struct result res = {0};
	size_t fed = 0;
	int ended = 0;

	if (!dec)
		return res;
	for (;;) {
		int n = which == PTS_COUNT
				? pts_pkt_count_batch(dec, &in, counts, CHUNK)
			: batch ? pts_pkt_next_batch(dec, &in, pkts, BATCH)
				: pts_pkt_next(dec, &in, pkts);

		if (n > 0) {
			int count = batch ? n : 1;

			res.packets += (uint64_t)count;
			for (int i = 0; which != PTS_COUNT && i < count; i++)
				res.checksum += pkts[i].kind + pkts[i].size;
			continue;
		}
		if (n == -PTS_ERR_AGAIN) {
			if (fed < len) {
				size_t size = len - fed < CHUNK ? len - fed : CHUNK;

				in.data = buf + fed;
				in.size = size;
				in.pos = 0;
				fed += size;
				continue;
			}
			if (!ended) {
				pts_pkt_end(dec);
				ended = 1;
				continue;
			}
			res.errors++;
			break;
		}
		if (n == -PTS_ERR_EOS)
			break;
		res.errors++;
		if (n == -PTS_ERR_TRUNCATED || n == -PTS_ERR_NO_PROGRESS ||
		    res.errors > 1000)
			break;
	}
	for (int k = 0; k < PTS_PKT_KIND_COUNT; k++)
		res.checksum += counts[k] * (uint64_t)k;
	pts_pkt_decoder_free(dec);
	return res;
}

static struct result run_libipt(const uint8_t *buf, size_t len)
{
	struct result res = {0};
	struct pt_config config;
	struct pt_packet_decoder *dec;
	struct pt_packet pkt;
	int status;

	pt_config_init(&config);
	config.begin = (uint8_t *)(uintptr_t)buf;
	config.end = (uint8_t *)(uintptr_t)buf + len;
	dec = pt_pkt_alloc_decoder(&config);
	if (!dec)
		return res;
	status = pt_pkt_sync_forward(dec);
	while (status >= 0) {
		status = pt_pkt_next(dec, &pkt, sizeof(pkt));
		if (status < 0)
			break;
		res.packets++;
		res.checksum += (uint64_t)pkt.type + pkt.size;
	}
	if (status != -pte_eos)
		res.errors++;
	pt_pkt_free_decoder(dec);
	return res;
}

/* Best of RUNS: the least disturbed run on a shared machine. */
static double best_mbps(const uint8_t *buf, size_t len, enum which which,
			struct result *res)
{
	double best = 0;

	for (int run = 0; run < RUNS; run++) {
		double t0 = cpu_now(), mbps;

		*res = which == LIBIPT ? run_libipt(buf, len)
				       : run_ptscope(buf, len, which);
		mbps = (double)len / 1e6 / (cpu_now() - t0);
		if (mbps > best)
			best = mbps;
	}
	return best;
}

static int write_file(const char *path, const uint8_t *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	size_t done = 0;

	if (fd < 0)
		return -1;
	while (done < len) {
		ssize_t n = write(fd, buf + done, len - done);

		if (n <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)n;
	}
	return close(fd);
}

/* Runs `PTSCOPE dump --quiet FILE`; returns its exit status (-1 when it
 * could not run) and its peak RSS (KiB) and CPU time. */
static int run_dump(const char *ptscope, const char *file, long *maxrss_kib,
		    double *seconds)
{
	struct rusage ru;
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		/* The figures that count are its usage, not its report. */
		if (null >= 0) {
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		execl(ptscope, ptscope, "dump", "--quiet", file, (char *)NULL);
		_exit(127);
	}
	/* wait4 gives this child's own usage; RUSAGE_CHILDREN would be the
	 * maximum over all children so far. */
	if (wait4(pid, &status, 0, &ru) != pid)
		return -1;
	*seconds = tv_seconds(ru.ru_utime) + tv_seconds(ru.ru_stime);
	*maxrss_kib = ru.ru_maxrss;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Writes the first 16 MiB (cut at a PSB, so between packets) and the
 * whole stream to files, frees @buf, then runs ptscope on each file. The
 * stream is freed first because a forked child starts with its parent's
 * resident pages counted in its own peak RSS. */
static void memory_runs(const char *ptscope, uint8_t *buf, size_t len)
{
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	ptrdiff_t cut = pts_psb_find(buf, len, 16u << 20);
	const size_t sizes[2] = {cut > 0 ? (size_t)cut : len, len};
	char paths[2][4096];
	int written = 0;

	for (int i = 0; i < 2; i++) {
		snprintf(paths[i], sizeof(paths[i]), "%s/bench_packets.%ld.%d.pt",
			 tmp, (long)getpid(), i);
		if (write_file(paths[i], buf, sizes[i]) < 0) {
			fprintf(stderr, "%s: %s\n", paths[i], strerror(errno));
			break;
		}
		written++;
	}
	free(buf);
	for (int i = 0; i < written; i++) {
		long rss = 0;
		double secs = 1;
		int status = run_dump(ptscope, paths[i], &rss, &secs);

		printf("ptscope dump --quiet, %7.1f MiB file: max RSS %6ld KiB, "
		       "%7.1f MB/s, exit %d\n",
		       (double)sizes[i] / (1 << 20), rss,
		       (double)sizes[i] / 1e6 / secs, status);
	}
	for (int i = 0; i < written; i++)
		unlink(paths[i]);
}

/* pts_pkt_count_batch by each way of counting below the best this CPU
 * runs (decoder_blocks.c): what CPUs without AVX-512 VBMI, or AVX2, get. */
static int count_levels(const uint8_t *buf, size_t len, uint64_t packets,
			double mb_ipt)
{
	static const char *const names[] = {
		[PTS_BLOCKS_NONE] = "the table step alone",
		[PTS_BLOCKS_AVX2] = "blocks by AVX2",
		[PTS_BLOCKS_VBMI] = "blocks by AVX-512 VBMI"};
	const int best = pts_fast_blocks_supported();
	int ok = 1;

	printf("  (counting by %s; lower ways:)\n", names[best]);
	for (int level = best - 1; level >= PTS_BLOCKS_NONE; level--) {
		struct result res;
		double mb;

		pts_fast_blocks_cap = level;
		mb = best_mbps(buf, len, PTS_COUNT, &res);
		printf("  %-22s: %8.1f MB/s  (%.2fx libipt)\n", names[level],
		       mb, mb / mb_ipt);
		if (res.packets != packets || res.errors) {
			fprintf(stderr, "%s: %" PRIu64 " packets, %" PRIu64
				" errors\n", names[level], res.packets,
				res.errors);
			ok = 0;
		}
	}
	pts_fast_blocks_cap = PTS_BLOCKS_VBMI;
	return ok;
}

int main(int argc, char **argv)
{
	const char *ptscope = argc > 1 ? argv[1] : NULL;
	size_t mib = argc > 2 ? strtoul(argv[2], NULL, 0) : 256;
	size_t cap = mib << 20;
	uint8_t *buf = malloc(cap);
	struct pts_gen_result gen;
	struct result batch, count, next, ipt;
	double t0 = cpu_now(), mb_batch, mb_count, mb_next, mb_ipt;
	struct rusage ru;
	int levels_ok;

	if (!buf || pts_gen_stream(buf, cap, UINT64_MAX, &pts_gen_capture_like,
				   0xbe7c4, &gen) < 0) {
		fprintf(stderr, "cannot build the stream\n");
		return 1;
	}
	printf("stream: %zu bytes, %" PRIu64 " packets (%s, libipt encoder, "
	       "%.1f s)\n",
	       gen.bytes, gen.packets, pts_gen_capture_like.name,
	       cpu_now() - t0);

	mb_batch = best_mbps(buf, gen.bytes, PTS_BATCH, &batch);
	mb_count = best_mbps(buf, gen.bytes, PTS_COUNT, &count);
	mb_next = best_mbps(buf, gen.bytes, PTS_NEXT, &next);
	mb_ipt = best_mbps(buf, gen.bytes, LIBIPT, &ipt);
	printf("ptscope pts_pkt_next_batch (1 MiB chunks): %8.1f MB/s  "
	       "(%.2fx libipt)\n",
	       mb_batch, mb_batch / mb_ipt);
	printf("ptscope pts_pkt_count_batch(1 MiB chunks): %8.1f MB/s  "
	       "(%.2fx libipt)\n",
	       mb_count, mb_count / mb_ipt);
	levels_ok = count_levels(buf, gen.bytes, gen.packets, mb_ipt);
	printf("ptscope pts_pkt_next       (1 MiB chunks): %8.1f MB/s  "
	       "(%.2fx libipt)\n",
	       mb_next, mb_next / mb_ipt);
	printf("libipt  pt_pkt_next        (one buffer)  : %8.1f MB/s\n",
	       mb_ipt);
	printf("(MB = 10^6 bytes per CPU second; best of %d runs each)\n", RUNS);
	getrusage(RUSAGE_SELF, &ru);
	printf("this process: max RSS %ld KiB (holds the %zu MiB stream)\n",
	       ru.ru_maxrss, mib);

	if (ptscope) {
		memory_runs(ptscope, buf, gen.bytes);
	} else {
		printf("no ptscope executable given: memory runs skipped\n");
		free(buf);
	}

	if (batch.packets != gen.packets || count.packets != gen.packets ||
	    next.packets != gen.packets || ipt.packets != gen.packets ||
	    batch.errors || count.errors || next.errors || ipt.errors ||
	    !levels_ok) {
		fprintf(stderr,
			"decoders disagree: generated %" PRIu64
			", ptscope batch %" PRIu64 " (%" PRIu64
			" errors), count %" PRIu64 " (%" PRIu64
			" errors), next %" PRIu64 " (%" PRIu64
			" errors), libipt %" PRIu64 "\n",
			gen.packets, batch.packets, batch.errors, count.packets,
			count.errors, next.packets, next.errors, ipt.packets);
		return 1;
	}
	return 0;
}
