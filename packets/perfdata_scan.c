/* perf.data: the one pass over all records at open time. It reads record
 * headers and sideband only (AUXTRACE payloads are stepped over), and builds
 * what readers look up later: attrs and features of a pipe, the AUXTRACE
 * queues, thread names and which thread ran on each CPU. */
#include "perfdata_internal.h"

#include <stdlib.h>

static int add_buffer(struct pts_perf *perf, const struct pts_perf_buffer *b)
{
	if (pts_perf_grow((void **)&perf->bufs, &perf->cap_bufs,
			  perf->nr_bufs + 1, sizeof(*perf->bufs)))
		return -PTS_ERR_NOMEM;
	perf->bufs[perf->nr_bufs] = *b;
	/* Found in file order: inside COMPRESSED records offsets do not
	 * tell it. */
	perf->bufs[perf->nr_bufs].order = perf->nr_bufs;
	perf->nr_bufs++;
	return 0;
}

static int add_switch(struct pts_perf *perf, const struct pts_perf_record *rec,
		      uint32_t pid, uint32_t tid)
{
	/* Without CPU and TIME in the trailer a switch cannot be placed. */
	uint32_t need = PTS_PERF_SAMPLE_CPU | PTS_PERF_SAMPLE_TIME;
	if ((rec->sid.have & need) != need)
		return 0;
	if (pts_perf_grow((void **)&perf->switches, &perf->cap_switches,
			  perf->nr_switches + 1, sizeof(*perf->switches)))
		return -PTS_ERR_NOMEM;
	struct pts_perf_switch_note *s = &perf->switches[perf->nr_switches];
	s->cpu = (int32_t)rec->sid.cpu;
	s->pid = (int32_t)pid;
	s->tid = (int32_t)tid;
	s->time = rec->sid.time;
	s->seq = perf->nr_switches++;
	return 0;
}

static int add_aux(struct pts_perf *perf, const struct pts_perf_record *rec)
{
	struct pts_perf_summary *s = &perf->sum;
	uint64_t f = rec->u.aux.flags;
	s->nr_aux++;
	s->aux_truncated += (f & PTS_PERF_AUX_TRUNCATED) != 0;
	s->aux_overwrite += (f & PTS_PERF_AUX_OVERWRITE) != 0;
	s->aux_partial += (f & PTS_PERF_AUX_PARTIAL) != 0;
	s->aux_collision += (f & PTS_PERF_AUX_COLLISION) != 0;
	if (pts_perf_grow((void **)&perf->aux, &perf->cap_aux, perf->nr_aux + 1,
			  sizeof(*perf->aux)))
		return -PTS_ERR_NOMEM;
	struct pts_perf_aux_note *a = &perf->aux[perf->nr_aux++];
	a->cpu = (rec->sid.have & PTS_PERF_SAMPLE_CPU) ? (int32_t)rec->sid.cpu
						       : -1;
	a->tid = (rec->sid.have & PTS_PERF_SAMPLE_TID) ? (int32_t)rec->sid.tid
						       : -1;
	a->offset = rec->u.aux.aux_offset;
	a->size = rec->u.aux.aux_size;
	a->flags = f;
	return 0;
}

static int add_comm(struct pts_perf *perf, const struct pts_perf_record *rec)
{
	if (pts_perf_grow((void **)&perf->comms, &perf->cap_comms,
			  perf->nr_comms + 1, sizeof(*perf->comms)))
		return -PTS_ERR_NOMEM;
	perf->comms[perf->nr_comms].tid = (int32_t)rec->u.comm.tid;
	perf->comms[perf->nr_comms++].comm = rec->u.comm.comm;
	return 0;
}

/* What a record adds to the tables; called for every well-formed record. */
static int note_record(struct pts_perf *perf, const struct pts_perf_record *rec)
{
	struct pts_perf_summary *s = &perf->sum;
	switch (rec->type) {
	case PTS_PERF_RECORD_HEADER_ATTR: {
		/* Pipe mode: perf_event_attr (attr.size bytes) + ids. */
		uint32_t asz = rec->body_size >= 8 ? pts_rd32(rec->body + 4) : 0;
		if (asz == 0)
			asz = PERF_ATTR_SIZE_VER0;
		if (asz > rec->body_size)
			return -PTS_ERR_BAD_FORMAT;
		int rc = pts_perf_add_attr(perf, rec->body, asz,
					   rec->body + asz,
					   (rec->body_size - asz) / 8,
					   rec->offset, (int32_t)rec->type,
					   NULL);
		if (rc == 0)
			pts_perf_attrs_done(perf);
		return rc;
	}
	case PTS_PERF_RECORD_HEADER_FEATURE: {
		uint64_t feat = rec->u.feature;
		if (feat < 256)
			s->features[feat / 64] |= 1ull << (feat % 64);
		int rc = pts_perf_parse_feature(perf, feat, rec->body + 8,
						rec->body_size - 8,
						rec->offset + 16);
		return rc == -PTS_ERR_NOMEM ? rc : 0;
	}
	case PTS_PERF_RECORD_HEADER_BUILD_ID: {
		int rc = pts_perf_add_build_id(perf, pts_perf_at(perf, rec->offset),
					       rec->size);
		return rc == -PTS_ERR_NOMEM ? rc : 0;
	}
	case PTS_PERF_RECORD_AUXTRACE_INFO:
		if (!perf->auxtrace_info) {
			perf->auxtrace_info = rec->body;
			perf->auxtrace_info_size = rec->body_size;
		}
		return 0;
	case PTS_PERF_RECORD_TIME_CONV:
		perf->have_time_conv = 1;
		perf->time_conv = rec->u.time_conv;
		return 0;
	case PTS_PERF_RECORD_AUXTRACE:
		return add_buffer(perf, &rec->u.auxtrace);
	case PTS_PERF_RECORD_AUX:
		return add_aux(perf, rec);
	case PTS_PERF_RECORD_LOST:
		s->nr_lost_events += rec->u.lost.lost;
		return 0;
	case PTS_PERF_RECORD_LOST_SAMPLES:
		s->nr_lost_samples += rec->u.lost.lost;
		return 0;
	case PTS_PERF_RECORD_COMM:
		return add_comm(perf, rec);
	case PTS_PERF_RECORD_ITRACE_START:
		return add_switch(perf, rec, rec->u.itrace_start.pid,
				  rec->u.itrace_start.tid);
	case PTS_PERF_RECORD_SWITCH_CPU_WIDE:
		/* OUT names the next task; IN comes from the task now
		 * running (its trailer). */
		if (rec->u.sw.out)
			return add_switch(perf, rec, rec->u.sw.next_prev_pid,
					  rec->u.sw.next_prev_tid);
		return add_switch(perf, rec, rec->sid.pid, rec->sid.tid);
	case PTS_PERF_RECORD_SWITCH:
		/* Per-thread switches: only IN tells who runs. */
		if (!rec->u.sw.out)
			return add_switch(perf, rec, rec->sid.pid, rec->sid.tid);
		return 0;
	default:
		return 0;
	}
}

/* ------------------------------------------------------------------------ */
/* Queues.                                                                   */

static int cmp_buffer(const void *a, const void *b)
{
	const struct pts_perf_buffer *x = a, *y = b;
	if (x->idx != y->idx)
		return x->idx < y->idx ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int cmp_switch(const void *a, const void *b)
{
	const struct pts_perf_switch_note *x = a, *y = b;
	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* How buffer @b continues @p of the same queue. perf pads every copy-out
 * to 8 bytes and counts the padding in its size, so the next buffer starts
 * up to 7 bytes before p's end; trimming that padding lets a packet cut by
 * the copy-out be joined. A later start is lost data; an earlier one
 * (outside snapshot mode) repeats data, trimmed from the front of @b by the
 * AUX offsets. */
static void link_buffers(struct pts_perf_buffer *p, struct pts_perf_buffer *b)
{
	if (p->size > UINT64_MAX - p->aux_offset)
		return; /* corrupt offsets: treat as a gap */
	uint64_t p_end = p->aux_offset + p->size;
	if (b->aux_offset > p_end)
		return; /* gap: data lost, resync */
	uint64_t back = p_end - b->aux_offset;
	uint64_t zeros = 0;
	while (zeros < 7 && zeros < p->use_size &&
	       p->data[p->use_size - 1 - zeros] == 0)
		zeros++;
	if (back <= zeros) {
		p->use_size -= back;
		b->consecutive = 1;
		return;
	}
	/* Overlap beyond padding: the front of @b repeats the end of @p. */
	uint64_t real_end = p->aux_offset + p->use_size - zeros;
	if (real_end <= b->aux_offset || real_end - b->aux_offset >= b->use_size)
		return;
	p->use_size -= zeros;
	b->skip = real_end - b->aux_offset;
	b->data += b->skip;
	b->use_size -= b->skip;
	b->consecutive = 1;
}

/* Snapshot mode: how @b continues @p, from the trace itself as perf finds
 * it (perfdata_overlap.c); the AUX offsets are not used. */
static void link_snapshot(struct pts_perf_buffer *p, struct pts_perf_buffer *b,
			  int have_tsc)
{
	int consecutive;
	uint64_t trim;
	uint64_t skip = pts_perf_snapshot_overlap(p->data - p->skip, p->size,
						  b->data, b->size, have_tsc,
						  &consecutive, &trim);
	b->skip = skip;
	b->data += skip;
	b->use_size = b->size - skip;
	b->consecutive = consecutive && b->use_size;
	if (b->consecutive && trim <= p->use_size)
		p->use_size -= trim;
}

/* Snapshot mode, and whether the trace has TSC packets (perf's have_tsc:
 * the PT event was recorded with the TSC bit perf says it uses). */
static int snapshot_mode(const struct pts_perf *perf, int *have_tsc)
{
	struct pts_perf_pt_info info;
	*have_tsc = 0;
	if (pts_perf_pt_info(perf, &info) < 0 || !info.snapshot_mode)
		return 0;
	const struct pts_perf_attr *pt = pts_perf_pt_attr(perf);
	*have_tsc = pt && (pt->config & info.tsc_bit) != 0;
	return 1;
}

static int build_queues(struct pts_perf *perf)
{
	int have_tsc;
	int snapshot = snapshot_mode(perf, &have_tsc);
	if (!perf->nr_bufs)
		return 0;
	qsort(perf->bufs, perf->nr_bufs, sizeof(*perf->bufs), cmp_buffer);
	uint32_t nq = 1;
	for (uint32_t i = 1; i < perf->nr_bufs; i++)
		nq += perf->bufs[i].idx != perf->bufs[i - 1].idx;
	perf->queues = calloc(nq, sizeof(*perf->queues));
	if (!perf->queues)
		return -PTS_ERR_NOMEM;
	struct pts_perf_queue *q = NULL;
	for (uint32_t i = 0; i < perf->nr_bufs; i++) {
		struct pts_perf_buffer *b = &perf->bufs[i];
		if (!q || q->idx != b->idx) {
			q = &perf->queues[perf->nr_queues++];
			q->idx = b->idx;
			q->cpu = b->cpu;
			q->tid = b->tid;
			q->first = i;
			q->first_reference = b->reference;
		} else if (snapshot) {
			link_snapshot(b - 1, b, have_tsc);
		} else {
			link_buffers(b - 1, b);
		}
		q->nr_buffers++;
		q->last_reference = b->reference;
	}
	for (uint32_t k = 0; k < perf->nr_queues; k++) {
		q = &perf->queues[k];
		for (uint32_t j = 0; j < q->nr_buffers; j++)
			q->bytes += perf->bufs[q->first + j].use_size;
	}
	/* AUX records name their CPU (per-cpu buffers) or thread. */
	for (uint32_t i = 0; i < perf->nr_aux; i++) {
		const struct pts_perf_aux_note *a = &perf->aux[i];
		for (uint32_t k = 0; k < perf->nr_queues; k++) {
			q = &perf->queues[k];
			if (q->cpu >= 0 ? q->cpu != a->cpu : q->tid != a->tid)
				continue;
			q->nr_aux++;
			q->aux_bytes += a->size;
			q->aux_truncated += (a->flags & PTS_PERF_AUX_TRUNCATED) != 0;
			q->aux_overwrite += (a->flags & PTS_PERF_AUX_OVERWRITE) != 0;
			q->aux_partial += (a->flags & PTS_PERF_AUX_PARTIAL) != 0;
			q->aux_collision += (a->flags & PTS_PERF_AUX_COLLISION) != 0;
			break;
		}
	}
	return 0;
}

int pts_perf_scan(struct pts_perf *perf)
{
	struct pts_perf_summary *s = &perf->sum;
	struct pts_perf_cursor cur;
	struct pts_perf_record rec;
	struct pts_perf_error err;
	pts_perf_cursor_init(perf, &cur);
	for (;;) {
		uint64_t pos, len;
		int step = pts_perf_step(perf, &cur, &pos, &len, &err);
		if (step == 0)
			break;
		if (step < 0) {
			/* A corrupt COMPRESSED payload (found first, while
			 * inflating) is the cause of what fails after it. */
			if (!perf->zdamage)
				perf->damage = err;
			/* Readers stop where we did (inside COMPRESSED data
			 * their walk stops at the same record). */
			if (pos < perf->size)
				s->data_end = pos;
			break;
		}
		s->nr_records++;
		uint32_t type = pts_rd32(pts_perf_at(perf, pos));
		if (type < PTS_PERF_RECORD_MAX)
			s->record_counts[type]++;
		if (pts_perf_decode(perf, pos, &rec, &err) < 0) {
			s->nr_bad_records++;
			continue;
		}
		int rc = note_record(perf, &rec);
		if (rc == -PTS_ERR_NOMEM)
			return rc;
		if (rc < 0)
			s->nr_bad_records++;
	}
	if (perf->nr_switches)
		qsort(perf->switches, perf->nr_switches,
		      sizeof(*perf->switches), cmp_switch);
	return build_queues(perf);
}

void pts_perf_free_tables(struct pts_perf *perf)
{
	for (uint32_t i = 0; i < perf->nr_attrs; i++)
		free((void *)perf->attrs[i].ids);
	free(perf->attrs);
	free(perf->bufs);
	free(perf->queues);
	free(perf->aux);
	free(perf->comms);
	free(perf->switches);
	free(perf->build_ids);
}

/* ------------------------------------------------------------------------ */
/* Lookups.                                                                  */

uint32_t pts_perf_queue_count(const struct pts_perf *perf)
{
	return perf->nr_queues;
}

const struct pts_perf_queue *pts_perf_queue_get(const struct pts_perf *perf,
						uint32_t i)
{
	return i < perf->nr_queues ? &perf->queues[i] : NULL;
}

const struct pts_perf_buffer *pts_perf_queue_buffer(const struct pts_perf *perf,
						    uint32_t i, uint32_t j)
{
	if (i >= perf->nr_queues || j >= perf->queues[i].nr_buffers)
		return NULL;
	return &perf->bufs[perf->queues[i].first + j];
}

struct pts_perf_str pts_perf_comm_of(const struct pts_perf *perf, int32_t tid)
{
	for (uint32_t i = perf->nr_comms; i-- > 0;)
		if (perf->comms[i].tid == tid)
			return perf->comms[i].comm;
	struct pts_perf_str none = {"", 0};
	return none;
}

int pts_perf_thread_ran(const struct pts_perf *perf, int32_t cpu,
			int32_t tid)
{
	for (uint32_t i = 0; i < perf->nr_switches; i++)
		if (perf->switches[i].cpu == cpu &&
		    perf->switches[i].tid == tid)
			return 1;
	return 0;
}

int pts_perf_thread_at(const struct pts_perf *perf, int32_t cpu,
		       uint64_t time, int32_t *pid, int32_t *tid)
{
	/* The last change on @cpu at or before @time (binary search). */
	uint32_t lo = 0, hi = perf->nr_switches;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct pts_perf_switch_note *s = &perf->switches[mid];
		if (s->cpu < cpu || (s->cpu == cpu && s->time <= time))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || perf->switches[lo - 1].cpu != cpu)
		return 0;
	*pid = perf->switches[lo - 1].pid;
	*tid = perf->switches[lo - 1].tid;
	return 1;
}
