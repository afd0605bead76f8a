/* Flow unit tests on hand-made traces (hand_flow.h). */
#include "hand_flow.h"

#include "check.h"

#include <stdio.h>
#include <string.h>

#ifdef PTS_HAVE_LIBIPT
#include "flow_tokens.h"
#endif

struct pts_image *hf_image(const struct hand_code *code)
{
	struct pts_image *img = pts_image_new();
	CHECK(img != NULL);
	for (size_t i = 0; img && i < code->n; i++) {
		const struct hand_section *s = &code->sections[i];
		CHECK(pts_image_add_mem(img, 0, s->bytes, s->size, s->base) ==
		      0);
	}
	return img;
}

#ifdef PTS_HAVE_LIBIPT
static int read_code(uint8_t *buf, size_t size, const struct pt_asid *asid,
		     uint64_t ip, void *ctx)
{
	const struct hand_code *code = ctx;
	(void)asid;
	for (size_t i = 0; i < code->n; i++) {
		const struct hand_section *s = &code->sections[i];
		if (ip < s->base || ip >= s->base + s->size)
			continue;
		size_t n = (size_t)(s->base + s->size - ip);
		if (n > size)
			n = size;
		memcpy(buf, s->bytes + (ip - s->base), n);
		return (int)n;
	}
	return -pte_nomap;
}

static int libipt_image(struct pt_image *img, void *ctx)
{
	return pt_image_set_callback(img, read_code, ctx);
}

/* libipt's flow of @t against ours (fed in random chunks): 0 when they
 * agree. */
static int libipt_differs(const char *label, const struct hand_code *code,
			  const struct hand_trace *t,
			  const struct pts_flow_config *fc, bool cbr)
{
	struct pt_config cfg;
	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)(uintptr_t)t->buf;
	cfg.end = cfg.begin + t->len;
	if (fc->cpu.family) {
		cfg.cpu.vendor = pcv_intel;
		cfg.cpu.family = fc->cpu.family;
		cfg.cpu.model = fc->cpu.model;
		cfg.cpu.stepping = fc->cpu.stepping;
		CHECK(pt_cpu_errata(&cfg.errata, &cfg.cpu) == 0);
	}
	/* SKL014 needs the filter ranges on libipt's side too. */
	for (int n = 0; n < 4; n++) {
		if (fc->addr_cfg[n] != 1)
			continue;
		/* ADDRn_CFG 1: filter (libipt 2.0.5's header has no name
		 * for it). */
		cfg.addr_filter.config.addr_cfg |= (uint64_t)1 << (4 * n);
		uint64_t *ab[4][2] = {
			{&cfg.addr_filter.addr0_a, &cfg.addr_filter.addr0_b},
			{&cfg.addr_filter.addr1_a, &cfg.addr_filter.addr1_b},
			{&cfg.addr_filter.addr2_a, &cfg.addr_filter.addr2_b},
			{&cfg.addr_filter.addr3_a, &cfg.addr_filter.addr3_b}};
		*ab[n][0] = fc->addr_a[n];
		*ab[n][1] = fc->addr_b[n];
	}
	struct pts_toks theirs = {.with_cbr = cbr}, ours = {.with_cbr = cbr};
	pts_toks_libipt(&cfg, libipt_image, (void *)(uintptr_t)code, &theirs);
	struct pts_image *img = hf_image(code);
	pts_toks_ptscope(img, fc, t->buf, t->len, 7, &ours);
	pts_image_free(img);
	int r = pts_toks_compare(label, "libipt", &theirs, "ptscope", &ours, 0);
	pts_toks_free(&theirs);
	pts_toks_free(&ours);
	return r;
}
#endif

void hf_expect(const char *label, const char *got, const char *want,
	       const struct hand_code *code, const struct hand_trace *t,
	       const struct pts_flow_config *fc, bool cbr, bool libipt_same)
{
	fprintf(stderr, "%-24s %s\n", label, got);
	if (strcmp(got, want) != 0)
		FAIL("%s: got \"%s\", want \"%s\"\n", label, got, want);
#ifdef PTS_HAVE_LIBIPT
	int d = libipt_differs(label, code, t, fc, cbr);
	if (d && libipt_same)
		FAIL("%s: libipt disagrees\n", label);
	if (!d && !libipt_same)
		FAIL("%s: libipt agrees now: update the test\n", label);
#else
	(void)code;
	(void)t;
	(void)fc;
	(void)cbr;
	(void)libipt_same;
#endif
}
