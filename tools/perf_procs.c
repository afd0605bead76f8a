/* Which process runs where in a per-cpu queue: perf_procs.h. */
#include "perf_procs.h"

#include "perf_clockwalk.h"

#include <stdlib.h>
#include <string.h>

/* Keys of the per-process spaces: above any physical address. */
#define KEY_BASE 0x000f000000000000ull
#define KEY_STEP 0x1000ull

struct proc_slot {
	int32_t pid;
	uint64_t until; /* its next exec (maps differ from then on) */
	uint64_t cr3;
};

struct scan {
	struct perf_cmd *pc;
	int32_t cpu;
	struct perf_maps *maps;
	struct pts_image *img;
	struct perf_procs *out;
	uint64_t cur;         /* the space the decoder is in (0: default) */
	uint8_t enabled, in_psb, psb_fup;
};

/* The process the sideband names at TSC @tsc, or -1. */
static int32_t process_at(const struct scan *s, uint64_t tsc)
{
	int32_t pid, tid;
	if (!tsc || !pts_perf_thread_at(s->pc->perf, s->cpu,
					pts_perf_tsc_to_time(&s->pc->tc, tsc),
					&pid, &tid))
		return -1;
	return pts_perfmaps_pid_of(s->maps, tid);
}

/* The space of @pid as of @tsc, made (and filled) on first use; 0 when
 * out of memory. */
static uint64_t space_of(struct scan *s, int32_t pid, uint64_t tsc)
{
	struct perf_procs *o = s->out;
	uint64_t time = pts_perf_tsc_to_time(&s->pc->tc, tsc);
	uint64_t until = pts_perfmaps_exec_after(s->maps, pid, time);
	for (uint32_t i = 0; i < o->nr_slots; i++)
		if (o->slots[i].pid == pid && o->slots[i].until == until)
			return o->slots[i].cr3;
	if (pts_perfcmd_grow((void **)&o->slots, &o->cap_slots, o->nr_slots + 1,
		 sizeof(*o->slots)) < 0) {
		o->nomem = 1;
		return 0;
	}
	uint64_t cr3 = KEY_BASE + KEY_STEP * (o->nr_slots + 1);
	o->slots[o->nr_slots++] = (struct proc_slot){pid, until, cr3};
	pts_perfmaps_load_space(s->maps, s->img, cr3, pid,
				until == UINT64_MAX ? UINT64_MAX : until - 1);
	return cr3;
}

static void inject(struct scan *s, uint64_t offset, uint64_t cr3)
{
	struct perf_procs *o = s->out;
	if (!cr3 || pts_perfcmd_grow((void **)&o->inj, &o->cap, o->n + 1,
			 sizeof(*o->inj)) < 0) {
		o->nomem = 1;
		return;
	}
	o->inj[o->n++] = (struct proc_inject){offset, cr3};
	s->cur = cr3;
}

/* A PIP of the trace itself: its CR3 gets the maps of the process the
 * sideband names now (the first such process). */
static void real_pip(struct scan *s, uint64_t cr3, int32_t pid, uint64_t tsc)
{
	struct perf_procs *o = s->out;
	s->cur = cr3;
	for (uint32_t i = 0; i < o->nr_real; i++)
		if (o->real[i] == cr3)
			return;
	if (pts_perfcmd_grow((void **)&o->real, &o->cap_real, o->nr_real + 1,
		 sizeof(*o->real)) < 0) {
		o->nomem = 1;
		return;
	}
	o->real[o->nr_real++] = cr3;
	uint64_t time = pts_perf_tsc_to_time(&s->pc->tc, tsc);
	pts_perfmaps_load_space(s->maps, s->img, cr3, pid, time);
}

static void on_packet(void *ctx, const struct clock_walk *c,
		      const struct pts_packet *p)
{
	struct scan *s = ctx;
	uint64_t tsc = c->clock.timestamp > c->stamp ? c->clock.timestamp
						      : c->stamp;
	int32_t want;
	switch (p->kind) {
	case PTS_PKT_PSB:
		s->in_psb = 1;
		s->psb_fup = 0;
		break;
	case PTS_PKT_FUP:
		if (s->in_psb && p->ipc != PTS_IPC_SUPPRESSED)
			s->psb_fup = 1;
		break;
	case PTS_PKT_PSBEND:
		if ((want = process_at(s, tsc)) >= 0)
			inject(s, p->offset, space_of(s, want, tsc));
		s->in_psb = 0;
		s->enabled = s->psb_fup;
		break;
	case PTS_PKT_TIP_PGE:
		/* another process, or the same one after an exec */
		if (!s->enabled && (want = process_at(s, tsc)) >= 0) {
			uint64_t cr3 = space_of(s, want, tsc);
			if (cr3 != s->cur)
				inject(s, p->offset, cr3);
		}
		s->enabled = 1;
		break;
	case PTS_PKT_TIP_PGD:
	case PTS_PKT_OVF:
		s->enabled = 0; /* after OVF: a FUP resumes, never bound to */
		break;
	case PTS_PKT_PIP:
		if ((want = process_at(s, tsc)) >= 0)
			real_pip(s, p->u.pip.cr3, want, tsc);
		break;
	default:
		break;
	}
}

int pts_perfprocs_scan(struct perf_cmd *pc, uint32_t qi, int32_t cpu,
		       struct perf_maps *maps, struct pts_image *img,
		       struct perf_procs *out)
{
	struct scan s = {pc, cpu, maps, img, out, 0, 0, 0, 0};
	struct clock_walk c;
	memset(out, 0, sizeof(*out));
	if (pts_clockwalk_init(&c, pc, qi) < 0)
		return -PTS_ERR_NOMEM;
	c.on_packet = on_packet;
	c.ctx = &s;
	/* every packet passes the hook on the way to the queue's end */
	pts_clockwalk_at(&c, UINT64_MAX);
	pts_clockwalk_fini(&c);
	return out->nomem ? -PTS_ERR_NOMEM : 0;
}

void pts_perfprocs_free(struct perf_procs *p)
{
	free(p->inj);
	free(p->slots);
	free(p->real);
	memset(p, 0, sizeof(*p));
}

int pts_perfprocs_pip(uint64_t cr3, uint8_t *buf, size_t cap)
{
	struct pts_packet p;
	memset(&p, 0, sizeof(p));
	p.kind = PTS_PKT_PIP;
	p.u.pip.cr3 = cr3;
	return pts_pkt_encode(&p, buf, cap);
}
