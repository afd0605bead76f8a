/* Coverage speed (issue #7): the edge bitmap of a synthesized walk built by
 * ptscope (flow walker + coverage sink) and by libipt's block decoder
 * (pt_blk_next, one edge per block ending in a branch), in one run, on the
 * case libxdc supports: no return compression, no timing packets. ptscope
 * decodes with pts_cov_decode() (the walker hands its blocks to the sink)
 * and, for comparison, with pts_flow_next() records fed to pts_cov_feed().
 * Then the fuzzing pattern: the same trace decoded again and again through
 * one walker (pts_flow_reset() between traces: its block cache stays) and
 * one coverage sink, per-run times printed.
 *
 * Not a test: prints figures, never asserts a time. Exit status 1 only
 * when the two bitmaps differ. Times are the thread's CPU time.
 *
 * usage: bench_cov PTSCOPE [INSNS [ELF [REPEATS]]]
 *        (default 100000000, libc, 5)
 */
#include "flow_setup.h"

#include <ptscope/coverage.h>
#include <ptscope/decoder.h>
#include <ptscope/model.h>

#include <fcntl.h>
#include <intel-pt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BITMAP_SIZE (64u << 10)

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct trace {
	const uint8_t *data;
	size_t size;
	struct pts_config cfg;
	struct pts_image *img;
};

/* One decode of @t through @cov (bitmap only) with the walker *@f (made
 * on the first run, reset on the others): straight into the sink
 * (@direct), or through records. Returns CPU seconds. */
static double run_ptscope(const struct trace *t, struct pts_cov *cov,
			  struct pts_flow **fp, bool direct, uint64_t *insns)
{
	static struct pts_flow_rec recs[1024];
	double t0 = cpu_now();
	if (!*fp) {
		struct pts_flow_config fc = {0};
		fc.cpu = t->cfg.trace.cpu;
		*fp = pts_flow_new(&fc, t->img);
	} else {
		pts_flow_reset(*fp);
	}
	struct pts_flow *f = *fp;
	struct pts_input in = {t->data, t->size, 0};
	pts_flow_end(f);
	if (direct) {
		pts_cov_decode(cov, f, &in);
	} else {
		int n;
		while ((n = pts_flow_next(f, &in, recs, 1024)) > 0)
			pts_cov_feed(cov, recs, n);
	}
	pts_cov_end(cov);
	struct pts_flow_stats st;
	pts_flow_get_stats(f, &st);
	*insns = st.insns;
	return cpu_now() - t0;
}

/* The same bitmap from pt_blk: blocks end at every branch (end_on_call,
 * end_on_jump), so a block's last instruction is the only branch in it and
 * its destination is the next block's first address. */
struct blk_cov {
	uint8_t *bitmap;
	int on, pending;
	uint64_t last;
};

static void blk_edge(struct blk_cov *b, uint64_t src, uint64_t dst)
{
	uint8_t *s = &b->bitmap[pts_cov_edge_hash(src, dst) & (BITMAP_SIZE - 1)];
	*s = (uint8_t)(*s + (*s != 255));
}

static void blk_stop(struct blk_cov *b)
{
	if (b->on)
		blk_edge(b, b->last, PTS_COV_OFF);
	b->on = b->pending = 0;
}

static int blk_event(struct pt_block_decoder *d, struct blk_cov *b,
		     int status)
{
	while (status >= 0 && (status & pts_event_pending)) {
		struct pt_event ev;
		status = pt_blk_event(d, &ev, sizeof(ev));
		if (status < 0)
			break;
		if (ev.type == ptev_enabled && !b->on) {
			/* tracing starts here, even when it stops again
			 * before any instruction (a block of none) */
			blk_edge(b, PTS_COV_OFF, ev.variant.enabled.ip);
			b->on = 1;
			b->pending = 0;
			b->last = ev.variant.enabled.ip;
		} else if (ev.type == ptev_async_disabled && b->on) {
			if (b->pending)
				blk_edge(b, b->last, ev.variant.async_disabled.at);
			b->pending = 0;
			b->last = ev.variant.async_disabled.at;
			blk_stop(b);
		} else if (ev.type == ptev_disabled || ev.type == ptev_overflow) {
			blk_stop(b);
		} else if (ev.type == ptev_async_branch && b->pending) {
			blk_edge(b, b->last, ev.variant.async_branch.from);
			b->pending = 0;
		}
	}
	return status;
}

static double run_blk(const struct trace *t, uint8_t *bitmap, uint64_t *insns)
{
	struct pt_config pc;
	struct blk_cov b = {bitmap, 0, 0, 0};
	double t0 = cpu_now();
	pts_test_libipt_config(&t->cfg.trace, t->data, t->data + t->size, &pc);
	pc.flags.variant.block.end_on_call = 1;
	pc.flags.variant.block.end_on_jump = 1;
	struct pt_block_decoder *d = pt_blk_alloc_decoder(&pc);
	pt_image_set_callback(pt_blk_get_image(d), pts_test_libipt_read,
			      t->img);
	int status = pt_blk_sync_forward(d);
	while (status >= 0) {
		status = blk_event(d, &b, status);
		if (status < 0 || (status & pts_eos))
			break;
		struct pt_block blk;
		status = pt_blk_next(d, &blk, sizeof(blk));
		if (status < 0)
			break;
		if (!blk.ninsn)
			continue;
		if (!b.on)
			blk_edge(&b, PTS_COV_OFF, blk.ip);
		else if (b.pending)
			blk_edge(&b, b.last, blk.ip);
		b.on = 1;
		b.last = blk.end_ip;
		b.pending = blk.iclass != ptic_other &&
			    blk.iclass != ptic_error &&
			    blk.iclass != ptic_ptwrite && !blk.truncated;
		*insns += blk.ninsn;
	}
	blk_stop(&b);
	pt_blk_free_decoder(d);
	return cpu_now() - t0;
}

/* `PTSCOPE synth --walk ELF --no-retcomp` into a temporary directory. */
int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr,
			"usage: bench_cov PTSCOPE [INSNS [ELF [REPEATS]]]\n");
		return 2;
	}
	const char *insns = argc > 2 ? argv[2] : "100000000";
	const char *elf =
		argc > 3 ? argv[3] : "/lib/x86_64-linux-gnu/libc.so.6";
	int repeats = argc > 4 ? atoi(argv[4]) : 5;
	if (access(elf, R_OK) != 0) {
		fprintf(stderr, "no %s: skipped\n", elf);
		return 77;
	}
	struct trace t = {0};
	pts_config_init(&t.cfg);
	t.img = pts_image_new();
	char dir[4096] = "", *no_retcomp[] = {"--no-retcomp"};
	int made = pts_test_synth_walk(argv[1], elf, insns, no_retcomp, 1, dir,
				       sizeof(dir), &t.cfg, t.img, &t.data,
				       &t.size);
	/* Both decoders read the code from t.img, not from the files. */
	pts_test_remove_dir(dir);
	if (made < 0)
		return 1;
	printf("trace: synth --walk %s --insns %s --no-retcomp: %zu bytes\n",
	       elf, insns, t.size);

	struct pts_cov *cov = NULL, *rcov = NULL;
	struct pts_cov_config cc = {0};
	cc.bitmap_size = BITMAP_SIZE;
	if (pts_cov_new(&cc, t.img, &cov) < 0 ||
	    pts_cov_new(&cc, t.img, &rcov) < 0)
		return 1;
	uint64_t n_ours = 0, n_blk = 0, n_rec = 0;
	uint8_t *blk_bitmap = calloc(BITMAP_SIZE, 1);
	struct pts_flow *flow = NULL, *rflow = NULL;
	double ours = run_ptscope(&t, cov, &flow, true, &n_ours);
	double rec = run_ptscope(&t, rcov, &rflow, false, &n_rec);
	double blk = run_blk(&t, blk_bitmap, &n_blk);
	size_t size, rsize;
	const uint8_t *bm = pts_cov_bitmap(cov, &size);
	const uint8_t *rbm = pts_cov_bitmap(rcov, &rsize);
	int same = size == BITMAP_SIZE && !memcmp(bm, blk_bitmap, size) &&
		   rsize == size && !memcmp(rbm, bm, size);
	pts_flow_free(rflow);
	pts_cov_free(rcov);
	printf("libipt pt_blk   %11" PRIu64 " insns  cpu %7.3f s  %8.1f M "
	       "insns/s %7.1f MB/s\n",
	       n_blk, blk, (double)n_blk / blk / 1e6,
	       (double)t.size / blk / 1e6);
	printf("ptscope cov     %11" PRIu64 " insns  cpu %7.3f s  %8.1f M "
	       "insns/s %7.1f MB/s\n",
	       n_ours, ours, (double)n_ours / ours / 1e6,
	       (double)t.size / ours / 1e6);
	printf("  (records)     %11" PRIu64 " insns  cpu %7.3f s  %8.1f M "
	       "insns/s %7.1f MB/s  (pts_flow_next + pts_cov_feed)\n",
	       n_rec, rec, (double)n_rec / rec / 1e6,
	       (double)t.size / rec / 1e6);
	printf("ptscope cov vs pt_blk: x%.1f (target x30); bitmaps (ptscope "
	       "both ways, pt_blk) %s\n",
	       blk / ours, same ? "agree" : "DIFFER");

	/* The fuzzing pattern: the same input again through the same sink. */
	for (int i = 0; i < repeats; i++) {
		struct pts_flow_stats fst;
		pts_cov_clear(cov);
		double dt = run_ptscope(&t, cov, &flow, true, &n_ours);
		pts_flow_get_stats(flow, &fst);
		printf("repeat %d: cpu %7.3f s  %8.1f M insns/s  x%.1f pt_blk "
		       "(blocks built so far %" PRIu64 ")\n",
		       i + 1, dt, (double)n_ours / dt / 1e6, blk / dt,
		       fst.blocks_built);
	}
	pts_flow_free(flow);
	pts_cov_free(cov);
	free(blk_bitmap);
	free((void *)t.data);
	pts_image_free(t.img);
	pts_config_fini(&t.cfg);
	return same ? 0 : 1;
}
