/* The walk's scenario logic around rings and enclaves: SYSCALL into the
 * kernel stub and back, interrupts, and the SGX transitions of
 * docs/pt-sgx-facts.md section 4.3 (EENTER, EEXIT, AEX then ERESUME).
 *
 * ENCLU's leaf lives in EAX, which a walk does not track, so the site
 * decides: an ENCLU outside every enclave is ERESUME when it sits at an
 * enclave's AEP with an AEX pending, else EENTER into the first enclave
 * (at its OENTRY); an ENCLU inside an enclave is EEXIT back to the
 * instruction after the ENCLU that entered (the SDK's usual target). */
#include "walk_internal.h"

/* swapgs; sysretq | nop; iretq (padding: int3). */
const uint8_t syn_kstub[SYN_KSTUB_SIZE] = {
	0x0f, 0x01, 0xf8, 0x48, 0x0f, 0x07, 0xcc, 0xcc,
	0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc,
	0x90, 0x48, 0xcf, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc,
	0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc,
};

/* Cycles the untraced parts cost, so that gaps have a duration. */
enum {
	CYC_SYSCALL = 400,
	CYC_IRQ = 1500,
	CYC_ENCLU = 3500,
	CYC_AEX = 6000,
};

static void interrupt_at(struct syn_walk *w, struct syn_step *s, uint64_t ip)
{
	s->kind = SYN_INTR;
	s->ip = ip;
	s->next = SYN_KSTUB_IRQ;
	s->at = w->where;
	s->to.cpl = 0;
	s->to.encl = -1;
	s->extra_cycles = CYC_IRQ;
	w->kret = ip;
}

/* Asynchronous events at the boundary before w->ip: an AEX inside an
 * enclave (then the interrupt that caused it, delivered at the AEP), an
 * interrupt elsewhere in ring 3. Returns 1 when @s is such an event. */
int syn_walk_async(struct syn_walk *w, struct syn_step *s)
{
	struct syn_where wh = w->where;
	if (wh.encl >= 0) {
		const struct pts_enclave *e = &w->cfg->enclaves[wh.encl];
		if (!e->has_aep || !syn_chance(w, w->o.aex_rate))
			return 0;
		s->kind = SYN_AEX;
		s->ip = w->ip;
		s->next = e->aep;
		s->at = wh;
		s->to.cpl = 3;
		s->to.encl = -1;
		s->extra_cycles = CYC_AEX;
		w->encl[wh.encl].resume = w->ip;
		/* The exiting event is delivered as if it happened at the
		 * AEP (pt-sgx-facts 4.3): queue it. */
		if (w->o.kernel) {
			struct syn_where saved = w->where;
			w->where = s->to;
			interrupt_at(w, &w->queue, e->aep);
			w->where = saved;
			w->queued = 1;
		}
		return 1;
	}
	if (wh.cpl != 3 || !w->o.kernel || !syn_chance(w, w->o.async_rate))
		return 0;
	interrupt_at(w, s, w->ip);
	return 1;
}

/* Software cannot switch tracing off inside an enclave (WRMSR faults in
 * enclave mode, and a production enclave's gap would end at an address
 * neither an EEXIT target nor the AEP): the thread leaves first, by an
 * EEXIT to the instruction after the ENCLU that entered (the SDK's exit),
 * which the walk takes the instruction at @ip to be. An AEX would not do:
 * a restart at the AEP's ENCLU reads as the ERESUME. */
int syn_walk_leave_enclave(struct syn_walk *w, struct syn_step *s,
			   uint64_t ip)
{
	const int encl = w->where.encl;

	if (encl < 0 || w->restart_here || !w->encl[encl].eexit_to)
		return 0;
	s->kind = SYN_ENCLU;
	s->ip = ip;
	s->size = 0;
	s->next = w->encl[encl].eexit_to;
	s->at = w->where;
	s->to.cpl = 3;
	s->to.encl = -1;
	s->extra_cycles = CYC_ENCLU;
	w->depth = w->encl[encl].depth;
	w->encl[encl].eexit_to = 0;
	w->restart_next = 1;
	return 1;
}

/* SYSCALL goes to the stub in ring 0; the stub's SYSRET/IRET come back
 * to where ring 3 left. Other far transfers cannot be followed. */
void syn_walk_far(struct syn_walk *w, const struct syn_insn *in,
		  struct syn_step *s)
{
	s->kind = SYN_FAR;
	if (w->where.cpl == 3 && w->where.encl < 0 &&
	    in->special == SYN_SP_SYSCALL && w->o.kernel) {
		s->next = SYN_KSTUB_SYSCALL;
		s->to.cpl = 0;
		s->extra_cycles = CYC_SYSCALL;
		w->kret = in->ip + in->size;
		return;
	}
	if (w->where.cpl == 0 && in->special == SYN_SP_RETURN_USER &&
	    w->kret) {
		s->next = w->kret;
		s->to.cpl = 3;
		s->to.encl = -1;
		w->kret = 0;
		return;
	}
	syn_walk_make_restart(w, s, in->ip);
}

void syn_walk_enclu(struct syn_walk *w, const struct syn_insn *in,
		    struct syn_step *s)
{
	const struct pts_config *cfg = w->cfg;
	uint64_t nlip = in->ip + in->size;
	s->kind = SYN_ENCLU;
	s->extra_cycles = CYC_ENCLU;
	if (w->where.cpl != 3 || !cfg->n_enclaves) {
		syn_walk_make_restart(w, s, in->ip);
		return;
	}
	int cur = w->where.encl;
	if (cur >= 0) { /* EEXIT */
		struct syn_walk_encl *st = &w->encl[cur];
		if (!st->eexit_to) {
			syn_walk_make_restart(w, s, in->ip);
			return;
		}
		s->next = st->eexit_to;
		s->to.encl = -1;
		w->depth = st->depth;
		st->eexit_to = 0;
		return;
	}
	for (size_t i = 0; i < cfg->n_enclaves; i++) { /* ERESUME */
		struct syn_walk_encl *st = &w->encl[i];
		if (cfg->enclaves[i].has_aep && cfg->enclaves[i].aep == in->ip &&
		    st->resume) {
			s->next = st->resume;
			s->to.encl = (int8_t)i;
			st->resume = 0;
			return;
		}
	}
	/* EENTER into the first enclave with no thread inside. */
	for (size_t i = 0; i < cfg->n_enclaves; i++) {
		struct syn_walk_encl *st = &w->encl[i];
		if (st->resume || st->eexit_to)
			continue;
		uint64_t entry = cfg->enclave_entry && cfg->enclave_entry[i]
					 ? cfg->enclave_entry[i]
					 : cfg->enclaves[i].begin;
		s->next = entry;
		s->to.encl = (int8_t)i;
		st->eexit_to = nlip;
		st->depth = w->depth;
		return;
	}
	syn_walk_make_restart(w, s, in->ip);
}
