/* A per-cpu perf.data in which two processes take turns on CPU 0, both with
 * code at the same address (0x400000) from different files: the test of
 * per-process address spaces in `ptscope perf flow` (issue #6). Writes into
 * DIR (absolute: perf looks the files up by name):
 *   a.bin   process A (pid 100, "procA"): nop; nop; syscall
 *   b.bin   process B (pid 200, "procB"): 5x nop; syscall
 *   perf.data  one per-cpu queue (cpu 0): A, then B, then A again, user-only
 *           tracing with a TSC before each stretch; cpu-wide switches at
 *           perf times between the stretches. B also maps b.bin at
 *           0x500000, and A's last stretch starts there: A has no code at
 *           that address (perf: "Failed to get instruction").
 * A decoder that mixes the two processes' maps walks one stretch with the
 * other's code and gets a different instruction count.
 *
 *   make_perf_switch DIR [interleave]
 * With "interleave", perf.data gets a second per-cpu queue (cpu 1, only
 * process B) whose stretches fall between those of cpu 0 in time: the test
 * of time-ordered output over queues. */
#include <ptscope/packets.h>
#include <ptscope/perfdata.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADDR 0x400000ull
#define ADDR_B_ONLY 0x500000ull /* only procB maps code here */
#define TIME_ZERO 1000000000ull /* perf ns = TIME_ZERO + TSC */

struct stream {
	uint8_t b[512];
	size_t n;
};

static void put(struct stream *s, const struct pts_packet *p)
{
	int n = pts_pkt_encode(p, s->b + s->n, sizeof(s->b) - s->n);
	if (n <= 0) {
		fprintf(stderr, "make_perf_switch: encode failed\n");
		exit(2);
	}
	s->n += (size_t)n;
}

static void pkt(struct stream *s, int kind)
{
	struct pts_packet p = {0};
	p.kind = (uint8_t)kind;
	put(s, &p);
}

static void tsc(struct stream *s, uint64_t v)
{
	struct pts_packet p = {0};
	p.kind = PTS_PKT_TSC;
	p.u.tsc = v;
	put(s, &p);
}

static void mode64(struct stream *s)
{
	struct pts_packet p = {0};
	p.kind = PTS_PKT_MODE_EXEC;
	p.u.exec.csl = 1;
	put(s, &p);
}

/* One stretch of a process: tracing on at @at (time @t), off at the
 * SYSCALL (user-only tracing: TIP.PGD without IP). */
static void stretch(struct stream *s, uint64_t t, uint64_t at)
{
	struct pts_packet p = {0};
	tsc(s, t);
	mode64(s);
	p.kind = PTS_PKT_TIP_PGE;
	p.ipc = PTS_IPC_SEXT_48;
	p.u.ip.payload = at;
	put(s, &p);
	p.kind = PTS_PKT_TIP_PGD;
	p.ipc = PTS_IPC_SUPPRESSED;
	p.u.ip.payload = 0;
	put(s, &p);
}

static void begin(struct stream *s, uint64_t t)
{
	s->n = 0;
	pkt(s, PTS_PKT_PSB);
	tsc(s, t);
	mode64(s);
	pkt(s, PTS_PKT_PSBEND);
}

static int write_file(const char *path, const void *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	int ok = f && fwrite(b, 1, n, f) == n;
	if (f && fclose(f) != 0)
		ok = 0;
	return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
	static const uint8_t code_a[] = {0x90, 0x90, 0x0f, 0x05};
	static const uint8_t code_b[] = {0x90, 0x90, 0x90, 0x90, 0x90,
					 0x0f, 0x05};
	if (argc < 2 || argc > 3 ||
	    (argc == 3 && strcmp(argv[2], "interleave") != 0)) {
		fprintf(stderr, "usage: make_perf_switch DIR [interleave]\n");
		return 2;
	}
	char a[4096], b[4096], data[4096];
	snprintf(a, sizeof(a), "%s/a.bin", argv[1]);
	snprintf(b, sizeof(b), "%s/b.bin", argv[1]);
	snprintf(data, sizeof(data), "%s/perf.data", argv[1]);
	struct pts_perf_write_map ma = {ADDR, sizeof(code_a), 0, a, 0};
	struct pts_perf_write_map mb[2] = {{ADDR, sizeof(code_b), 0, b, 0},
					   {ADDR_B_ONLY, sizeof(code_b), 0, b, 0}};
	/* cpu 0: A at 100 us, B at 300 us, A at 500 and 600 us (switches
	 * at 200 and 400 us): perf script prints microseconds */
	const struct pts_perf_write_switch sw[] = {
		{TIME_ZERO + 200000, 100, 100, 200, 200},
		{TIME_ZERO + 400000, 200, 200, 100, 100}};
	struct stream s, s1;
	begin(&s, 90000);
	stretch(&s, 100000, ADDR);
	stretch(&s, 300000, ADDR);
	stretch(&s, 500000, ADDR);
	stretch(&s, 600000, ADDR_B_ONLY);
	/* cpu 1 (interleave): B at 150 and 450 us */
	begin(&s1, 140000);
	stretch(&s1, 150000, ADDR);
	stretch(&s1, 450000, ADDR);
	const struct pts_perf_write_queue cpu1 = {1, 200, 200, TIME_ZERO + 140000,
						  s1.b, s1.n, 1};
	if (write_file(a, code_a, sizeof(code_a)) < 0 ||
	    write_file(b, code_b, sizeof(code_b)) < 0)
		return 2;
	struct pts_perf_write_task procb = {200, 200, "procB", mb, 2};
	struct pts_perf_write_opts o = {0};
	o.pt = s.b;
	o.pt_size = s.n;
	o.pid = o.tid = 100;
	o.cpu = 0;
	o.comm = "procA";
	o.maps = &ma;
	o.nr_maps = 1;
	o.tasks = &procb;
	o.nr_tasks = 1;
	o.switches = sw;
	o.nr_switches = 2;
	o.itrace_time = TIME_ZERO + 50000;
	o.queues = &cpu1;
	o.nr_queues = argc == 3;
	o.rtit_ctl = 0x2409; /* TraceEn, User, TSCEn, BranchEn */
	o.time_zero = TIME_ZERO;
	o.time_mult = 1;
	o.time_shift = 0;
	o.reference = 1;
	return pts_perf_write(data, &o) < 0 ? 2 : 0;
}
