/* ptscope model layer, part 1: enable windows, gaps and their causes.
 *
 * What the packets mean without the program's code (docs/pt-sgx-facts.md
 * sections 3, 4 and 6): the enable-state machine (TriggerEn, ContextEn,
 * FilterEn, BranchEn -> PacketEn) driven by packets, the windows in which
 * PacketEn = 1, the gaps in which it is 0 with a cause from a fixed list, the
 * enclave map, time from TSC/TMA/MTC/CYC/CBR, and the named verification
 * rules of section 4.7.
 *
 * Data flow: the caller decodes packets (packets.h) and pushes them, in
 * stream order, into a struct pts_win_model with pts_win_feed(); records
 * (windows, gaps, violations) come out of pts_win_next() in the order they
 * are complete. A flow decoder that walks the program's code adds what only
 * code can tell through pts_win_evidence().
 *
 * Return convention: int >= 0 is success, < 0 is -PTS_ERR_* (packets.h).
 */
#ifndef PTSCOPE_WINDOWS_H
#define PTSCOPE_WINDOWS_H

#include <ptscope/packets.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Configuration. The trace configuration file format (--config, model.h)
 * and perf.data attributes fill this struct once they exist; until then the
 * command-line options do.                                                  */

/* IA32_RTIT_CTL bits (SDM 36.2.7.2, Table 36-6). */
#define PTS_CTL_TRACEEN (1ull << 0)
#define PTS_CTL_CYCEN (1ull << 1)
#define PTS_CTL_OS (1ull << 2)
#define PTS_CTL_USER (1ull << 3)
#define PTS_CTL_PWREVTEN (1ull << 4)
#define PTS_CTL_CR3FILTER (1ull << 7)
#define PTS_CTL_MTCEN (1ull << 9)
#define PTS_CTL_TSCEN (1ull << 10)
#define PTS_CTL_DISRETC (1ull << 11)
#define PTS_CTL_PTWEN (1ull << 12)
#define PTS_CTL_BRANCHEN (1ull << 13)
#define PTS_CTL_MTCFREQ_SHIFT 14 /* 4 bits */
#define PTS_CTL_EVENTEN (1ull << 31)
#define PTS_CTL_ADDR_CFG_SHIFT(n) (32 + 4 * (n)) /* ADDRn_CFG, 4 bits */

/* ADDRn_CFG values. */
enum pts_addr_cfg {
	PTS_ADDR_UNUSED = 0,
	PTS_ADDR_FILTER = 1, /* FilterEn range */
	PTS_ADDR_STOP = 2    /* TraceStop range */
};

/* Which fields of struct pts_trace_config hold real values. */
enum pts_cfg_known {
	PTS_CFG_CTL = 1u << 0,     /* ctl (and with it the ADDRn_CFG fields) */
	PTS_CFG_ADDR = 1u << 1,    /* addr_a/addr_b */
	PTS_CFG_CR3 = 1u << 2,     /* cr3_match */
	PTS_CFG_CPUID15 = 1u << 3, /* cpuid_15_* */
	PTS_CFG_NOMFREQ = 1u << 4, /* nom_freq */
	PTS_CFG_MTCFREQ = 1u << 5  /* mtc_freq (else taken from ctl) */
};

/* Production enclaves run with ContextEn forced to 0 (SDM 36.2.5.3); debug
 * enclaves are traced like any code (SDM 36.2.8.3). */
enum pts_enclave_kind { PTS_ENCLAVE_PRODUCTION = 0, PTS_ENCLAVE_DEBUG = 1 };

#define PTS_ENCLAVE_MAX_EEXIT 4

/* One enclave: its ELRANGE [begin, end), its kind, the asynchronous exit
 * pointer registered for its threads (the TIP.PGE target after an AEX) and
 * known EEXIT targets besides the usual one (the instruction after the
 * ENCLU that entered, which the model learns from the trace). */
struct pts_enclave {
	uint64_t begin, end;
	uint64_t aep;
	uint64_t eexit[PTS_ENCLAVE_MAX_EEXIT];
	uint8_t n_eexit;
	uint8_t kind; /* enum pts_enclave_kind */
	uint8_t has_aep;
	char name[32];
};

struct pts_trace_config {
	uint32_t known; /* enum pts_cfg_known bits */
	uint64_t ctl;   /* IA32_RTIT_CTL */
	uint64_t addr_a[4], addr_b[4]; /* IA32_RTIT_ADDRn_A/B, inclusive */
	uint64_t cr3_match;            /* IA32_RTIT_CR3_MATCH */
	uint32_t cpuid_15_eax, cpuid_15_ebx, cpuid_15_ecx;
	uint8_t nom_freq; /* MSR_PLATFORM_INFO[15:8]: max non-turbo ratio */
	uint8_t mtc_freq; /* with PTS_CFG_MTCFREQ */
	struct pts_cpu cpu;
	/* The enclave map; owned by the caller, must outlive the model. */
	const struct pts_enclave *enclaves;
	size_t n_enclaves;
};

/* How an enclave spec reads an address (`synth` reads SYMBOL[+OFFSET] of
 * its image too): @read returns 0 with *@v, or -1 when @text names none.
 * A NULL reader takes numbers only (0x hex or decimal). */
struct pts_enclave_addr_reader {
	int (*read)(void *ctx, const char *text, uint64_t *v);
	void *ctx;
};

/* Parses an enclave spec "BEGIN-END:production|debug[,aep=ADDR]
 * [,eexit=ADDR]...[,entry=ADDR][,name=N]" (END exclusive; entry= is the
 * OENTRY `synth` enters at, into *@entry when not NULL) into @enc.
 * Returns 0 (*@why NULL), -PTS_ERR_BAD_FORMAT or -PTS_ERR_BAD_CONFIG (END
 * not above BEGIN, too many eexit=) with *@why saying what is wrong
 * ("END is not above BEGIN", ...). */
int pts_enclave_parse_spec(const char *text,
			   const struct pts_enclave_addr_reader *rd,
			   struct pts_enclave *enc, uint64_t *entry,
			   const char **why);
/* The same with numbers only and without the reason. */
int pts_enclave_parse(const char *text, struct pts_enclave *enc);
/* One OPTION of a spec (@len bytes at @opt, "aep=0x1000"), applied to @enc
 * (entry= to *@entry when not NULL); returns as pts_enclave_parse_spec(). */
int pts_enclave_option(struct pts_enclave *enc, uint64_t *entry,
		       const char *opt, size_t len,
		       const struct pts_enclave_addr_reader *rd,
		       const char **why);
/* enum pts_enclave_kind by its name (@len bytes), or -1. */
int pts_enclave_kind_of(const char *word, size_t len);

/* Parses an address range "A-B" (both inclusive, as ADDRn_A/B) into the
 * first unused ADDRn of @cfg with ADDRn_CFG = @cfg_kind; sets PTS_CFG_CTL and
 * PTS_CFG_ADDR. Returns 0, -PTS_ERR_INVALID for bad text, -PTS_ERR_BAD_CONFIG
 * when all four ranges are used. */
int pts_config_add_range(struct pts_trace_config *cfg, const char *text,
			 enum pts_addr_cfg cfg_kind);

/* The MTC frequency N in use (mtc_freq when known, else CTL[17:14]). */
unsigned pts_config_mtc_freq(const struct pts_trace_config *cfg);

/* TSC frequency in Hz from CPUID 0x15 (ECX * EBX / EAX) or, failing that,
 * from the nominal ratio times 100 MHz; 0 when neither is known. */
uint64_t pts_config_tsc_hz(const struct pts_trace_config *cfg);

/* ------------------------------------------------------------------------ */
/* Records: windows, gaps, violations.                                      */

/* What a gap's cause is (issue #5's fixed list). */
#define PTS_GAP_CAUSES(X)                                                      \
	X(ENCLAVE, "enclave", "production-enclave entry")                      \
	X(CPL, "cpl", "CPL filter (ring not traced)")                          \
	X(CR3, "cr3", "CR3 filter")                                            \
	X(IP_FILTER, "ip-filter", "IP filter range left")                      \
	X(TRACESTOP, "tracestop", "TraceStop range hit")                       \
	X(DISABLED, "disabled", "tracing switched off")                        \
	X(OVERFLOW, "overflow", "internal overflow, data lost")                \
	X(DECODE_ERROR, "decode-error", "decode error, bytes skipped")         \
	X(TRUNCATED, "truncated", "ToPA or AUX truncation")                    \
	X(NEEDS_IMAGES, "needs-images", "only the code can tell")              \
	X(UNKNOWN, "unknown", "no explanation")

enum pts_gap_cause {
#define PTS_GAP_ENUM_(name, str, text) PTS_GAP_##name,
	PTS_GAP_CAUSES(PTS_GAP_ENUM_)
#undef PTS_GAP_ENUM_
	PTS_GAP_CAUSE_COUNT
};

/* Short name ("enclave") and description of a cause; "invalid" if out of
 * range. Never NULL. */
const char *pts_gap_cause_name(int cause);
const char *pts_gap_cause_text(int cause);
/* The enable a cause drops ("ContextEn", "FilterEn", "TriggerEn"), or NULL
 * when the cause is not a change of enables (overflow, lost bytes, ...). */
const char *pts_gap_cause_enable(int cause);

/* How a gap's cause was established. */
enum pts_gap_basis {
	PTS_BASIS_PACKETS = 0, /* the packets alone say it */
	PTS_BASIS_CONFIG,      /* packets + configuration */
	PTS_BASIS_MAP,         /* packets + enclave map */
	PTS_BASIS_PATTERN,     /* a convention (resume at ENCLU + 3, ...) */
	PTS_BASIS_EVIDENCE,    /* the flow decoder's evidence (code) */
	PTS_BASIS_NONE         /* needs-images / unknown */
};
const char *pts_gap_basis_name(int basis);

/* Enclave gaps: how the enclave was entered and left. */
enum pts_enclave_edge {
	PTS_ENCL_NONE = 0, /* not an enclave gap, or trace ended inside */
	PTS_ENCL_EENTER,
	PTS_ENCL_ERESUME,
	PTS_ENCL_EEXIT,
	PTS_ENCL_AEX,
	PTS_ENCL_UNKNOWN /* entered or left, but where is not understood */
};
const char *pts_enclave_edge_name(int edge);

/* What marks one end of a window or gap. */
#define PTS_WIN_EDGES(X)                                                       \
	X(START, "start")           /* first packet of the trace */           \
	X(PGE, "tip.pge")                                                      \
	X(PGD, "tip.pgd")           /* bare TIP.PGD */                        \
	X(FUP_PGD, "fup+tip.pgd")   /* FUP(x) + TIP.PGD */                    \
	X(PSB_FUP, "psb+fup")       /* PSB+ with FUP: enabled */              \
	X(PSB_NOFUP, "psb")         /* PSB+ without FUP: disabled */          \
	X(OVF, "ovf")                                                          \
	X(OVF_FUP, "ovf+fup")                                                  \
	X(STOP, "stop")             /* TraceStop */                           \
	X(SKIP, "skip")             /* bytes skipped or lost */               \
	X(FLOW, "flow")             /* a flow packet without enable */        \
	X(END, "end")               /* end of the trace */

enum pts_win_edge {
#define PTS_WIN_EDGE_ENUM_(name, str) PTS_EDGE_##name,
	PTS_WIN_EDGES(PTS_WIN_EDGE_ENUM_)
#undef PTS_WIN_EDGE_ENUM_
	PTS_EDGE_COUNT
};
const char *pts_win_edge_name(int edge);

/* The verification rules (docs/pt-sgx-facts.md 4.7), in order of gravity. */
#define PTS_RULES(X)                                                           \
	X(ENCLAVE_IP_LEAK, "enclave-ip-leak")                                  \
	X(FLOW_IN_ENCLAVE_GAP, "flow-in-enclave-gap")                          \
	X(ENTRY_NOT_ENCLU, "entry-not-enclu")                                  \
	X(ENCLAVE_EXIT_UNEXPECTED, "enclave-exit-unexpected")                  \
	X(OVF_IN_ENCLAVE_GAP, "ovf-in-enclave-gap")                            \
	X(UNEXPLAINED_GAP, "unexplained-gap")                                  \
	X(UNBALANCED, "pge-pgd-unbalanced")                                    \
	X(RETSTACK_EMPTY, "retstack-empty")

enum pts_rule {
#define PTS_RULE_ENUM_(name, str) PTS_RULE_##name,
	PTS_RULES(PTS_RULE_ENUM_)
#undef PTS_RULE_ENUM_
	PTS_RULE_COUNT
};
const char *pts_rule_name(int rule);

enum pts_win_type { PTS_REC_WINDOW = 0, PTS_REC_GAP, PTS_REC_VIOLATION };

/* One end of a window or gap. */
struct pts_win_point {
	uint64_t offset; /* stream offset of the packet that marks it */
	uint64_t ip;     /* valid with has_ip */
	uint64_t tsc;    /* TSC ticks; valid with has_time */
	uint8_t has_ip;
	uint8_t has_time;
	uint8_t edge; /* enum pts_win_edge */
};

/* Gap flags. */
#define PTS_GAPF_UNCERTAIN 0x01 /* an OVF inside: enable changes may be lost */
#define PTS_GAPF_TRAILING 0x02  /* the trace ends inside the gap */

struct pts_win_record {
	uint8_t type; /* enum pts_win_type */
	/* Gaps. */
	uint8_t cause;             /* enum pts_gap_cause */
	uint8_t basis;             /* enum pts_gap_basis */
	uint8_t entry, exit;       /* enum pts_enclave_edge */
	uint8_t flags;             /* PTS_GAPF_* */
	int16_t enclave;           /* index in the map, -1 when none */
	uint32_t candidates;       /* needs-images: 1 << cause for each one */
	uint32_t psbs, ovfs, cbrs; /* PSB+, OVF and CBR packets inside */
	/* Violations. */
	uint8_t rule; /* enum pts_rule */
	/* Windows and gaps: the two ends; violations: begin only. */
	struct pts_win_point begin, end;
	/* Windows: packets, TNT bits and TIPs inside. */
	uint64_t packets, tnt_bits, tips;
	char detail[112]; /* violations and some gaps: one line, no newline */
};

/* ------------------------------------------------------------------------ */
/* The model.                                                               */

struct pts_win_model;

/* Allocates a model for a trace recorded with @cfg (copied; its enclave map
 * is not, see struct pts_trace_config). @cfg may be NULL: nothing known.
 * Returns NULL on no memory. */
struct pts_win_model *pts_win_new(const struct pts_trace_config *cfg);
/* Frees @m; NULL is a no-op. */
void pts_win_free(struct pts_win_model *m);

/* Whether @m checks the verification rules (on when made). Off, it makes
 * no violation records and counts none (pts_win_summary()); windows and
 * gaps stay the same. For callers that do not show violations: their
 * details are then not even formatted. NULL is a no-op. */
void pts_win_set_verify(struct pts_win_model *m, int on);

/* Applies one packet (in stream order). Drain pts_win_next() after each
 * call that returns > 0: at most a few records are queued per packet.
 * Returns the number of records pending (>= 0), -PTS_ERR_INVALID for NULL
 * arguments or after pts_win_end(), -PTS_ERR_INTERNAL when records were not
 * drained (some were lost). */
int pts_win_feed(struct pts_win_model *m, const struct pts_packet *pkt);

/* The fast path: applies up to @n packets of @pkts, stopping after the
 * first one that queues a record. Returns how many were applied (the
 * caller drains pts_win_next() and calls again with the rest; n = 0 gives
 * 0), or an error as pts_win_feed(). */
int pts_win_feed_batch(struct pts_win_model *m, const struct pts_packet *pkts,
		       int n);

/* For feeding the model from pts_pkt_skim_batch(): the actions it takes
 * now (PTS_PKT_KIND_COUNT entries: the kinds that only add to counts
 * skipped, those that may change the state stopping, the timing packets
 * handed to the model's clock through *@call, the rest kept), or NULL when
 * every packet must be fed one by one (inside PSB+, at the start of the
 * trace...: use pts_pkt_next_batch()). Valid until the model is fed
 * again. */
const uint8_t *pts_win_skim_actions(struct pts_win_model *m,
				    struct pts_skim_call *call);

/* Applies what pts_pkt_skim_batch() skipped with the actions that
 * pts_win_skim_actions() gave (before the packets it stored, which go to
 * pts_win_feed_batch()). Returns 0, or -PTS_ERR_INVALID. */
int pts_win_feed_skipped(struct pts_win_model *m, const struct pts_skim *sum);

/* Bytes [@begin, @end) of the stream were lost: @cause is
 * PTS_GAP_DECODE_ERROR (the packet decoder skipped them) or
 * PTS_GAP_TRUNCATED (ToPA or AUX data missing). Tracing state is unknown
 * afterwards until the next PSB+ or TIP.PGE. Same returns as pts_win_feed,
 * and -PTS_ERR_INVALID for another cause. */
int pts_win_lost(struct pts_win_model *m, int cause, uint64_t begin,
		 uint64_t end);

/* Ends the trace at stream offset @end: closes the open window or gap.
 * Same returns as pts_win_feed; later calls return 0. */
int pts_win_end(struct pts_win_model *m, uint64_t end);

/* Takes the next complete record. Returns 1 and fills @rec, 0 when none is
 * pending, -PTS_ERR_INVALID for NULL arguments. */
int pts_win_next(struct pts_win_model *m, struct pts_win_record *rec);

/* ------------------------------------------------------------------------ */
/* Evidence from the code (the flow decoder, with images). Extension point:
 * packets alone cannot say which instruction disabled tracing; the flow
 * decoder can, and each piece sharpens a cause or finds a violation.        */

enum pts_ev_insn {
	PTS_EV_INSN_OTHER = 0,
	PTS_EV_INSN_ENCLU,      /* 0F 01 D7: EENTER/ERESUME (by leaf) */
	PTS_EV_INSN_SYSCALL,    /* SYSCALL, SYSENTER, INT n: into ring 0 */
	PTS_EV_INSN_RET_USER,   /* SYSRET, SYSEXIT, IRET to ring 3 */
	PTS_EV_INSN_MOV_CR3,
	PTS_EV_INSN_WRMSR,      /* may clear TraceEn */
	PTS_EV_INSN_COND_BRANCH, /* may leave an IP filter range silently */
	PTS_EV_INSN_NEAR_BRANCH  /* near JMP/CALL/RET, direct or not: it
				    changes neither CPL nor CR3, so only
				    FilterEn can drop at it */
};

enum pts_evidence_kind {
	/* The instruction at which tracing stopped for the open gap (the FUP
	 * address of FUP+TIP.PGD, or the branch a bare TIP.PGD binds to). */
	PTS_EV_DISABLE_INSN = 0,
	/* A compressed RET met an empty return stack (SDM 36.2.1.2). */
	PTS_EV_RETSTACK_EMPTY,
	/* The instruction at which tracing resumed for the open gap (the
	 * TIP.PGE target). An ENCLU there is an AEP: the AEX flow sets RIP to
	 * the AEP with EAX = 3 and the SDKs put a bare ENCLU (ERESUME) there
	 * (Vol. 3D 40.4; digest 4.1). */
	PTS_EV_ENABLE_INSN
};

struct pts_win_evidence {
	uint8_t kind;       /* enum pts_evidence_kind */
	uint8_t insn_class; /* PTS_EV_DISABLE_INSN: enum pts_ev_insn */
	uint64_t offset;    /* stream offset of the packet it concerns */
	uint64_t ip;        /* the instruction's address */
};

/* Adds one piece of evidence. PTS_EV_DISABLE_INSN belongs to the gap now
 * open: give it after feeding the TIP.PGD and before the packet that ends
 * the gap; the gap's cause is then decided with it (an ENCLU makes an
 * enclave gap; another instruction where the map or the SDK convention saw
 * an enclave call is the entry-not-enclu violation). For FUP + TIP.PGD the
 * instruction is the one at the FUP (not executed yet: only ENCLU, WRMSR or
 * other matter); for a bare TIP.PGD the branch it binds to.
 * PTS_EV_ENABLE_INSN also belongs to the open gap: give it before feeding
 * the TIP.PGE it describes. PTS_EV_RETSTACK_EMPTY may come at any time.
 * Returns the records pending (>= 0).
 * Returns -PTS_ERR_INVALID for NULL arguments or an unknown kind.
 * Returns -PTS_ERR_NOSYNC for PTS_EV_DISABLE_INSN while no gap is open.
 * Returns -PTS_ERR_INTERNAL when records were not drained. */
int pts_win_evidence(struct pts_win_model *m,
		     const struct pts_win_evidence *ev);

/* ------------------------------------------------------------------------ */
/* Summary over the records taken with pts_win_next() so far.             */

/* The tick sums (window_ticks, gap_ticks) stop at UINT64_MAX. */
struct pts_win_summary {
	uint64_t windows, window_bytes, window_ticks;
	uint64_t gaps[PTS_GAP_CAUSE_COUNT];
	uint64_t gap_bytes[PTS_GAP_CAUSE_COUNT];
	uint64_t gap_ticks[PTS_GAP_CAUSE_COUNT];
	uint64_t violations[PTS_RULE_COUNT];
	/* Enclave entries and exits: the edges of production-enclave gaps,
	 * and the FUP + TIP pairs that cross a debug enclave's ELRANGE
	 * (counted when the TIP is fed, SDM 36.2.8.3). */
	uint64_t eenter, eresume, eexit, aex;
	uint64_t first_tsc, last_tsc;         /* valid with has_time */
	uint8_t has_time;
	uint8_t packets_only; /* no evidence was ever given */
	/* MTCs came, but without the CPUID 0x15 ratio they do not move
	 * time: only TSC packets do. */
	uint8_t mtc_unrated;
	/* Records that end earlier than they begin: the clock's estimate
	 * from CYCs ran past an MTC that came later (libipt's algorithm
	 * does the same), or a TSC went back; their ticks are left out of
	 * the sums. */
	uint64_t backwards;
};

/* Copies the running summary into @sum. Returns 0 or -PTS_ERR_INVALID. */
int pts_win_summary(const struct pts_win_model *m,
		    struct pts_win_summary *sum);

#ifdef __cplusplus
}
#endif

#endif /* PTSCOPE_WINDOWS_H */
