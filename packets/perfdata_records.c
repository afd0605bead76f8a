/* perf.data records: framing, the sample_id trailer, and decoding a record's
 * body into the plain structs of perfdata.h. Every field is read with a
 * bounds check against the record's own size first. */
#include "perfdata_internal.h"

const char *pts_perf_record_name(uint32_t type)
{
	switch (type) {
#define PTS_PERF_REC_NAME_(name, num)                                          \
	case num:                                                              \
		return #name;
		PTS_PERF_RECORDS(PTS_PERF_REC_NAME_)
#undef PTS_PERF_REC_NAME_
	default:
		return "UNKNOWN";
	}
}

int pts_perf_frame(const struct pts_perf *perf, uint64_t pos, uint64_t *len,
		   struct pts_perf_error *err)
{
	return pts_perf_frame_in(perf, pos, perf->sum.data_end, len, err);
}

int pts_perf_frame_in(const struct pts_perf *perf, uint64_t pos, uint64_t end,
		      uint64_t *len, struct pts_perf_error *err)
{
	/* Inside the decompressed stream, positions are told relative to
	 * it, and a cut record means bad compressed data, not a short file. */
	int inner = pos >= perf->size;
	uint64_t shown_end = inner ? end - perf->size : end;
	const char *cut = inner ? "COMPRESSED data cut or corrupt"
				: "file truncated";
	const char *where = inner ? "decompressed data" : "data";
	if (pos > end || end - pos < PERF_EVENT_HEADER_SIZE)
		return pts_perf_fail(err, -PTS_ERR_TRUNCATED, pos, -1,
				     "record header cut by the end of the %s "
				     "(%llu bytes left): %s",
				     where, (unsigned long long)(end - pos), cut);
	const uint8_t *h = pts_perf_at(perf, pos);
	uint32_t type = pts_rd32(h);
	uint16_t size = pts_rd16(h + 6);
	if (size < PERF_EVENT_HEADER_SIZE)
		return pts_perf_fail(err, -PTS_ERR_BAD_FORMAT, pos,
				     (int32_t)(type & 0x7fffffff),
				     "header.size %u is smaller than the header: "
				     "%s corrupt",
				     size, inner ? "COMPRESSED data" : "file");
	if (size > end - pos)
		return pts_perf_fail(err, -PTS_ERR_TRUNCATED, pos,
				     (int32_t)(type & 0x7fffffff),
				     "record of %u bytes runs past the end of "
				     "the %s (0x%llx): %s",
				     size, where, (unsigned long long)shown_end,
				     cut);
	uint64_t extra = 0;
	if (type == PTS_PERF_RECORD_AUXTRACE) {
		/* The PT bytes follow the fixed 48-byte record, outside
		 * header.size. */
		if (size < PERF_AUXTRACE_RECORD_SIZE)
			return pts_perf_fail(err, -PTS_ERR_BAD_FORMAT, pos,
					     (int32_t)type,
					     "header.size %u, expected %d",
					     size, PERF_AUXTRACE_RECORD_SIZE);
		extra = pts_rd64(h + 8);
	} else if (type == PTS_PERF_RECORD_HEADER_TRACING_DATA) {
		/* Pipe mode: the tracing data follows the record too. */
		if (size < 12)
			return pts_perf_fail(err, -PTS_ERR_BAD_FORMAT, pos,
					     (int32_t)type,
					     "header.size %u, expected >= 12",
					     size);
		extra = pts_rd32(h + 8);
	}
	/* past any AUX buffer perf can map: the size field is damaged, not
	 * the file cut */
	if (extra >> 40 && extra > end - pos - size)
		return pts_perf_fail(err, -PTS_ERR_BAD_FORMAT, pos,
				     (int32_t)type,
				     "payload size %llu is corrupt (over 1T)",
				     (unsigned long long)extra);
	if (extra > end - pos - size)
		return pts_perf_fail(err, -PTS_ERR_TRUNCATED, pos, (int32_t)type,
				     "payload of %llu bytes after the record "
				     "runs past the end of the %s (0x%llx): %s",
				     (unsigned long long)extra, where,
				     (unsigned long long)shown_end, cut);
	*len = size + extra;
	return 0;
}

/* Bytes of the sample_id trailer for @sample_type. */
static size_t trailer_size(uint64_t sample_type)
{
	static const uint64_t bits[] = {
		PTS_PERF_SAMPLE_TID, PTS_PERF_SAMPLE_TIME,
		PTS_PERF_SAMPLE_ID, PTS_PERF_SAMPLE_STREAM_ID,
		PTS_PERF_SAMPLE_CPU, PTS_PERF_SAMPLE_IDENTIFIER};
	size_t n = 0;
	for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
		n += (sample_type & bits[i]) ? 8 : 0;
	return n;
}

/* The attr a kernel record belongs to. The IDENTIFIER field sits at a
 * fixed place (first u64 of a SAMPLE, last of a trailer) exactly so that
 * readers can find it before knowing the layout; without it every attr
 * must share one layout and the first one stands for all (perf's rule). */
static int32_t attr_for(const struct pts_perf *perf, uint32_t type,
			const uint8_t *body, size_t n)
{
	if (!perf->nr_attrs)
		return -1;
	const struct pts_perf_attr *a0 = &perf->attrs[0];
	if (!(a0->sample_type & PTS_PERF_SAMPLE_IDENTIFIER))
		return 0;
	uint64_t id;
	if (type == PTS_PERF_RECORD_SAMPLE && n >= 8)
		id = pts_rd64(body);
	else if (type != PTS_PERF_RECORD_SAMPLE && a0->sample_id_all && n >= 8)
		id = pts_rd64(body + n - 8);
	else
		return perf->mixed_sample_types ? -1 : 0;
	const struct pts_perf_attr *a = pts_perf_attr_by_id(perf, id);
	if (a)
		return (int32_t)(a - perf->attrs);
	return perf->mixed_sample_types ? -1 : 0;
}

/* Walks the fields of @sample_type in record order (sample_id trailer or
 * the head of a SAMPLE). Returns bytes consumed or -1 when @n is short. */
static int read_id_fields(uint64_t st, int is_sample, const uint8_t *p,
			  size_t n, struct pts_perf_sample_id *sid,
			  struct pts_perf_sample *smp)
{
	size_t pos = 0;
#define NEED_(k)                                                               \
	do {                                                                   \
		if (n - pos < (k))                                             \
			return -1;                                             \
	} while (0)
	if (is_sample && (st & PTS_PERF_SAMPLE_IDENTIFIER)) {
		NEED_(8);
		sid->id = pts_rd64(p + pos);
		pos += 8;
		sid->have |= PTS_PERF_SAMPLE_ID;
	}
	if (is_sample && (st & PTS_PERF_SAMPLE_IP)) {
		NEED_(8);
		smp->ip = pts_rd64(p + pos);
		pos += 8;
	}
	if (st & PTS_PERF_SAMPLE_TID) {
		NEED_(8);
		sid->pid = pts_rd32(p + pos);
		sid->tid = pts_rd32(p + pos + 4);
		pos += 8;
		sid->have |= PTS_PERF_SAMPLE_TID;
	}
	if (st & PTS_PERF_SAMPLE_TIME) {
		NEED_(8);
		sid->time = pts_rd64(p + pos);
		pos += 8;
		sid->have |= PTS_PERF_SAMPLE_TIME;
	}
	if (is_sample && (st & PTS_PERF_SAMPLE_ADDR)) {
		NEED_(8);
		smp->addr = pts_rd64(p + pos);
		pos += 8;
	}
	if (st & PTS_PERF_SAMPLE_ID) {
		NEED_(8);
		sid->id = pts_rd64(p + pos);
		pos += 8;
		sid->have |= PTS_PERF_SAMPLE_ID;
	}
	if (st & PTS_PERF_SAMPLE_STREAM_ID) {
		NEED_(8);
		sid->stream_id = pts_rd64(p + pos);
		pos += 8;
		sid->have |= PTS_PERF_SAMPLE_STREAM_ID;
	}
	if (st & PTS_PERF_SAMPLE_CPU) {
		NEED_(8);
		sid->cpu = pts_rd32(p + pos);
		pos += 8;
		sid->have |= PTS_PERF_SAMPLE_CPU;
	}
	if (is_sample && (st & PTS_PERF_SAMPLE_PERIOD)) {
		NEED_(8);
		smp->period = pts_rd64(p + pos);
		pos += 8;
	}
	if (!is_sample && (st & PTS_PERF_SAMPLE_IDENTIFIER)) {
		NEED_(8);
		sid->id = pts_rd64(p + pos);
		pos += 8;
		sid->have |= PTS_PERF_SAMPLE_ID;
	}
#undef NEED_
	return (int)pos;
}

static void decode_mmap(struct pts_perf_record *rec, const uint8_t *b,
			size_t n)
{
	struct pts_perf_mmap *m = &rec->u.mmap;
	size_t name_at = 32;
	m->pid = pts_rd32(b);
	m->tid = pts_rd32(b + 4);
	m->addr = pts_rd64(b + 8);
	m->len = pts_rd64(b + 16);
	m->pgoff = pts_rd64(b + 24);
	m->cpumode = rec->misc & PERF_MISC_CPUMODE_MASK;
	if (rec->type == PTS_PERF_RECORD_MMAP2) {
		m->is_mmap2 = 1;
		if (rec->misc & PERF_MISC_MMAP_BUILD_ID) {
			m->build_id_size = b[32] <= 20 ? b[32] : 20;
			memcpy(m->build_id, b + 36, 20);
		} else {
			m->maj = pts_rd32(b + 32);
			m->min = pts_rd32(b + 36);
			m->ino = pts_rd64(b + 40);
			m->ino_generation = pts_rd64(b + 48);
		}
		m->prot = pts_rd32(b + 56);
		m->flags = pts_rd32(b + 60);
		name_at = 64;
	}
	m->filename = pts_perf_str_at(b + name_at, n - name_at);
}

/* Minimum body bytes (before the trailer) of the records decoded here. */
static size_t min_body(uint32_t type)
{
	switch (type) {
	case PTS_PERF_RECORD_MMAP: return 32;
	case PTS_PERF_RECORD_MMAP2: return 64;
	case PTS_PERF_RECORD_COMM: return 8;
	case PTS_PERF_RECORD_FORK:
	case PTS_PERF_RECORD_EXIT: return 24;
	case PTS_PERF_RECORD_AUX: return 24;
	case PTS_PERF_RECORD_ITRACE_START: return 8;
	case PTS_PERF_RECORD_SWITCH_CPU_WIDE: return 8;
	case PTS_PERF_RECORD_LOST: return 16;
	case PTS_PERF_RECORD_LOST_SAMPLES: return 8;
	case PTS_PERF_RECORD_TIME_CONV: return 24;
	case PTS_PERF_RECORD_AUXTRACE: return 40;
	case PTS_PERF_RECORD_AUXTRACE_INFO: return 8;
	case PTS_PERF_RECORD_HEADER_FEATURE: return 8;
	default: return 0;
	}
}

static void decode_body(const struct pts_perf *perf,
			struct pts_perf_record *rec, const uint8_t *b, size_t n)
{
	switch (rec->type) {
	case PTS_PERF_RECORD_MMAP:
	case PTS_PERF_RECORD_MMAP2:
		decode_mmap(rec, b, n);
		break;
	case PTS_PERF_RECORD_COMM:
		rec->u.comm.pid = pts_rd32(b);
		rec->u.comm.tid = pts_rd32(b + 4);
		rec->u.comm.exec = (rec->misc & PERF_MISC_COMM_EXEC) != 0;
		rec->u.comm.comm = pts_perf_str_at(b + 8, n - 8);
		break;
	case PTS_PERF_RECORD_FORK:
	case PTS_PERF_RECORD_EXIT:
		rec->u.task.pid = pts_rd32(b);
		rec->u.task.ppid = pts_rd32(b + 4);
		rec->u.task.tid = pts_rd32(b + 8);
		rec->u.task.ptid = pts_rd32(b + 12);
		rec->u.task.time = pts_rd64(b + 16);
		break;
	case PTS_PERF_RECORD_AUX:
		rec->u.aux.aux_offset = pts_rd64(b);
		rec->u.aux.aux_size = pts_rd64(b + 8);
		rec->u.aux.flags = pts_rd64(b + 16);
		break;
	case PTS_PERF_RECORD_ITRACE_START:
		rec->u.itrace_start.pid = pts_rd32(b);
		rec->u.itrace_start.tid = pts_rd32(b + 4);
		break;
	case PTS_PERF_RECORD_SWITCH_CPU_WIDE:
		rec->u.sw.cpu_wide = 1;
		rec->u.sw.next_prev_pid = pts_rd32(b);
		rec->u.sw.next_prev_tid = pts_rd32(b + 4);
		__attribute__((fallthrough)); /* gcc and clang both check */
	case PTS_PERF_RECORD_SWITCH:
		rec->u.sw.out = (rec->misc & PERF_MISC_SWITCH_OUT) != 0;
		rec->u.sw.preempt = (rec->misc & PERF_MISC_SWITCH_OUT_PREEMPT) != 0;
		break;
	case PTS_PERF_RECORD_LOST:
		rec->u.lost.id = pts_rd64(b);
		rec->u.lost.lost = pts_rd64(b + 8);
		break;
	case PTS_PERF_RECORD_LOST_SAMPLES:
		rec->u.lost.lost = pts_rd64(b);
		break;
	case PTS_PERF_RECORD_TIME_CONV: {
		struct pts_perf_time_conv_rec *t = &rec->u.time_conv;
		t->time_shift = pts_rd64(b);
		t->time_mult = pts_rd64(b + 8);
		t->time_zero = pts_rd64(b + 16);
		if (n >= 42) { /* perf >= 5.10 */
			t->extended = 1;
			t->time_cycles = pts_rd64(b + 24);
			t->time_mask = pts_rd64(b + 32);
			t->cap_user_time_zero = b[40];
			t->cap_user_time_short = b[41];
		}
		break;
	}
	case PTS_PERF_RECORD_AUXTRACE: {
		struct pts_perf_buffer *a = &rec->u.auxtrace;
		a->record_offset = rec->offset;
		a->data_offset = rec->offset + rec->size;
		a->size = pts_rd64(b);
		a->use_size = a->size;
		a->aux_offset = pts_rd64(b + 8);
		a->reference = pts_rd64(b + 16);
		a->idx = pts_rd32(b + 24);
		a->tid = (int32_t)pts_rd32(b + 28);
		a->cpu = (int32_t)pts_rd32(b + 32);
		a->data = pts_perf_at(perf, a->data_offset);
		break;
	}
	case PTS_PERF_RECORD_HEADER_FEATURE:
		rec->u.feature = pts_rd64(b);
		break;
	default:
		break;
	}
}

int pts_perf_decode(const struct pts_perf *perf, uint64_t pos,
		    struct pts_perf_record *rec, struct pts_perf_error *err)
{
	memset(rec, 0, sizeof(*rec));
	const uint8_t *h = pts_perf_at(perf, pos);
	rec->offset = pos;
	rec->file_offset = pos;
	if (pos >= perf->size) {
		const struct pts_perf_zrec *z = pts_perf_zrec_holding(perf, pos);
		rec->compressed = 1;
		rec->zoffset = pos - perf->size;
		rec->file_offset = z ? z->file_offset : 0;
	}
	rec->type = pts_rd32(h);
	rec->misc = pts_rd16(h + 4);
	rec->size = pts_rd16(h + 6);
	rec->body = h + PERF_EVENT_HEADER_SIZE;
	rec->body_size = rec->size - PERF_EVENT_HEADER_SIZE;
	rec->attr = -1;
	int32_t rtype = (int32_t)(rec->type & 0x7fffffff);
	size_t avail = rec->body_size;

	/* The walk steps into COMPRESSED records; one inside another is
	 * not something perf writes. */
	if (rec->type == PTS_PERF_RECORD_COMPRESSED ||
	    rec->type == PTS_PERF_RECORD_COMPRESSED2)
		return pts_perf_fail(err, -PTS_ERR_BAD_FORMAT, pos, rtype,
				     "compressed record inside compressed "
				     "data");
	/* Kernel records (< 64) carry the sample_id trailer; perf's own
	 * records never do. */
	if (rec->type < 64) {
		rec->attr = attr_for(perf, rec->type, rec->body, avail);
		const struct pts_perf_attr *a =
			rec->attr >= 0 ? &perf->attrs[rec->attr] : NULL;
		if (a && rec->type == PTS_PERF_RECORD_SAMPLE) {
			if (read_id_fields(a->sample_type, 1, rec->body, avail,
					   &rec->sid, &rec->u.sample) < 0)
				return pts_perf_fail(
					err, -PTS_ERR_BAD_FORMAT, pos, rtype,
					"body of %zu bytes too short for "
					"sample_type 0x%llx",
					avail,
					(unsigned long long)a->sample_type);
			struct pts_perf_sample *s = &rec->u.sample;
			s->pid = rec->sid.pid;
			s->tid = rec->sid.tid;
			s->time = rec->sid.time;
			s->id = rec->sid.id;
			s->stream_id = rec->sid.stream_id;
			s->cpu = rec->sid.cpu;
			return 1;
		}
		if (a && a->sample_id_all) {
			size_t t = trailer_size(a->sample_type);
			struct pts_perf_sample dummy;
			if (t > avail)
				return pts_perf_fail(
					err, -PTS_ERR_BAD_FORMAT, pos, rtype,
					"body of %zu bytes too short for its "
					"sample_id trailer (%zu bytes)",
					avail, t);
			avail -= t;
			read_id_fields(a->sample_type, 0, rec->body + avail, t,
				       &rec->sid, &dummy);
		}
	}
	size_t need = min_body(rec->type);
	if (avail < need)
		return pts_perf_fail(err, -PTS_ERR_BAD_FORMAT, pos, rtype,
				     "body of %zu bytes too short for the "
				     "record's fields (%zu bytes)",
				     avail, need);
	decode_body(perf, rec, rec->body, avail);
	return 1;
}
