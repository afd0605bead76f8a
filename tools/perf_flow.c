/* `ptscope perf flow`: the instruction flow of each AUXTRACE queue of a
 * perf.data file. The code comes from the files the MMAP/MMAP2 records name;
 * the PT bytes are decoded in place from the mapped file. Each instruction
 * gets the time perf's decoder would give it, so that `--format perf` can be
 * diffed line by line against `perf script --itrace=i0ns`. */
#include "flow_print.h"
#include "perf_cmd.h"

#include <ptscope/decoder.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char cmd[] = "perf flow";

#define MAX_RECS 512
#define STUCK_LIMIT 64
#define MAX_LOSSES 4096
#define FIELDS_MAX 256

/* ------------------------------------------------------------------------ */
/* Images: the MMAP/MMAP2 records of the queue's process.                   */

/* ELF e_type of @path: 2 executable (linked at its addresses), 3 shared
 * object or PIE, 0 not an ELF file. */
static int elf_type(const char *path)
{
	unsigned char h[18];
	FILE *f = fopen(path, "rb");
	size_t n = f ? fread(h, 1, sizeof(h), f) : 0;
	if (f)
		fclose(f);
	if (n < sizeof(h) || memcmp(h, "\177ELF", 4) != 0)
		return 0;
	return h[16] | h[17] << 8;
}

struct image_load {
	uint32_t maps, found;
	char missing[256]; /* the first file not found */
};

/* Maps one MMAP: the file's bytes at the mapped range (exactly what the
 * process saw), and, for ELF files, its symbols (for --format perf). */
static void add_map(struct perf_cmd *pc, struct pts_image *img,
		    const struct pts_perf_mmap *m, struct image_load *ld)
{
	struct pts_perf_image_opts io = {0};
	char path[4096];
	io.sysroot = pc->sysroot;
	io.remaps = pc->remaps;
	io.nr_remaps = pc->nr_remaps;
	ld->maps++;
	if (pts_perf_image_path(pc->perf, &io, m->filename.ptr, m->filename.len,
				m->build_id_size ? m->build_id : NULL,
				m->build_id_size, path, sizeof(path)) != 1) {
		if (!ld->missing[0])
			snprintf(ld->missing, sizeof(ld->missing), "%.*s",
				 (int)m->filename.len, m->filename.ptr);
		return;
	}
	ld->found++;
	int type = elf_type(path);
	/* An ELF file brings its symbols (for --format perf): an executable
	 * is linked where it runs; a shared object or PIE is taken to have
	 * its first segment at file offset 0, address 0. Other files (raw
	 * dumps), or an ELF that does not load, are mapped byte for byte. */
	if ((type == 2 || type == 3) &&
	    pts_image_add_elf(img, 0, path, type == 2 ? 0 : m->addr - m->pgoff) > 0)
		return;
	if (pts_image_add_raw(img, 0, path, m->pgoff, m->pgoff + m->len,
			      m->addr) < 0)
		pts_image_add_raw(img, 0, path, m->pgoff, 0, m->addr);
}

/* Anonymous memory, [vdso], [heap] ...: no file to read code from. */
static int is_file(const struct pts_perf_str *fn)
{
	return fn->len > 1 && fn->ptr[0] == '/' &&
	       !(fn->len >= 6 && memcmp(fn->ptr, "//anon", 6) == 0) &&
	       !(fn->len >= 5 && memcmp(fn->ptr, "/dev/", 5) == 0) &&
	       !(fn->len >= 8 && memcmp(fn->ptr, "/memfd:", 7) == 0);
}

/* Loads every MMAP of process @pid (all user maps when @pid < 0) and every
 * kernel map, in file order (a later map replaces an earlier one). */
static int load_images(struct perf_cmd *pc, struct pts_image *img, int32_t pid)
{
	struct pts_perf_cursor cur;
	struct pts_perf_record rec;
	struct image_load ld = {0};
	pts_perf_cursor_init(pc->perf, &cur);
	while (pts_perfcmd_next_mmap(pc, &cur, &rec)) {
		const struct pts_perf_mmap *m = &rec.u.mmap;
		int kernel = m->cpumode == 1;
		if ((!kernel && pid >= 0 && (int32_t)m->pid != pid) ||
		    !is_file(&m->filename))
			continue;
		add_map(pc, img, m, &ld);
	}
	if (ld.found < ld.maps && !pc->quiet)
		pts_cli_error(cmd, "%" PRIu32 " of %" PRIu32 " mapped files not "
			      "found (first: %s); try --sysroot or --remap",
			      ld.maps - ld.found, ld.maps, ld.missing);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Time: a second packet decoder walks the queue just ahead of the flow.   */
/*
 * perf stamps an instruction with the time its decoder had when it fetched
 * the packet that made it walk that instruction (a TNT, TIP, FUP, ...): all
 * timing packets (TSC, TMA, MTC) before that packet count. The flow
 * decoder tags a run of instructions with the packet it last consumed, so
 * the time of a run is the time just before the first flow packet after
 * that offset.
 */
struct clock_walk {
	struct perf_cmd *pc;
	uint32_t qi, j, nr_buffers;
	uint64_t soff; /* stream offset of buffer j */
	struct pts_pkt_decoder *dec;
	struct pts_input in;
	struct pts_perf_clock clock;
	struct pts_packet pending; /* the flow packet we stopped at */
	int have_pending, ended;
	uint64_t stamp; /* perf keeps a queue's sample time monotonic */
};

static int is_flow_packet(int kind)
{
	switch (kind) {
	case PTS_PKT_TNT8: case PTS_PKT_TNT64: case PTS_PKT_TIP:
	case PTS_PKT_TIP_PGE: case PTS_PKT_TIP_PGD: case PTS_PKT_FUP:
	case PTS_PKT_OVF: case PTS_PKT_PSB:
		return 1;
	default:
		return 0;
	}
}

/* The next buffer into @in; 0 at the end of the queue. */
static int clock_next_buffer(struct clock_walk *c)
{
	if (c->j >= c->nr_buffers)
		return 0;
	const struct pts_perf_buffer *b =
		pts_perf_queue_buffer(c->pc->perf, c->qi, c->j);
	if (c->j == 0 || !b->consecutive) {
		pts_perf_clock_buffer(&c->clock, b->reference);
		if (c->j > 0)
			pts_pkt_reset(c->dec, c->soff, 0);
	}
	c->in = (struct pts_input){b->data, (size_t)b->use_size, 0};
	c->soff += b->use_size;
	c->j++;
	return 1;
}

/* perf's TSC value for instructions the flow tagged with offset @off. */
static uint64_t clock_at(struct clock_walk *c, uint64_t off)
{
	unsigned stuck = 0;
	while (!c->ended) {
		if (c->have_pending) {
			if (c->pending.offset > off)
				break;
			c->have_pending = 0;
		}
		struct pts_packet pkt;
		int rc = pts_pkt_next(c->dec, &c->in, &pkt);
		if (rc > 0) {
			stuck = 0;
			if (is_flow_packet(pkt.kind)) {
				c->pending = pkt;
				c->have_pending = 1;
			} else {
				pts_perf_clock_packet(&c->clock, &pkt);
			}
		} else if (rc == -PTS_ERR_AGAIN) {
			/* a buffer that does not continue its predecessor
			 * ends the stream there */
			const struct pts_perf_buffer *b =
				c->j < c->nr_buffers
					? pts_perf_queue_buffer(c->pc->perf,
								c->qi, c->j)
					: NULL;
			if (!b || !b->consecutive)
				pts_pkt_end(c->dec);
			if (b && b->consecutive)
				clock_next_buffer(c);
		} else if (rc == -PTS_ERR_EOS) {
			if (!clock_next_buffer(c))
				c->ended = 1;
		} else if (++stuck > STUCK_LIMIT) {
			c->ended = 1; /* skipped bytes, bad packets: go on */
		}
	}
	if (c->clock.timestamp > c->stamp)
		c->stamp = c->clock.timestamp;
	return c->stamp;
}

/* ------------------------------------------------------------------------ */
/* One queue.                                                                */

struct queue_flow {
	struct perf_cmd *pc;
	const struct pts_perf_queue *q;
	uint32_t qi;
	struct pts_image *img;
	struct pts_flow *flow;
	struct clock_walk clock;
	int timed;
	uint64_t time; /* perf ns of the current record (timed) */
	int32_t pid, tid;
	struct pts_perf_str comm;
	uint64_t insns, errors, events;
};

/* The thread and time of record @r. */
static void locate(struct queue_flow *f, const struct pts_flow_rec *r)
{
	if (!f->timed)
		return;
	uint64_t tsc = clock_at(&f->clock, r->offset);
	f->time = pts_perf_tsc_to_time(&f->pc->tc, tsc);
	int32_t pid = -1, tid = f->q->tid;
	if (f->q->cpu >= 0 && f->clock.stamp)
		pts_perf_thread_at(f->pc->perf, f->q->cpu, f->time, &pid, &tid);
	if (tid != f->tid) {
		f->tid = tid;
		f->comm = pts_perf_comm_of(f->pc->perf, tid);
	}
}

static size_t jsonl_fields(const struct queue_flow *f, char *p, size_t cap)
{
	int n = snprintf(p, cap, "\"queue\":%" PRIu32 ",\"cpu\":%" PRId32
				 ",\"tid\":%" PRId32 ",\"comm\":\"",
			 f->q->idx, f->q->cpu, f->tid);
	size_t len = (size_t)n;
	len += pts_perfcmd_json_str(p + len, cap - len - 40, f->comm.ptr,
				    f->comm.len);
	if (f->timed)
		n = snprintf(p + len, cap - len, "\",\"time\":%" PRIu64 ",",
			     f->time);
	else
		n = snprintf(p + len, cap - len, "\",\"time\":null,");
	return len + (size_t)n;
}

/* perf script -F comm,tid,cpu,time,ip,sym: one line per instruction. */
static void print_perf(struct queue_flow *f, const struct pts_flow_rec *r)
{
	char comm[24];
	if (f->comm.len)
		snprintf(comm, sizeof(comm), "%.*s", (int)f->comm.len,
			 f->comm.ptr);
	else
		snprintf(comm, sizeof(comm), ":%" PRId32, f->tid);
	uint64_t secs = f->time / 1000000000u;
	uint64_t usecs = f->time % 1000000000u / 1000u;
	for (uint32_t i = 0; i < r->n; i++) {
		const struct pts_symbol *sym =
			pts_image_symbol_at(f->img, r->cr3, r->ips[i]);
		char *p = pts_out_reserve(&f->pc->out, 512);
		int n = snprintf(p, pts_out_room(&f->pc->out),
				 "%16s %5" PRId32 " [%03" PRId32 "] %5" PRIu64
				 ".%06" PRIu64 ":  %16" PRIx64 " %s\n",
				 comm, f->tid, f->q->cpu, secs, usecs, r->ips[i],
				 sym ? sym->name : "[unknown]");
		pts_out_commit(&f->pc->out, (size_t)n);
	}
}

static void print_batch(struct queue_flow *f, const struct pts_flow_rec *recs,
			int n)
{
	struct perf_cmd *pc = f->pc;
	char fields[FIELDS_MAX];
	struct pts_flow_printer pr = {&pc->out, f->flow,
				      pc->format == FORMAT_JSONL,
				      (uint8_t)pc->no_inst, fields, 0};
	for (int i = 0; i < n; i++) {
		const struct pts_flow_rec *r = &recs[i];
		f->insns += r->kind == PTS_FLOW_INSNS ? r->n : 0;
		f->errors += r->kind == PTS_FLOW_ERROR;
		f->events += r->kind == PTS_FLOW_EVENT;
		/* --quiet still computes the times: what perf always does */
		locate(f, r);
		if (pc->quiet || (pc->tid >= 0 && f->tid != pc->tid))
			continue;
		if (pc->format == FORMAT_PERF) {
			if (r->kind == PTS_FLOW_INSNS)
				print_perf(f, r);
			continue; /* perf's i0ns prints instructions only */
		}
		if (pr.jsonl)
			pr.fields_len = jsonl_fields(f, fields, sizeof(fields));
		if (r->kind == PTS_FLOW_INSNS)
			pts_flow_print_insns(&pr, r);
		else if (r->kind == PTS_FLOW_EVENT)
			pts_flow_print_event(&pr, r);
		else
			pts_flow_print_error(&pr, r);
	}
}

/* A note where the stream restarts: data lost or a buffer that does not
 * continue. Not in --format perf (perf prints such errors only with 'e'). */
static void print_break(struct queue_flow *f, uint64_t off, const char *why)
{
	struct perf_cmd *pc = f->pc;
	if (pc->quiet || pc->format == FORMAT_PERF)
		return;
	char *p = pts_out_reserve(&pc->out, 512);
	size_t room = pts_out_room(&pc->out);
	int n;
	if (pc->format == FORMAT_JSONL) {
		n = snprintf(p, room, "{");
		n += (int)jsonl_fields(f, p + n, room - (size_t)n);
		n += snprintf(p + n, room - (size_t)n,
			      "\"offset\":%" PRIu64 ",\"lost\":\"%s\"}\n", off,
			      why);
	} else {
		n = snprintf(p, room, "[%" PRIx64 ": %s]\n", off, why);
	}
	pts_out_commit(&pc->out, (size_t)n);
}

/* Decodes @in (NULL: the end of a segment) and prints. Returns 0 or a
 * negative error of the walker. */
static int pump(struct queue_flow *f, struct pts_input *in,
		struct pts_flow_rec *recs)
{
	struct pts_input none = {NULL, 0, 0};
	if (!in) {
		pts_flow_end(f->flow);
		in = &none;
	}
	for (;;) {
		int n = pts_flow_next(f->flow, in, recs, MAX_RECS);
		if (n > 0) {
			print_batch(f, recs, n);
			continue;
		}
		if (n == -PTS_ERR_AGAIN || n == -PTS_ERR_EOS)
			return 0;
		return n;
	}
}

/* Starts a fresh walker whose first byte is stream offset @soff. */
static int restart(struct queue_flow *f, uint64_t soff)
{
	struct pts_flow_config fc = {0};
	fc.base_offset = soff;
	pts_flow_free(f->flow);
	f->flow = pts_flow_new(&fc, f->img);
	return f->flow ? 0 : -PTS_ERR_NOMEM;
}

/* Feeds the queue's buffers, cut at the AUX losses; each cut and each
 * buffer that does not continue the one before restarts the walker. */
static int walk(struct queue_flow *f, struct pts_flow_rec *recs)
{
	static uint64_t losses[MAX_LOSSES];
	uint32_t nl = pts_perf_queue_losses(f->pc->perf, f->qi, losses,
					    MAX_LOSSES);
	uint32_t li = 0;
	uint64_t soff = 0;
	int rc = restart(f, 0);
	for (uint32_t j = 0; j < f->q->nr_buffers && rc == 0; j++) {
		const struct pts_perf_buffer *b =
			pts_perf_queue_buffer(f->pc->perf, f->qi, j);
		if (j > 0 && !b->consecutive) {
			rc = pump(f, NULL, recs);
			print_break(f, soff, "not consecutive");
			if (rc == 0)
				rc = restart(f, soff);
		}
		uint64_t pos = 0;
		while (rc == 0 && pos < b->use_size) {
			uint64_t end = b->use_size;
			while (li < nl && li < MAX_LOSSES && losses[li] <= soff + pos)
				li++;
			int cut = li < nl && li < MAX_LOSSES &&
				  losses[li] < soff + end;
			if (cut)
				end = losses[li] - soff;
			struct pts_input in = {b->data + pos, (size_t)(end - pos), 0};
			rc = pump(f, &in, recs);
			pos = end;
			if (cut && rc == 0) {
				rc = pump(f, NULL, recs);
				print_break(f, soff + pos, "aux truncated");
				if (rc == 0)
					rc = restart(f, soff + pos);
			}
		}
		soff += b->use_size;
	}
	if (rc == 0)
		rc = pump(f, NULL, recs);
	return rc;
}

static int run_queue(struct perf_cmd *pc, uint32_t qi,
		     struct pts_flow_rec *recs, struct queue_flow *f)
{
	memset(f, 0, sizeof(*f));
	f->pc = pc;
	f->qi = qi;
	f->q = pts_perf_queue_get(pc->perf, qi);
	f->tid = f->q->tid;
	f->comm = pts_perf_comm_of(pc->perf, f->tid);
	f->timed = pc->tc.valid;
	f->img = pts_image_new();
	f->clock.pc = pc;
	f->clock.qi = qi;
	f->clock.nr_buffers = f->q->nr_buffers;
	f->clock.dec = pts_pkt_decoder_new(NULL);
	int rc = -PTS_ERR_NOMEM;
	if (f->img && f->clock.dec) {
		pts_perf_clock_init(&f->clock.clock, pc->perf);
		clock_next_buffer(&f->clock);
		/* per-thread queues: that process; per-cpu: every process */
		load_images(pc, f->img, f->q->cpu < 0 ? f->q->tid : (int32_t)pc->tid);
		rc = walk(f, recs);
	}
	pts_flow_free(f->flow);
	pts_pkt_decoder_free(f->clock.dec);
	pts_image_free(f->img);
	return rc;
}

static int flow_queue(struct perf_cmd *pc, uint32_t qi, void *recs,
		      uint64_t *insns, uint64_t *errors)
{
	struct queue_flow f;
	int rc = run_queue(pc, qi, recs, &f);
	*insns += f.insns;
	*errors += f.errors;
	return rc;
}

int pts_perfcmd_flow(struct perf_cmd *pc)
{
	struct pts_flow_rec *recs = malloc(MAX_RECS * sizeof(*recs));
	if (!recs) {
		pts_cli_error(cmd, "out of memory");
		return PTS_EXIT_USAGE;
	}
	double t0 = pts_cli_now();
	struct perf_totals t;
	pts_perfcmd_each_queue(pc, cmd, flow_queue, recs, &t);
	free(recs);
	double dt = pts_cli_now() - t0;
	if (pc->quiet)
		fprintf(stderr,
			"ptscope perf flow: %" PRIu32 " queue(s), %" PRIu64
			" bytes, %" PRIu64 " instructions, %" PRIu64
			" errors, %.3f s (%.1f M insn/s)\n",
			t.queues, t.bytes, t.items, t.errors, dt,
			dt > 0 ? (double)t.items / dt / 1e6 : 0.0);
	else if (t.errors && pc->format == FORMAT_PERF)
		fprintf(stderr, "Warning:\n%" PRIu64
				" instruction trace errors\n", t.errors);
	if (t.failed)
		return PTS_EXIT_USAGE;
	return t.errors ? PTS_EXIT_ERRORS : PTS_EXIT_OK;
}
