/* The record queue between the model and its caller, and the running
 * summary every queued record adds to. */
#include "windows_internal.h"

#include <string.h>

/* Reserves the next record. The caller drains after each packet and a
 * packet queues at most a handful, so a full queue is a caller bug: the
 * record is written to a scratch slot and the overrun reported. */
struct pts_win_record *pts_win_push(struct pts_win_model *m, uint8_t type)
{
	struct pts_win_record *rec;

	if (m->q_len == PTS_WIN_QUEUE) {
		m->overrun = 1;
		rec = &m->scratch;
	} else {
		rec = &m->queue[(m->q_head + m->q_len) % PTS_WIN_QUEUE];
		m->q_len++;
	}
	PTS_WIN_ZERO(rec);
	rec->type = type;
	rec->enclave = -1;
	return rec;
}

void pts_win_point_at(struct pts_win_model *m, struct pts_win_point *p,
		      uint64_t offset, uint8_t edge, int has_ip, uint64_t ip)
{
	p->offset = offset;
	p->edge = edge;
	p->has_ip = (uint8_t)(has_ip != 0);
	p->ip = has_ip ? ip : 0;
	if (m->hold) {
		p->has_time = m->held_has_time;
		p->tsc = m->held_tsc;
	} else {
		p->has_time = (uint8_t)pts_time_now(&m->time, &p->tsc);
	}
	if (!p->has_time) {
		p->tsc = 0;
		return;
	}
	if (!m->sum.has_time) {
		m->sum.has_time = 1;
		m->sum.first_tsc = p->tsc;
	}
	m->sum.last_tsc = p->tsc;
}

static uint64_t span_ticks(const struct pts_win_record *rec)
{
	if (!rec->begin.has_time || !rec->end.has_time ||
	    rec->end.tsc < rec->begin.tsc)
		return 0;
	return rec->end.tsc - rec->begin.tsc;
}

static uint64_t span_bytes(const struct pts_win_record *rec)
{
	return rec->end.offset > rec->begin.offset
		       ? rec->end.offset - rec->begin.offset
		       : 0;
}

/* Tick sums saturate: a trace whose TSC jumps (a wrap assumed at each
 * TSC that goes back) can add up to more than 64 bits. */
static void add_ticks(uint64_t *sum, uint64_t ticks)
{
	*sum = *sum + ticks < *sum ? UINT64_MAX : *sum + ticks;
}

/* Adds a finished record to the summary. */
static void account(struct pts_win_model *m, const struct pts_win_record *rec)
{
	struct pts_win_summary *s = &m->sum;

	s->backwards += rec->type != PTS_REC_VIOLATION &&
			rec->begin.has_time && rec->end.has_time &&
			rec->end.tsc < rec->begin.tsc;
	switch (rec->type) {
	case PTS_REC_WINDOW:
		s->windows++;
		s->window_bytes += span_bytes(rec);
		add_ticks(&s->window_ticks, span_ticks(rec));
		break;
	case PTS_REC_GAP:
		s->gaps[rec->cause]++;
		s->gap_bytes[rec->cause] += span_bytes(rec);
		add_ticks(&s->gap_ticks[rec->cause], span_ticks(rec));
		if (rec->cause != PTS_GAP_ENCLAVE)
			break;
		s->eenter += rec->entry == PTS_ENCL_EENTER;
		s->eresume += rec->entry == PTS_ENCL_ERESUME;
		s->eexit += rec->exit == PTS_ENCL_EEXIT;
		s->aex += rec->exit == PTS_ENCL_AEX;
		break;
	default:
		s->violations[rec->rule]++;
		break;
	}
}

/* Queues the open window, ended at @end. */
void pts_win_emit_window(struct pts_win_model *m,
			 const struct pts_win_point *end)
{
	struct pts_win_record *rec = pts_win_push(m, PTS_REC_WINDOW);

	rec->begin = m->win.begin;
	rec->end = *end;
	rec->packets = m->win.packets;
	rec->tnt_bits = m->win.tnt_bits;
	rec->tips = m->win.tips;
}

int pts_win_next(struct pts_win_model *m, struct pts_win_record *rec)
{
	if (!m || !rec)
		return -PTS_ERR_INVALID;
	if (!m->q_len)
		return 0;
	*rec = m->queue[m->q_head];
	m->q_head = (m->q_head + 1) % PTS_WIN_QUEUE;
	m->q_len--;
	account(m, rec);
	return 1;
}

int pts_win_summary(const struct pts_win_model *m, struct pts_win_summary *sum)
{
	if (!m || !sum)
		return -PTS_ERR_INVALID;
	*sum = m->sum;
	sum->mtc_unrated = m->time.mtc_unrated;
	return 0;
}
