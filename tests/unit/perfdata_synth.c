/* Synthetic perf.data files (see perfdata_synth.h). The layout follows
 * docs/perf-data-facts.md section 2; perf 6.1 reads the file-mode variant
 * (checked once with `perf report -D` while writing this). */
#include "perfdata_synth.h"

#include <ptscope/perfdata.h>

#include <stdlib.h>
#include <string.h>

uint64_t synth_auxtrace_offset;
uint64_t synth_mmap2_offset;

static int grow(struct synth_buf *b, size_t n)
{
	if (b->len + n <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + n)
		cap *= 2;
	uint8_t *p = realloc(b->data, cap);
	if (!p)
		return -1;
	b->data = p;
	b->cap = cap;
	return 0;
}

void synth_buf_put(struct synth_buf *b, const void *p, size_t n)
{
	if (grow(b, n) < 0)
		abort(); /* a test helper: no memory is fatal */
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

static void put8(struct synth_buf *b, uint8_t v) { synth_buf_put(b, &v, 1); }
static void put16(struct synth_buf *b, uint16_t v) { synth_buf_put(b, &v, 2); }
static void put32(struct synth_buf *b, uint32_t v) { synth_buf_put(b, &v, 4); }
static void put64(struct synth_buf *b, uint64_t v) { synth_buf_put(b, &v, 8); }
static void zeros(struct synth_buf *b, size_t n)
{
	while (n--)
		put8(b, 0);
}

static void set64(struct synth_buf *b, size_t at, uint64_t v)
{
	memcpy(b->data + at, &v, 8);
}

int synth_open_copy(const uint8_t *data, size_t len, uint8_t **copy,
		    struct pts_perf **perf, struct pts_perf_error *err)
{
	*copy = malloc(len ? len : 1);
	if (!*copy)
		abort();
	memcpy(*copy, data, len);
	return pts_perf_open_mem(*copy, len, perf, err);
}

void synth_buf_free(struct synth_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

/* ------------------------------------------------------------------------ */

#define SAMPLE_TYPE 0x10086ull /* TID | TIME | CPU | IDENTIFIER */
#define ATTR_SIZE 120
static const uint64_t pt_ids[2] = {101, 102};
static const uint64_t dummy_ids[2] = {201, 202};

/* perf_event_attr of @size bytes: sample_id_all, optionally
 * context_switch. */
static void put_attr(struct synth_buf *b, uint32_t type, uint64_t config,
		     int context_switch)
{
	uint64_t flags = 1ull << 18; /* sample_id_all */
	if (context_switch)
		flags |= 1ull << 26;
	put32(b, type);
	put32(b, ATTR_SIZE);
	put64(b, config);
	put64(b, 1);           /* sample_period */
	put64(b, SAMPLE_TYPE);
	put64(b, 0);           /* read_format */
	put64(b, flags);
	zeros(b, ATTR_SIZE - 48);
}

/* Record header; the caller writes exactly @size - 8 body bytes. */
static void hdr(struct synth_buf *b, uint32_t type, uint16_t misc,
		uint16_t size)
{
	put32(b, type);
	put16(b, misc);
	put16(b, size);
}

static void trailer(struct synth_buf *b, uint32_t tid, uint64_t time,
		    uint32_t cpu, uint64_t id)
{
	put32(b, tid);
	put32(b, tid);
	put64(b, time);
	put32(b, cpu);
	put32(b, 0);
	put64(b, id);
}

/* A perf header string: u32 length then the bytes, NUL-padded. */
static void put_str(struct synth_buf *b, const char *s, uint32_t len)
{
	put32(b, len);
	size_t n = strlen(s);
	synth_buf_put(b, s, n);
	zeros(b, len - n);
}

/* The PT bytes: queue 0 is one stream of 61 bytes cut into two buffers in
 * the middle of a TIP packet; queue 1 holds two separate PSBs. */
static const uint8_t psb[16] = {2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82,
				2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82};

static void put_cpu0_stream(struct synth_buf *s)
{
	synth_buf_put(s, psb, 16);
	static const uint8_t tsc[8] = {0x19, SYNTH_TSC & 0xff, SYNTH_TSC >> 8,
				       0, 0, 0, 0, 0};
	synth_buf_put(s, tsc, 8);
	put8(s, 2), put8(s, 0x23); /* PSBEND */
	static const uint8_t pge[7] = {0x71, 0x00, 0x10, 0x40, 0, 0, 0};
	synth_buf_put(s, pge, 7);
	static const uint8_t tip[7] = {0x6d, 0x20, 0x10, 0x40, 0, 0, 0};
	synth_buf_put(s, tip, 7); /* the copy-out cuts this one after 4 bytes */
	put8(s, 0x0a);  /* TNT8 */
	synth_buf_put(s, psb, 16);
	put8(s, 2), put8(s, 0x23);
	zeros(s, 2);
}

static void put_auxtrace(struct synth_buf *b, const uint8_t *data,
			 uint64_t len, uint64_t offset, uint32_t idx,
			 uint32_t cpu)
{
	uint64_t pad = (8 - len % 8) % 8;
	hdr(b, 71, 0, 48);
	put64(b, len + pad);
	put64(b, offset);
	put64(b, 0x1000 + offset); /* reference TSC */
	put32(b, idx);
	put32(b, UINT32_MAX); /* tid -1: per-cpu */
	put32(b, cpu);
	put32(b, 0);
	synth_buf_put(b, data, (size_t)len);
	zeros(b, (size_t)pad);
}

/* PSB+ with TSC @tsc, then @n TNT8 packets. */
static void put_psb_block(struct synth_buf *s, uint64_t tsc, int n)
{
	synth_buf_put(s, psb, 16);
	put8(s, 0x19);
	for (int i = 0; i < 7; i++)
		put8(s, (uint8_t)(tsc >> (8 * i)));
	put8(s, 2), put8(s, 0x23);
	for (int i = 0; i < n; i++)
		put8(s, 0x0a);
}

/* Snapshot mode: cpu 1's second buffer repeats the first from its second
 * PSB on (SYNTH_SNAP_REPEAT bytes), then has a PSB+ of its own; the AUX
 * offsets claim the two do not overlap. Sizes: SYNTH_SNAP_A, SYNTH_SNAP_B. */
static void put_snapshots(struct synth_buf *b)
{
	struct synth_buf a = {0}, n = {0};
	put_psb_block(&a, 0x1000, 6);
	put_psb_block(&a, 0x2000, 4);
	synth_buf_put(&n, a.data + (SYNTH_SNAP_A - SYNTH_SNAP_REPEAT), SYNTH_SNAP_REPEAT);
	put_psb_block(&n, 0x3000, 6);
	put_auxtrace(b, a.data, a.len, 100, 1, 1);
	put_auxtrace(b, n.data, n.len, 100 + a.len, 1, 1);
	synth_buf_free(&a);
	synth_buf_free(&n);
}

static void put_records(struct synth_buf *b, const struct synth_opts *o)
{
	/* TIME_CONV, extended (perf >= 5.10) */
	hdr(b, 79, 0, 56);
	put64(b, SYNTH_TIME_SHIFT);
	put64(b, SYNTH_TIME_MULT);
	put64(b, SYNTH_TIME_ZERO);
	put64(b, 0);
	put64(b, 0);
	put8(b, 1);
	zeros(b, 7);
	/* AUXTRACE_INFO */
	int nr = o->nr_priv ? o->nr_priv : 17;
	const uint64_t priv[17] = {SYNTH_PMU_TYPE, SYNTH_TIME_SHIFT,
				   SYNTH_TIME_MULT, SYNTH_TIME_ZERO, 1,
				   0x400, 0x800, 3, (uint64_t)o->overlap,
				   1, 0x200, 0x3c000,
				   100, 2, 2, 12, 0};
	hdr(b, 70, 0, (uint16_t)(16 + 8 * nr));
	put32(b, 1);
	put32(b, 0);
	for (int i = 0; i < nr; i++)
		put64(b, i < 17 ? priv[i] : 0);
	/* COMM exec */
	hdr(b, 3, 0x2000, 8 + 8 + 8 + 32);
	put32(b, SYNTH_TID);
	put32(b, SYNTH_TID);
	synth_buf_put(b, SYNTH_COMM "\0\0\0", 8);
	trailer(b, SYNTH_TID, 1000, 0, dummy_ids[0]);
	/* MMAP2, user */
	synth_mmap2_offset = b->len;
	hdr(b, 10, 2, 8 + 64 + 24 + 32);
	put32(b, SYNTH_TID);
	put32(b, SYNTH_TID);
	put64(b, SYNTH_MMAP_ADDR);
	put64(b, 0x1000);
	put64(b, 0);
	put32(b, 8), put32(b, 1);
	put64(b, 1234), put64(b, 0);
	put32(b, 5), put32(b, 2);
	synth_buf_put(b, SYNTH_MMAP_PATH "\0\0", 24);
	trailer(b, SYNTH_TID, 1100, 0, dummy_ids[0]);
	/* ITRACE_START on cpu 0 and 1 */
	for (uint32_t cpu = 0; cpu < 2; cpu++) {
		hdr(b, 12, 0, 8 + 8 + 32);
		put32(b, SYNTH_TID);
		put32(b, SYNTH_TID);
		trailer(b, SYNTH_TID, 1200 + cpu, cpu, pt_ids[cpu]);
	}
	/* AUX for the first buffer of cpu 0, then the buffer */
	hdr(b, 11, 0, 8 + 24 + 32);
	put64(b, 0), put64(b, SYNTH_CPU0_BUF0), put64(b, 0);
	trailer(b, SYNTH_TID, 1300, 0, pt_ids[0]);
	struct synth_buf s = {0};
	put_cpu0_stream(&s);
	synth_auxtrace_offset = b->len;
	put_auxtrace(b, s.data, SYNTH_CPU0_BUF0, 0, 0, 0);
	/* cpu 0 switches to another thread */
	hdr(b, 15, 0x2000, 8 + 8 + 32);
	put32(b, SYNTH_OTHER_TID);
	put32(b, SYNTH_OTHER_TID);
	trailer(b, SYNTH_TID, SYNTH_SWITCH_TIME, 0, dummy_ids[0]);
	hdr(b, 3, 0, 8 + 8 + 8 + 32);
	put32(b, SYNTH_OTHER_TID);
	put32(b, SYNTH_OTHER_TID);
	synth_buf_put(b, "other\0\0\0", 8);
	trailer(b, SYNTH_OTHER_TID, 5001, 0, dummy_ids[0]);
	/* second cpu-0 buffer, continuing the first; its AUX says data
	 * was lost after it */
	hdr(b, 11, 0, 8 + 24 + 32);
	put64(b, SYNTH_CPU0_BUF0), put64(b, SYNTH_CPU0_BUF1), put64(b, 1);
	trailer(b, SYNTH_OTHER_TID, 5100, 0, pt_ids[0]);
	put_auxtrace(b, s.data + SYNTH_CPU0_BUF0, SYNTH_CPU0_BUF1,
		     SYNTH_CPU0_BUF0, 0, 0);
	/* cpu 1: two buffers with a gap between them, or (overlap 2) two
	 * snapshots whose data overlaps */
	if (o->overlap == 2) {
		put_snapshots(b);
	} else {
		put_auxtrace(b, psb, SYNTH_CPU1_BUF, 100, 1, 1);
		put_auxtrace(b, psb, SYNTH_CPU1_BUF, o->overlap ? 108 : 200, 1,
			     1);
	}
	hdr(b, 68, 0, 8); /* FINISHED_ROUND */
	hdr(b, 4, 0, 8 + 24 + 32); /* EXIT */
	put32(b, SYNTH_TID), put32(b, 1), put32(b, SYNTH_TID), put32(b, 1);
	put64(b, 6000);
	trailer(b, SYNTH_TID, 6000, 1, dummy_ids[1]);
	hdr(b, 2, 0, 8 + 16 + 32); /* LOST */
	put64(b, pt_ids[0]), put64(b, 3);
	trailer(b, SYNTH_TID, 6100, 0, pt_ids[0]);
	synth_buf_free(&s);
}

static void put_build_id(struct synth_buf *b)
{
	size_t name = strlen(SYNTH_MMAP_PATH) + 1;
	size_t size = 8 + 4 + 24 + ((name + 7) & ~(size_t)7);
	hdr(b, 0, 2, (uint16_t)size);
	put32(b, (uint32_t)SYNTH_TID);
	for (int i = 0; i < 20; i++)
		put8(b, (uint8_t)(0xa0 + i));
	zeros(b, 4);
	synth_buf_put(b, SYNTH_MMAP_PATH, name - 1);
	zeros(b, size - 36 - (name - 1));
}

static int synth_pipe(struct synth_buf *b, const struct synth_opts *o)
{
	synth_buf_put(b, "PERFILE2", 8);
	put64(b, 16);
	const uint64_t *ids[2] = {pt_ids, dummy_ids};
	for (int i = 0; i < 2; i++) {
		hdr(b, 64, 0, 8 + ATTR_SIZE + 16);
		put_attr(b, i ? 1 : SYNTH_PMU_TYPE, i ? 9 : SYNTH_CONFIG, i);
		put64(b, ids[i][0]);
		put64(b, ids[i][1]);
	}
	/* CPUID as a feature record of 41 bytes: every record after it
	 * starts at an odd offset. */
	hdr(b, 80, 0, o->unaligned ? 41 : 40);
	put64(b, 9);
	put_str(b, SYNTH_CPUID, o->unaligned ? 21 : 20);
	hdr(b, 80, 0, 24);
	put64(b, 7);
	put32(b, 4), put32(b, 4);
	put_records(b, o);
	return 0;
}

static int synth_file(struct synth_buf *b, const struct synth_opts *o)
{
	/* header, ids, attrs, data, features */
	zeros(b, 104);
	size_t ids_at = b->len;
	put64(b, pt_ids[0]), put64(b, pt_ids[1]);
	put64(b, dummy_ids[0]), put64(b, dummy_ids[1]);
	size_t attrs_at = b->len;
	for (int i = 0; i < 2; i++) {
		put_attr(b, i ? 1 : SYNTH_PMU_TYPE, i ? 9 : SYNTH_CONFIG, i);
		put64(b, ids_at + 16 * (size_t)i);
		put64(b, 16);
	}
	size_t data_at = b->len;
	put_records(b, o);
	size_t data_size = b->len - data_at;
	uint64_t features = 0;
	if (o->features) {
		features = 1ull << 2 | 1ull << 7 | 1ull << 9 | 1ull << 11;
		size_t table = b->len;
		zeros(b, 4 * 16);
		size_t at[4], len[4];
		at[0] = b->len;
		put_build_id(b);
		len[0] = b->len - at[0];
		at[1] = b->len;
		put32(b, 4), put32(b, 2); /* avail 4, online 2 */
		len[1] = b->len - at[1];
		at[2] = b->len;
		put_str(b, SYNTH_CPUID, 24);
		len[2] = b->len - at[2];
		at[3] = b->len;
		put32(b, 2);
		put_str(b, "perf", 8);
		put_str(b, "record", 8);
		len[3] = b->len - at[3];
		for (int i = 0; i < 4; i++) {
			set64(b, table + 16 * (size_t)i, at[i]);
			set64(b, table + 16 * (size_t)i + 8, len[i]);
		}
	}
	memcpy(b->data, "PERFILE2", 8);
	set64(b, 8, 104);
	set64(b, 16, ATTR_SIZE + 16);
	set64(b, 24, attrs_at);
	set64(b, 32, 2 * (ATTR_SIZE + 16));
	set64(b, 40, data_at);
	set64(b, 48, data_size);
	set64(b, 72, features);
	return 0;
}

int synth_perf_data(struct synth_buf *out, const struct synth_opts *opts)
{
	out->len = 0;
	return opts->pipe ? synth_pipe(out, opts) : synth_file(out, opts);
}
