/* ptscope packet layer: bytes in, Intel PT packets out (and the inverse).
 *
 * Everything here depends on libc only. The decoder is streaming: the caller
 * owns the input view (struct pts_input) and may feed chunks of any size; a
 * packet cut by a chunk edge is joined inside the decoder. Every packet
 * carries the 64-bit stream offset of its first byte.
 *
 * Return convention (as libipt): int >= 0 is success, < 0 is -PTS_ERR_*.
 */
#ifndef PTSCOPE_PACKETS_H
#define PTSCOPE_PACKETS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Errors: one list makes the enum, the messages and the names.             */

#define PTS_ERRORS(X)                                                          \
	X(OK, "success")                                                       \
	X(INVALID, "invalid argument")                                         \
	X(INTERNAL, "internal error")                                          \
	X(NOMEM, "out of memory")                                              \
	X(AGAIN, "need more input")                                            \
	X(EOS, "end of stream")                                                \
	X(TRUNCATED, "stream ends inside a packet")                            \
	X(BAD_OPCODE, "unknown opcode")                                        \
	X(BAD_PACKET, "invalid packet payload")                                \
	X(BAD_IPC, "reserved IP compression")                                  \
	X(CYC_TOO_LONG, "CYC packet longer than 15 bytes")                     \
	X(NOSYNC, "no PSB found")                                              \
	X(SKIPPED, "bytes skipped to resynchronize")                           \
	X(NO_PROGRESS, "decoder made no progress")                             \
	X(IO, "input/output error")                                            \
	X(BAD_CONFIG, "invalid configuration")                                 \
	X(BAD_FORMAT, "malformed input file")                                  \
	X(NOMAP, "no code mapped at address")                                  \
	X(BAD_INSN, "cannot decode instruction")                               \
	X(TRACE_MISMATCH, "trace does not match the code")                     \
	X(RETSTACK_EMPTY, "compressed return with an empty return stack")     \
	X(UNSUPPORTED, "not supported")                                        \
	X(BAD_MODE, "code in an unknown execution mode (reserved MODE.Exec)") \
	X(TOO_LARGE, "number too large")

enum pts_error {
#define PTS_ERR_ENUM_(name, msg) PTS_ERR_##name,
	PTS_ERRORS(PTS_ERR_ENUM_)
#undef PTS_ERR_ENUM_
	PTS_ERR_COUNT
};

/* Message for an error code; accepts either sign. Never NULL. */
const char *pts_strerror(int err);
/* Short upper-case name of an error code ("BAD_OPCODE"); never NULL. */
const char *pts_errname(int err);

/* The number that fills [@s, @end) exactly, as users write them in specs
 * and description files: "0x" (or "0X") and hex digits, or decimal digits;
 * no sign, no blanks (a leading 0 is not octal). Returns 0 and sets *@v,
 * -PTS_ERR_TOO_LARGE for a well-formed number above UINT64_MAX, or
 * -PTS_ERR_INVALID. */
int pts_parse_u64(const char *s, const char *end, uint64_t *v);
/* The range "A-B" that fills [@s, @end) exactly, A and B as
 * pts_parse_u64() reads them. Returns 0 and sets *@a and *@b, or
 * pts_parse_u64()'s error; B below A is left for the caller to say. */
int pts_parse_range(const char *s, const char *end, uint64_t *a, uint64_t *b);

/* ------------------------------------------------------------------------ */
/* Packet kinds: one list makes the enum and the names used in JSON.        */

#define PTS_PKT_KINDS(X)                                                       \
	X(PAD, "pad")                                                          \
	X(TNT8, "tnt.8")                                                       \
	X(TNT64, "tnt.64")                                                     \
	X(TIP, "tip")                                                          \
	X(TIP_PGE, "tip.pge")                                                  \
	X(TIP_PGD, "tip.pgd")                                                  \
	X(FUP, "fup")                                                          \
	X(PIP, "pip")                                                          \
	X(MODE_EXEC, "mode.exec")                                              \
	X(MODE_TSX, "mode.tsx")                                                \
	X(STOP, "stop")                                                        \
	X(CBR, "cbr")                                                          \
	X(TSC, "tsc")                                                          \
	X(MTC, "mtc")                                                          \
	X(TMA, "tma")                                                          \
	X(CYC, "cyc")                                                          \
	X(VMCS, "vmcs")                                                        \
	X(OVF, "ovf")                                                          \
	X(PSB, "psb")                                                          \
	X(PSBEND, "psbend")                                                    \
	X(MNT, "mnt")                                                          \
	X(PTW, "ptw")                                                          \
	X(EXSTOP, "exstop")                                                    \
	X(MWAIT, "mwait")                                                      \
	X(PWRE, "pwre")                                                        \
	X(PWRX, "pwrx")                                                        \
	X(BBP, "bbp")                                                          \
	X(BIP, "bip")                                                          \
	X(BEP, "bep")                                                          \
	X(CFE, "cfe")                                                          \
	X(EVD, "evd")

enum pts_pkt_kind {
#define PTS_PKT_ENUM_(name, str) PTS_PKT_##name,
	PTS_PKT_KINDS(PTS_PKT_ENUM_)
#undef PTS_PKT_ENUM_
	PTS_PKT_KIND_COUNT
};

/* Lower-case name of a packet kind ("tip.pgd"); "invalid" when out of range. */
const char *pts_pkt_kind_name(int kind);

/* IP compression (IPBytes field, bits 7:5 of an IP packet's header). */
enum pts_ipc {
	PTS_IPC_SUPPRESSED = 0, /* no payload */
	PTS_IPC_UPDATE_16 = 1,  /* 2 bytes, replaces last-IP[15:0] */
	PTS_IPC_UPDATE_32 = 2,  /* 4 bytes, replaces last-IP[31:0] */
	PTS_IPC_SEXT_48 = 3,    /* 6 bytes, sign-extended from bit 47 */
	PTS_IPC_UPDATE_48 = 4,  /* 6 bytes, replaces last-IP[47:0] */
	PTS_IPC_FULL = 6        /* 8 bytes */
};

/* One decoded packet. A plain value: 32 bytes, no pointers. Which union
 * member is valid follows from @kind (see the comment on each member). */
struct pts_packet {
	uint64_t offset; /* stream offset of the first byte */
	uint8_t kind;    /* enum pts_pkt_kind */
	uint8_t size;    /* bytes in the stream (1..16) */
	uint8_t ipc;     /* IP packets: enum pts_ipc (IPBytes); else 0 */
	uint8_t reserved_[5];
	union {
		/* TNT8, TNT64. @bits holds @count results, the oldest in bit
		 * count-1, the youngest in bit 0 (stop bit removed; libipt's
		 * payload/bit_size). */
		struct {
			uint64_t bits;
			uint8_t count;
		} tnt;
		/* TIP, TIP_PGE, TIP_PGD, FUP. @payload is the raw payload
		 * (zero-extended; its compression is the packet's @ipc).
		 * @ip is the reconstructed IP from the decoder's last-IP
		 * (reset at PSB, kept across OVF as the SDM says); 0 when
		 * @ipc is PTS_IPC_SUPPRESSED. */
		struct {
			uint64_t payload;
			uint64_t ip;
		} ip;
		/* PIP */
		struct {
			uint64_t cr3;
			uint8_t nr;
		} pip;
		/* MODE_EXEC: CS.L, CS.D and (Event Trace) IF. */
		struct {
			uint8_t csl, csd, iflag;
		} exec;
		/* MODE_TSX */
		struct {
			uint8_t intx, abrt;
		} tsx;
		/* CBR */
		struct {
			uint8_t ratio;
		} cbr;
		/* TSC: the 56-bit counter value */
		uint64_t tsc;
		/* MTC: CTC[N+7:N] */
		uint8_t mtc_ctc;
		/* TMA */
		struct {
			uint16_t ctc;
			uint16_t fc;
		} tma;
		/* CYC */
		uint64_t cyc;
		/* VMCS: the VMCS pointer (payload << 12) */
		uint64_t vmcs_base;
		/* MNT */
		uint64_t mnt;
		/* PTW: payload, payload-size code (0: 4 bytes, 1: 8 bytes), IP */
		struct {
			uint64_t payload;
			uint8_t plc;
			uint8_t ip;
		} ptw;
		/* EXSTOP */
		struct {
			uint8_t ip;
		} exstop;
		/* MWAIT */
		struct {
			uint32_t hints;
			uint32_t ext;
		} mwait;
		/* PWRE: resolved thread C-state/sub-state; HW from byte 2 bit 7 */
		struct {
			uint8_t state, sub_state, hw;
		} pwre;
		/* PWRX */
		struct {
			uint8_t last, deepest;
			uint8_t interrupt, store, autonomous;
		} pwrx;
		/* BBP: item size flag (1: 4-byte BIPs), block type */
		struct {
			uint8_t sz, type;
		} bbp;
		/* BIP: item id, payload (4 or 8 bytes as the BBP said) */
		struct {
			uint64_t payload;
			uint8_t id;
		} bip;
		/* BEP */
		struct {
			uint8_t ip;
		} bep;
		/* CFE: event type, vector, IP bit */
		struct {
			uint8_t type, vector, ip;
		} cfe;
		/* EVD: type, payload */
		struct {
			uint64_t payload;
			uint8_t type;
		} evd;
	} u;
};

/* ------------------------------------------------------------------------ */
/* Last-IP tracking (SDM 36.4.2.2), a unit of its own.                      */

struct pts_lastip {
	uint64_t ip;
	uint8_t have; /* 0 after reset: compressed forms update against 0 */
};

void pts_lastip_reset(struct pts_lastip *lip);
/* Applies one IP payload. Returns 1 and sets *@ip for an IP, 0 when
 * suppressed (last-IP untouched), -PTS_ERR_BAD_IPC for 5 and 7. */
int pts_lastip_update(struct pts_lastip *lip, unsigned ipc, uint64_t payload,
		      uint64_t *ip);

/* ------------------------------------------------------------------------ */
/* Errata and CPU (ptdump's --cpu).                                         */

struct pts_cpu {
	uint16_t family;
	uint8_t model;
	uint8_t stepping;
};

/* Parses "FAMILY/MODEL[/STEPPING]" (decimal or 0x hex) or "none". Returns 0
 * or -PTS_ERR_INVALID. "none" gives family 0: no errata. */
int pts_cpu_parse(const char *text, struct pts_cpu *cpu);

struct pts_errata {
	uint32_t bdm70 : 1;  /* PSB+ before TIP.PGE may hold FUP/MODE.Exec */
	uint32_t bdm64 : 1;  /* bad target after TSX abort */
	uint32_t skd007 : 1; /* OVF inside a multi-byte CYC */
	uint32_t skd022 : 1; /* VM entry clearing TraceEn: FUP before PGD */
	uint32_t skd010 : 1; /* FUP after OVF may be missing */
	uint32_t skl014 : 1; /* PGD on direct branch leaving filter lacks IP */
	uint32_t apl12 : 1;  /* OVF then spurious FUP while disabled */
	uint32_t apl11 : 1;  /* OVF followed by TIP.PGD */
	uint32_t skl168 : 1; /* CYC/MTC dropped before PSB */
	uint32_t skz84 : 1;  /* TMA corrupt with VMX TSC offsetting */
};

/* The errata that apply to @cpu (as libipt's pt_cpu_errata). */
void pts_cpu_errata(const struct pts_cpu *cpu, struct pts_errata *errata);

/* ------------------------------------------------------------------------ */
/* The streaming packet decoder.                                            */

/* A caller-owned view of input bytes; the decoder advances @pos. */
struct pts_input {
	const uint8_t *data;
	size_t size;
	size_t pos;
};

struct pts_pkt_config {
	struct pts_cpu cpu;
	/* 1: the stream starts at a packet boundary, decode from byte 0.
	 * 0 (default): search for the first PSB; bytes before it are reported
	 * as a skip (-PTS_ERR_SKIPPED) when there are any. */
	uint8_t no_sync;
	/* Stream offset of the first byte fed (default 0). */
	uint64_t base_offset;
};

struct pts_pkt_decoder;

/* Allocates a decoder; @config may be NULL for defaults. NULL on no memory. */
struct pts_pkt_decoder *pts_pkt_decoder_new(const struct pts_pkt_config *config);
/* Frees @dec; NULL is a no-op. */
void pts_pkt_decoder_free(struct pts_pkt_decoder *dec);

/* Decodes the next packet from the carry buffer and @in.
 *
 * Returns the packet size (> 0) and fills @pkt.
 * Returns -PTS_ERR_AGAIN when @in is used up (bytes of a partial packet are
 *   kept inside; feed the next chunk with a fresh view).
 * Returns -PTS_ERR_EOS after pts_pkt_end() once everything is consumed.
 * Returns -PTS_ERR_TRUNCATED after pts_pkt_end() when the stream ends inside a
 *   packet; pts_pkt_error_range() gives the packet's offset and the end.
 * Returns -PTS_ERR_SKIPPED when bytes were skipped (before the first PSB, or
 *   to resynchronize after an error); pts_pkt_error_range() gives them. The
 *   next call returns the PSB found.
 * Returns another negative code (BAD_OPCODE, BAD_PACKET, BAD_IPC,
 *   CYC_TOO_LONG) for undecodable bytes at the offset pts_pkt_error_range()
 *   gives; the decoder then searches the next PSB by itself.
 */
int pts_pkt_next(struct pts_pkt_decoder *dec, struct pts_input *in,
		 struct pts_packet *pkt);

/* Decodes up to @max packets into @pkts (the fast path: no call per packet).
 * Returns the number decoded (> 0), or, when none could be decoded, what
 * pts_pkt_next() would have returned. A condition met after some packets is
 * returned by the following call. */
int pts_pkt_next_batch(struct pts_pkt_decoder *dec, struct pts_input *in,
		       struct pts_packet *pkts, int max);

/* Decodes as pts_pkt_next_batch() does, up to @max packets, but keeps no
 * packet: each adds 1 to @counts[its kind] (@counts has PTS_PKT_KIND_COUNT
 * entries, which the caller zeroes once). For checking a whole trace
 * (`ptscope dump --quiet`): storing no packets makes decoding about 10%
 * faster. Errors, skips, resync and the state after the call are those of
 * pts_pkt_next_batch(); so are the returns (the number of packets counted).
 */
int pts_pkt_count_batch(struct pts_pkt_decoder *dec, struct pts_input *in,
			uint64_t *counts, int max);

/* What pts_pkt_skim_batch() does with a packet of a kind. */
enum pts_skim_action {
	PTS_SKIM_KEEP, /* into the batch */
	PTS_SKIM_STOP, /* into the batch, which it ends */
	PTS_SKIM_SKIP, /* only summed up in struct pts_skim */
	PTS_SKIM_CALL  /* handed to struct pts_skim_call, not stored */
};

/* Packets handed on (PTS_SKIM_CALL) as items in stream order: item i
 * (of @n, at most 64) is an MTC whose payload (CTC[N+7:N]) is @value[i]
 * when bit i of @mtc is set, the next packet of @pkts when bit i of @pkt
 * is set, else a CYC of @value[i] cycles. */
struct pts_skim_timing {
	const uint64_t *value;
	uint64_t mtc, pkt;
	const struct pts_packet *pkts;
	int n;
};

/* Where pts_pkt_skim_batch() hands the CALL packets: @fn(@ctx, pkts, n)
 * gets them as they are decoded, a few at a time (n <= 64) and all in
 * stream order, before the call returns. So they reach @fn before the
 * packets the same call stores reach the caller: for kinds whose effect
 * does not depend on their order against the stored ones (the clock of
 * `ptscope windows`: a timing packet every 10-20 bytes of a capture,
 * which a batch of stored packets would pass through one by one). */
struct pts_skim_call {
	void (*fn)(void *ctx, const struct pts_packet *pkts, int n);
	void *ctx;
	/* Optional (NULL: every packet goes to @fn): the packets handed on
	 * while crossing 64 bytes at a time, with CYCs and MTCs as bare
	 * values (struct pts_skim_timing), once per 64 bytes: without a
	 * packet record each, `ptscope windows` is 6-14% faster on streams
	 * with CYC. @fn still gets the packets handed on outside those
	 * blocks; across the two hooks the stream order holds. */
	void (*timing)(void *ctx, const struct pts_skim_timing *t);
};

/* The packets pts_pkt_skim_batch() skipped: how many, and what a model of
 * the trace needs of them without their order. */
struct pts_skim {
	uint64_t packets;
	uint64_t tnt_packets, tnt_bits; /* TNT-8 and TNT-64: results */
	uint64_t tips;			/* TIPs */
	uint64_t last_ip;		/* the IP of the last TIP with one */
	int has_ip;
};

/* Decodes as pts_pkt_next_batch() does, but only the packets whose kind has
 * @actions[kind] KEEP or STOP go into @pkts (@actions has
 * PTS_PKT_KIND_COUNT entries); SKIP ones are added to @skim (the caller
 * zeroes it when it has used what it holds), CALL ones go to @call (NULL
 * when no action is CALL). The sum mixes the packets
 * skipped before, between and after the stored ones of the call, but none
 * comes after a STOP packet, a condition, or a packet the next call stores.
 * A STOP packet ends the batch: the caller can change @actions after it.
 * Returns the number stored, or a condition as pts_pkt_next_batch() does
 * when none was stored (packets may have been skipped then too). For
 * models that need only a few kinds one by one (`ptscope windows`): the
 * others are not stored, and runs of one-byte ones are crossed as in
 * counting. */
int pts_pkt_skim_batch(struct pts_pkt_decoder *dec, struct pts_input *in,
		       const uint8_t *actions, struct pts_packet *pkts, int max,
		       struct pts_skim *skim, const struct pts_skim_call *call);

/* Marks the end of the stream: no more input will come. */
void pts_pkt_end(struct pts_pkt_decoder *dec);

/* The range of the last error or skip: [*begin, *end) in stream offsets. For
 * a decode error, *end is the offset at which the error was seen + 1. */
void pts_pkt_error_range(const struct pts_pkt_decoder *dec, uint64_t *begin,
			 uint64_t *end);

/* Stream offset of the next byte the decoder will look at. */
uint64_t pts_pkt_offset(const struct pts_pkt_decoder *dec);

/* Forgets all state and the carry buffer; the next byte fed is at
 * @offset and is assumed to start a PSB (sync at a given offset) when
 * @at_psb is 1, else the decoder searches for one. */
void pts_pkt_reset(struct pts_pkt_decoder *dec, uint64_t offset, int at_psb);

/* Decodes one packet from @buf (no state besides @block_ctx: 0 outside a
 * PEBS block, 4 or 8 for the BIP size inside one). Returns the size, or
 * -PTS_ERR_TRUNCATED when @len is too short for the packet, or a decode error.
 * The IP members are left as the raw payload with ip.ip = 0. */
int pts_pkt_parse(const uint8_t *buf, size_t len, unsigned block_ctx,
		  struct pts_packet *pkt);

/* ------------------------------------------------------------------------ */
/* PSB search (hot for resync and parallel splitting).                      */

/* Offset in @buf of the first complete PSB at or after @from, or -1. */
ptrdiff_t pts_psb_find(const uint8_t *buf, size_t len, size_t from);

/* Writes up to @max PSB offsets found in @buf into @offs; returns how many
 * there are in all (may exceed @max). Offsets are relative to @buf. */
size_t pts_psb_list(const uint8_t *buf, size_t len, uint64_t *offs, size_t max);

/* ------------------------------------------------------------------------ */
/* The packet encoder: the decoder's inverse.                               */

/* Writes @pkt (kind and payload fields; offset ignored; for IP packets
 * @ipc and ip.payload) into @buf. Returns the bytes written,
 * -PTS_ERR_AGAIN when @cap is too small, -PTS_ERR_INVALID for a payload that
 * does not fit its field. */
int pts_pkt_encode(const struct pts_packet *pkt, uint8_t *buf, size_t cap);

/* Chooses the IP compression a CPU would use for @ip against @lip (the
 * shortest form that reconstructs @ip), fills an IP packet of @kind in @pkt,
 * and updates @lip. */
void pts_pkt_make_ip(struct pts_packet *pkt, int kind, uint64_t ip,
		     struct pts_lastip *lip);

/* ------------------------------------------------------------------------ */
/* Byte sources: a raw trace file or standard input, read in bounded chunks
 * so that memory does not grow with the trace.                              */

struct pts_source;

/* Opens @path ("-" = standard input). Returns 0 and sets *@src, or
 * -PTS_ERR_IO (errno kept; EISDIR for a directory) / -PTS_ERR_NOMEM. */
int pts_source_open(const char *path, struct pts_source **src);
/* Gives the next chunk in @chunk (pos 0; valid until the next call).
 * Returns 1 for a chunk, 0 at end of file, -PTS_ERR_IO on a read error. */
int pts_source_next(struct pts_source *src, struct pts_input *chunk);
/* Total bytes handed out so far. */
uint64_t pts_source_bytes(const struct pts_source *src);
/* Closes @src; NULL is a no-op. */
void pts_source_close(struct pts_source *src);

/* ------------------------------------------------------------------------ */
/* Printers.                                                                 */

struct pts_print_opts {
	uint8_t show_offset; /* ptdump's offset column (default on) */
	uint8_t show_lastip; /* ptdump's --lastip */
};

/* Formats @pkt as one line of libipt ptdump output (no newline) into @out.
 * @lip is the printer's own last-IP (for --lastip), updated here; like
 * ptdump's, it is not reset at PSB (reset it when resyncing after an
 * error). Where ptdump prints a diagnostic before the line ("[<offset>:
 * error tracking last-ip: no ip]"), it comes first, ended by '\n'.
 * Returns the line length or -PTS_ERR_AGAIN when @cap is too small. */
int pts_print_ptdump(const struct pts_packet *pkt,
		     const struct pts_print_opts *opts, struct pts_lastip *lip,
		     char *out, size_t cap);

/* Formats @pkt as one JSON object (no newline). Same returns. */
int pts_print_jsonl(const struct pts_packet *pkt, char *out, size_t cap);

/* Formats a condition the decoder reported (@err < 0 from pts_pkt_next(),
 * [@begin, @end) from pts_pkt_error_range()) as ptdump prints decode errors,
 * "[<begin>: error decoding packet: <libipt's message>]", or, for
 * -PTS_ERR_SKIPPED, "[<begin>-<end>: skipped <n> bytes to resync]"
 * (hex offsets, no newline). Same returns as pts_print_ptdump(). */
int pts_print_ptdump_error(int err, uint64_t begin, uint64_t end, char *out,
			   size_t cap);

/* The same condition as one JSON object (no newline):
 * {"error":"<NAME>","message":"...","offset":<begin>,"end":<end>} plus
 * "bytes":<n> for -PTS_ERR_SKIPPED. Same returns. */
int pts_print_jsonl_error(int err, uint64_t begin, uint64_t end, char *out,
			  size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* PTSCOPE_PACKETS_H */
