/* CPU identification (ptdump's --cpu) and the Intel PT errata that apply.
 *
 * Which family/model has which erratum is a fact taken from libipt's
 * pt_cpu_errata() (current upstream list, a superset of 2.0.5's). The
 * decoding layers read the flags; the packet decoder itself only acts on
 * SKD007 (a CYC that swallowed the first byte of an OVF).
 */
#include <ptscope/packets.h>

#include <limits.h>
#include <string.h>

/* One decimal or 0x-hex number in [0, @max], up to the next '/' or the
 * end; *@end gets what follows. */
static int pts_cpu_number(const char *s, const char **end, unsigned long max,
			  unsigned long *out)
{
	const char *stop = s + strcspn(s, "/");
	uint64_t v;

	if (pts_parse_u64(s, stop, &v) < 0 || v > max)
		return -PTS_ERR_INVALID;
	*end = stop;
	*out = (unsigned long)v;
	return 0;
}

int pts_cpu_parse(const char *text, struct pts_cpu *cpu)
{
	unsigned long family, model, stepping = 0;
	const char *s;

	if (!text || !cpu)
		return -PTS_ERR_INVALID;
	if (strcmp(text, "none") == 0) {
		memset(cpu, 0, sizeof(*cpu));
		return 0;
	}
	if (pts_cpu_number(text, &s, USHRT_MAX, &family) < 0 || *s != '/')
		return -PTS_ERR_INVALID;
	if (pts_cpu_number(s + 1, &s, UCHAR_MAX, &model) < 0)
		return -PTS_ERR_INVALID;
	if (*s == '/') {
		if (pts_cpu_number(s + 1, &s, UCHAR_MAX, &stepping) < 0)
			return -PTS_ERR_INVALID;
	}
	if (*s != '\0')
		return -PTS_ERR_INVALID;

	cpu->family = (uint16_t)family;
	cpu->model = (uint8_t)model;
	cpu->stepping = (uint8_t)stepping;
	return 0;
}

/* Family 6 models grouped by the errata they share. */
static const uint8_t pts_bdw_models[] = {0x3d, 0x47, 0x4f, 0x56};
static const uint8_t pts_skl_models[] = {0x4e, 0x5e, 0x8e, 0x9e, 0xa5, 0xa6};
static const uint8_t pts_skx_models[] = {0x55, 0x6a, 0x6c, 0x8f,
					 0xad, 0xae, 0xcf};
static const uint8_t pts_icl_models[] = {0x66, 0x7d, 0x7e, 0x8c,
					 0x8d, 0xa7, 0xa8};
static const uint8_t pts_adl_models[] = {0x97, 0x9a, 0xbf, 0xb7, 0xb5, 0xaa,
					 0xac, 0xba, 0xcc, 0xbd, 0xc5, 0xc6};
static const uint8_t pts_apl_models[] = {0x5c, 0x5f};
static const uint8_t pts_glm_models[] = {0x7a, 0x86, 0x96, 0x9c,
					 0xb6, 0xaf, 0xdd};

static int pts_model_in(uint8_t model, const uint8_t *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == model)
			return 1;
	return 0;
}

#define PTS_IN_(model, list) pts_model_in(model, list, sizeof(list))

void pts_cpu_errata(const struct pts_cpu *cpu, struct pts_errata *errata)
{
	uint8_t m;

	if (!errata)
		return;
	memset(errata, 0, sizeof(*errata));
	if (!cpu)
		return;

	m = cpu->model;
	if (cpu->family == 0x13 && m == 0x01) {
		errata->bdm70 = errata->skl014 = errata->skd022 = 1;
		errata->skz84 = 1;
		return;
	}
	if (cpu->family != 0x6)
		return;

	if (PTS_IN_(m, pts_bdw_models)) {
		errata->bdm70 = errata->bdm64 = 1;
	} else if (PTS_IN_(m, pts_skl_models)) {
		errata->bdm70 = errata->skd007 = errata->skd022 = 1;
		errata->skd010 = errata->skl014 = errata->skl168 = 1;
	} else if (PTS_IN_(m, pts_skx_models)) {
		errata->bdm70 = errata->skl014 = errata->skd022 = 1;
		errata->skz84 = 1;
	} else if (PTS_IN_(m, pts_icl_models)) {
		errata->bdm70 = errata->skl014 = errata->skd022 = 1;
	} else if (PTS_IN_(m, pts_adl_models)) {
		errata->bdm70 = errata->skl014 = errata->skd022 = 1;
		errata->apl11 = 1;
	} else if (PTS_IN_(m, pts_apl_models)) {
		errata->apl12 = errata->apl11 = 1;
	} else if (PTS_IN_(m, pts_glm_models)) {
		errata->apl11 = 1;
	}
}
