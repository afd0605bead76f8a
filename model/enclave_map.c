/* The enclave map: parsing `--enclave` specs and looking addresses up.
 *
 * An enclave is named by its ELRANGE (the linear range its pages occupy),
 * production or debug (SECS.ATTRIBUTES.DEBUG, SDM Vol. 3D 43.1.1), the AEP
 * its threads registered with EENTER/ERESUME (RCX), where an AEX lands
 * (Vol. 3D 40.4), and optionally EEXIT targets (RBX at EEXIT).
 */
#include "windows_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Parses one unsigned number in C notation ending at a char of @stops (or
 * the end). Returns the char after it, or NULL. */
static const char *parse_u64(const char *s, const char *stops, uint64_t *v)
{
	char *end;

	if (*s == '\0' || *s == '-' || *s == '+' || *s == ' ')
		return NULL;
	errno = 0;
	*v = strtoull(s, &end, 0);
	if (errno || end == s || (*end && !strchr(stops, *end)))
		return NULL;
	return end;
}

/* One ",key=value" option of a spec; *@why says what is wrong with it. */
static int parse_option(const char *opt, size_t len, struct pts_enclave *enc,
			const char **why)
{
	char buf[64];
	uint64_t v;

	*why = "an option longer than 63 characters";
	if (len >= sizeof(buf))
		return -PTS_ERR_INVALID;
	memcpy(buf, opt, len);
	buf[len] = '\0';
	if (strncmp(buf, "name=", 5) == 0) {
		*why = "name= takes 1 to 31 characters";
		if (len - 5 >= sizeof(enc->name) || len == 5)
			return -PTS_ERR_INVALID;
		memcpy(enc->name, buf + 5, len - 5 + 1);
		return 0;
	}
	if (strncmp(buf, "aep=", 4) == 0) {
		*why = "aep= takes an address";
		if (!parse_u64(buf + 4, "", &v))
			return -PTS_ERR_INVALID;
		enc->aep = v;
		enc->has_aep = 1;
		return 0;
	}
	if (strncmp(buf, "eexit=", 6) == 0) {
		*why = enc->n_eexit >= PTS_ENCLAVE_MAX_EEXIT
			       ? "too many eexit= targets"
			       : "eexit= takes an address";
		if (!parse_u64(buf + 6, "", &v) ||
		    enc->n_eexit >= PTS_ENCLAVE_MAX_EEXIT)
			return -PTS_ERR_INVALID;
		enc->eexit[enc->n_eexit++] = v;
		return 0;
	}
	/* OENTRY: what `synth` enters at; the map has no use for it */
	if (strncmp(buf, "entry=", 6) == 0) {
		*why = "entry= takes an address";
		return parse_u64(buf + 6, "", &v) ? 0 : -PTS_ERR_INVALID;
	}
	*why = "an unknown option (aep=, eexit=, entry=, name=)";
	return -PTS_ERR_INVALID;
}

static int parse_spec(const char *text, struct pts_enclave *enc,
		      const char **why)
{
	const char *s, *kind;
	size_t klen;

	memset(enc, 0, sizeof(*enc));
	*why = "no number BEGIN before the '-'";
	s = parse_u64(text, "-", &enc->begin);
	if (!s || *s != '-')
		return -PTS_ERR_INVALID;
	*why = "no number END before the ':'";
	s = parse_u64(s + 1, ":", &enc->end);
	if (s && !*s)
		*why = "no ':production' or ':debug' after END";
	if (!s || *s != ':')
		return -PTS_ERR_INVALID;
	*why = "END is not above BEGIN";
	if (enc->end <= enc->begin)
		return -PTS_ERR_INVALID;
	kind = s + 1;
	klen = strcspn(kind, ",");
	*why = "the kind is production or debug";
	if (klen == 10 && strncmp(kind, "production", klen) == 0)
		enc->kind = PTS_ENCLAVE_PRODUCTION;
	else if (klen == 5 && strncmp(kind, "debug", klen) == 0)
		enc->kind = PTS_ENCLAVE_DEBUG;
	else
		return -PTS_ERR_INVALID;
	s = kind + klen;
	while (*s == ',') {
		size_t len = strcspn(s + 1, ",");
		int err = parse_option(s + 1, len, enc, why);

		if (err < 0)
			return err;
		s += 1 + len;
	}
	*why = NULL;
	return 0;
}

int pts_enclave_parse(const char *text, struct pts_enclave *enc)
{
	const char *why;

	if (!text || !enc)
		return -PTS_ERR_INVALID;
	return parse_spec(text, enc, &why);
}

const char *pts_enclave_spec_error(const char *text)
{
	struct pts_enclave enc;
	const char *why;

	if (!text)
		return "no spec";
	parse_spec(text, &enc, &why);
	return why;
}

int pts_enclave_find(const struct pts_win_model *m, uint64_t ip,
		     int production_only)
{
	for (size_t i = 0; i < m->n_enclaves; i++) {
		const struct pts_enclave *e = &m->enclaves[i];

		if (production_only && e->kind != PTS_ENCLAVE_PRODUCTION)
			continue;
		if (ip >= e->begin && ip < e->end)
			return (int)i;
	}
	return -1;
}

int pts_enclave_find_aep(const struct pts_win_model *m, uint64_t ip)
{
	for (size_t i = 0; i < m->n_enclaves; i++) {
		const struct pts_enclave *e = &m->enclaves[i];

		if (e->kind == PTS_ENCLAVE_PRODUCTION && e->has_aep &&
		    e->aep == ip)
			return (int)i;
	}
	return -1;
}

int pts_enclave_find_eexit(const struct pts_win_model *m, uint64_t ip)
{
	for (size_t i = 0; i < m->n_enclaves; i++) {
		const struct pts_enclave *e = &m->enclaves[i];

		if (e->kind != PTS_ENCLAVE_PRODUCTION)
			continue;
		for (unsigned k = 0; k < e->n_eexit; k++)
			if (e->eexit[k] == ip)
				return (int)i;
	}
	return -1;
}

int pts_enclave_has_production(const struct pts_win_model *m)
{
	for (size_t i = 0; i < m->n_enclaves; i++)
		if (m->enclaves[i].kind == PTS_ENCLAVE_PRODUCTION)
			return 1;
	return 0;
}

/* The SDKs (Intel's uRTS, the Linux vDSO) return from an enclave to the
 * instruction after the ENCLU that entered it: EENTER leaves that address in
 * RCX and the enclave's EEXIT goes there. Remember the entry sites seen, so
 * that an ERESUME gap (opened at the AEP) can still be closed by an EEXIT
 * back to the original call site. */
static int site_known(const uint64_t *sites, unsigned count, uint64_t ip)
{
	unsigned n = count < PTS_WIN_ENTRY_SITES ? count : PTS_WIN_ENTRY_SITES;

	for (unsigned i = 0; i < n; i++)
		if (sites[i] == ip)
			return 1;
	return 0;
}

static void site_note(uint64_t *sites, unsigned *count, uint64_t ip)
{
	if (!site_known(sites, *count, ip))
		sites[(*count)++ % PTS_WIN_ENTRY_SITES] = ip;
}

void pts_enclave_note_entry(struct pts_win_model *m, uint64_t enclu_ip)
{
	site_note(m->entry_sites, &m->n_entry_sites, enclu_ip + PTS_ENCLU_SIZE);
}

int pts_enclave_is_entry_return(const struct pts_win_model *m, uint64_t ip)
{
	return site_known(m->entry_sites, m->n_entry_sites, ip);
}

/* Without a map, the code shows AEPs: an enclave gap that ends at an ENCLU
 * ended with an AEX (the AEX flow leaves EAX = 3, ERESUME, and RIP = AEP;
 * the SDKs put a bare ENCLU there). A later FUP + TIP.PGD() there is an
 * ERESUME. */
void pts_enclave_note_aep(struct pts_win_model *m, uint64_t aep)
{
	site_note(m->aep_sites, &m->n_aep_sites, aep);
}

int pts_enclave_is_learned_aep(const struct pts_win_model *m, uint64_t ip)
{
	return site_known(m->aep_sites, m->n_aep_sites, ip);
}

/* Debug enclaves are traced like any code (SDM 36.2.8.3): EENTER and
 * ERESUME show as FUP(ENCLU) + TIP(inside ELRANGE), EEXIT and AEX as
 * FUP(inside) + TIP(outside), the AEX landing on the AEP (digest 4.5). */
void pts_enclave_debug_branch(struct pts_win_model *m, uint64_t from,
			      uint64_t to)
{
	int in_from = pts_enclave_find(m, from, 0);
	int in_to = pts_enclave_find(m, to, 0);
	const struct pts_enclave *e;

	if (in_from == in_to)
		return;
	if (in_to >= 0 && m->enclaves[in_to].kind == PTS_ENCLAVE_DEBUG) {
		e = &m->enclaves[in_to];
		if (e->has_aep && e->aep == from)
			m->sum.eresume++;
		else
			m->sum.eenter++;
	}
	if (in_from >= 0 && m->enclaves[in_from].kind == PTS_ENCLAVE_DEBUG) {
		e = &m->enclaves[in_from];
		if (e->has_aep && e->aep == to)
			m->sum.aex++;
		else
			m->sum.eexit++;
	}
}
