/* Names of causes, bases, enclave edges, window edges and rules: the words
 * the text and JSON outputs use (stable: golden files depend on them). */
#include "windows_internal.h"

static const char *const cause_names[] = {
#define PTS_GAP_NAME_(name, str, text) str,
	PTS_GAP_CAUSES(PTS_GAP_NAME_)
#undef PTS_GAP_NAME_
};

static const char *const cause_texts[] = {
#define PTS_GAP_TEXT_(name, str, text) text,
	PTS_GAP_CAUSES(PTS_GAP_TEXT_)
#undef PTS_GAP_TEXT_
};

static const char *const edge_names[] = {
#define PTS_EDGE_NAME_(name, str) str,
	PTS_WIN_EDGES(PTS_EDGE_NAME_)
#undef PTS_EDGE_NAME_
};

static const char *const rule_names[] = {
#define PTS_RULE_NAME_(name, str) str,
	PTS_RULES(PTS_RULE_NAME_)
#undef PTS_RULE_NAME_
};

static const char *const basis_names[] = {
	"packets", "config", "map", "pattern", "evidence", "none",
};

static const char *const encl_names[] = {
	"none", "eenter", "eresume", "eexit", "aex", "unknown",
};

#define LOOKUP(table, i)                                                       \
	((i) >= 0 && (unsigned)(i) < sizeof(table) / sizeof(table[0])         \
		 ? table[i]                                                    \
		 : "invalid")

const char *pts_gap_cause_name(int cause) { return LOOKUP(cause_names, cause); }
const char *pts_gap_cause_text(int cause) { return LOOKUP(cause_texts, cause); }
const char *pts_win_edge_name(int edge) { return LOOKUP(edge_names, edge); }
const char *pts_rule_name(int rule) { return LOOKUP(rule_names, rule); }
const char *pts_gap_basis_name(int basis) { return LOOKUP(basis_names, basis); }
const char *pts_enclave_edge_name(int edge) { return LOOKUP(encl_names, edge); }

/* Which term of PacketEn = TriggerEn & ContextEn & FilterEn & BranchEn
 * (SDM 36.2.5.1) each cause drops. */
const char *pts_gap_cause_enable(int cause)
{
	switch (cause) {
	case PTS_GAP_ENCLAVE: /* SDM 36.2.5.3: forced 0 inside */
	case PTS_GAP_CPL:
	case PTS_GAP_CR3:
		return "ContextEn";
	case PTS_GAP_IP_FILTER:
		return "FilterEn";
	case PTS_GAP_TRACESTOP:
	case PTS_GAP_DISABLED:
		return "TriggerEn";
	default:
		return NULL;
	}
}

/* PTS_WIN_ZERO's source (windows_internal.h). Defined apart from its users
 * so that the compiler, not seeing it is all zeros, keeps the copy. */
const unsigned char pts_win_zeros[256];
