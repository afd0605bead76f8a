/* Throughput of the flow walker against libipt's instruction decoder
 * (pt_insn_next) and block decoder (pt_blk_next), on one trace that
 * `ptscope synth --walk` makes at bench time: a seeded walk over a real
 * ELF (libc by default; return compression, PSBs every 4 KiB, SYSCALLs
 * into a kernel stub). Every decoder delivers every instruction to this
 * caller, which sums the addresses so nothing can be skipped (pt_blk hands
 * out blocks, not addresses: it gets the benefit of being summed per
 * block). ptscope runs twice: records read one by one, and
 * pts_flow_next_ips() with every address in one flat array. libipt reads
 * the code from its own file sections (the ELF's PT_LOAD segments, in a
 * section cache as ptxed does), its fastest way. Not a test: prints,
 * never asserts a time.
 *
 * Times are the thread's CPU time (the machine is shared; wall time is
 * printed too). Peak memory is the growth of VmHWM during each run, after
 * resetting it (/proc/self/clear_refs), the trace already in memory.
 *
 * usage: bench_flow PTSCOPE [INSNS [ELF [SYNTH-OPTION...]]]
 *        (default 100000000 instructions over libc, synth's default seed;
 *        e.g. --seed=2 for another walk)
 */
#include "flow_setup.h"

#include <ptscope/decoder.h>
#include <ptscope/model.h>

#include <intel-pt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_ELF "/lib/x86_64-linux-gnu/libc.so.6"

struct clocks {
	double cpu, wall;
};

static void now(struct clocks *c)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	c->cpu = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	c->wall = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A field of /proc/self/status in KiB (0 when unknown). */
static long status_kb(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = 0;
	size_t len = strlen(field);
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, field, len) == 0)
			kb = strtol(line + len, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

/* Resets the peak RSS to the current one; returns the current one. */
static long reset_peak(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");
	if (f) {
		fputs("5", f);
		fclose(f);
	}
	return status_kb("VmRSS:");
}

struct result {
	const char *name;
	uint64_t insns, sum;
	struct clocks t;
	long peak_kb;
};

struct bench {
	const uint8_t *trace;
	size_t size;
	struct pts_config cfg;
	struct pts_image *img;
};

static void start(struct result *r, struct clocks *t0, long *rss0)
{
	*rss0 = reset_peak();
	now(t0);
	(void)r;
}

static void stop(struct result *r, const struct clocks *t0, long rss0)
{
	struct clocks t1;
	now(&t1);
	r->t.cpu = t1.cpu - t0->cpu;
	r->t.wall = t1.wall - t0->wall;
	r->peak_kb = status_kb("VmHWM:") - rss0;
}

/* A walker over the whole trace of @b, which @in views. */
static struct pts_flow *new_walker(const struct bench *b, struct pts_input *in)
{
	struct pts_flow_config fc = {0};
	fc.cpu = b->cfg.trace.cpu;
	struct pts_flow *f = pts_flow_new(&fc, b->img);
	*in = (struct pts_input){b->trace, b->size, 0};
	pts_flow_end(f);
	return f;
}

static void run_ptscope(const struct bench *b, struct result *res)
{
	struct clocks t0;
	long rss0;
	static struct pts_flow_rec recs[1024];
	start(res, &t0, &rss0);
	struct pts_input in;
	struct pts_flow *f = new_walker(b, &in);
	int n;
	while ((n = pts_flow_next(f, &in, recs, 1024)) > 0) {
		for (int i = 0; i < n; i++) {
			if (recs[i].kind != PTS_FLOW_INSNS)
				continue;
			for (uint32_t k = 0; k < recs[i].n; k++)
				res->sum += recs[i].ips[k];
			res->insns += recs[i].n;
		}
	}
	pts_flow_free(f);
	stop(res, &t0, rss0);
}

/* The same with pts_flow_next_ips(): every address from one flat array,
 * no loop per record. */
static void run_ptscope_flat(const struct bench *b, struct result *res)
{
	struct clocks t0;
	long rss0;
	static struct pts_flow_rec recs[1024];
	/* Room for the records' addresses (~6.5 each) and a step more. */
	static uint64_t ips[8 * 1024 + PTS_FLOW_IPS_MIN];
	start(res, &t0, &rss0);
	struct pts_input in;
	struct pts_flow *f = new_walker(b, &in);
	size_t nips;
	while (pts_flow_next_ips(f, &in, recs, 1024, ips,
				 sizeof(ips) / sizeof(ips[0]), &nips) > 0) {
		for (size_t k = 0; k < nips; k++)
			res->sum += ips[k];
		res->insns += nips;
	}
	pts_flow_free(f);
	stop(res, &t0, rss0);
}

static void run_insn(const struct bench *b, struct result *res)
{
	struct clocks t0;
	long rss0;
	struct pt_config pc;
	start(res, &t0, &rss0);
	pts_test_libipt_config(&b->cfg.trace, b->trace, b->trace + b->size, &pc);
	struct pt_insn_decoder *d = pt_insn_alloc_decoder(&pc);
	struct pt_image_section_cache *isc = pt_iscache_alloc(NULL);
	pts_test_libipt_images(pt_insn_get_image(d), isc, &b->cfg);
	int status = pt_insn_sync_forward(d);
	while (status >= 0) {
		while (status & pts_event_pending) {
			struct pt_event ev;
			status = pt_insn_event(d, &ev, sizeof(ev));
			if (status < 0)
				break;
		}
		if (status < 0 || (status & pts_eos))
			break;
		struct pt_insn insn;
		status = pt_insn_next(d, &insn, sizeof(insn));
		if (status < 0)
			break;
		res->sum += insn.ip;
		res->insns++;
	}
	pt_insn_free_decoder(d);
	pt_iscache_free(isc);
	stop(res, &t0, rss0);
}

static void run_blk(const struct bench *b, struct result *res)
{
	struct clocks t0;
	long rss0;
	struct pt_config pc;
	start(res, &t0, &rss0);
	pts_test_libipt_config(&b->cfg.trace, b->trace, b->trace + b->size, &pc);
	struct pt_block_decoder *d = pt_blk_alloc_decoder(&pc);
	struct pt_image_section_cache *isc = pt_iscache_alloc(NULL);
	pts_test_libipt_images(pt_blk_get_image(d), isc, &b->cfg);
	int status = pt_blk_sync_forward(d);
	while (status >= 0) {
		while (status & pts_event_pending) {
			struct pt_event ev;
			status = pt_blk_event(d, &ev, sizeof(ev));
			if (status < 0)
				break;
		}
		if (status < 0 || (status & pts_eos))
			break;
		struct pt_block blk;
		status = pt_blk_next(d, &blk, sizeof(blk));
		if (status < 0)
			break;
		res->sum += blk.ip;
		res->insns += blk.ninsn;
	}
	pt_blk_free_decoder(d);
	pt_iscache_free(isc);
	stop(res, &t0, rss0);
}

static void report(const struct result *r, size_t bytes)
{
	printf("%-19s %11" PRIu64 " insns  cpu %7.3f s (wall %7.3f s) "
	       "%8.1f M insns/s %7.1f MB/s  peak +%ld KiB\n",
	       r->name, r->insns, r->t.cpu, r->t.wall,
	       (double)r->insns / r->t.cpu / 1e6,
	       (double)bytes / r->t.cpu / 1e6, r->peak_kb);
}

/* How much faster @r ran than libipt's two decoders. */
static void ratios(const struct result *r, const struct result *insn,
		   const struct result *blk)
{
	printf("%s vs pt_insn: x%.1f, vs pt_blk: x%.1f (CPU time; "
	       "wall x%.1f, x%.1f)\n", r->name, insn->t.cpu / r->t.cpu,
	       blk->t.cpu / r->t.cpu, insn->t.wall / r->t.wall,
	       blk->t.wall / r->t.wall);
}

/* Runs `PTSCOPE synth --walk ELF` into @dir; loads trace and config. */
int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_flow PTSCOPE [INSNS [ELF "
				"[SYNTH-OPTION...]]]\n");
		return 2;
	}
	const char *insns = argc > 2 ? argv[2] : "100000000";
	const char *elf = argc > 3 ? argv[3] : DEFAULT_ELF;
	if (access(elf, R_OK) != 0) {
		fprintf(stderr, "no %s: skipped\n", elf);
		return 77;
	}
	char d[4096] = "";
	struct bench b = {0};
	pts_config_init(&b.cfg);
	b.img = pts_image_new();
	struct clocks t0, t1;
	now(&t0);
	int err = pts_test_synth_walk(argv[1], elf, insns, argv + 4,
				      argc > 4 ? argc - 4 : 0, d, sizeof(d),
				      &b.cfg, b.img, &b.trace, &b.size);
	now(&t1);
	if (err < 0) {
		pts_test_remove_dir(d);
		return 1;
	}
	printf("trace: synth --walk %s --insns %s", elf, insns);
	for (int i = 4; i < argc; i++)
		printf(" %s", argv[i]);
	printf(": %zu bytes (%.1f s)\n", b.size, t1.wall - t0.wall);

	struct result ours = {"ptscope flow", 0, 0, {0, 0}, 0};
	struct result flat = {"ptscope flow (flat)", 0, 0, {0, 0}, 0};
	struct result insn = {"libipt pt_insn", 0, 0, {0, 0}, 0};
	struct result blk = {"libipt pt_blk", 0, 0, {0, 0}, 0};
	run_ptscope(&b, &ours);
	run_ptscope_flat(&b, &flat);
	run_insn(&b, &insn);
	run_blk(&b, &blk);
	report(&insn, b.size);
	report(&blk, b.size);
	report(&ours, b.size);
	report(&flat, b.size);
	ratios(&ours, &insn, &blk);
	ratios(&flat, &insn, &blk);
	int same = ours.insns == insn.insns && ours.sum == insn.sum &&
		   flat.insns == insn.insns && flat.sum == insn.sum &&
		   blk.insns == insn.insns;
	printf("instruction counts and address sums %s\n",
	       same ? "agree" : "DIFFER");
	/* libipt maps its file sections lazily: remove them only now. */
	pts_test_remove_dir(d);
	free((void *)b.trace);
	pts_image_free(b.img);
	pts_config_fini(&b.cfg);
	return same ? 0 : 1;
}
