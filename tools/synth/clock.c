/* The modelled clock behind the timing packets (pt-sgx-facts section 6):
 * core cycles advance per instruction (a fixed-point CPI plus the extra
 * cycles a step says it costs), the TSC advances by nom/cbr ticks per core
 * cycle, and the crystal clock (CTC) runs at TSC * eax / ebx. Everything is
 * integer arithmetic with carried remainders so that the truth is exact. */
#include "synth.h"

void syn_clock_init(struct syn_clock *c, const struct syn_options *o)
{
	c->cycles = 0;
	c->tsc = o->tsc0;
	c->tsc_rem = 0;
	c->frac_q8 = 0;
	c->cpi_q8 = o->cpi_q8 ? o->cpi_q8 : 256;
	c->eax = o->eax ? o->eax : 2;
	c->ebx = o->ebx ? o->ebx : 2 * c->eax;
	c->nom = o->nom_ratio ? o->nom_ratio : 24;
	c->cbr = o->cbr ? o->cbr : c->nom;
}

void syn_clock_step(struct syn_clock *c, uint32_t extra)
{
	uint32_t q = c->frac_q8 + c->cpi_q8;
	uint64_t cyc = (uint64_t)(q >> 8) + extra;
	c->frac_q8 = q & 0xff;
	c->cycles += cyc;
	/* TSC ticks per core cycle = nom / cbr (SDM 36.8.3). */
	c->tsc_rem += cyc * c->nom;
	c->tsc += c->tsc_rem / c->cbr;
	c->tsc_rem %= c->cbr;
}

void syn_clock_set_cbr(struct syn_clock *c, uint8_t cbr)
{
	if (cbr)
		c->cbr = cbr;
	/* The remainder was in units of the old ratio; dropping it costs
	 * less than a TSC tick and keeps the arithmetic exact from here. */
	c->tsc_rem = 0;
}

uint64_t syn_clock_ctc(const struct syn_clock *c, uint64_t tsc, uint32_t *fc)
{
	uint64_t ctc = tsc / c->ebx * c->eax + (tsc % c->ebx) * c->eax / c->ebx;
	if (fc) {
		/* TSC at the crystal tick: the smallest t with
		 * t * eax / ebx >= ctc. */
		uint64_t at = ctc / c->eax * c->ebx +
			      ((ctc % c->eax) * c->ebx + c->eax - 1) / c->eax;
		*fc = (uint32_t)(tsc - at);
	}
	return ctc;
}
