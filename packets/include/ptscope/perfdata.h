/* ptscope perf.data reader: Linux perf's capture files, file and pipe mode.
 *
 * A perf.data file holds the Intel PT bytes (AUXTRACE records, one stream per
 * CPU or per thread) and the sideband that gives them meaning (MMAP, COMM,
 * context switches, time conversion). This reader maps the file and hands out
 * slices of it: the PT bytes are never copied. Sideband records are decoded
 * into plain structs for the decoder and the model.
 *
 * Facts: docs/perf-data-facts.md. All multi-byte fields are read with memcpy
 * (pipe-mode records need not be 8-byte aligned); only little-endian files
 * are supported (the magic of a byte-swapped file is rejected).
 *
 * Return convention as packets.h: >= 0 success, < 0 -PTS_ERR_*.
 */
#ifndef PTSCOPE_PERFDATA_H
#define PTSCOPE_PERFDATA_H

#include <stddef.h>
#include <stdint.h>

#include <ptscope/packets.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Record types (perf_event.h and perf's own user records, >= 64).          */

#define PTS_PERF_RECORDS(X)                                                    \
	X(MMAP, 1)                                                             \
	X(LOST, 2)                                                             \
	X(COMM, 3)                                                             \
	X(EXIT, 4)                                                             \
	X(THROTTLE, 5)                                                         \
	X(UNTHROTTLE, 6)                                                       \
	X(FORK, 7)                                                             \
	X(READ, 8)                                                             \
	X(SAMPLE, 9)                                                           \
	X(MMAP2, 10)                                                           \
	X(AUX, 11)                                                             \
	X(ITRACE_START, 12)                                                    \
	X(LOST_SAMPLES, 13)                                                    \
	X(SWITCH, 14)                                                          \
	X(SWITCH_CPU_WIDE, 15)                                                 \
	X(NAMESPACES, 16)                                                      \
	X(KSYMBOL, 17)                                                         \
	X(BPF_EVENT, 18)                                                       \
	X(CGROUP, 19)                                                          \
	X(TEXT_POKE, 20)                                                       \
	X(AUX_OUTPUT_HW_ID, 21)                                                \
	X(HEADER_ATTR, 64)                                                     \
	X(HEADER_EVENT_TYPE, 65)                                               \
	X(HEADER_TRACING_DATA, 66)                                             \
	X(HEADER_BUILD_ID, 67)                                                 \
	X(FINISHED_ROUND, 68)                                                  \
	X(ID_INDEX, 69)                                                        \
	X(AUXTRACE_INFO, 70)                                                   \
	X(AUXTRACE, 71)                                                        \
	X(AUXTRACE_ERROR, 72)                                                  \
	X(THREAD_MAP, 73)                                                      \
	X(CPU_MAP, 74)                                                         \
	X(STAT_CONFIG, 75)                                                     \
	X(STAT, 76)                                                            \
	X(STAT_ROUND, 77)                                                      \
	X(EVENT_UPDATE, 78)                                                    \
	X(TIME_CONV, 79)                                                       \
	X(HEADER_FEATURE, 80)                                                  \
	X(COMPRESSED, 81)                                                      \
	X(FINISHED_INIT, 82)                                                    \
	X(COMPRESSED2, 83)

enum pts_perf_record_type {
#define PTS_PERF_REC_ENUM_(name, num) PTS_PERF_RECORD_##name = num,
	PTS_PERF_RECORDS(PTS_PERF_REC_ENUM_)
#undef PTS_PERF_REC_ENUM_
	PTS_PERF_RECORD_MAX = 128 /* counts are kept for types below this */
};

/* "AUXTRACE" for 71; "UNKNOWN" for a type perf does not define. */
const char *pts_perf_record_name(uint32_t type);

/* Header features (bit numbers of adds_features), those this reader uses. */
enum pts_perf_feature {
	PTS_PERF_FEAT_BUILD_ID = 2,
	PTS_PERF_FEAT_HOSTNAME = 3,
	PTS_PERF_FEAT_OSRELEASE = 4,
	PTS_PERF_FEAT_VERSION = 5,
	PTS_PERF_FEAT_ARCH = 6,
	PTS_PERF_FEAT_NRCPUS = 7,
	PTS_PERF_FEAT_CPUDESC = 8,
	PTS_PERF_FEAT_CPUID = 9,
	PTS_PERF_FEAT_CMDLINE = 11,
	PTS_PERF_FEAT_EVENT_DESC = 12,
	PTS_PERF_FEAT_PMU_MAPPINGS = 16,
	PTS_PERF_FEAT_AUXTRACE = 18,
	PTS_PERF_FEAT_COMPRESSED = 27
};

/* PERF_RECORD_AUX flags. */
enum {
	PTS_PERF_AUX_TRUNCATED = 0x1, /* data lost: the buffer was full */
	PTS_PERF_AUX_OVERWRITE = 0x2, /* snapshot mode */
	PTS_PERF_AUX_PARTIAL = 0x4,   /* the hardware left gaps */
	PTS_PERF_AUX_COLLISION = 0x8  /* sample collided with another */
};

/* A string inside the mapped file (not NUL-terminated: print with "%.*s").
 * @len stops at the first NUL or at the end of its field. */
struct pts_perf_str {
	const char *ptr;
	uint32_t len;
};

/* Where and why a file could not be read. @offset is a file offset;
 * @record_type is the type of the record at @offset, or -1 when the
 * problem is not inside a record (file header, attrs, features). */
struct pts_perf_error {
	int code; /* -PTS_ERR_* */
	uint64_t offset;
	int32_t record_type;
	char msg[192]; /* one line, no newline */
};

/* ------------------------------------------------------------------------ */
/* Opening.                                                                  */

struct pts_perf;

/* Opens @path ("-" = standard input) and reads everything but the PT bytes:
 * header, attrs, features and one pass over the record headers (the AUXTRACE
 * payloads are skipped, not read). A regular file is mapped; standard
 * input from a pipe (`perf record -o - | ptscope ...`) cannot be, and is
 * read into memory.
 * COMPRESSED records (`perf record -z`) are inflated at open into an
 * unlinked temp file that is mapped too; the records in them are read as
 * any other (needs libzstd: -PTS_ERR_UNSUPPORTED, "ptscope was built
 * without libzstd", otherwise). A corrupt payload makes the file damaged
 * at that record.
 *
 * Returns 0 and sets *@perf when the whole file was read.
 * Returns 1 and sets *@perf when the file is damaged (truncated or corrupt
 *   records, or feature sections cut off by the end of the file):
 *   everything before the damage is usable and @err says where.
 * Returns -PTS_ERR_INVALID (NULL argument), -PTS_ERR_IO (errno kept),
 *   -PTS_ERR_NOMEM, -PTS_ERR_BAD_FORMAT (not
 *   a perf.data file or a broken header), -PTS_ERR_UNSUPPORTED (big-endian
 *   or version 1 file); *@perf is NULL then. @err (may be NULL) says why. */
int pts_perf_open(const char *path, struct pts_perf **perf,
		  struct pts_perf_error *err);

/* As pts_perf_open() over @size bytes at @data, which the caller keeps alive
 * and unchanged until pts_perf_close(). Same returns (no -PTS_ERR_IO). */
int pts_perf_open_mem(const void *data, size_t size, struct pts_perf **perf,
		      struct pts_perf_error *err);

/* Unmaps and frees; every pointer handed out becomes invalid. NULL is a
 * no-op. */
void pts_perf_close(struct pts_perf *perf);

/* ------------------------------------------------------------------------ */
/* What the file holds (filled at open).                                    */

struct pts_perf_summary {
	uint8_t pipe;           /* pipe mode (16-byte header, attrs as records) */
	uint8_t damaged;        /* pts_perf_open() returned 1 */
	uint64_t file_size;
	uint64_t data_offset;   /* first record */
	uint64_t data_end;      /* end of the record stream */
	uint64_t features[4];   /* adds_features bitmap (pipe: features seen) */
	uint64_t nr_records;
	uint64_t nr_bad_records; /* too short for their type: skipped */
	uint64_t record_counts[PTS_PERF_RECORD_MAX]; /* by type */
	uint64_t nr_lost_events;       /* sum of LOST records' counts */
	uint64_t nr_lost_samples;      /* sum of LOST_SAMPLES records' counts */
	uint64_t nr_aux, aux_truncated, aux_overwrite, aux_partial,
		aux_collision;         /* AUX records and their flags */
	uint64_t auxtrace_index_entries; /* HEADER_AUXTRACE feature, if any */
	/* Feature strings (len 0 when absent). */
	struct pts_perf_str hostname, osrelease, version, arch, cpudesc, cpuid;
	uint32_t nr_cpus_online, nr_cpus_avail; /* NRCPUS; 0 when absent */
	uint32_t nr_cmdline;
	struct pts_perf_str cmdline[16]; /* the first arguments */
	uint32_t nr_pmu_mappings;
	uint32_t intel_pt_pmu_type; /* PMU_MAPPINGS' type of "intel_pt";
				       0 when absent */
	/* `perf record -z`: the HEADER_COMPRESSED feature (0 when absent;
	 * comp_type 1 = zstd) and the COMPRESSED records read. Records
	 * inside them are counted in nr_records and record_counts like any
	 * other; the COMPRESSED records themselves only here. */
	uint32_t comp_version, comp_type, comp_level, comp_ratio, comp_mmap_len;
	uint64_t nr_compressed;     /* COMPRESSED and COMPRESSED2 records */
	uint64_t compressed_bytes;  /* their zstd payload */
	uint64_t decompressed_bytes; /* what it inflated to */
};

/* The summary of @perf; valid until pts_perf_close(). */
const struct pts_perf_summary *pts_perf_summary(const struct pts_perf *perf);

/* The CPU that recorded @perf, from the CPUID feature perf writes
 * ("GenuineIntel,FAMILY,MODEL,STEPPING"): its errata shape the trace
 * (pts_cpu_errata()). Returns 0, or -PTS_ERR_INVALID (*@cpu zeroed: no
 * errata) when the feature is absent or names no Intel CPU. */
int pts_perf_cpu(const struct pts_perf *perf, struct pts_cpu *cpu);

/* ------------------------------------------------------------------------ */
/* Event attributes.                                                        */

/* perf_event_attr.sample_type bits used here. */
enum {
	PTS_PERF_SAMPLE_IP = 1u << 0,
	PTS_PERF_SAMPLE_TID = 1u << 1,
	PTS_PERF_SAMPLE_TIME = 1u << 2,
	PTS_PERF_SAMPLE_ADDR = 1u << 3,
	PTS_PERF_SAMPLE_READ = 1u << 4,
	PTS_PERF_SAMPLE_ID = 1u << 6,
	PTS_PERF_SAMPLE_CPU = 1u << 7,
	PTS_PERF_SAMPLE_PERIOD = 1u << 8,
	PTS_PERF_SAMPLE_STREAM_ID = 1u << 9,
	PTS_PERF_SAMPLE_IDENTIFIER = 1u << 16
};

struct pts_perf_attr {
	uint32_t type;  /* PMU type (6 = intel_pt on the real captures) */
	uint32_t size;  /* perf_event_attr.size as written */
	uint64_t config, config1, config2;
	uint64_t sample_period, sample_type, read_format;
	uint64_t flags; /* the bit-field word (disabled, inherit, ...) */
	uint8_t exclude_user, exclude_kernel, sample_id_all, context_switch;
	uint32_t nr_ids;
	const uint64_t *ids;     /* sample ids (owned by @perf) */
	struct pts_perf_str name; /* from EVENT_DESC; len 0 when unknown */
};

/* The number of attrs (perf's event selections, in file order). */
uint32_t pts_perf_attr_count(const struct pts_perf *perf);
/* Attr @i (< count), or NULL; valid until pts_perf_close(). */
const struct pts_perf_attr *pts_perf_attr_get(const struct pts_perf *perf,
					      uint32_t i);
/* The attr that owns sample id @id, or NULL. */
const struct pts_perf_attr *pts_perf_attr_by_id(const struct pts_perf *perf,
						uint64_t id);

/* ------------------------------------------------------------------------ */
/* Intel PT: AUXTRACE_INFO priv[] and the trace configuration.              */

struct pts_perf_pt_info {
	uint32_t type;    /* AUXTRACE_INFO.type: 1 = Intel PT */
	uint32_t nr_priv; /* priv[] entries present */
	uint64_t pmu_type, time_shift, time_mult, time_zero, cap_user_time_zero;
	uint64_t tsc_bit, noretcomp_bit, have_sched_switch, snapshot_mode,
		per_cpu_mmaps;
	/* Entries 10-15: 0 when the record is too short to hold them. */
	uint64_t mtc_bit, mtc_freq_bits, tsc_ctc_n, tsc_ctc_d, cyc_bit,
		max_nonturbo_ratio;
	struct pts_perf_str filter; /* address filter string (perf 4.15+) */
	uint8_t have_cap_event_trace;
	uint64_t cap_event_trace;
	/* With -PTS_ERR_BAD_FORMAT: a filter string length past the
	 * record's end (perf: "bad filter string length"), else 0. */
	uint64_t bad_filter_len;
};

/* IA32_RTIT_CTL bits the PT event was recorded with. perf's intel_pt
 * format maps attr.config bits onto RTIT_CTL positions one to one. */
struct pts_perf_pt_config {
	uint64_t rtit_ctl; /* config bits + OS/User from exclude_* + TraceEn */
	uint8_t cyc, pwr_evt, fup_on_ptw, mtc, tsc, noretcomp, ptw, branch;
	uint8_t mtc_period, cyc_thresh, psb_period;
	uint8_t os, user;
};

/* Fills @info from the AUXTRACE_INFO record (zeroed first).
 * Returns 0 for an Intel PT record (type 1).
 * Returns -PTS_ERR_UNSUPPORTED for another AUXTRACE type (BTS, ARM, ...);
 *   info->type says which.
 * Returns -PTS_ERR_BAD_FORMAT when there is no AUXTRACE_INFO record, or it is
 *   shorter than perf accepts (9 priv entries), or its filter string length
 *   runs past its end (info->bad_filter_len). */
int pts_perf_pt_info(const struct pts_perf *perf, struct pts_perf_pt_info *info);

/* The PT event's attr: the one whose type equals priv[PMU_TYPE] (perf's own
 * rule; /sys is never consulted). NULL when there is none: perf then decodes
 * nothing. */
const struct pts_perf_attr *pts_perf_pt_attr(const struct pts_perf *perf);

/* Decodes the PT attr's config into @cfg. Returns 0, or
 * -PTS_ERR_UNSUPPORTED when pts_perf_pt_attr() is NULL. */
int pts_perf_pt_config(const struct pts_perf *perf,
		       struct pts_perf_pt_config *cfg);

/* ------------------------------------------------------------------------ */
/* Time: TSC to perf time.                                                  */

struct pts_perf_time_conv {
	uint8_t valid;      /* conversion possible (time_zero known) */
	uint8_t cap_user_time_short;
	uint64_t time_shift, time_mult, time_zero;
	uint64_t time_cycles, time_mask; /* only with cap_user_time_short */
};

/* The conversion perf's Intel PT decoder uses: shift/mult/zero from priv[]
 * when cap_user_time_zero is set (else from the TIME_CONV record), cycles
 * and mask from an extended TIME_CONV record. Always fills @tc; returns 1
 * when it is valid, 0 when the file gives no way to convert. */
int pts_perf_time_conv(const struct pts_perf *perf,
		       struct pts_perf_time_conv *tc);

/* perf time (ns) of @tsc; time_zero + the scaled TSC, as the kernel's
 * perf_event_mmap_page documents. */
uint64_t pts_perf_tsc_to_time(const struct pts_perf_time_conv *tc,
			      uint64_t tsc);

/* A full 64-bit TSC from a 7-byte TSC packet's value, taking the upper bits
 * from @reference (an AUXTRACE buffer's reference TSC) and allowing one wrap
 * of the 56-bit counter below it. */
uint64_t pts_perf_tsc_extend(uint64_t tsc56, uint64_t reference);

/* ------------------------------------------------------------------------ */
/* AUXTRACE buffers and queues.                                             */

/* One AUXTRACE record: a slice of PT bytes in the mapped file. Buffers of
 * a queue are linked by their AUX offsets: perf pads every copy-out to 8
 * bytes, so a next buffer that starts up to 7 bytes before this one's end
 * continues it (the padding is trimmed and a packet cut by the copy-out
 * joins); a later start is lost data; an earlier one repeats data, trimmed
 * from the next buffer's front. In snapshot mode (AUXTRACE_INFO) the
 * offsets are not trusted: as perf does (intel_pt_find_overlap), the TSC of
 * the previous buffer's last PSB+ is looked for in the PSB+s of the next
 * (without TSC packets: its tail byte for byte), the repeated bytes are
 * skipped, and the data continues only where a match was found; bytes
 * before the next buffer's first PSB are never used. */
struct pts_perf_buffer {
	uint64_t record_offset; /* file offset of the AUXTRACE record */
	uint64_t data_offset;   /* file offset of the first PT byte */
	uint64_t size;          /* AUXTRACE size (with perf's padding) */
	uint64_t use_size;      /* bytes to decode: @size minus the padding
				   when the next buffer of the queue shows it,
				   minus an overlap trimmed at the front */
	uint64_t skip;          /* bytes at the front that repeat the previous
				   buffer (snapshot overlap), not in @data */
	uint64_t aux_offset;    /* position in the AUX area (head) */
	uint64_t reference;     /* TSC when perf copied the buffer out */
	uint32_t idx;           /* queue (mmap) index */
	int32_t tid, cpu;       /* -1 when not per thread / not per cpu */
	uint8_t consecutive;    /* continues the previous buffer of its queue;
				   0: the decoder must resync at a PSB */
	const uint8_t *data;    /* @use_size bytes, zero-copy (inside a
				   COMPRESSED record: in the reader's mapping
				   of the decompressed stream) */
	uint64_t order;         /* file order of the record (sort key) */
};

/* One packet stream: all buffers with one idx, in file order (a buffer
 * inside a COMPRESSED record counts at that record's place). */
struct pts_perf_queue {
	uint32_t idx;
	int32_t cpu, tid;       /* of the first buffer */
	uint32_t nr_buffers;
	uint32_t first;         /* internal: where its buffers start in the
				   reader's list; use pts_perf_queue_buffer */
	uint64_t bytes;         /* sum of use_size */
	uint64_t first_reference, last_reference;
	uint64_t nr_aux, aux_truncated, aux_partial, aux_collision,
		aux_overwrite;  /* AUX records matched to this queue */
	uint64_t aux_bytes;     /* sum of AUX aux_size */
};

/* The number of queues (packet streams). */
uint32_t pts_perf_queue_count(const struct pts_perf *perf);
/* Queue @i (< count, ordered by idx), or NULL; valid until close. */
const struct pts_perf_queue *pts_perf_queue_get(const struct pts_perf *perf,
						uint32_t i);
/* Buffer @j (< nr_buffers) of queue @i, or NULL. */
const struct pts_perf_buffer *pts_perf_queue_buffer(const struct pts_perf *perf,
						    uint32_t i, uint32_t j);

/* Counting packets as `perf report -D` lists them, to compare the two:
 * perf decodes every AUXTRACE buffer on its own, padding included, and
 * merges up to 7 zero bytes that follow a packet into it while the merged
 * length stays below 8 ("99 20 00 00 00 00  MODE.TSX"). */
struct pts_perf_pkt_count {
	uint64_t packets;      /* ptscope's packets */
	uint64_t perf_packets; /* lines perf -D prints for them */
	uint64_t errors;       /* decode errors (perf prints "Bad packet!"
				  per byte and goes on; ptscope resyncs at
				  the next PSB: the counts then differ) */
};

/* Decodes all @b->size bytes of buffer @b (from @b->data - @b->skip, with
 * perf's padding) with a fresh packet decoder, and adds to @c.
 * Returns 0, -PTS_ERR_NOMEM, or -PTS_ERR_NO_PROGRESS (decoder stuck). */
int pts_perf_count_packets(const struct pts_perf_buffer *b,
			   struct pts_perf_pkt_count *c);

/* ------------------------------------------------------------------------ */
/* Records.                                                                  */

/* The sample_id trailer of a kernel record (attr.sample_id_all). */
struct pts_perf_sample_id {
	uint32_t have; /* PTS_PERF_SAMPLE_* bits present */
	uint32_t pid, tid;
	uint64_t time, id, stream_id;
	uint32_t cpu;
};

/* MMAP and MMAP2 (@is_mmap2). */
struct pts_perf_mmap {
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	uint8_t is_mmap2;
	uint8_t cpumode;       /* misc & 7: 1 kernel, 2 user, ... */
	uint8_t build_id_size; /* MMAP2 with a build id instead of inode */
	uint8_t build_id[20];
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	uint32_t prot, flags;
	struct pts_perf_str filename;
};

struct pts_perf_comm {
	uint32_t pid, tid;
	uint8_t exec; /* misc COMM_EXEC */
	struct pts_perf_str comm;
};

/* FORK and EXIT. */
struct pts_perf_task {
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

struct pts_perf_aux {
	uint64_t aux_offset, aux_size, flags;
};

/* SWITCH (per thread) and SWITCH_CPU_WIDE (@next_prev_* valid). */
struct pts_perf_switch {
	uint8_t out;     /* misc SWITCH_OUT: the current task leaves */
	uint8_t preempt; /* misc SWITCH_OUT_PREEMPT */
	uint8_t cpu_wide;
	uint32_t next_prev_pid, next_prev_tid;
};

struct pts_perf_lost {
	uint64_t id, lost;
};

/* The first fields of a SAMPLE, as its attr's sample_type says. */
struct pts_perf_sample {
	uint64_t ip, time, addr, id, stream_id, period;
	uint32_t pid, tid, cpu;
};

/* TIME_CONV as written (@extended: perf >= 5.10 layout). */
struct pts_perf_time_conv_rec {
	uint64_t time_shift, time_mult, time_zero;
	uint8_t extended;
	uint64_t time_cycles, time_mask;
	uint8_t cap_user_time_zero, cap_user_time_short;
};

struct pts_perf_record {
	/* File offset of the record header. For a record that came out of
	 * COMPRESSED records (`perf record -z`) it is a position past the
	 * end of the file: the reader keeps the decompressed stream there,
	 * @file_offset is the COMPRESSED record it starts in and
	 * @zoffset its position in the decompressed stream. */
	uint64_t offset;
	uint64_t file_offset;
	uint64_t zoffset;
	uint8_t compressed; /* came out of a COMPRESSED record */
	uint32_t type;
	uint16_t misc;
	uint16_t size;   /* header.size (AUXTRACE payload not included) */
	const uint8_t *body; /* the size - 8 bytes after the header */
	size_t body_size;
	int32_t attr;    /* attr index the record belongs to, or -1 */
	struct pts_perf_sample_id sid;
	/* Valid member follows from @type; others are zero. */
	union {
		struct pts_perf_mmap mmap;       /* MMAP, MMAP2 */
		struct pts_perf_comm comm;       /* COMM */
		struct pts_perf_task task;       /* FORK, EXIT */
		struct pts_perf_aux aux;         /* AUX */
		struct pts_perf_switch sw;       /* SWITCH, SWITCH_CPU_WIDE */
		struct pts_perf_lost lost;       /* LOST, LOST_SAMPLES (.lost) */
		struct pts_perf_sample sample;   /* SAMPLE */
		struct pts_perf_time_conv_rec time_conv; /* TIME_CONV */
		struct pts_perf_buffer auxtrace; /* AUXTRACE (use_size = size,
						    consecutive unset) */
		struct {
			uint32_t pid, tid;
		} itrace_start;                  /* ITRACE_START */
		uint64_t feature;                /* HEADER_FEATURE: its id */
	} u;
};

/* Record iteration: a position in the record stream, owned by the caller.
 * Any number of cursors may walk one perf at a time. */
struct pts_perf_cursor {
	uint64_t pos;
	uint64_t index;
	/* Inside the decompressed stream: the next record there, and the
	 * end of what the COMPRESSED records read so far inflated to
	 * (0: not inside one). */
	uint64_t zpos, zend;
	uint8_t zdone; /* the leftover check at the end was made */
};

/* Puts @cur at the first record. */
void pts_perf_cursor_init(const struct pts_perf *perf,
			  struct pts_perf_cursor *cur);

/* Reads the record at @cur into @rec and advances @cur. COMPRESSED and
 * COMPRESSED2 records are not returned: the records they hold are, in
 * their place (a record cut between two COMPRESSED records comes with the
 * second, as perf reads them).
 * Returns 1 for a record, 0 at the end.
 * Returns -PTS_ERR_BAD_FORMAT for a record whose body is too short for its
 *   type: @rec holds the header fields, @cur has moved past it, iteration
 *   can continue. @err (may be NULL) says where.
 * Returns -PTS_ERR_TRUNCATED / -PTS_ERR_BAD_FORMAT where the open-time pass
 *   found the stream damaged (see pts_perf_open()); @cur moves to the end.
 * Files with COMPRESSED records open only when ptscope was built with
 *   libzstd (pts_perf_open() fails with -PTS_ERR_UNSUPPORTED otherwise). */
int pts_perf_next_record(const struct pts_perf *perf,
			 struct pts_perf_cursor *cur,
			 struct pts_perf_record *rec,
			 struct pts_perf_error *err);

/* ------------------------------------------------------------------------ */
/* Threads: names and which thread ran on a CPU when.                        */

/* The last COMM name of @tid (file order), or a len-0 string. */
struct pts_perf_str pts_perf_comm_of(const struct pts_perf *perf, int32_t tid);

/* The thread on @cpu at perf time @time from ITRACE_START and context switch
 * records (SWITCH_CPU_WIDE OUT names the next thread, IN and ITRACE_START the
 * current one). Returns 1 and sets *@pid and *@tid, or 0 when unknown. */
int pts_perf_thread_at(const struct pts_perf *perf, int32_t cpu,
		       uint64_t time, int32_t *pid, int32_t *tid);

/* Whether those records put thread @tid on @cpu at any time (1) or not
 * (0). */
int pts_perf_thread_ran(const struct pts_perf *perf, int32_t cpu,
			int32_t tid);

/* ------------------------------------------------------------------------ */
/* Build ids (BUILD_ID feature and HEADER_BUILD_ID records).                 */

struct pts_perf_build_id {
	int32_t pid;
	uint8_t cpumode;
	uint8_t size; /* 20 unless the record said otherwise */
	uint8_t id[20];
	struct pts_perf_str filename;
};

uint32_t pts_perf_build_id_count(const struct pts_perf *perf);
const struct pts_perf_build_id *pts_perf_build_id_get(const struct pts_perf *perf,
						      uint32_t i);
/* The build id recorded for @filename (exact match), or NULL. */
const struct pts_perf_build_id *
pts_perf_build_id_find(const struct pts_perf *perf, const char *filename,
		       size_t len);

/* ------------------------------------------------------------------------ */
/* Images: where to find the code a MMAP names.                              */

struct pts_perf_image_opts {
	const char *sysroot;      /* --sysroot/--symfs: prefix for every path */
	const char *buildid_dir;  /* build-id cache; NULL: $HOME/.debug */
	uint8_t no_buildid_cache; /* 1: do not look in the cache */
	/* Path remaps "OLD=NEW": a path starting with OLD is tried with
	 * NEW in its place (before the sysroot). */
	const char *const *remaps;
	uint32_t nr_remaps;
};

/* Finds a readable file for the mapped file @filename (@len bytes, not
 * NUL-terminated) with optional @build_id (@bid_size bytes; NULL: looked up
 * in the file's build ids). Tries, in order: the remaps, the sysroot, the
 * build-id cache, the path itself (only without a sysroot, as perf).
 * Returns 1 and writes the path (NUL-terminated) to @out, 0 when none is
 * readable, -PTS_ERR_AGAIN when @cap is too small. */
int pts_perf_image_path(const struct pts_perf *perf,
			const struct pts_perf_image_opts *opts,
			const char *filename, size_t len,
			const uint8_t *build_id, size_t bid_size, char *out,
			size_t cap);

/* ------------------------------------------------------------------------ */
/* Lost data per queue.                                                     */

/* The stream offsets (positions in queue @i's buffers joined, as decoders
 * count them) after which an AUX record with the TRUNCATED flag says data
 * was lost: the AUX area was full and the hardware dropped what followed
 * the announced data (aux_offset + aux_size). Writes up to @cap offsets,
 * ascending, to @offsets (may be NULL when @cap is 0) and returns how many
 * there are in all; 0 for a bad @i. */
uint32_t pts_perf_queue_losses(const struct pts_perf *perf, uint32_t i,
			       uint64_t *offsets, uint32_t cap);

/* ------------------------------------------------------------------------ */
/* perf's clock: the timestamps perf's Intel PT decoder gives samples.      */
/*
 * TSC packets set the time (the first one after a buffer start is
 * extended with the buffer's reference TSC, later ones with the running
 * time); TMA + MTC packets advance it in CTC steps converted with the
 * TSC:CTC ratio, never backwards. With cycle-accurate mode, CYCs move it
 * between them: cycles since the last TSC or MTC that came right after a
 * CYC, times TSC ticks per cycle, either measured up to the next MTC that
 * comes right after a CYC (pts_perf_cyc_cal, from such an MTC only, as
 * perf measures) or max non-turbo / CBR. Feed every packet of one queue
 * perf's decoder fetches to pts_perf_clock_fetched(), in stream order, and
 * the timing ones it applies (TSC, TMA, MTC, CYC, CBR) then to
 * pts_perf_clock_packet(); pts_perf_clock_buffer() at each buffer that
 * does not continue the previous one.
 */
struct pts_perf_clock {
	uint64_t timestamp;     /* current TSC (0: none yet) */
	uint64_t tsc_timestamp; /* of the last TSC packet */
	uint64_t ctc_timestamp; /* TSC at CTC 0 of the last TMA */
	uint64_t ref;           /* pending buffer reference, 0 when used */
	uint64_t buf_ref;       /* the reference of the buffer being read */
	uint64_t ctc_delta;
	uint64_t tsc_ctc_n, tsc_ctc_d, tsc_ctc_mult;
	uint32_t last_mtc, ctc_rem_mask;
	uint8_t mtc_shift, have_tma, fixup_last_mtc;
	/* The last CBR (0: none yet) and the max non-turbo ratio, from the
	 * capture or, as perf takes it, its TSC frequency / 100 MHz. */
	uint8_t cbr;
	uint32_t max_nonturbo;
	/* CYC: the time at the last TSC/MTC right after a CYC or at a CBR
	 * change (0: none yet) and the cycles counted since; TSC ticks per
	 * cycle, measured (@have_cyc_ratio) or max non-turbo / CBR. */
	uint64_t cyc_ref, cycle_cnt;
	double cyc_ratio, cbr_ratio;
	uint8_t have_cyc_ratio;
	/* An MTC right after a CYC was just applied: the caller measures
	 * the ratio ahead (pts_perf_cyc_cal_*) before the next packet. */
	uint8_t cal_due;
	/* The kinds of the last three packets fetched (PADs not counted):
	 * [0] the one being applied, [1] the one before. */
	uint8_t fetched[3];
};

/* Sets up @c with the PT event's MTC period, the TSC:CTC ratio and the
 * max non-turbo ratio. */
void pts_perf_clock_init(struct pts_perf_clock *c, const struct pts_perf *perf);
/* A buffer starts. Its reference (the TSC when perf wrote it out) bounds
 * the times in it: a TSC packet behind the time is a wrap of the 56-bit
 * counter only when the wrapped value stays below it. When the buffer does
 * not continue the previous one (or is the first), the reference also
 * extends the next TSC packet. */
void pts_perf_clock_buffer(struct pts_perf_clock *c, uint64_t reference,
			   int consecutive);
/* perf's decoder fetched a packet of @kind (perf's last_packet_type: a TSC
 * or MTC right after a CYC restarts the cycle count); PADs do not count.
 * pts_perf_clock_unfetch() takes the last one back (a packet put back
 * unread). */
void pts_perf_clock_fetched(struct pts_perf_clock *c, int kind);
void pts_perf_clock_unfetch(struct pts_perf_clock *c);
/* Applies one packet (TSC, TMA, MTC, CYC and CBR change the clock).
 * Returns 1 when perf restarts its count of instructions since the time
 * moved (a TSC with a time to extend it, an MTC after a TMA, a CYC with a
 * ratio), else 0. */
int pts_perf_clock_packet(struct pts_perf_clock *c,
			  const struct pts_packet *pkt);

/* perf's measurement of TSC ticks per cycle from an MTC right after a CYC
 * (c->cal_due): the packets after it, in its buffer, go to
 * pts_perf_cyc_cal_step() until it returns 1, which then set the clock's
 * ratio if the measurement held (at most 1.25 times the CBR's). A
 * measurement cut short (the buffer ends, a bad packet) sets nothing. */
struct pts_perf_cyc_cal {
	uint64_t cycle_cnt, ctc_timestamp, ctc_delta, timestamp;
	uint32_t last_mtc;
	uint8_t have_tma, fixup_last_mtc, cbr, last_kind;
	double cbr_ratio;
};
void pts_perf_cyc_cal_start(struct pts_perf_clock *c,
			    struct pts_perf_cyc_cal *cal);
int pts_perf_cyc_cal_step(struct pts_perf_clock *c,
			  struct pts_perf_cyc_cal *cal,
			  const struct pts_packet *pkt);

/* ------------------------------------------------------------------------ */
/* Writing: a minimal perf.data around one raw PT stream.                   */
/*
 * What Linux perf needs to decode a stream with `perf script --itrace=i0ns`
 * (docs/perf-data-facts.md section 7): the file header, one PT attr with
 * sample_id_all and TIME, AUXTRACE_INFO, COMM, MMAP per code file and one
 * AUXTRACE record holding the bytes, written straight from the caller's
 * buffer (never copied). One per-thread queue (tid @tid, cpu @cpu or -1),
 * or one per-cpu queue running several processes (@tasks, @switches).
 */
struct pts_perf_write_map {
	uint64_t addr, len, pgoff; /* file bytes [pgoff, pgoff+len) at addr */
	const char *filename;
	uint8_t kernel;            /* cpumode kernel (else user) */
};

/* Another process on the queue's CPU (per-cpu captures): its COMM and
 * MMAPs, under its own pid. */
struct pts_perf_write_task {
	uint32_t pid, tid;
	const char *comm;      /* NULL: no COMM record */
	const struct pts_perf_write_map *maps;
	uint32_t nr_maps;
};

/* A context switch on the queue's CPU at perf time @time: written as the
 * SWITCH_CPU_WIDE pair the kernel records (OUT of prev naming next, IN of
 * next naming prev). */
struct pts_perf_write_switch {
	uint64_t time;
	uint32_t prev_pid, prev_tid, next_pid, next_tid;
};

/* Another CPU's trace (per-cpu captures): a queue of its own, in which
 * process @pid/@tid runs from perf time @itrace_time (ITRACE_START). */
struct pts_perf_write_queue {
	int32_t cpu;
	uint32_t pid, tid;
	uint64_t itrace_time;
	const void *pt;
	size_t pt_size;
	uint64_t reference;
};

struct pts_perf_write_opts {
	const void *pt;        /* the trace */
	size_t pt_size;
	uint32_t pid, tid;
	int32_t cpu;           /* -1: unknown */
	const char *comm;      /* NULL: no COMM record */
	const struct pts_perf_write_map *maps;
	uint32_t nr_maps;
	uint64_t rtit_ctl;     /* as traced: attr.config and exclude_* */
	uint32_t pmu_type;     /* 0: 8 */
	/* Time: perf ns = time_zero + TSC * time_mult >> time_shift; timed
	 * decoding needs CTL.TSCEn too. time_mult 0: timeless. */
	uint64_t time_zero;
	uint32_t time_mult, time_shift;
	uint32_t tsc_ctc_n, tsc_ctc_d; /* CPUID 0x15 EBX, EAX */
	uint32_t max_nonturbo_ratio;
	uint64_t reference;    /* AUXTRACE reference TSC (the last TSC) */
	/* AUX records before the data (0, 1 or more), e.g. one with
	 * PTS_PERF_AUX_TRUNCATED; NULL: one AUX announcing all bytes. */
	const struct pts_perf_aux *aux;
	uint32_t nr_aux;
	/* Per-cpu capture of several processes (needs @cpu >= 0): more
	 * processes, and the context switches between them. With switches
	 * the queue is a per-cpu one (AUXTRACE tid -1, cpu-wide switch
	 * sideband, ITRACE_START of @pid/@tid at perf time @itrace_time). */
	const struct pts_perf_write_task *tasks;
	uint32_t nr_tasks;
	const struct pts_perf_write_switch *switches;
	uint32_t nr_switches;
	uint64_t itrace_time;
	/* More per-cpu queues (idx 1, 2, ...; needs @switches). */
	const struct pts_perf_write_queue *queues;
	uint32_t nr_queues;
	/* `perf record -z`: 1 writes the sideband (COMM, MMAP, AUX, switch
	 * records) into zstd COMPRESSED records as perf record does, with
	 * the HEADER_COMPRESSED feature; AUXTRACE_INFO and AUXTRACE (and
	 * their data) stay outside. 2 puts the AUXTRACE records and their
	 * data inside too: perf never writes that (nor can perf 6.1 read
	 * the data from there), ptscope reads it. 0: no compression. */
	uint8_t compress;
	int compress_level;    /* zstd level; 0: 1 (perf's default) */
};

/* Writes the file @path (a regular file: the header is rewritten once the
 * data size is known).
 * Returns 0, -PTS_ERR_INVALID (NULL arguments), -PTS_ERR_IO (errno kept),
 * -PTS_ERR_UNSUPPORTED (@compress without libzstd), -PTS_ERR_NOMEM. */
int pts_perf_write(const char *path, const struct pts_perf_write_opts *o);

#ifdef __cplusplus
}
#endif

#endif /* PTSCOPE_PERFDATA_H */
