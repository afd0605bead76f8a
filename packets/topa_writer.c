/* The ToPA writer: the linearizer's inverse. It builds tables and regions
 * from a layout spec (format in ptscope/topa.h), stores a byte stream as the
 * hardware would (region after region, END chains, wrap-around, STOP) and
 * gives the MSR values the hardware would leave. Used by `ptscope synth
 * --topa` and by the round-trip tests. */
#include "topa_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where the writer places things; arbitrary but realistic addresses. */
#define TABLES_PHYS UINT64_C(0x10000)
#define REGIONS_PHYS (UINT64_C(1) << 32)
/* Keeps a mistyped spec from allocating all memory. */
#define MAX_CAPACITY (UINT64_C(1) << 30)
#define MAX_ENTRIES 65536u

struct wtable {
	uint64_t phys;
	uint32_t first; /* its regions are [first, first + n) */
	uint32_t n;
	uint8_t *bytes; /* n output entries + the END entry */
};

struct wregion {
	uint64_t phys;
	uint64_t size;
	uint8_t *data;
	uint32_t table;
	uint8_t flags; /* PTS_TOPA_INT, PTS_TOPA_STOP */
};

struct pts_topa_writer {
	uint8_t single;
	uint8_t lazy;
	uint8_t stopped;
	struct wtable *tables;
	uint32_t ntables, cap_tables;
	struct wregion *regions;
	uint32_t nregions, cap_regions;
	uint32_t loop; /* the table the last END points to */
	uint32_t cur;  /* region being written */
	uint64_t off;  /* next write offset in it */
	uint64_t written;
	uint64_t capacity;
	char *spec;
};

void pts_topa_writer_free(struct pts_topa_writer *w)
{
	if (!w)
		return;
	for (uint32_t i = 0; i < w->ntables; i++)
		free(w->tables[i].bytes);
	for (uint32_t i = 0; i < w->nregions; i++)
		free(w->regions[i].data);
	free(w->tables);
	free(w->regions);
	free(w->spec);
	free(w);
}

static int add_region(struct pts_topa_writer *w, uint64_t size, uint8_t flags,
		      uint64_t *next_phys)
{
	if (w->nregions >= MAX_ENTRIES || size > MAX_CAPACITY - w->capacity)
		return -PTS_ERR_BAD_CONFIG;
	if (pts_topa_grow((void **)&w->regions, &w->cap_regions,
			  w->nregions + 1, sizeof(*w->regions)) < 0)
		return -PTS_ERR_NOMEM;
	uint64_t phys = (*next_phys + size - 1) & ~(size - 1);
	uint8_t *data = calloc(1, (size_t)size);
	if (!data)
		return -PTS_ERR_NOMEM;
	w->regions[w->nregions++] = (struct wregion){
		phys, size, data, w->ntables ? w->ntables - 1 : 0, flags};
	*next_phys = phys + size;
	w->capacity += size;
	return 0;
}

/* SIZE[:int][:stop] in [s, e). */
static int parse_entry(struct pts_topa_writer *w, const char *s, const char *e,
		       uint64_t *next_phys)
{
	const char *colon = memchr(s, ':', (size_t)(e - s));
	const char *se = colon ? colon : e;
	uint64_t size;
	uint8_t flags = 0;
	if (pts_topa_parse_bytes(s, se, &size) < 0 || size < 4096 ||
	    size > (UINT64_C(4096) << 15))
		return -PTS_ERR_BAD_CONFIG;
	while (colon) {
		s = colon + 1;
		colon = memchr(s, ':', (size_t)(e - s));
		se = colon ? colon : e;
		if (se - s == 3 && memcmp(s, "int", 3) == 0)
			flags |= PTS_TOPA_INT;
		else if (se - s == 4 && memcmp(s, "stop", 4) == 0)
			flags |= PTS_TOPA_STOP;
		else
			return -PTS_ERR_BAD_CONFIG;
	}
	return add_region(w, size, flags, next_phys);
}

/* TABLE ('/' TABLE)* ['@' N] */
static int parse_tables(struct pts_topa_writer *w, const char *spec)
{
	const char *end = spec + strlen(spec);
	const char *at = strchr(spec, '@');
	uint64_t loop = 0, next_phys = REGIONS_PHYS;
	if (at && pts_parse_u64(at + 1, end, &loop) < 0)
		return -PTS_ERR_BAD_CONFIG;
	if (at)
		end = at;
	for (const char *p = spec; p <= end;) {
		const char *slash = memchr(p, '/', (size_t)(end - p));
		const char *te = slash ? slash : end;
		if (pts_topa_grow((void **)&w->tables, &w->cap_tables,
				  w->ntables + 1, sizeof(*w->tables)) < 0)
			return -PTS_ERR_NOMEM;
		struct wtable *tb = &w->tables[w->ntables++];
		*tb = (struct wtable){.first = w->nregions};
		for (const char *q = p; q <= te;) {
			const char *comma = memchr(q, ',', (size_t)(te - q));
			const char *ee = comma ? comma : te;
			int err = parse_entry(w, q, ee, &next_phys);
			if (err < 0)
				return err;
			q = ee + 1;
		}
		tb->n = w->nregions - tb->first;
		p = te + 1;
	}
	if (loop >= w->ntables)
		return -PTS_ERR_BAD_CONFIG;
	w->loop = (uint32_t)loop;
	return 0;
}

/* Places the tables and writes their entries: each ends in an END to the
 * next table, the last one to the loop table. */
static int build_tables(struct pts_topa_writer *w)
{
	uint64_t phys = TABLES_PHYS;
	for (uint32_t i = 0; i < w->ntables; i++) {
		struct wtable *tb = &w->tables[i];
		size_t bytes = ((size_t)tb->n + 1) * 8;
		tb->phys = phys;
		phys += (bytes + 0xfff) & ~(size_t)0xfff;
		if (!(tb->bytes = malloc(bytes)))
			return -PTS_ERR_NOMEM;
	}
	for (uint32_t i = 0; i < w->ntables; i++) {
		struct wtable *tb = &w->tables[i];
		for (uint32_t j = 0; j < tb->n; j++) {
			const struct wregion *r = &w->regions[tb->first + j];
			unsigned code = 0;
			while ((UINT64_C(4096) << code) < r->size)
				code++;
			pts_topa_store64(
				tb->bytes + (size_t)j * 8,
				pts_topa_entry_region(r->phys, code, r->flags));
		}
		uint32_t next = i + 1 < w->ntables ? i + 1 : w->loop;
		pts_topa_store64(tb->bytes + (size_t)tb->n * 8,
				 pts_topa_entry_end(w->tables[next].phys));
	}
	return 0;
}

int pts_topa_writer_new(const char *spec, struct pts_topa_writer **out)
{
	*out = NULL;
	struct pts_topa_writer *w = calloc(1, sizeof(*w));
	if (!w || !(w->spec = strdup(spec))) {
		free(w);
		return -PTS_ERR_NOMEM;
	}
	int err;
	if (strncmp(spec, "single:", 7) == 0) {
		uint64_t size, next = REGIONS_PHYS;
		w->single = 1;
		const char *s = spec + 7;
		err = pts_topa_parse_bytes(s, s + strlen(s), &size) < 0 ||
				      size < 128 || size > MAX_CAPACITY
			      ? -PTS_ERR_BAD_CONFIG
			      : add_region(w, size, 0, &next);
	} else {
		err = parse_tables(w, spec);
		for (uint32_t i = 0; err == 0 && i < w->ntables; i++)
			if (w->tables[i].n == 0)
				err = -PTS_ERR_BAD_CONFIG; /* END in entry 0 */
		if (err == 0)
			err = build_tables(w);
	}
	if (err < 0) {
		pts_topa_writer_free(w);
		return err;
	}
	*out = w;
	return 0;
}

void pts_topa_writer_set_lazy(struct pts_topa_writer *w, int lazy)
{
	w->lazy = !!lazy;
}

/* Steps to the region after the current one, following the END chain. */
static void advance(struct pts_topa_writer *w)
{
	w->off = 0;
	if (w->single)
		return;
	if (++w->cur == w->nregions)
		w->cur = w->tables[w->loop].first;
}

size_t pts_topa_writer_write(struct pts_topa_writer *w, const uint8_t *data,
			     size_t len)
{
	size_t done = 0;
	while (done < len && !w->stopped) {
		const struct wregion *r = &w->regions[w->cur];
		if (w->off == r->size) { /* a lazy stop at the end */
			advance(w);
			continue;
		}
		uint64_t room = r->size - w->off;
		size_t n = len - done < room ? len - done : (size_t)room;
		memcpy(r->data + w->off, data + done, n);
		w->off += n;
		done += n;
		if (w->off < r->size)
			break;
		if (r->flags & PTS_TOPA_STOP)
			w->stopped = 1; /* the pointers stay one past the end */
		else if (!w->lazy || w->single || done < len)
			advance(w);
	}
	w->written += done;
	return done;
}

void pts_topa_writer_msrs(const struct pts_topa_writer *w,
			  uint64_t *output_base, uint64_t *output_mask_ptrs,
			  uint64_t *status)
{
	const struct wregion *r = &w->regions[w->cur];
	*status = w->stopped ? PTS_RTIT_STATUS_STOPPED : 0;
	if (w->single) {
		*output_base = r->phys;
		*output_mask_ptrs = (r->size - 1) | (w->off << 32);
		return;
	}
	const struct wtable *tb = &w->tables[r->table];
	*output_base = tb->phys;
	*output_mask_ptrs =
		0x7f | ((uint64_t)(w->cur - tb->first) << 7) | (w->off << 32);
}

uint64_t pts_topa_writer_written(const struct pts_topa_writer *w)
{
	return w->written;
}

uint64_t pts_topa_writer_capacity(const struct pts_topa_writer *w)
{
	return w->capacity;
}

int pts_topa_writer_export(const struct pts_topa_writer *w, struct pts_topa *t)
{
	uint64_t base, mask, status;
	int err = 0;
	char name[32];
	for (uint32_t i = 0; i < w->ntables && err == 0; i++) {
		const struct wtable *tb = &w->tables[i];
		snprintf(name, sizeof(name), "t%u", i);
		err = pts_topa_add_memory(t, tb->phys, tb->bytes,
					  ((uint64_t)tb->n + 1) * 8, name);
		if (err == 0)
			err = pts_topa_add_table(t, tb->phys);
	}
	for (uint32_t i = 0; i < w->nregions && err == 0; i++) {
		snprintf(name, sizeof(name), "r%u", i);
		err = pts_topa_add_memory(t, w->regions[i].phys,
					  w->regions[i].data,
					  w->regions[i].size, name);
	}
	if (err < 0)
		return err;
	pts_topa_writer_msrs(w, &base, &mask, &status);
	pts_topa_set_mode(t, w->single ? PTS_TOPA_MODE_SINGLE
				       : PTS_TOPA_MODE_TOPA);
	pts_topa_set_msrs(t, base, mask, &status);
	return 0;
}

static int save_file(const char *path, const uint8_t *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -PTS_ERR_IO;
	int ok = fwrite(data, 1, len, f) == len;
	ok &= fclose(f) == 0;
	return ok ? 0 : -PTS_ERR_IO;
}

/* "@prefix.kindN.bin" into @path, and its name relative to the desc. */
static const char *data_name(const char *prefix, char kind, uint32_t i,
			     char *path, size_t cap)
{
	snprintf(path, cap, "%s.%c%u.bin", prefix, kind, i);
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static int save_tables(const struct pts_topa_writer *w, FILE *desc,
		       const char *prefix, int inline_tables, char *path,
		       size_t cap)
{
	for (uint32_t i = 0; i < w->ntables; i++) {
		const struct wtable *tb = &w->tables[i];
		fprintf(desc, "table 0x%llx", (unsigned long long)tb->phys);
		if (!inline_tables) {
			const char *name = data_name(prefix, 't', i, path, cap);
			fprintf(desc, " %s\n", name);
			if (save_file(path, tb->bytes, ((size_t)tb->n + 1) * 8))
				return -PTS_ERR_IO;
			continue;
		}
		fprintf(desc, "\n");
		for (uint32_t j = 0; j < tb->n; j++) {
			const struct wregion *r = &w->regions[tb->first + j];
			fprintf(desc, "entry 0x%llx %lluK%s%s\n",
				(unsigned long long)r->phys,
				(unsigned long long)(r->size >> 10),
				r->flags & PTS_TOPA_INT ? " int" : "",
				r->flags & PTS_TOPA_STOP ? " stop" : "");
		}
		uint32_t next = i + 1 < w->ntables ? i + 1 : w->loop;
		fprintf(desc, "entry end 0x%llx\n",
			(unsigned long long)w->tables[next].phys);
	}
	return 0;
}

int pts_topa_writer_save(const struct pts_topa_writer *w, const char *prefix,
			 int inline_tables)
{
	size_t cap = strlen(prefix) + 32;
	char *path = malloc(cap);
	if (!path)
		return -PTS_ERR_NOMEM;
	snprintf(path, cap, "%s.desc", prefix);
	FILE *desc = fopen(path, "w");
	if (!desc) {
		free(path);
		return -PTS_ERR_IO;
	}
	uint64_t base, mask, status;
	pts_topa_writer_msrs(w, &base, &mask, &status);
	fprintf(desc,
		"# ptscope ToPA description, layout \"%s\", %llu bytes "
		"written\n"
		"mode %s\noutput_base 0x%llx\noutput_mask_ptrs 0x%016llx\n"
		"status 0x%llx\n",
		w->spec, (unsigned long long)w->written,
		w->single ? "single" : "topa", (unsigned long long)base,
		(unsigned long long)mask, (unsigned long long)status);
	int err = save_tables(w, desc, prefix, inline_tables, path, cap);
	for (uint32_t i = 0; i < w->nregions && err == 0; i++) {
		const struct wregion *r = &w->regions[i];
		const char *name = data_name(prefix, 'r', i, path, cap);
		fprintf(desc, "region 0x%llx %s\n", (unsigned long long)r->phys,
			name);
		err = save_file(path, r->data, (size_t)r->size);
	}
	if (fclose(desc) != 0 && err == 0)
		err = -PTS_ERR_IO;
	free(path);
	return err;
}
