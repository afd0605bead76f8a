/* Linearizing: walk the ToPA tables as hardware does, locate the write
 * position from the output MSRs, decide whether the buffer wrapped, and lay
 * out the region slices oldest first (SDM "Table of Physical Addresses";
 * docs/pt-sgx-facts.md section 5). */
#include "topa_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEX(v) ((unsigned long long)(v))

/* IA32_RTIT_STATUS bits 3, 31:8 and 63:49 are reserved. */
#define STATUS_RESERVED                                                        \
	(UINT64_C(0x8) | UINT64_C(0xffffff00) | (UINT64_C(0x7fff) << 49))

/* Tables entered so far, sorted by address, each with the index of its
 * first region: an END to one of them closes the ring there. */
struct visit {
	uint64_t table;
	uint32_t first_region;
};

struct walk {
	struct visit *v;
	uint32_t n, cap;
};

static int visit_find(const struct walk *w, uint64_t table, uint32_t *pos)
{
	uint32_t lo = 0, hi = w->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (w->v[mid].table < table)
			lo = mid + 1;
		else
			hi = mid;
	}
	*pos = lo;
	return lo < w->n && w->v[lo].table == table;
}

static int visit_add(struct walk *w, uint32_t pos, uint64_t table,
		     uint32_t first_region)
{
	if (pts_topa_grow((void **)&w->v, &w->cap, w->n + 1, sizeof(*w->v)) < 0)
		return -PTS_ERR_NOMEM;
	memmove(&w->v[pos + 1], &w->v[pos], (w->n - pos) * sizeof(*w->v));
	w->v[pos] = (struct visit){table, first_region};
	w->n++;
	return 0;
}

static uint64_t phys_limit_mask(const struct pts_topa *t)
{
	return (UINT64_C(1) << t->maxphyaddr) - 1;
}

static const char *size_text(uint64_t size, char *buf, size_t cap)
{
	if (size >= (1u << 20) && !(size & ((1u << 20) - 1)))
		snprintf(buf, cap, "%lluM", HEX(size >> 20));
	else if (size >= 1024 && !(size & 1023))
		snprintf(buf, cap, "%lluK", HEX(size >> 10));
	else
		snprintf(buf, cap, "%llu bytes", HEX(size));
	return buf;
}

/* Reads entry @idx of the table at @table, or fails naming it. */
static int read_entry(struct pts_topa *t, uint64_t table, uint32_t idx,
		      uint64_t *entry)
{
	uint64_t at = table + (uint64_t)idx * 8;
	const struct pts_topa_span *s = pts_topa_find(t, at, 8);
	if (!s)
		return pts_topa_fail(
			t, PTS_ERR_BAD_FORMAT,
			"table 0x%llx entry %u: no table file or memory dump "
			"holds it (0x%llx)%s",
			HEX(table), idx, HEX(at),
			idx ? "; does the table lack an END entry?" : "");
	*entry = pts_topa_load64(s->data + (at - s->phys));
	return 0;
}

/* Checks the bits every entry shares; names the entry on failure. */
static int check_entry(struct pts_topa *t, uint64_t table, uint32_t idx,
		       uint64_t e)
{
	uint64_t reserved = (e & PTS_TOPA_RESERVED_LOW) |
			    (e & ~phys_limit_mask(t) & ~UINT64_C(0xfff));
	if (reserved)
		return pts_topa_fail(t, PTS_ERR_BAD_FORMAT,
				     "table 0x%llx entry %u: reserved bits "
				     "0x%llx set (entry 0x%016llx)",
				     HEX(table), idx, HEX(reserved), HEX(e));
	if (!(e & PTS_TOPA_END))
		return 0;
	if (idx == 0)
		return pts_topa_fail(t, PTS_ERR_BAD_FORMAT,
				     "table 0x%llx entry 0: END in entry 0 "
				     "(entry 0x%016llx)",
				     HEX(table), HEX(e));
	if (e & (PTS_TOPA_INT | PTS_TOPA_STOP))
		return pts_topa_fail(t, PTS_ERR_BAD_FORMAT,
				     "table 0x%llx entry %u: INT or STOP on an "
				     "END entry (entry 0x%016llx)",
				     HEX(table), idx, HEX(e));
	return 0;
}

static int push_region(struct pts_topa *t, const struct pts_topa_region *r)
{
	if (t->nregions >= PTS_TOPA_MAX_REGIONS)
		return pts_topa_fail(t, PTS_ERR_BAD_FORMAT,
				     "more than %u output regions",
				     PTS_TOPA_MAX_REGIONS);
	if (pts_topa_grow((void **)&t->regions, &t->cap_regions,
			  t->nregions + 1, sizeof(*t->regions)) < 0)
		return pts_topa_fail(t, PTS_ERR_NOMEM, "out of memory");
	t->regions[t->nregions++] = *r;
	return 0;
}

/* No span holds all @size bytes at @base, the region @what names (as
 * "table T entry E: region B (S)"): names the span that holds part of it
 * (a region file cut short), if any. */
static int region_missing(struct pts_topa *t, const char *what, uint64_t base,
			  uint64_t size)
{
	const struct pts_topa_span *part = pts_topa_partial(t, base, size);

	if (!part)
		return pts_topa_fail(t, PTS_ERR_BAD_FORMAT,
				     "%s is missing: no region file or memory "
				     "dump holds any of it",
				     what);
	return pts_topa_fail(t, PTS_ERR_BAD_FORMAT,
			     "%s is not held whole: %s at 0x%llx has %llu "
			     "bytes",
			     what, part->name ? part->name : "memory",
			     HEX(part->phys), (unsigned long long)part->len);
}

/* Adds the output region that entry @idx of @table names. */
static int take_region(struct pts_topa *t, uint64_t table, uint32_t idx,
		       uint64_t e)
{
	char sz[32];
	uint64_t size = UINT64_C(4096)
			<< ((e & PTS_TOPA_SIZE_MASK) >> PTS_TOPA_SIZE_SHIFT);
	uint64_t base = e & phys_limit_mask(t) & ~UINT64_C(0xfff);
	if (base & (size - 1))
		return pts_topa_fail(
			t, PTS_ERR_BAD_FORMAT,
			"table 0x%llx entry %u: region base 0x%llx "
			"is not aligned to its size (%s)",
			HEX(table), idx, HEX(base),
			size_text(size, sz, sizeof(sz)));
	const struct pts_topa_span *s = pts_topa_find(t, base, size);
	if (!s) {
		char what[160];

		snprintf(what, sizeof(what),
			 "table 0x%llx entry %u: region 0x%llx (%s)",
			 HEX(table), idx, HEX(base),
			 size_text(size, sz, sizeof(sz)));
		return region_missing(t, what, base, size);
	}
	struct pts_topa_region r = {
		.phys = base,
		.size = size,
		.data = s->data + (base - s->phys),
		.table = table,
		.index = idx,
		.stop = !!(e & PTS_TOPA_STOP),
	};
	return push_region(t, &r);
}

/* Follows the tables from the start table until a STOP entry or an END back
 * to a table already entered (the ring starts at that table's first
 * region). */
static int walk_tables(struct pts_topa *t, struct walk *w)
{
	uint64_t table = t->have_start ? t->start
			 : t->ndecl    ? t->decl_tables[0]
				       : t->output_base;
	if (table & 0xfff)
		return pts_topa_fail(t, PTS_ERR_BAD_CONFIG,
				     "start table 0x%llx is not 4K aligned",
				     HEX(table));
	uint32_t pos;
	visit_find(w, table, &pos);
	if (visit_add(w, pos, table, 0) < 0)
		return pts_topa_fail(t, PTS_ERR_NOMEM, "out of memory");
	uint64_t from_table = 0; /* the END that led here, for messages */
	uint32_t from_idx = 0;
	for (uint32_t idx = 0;;) {
		uint64_t e = 0;
		int err;
		if (idx > PTS_TOPA_MAX_INDEX)
			return pts_topa_fail(t, PTS_ERR_BAD_FORMAT,
					     "table 0x%llx: no END entry in "
					     "%u entries",
					     HEX(table), idx);
		if ((err = read_entry(t, table, idx, &e)) < 0 ||
		    (err = check_entry(t, table, idx, e)) < 0) {
			size_t n = strlen(t->err);
			if (idx == 0 && from_idx)
				snprintf(t->err + n, sizeof(t->err) - n,
					 " (reached through the END in table "
					 "0x%llx entry %u)",
					 HEX(from_table), from_idx);
			return err;
		}
		if (!(e & PTS_TOPA_END)) {
			if ((err = take_region(t, table, idx, e)) < 0)
				return err;
			if (e & PTS_TOPA_STOP) {
				t->info.stop = 1;
				t->loop_start = t->nregions;
				return 0;
			}
			idx++;
			continue;
		}
		uint64_t target = e & phys_limit_mask(t) & ~UINT64_C(0xfff);
		if (visit_find(w, target, &pos)) {
			t->loop_start = w->v[pos].first_region;
			t->info.circular = 1;
			return 0;
		}
		if (visit_add(w, pos, target, t->nregions) < 0)
			return pts_topa_fail(t, PTS_ERR_NOMEM, "out of memory");
		from_table = table;
		from_idx = idx;
		table = target;
		idx = 0;
	}
}

/* Region index and offset of the write position in ToPA mode. */
static int locate_topa(struct pts_topa *t, const struct walk *w, uint32_t *k,
		       uint64_t *off)
{
	uint64_t base = t->output_base;
	uint32_t idx = (uint32_t)((t->mask_ptrs >> 7) & PTS_TOPA_MAX_INDEX);
	*off = t->mask_ptrs >> 32;
	if (base & 0xf80)
		return pts_topa_fail(t, PTS_ERR_BAD_CONFIG,
				     "IA32_RTIT_OUTPUT_BASE 0x%llx: a ToPA "
				     "table base must be 4K aligned",
				     HEX(base));
	t->info.table = base;
	t->info.entry = idx;
	for (uint32_t i = 0; i < t->nregions; i++) {
		if (t->regions[i].table == base && t->regions[i].index == idx) {
			*k = i;
			return 0;
		}
	}
	/* The pointers may rest on an END entry until the next byte comes:
	 * the region before it is full (the write position is its end, not
	 * the start of the table the END points to: when that is the ring's
	 * start, the whole ring is written, and a buffer that did not wrap
	 * holds all of it). */
	uint32_t pos;
	uint64_t e = 0;
	if (visit_find(w, base, &pos) && read_entry(t, base, idx, &e) == 0 &&
	    (e & PTS_TOPA_END) && idx > 0 && *off == 0) {
		for (uint32_t i = 0; i < t->nregions; i++) {
			if (t->regions[i].table == base &&
			    t->regions[i].index == idx - 1) {
				*k = i;
				*off = t->regions[i].size;
				return 0;
			}
		}
	}
	return pts_topa_fail(t, PTS_ERR_BAD_CONFIG,
			     "output pointers (table 0x%llx, entry %u, offset "
			     "0x%llx) name no output entry reached from the "
			     "start table",
			     HEX(base), idx, HEX(*off));
}

/* Single-range output: one circular range at BASE of MASK + 1 bytes. */
static int layout_single(struct pts_topa *t, uint32_t *k, uint64_t *off)
{
	char sz[32];
	uint64_t base = t->output_base;
	uint64_t mask = (t->mask_ptrs & 0xffffffffu) | 0x7f;
	*off = t->mask_ptrs >> 32;
	/* a table would be read as the user meant ToPA output */
	if (t->ndecl)
		return pts_topa_fail(t, PTS_ERR_BAD_CONFIG,
				     "single-range output reads no table, "
				     "yet table 0x%llx is given",
				     HEX(t->decl_tables[0]));
	if (mask & (mask + 1))
		return pts_topa_fail(t, PTS_ERR_BAD_CONFIG,
				     "IA32_RTIT_OUTPUT_MASK_PTRS 0x%016llx: "
				     "the mask 0x%llx is not a run of low ones",
				     HEX(t->mask_ptrs), HEX(mask));
	if (base & mask)
		return pts_topa_fail(t, PTS_ERR_BAD_CONFIG,
				     "IA32_RTIT_OUTPUT_BASE 0x%llx is not "
				     "aligned to the range size (%s)",
				     HEX(base),
				     size_text(mask + 1, sz, sizeof(sz)));
	if (*off > mask)
		return pts_topa_fail(t, PTS_ERR_BAD_CONFIG,
				     "OutputOffset 0x%llx is past the end of "
				     "the range (%s)",
				     HEX(*off),
				     size_text(mask + 1, sz, sizeof(sz)));
	const struct pts_topa_span *s = pts_topa_find(t, base, mask + 1);
	if (!s) {
		char what[160];

		snprintf(what, sizeof(what), "single range 0x%llx (%s)",
			 HEX(base), size_text(mask + 1, sz, sizeof(sz)));
		return region_missing(t, what, base, mask + 1);
	}
	struct pts_topa_region r = {.phys = base,
				    .size = mask + 1,
				    .data = s->data + (base - s->phys),
				    .table = base};
	t->info.table = base;
	t->info.circular = 1;
	t->loop_start = 0;
	*k = 0;
	return push_region(t, &r);
}

/* 1 when any byte after the write position in the ring is not zero: the
 * buffer was zero-filled before tracing (as perf assumes), so such a byte
 * was written in an earlier lap. Also 1 when the position is at the very
 * end of the ring: the ring is full, and only a lead-in (older than the
 * whole ring, or not) tells the two readings apart; the ring alone is
 * right either way. */
static int ring_tail_dirty(const struct pts_topa *t, uint32_t k, uint64_t off)
{
	if (k == t->nregions - 1 && off == t->regions[k].size)
		return 1;
	for (uint32_t i = k; i < t->nregions; i++) {
		const uint8_t *p = t->regions[i].data;
		uint64_t from = i == k ? off : 0;
		for (uint64_t j = from; j < t->regions[i].size; j++)
			if (p[j])
				return 1;
	}
	return 0;
}

static int decide_wrap(struct pts_topa *t, uint32_t k, uint64_t off)
{
	const struct pts_topa_region *last = &t->regions[t->nregions - 1];
	if (t->info.stop) {
		if (t->wrap == PTS_TOPA_WRAP_YES)
			return pts_topa_fail(
				t, PTS_ERR_BAD_CONFIG,
				"wrapped=yes, but the chain ends "
				"in a STOP entry (table 0x%llx entry "
				"%u), which never wraps",
				HEX(last->table), last->index);
		return 0;
	}
	if (k < t->loop_start) {
		if (t->wrap == PTS_TOPA_WRAP_YES)
			return pts_topa_fail(
				t, PTS_ERR_BAD_CONFIG,
				"wrapped=yes, but the write "
				"position is in the lead-in before "
				"the ring");
		return 0;
	}
	if (t->wrap == PTS_TOPA_WRAP_DETECT)
		t->info.wrapped = (uint8_t)ring_tail_dirty(t, k, off);
	else
		t->info.wrapped = t->wrap == PTS_TOPA_WRAP_YES;
	return 0;
}

static int add_slice(struct pts_topa *t, uint32_t i, uint64_t from, uint64_t to)
{
	if (from == to)
		return 0;
	if (pts_topa_grow((void **)&t->slices, &t->cap_slices, t->nslices + 1,
			  sizeof(*t->slices)) < 0)
		return pts_topa_fail(t, PTS_ERR_NOMEM, "out of memory");
	t->slices[t->nslices++] = (struct pts_input){t->regions[i].data + from,
						     (size_t)(to - from), 0};
	t->info.linear_size += to - from;
	return 0;
}

/* Oldest first: the ring from the write position on, then from its start
 * up to the position when wrapped (the lead-in is older than the bytes lost
 * and is left out); everything up to the position otherwise. */
static int lay_slices(struct pts_topa *t, uint32_t k, uint64_t off)
{
	int err = 0;
	uint32_t first = 0;
	if (t->info.wrapped) {
		err = add_slice(t, k, off, t->regions[k].size);
		for (uint32_t i = k + 1; i < t->nregions && !err; i++)
			err = add_slice(t, i, 0, t->regions[i].size);
		first = t->loop_start;
	}
	for (uint32_t i = first; i < k && !err; i++)
		err = add_slice(t, i, 0, t->regions[i].size);
	return err ? err : add_slice(t, k, 0, off);
}

int pts_topa_linearize(struct pts_topa *t)
{
	t->ready = 0;
	t->err[0] = '\0';
	t->nregions = t->nslices = t->next_slice = 0;
	memset(&t->info, 0, sizeof(t->info));
	t->info.mode = t->mode;
	if (!t->have_base || !t->have_mask)
		return pts_topa_fail(t, PTS_ERR_BAD_CONFIG,
				     "IA32_RTIT_OUTPUT_%s not given "
				     "(output_base, output_mask_ptrs)",
				     t->have_base ? "MASK_PTRS" : "BASE");
	if (t->output_base & 0x7f || t->output_base & ~phys_limit_mask(t))
		return pts_topa_fail(t, PTS_ERR_BAD_CONFIG,
				     "IA32_RTIT_OUTPUT_BASE 0x%llx: reserved "
				     "bits set (6:0 or above MAXPHYADDR %u)",
				     HEX(t->output_base), t->maxphyaddr);
	if (t->have_status && (t->status & STATUS_RESERVED))
		return pts_topa_fail(t, PTS_ERR_BAD_CONFIG,
				     "IA32_RTIT_STATUS 0x%llx: reserved bits "
				     "0x%llx set",
				     HEX(t->status),
				     HEX(t->status & STATUS_RESERVED));
	uint32_t k = 0;
	uint64_t off = 0;
	struct walk w = {0};
	int err;
	if (t->mode == PTS_TOPA_MODE_SINGLE) {
		err = layout_single(t, &k, &off);
	} else {
		err = walk_tables(t, &w);
		if (err == 0)
			err = locate_topa(t, &w, &k, &off);
		t->info.tables = w.n;
	}
	free(w.v);
	if (err < 0)
		return err;
	char sz[32];
	const struct pts_topa_region *cur = &t->regions[k];
	if (off > cur->size)
		return pts_topa_fail(
			t, PTS_ERR_BAD_CONFIG,
			"OutputOffset 0x%llx is past the end of "
			"region 0x%llx (table 0x%llx entry %u, %s)",
			HEX(off), HEX(cur->phys), HEX(cur->table), cur->index,
			size_text(cur->size, sz, sizeof(sz)));
	if ((err = decide_wrap(t, k, off)) < 0)
		return err;
	for (uint32_t i = 0; i < t->nregions; i++) {
		if (i < k)
			t->info.write_pos += t->regions[i].size;
		if (i >= t->loop_start)
			t->info.ring_size += t->regions[i].size;
		t->info.buffer_size += t->regions[i].size;
	}
	t->info.write_pos += off;
	t->info.regions = t->nregions;
	t->info.stopped = cur->stop && off == cur->size;
	if ((err = lay_slices(t, k, off)) < 0)
		return err;
	t->ready = 1;
	return 0;
}
