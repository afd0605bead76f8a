/* Options and the driver: a source's steps through the emitter, with the
 * trace-buffer events (overflow, TraceStop recovery, frequency changes)
 * decided between steps, and the truth written alongside. */
#include "synth_run.h"

#include <stdlib.h>
#include <string.h>

void syn_options_default(struct syn_options *o)
{
	memset(o, 0, sizeof(*o));
	o->seed = 1;
	o->insns = 100000;
	o->psb_period = 4096;
	o->retcomp = 1;
	o->kernel = 1;
	o->mtc_freq = 3;
	o->cr3 = 0x1000;
	o->ret_nocomp_rate = 10000; /* 1%: hardware may skip compression */
	o->ovf_len = 200;
	o->cpi_q8 = 384; /* 1.5 cycles per instruction */
	o->eax = 2;
	o->ebx = 200; /* TSC = 100 x crystal (2.4 GHz / 24 MHz) */
	o->nom_ratio = 24;
	o->cbr = 24;
	o->tsc0 = 0x100000000ull;
}

uint64_t syn_options_ctl(const struct syn_options *o)
{
	uint64_t ctl = PTS_CTL_TRACEEN | PTS_CTL_USER | PTS_CTL_BRANCHEN |
		       SYN_CTL_TOPA;
	if (!o->user_only)
		ctl |= PTS_CTL_OS;
	if (o->cyc)
		ctl |= PTS_CTL_CYCEN |
		       (uint64_t)(o->cyc_thresh & 0xf) << PTS_CTL_CYCTHRESH_SHIFT;
	if (o->mtc)
		ctl |= PTS_CTL_MTCEN |
		       (uint64_t)(o->mtc_freq & 0xf) << PTS_CTL_MTCFREQ_SHIFT;
	if (o->tsc)
		ctl |= PTS_CTL_TSCEN;
	if (!o->retcomp)
		ctl |= PTS_CTL_DISRETC;
	if (o->cr3_filter)
		ctl |= PTS_CTL_CR3FILTER;
	/* PSBFreq: the smallest v with 2 KiB << v >= the period. */
	unsigned v = 0;
	while (v < 15 && (2048ull << v) < o->psb_period)
		v++;
	ctl |= (uint64_t)v << PTS_CTL_PSBFREQ_SHIFT;
	for (unsigned i = 0; i < o->n_addr; i++)
		ctl |= (uint64_t)o->addr_cfg[i] << PTS_CTL_ADDR_CFG_SHIFT(i);
	return ctl;
}

void syn_options_to_config(const struct syn_options *o, struct pts_config *cfg)
{
	struct pts_trace_config *t = &cfg->trace;
	t->ctl = syn_options_ctl(o);
	t->known |= PTS_CFG_CTL | PTS_CFG_CPUID15 | PTS_CFG_NOMFREQ;
	for (unsigned i = 0; i < o->n_addr; i++) {
		t->addr_a[i] = o->addr_a[i];
		t->addr_b[i] = o->addr_b[i];
		t->known |= PTS_CFG_ADDR;
	}
	if (o->cr3_filter || !o->user_only) {
		t->cr3_match = o->cr3_filter ? o->cr3_match : 0;
		if (o->cr3_filter)
			t->known |= PTS_CFG_CR3;
	}
	t->cpuid_15_eax = o->eax;
	t->cpuid_15_ebx = o->ebx;
	t->cpuid_15_ecx = 24000000;
	t->nom_freq = o->nom_ratio;
}

static uint64_t drv_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Steps whose visibility is not settled yet: those after the last packet
 * other than timing (an overflow that starts later hides them: a decoder
 * reads past timing packets to the OVF before it walks them). */
struct pending {
	struct pending_step {
		struct syn_step s;
		int hidden;
	} *v;
	size_t n, cap;
};

static int pending_add(struct pending *p, const struct syn_step *s, int hid)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		struct pending_step *grown = realloc(p->v, cap * sizeof(*grown));
		if (!grown)
			return -PTS_ERR_NOMEM;
		p->v = grown;
		p->cap = cap;
	}
	p->v[p->n].s = *s;
	p->v[p->n].hidden = hid;
	p->n++;
	return 0;
}

static void pending_hide(struct pending *p, int why)
{
	/* events too: their packets are lost with the instructions' */
	for (size_t i = 0; i < p->n; i++)
		if (!p->v[i].hidden)
			p->v[i].hidden = why;
}

/* A truth time mark waits in the queue as a step of no kind, so that its
 * "t" line lands between the instructions it came between. */
#define MARK_KIND SYN_KIND_COUNT

static int pending_mark(struct syn_driver *d, struct pending *p)
{
	struct syn_step m;
	memset(&m, 0, sizeof(m));
	if (!syn_emit_take_mark(d->em, &m.ip, &m.next))
		return 0;
	m.kind = MARK_KIND;
	return pending_add(p, &m, 0);
}

static void pending_flush(struct syn_driver *d, struct pending *p)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct syn_step *s = &p->v[i].s;
		int hid = p->v[i].hidden;
		if (s->kind == MARK_KIND) {
			if (d->truth)
				syn_truth_time(d->truth, s->ip, s->next);
			continue;
		}
		if (d->truth)
			syn_truth_step(d->truth, s, hid, d->cfg);
		if (d->on_step)
			d->on_step(d->ctx, s, hid);
		if (syn_is_insn(s) && !hid)
			d->visible++;
	}
	p->n = 0;
}

/* One step through the emitter, its verdict settled when a packet a
 * decoder stops for goes out. */
static int drive_step(struct syn_driver *d, struct pending *pend,
		      const struct syn_step *s)
{
	struct syn_emit_stats st;
	int was_dropping = syn_emit_overflow_active(d->em);
	syn_emit_stats(d->em, &st);
	uint64_t before = st.bind_packets + st.tnt_bits;
	int hid = syn_emit_step(d->em, s);
	if (hid < 0)
		return hid;
	syn_emit_stats(d->em, &st);
	int err = pending_mark(d, pend);
	if (err < 0 || (err = pending_add(pend, s, hid)) < 0)
		return err;
	if (!was_dropping && syn_emit_overflow_active(d->em)) {
		/* Instructions after the last such packet before an
		 * overflow cannot be told from the ones lost in it: a
		 * decoder meets the OVF first (libipt reads ahead past
		 * timing packets, and past a PSB+ with the TNT it flushed:
		 * bind_packets). They are hidden too. */
		pending_hide(pend, SYN_HID_OVERFLOW);
		pending_flush(d, pend);
	} else if (st.bind_packets + st.tnt_bits != before ||
		   pend->n >= 1024) {
		pending_flush(d, pend);
	}
	return 0;
}

int syn_drive(struct syn_driver *d)
{
	const struct syn_options *o = d->o;
	uint64_t rng = o->seed * 0x2545f4914f6cdd1dull + 7;
	uint64_t ovf_left = 0, stop_left = 0;
	struct syn_step s;
	struct pending pend = {NULL, 0, 0};
	int err;

	if ((err = syn_emit_start(d->em, d->start, d->start_where)) < 0 ||
	    (err = pending_mark(d, &pend)) < 0)
		goto done;
	while (d->insns < o->insns) {
		err = d->next(d->source, &s);
		if (err < 0)
			goto done;
		if (err > 0) /* the source has ended */
			break;
		if ((err = drive_step(d, &pend, &s)) < 0)
			goto done;
		if (!syn_is_insn(&s))
			continue;
		d->insns++;

		/* Trace-buffer events between instructions. */
		if (ovf_left) {
			if (--ovf_left == 0 &&
			    (err = syn_emit_overflow_end(d->em)) < 0)
				goto done;
		} else if (o->ovf_rate &&
			   drv_rand(&rng) % 1000000 < o->ovf_rate) {
			syn_emit_overflow_arm(d->em);
			ovf_left = 1 + drv_rand(&rng) % (2 * o->ovf_len + 1);
		}
		if (syn_emit_stopped(d->em)) {
			/* Software notices the stop later and re-enables. */
			if (!stop_left)
				stop_left = 50 + drv_rand(&rng) % 200;
			else if (--stop_left == 0 && d->restart_here)
				d->restart_here(d->source);
		}
		if (o->freq_rate && drv_rand(&rng) % 1000000 < o->freq_rate) {
			uint8_t cbr = (uint8_t)(o->nom_ratio / 2 +
						drv_rand(&rng) % (o->nom_ratio / 2 + 10));
			if ((err = syn_emit_freq(d->em, cbr)) < 0)
				goto done;
		}
		if ((err = pending_mark(d, &pend)) < 0)
			goto done;
	}
	err = syn_emit_finish(d->em);
	if (err >= 0)
		err = pending_mark(d, &pend);
done:
	pending_flush(d, &pend);
	free(pend.v);
	return err < 0 ? err : 0;
}

int syn_walk_source_next(void *walk, struct syn_step *s)
{
	return syn_walk_next(walk, s);
}

void syn_walk_source_restart(void *walk)
{
	syn_walk_restart_here(walk);
}

int syn_walk_to_memory(const struct syn_options *o, const struct pts_config *cfg,
		       struct pts_image *img, uint64_t start,
		       struct syn_sink *sink,
		       void (*on_step)(void *, const struct syn_step *, int),
		       void *ctx, struct syn_emit_stats *stats)
{
	struct syn_walk *w;
	int err = syn_walk_new(o, cfg, img, start, &w);
	if (err < 0)
		return err;
	struct syn_emitter *em = syn_emit_new(o, cfg, sink);
	if (!em) {
		syn_walk_free(w);
		return -PTS_ERR_NOMEM;
	}
	struct syn_driver d;
	memset(&d, 0, sizeof(d));
	d.o = o;
	d.cfg = cfg;
	d.em = em;
	d.start = syn_walk_ip(w);
	d.start_where = syn_walk_where(w);
	d.source = w;
	d.next = syn_walk_source_next;
	d.restart_here = syn_walk_source_restart;
	d.on_step = on_step;
	d.ctx = ctx;
	err = syn_drive(&d);
	if (stats)
		syn_emit_stats(em, stats);
	syn_emit_free(em);
	syn_walk_free(w);
	return err;
}
