/* Flow decode set-up shared by the flow tests and benchmarks. */
#include "flow_setup.h"

#include <string.h>

int pts_test_add_images(struct pts_image *img, const struct pts_config *cfg)
{
	for (size_t i = 0; i < cfg->n_images; i++) {
		const struct pts_image_spec *s = &cfg->images[i];
		int err = s->kind == PTS_IMAGE_ELF
				  ? pts_image_add_elf(img, 0, s->path, s->base)
				  : pts_image_add_raw(img, 0, s->path, s->from,
						      s->to, s->addr);
		if (err < 0)
			return err;
	}
	return 0;
}

void pts_test_libipt_config(const struct pts_trace_config *tc,
			    const uint8_t *begin, const uint8_t *end,
			    struct pt_config *pc)
{
	pt_config_init(pc);
	pc->begin = (uint8_t *)begin;
	pc->end = (uint8_t *)end;
	if (tc->cpu.family) {
		pc->cpu.vendor = pcv_intel;
		pc->cpu.family = tc->cpu.family;
		pc->cpu.model = tc->cpu.model;
		pc->cpu.stepping = tc->cpu.stepping;
		pt_cpu_errata(&pc->errata, &pc->cpu);
	}
	if (!(tc->known & PTS_CFG_CTL))
		return;
	for (unsigned n = 0; n < 4; n++) {
		uint64_t cfg = (tc->ctl >> PTS_CTL_ADDR_CFG_SHIFT(n)) & 0xf;
		pc->addr_filter.config.addr_cfg |= cfg << (4 * n);
		(&pc->addr_filter.addr0_a)[2 * n] = tc->addr_a[n];
		(&pc->addr_filter.addr0_a)[2 * n + 1] = tc->addr_b[n];
	}
}

int pts_test_libipt_read(uint8_t *buf, size_t size,
			 const struct pt_asid *asid, uint64_t ip, void *ctx)
{
	(void)asid;
	int n = pts_image_fetch(ctx, 0, ip, buf, size);
	return n < 0 ? -pte_nomap : n;
}
