/* The enclave map: looking addresses up (specs: enclave_spec.c).
 *
 * An enclave is named by its ELRANGE (the linear range its pages occupy),
 * production or debug (SECS.ATTRIBUTES.DEBUG, SDM Vol. 3D 43.1.1), the AEP
 * its threads registered with EENTER/ERESUME (RCX), where an AEX lands
 * (Vol. 3D 40.4), and optionally EEXIT targets (RBX at EEXIT).
 */
#include "windows_internal.h"

#include <string.h>

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
