/* `ptscope perf` output of several queues in time order: perf_order.h. */
#include "perf_order.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPILL_BUF (256u << 10)
#define COPY_CHUNK 4096

/* A run: the bytes up to @end (from the previous run's end) at @time. */
struct run {
	uint64_t time, end;
};

struct spill {
	FILE *data, *runs; /* the output; its runs, in order */
	struct run next;   /* merge: the run to copy next */
	uint64_t pos;      /* merge: bytes of @data copied */
	int done;
	char label[96];    /* "" for none */
};

struct perf_order {
	struct spill *q;
	uint32_t n, cap;
	struct pts_out saved; /* @pc->out outside a queue */
	uint64_t time;        /* of the run being written */
	int open, failed;
};

struct perf_order *pts_perforder_new(void)
{
	return calloc(1, sizeof(struct perf_order));
}

void pts_perforder_free(struct perf_order *o)
{
	if (!o)
		return;
	for (uint32_t i = 0; i < o->n; i++) {
		if (o->q[i].data)
			fclose(o->q[i].data);
		if (o->q[i].runs)
			fclose(o->q[i].runs);
	}
	free(o->q);
	free(o);
}

int pts_perforder_begin(struct perf_order *o, struct perf_cmd *pc,
			const char *label)
{
	if (pts_perfcmd_grow((void **)&o->q, &o->cap, o->n + 1,
			     sizeof(*o->q)) < 0)
		return -PTS_ERR_NOMEM;
	struct spill *s = &o->q[o->n];
	memset(s, 0, sizeof(*s));
	s->data = tmpfile();
	s->runs = tmpfile();
	snprintf(s->label, sizeof(s->label), "%s", label ? label : "");
	o->n++; /* even half made: free() closes what is open */
	if (!s->data || !s->runs)
		return -PTS_ERR_IO;
	o->saved = pc->out;
	if (pts_out_init(&pc->out, s->data, SPILL_BUF) < 0) {
		pc->out = o->saved;
		return -PTS_ERR_NOMEM;
	}
	o->open = 1;
	o->time = 0;
	return 0;
}

/* Closes the current run at the current end of the output. */
static void close_run(struct perf_order *o, struct perf_cmd *pc)
{
	struct spill *s = &o->q[o->n - 1];
	long at = ftell(s->data);
	struct run r = {o->time, (uint64_t)(at < 0 ? 0 : at) + pc->out.len};
	if (at < 0 || fwrite(&r, sizeof(r), 1, s->runs) != 1)
		o->failed = 1;
}

void pts_perforder_mark(struct perf_order *o, struct perf_cmd *pc,
			uint64_t time)
{
	if (!o->open || time == o->time)
		return;
	close_run(o, pc);
	o->time = time;
}

int pts_perforder_end(struct perf_order *o, struct perf_cmd *pc)
{
	if (!o->open)
		return 0;
	close_run(o, pc);
	int rc = pts_out_fini(&pc->out);
	pc->out = o->saved;
	o->open = 0;
	return rc < 0 || o->failed ? -PTS_ERR_IO : 0;
}

/* The next non-empty run of @s into s->next; 0 when there is none. */
static int next_run(struct spill *s)
{
	while (!s->done) {
		if (fread(&s->next, sizeof(s->next), 1, s->runs) != 1) {
			s->done = 1;
			break;
		}
		if (s->next.end > s->pos)
			return 1;
	}
	return 0;
}

/* Copies @s's bytes up to s->next.end into @out. */
static int copy_run(struct spill *s, struct pts_out *out)
{
	while (s->pos < s->next.end) {
		uint64_t left = s->next.end - s->pos;
		size_t n = left < COPY_CHUNK ? (size_t)left : COPY_CHUNK;
		char *p = pts_out_reserve(out, n);
		if (pts_out_room(out) < n ||
		    fread(p, 1, n, s->data) != n)
			return -PTS_ERR_IO;
		pts_out_commit(out, n);
		s->pos += n;
	}
	return 0;
}

int pts_perforder_merge(struct perf_order *o, struct perf_cmd *pc)
{
	if (o->failed)
		return -PTS_ERR_IO;
	for (uint32_t i = 0; i < o->n; i++) {
		struct spill *s = &o->q[i];
		if (!s->data || !s->runs || fflush(s->data) != 0 ||
		    fseek(s->data, 0, SEEK_SET) != 0 ||
		    fseek(s->runs, 0, SEEK_SET) != 0)
			return -PTS_ERR_IO;
		next_run(s);
	}
	const struct spill *last = NULL;
	for (;;) {
		struct spill *best = NULL;
		for (uint32_t i = 0; i < o->n; i++)
			if (!o->q[i].done &&
			    (!best || o->q[i].next.time < best->next.time))
				best = &o->q[i];
		if (!best)
			return 0;
		if (best != last && best->label[0]) {
			char *p = pts_out_reserve(&pc->out, sizeof(best->label) + 1);
			int n = snprintf(p, pts_out_room(&pc->out), "%s\n",
					 best->label);
			pts_out_commit(&pc->out, (size_t)n);
		}
		last = best;
		if (copy_run(best, &pc->out) < 0)
			return -PTS_ERR_IO;
		next_run(best);
	}
}
