/* perf.data writer: the smallest file Linux perf 6.1 decodes Intel PT from
 * (docs/perf-data-facts.md section 7, recipe "C" + "H"): header, one attr,
 * AUXTRACE_INFO, COMM, MMAPs, AUX, AUXTRACE; for a CPU that runs several
 * processes also their COMMs and MMAPs and cpu-wide context switches. Records are built in a small
 * stack buffer; the PT bytes go from the caller's buffer to the file. */
#include "perfdata_internal.h"
#include "perfdata_zwrite.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define HEADER_SIZE 104
#define ATTR_SIZE 128 /* PERF_ATTR_SIZE_VER7 */
#define SAMPLE_ID 1   /* the only sample id */
#define DEFAULT_PMU 8

/* attr flag bits (perf_event_attr's bit-field word) */
#define ATTR_EXCLUDE_USER (1ull << 4)
#define ATTR_EXCLUDE_KERNEL (1ull << 5)
#define ATTR_EXCLUDE_HV (1ull << 6)
#define ATTR_SAMPLE_ID_ALL (1ull << 18)

/* The sample_id trailer: TID, TIME, CPU, IDENTIFIER (sample_type order). */
#define SAMPLE_TYPE                                                           \
	(PTS_PERF_SAMPLE_IP | PTS_PERF_SAMPLE_TID | PTS_PERF_SAMPLE_TIME |    \
	 PTS_PERF_SAMPLE_CPU | PTS_PERF_SAMPLE_IDENTIFIER)
#define TRAILER_SIZE 32

/* Bit masks perf stores in priv[] for the config bits it looks at. */
#define CFG_CYC (1ull << 1)
#define CFG_MTC (1ull << 9)
#define CFG_TSC (1ull << 10)
#define CFG_NORETCOMP (1ull << 11)
#define CFG_MTC_FREQ (0xfull << 14)
#define CTL_OS (1ull << 2)
#define CTL_USER (1ull << 3)
/* The RTIT_CTL bits perf's intel_pt format has names for (cyc, pwr_evt,
 * fup_on_ptw, mtc, tsc, noretcomp, ptw, branch, mtc_period, cyc_thresh,
 * psb_period, event, notnt); the rest (OS, User, ToPA, ADDRn_CFG) are not
 * part of attr.config. */
#define CFG_KNOWN (0x2ull | 0x30ull | 0xfe00ull | (0xfull << 14) |           \
		   (0xfull << 19) | (0xfull << 24) | (1ull << 31) | (1ull << 55))

struct rec {
	uint8_t b[4608]; /* a MMAP with a PATH_MAX file name fits */
	size_t n;
};

/* Where records go: the file, or (`compress`) a zstd stream that
 * writes COMPRESSED records. @aux_raw: AUXTRACE records and their data
 * bypass the stream, as perf record writes them. */
struct wout {
	FILE *f;
	struct pts_perf_zw *z;
	int aux_raw;
};

static void put8(struct rec *r, uint8_t v) { r->b[r->n++] = v; }
static void put16(struct rec *r, uint16_t v)
{
	memcpy(r->b + r->n, &v, 2);
	r->n += 2;
}
static void put32(struct rec *r, uint32_t v)
{
	memcpy(r->b + r->n, &v, 4);
	r->n += 4;
}
static void put64(struct rec *r, uint64_t v)
{
	memcpy(r->b + r->n, &v, 8);
	r->n += 8;
}
/* A NUL-terminated string padded with zeros to 8 bytes, cut to fit. */
static void put_str(struct rec *r, const char *s, size_t max)
{
	size_t len = strlen(s);
	if (len > max - 1)
		len = max - 1;
	memcpy(r->b + r->n, s, len);
	r->n += len;
	do
		put8(r, 0);
	while (r->n % 8);
}

static void begin(struct rec *r, uint32_t type, uint16_t misc)
{
	r->n = 0;
	put32(r, type);
	put16(r, misc);
	put16(r, 0); /* size, set by finish() */
}

static void trailer_on(struct rec *r, int32_t cpu, uint32_t pid, uint32_t tid,
		       uint64_t time)
{
	put32(r, pid);
	put32(r, tid);
	put64(r, time);
	put32(r, (uint32_t)cpu);
	put32(r, 0);
	put64(r, SAMPLE_ID);
}

static void trailer_at(struct rec *r, const struct pts_perf_write_opts *o,
		       uint32_t pid, uint32_t tid, uint64_t time)
{
	trailer_on(r, o->cpu, pid, tid, time);
}

/* Per-cpu with context switches: perf then follows the switch sideband
 * to know which thread runs (AUXTRACE_INFO have_sched_switch 3). */
static int per_cpu_switching(const struct pts_perf_write_opts *o)
{
	return o->cpu >= 0 && o->nr_switches > 0;
}

static int put_bytes(struct wout *w, const void *p, size_t n, int raw)
{
	if (w->z && !raw)
		return pts_perf_zw_write(w->z, p, n);
	return fwrite(p, 1, n, w->f) == n ? 0 : -PTS_ERR_IO;
}

/* Sets header.size and writes the record; @raw: never compressed. */
static int finish_as(struct rec *r, struct wout *w, int raw)
{
	uint16_t size = (uint16_t)r->n;
	memcpy(r->b + 6, &size, 2);
	return put_bytes(w, r->b, r->n, raw);
}

static int finish(struct rec *r, struct wout *w)
{
	return finish_as(r, w, 0);
}

static uint64_t attr_config(uint64_t ctl)
{
	/* perf's intel_pt format maps config bits 1:1 onto RTIT_CTL; bit 0
	 * is "pt" (TraceEn); OS and User come from exclude_kernel/user. */
	return (ctl & CFG_KNOWN) | 1;
}

static int write_header_attr(FILE *f, const struct pts_perf_write_opts *o,
			     uint64_t data_size, uint64_t features)
{
	struct rec r = {.n = 0};
	const uint64_t attrs_off = HEADER_SIZE, ids_off = attrs_off + ATTR_SIZE + 16;
	const uint64_t data_off = ids_off + 8;
	put64(&r, 0x32454c4946524550ull); /* "PERFILE2" */
	put64(&r, HEADER_SIZE);
	put64(&r, ATTR_SIZE + 16);
	put64(&r, attrs_off);
	put64(&r, ATTR_SIZE + 16);
	put64(&r, data_off);
	put64(&r, data_size);
	put64(&r, 0); /* event_types */
	put64(&r, 0);
	put64(&r, features); /* adds_features[0] */
	for (int i = 1; i < 4; i++)
		put64(&r, 0);
	/* The attr (PERF_ATTR_SIZE_VER7). */
	size_t a = r.n;
	put32(&r, o->pmu_type ? o->pmu_type : DEFAULT_PMU);
	put32(&r, ATTR_SIZE);
	put64(&r, attr_config(o->rtit_ctl));
	put64(&r, 1); /* sample_period */
	put64(&r, SAMPLE_TYPE);
	put64(&r, 0); /* read_format */
	uint64_t flags = ATTR_SAMPLE_ID_ALL | ATTR_EXCLUDE_HV;
	if (!(o->rtit_ctl & CTL_USER))
		flags |= ATTR_EXCLUDE_USER;
	if (!(o->rtit_ctl & CTL_OS))
		flags |= ATTR_EXCLUDE_KERNEL;
	put64(&r, flags);
	while (r.n < a + ATTR_SIZE)
		put8(&r, 0);
	put64(&r, ids_off);
	put64(&r, 8);
	put64(&r, SAMPLE_ID);
	return fwrite(r.b, 1, r.n, f) == r.n ? 0 : -PTS_ERR_IO;
}

static int write_auxtrace_info(struct wout *f, const struct pts_perf_write_opts *o)
{
	struct rec r;
	int timed = o->time_mult && (o->rtit_ctl & CFG_TSC);
	begin(&r, PTS_PERF_RECORD_AUXTRACE_INFO, 0);
	put32(&r, 1); /* PERF_AUXTRACE_INTEL_PT */
	put32(&r, 0);
	put64(&r, o->pmu_type ? o->pmu_type : DEFAULT_PMU);
	put64(&r, o->time_shift);
	put64(&r, o->time_mult);
	put64(&r, o->time_zero);
	put64(&r, timed); /* cap_user_time_zero */
	put64(&r, CFG_TSC);
	put64(&r, CFG_NORETCOMP);
	put64(&r, per_cpu_switching(o) ? 3 : 0); /* have_sched_switch */
	put64(&r, 0); /* snapshot mode */
	/* perf drops the CPU from its samples without per-cpu mmaps; with
	 * them, the queue's tid (AUXTRACE) still names the thread. */
	put64(&r, o->cpu >= 0);
	put64(&r, CFG_MTC);
	put64(&r, CFG_MTC_FREQ);
	put64(&r, o->tsc_ctc_n);
	put64(&r, o->tsc_ctc_d);
	put64(&r, CFG_CYC);
	put64(&r, o->max_nonturbo_ratio);
	put64(&r, 0); /* no address filter string */
	/* perf record writes the records it makes itself uncompressed. */
	return finish_as(&r, f, 1);
}

/* COMM and MMAPs of one process (time 0: sideband comes first). */
static int write_task(struct wout *f, const struct pts_perf_write_opts *o,
		      const struct pts_perf_write_task *t)
{
	struct rec r;
	int err = 0;
	if (t->comm) {
		begin(&r, PTS_PERF_RECORD_COMM, 0x2000 /* COMM_EXEC */);
		put32(&r, t->pid);
		put32(&r, t->tid);
		put_str(&r, t->comm, 16);
		trailer_at(&r, o, t->pid, t->tid, 0);
		err = finish(&r, f);
	}
	for (uint32_t i = 0; i < t->nr_maps && err == 0; i++) {
		const struct pts_perf_write_map *m = &t->maps[i];
		begin(&r, PTS_PERF_RECORD_MMAP, m->kernel ? 1 : 2);
		put32(&r, m->kernel ? (uint32_t)-1 : t->pid);
		put32(&r, m->kernel ? 0 : t->tid);
		put64(&r, m->addr);
		put64(&r, m->len);
		put64(&r, m->pgoff);
		put_str(&r, m->filename, 4096);
		trailer_at(&r, o, t->pid, t->tid, 0);
		err = finish(&r, f);
	}
	return err;
}

/* One SWITCH_CPU_WIDE record: OUT is written by the task leaving and
 * names the next one, IN by the task arriving and names the previous. */
static int write_switch(struct wout *f, const struct pts_perf_write_opts *o,
			const struct pts_perf_write_switch *s, int out)
{
	struct rec r;
	begin(&r, PTS_PERF_RECORD_SWITCH_CPU_WIDE,
	      out ? PERF_MISC_SWITCH_OUT : 0);
	put32(&r, out ? s->next_pid : s->prev_pid);
	put32(&r, out ? s->next_tid : s->prev_tid);
	trailer_at(&r, o, out ? s->prev_pid : s->next_pid,
		   out ? s->prev_tid : s->next_tid, s->time);
	return finish(&r, f);
}

/* Tracing starts for a thread on its CPU. */
static int write_itrace_start(struct wout *f, int32_t cpu, uint32_t pid,
			      uint32_t tid, uint64_t time)
{
	struct rec r;
	begin(&r, PTS_PERF_RECORD_ITRACE_START, 0);
	put32(&r, pid);
	put32(&r, tid);
	trailer_on(&r, cpu, pid, tid, time);
	return finish(&r, f);
}

static int write_aux(struct wout *f, int32_t cpu, uint32_t pid, uint32_t tid,
		     uint64_t offset, uint64_t size, uint64_t flags)
{
	struct rec r;
	begin(&r, PTS_PERF_RECORD_AUX, 0);
	put64(&r, offset);
	put64(&r, size);
	put64(&r, flags);
	trailer_on(&r, cpu, pid, tid, 0);
	return finish(&r, f);
}

static int write_sideband(struct wout *f, const struct pts_perf_write_opts *o)
{
	struct pts_perf_write_task self = {o->pid, o->tid, o->comm, o->maps,
					   o->nr_maps};
	int err = write_task(f, o, &self);
	for (uint32_t i = 0; i < o->nr_tasks && err == 0; i++)
		err = write_task(f, o, &o->tasks[i]);
	if (o->cpu >= 0 && err == 0)
		err = write_itrace_start(f, o->cpu, o->pid, o->tid,
					 o->itrace_time);
	for (uint32_t i = 0; per_cpu_switching(o) && i < o->nr_queues; i++) {
		const struct pts_perf_write_queue *q = &o->queues[i];
		if (err == 0)
			err = write_itrace_start(f, q->cpu, q->pid, q->tid,
						 q->itrace_time);
		if (err == 0)
			err = write_aux(f, q->cpu, q->pid, q->tid, 0,
					q->pt_size, 0);
	}
	for (uint32_t i = 0; per_cpu_switching(o) && i < o->nr_switches; i++) {
		if (err == 0)
			err = write_switch(f, o, &o->switches[i], 1);
		if (err == 0)
			err = write_switch(f, o, &o->switches[i], 0);
	}
	struct pts_perf_aux all = {0, o->pt_size, 0};
	const struct pts_perf_aux *aux = o->aux ? o->aux : &all;
	uint32_t nr_aux = o->aux ? o->nr_aux : 1;
	for (uint32_t i = 0; i < nr_aux && err == 0; i++)
		err = write_aux(f, o->cpu, o->pid, o->tid, aux[i].aux_offset,
				aux[i].aux_size, aux[i].flags);
	return err;
}

/* One AUXTRACE record with its bytes: queue @idx, thread @tid (-1: per
 * cpu), CPU @cpu. */
static int write_buffer(struct wout *f, uint32_t idx, uint32_t tid, int32_t cpu,
			const void *pt, size_t size, uint64_t reference)
{
	static const uint8_t zeros[8];
	size_t pad = (8 - size % 8) % 8;
	struct rec r;
	begin(&r, PTS_PERF_RECORD_AUXTRACE, 0);
	put64(&r, size + pad); /* perf counts its padding in size */
	put64(&r, 0);          /* offset in the AUX area */
	put64(&r, reference);
	put32(&r, idx);
	put32(&r, tid);
	put32(&r, (uint32_t)cpu);
	put32(&r, 0);
	/* perf record -z compresses the ring buffers' sideband, not the
	 * AUX area: what was compressed so far goes out first. */
	if (f->z && f->aux_raw && pts_perf_zw_flush(f->z) < 0)
		return -PTS_ERR_IO;
	if (finish_as(&r, f, f->aux_raw) < 0 ||
	    put_bytes(f, pt, size, f->aux_raw) < 0 ||
	    put_bytes(f, zeros, pad, f->aux_raw) < 0)
		return -PTS_ERR_IO;
	return 0;
}

static int write_auxtrace(struct wout *f, const struct pts_perf_write_opts *o)
{
	int err = write_buffer(f, 0,
			       per_cpu_switching(o) ? (uint32_t)-1 : o->tid,
			       o->cpu, o->pt, o->pt_size, o->reference);
	for (uint32_t i = 0; per_cpu_switching(o) && i < o->nr_queues; i++) {
		const struct pts_perf_write_queue *q = &o->queues[i];
		if (err == 0)
			err = write_buffer(f, i + 1, (uint32_t)-1, q->cpu, q->pt,
					   q->pt_size, q->reference);
	}
	return err;
}

/* HEADER_COMPRESSED (feature 27), the only feature written: the table
 * entry after the data, then u32 version, type (1 zstd), level, ratio,
 * mmap_len. */
static int write_comp_feature(FILE *f, long data_end, int level,
			      const struct pts_perf_zw *z)
{
	struct rec r = {.n = 0};
	put64(&r, (uint64_t)data_end + 16);
	put64(&r, 20);
	put32(&r, 1);
	put32(&r, 1);
	put32(&r, (uint32_t)level);
	put32(&r, pts_perf_zw_ratio(z));
	put32(&r, PTS_PERF_ZW_MMAP_LEN);
	return fwrite(r.b, 1, r.n, f) == r.n ? 0 : -PTS_ERR_IO;
}

static int check_opts(const struct pts_perf_write_opts *o)
{
	for (uint32_t i = 0; i < o->nr_maps; i++)
		if (!o->maps[i].filename)
			return -PTS_ERR_INVALID;
	for (uint32_t t = 0; t < o->nr_tasks; t++)
		for (uint32_t i = 0; i < o->tasks[t].nr_maps; i++)
			if (!o->tasks[t].maps[i].filename)
				return -PTS_ERR_INVALID;
	if ((o->nr_tasks && !o->tasks) || (o->nr_switches && !o->switches) ||
	    (o->nr_queues && !o->queues) || o->compress > 2)
		return -PTS_ERR_INVALID;
	for (uint32_t i = 0; i < o->nr_queues; i++)
		if (!o->queues[i].pt && o->queues[i].pt_size)
			return -PTS_ERR_INVALID;
	return 0;
}

static int write_records(struct wout *w, const struct pts_perf_write_opts *o)
{
	int err = write_auxtrace_info(w, o);
	if (err == 0)
		err = write_sideband(w, o);
	if (err == 0)
		err = write_auxtrace(w, o);
	if (err == 0 && w->z)
		err = pts_perf_zw_flush(w->z);
	return err;
}

int pts_perf_write(const char *path, const struct pts_perf_write_opts *o)
{
	if (!path || !o || (!o->pt && o->pt_size))
		return -PTS_ERR_INVALID;
	int err = check_opts(o);
	if (err < 0)
		return err;
	int level = o->compress_level ? o->compress_level : 1;
	uint64_t features = o->compress ? 1ull << PTS_PERF_FEAT_COMPRESSED : 0;
	FILE *f = fopen(path, "wb");
	if (!f)
		return -PTS_ERR_IO;
	struct wout w = {f, NULL, o->compress == 1};
	if (o->compress && !(w.z = pts_perf_zw_open(f, level))) {
		fclose(f);
		remove(path);
#ifdef PTS_HAVE_ZSTD
		return -PTS_ERR_NOMEM;
#else
		return -PTS_ERR_UNSUPPORTED;
#endif
	}
	/* The data size goes into the header: write the records, then come
	 * back and write the header again with it. */
	err = write_header_attr(f, o, 0, features);
	long data_start = err == 0 ? ftell(f) : -1;
	if (err == 0)
		err = write_records(&w, o);
	if (err == 0) {
		long end = ftell(f);
		if (end < 0 || data_start < 0)
			err = -PTS_ERR_IO;
		if (err == 0 && w.z)
			err = write_comp_feature(f, end, level, w.z);
		if (err == 0 && fseek(f, 0, SEEK_SET) != 0)
			err = -PTS_ERR_IO;
		if (err == 0)
			err = write_header_attr(f, o, (uint64_t)(end - data_start),
						features);
	}
	pts_perf_zw_close(w.z);
	if (fclose(f) != 0)
		err = -PTS_ERR_IO;
	return err;
}
