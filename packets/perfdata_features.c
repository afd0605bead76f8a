/* perf.data feature sections: the table after the data section (file mode)
 * or HEADER_FEATURE records (pipe mode), and build ids. Features describe
 * the capture (CPU, command line, event names); none is needed to read the
 * trace, so a section cut off by the end of the file marks the file damaged
 * (pts_perf_open() returns 1) and one that does not parse is skipped. */
#include "perfdata_internal.h"

#include <stdlib.h>

/* A bounded reader over one section. */
struct feat_reader {
	const uint8_t *p;
	size_t len, pos;
};

static int rd_u32(struct feat_reader *r, uint32_t *v)
{
	if (r->len - r->pos < 4)
		return -PTS_ERR_BAD_FORMAT;
	*v = pts_rd32(r->p + r->pos);
	r->pos += 4;
	return 0;
}

/* perf's header string: u32 length (with NUL and padding), then bytes. */
static int rd_str(struct feat_reader *r, struct pts_perf_str *s)
{
	uint32_t n;
	if (rd_u32(r, &n) < 0 || n > r->len - r->pos)
		return -PTS_ERR_BAD_FORMAT;
	*s = pts_perf_str_at(r->p + r->pos, n);
	r->pos += n;
	return 0;
}

static int parse_cmdline(struct pts_perf *perf, struct feat_reader *r)
{
	uint32_t n;
	if (rd_u32(r, &n) < 0)
		return -PTS_ERR_BAD_FORMAT;
	struct pts_perf_summary *s = &perf->sum;
	s->nr_cmdline = n;
	for (uint32_t i = 0; i < n; i++) {
		struct pts_perf_str arg;
		if (rd_str(r, &arg) < 0)
			return -PTS_ERR_BAD_FORMAT;
		if (i < sizeof(s->cmdline) / sizeof(s->cmdline[0]))
			s->cmdline[i] = arg;
	}
	return 0;
}

/* EVENT_DESC: u32 nr, u32 attr size, then per event the attr, u32 nr_ids,
 * the name and the ids. Only the names are kept: the attrs come from the
 * attr section (or HEADER_ATTR records). */
static int parse_event_desc(struct pts_perf *perf, struct feat_reader *r)
{
	uint32_t nr, sz;
	if (rd_u32(r, &nr) < 0 || rd_u32(r, &sz) < 0)
		return -PTS_ERR_BAD_FORMAT;
	perf->nr_event_names = 0;
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t nr_ids;
		struct pts_perf_str name;
		if (sz > r->len - r->pos)
			return -PTS_ERR_BAD_FORMAT;
		r->pos += sz;
		if (rd_u32(r, &nr_ids) < 0 || rd_str(r, &name) < 0 ||
		    nr_ids > (r->len - r->pos) / 8)
			return -PTS_ERR_BAD_FORMAT;
		r->pos += (size_t)nr_ids * 8;
		if (i < sizeof(perf->event_names) / sizeof(perf->event_names[0])) {
			perf->event_names[i] = name;
			perf->nr_event_names = i + 1;
		}
	}
	return 0;
}

/* PMU_MAPPINGS: u32 nr, then {u32 type, name}. Only the intel_pt entry is
 * kept, to confirm in `info` that the file's PT PMU type is that PMU. */
static int parse_pmu_mappings(struct pts_perf *perf, struct feat_reader *r)
{
	uint32_t nr;
	if (rd_u32(r, &nr) < 0)
		return -PTS_ERR_BAD_FORMAT;
	perf->sum.nr_pmu_mappings = nr;
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t type;
		struct pts_perf_str name;
		if (rd_u32(r, &type) < 0 || rd_str(r, &name) < 0)
			return -PTS_ERR_BAD_FORMAT;
		if (name.len == 8 && memcmp(name.ptr, "intel_pt", 8) == 0)
			perf->sum.intel_pt_pmu_type = type;
	}
	return 0;
}

int pts_perf_add_build_id(struct pts_perf *perf, const uint8_t *p, size_t len)
{
	/* header(8) + pid(4) + build_id[24] + filename */
	if (len < 36)
		return -PTS_ERR_BAD_FORMAT;
	if (pts_perf_grow((void **)&perf->build_ids, &perf->cap_build_ids,
			  perf->nr_build_ids + 1, sizeof(*perf->build_ids)))
		return -PTS_ERR_NOMEM;
	struct pts_perf_build_id *b = &perf->build_ids[perf->nr_build_ids++];
	uint16_t misc = pts_rd16(p + 4);
	b->pid = (int32_t)pts_rd32(p + 8);
	b->cpumode = misc & PERF_MISC_CPUMODE_MASK;
	memcpy(b->id, p + 12, PERF_BUILD_ID_SIZE);
	b->size = PERF_BUILD_ID_SIZE;
	/* Newer perf stores the length after the 20 bytes (misc bit 15). */
	if ((misc & PERF_MISC_BUILD_ID_SIZE) && p[12 + 20] <= PERF_BUILD_ID_SIZE)
		b->size = p[12 + 20];
	b->filename = pts_perf_str_at(p + 36, len - 36);
	return 0;
}

/* BUILD_ID: a sequence of build-id entries, each with a perf_event_header
 * whose size covers it. */
static int parse_build_ids(struct pts_perf *perf, struct feat_reader *r)
{
	while (r->len - r->pos >= PERF_EVENT_HEADER_SIZE) {
		uint16_t size = pts_rd16(r->p + r->pos + 6);
		if (size < PERF_EVENT_HEADER_SIZE || size > r->len - r->pos)
			return -PTS_ERR_BAD_FORMAT;
		int rc = pts_perf_add_build_id(perf, r->p + r->pos, size);
		if (rc < 0)
			return rc;
		r->pos += size;
	}
	return 0;
}

int pts_perf_parse_feature(struct pts_perf *perf, uint64_t feat,
			   const uint8_t *p, size_t len, uint64_t offset)
{
	struct feat_reader r = {p, len, 0};
	struct pts_perf_summary *s = &perf->sum;
	struct pts_perf_str *str = NULL;
	(void)offset;
	switch (feat) {
	case PTS_PERF_FEAT_HOSTNAME: str = &s->hostname; break;
	case PTS_PERF_FEAT_OSRELEASE: str = &s->osrelease; break;
	case PTS_PERF_FEAT_VERSION: str = &s->version; break;
	case PTS_PERF_FEAT_ARCH: str = &s->arch; break;
	case PTS_PERF_FEAT_CPUDESC: str = &s->cpudesc; break;
	case PTS_PERF_FEAT_CPUID: str = &s->cpuid; break;
	case PTS_PERF_FEAT_NRCPUS:
		if (rd_u32(&r, &s->nr_cpus_avail) < 0 ||
		    rd_u32(&r, &s->nr_cpus_online) < 0)
			return -PTS_ERR_BAD_FORMAT;
		return 0;
	case PTS_PERF_FEAT_CMDLINE:
		return parse_cmdline(perf, &r);
	case PTS_PERF_FEAT_EVENT_DESC:
		return parse_event_desc(perf, &r);
	case PTS_PERF_FEAT_PMU_MAPPINGS:
		return parse_pmu_mappings(perf, &r);
	case PTS_PERF_FEAT_BUILD_ID:
		return parse_build_ids(perf, &r);
	case PTS_PERF_FEAT_AUXTRACE:
		/* The index of AUXTRACE records; the scan finds them all
		 * itself, so only the count is kept (for info). */
		if (len < 8)
			return -PTS_ERR_BAD_FORMAT;
		s->auxtrace_index_entries = pts_rd64(p);
		return 0;
	case PTS_PERF_FEAT_COMPRESSED:
		/* u32 version, type (1 = zstd), level, ratio, mmap_len. */
		if (rd_u32(&r, &s->comp_version) < 0 ||
		    rd_u32(&r, &s->comp_type) < 0 ||
		    rd_u32(&r, &s->comp_level) < 0 ||
		    rd_u32(&r, &s->comp_ratio) < 0 ||
		    rd_u32(&r, &s->comp_mmap_len) < 0)
			return -PTS_ERR_BAD_FORMAT;
		return 0;
	default:
		return 0;
	}
	return rd_str(&r, str);
}

int pts_perf_read_features(struct pts_perf *perf)
{
	struct pts_perf_summary *s = &perf->sum;
	uint64_t table = s->data_end;
	uint32_t slot = 0;
	for (uint32_t bit = 0; bit < 256; bit++) {
		if (!(s->features[bit / 64] >> (bit % 64) & 1))
			continue;
		uint64_t at = table + 16ull * slot++;
		if (at > perf->size || perf->size - at < 16) {
			/* the records are whole, the file is not */
			pts_perf_fail(&perf->damage, -PTS_ERR_TRUNCATED, at, -1,
				      "feature table cut by the end of the "
				      "file (0x%zx): file truncated",
				      perf->size);
			break;
		}
		uint64_t off = pts_rd64(perf->data + at);
		uint64_t len = pts_rd64(perf->data + at + 8);
		if (off > perf->size || len > perf->size - off) {
			pts_perf_fail(&perf->damage, -PTS_ERR_TRUNCATED, at, -1,
				      "feature %u at [0x%llx, +0x%llx) runs "
				      "past the end of the file (0x%zx)",
				      bit, (unsigned long long)off,
				      (unsigned long long)len, perf->size);
			continue;
		}
		int rc = pts_perf_parse_feature(perf, bit, perf->data + off,
						(size_t)len, off);
		if (rc == -PTS_ERR_NOMEM)
			return rc;
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Build-id lookups.                                                        */

uint32_t pts_perf_build_id_count(const struct pts_perf *perf)
{
	return perf->nr_build_ids;
}

const struct pts_perf_build_id *pts_perf_build_id_get(const struct pts_perf *perf,
						      uint32_t i)
{
	return i < perf->nr_build_ids ? &perf->build_ids[i] : NULL;
}

const struct pts_perf_build_id *
pts_perf_build_id_find(const struct pts_perf *perf, const char *filename,
		       size_t len)
{
	for (uint32_t i = 0; i < perf->nr_build_ids; i++) {
		const struct pts_perf_build_id *b = &perf->build_ids[i];
		if (b->filename.len == len &&
		    memcmp(b->filename.ptr, filename, len) == 0)
			return b;
	}
	return NULL;
}
