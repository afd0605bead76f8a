/* perf.data writer: the smallest file Linux perf 6.1 decodes Intel PT from
 * (docs/perf-data-facts.md section 7, recipe "C" + "H"): header, one attr,
 * AUXTRACE_INFO, COMM, MMAPs, AUX, AUXTRACE. Records are built in a small
 * stack buffer; the PT bytes go from the caller's buffer to the file. */
#include "perfdata_internal.h"

#include <errno.h>
#include <stdio.h>

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

static void trailer(struct rec *r, const struct pts_perf_write_opts *o)
{
	put32(r, o->pid);
	put32(r, o->tid);
	put64(r, 0); /* time 0: before every sample, sideband comes first */
	put32(r, (uint32_t)o->cpu);
	put32(r, 0);
	put64(r, SAMPLE_ID);
}

static int finish(struct rec *r, FILE *f)
{
	uint16_t size = (uint16_t)r->n;
	memcpy(r->b + 6, &size, 2);
	return fwrite(r->b, 1, r->n, f) == r->n ? 0 : -PTS_ERR_IO;
}

static uint64_t attr_config(uint64_t ctl)
{
	/* perf's intel_pt format maps config bits 1:1 onto RTIT_CTL; bit 0
	 * is "pt" (TraceEn); OS and User come from exclude_kernel/user. */
	return (ctl & CFG_KNOWN) | 1;
}

static int write_header_attr(FILE *f, const struct pts_perf_write_opts *o,
			     uint64_t data_size)
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
	for (int i = 0; i < 6; i++)
		put64(&r, 0); /* event_types, adds_features: none needed */
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

static int write_auxtrace_info(FILE *f, const struct pts_perf_write_opts *o)
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
	put64(&r, 0); /* have_sched_switch */
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
	return finish(&r, f);
}

static int write_sideband(FILE *f, const struct pts_perf_write_opts *o)
{
	struct rec r;
	int err = 0;
	if (o->comm) {
		begin(&r, PTS_PERF_RECORD_COMM, 0x2000 /* COMM_EXEC */);
		put32(&r, o->pid);
		put32(&r, o->tid);
		put_str(&r, o->comm, 16);
		trailer(&r, o);
		err = finish(&r, f);
	}
	for (uint32_t i = 0; i < o->nr_maps && err == 0; i++) {
		const struct pts_perf_write_map *m = &o->maps[i];
		begin(&r, PTS_PERF_RECORD_MMAP, m->kernel ? 1 : 2);
		put32(&r, m->kernel ? (uint32_t)-1 : o->pid);
		put32(&r, m->kernel ? 0 : o->tid);
		put64(&r, m->addr);
		put64(&r, m->len);
		put64(&r, m->pgoff);
		put_str(&r, m->filename, 4096);
		trailer(&r, o);
		err = finish(&r, f);
	}
	if (o->cpu >= 0 && err == 0) {
		/* tracing starts for the thread on its CPU */
		begin(&r, PTS_PERF_RECORD_ITRACE_START, 0);
		put32(&r, o->pid);
		put32(&r, o->tid);
		trailer(&r, o);
		err = finish(&r, f);
	}
	struct pts_perf_aux all = {0, o->pt_size, 0};
	const struct pts_perf_aux *aux = o->aux ? o->aux : &all;
	uint32_t nr_aux = o->aux ? o->nr_aux : 1;
	for (uint32_t i = 0; i < nr_aux && err == 0; i++) {
		begin(&r, PTS_PERF_RECORD_AUX, 0);
		put64(&r, aux[i].aux_offset);
		put64(&r, aux[i].aux_size);
		put64(&r, aux[i].flags);
		trailer(&r, o);
		err = finish(&r, f);
	}
	return err;
}

static int write_auxtrace(FILE *f, const struct pts_perf_write_opts *o)
{
	static const uint8_t zeros[8];
	size_t pad = (8 - o->pt_size % 8) % 8;
	struct rec r;
	begin(&r, PTS_PERF_RECORD_AUXTRACE, 0);
	put64(&r, o->pt_size + pad); /* perf counts its padding in size */
	put64(&r, 0);                /* offset in the AUX area */
	put64(&r, o->reference);
	put32(&r, 0);                /* idx: queue 0 */
	put32(&r, o->tid);
	put32(&r, (uint32_t)o->cpu);
	put32(&r, 0);
	if (finish(&r, f) < 0 || fwrite(o->pt, 1, o->pt_size, f) != o->pt_size ||
	    fwrite(zeros, 1, pad, f) != pad)
		return -PTS_ERR_IO;
	return 0;
}

int pts_perf_write(const char *path, const struct pts_perf_write_opts *o)
{
	if (!path || !o || (!o->pt && o->pt_size))
		return -PTS_ERR_INVALID;
	for (uint32_t i = 0; i < o->nr_maps; i++)
		if (!o->maps[i].filename)
			return -PTS_ERR_INVALID;
	FILE *f = fopen(path, "wb");
	if (!f)
		return -PTS_ERR_IO;
	/* The data size goes into the header: write the records, then come
	 * back and write the header again with it. */
	int err = write_header_attr(f, o, 0);
	long data_start = err == 0 ? ftell(f) : -1;
	if (err == 0)
		err = write_auxtrace_info(f, o);
	if (err == 0)
		err = write_sideband(f, o);
	if (err == 0)
		err = write_auxtrace(f, o);
	if (err == 0) {
		long end = ftell(f);
		if (end < 0 || data_start < 0 || fseek(f, 0, SEEK_SET) != 0)
			err = -PTS_ERR_IO;
		else
			err = write_header_attr(f, o, (uint64_t)(end - data_start));
	}
	if (fclose(f) != 0)
		err = -PTS_ERR_IO;
	return err;
}
