/* `ptscope windows` on the packets alone against `ptscope dump --quiet` on
 * the same bytes (issue #5 asks for at most 1.5x). A benchmark, not a test:
 * it prints figures and asserts no time.
 *
 * Four streams, written to files in $TMPDIR:
 *   random enables  the capture-like mix of bench_packets (mostly TNT-8,
 *              compressed TIPs, CYC/MTC, PAD, PSB+ every 4 KiB) whose FUP,
 *              TIP.PGE and TIP.PGD come at random: a record (window, gap
 *              or violation) every ~150 bytes;
 *   one window the same mix without them: the model's fast path;
 *   one window, no CYC  the same without CYC, as perf records by default
 *              (cyc=0): the clock has only MTCs and the TSCs of PSB+;
 *   one window, hardware timing  "one window" with timing packets as a
 *              running clock writes them (hw_timing: CYCs of one or two
 *              bytes, MTCs one period apart) where the other streams
 *              have random payloads (CYCs of 1 to 9 bytes);
 *   gappy      the worst case of a valid trace: an enclave call (FUP(ENCLU)
 *              + TIP.PGD() ... TIP.PGE(after it)) every 36 packets, so a
 *              record is printed every ~20 bytes of trace.
 * Timed, in CPU time (user + system) of child processes, best of 3:
 * `dump --quiet`, `windows` (text to /dev/null), `windows -f jsonl`, and in
 * this process the packet decoder alone and with the model (no printing).
 *
 * With images (issue #5: "at flow-decoding speed"): `windows --config` on a
 * `ptscope synth --walk` trace over libc (20M instructions) against
 * `flow --quiet --config` on the same trace.
 *
 * usage: bench_windows PTSCOPE [MIB]   (MIB: size of each stream, default 64)
 * With BENCH_WINDOWS_KEEP=1 in the environment the streams stay in $TMPDIR
 * (as bench_windows.PID.{real,quiet,nocyc,gappy,timed}.pt) for profiling.
 */
#include "stream_gen.h"

#include <ptscope/packets.h>
#include <ptscope/windows.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { RUNS = 3, CHUNK = 1 << 20, BATCH = 256 };

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* PSB+ (PSB, CBR, MODE.Exec, FUP(0x400360), PSBEND), then blocks of
 * TIP(0x400140), 32 TNT-8, FUP(0x400133), TIP.PGD(), TIP.PGE(0x400136):
 * IPs compressed to 2 bytes as a CPU would write them. */
static size_t make_gappy(uint8_t *buf, size_t cap)
{
	static const uint8_t head[] = {
		0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
		0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x03, 0x12, 0x00,
		0x99, 0x01, 0x5d, 0x60, 0x03, 0x40, 0x00, 0x02, 0x23};
	uint8_t block[64];
	size_t n = 0, len = sizeof(head);

	block[n++] = 0x2d, block[n++] = 0x40, block[n++] = 0x01;
	for (int i = 0; i < 32; i++)
		block[n++] = 0xaa;
	block[n++] = 0x3d, block[n++] = 0x33, block[n++] = 0x01;
	block[n++] = 0x01;
	block[n++] = 0x31, block[n++] = 0x36, block[n++] = 0x01;
	memcpy(buf, head, sizeof(head));
	while (len + n <= cap) {
		memcpy(buf + len, block, n);
		len += n;
	}
	return len;
}

static int write_file(const char *path, const uint8_t *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f)
		return -1;
	fwrite(buf, 1, len, f);
	return fclose(f);
}

/* CPU seconds of `PTSCOPE ARGS... FILE >/dev/null`, best of @runs; < 0
 * when it fails. */
static double run_child(const char *ptscope, const char *const *args,
			const char *file, int runs)
{
	double best = -1;

	for (int r = 0; r < runs; r++) {
		const char *argv[16];
		int n = 0, status;
		struct rusage ru;
		pid_t pid;

		argv[n++] = ptscope;
		while (*args && n < 14)
			argv[n++] = *args++;
		args -= n - 1;
		argv[n++] = file;
		argv[n] = NULL;
		pid = fork();
		if (pid < 0)
			return -1;
		if (pid == 0) {
			int fd = open("/dev/null", O_WRONLY);

			dup2(fd, 1);
			dup2(fd, 2);
			execv(ptscope, (char *const *)argv);
			_exit(127);
		}
		if (wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status) > 1)
			return -1;
		double t = (double)ru.ru_utime.tv_sec +
			   (double)ru.ru_utime.tv_usec * 1e-6 +
			   (double)ru.ru_stime.tv_sec +
			   (double)ru.ru_stime.tv_usec * 1e-6;
		if (best < 0 || t < best)
			best = t;
	}
	return best;
}

/* In process: the packet decoder alone (@model 0) or feeding a model
 * whose records are taken and dropped. Returns CPU seconds, best of RUNS. */
static double run_inproc(const uint8_t *buf, size_t len, int model,
			 unsigned long long *records)
{
	static struct pts_packet pkts[BATCH];
	double best = -1;

	for (int r = 0; r < RUNS; r++) {
		struct pts_pkt_decoder *dec = pts_pkt_decoder_new(NULL);
		struct pts_win_model *m = model ? pts_win_new(NULL) : NULL;
		struct pts_win_record rec;
		unsigned long long nrec = 0;
		double t0 = cpu_now();

		for (size_t off = 0; off < len; off += CHUNK) {
			struct pts_input in = {buf + off,
					       len - off < CHUNK ? len - off
								 : CHUNK,
					       0};
			int n;

			while ((n = pts_pkt_next_batch(dec, &in, pkts,
						       BATCH)) > 0 ||
			       n == -PTS_ERR_SKIPPED) {
				for (int i = 0; m && i < n;) {
					int k = pts_win_feed_batch(m, pkts + i,
								   n - i);
					if (k <= 0)
						break;
					i += k;
					while (pts_win_next(m, &rec) == 1)
						nrec++;
				}
			}
		}
		if (m) {
			pts_win_end(m, len);
			while (pts_win_next(m, &rec) == 1)
				nrec++;
		}
		double t = cpu_now() - t0;
		if (best < 0 || t < best)
			best = t;
		*records = nrec;
		pts_win_free(m);
		pts_pkt_decoder_free(dec);
	}
	return best;
}

static void bench(const char *ptscope, const char *name, const char *file,
		  const uint8_t *buf, size_t len)
{
	static const char *const dump[] = {"dump", "--quiet", NULL};
	static const char *const text[] = {"windows", NULL};
	static const char *const jsonl[] = {"windows", "-f", "jsonl", NULL};
	const double mb = (double)len / 1e6;
	unsigned long long recs = 0;
	double t_dump = run_child(ptscope, dump, file, RUNS);
	double t_text = run_child(ptscope, text, file, RUNS);
	double t_json = run_child(ptscope, jsonl, file, RUNS);
	double t_dec = run_inproc(buf, len, 0, &recs);
	double t_model = run_inproc(buf, len, 1, &recs);

	printf("%s: %.1f MB, %llu records\n", name, mb, recs);
	printf("  dump --quiet        %7.3f s  %8.1f MB/s\n", t_dump,
	       mb / t_dump);
	printf("  windows (text)      %7.3f s  %8.1f MB/s  %.2fx dump\n",
	       t_text, mb / t_text, t_text / t_dump);
	printf("  windows -f jsonl    %7.3f s  %8.1f MB/s  %.2fx dump\n",
	       t_json, mb / t_json, t_json / t_dump);
	printf("  in process: decode  %7.3f s, decode + model %7.3f s "
	       "(%.2fx)\n",
	       t_dec, t_model, t_model / t_dec);
}

/* `windows` with images against `flow --quiet` on a synthesized walk. */
static void bench_images(const char *ptscope, const char *tmp)
{
	static const char *const elf = "/lib/x86_64-linux-gnu/libc.so.6";
	char trace[4096], config[4096], stub[4200];
	const char *synth[] = {"synth", "--walk", elf, "--insns", "20000000",
			       "--config-out", config, "-o", NULL};
	const char *flow[] = {"flow", "--quiet", "--config", config, NULL};
	const char *win[] = {"windows", "--config", config, NULL};

	if (access(elf, R_OK) != 0) {
		printf("with images: skipped (no %s)\n", elf);
		return;
	}
	snprintf(trace, sizeof(trace), "%s/bench_windows.%d.walk.pt", tmp,
		 (int)getpid());
	snprintf(config, sizeof(config), "%s/bench_windows.%d.walk.cfg", tmp,
		 (int)getpid());
	snprintf(stub, sizeof(stub), "%s.kstub", trace);
	if (run_child(ptscope, synth, trace, 1) < 0) {
		printf("with images: ptscope synth failed\n");
	} else {
		double t_flow = run_child(ptscope, flow, trace, RUNS);
		double t_win = run_child(ptscope, win, trace, RUNS);

		printf("with images: synth --walk libc, 20M instructions\n");
		printf("  flow --quiet        %7.3f s\n", t_flow);
		printf("  windows --config    %7.3f s  %.2fx flow\n", t_win,
		       t_win / t_flow);
	}
	unlink(trace);
	unlink(config);
	unlink(stub);
}

int main(int argc, char **argv)
{
	static const char *const names[5] = {"real", "quiet", "nocyc",
					     "gappy", "timed"};
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	const char *keep = getenv("BENCH_WINDOWS_KEEP");
	size_t cap = (size_t)(argc > 2 ? atoi(argv[2]) : 64) << 20;
	char path[5][4096];
	struct pts_gen_result gen;
	uint8_t *buf;
	size_t len;

	if (argc < 2) {
		fprintf(stderr, "usage: bench_windows PTSCOPE [MIB]\n");
		return 2;
	}
	buf = malloc(cap);
	if (!buf)
		return 1;
	for (int i = 0; i < 5; i++)
		snprintf(path[i], sizeof(path[i]), "%s/bench_windows.%d.%s.pt",
			 tmp, (int)getpid(), names[i]);
	if (pts_gen_stream(buf, cap, UINT64_MAX, &pts_gen_capture_like, 1,
			   &gen) < 0 ||
	    write_file(path[0], buf, len = gen.bytes) < 0) {
		fprintf(stderr, "bench_windows: cannot make the stream\n");
		return 1;
	}
	bench(argv[1], "random enables", path[0], buf, len);
	/* The same mix without FUP, TIP.PGE, TIP.PGD: one long window, as
	 * in a trace of code that stays in the traced ring. */
	struct pts_gen_profile quiet = pts_gen_capture_like;
	quiet.weight[ppt_fup] = quiet.weight[ppt_tip_pge] = 0;
	quiet.weight[ppt_tip_pgd] = 0;
	if (pts_gen_stream(buf, cap, UINT64_MAX, &quiet, 1, &gen) == 0 &&
	    write_file(path[1], buf, len = gen.bytes) == 0)
		bench(argv[1], "one window", path[1], buf, len);
	/* The same without CYC: perf's default configuration (cyc=0), where
	 * MTCs and the TSCs of PSB+ are all the timing. */
	quiet.weight[ppt_cyc] = 0;
	if (pts_gen_stream(buf, cap, UINT64_MAX, &quiet, 1, &gen) == 0 &&
	    write_file(path[2], buf, len = gen.bytes) == 0)
		bench(argv[1], "one window, no CYC", path[2], buf, len);
	struct pts_gen_profile timed = pts_gen_capture_like;
	timed.weight[ppt_fup] = timed.weight[ppt_tip_pge] = 0;
	timed.weight[ppt_tip_pgd] = 0;
	timed.hw_timing = 1;
	if (pts_gen_stream(buf, cap, UINT64_MAX, &timed, 1, &gen) == 0 &&
	    write_file(path[4], buf, len = gen.bytes) == 0)
		bench(argv[1], "one window, hardware timing", path[4], buf,
		      len);
	len = make_gappy(buf, cap);
	if (write_file(path[3], buf, len) == 0)
		bench(argv[1], "gappy", path[3], buf, len);
	bench_images(argv[1], tmp);
	for (int i = 0; i < 5; i++) {
		if (keep && *keep == '1')
			printf("kept %s\n", path[i]);
		else
			unlink(path[i]);
	}
	free(buf);
	return 0;
}
