/* Helpers over struct pts_trace_config: filter ranges from text, the MTC
 * frequency in use, the TSC frequency. */
#include <ptscope/windows.h>

#include <string.h>

int pts_config_add_range(struct pts_trace_config *cfg, const char *text,
			 enum pts_addr_cfg cfg_kind)
{
	uint64_t a, b;

	if (!cfg || !text || (cfg_kind != PTS_ADDR_FILTER &&
			      cfg_kind != PTS_ADDR_STOP))
		return -PTS_ERR_INVALID;
	if (pts_parse_range(text, text + strlen(text), &a, &b) < 0 || b < a)
		return -PTS_ERR_INVALID;
	for (unsigned n = 0; n < 4; n++) {
		unsigned shift = PTS_CTL_ADDR_CFG_SHIFT(n);

		if ((cfg->known & PTS_CFG_CTL) && ((cfg->ctl >> shift) & 0xf))
			continue;
		if (!(cfg->known & PTS_CFG_CTL))
			cfg->ctl = 0;
		cfg->ctl |= (uint64_t)cfg_kind << shift;
		cfg->addr_a[n] = a;
		cfg->addr_b[n] = b;
		cfg->known |= PTS_CFG_CTL | PTS_CFG_ADDR;
		return 0;
	}
	return -PTS_ERR_BAD_CONFIG;
}

unsigned pts_config_mtc_freq(const struct pts_trace_config *cfg)
{
	if (!cfg)
		return 0;
	if (cfg->known & PTS_CFG_MTCFREQ)
		return cfg->mtc_freq & 0xf;
	if (cfg->known & PTS_CFG_CTL)
		return (unsigned)(cfg->ctl >> PTS_CTL_MTCFREQ_SHIFT) & 0xf;
	return 0;
}

uint64_t pts_config_tsc_hz(const struct pts_trace_config *cfg)
{
	if (!cfg)
		return 0;
	/* CPUID 0x15: TSC Hz = crystal Hz * EBX / EAX (SDM 36.8.3). */
	if ((cfg->known & PTS_CFG_CPUID15) && cfg->cpuid_15_eax &&
	    cfg->cpuid_15_ebx && cfg->cpuid_15_ecx)
		return (uint64_t)cfg->cpuid_15_ecx * cfg->cpuid_15_ebx /
		       cfg->cpuid_15_eax;
	/* The TSC runs at the nominal (P1) frequency: ratio x 100 MHz bus. */
	if ((cfg->known & PTS_CFG_NOMFREQ) && cfg->nom_freq)
		return (uint64_t)cfg->nom_freq * 100000000ull;
	return 0;
}
