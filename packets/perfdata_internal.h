/* perf.data reader internals, shared by packets/perfdata_*.c only. */
#ifndef PTS_PERFDATA_INTERNAL_H
#define PTS_PERFDATA_INTERNAL_H

#include <ptscope/perfdata.h>

#include <stdarg.h>
#include <string.h>

/* Fixed sizes of the on-disk structures (perf's uapi and session headers). */
enum {
	PERF_FILE_HEADER_SIZE = 104,
	PERF_PIPE_HEADER_SIZE = 16,
	PERF_EVENT_HEADER_SIZE = 8,
	PERF_ATTR_SIZE_VER0 = 64,
	PERF_AUXTRACE_RECORD_SIZE = 48, /* header.size of AUXTRACE */
	PERF_AUXTRACE_INFO_MIN_PRIV = 9, /* perf 6.1 rejects fewer */
	PERF_BUILD_ID_SIZE = 20,
	PERF_MISC_CPUMODE_MASK = 0x7,
	PERF_MISC_MMAP_BUILD_ID = 1 << 14,
	PERF_MISC_BUILD_ID_SIZE = 1 << 15,
	PERF_MISC_COMM_EXEC = 1 << 13,
	PERF_MISC_SWITCH_OUT = 1 << 13,
	PERF_MISC_SWITCH_OUT_PREEMPT = 1 << 14
};

/* perf_event_attr flag bits (the bit-field word at offset 40). */
enum {
	PERF_ATTR_EXCLUDE_USER = 4,
	PERF_ATTR_EXCLUDE_KERNEL = 5,
	PERF_ATTR_SAMPLE_ID_ALL = 18,
	PERF_ATTR_CONTEXT_SWITCH = 26
};

/* Unaligned native-endian loads: perf.data is written in the recording
 * host's byte order and pipe-mode records may start at any byte. */
static inline uint16_t pts_rd16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t pts_rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint64_t pts_rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

/* A string field of @cap bytes: stops at the first NUL. */
static inline struct pts_perf_str pts_perf_str_at(const uint8_t *p, size_t cap)
{
	const uint8_t *nul = memchr(p, 0, cap);
	struct pts_perf_str s = {(const char *)p,
				 (uint32_t)(nul ? (size_t)(nul - p) : cap)};
	return s;
}

/* A cpu's thread change: the timeline behind pts_perf_thread_at(). */
struct pts_perf_switch_note {
	int32_t cpu;
	int32_t pid, tid;
	uint64_t time;
	uint64_t seq; /* file order, to keep the sort stable */
};

/* An AUX record, kept until the queues exist to be matched to one. */
struct pts_perf_aux_note {
	int32_t cpu, tid;
	uint64_t offset, size, flags; /* aux_offset, aux_size, flags */
};

struct pts_perf_comm_note {
	int32_t tid;
	struct pts_perf_str comm;
};

/* One COMPRESSED record: where it is and where its output ends in the
 * decompressed stream (a position >= the file size; it starts where the
 * previous one's ended). */
struct pts_perf_zrec {
	uint64_t file_offset;
	uint64_t zend;
};

struct pts_perf {
	const uint8_t *data; /* the whole file */
	size_t size;
	void *map;           /* mmap()ed region, or NULL */
	size_t map_size;
	uint8_t *owned;      /* malloc()ed copy of a pipe, or NULL */

	struct pts_perf_summary sum;
	struct pts_perf_error damage; /* code 0: none */

	struct pts_perf_attr *attrs;
	uint32_t nr_attrs, cap_attrs;
	uint8_t mixed_sample_types; /* attrs differ in sample_type */

	const uint8_t *auxtrace_info; /* body of the first AUXTRACE_INFO */
	size_t auxtrace_info_size;
	uint8_t have_time_conv;
	struct pts_perf_time_conv_rec time_conv;

	struct pts_perf_buffer *bufs; /* grouped by queue after the scan */
	uint32_t nr_bufs, cap_bufs;
	struct pts_perf_queue *queues;
	uint32_t nr_queues;

	struct pts_perf_aux_note *aux;
	uint32_t nr_aux, cap_aux;
	struct pts_perf_comm_note *comms;
	uint32_t nr_comms, cap_comms;
	struct pts_perf_switch_note *switches; /* sorted by cpu, time */
	uint32_t nr_switches, cap_switches;
	struct pts_perf_build_id *build_ids;
	uint32_t nr_build_ids, cap_build_ids;

	/* `perf record -z` (perfdata_zstd.c): the decompressed stream of all
	 * COMPRESSED records, in an unlinked temp file mapped read-only.
	 * Record positions >= @size point into it (pts_perf_at). */
	const uint8_t *zdata;
	size_t zmap_size;       /* mapped bytes (0: no mapping) */
	uint64_t zsize;         /* decompressed bytes */
	struct pts_perf_zrec *zrecs;
	uint32_t nr_zrecs, cap_zrecs;
	uint8_t zdamage;        /* a payload did not inflate (perf->damage) */

	/* EVENT_DESC names in attr order, attached once attrs exist. */
	struct pts_perf_str event_names[64];
	uint32_t nr_event_names;
};

/* The bytes at record position @pos: in the file, or past its end in the
 * decompressed stream of COMPRESSED records; without one, the file's end
 * (a record whose data the file does not hold: its size says so). */
static inline const uint8_t *pts_perf_at(const struct pts_perf *perf,
					 uint64_t pos)
{
	if (pos < perf->size)
		return perf->data + pos;
	return perf->zdata ? perf->zdata + (pos - perf->size)
			   : perf->data + perf->size;
}

/* Fills @err (may be NULL) with a formatted one-line message.
 * Returns @code, so that callers can `return pts_perf_fail(...)`. */
#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
int pts_perf_fail(struct pts_perf_error *err, int code, uint64_t offset,
		  int32_t record_type, const char *fmt, ...);

/* Grows @*arr (elements of @elem bytes) so that @need fit.
 * Returns 0 or -PTS_ERR_NOMEM. */
int pts_perf_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem);

/* Appends one attr parsed from @p (@avail bytes of perf_event_attr) with
 * the @nr_ids ids at @ids (unaligned). Returns 0, -PTS_ERR_BAD_FORMAT
 * (message in @err) or -PTS_ERR_NOMEM. */
int pts_perf_add_attr(struct pts_perf *perf, const uint8_t *p, size_t avail,
		      const uint8_t *ids, uint64_t nr_ids, uint64_t offset,
		      int32_t record_type, struct pts_perf_error *err);
/* Recomputes mixed_sample_types and attaches EVENT_DESC names. */
void pts_perf_attrs_done(struct pts_perf *perf);

/* Feature sections (perfdata_features.c). */
/* File mode: reads the feature table after the data section. A section
 * cut off by the end of the file sets perf->damage; one that does not
 * parse is skipped (features are optional). Returns 0 or -PTS_ERR_NOMEM. */
int pts_perf_read_features(struct pts_perf *perf);
/* Parses the body of feature @feat found at file offset @offset. Returns 0,
 * -PTS_ERR_BAD_FORMAT or -PTS_ERR_NOMEM. */
int pts_perf_parse_feature(struct pts_perf *perf, uint64_t feat,
			   const uint8_t *p, size_t len, uint64_t offset);
/* Parses one build-id entry (BUILD_ID feature, HEADER_BUILD_ID record):
 * @p holds the header and @len its bytes. Returns 0, -PTS_ERR_BAD_FORMAT or
 * -PTS_ERR_NOMEM. */
int pts_perf_add_build_id(struct pts_perf *perf, const uint8_t *p, size_t len);

/* Record framing (perfdata_records.c): checks the record at @pos (inside
 * [data_offset, data_end)) and returns its full length in the file
 * (header.size plus an AUXTRACE or TRACING_DATA payload) in *@len.
 * Returns 0, -PTS_ERR_TRUNCATED or -PTS_ERR_BAD_FORMAT (message in @err). */
int pts_perf_frame(const struct pts_perf *perf, uint64_t pos, uint64_t *len,
		   struct pts_perf_error *err);
/* As pts_perf_frame() with the stream ending at @end (the decompressed
 * stream's end for records inside COMPRESSED records). */
int pts_perf_frame_in(const struct pts_perf *perf, uint64_t pos, uint64_t end,
		      uint64_t *len, struct pts_perf_error *err);
/* Decodes the framed record at @pos into @rec. Same returns as
 * pts_perf_next_record() for one record. */
int pts_perf_decode(const struct pts_perf *perf, uint64_t pos,
		    struct pts_perf_record *rec, struct pts_perf_error *err);

/* COMPRESSED records (perfdata_zstd.c). */
/* Inflates every COMPRESSED record of the data section into perf->zdata
 * (nothing to do, and 0, for a file without them). A corrupt payload marks
 * the file damaged at that record (perf->damage, data_end cut). Returns 0,
 * -PTS_ERR_UNSUPPORTED (built without libzstd, or not zstd), -PTS_ERR_IO
 * (no temp file) or -PTS_ERR_NOMEM, with @err set. */
int pts_perf_inflate(struct pts_perf *perf, struct pts_perf_error *err);
/* The COMPRESSED record at file offset @pos, or NULL. */
const struct pts_perf_zrec *pts_perf_zrec_at(const struct pts_perf *perf,
					     uint64_t pos);
/* The COMPRESSED record whose output holds stream position @zpos. */
const struct pts_perf_zrec *pts_perf_zrec_holding(const struct pts_perf *perf,
						  uint64_t zpos);
/* Rewrites @err, made for a record at stream position @zpos, to name the
 * COMPRESSED record that holds it and the position in the stream. */
void pts_perf_zfix_error(const struct pts_perf *perf, uint64_t zpos,
			 struct pts_perf_error *err);
/* Unmaps the decompressed stream. */
void pts_perf_zfree(struct pts_perf *perf);

/* Record walk (perfdata_walk.c): the position and length of the next
 * record at @cur, going into COMPRESSED records. Returns 1, 0 at the end,
 * or the framing error (@cur moved to the end; *@pos is where the broken
 * record starts). */
int pts_perf_step(const struct pts_perf *perf, struct pts_perf_cursor *cur,
		  uint64_t *pos, uint64_t *len, struct pts_perf_error *err);

/* The open-time pass over all records (perfdata_scan.c). Returns 0, 1 when
 * the stream is damaged (perf->damage set), -PTS_ERR_NOMEM. */
int pts_perf_scan(struct pts_perf *perf);

/* Snapshot mode (perfdata_overlap.c): where the new data of buffer @b
 * (@len_b bytes) starts after buffer @a (@len_a bytes, padding included)
 * of the same queue, by perf's PSB/TSC match (@have_tsc: the trace has
 * TSC packets) or byte match. Returns the bytes of @b to skip (@len_b:
 * nothing new); *@consecutive is 1 when @b continues @a there, and
 * *@a_trim the bytes at @a's end that are padding (@b has the real data
 * from the start returned). */
uint64_t pts_perf_snapshot_overlap(const uint8_t *a, size_t len_a,
				   const uint8_t *b, size_t len_b, int have_tsc,
				   int *consecutive, uint64_t *a_trim);

/* Frees everything the scan and the header readers allocated. */
void pts_perf_free_tables(struct pts_perf *perf);

#endif
