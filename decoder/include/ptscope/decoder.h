/* ptscope decoder layer: the program's code plus packets in, the executed
 * instruction flow out.
 *
 * Three units, each usable on its own:
 *   - images:     code bytes per address space (ELF files, raw files, memory)
 *                 and ELF symbols;
 *   - classifier: one x86 instruction -> length, class, direct target
 *                 (capstone underneath, one handle set per classifier);
 *   - flow:       the walker that turns packets into instructions and events
 *                 (block cache, TNT/TIP, return compression, PSB/OVF).
 *
 * Return convention as in packets.h: int >= 0 success, < 0 -PTS_ERR_*.
 */
#ifndef PTSCOPE_DECODER_H
#define PTSCOPE_DECODER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ptscope/packets.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Execution modes (MODE.Exec: CS.L, CS.D). */
enum pts_exec_mode {
	PTS_EXEC_UNKNOWN = 0,
	PTS_EXEC_16 = 1,
	PTS_EXEC_32 = 2,
	PTS_EXEC_64 = 3
};

/* "16-bit", "32-bit", "64-bit" or "<unknown>" (ptxed's spellings). */
const char *pts_exec_mode_name(int mode);

/* ------------------------------------------------------------------------ */
/* Images: code per address space.                                          */
/*
 * An image set holds address spaces keyed by CR3 (the value PIP reports,
 * bits 51:5). CR3 0 is the default space: a lookup in a space that has no
 * code at an address falls back to the default space, so images added with
 * CR3 0 are visible everywhere (what a trace without PIP needs).
 *
 * Mappings never overlap inside one space: a mapping added later replaces
 * the part of older ones it covers (as a newer mmap does).
 *
 * Files are mapped read-only into memory and stay mapped until the set is
 * freed; read pointers stay valid as long as the set lives.
 */
struct pts_image;

/* One ELF symbol, address already relocated by the load bias. */
struct pts_symbol {
	uint64_t addr;
	uint64_t size; /* 0 when the symbol table does not say */
	const char *name; /* owned by the image set */
	/* An older version of @name (hidden in .gnu.version: the dynamic
	 * linker binds the default one): a lookup by name finds it only
	 * when there is no default one. */
	bool older_version;
};

/* Allocates an empty image set. NULL on no memory. */
struct pts_image *pts_image_new(void);
/* Frees @img with all its mappings and symbols; NULL is a no-op. */
void pts_image_free(struct pts_image *img);

/* Maps the PT_LOAD segments of the ELF file @path (their file bytes; a
 * segment's zero-filled tail is not code and is left unmapped) and loads its
 * code symbols (.symtab, else .dynsym): functions, and code labels (STT_NOTYPE
 * in an executable section, as perf resolves them). @base 0 maps at the link
 * addresses; another @base puts the lowest PT_LOAD address at @base (ptxed's
 * --elf FILE:BASE) and shifts symbols alike.
 * Returns the number of segments mapped (> 0).
 * Returns -PTS_ERR_IO when the file cannot be opened or mapped (errno says
 * why; EISDIR for a directory, ENODEV for another non-regular file).
 * Returns -PTS_ERR_BAD_FORMAT when it is not an ELF file or has no PT_LOAD.
 * Returns -PTS_ERR_INVALID when @base puts a segment past the top of the
 * address space (or for NULL arguments), -PTS_ERR_NOMEM. */
int pts_image_add_elf(struct pts_image *img, uint64_t cr3, const char *path,
		      uint64_t base);
/* Only the symbols of pts_image_add_elf() (the code comes from elsewhere:
 * perf's MMAPs name the file bytes a process mapped). Returns 0 or its
 * errors. */
int pts_image_add_elf_symbols(struct pts_image *img, uint64_t cr3,
			      const char *path, uint64_t base);

/* Maps bytes [@from, @to) of the file @path at @addr (@to 0: to the end of
 * the file; ptxed's --raw FILE:FROM-TO:ADDR).
 * Returns 0.
 * Returns -PTS_ERR_IO when the file cannot be opened or mapped (errno says
 * why; EISDIR for a directory, ENODEV for another non-regular file).
 * Returns -PTS_ERR_INVALID for an empty or out-of-file range, a range that
 * wraps the address space, or NULL arguments.
 * Returns -PTS_ERR_NOMEM. */
int pts_image_add_raw(struct pts_image *img, uint64_t cr3, const char *path,
		      uint64_t from, uint64_t to, uint64_t addr);

/* Whether @img maps the file @path (the same file under any name): an
 * output written there would destroy an input. */
bool pts_image_reads_file(const struct pts_image *img, const char *path);

/* Maps a copy of @size bytes at @bytes at @addr (tests, synthesized code,
 * sideband). Returns 0, -PTS_ERR_INVALID (empty, wraps, NULL) or
 * -PTS_ERR_NOMEM. */
int pts_image_add_mem(struct pts_image *img, uint64_t cr3, const void *bytes,
		      size_t size, uint64_t addr);

/* Command-line forms: "FILE[:BASE]" for pts_image_add_elf() and
 * "FILE[:FROM[-TO]]:ADDR" for pts_image_add_raw() (numbers in C syntax:
 * 0x.. hex, else decimal). FILE may itself contain ':'; the numbers are
 * taken from the right. Same returns as the functions they call, plus
 * -PTS_ERR_INVALID for a malformed spec. */
int pts_image_add_elf_spec(struct pts_image *img, uint64_t cr3,
			   const char *spec);
int pts_image_add_raw_spec(struct pts_image *img, uint64_t cr3,
			   const char *spec);

/* "FILE[:BASE]" as pts_image_add_elf_spec() splits it: returns the file
 * (a fresh string the caller frees; the whole spec when no number follows
 * its last ':') and sets *@base (0: link address). NULL on no memory. */
char *pts_elf_spec_split(const char *spec, uint64_t *base);

/* Whether @addr is code in the ELF "FILE[:BASE]" @spec, loaded as
 * pts_image_add_elf_spec() loads it: in an executable section (or, where
 * no section says, an executable PT_LOAD segment). 1 yes, 0 no (data, or
 * nothing there); < 0 as pts_image_add_elf(). Images keep no permissions:
 * a walk that starts somewhere asks this first. */
int pts_elf_code_at(const char *spec, uint64_t addr);

/* The code at @addr in space @cr3: sets *@bytes to the mapped bytes at @addr
 * (valid while @img lives and is not changed) and returns how many are
 * contiguous in that one mapping (> 0; capped at INT32_MAX).
 * Returns -PTS_ERR_NOMAP when no mapping holds @addr.
 * Returns -PTS_ERR_INVALID for NULL arguments. */
int pts_image_read(const struct pts_image *img, uint64_t cr3, uint64_t addr,
		   const uint8_t **bytes);

/* Copies up to @cap bytes starting at @addr into @buf, continuing into
 * mappings that follow without a hole (an instruction may straddle two).
 * Returns the number copied (> 0), -PTS_ERR_NOMAP when nothing is mapped at
 * @addr, -PTS_ERR_INVALID for NULL arguments. */
int pts_image_fetch(const struct pts_image *img, uint64_t cr3, uint64_t addr,
		    uint8_t *buf, size_t cap);

/* A counter that changes whenever mappings are added; caches of decoded
 * code compare it to know when to drop what they hold. */
uint64_t pts_image_generation(const struct pts_image *img);

/* The code symbol (function or label) that contains @addr (addr in [sym.addr, sym.addr +
 * size), or the nearest one below @addr when the table gives no size), in
 * space @cr3 then the default space. NULL when there is none. The pointer is
 * valid until the next pts_image_add_*(). */
const struct pts_symbol *pts_image_symbol_at(const struct pts_image *img,
					     uint64_t cr3, uint64_t addr);

/* The first code symbol (function or label) named @name (space @cr3, then default). NULL
 * when there is none. Valid until the next pts_image_add_*(). */
const struct pts_symbol *pts_image_symbol_find(const struct pts_image *img,
					       uint64_t cr3, const char *name);

/* The function entries of space @cr3 (not including the default space):
 * defined STT_FUNC/STT_GNU_IFUNC symbols, sorted by address, one per
 * address. Sets *@syms (valid until the next pts_image_add_*()) and returns
 * the count (0 when the space has none or does not exist). */
size_t pts_image_functions(const struct pts_image *img, uint64_t cr3,
			   const struct pts_symbol **syms);

/* ------------------------------------------------------------------------ */
/* Instruction classification.                                              */

/* What an instruction does to the control flow, i.e. which trace packets it
 * needs (docs/pt-sgx-facts.md 2.1). */
enum pts_iclass {
	PTS_INSN_PLAIN = 0,  /* no branch: falls through */
	PTS_INSN_JCC,        /* Jcc, JCXZ/JECXZ/JRCXZ, LOOP/LOOPE/LOOPNE: TNT */
	PTS_INSN_JMP,        /* near direct JMP: no packet */
	PTS_INSN_CALL,       /* near direct CALL: no packet, pushes */
	PTS_INSN_JMP_IND,    /* near indirect JMP: TIP */
	PTS_INSN_CALL_IND,   /* near indirect CALL: TIP, pushes */
	PTS_INSN_RET,        /* near RET: TNT (compressed) or TIP */
	PTS_INSN_FAR,        /* far CALL/JMP/RET, IRET, SYSCALL, SYSRET,
				SYSENTER, SYSEXIT, INT n, INT3, INTO, INT1,
				VMLAUNCH, VMRESUME, VMCALL: TIP */
	PTS_INSN_ENCLU,      /* ENCLU (0F 01 D7): EENTER/ERESUME/EEXIT */
	PTS_INSN_PTWRITE,    /* PTWRITE (F3 [REX] 0F AE /4): PTW */
	PTS_INSN_OTHER,      /* no branch, but may make packets or change the
				trace state: MOV to CR3, WRMSR, XBEGIN, XEND,
				XABORT, VMPTRLD, HLT, MWAIT, UD2 */
	PTS_INSN_CLASS_COUNT
};

/* Lower-case class name ("jcc", "call.ind", ...); "invalid" out of range. */
const char *pts_iclass_name(int iclass);

/* pts_insn_info.flags */
enum {
	PTS_INSN_F_TARGET = 1 << 0, /* @target is valid (direct branch) */
	PTS_INSN_F_CALL0 = 1 << 1,  /* direct CALL to the next instruction
				       (CALL +0): pushes, but its "return"
				       is not compressible */
	PTS_INSN_F_XBEGIN = 1 << 2  /* XBEGIN: @target is the abort handler */
};

struct pts_insn_info {
	uint64_t target; /* direct target, truncated to the operand size */
	uint8_t size;    /* 1..15 */
	uint8_t iclass;  /* enum pts_iclass */
	uint8_t flags;   /* PTS_INSN_F_* */
};

/* The capstone handles of one user (not thread-safe; one per thread). */
struct pts_insn_classifier;

/* Allocates a classifier. NULL on no memory or when capstone fails. */
struct pts_insn_classifier *pts_insn_classifier_new(void);
/* Frees @cls; NULL is a no-op. */
void pts_insn_classifier_free(struct pts_insn_classifier *cls);

/* Classifies the instruction at @ip made of (the start of) @bytes[0..@len)
 * in @mode (enum pts_exec_mode; UNKNOWN is taken as 64-bit).
 * Returns the size (1..15) and fills @info.
 * Returns -PTS_ERR_TRUNCATED when the bytes do not decode and @len < 15 (the
 *   instruction may continue beyond them).
 * Returns -PTS_ERR_BAD_INSN when they do not decode as an instruction.
 * Returns -PTS_ERR_INVALID for NULL arguments or a bad @mode. */
int pts_insn_classify(struct pts_insn_classifier *cls, int mode, uint64_t ip,
		      const uint8_t *bytes, size_t len,
		      struct pts_insn_info *info);

/* Fetches the instruction at @ip from @img (space @cr3) and classifies it.
 * Same returns as pts_insn_classify(), plus -PTS_ERR_NOMAP when no code is
 * mapped at @ip, and -PTS_ERR_BAD_INSN for an instruction cut by the end of
 * the mapped code. */
int pts_insn_decode(struct pts_insn_classifier *cls,
		    const struct pts_image *img, uint64_t cr3, int mode,
		    uint64_t ip, struct pts_insn_info *info);

/* Disassembles one instruction (Intel syntax, "mnemonic operands", direct
 * targets as absolute addresses) into @out (NUL-terminated).
 * Returns the length of the text, -PTS_ERR_BAD_INSN when the bytes do not
 * decode, -PTS_ERR_AGAIN when @cap is too small, -PTS_ERR_INVALID. */
int pts_insn_disasm(struct pts_insn_classifier *cls, int mode, uint64_t ip,
		    const uint8_t *bytes, size_t len, char *out, size_t cap);


/* ------------------------------------------------------------------------ */
/* The flow walker: packets + images -> instructions and events.            */
/*
 * Output comes as records. Instructions are delivered in runs straight from
 * the block cache (no work per instruction); events and errors sit between
 * the runs in trace order.
 *
 * Semantics follow libipt's instruction decoder (pt_insn): a conditional
 * branch takes a TNT bit; a near RET takes a TNT bit (compressed: the target
 * comes from the 64-entry return stack) when one is pending, else a TIP; an
 * indirect or far branch takes the next TIP even when TNT bits are pending
 * (deferred TIPs); a FUP stops the flow before the instruction at its IP
 * (async branch with the following TIP, async disable with TIP.PGD); a
 * TIP.PGD alone binds to the next branch; OVF resets the return stack and
 * resumes at the following FUP or TIP.PGE; every mismatch between trace and
 * code is an error record, after which the walker resyncs at the next PSB.
 */

/* pts_flow_rec.kind */
enum pts_flow_kind {
	PTS_FLOW_INSNS = 1, /* @n instructions: ips[i], sizes[i] */
	PTS_FLOW_EVENT = 2, /* an event: @type, @ip, @arg, @arg2 */
	PTS_FLOW_ERROR = 3, /* @error at @offset, instruction @ip */
	PTS_FLOW_SKIP = 4   /* trace bytes [@offset, @arg) skipped to reach
			       a PSB: before the first one, after an error */
};

/* Events (pts_flow_rec.type); the comment says what @ip, @arg, @arg2 hold.
 * One list makes the enum and the names used in JSON. */
#define PTS_FLOW_EVENTS(X)                                                     \
	X(ENABLED, "enabled")          /* ip: first IP; F_RESUMED */         \
	X(DISABLED, "disabled")        /* ip: PGD target (unless F_IP_SUPPRESSED) */ \
	X(ASYNC_DISABLED, "async-disabled") /* ip: FUP IP (at); arg: PGD IP */ \
	X(ASYNC_BRANCH, "async-branch") /* ip: from (FUP); arg: to (TIP) */  \
	X(PAGING, "paging")            /* arg: CR3; arg2: NR; F_ASYNC */     \
	X(OVERFLOW, "overflow")        /* ip: resume IP (unless suppressed) */ \
	X(EXEC_MODE, "exec-mode")      /* arg: enum pts_exec_mode */         \
	X(TSX, "tsx")                  /* ip: FUP IP; arg: bit0 InTX, bit1 abort */ \
	X(STOP, "stopped")             /* TraceStop */                       \
	X(VMCS, "vmcs")                /* arg: VMCS base; F_ASYNC */         \
	X(EXSTOP, "exstop")            /* ip: FUP IP (unless suppressed) */  \
	X(MWAIT, "mwait")              /* arg: hints; arg2: extensions */    \
	X(PWRE, "pwre")                /* arg: state | sub << 8 | hw << 16 */ \
	X(PWRX, "pwrx")                /* arg: last | deepest << 8 | int << 16 | store << 17 | hw << 18 */ \
	X(PTWRITE, "ptwrite")          /* ip: PTWRITE (unless suppressed); arg: payload; arg2: size code */ \
	X(CFE, "cfe")                  /* ip: FUP IP when bound; arg: type | vector << 8 */ \
	X(EVD, "evd")                  /* arg: type; arg2: payload */        \
	X(CBR, "cbr")                  /* arg: core:bus ratio */             \
	X(END, "end-of-trace")         /* ip: where the flow stopped */

enum pts_flow_event {
#define PTS_FLOW_EV_ENUM_(name, str) PTS_EV_##name,
	PTS_FLOW_EVENTS(PTS_FLOW_EV_ENUM_)
#undef PTS_FLOW_EV_ENUM_
	PTS_EV_COUNT
};

/* Event name ("async-branch"); "invalid" out of range. */
const char *pts_flow_event_name(int type);

/* pts_flow_rec.flags */
enum {
	PTS_EV_F_IP_SUPPRESSED = 1 << 0, /* the event has no IP */
	PTS_EV_F_RESUMED = 1 << 1,       /* ENABLED where it was disabled */
	PTS_EV_F_ASYNC = 1 << 2,         /* part of an async FUP..TIP group */
	PTS_EV_F_STATUS = 1 << 3         /* from PSB+ (state, not a change);
					    ptxed does not print these */
};

/* One output record; instruction runs point into the walker's block cache. */
struct pts_flow_rec {
	uint64_t offset;       /* stream offset of the packet behind it */
	uint64_t ip;           /* INSNS: ips[0]; EVENT: see the event list;
				  ERROR: the instruction (0: none) */
	uint64_t cr3;          /* address space of the code */
	const uint64_t *ips;   /* INSNS: @n addresses (valid until the next
				  pts_flow_next() call) */
	const uint8_t *sizes;  /* INSNS: @n sizes */
	union {
		uint64_t arg;  /* EVENT payload; SKIP: end of the bytes */
		/* INSNS: the run id. Runs with the same id (non-zero) have
		 * the same ips, sizes, @n, @cr3 and @mode, within the
		 * process and for as long as the image set is not changed:
		 * ids are never reused, not even by another walker or
		 * after a cache flush. Consumers key what they derive from
		 * a run by it instead of hashing the addresses (the
		 * coverage sink does). 0: no id (records made by hand). */
		uint64_t run;
	};
	uint64_t arg2;         /* EVENT payload */
	uint32_t n;            /* INSNS: count (>= 1) */
	int16_t error;         /* ERROR: -PTS_ERR_* */
	uint8_t kind;          /* enum pts_flow_kind */
	uint8_t mode;          /* enum pts_exec_mode of the code */
	uint8_t type;          /* EVENT: enum pts_flow_event */
	uint8_t flags;         /* EVENT: PTS_EV_F_* */
	uint8_t reserved_[2];
};

struct pts_flow_config {
	/* Errata workarounds (none by default), as libipt's pt_insn applies
	 * them: BDM70 (a PSB+ FUP right before TIP.PGE does not enable) and
	 * SKL014 (a TIP.PGD without IP binds to a direct JMP/CALL whose
	 * target is outside the IP filter ranges below). */
	struct pts_cpu cpu;
	/* IA32_RTIT_ADDRn_A/B (inclusive) and ADDRn_CFG (1: FilterEn range);
	 * only SKL014 needs them. */
	uint64_t addr_a[4], addr_b[4];
	uint8_t addr_cfg[4];
	/* Bound of the block cache in bytes (0: 64 MiB). When full it is
	 * emptied at the start of the next pts_flow_next() call. */
	size_t cache_bytes;
	/* Stream offset of the first byte fed (default 0). */
	uint64_t base_offset;
	/* Blocks walked without consuming a packet before the walk is called
	 * a hang (a NO_PROGRESS error; code like `jmp .` never needs trace).
	 * 0: 4M. */
	uint32_t idle_limit;
};

struct pts_flow;

/* Allocates a walker over the code in @img (borrowed: it must outlive the
 * walker; mappings added later are seen, and the block cache is dropped
 * when they change). @config may be NULL for defaults. NULL on no memory. */
struct pts_flow *pts_flow_new(const struct pts_flow_config *config,
			      const struct pts_image *img);
/* Frees @flow; NULL is a no-op. */
void pts_flow_free(struct pts_flow *flow);

/* Decodes up to @max records from the trace bytes in @in (caller-owned
 * view; consumed as far as possible, partial packets are kept inside).
 * Returns the number of records (> 0). Instruction records point into the
 *   block cache: valid until the next call.
 * Returns -PTS_ERR_AGAIN when @in is used up (feed the next chunk in a
 *   fresh view; records may still be pending inside).
 * Returns -PTS_ERR_EOS after pts_flow_end() once everything is delivered.
 * Returns -PTS_ERR_INVALID for NULL arguments or @max < 1,
 *   -PTS_ERR_NOMEM when the block cache cannot grow.
 * Trace and code errors are not returned: they are ERROR records, after
 * which decoding resumes at the next PSB. */
int pts_flow_next(struct pts_flow *flow, struct pts_input *in,
		  struct pts_flow_rec *recs, int max);

/* Smallest @cap pts_flow_next_ips() takes: the addresses one step of the
 * walk delivers at most (a block's 256 instructions) and the 7 its copy
 * may write past them. */
#define PTS_FLOW_IPS_MIN (256 + 7)

/* pts_flow_next(), and the addresses of all instructions it hands out go,
 * in order, into @ips (room for @cap >= PTS_FLOW_IPS_MIN): the INSNS
 * records' ips point into @ips, each record's right after the previous
 * one's, and *@nips is the count (the sum of their n). For callers that
 * read every address: one flat array, no loop per record. The records
 * and returns are those of pts_flow_next() (same records in the same
 * order; a call may return fewer when @ips is full); only their @ips
 * point elsewhere, valid as long as @ips is (@sizes still point into the
 * block cache, valid until the next call). Entries of @ips past *@nips
 * may be overwritten. *@nips is set on every return but -PTS_ERR_INVALID,
 * which comes for NULL @ips or @nips, @cap < PTS_FLOW_IPS_MIN, and as
 * pts_flow_next() says. */
int pts_flow_next_ips(struct pts_flow *flow, struct pts_input *in,
		      struct pts_flow_rec *recs, int max, uint64_t *ips,
		      size_t cap, size_t *nips);

/* Marks the end of the trace: the walker then runs until it needs a packet
 * that will not come. */
void pts_flow_end(struct pts_flow *flow);

/* Forgets the trace: packets queued or half-read, the state of the walk,
 * the return stack, pending records, pts_flow_end(), the counters (except
 * blocks_built and cache_flushes, which describe the cache). Keeps the
 * block cache with its successor links, so that decoding the
 * same code again (fuzzing: one trace per input) builds no block twice.
 * Afterwards the walker is as new: the next pts_flow_next() reads a new
 * trace from its first byte (stream offsets restart at the configured
 * base_offset). Returns 0, -PTS_ERR_INVALID for NULL, -PTS_ERR_NOMEM. */
int pts_flow_reset(struct pts_flow *flow);

struct pts_flow_stats {
	uint64_t insns;        /* instructions delivered */
	uint64_t events;       /* event records */
	uint64_t errors;       /* error records */
	uint64_t packets;      /* packets decoded */
	uint64_t blocks_built; /* blocks decoded with capstone (since
				  creation: pts_flow_reset() keeps them) */
	uint64_t cache_flushes;
	uint64_t skipped;      /* trace bytes skipped to resync: the sum
				  of the SKIP records */
	uint64_t truncated;    /* of @errors, -PTS_ERR_TRUNCATED: the last
				  packet cut by the end of the data (which
				  a ToPA STOP leaves; a caller may count
				  it as truncation, not as an error) */
	/* The first error record other than a truncation (when @errors
	 * exceeds @truncated): its code, trace offset and the IP where the
	 * flow got to (0 when unknown), for callers that only count
	 * (pts_cov_decode()) and must still say where. */
	int first_error;
	uint64_t first_error_offset, first_error_ip;
	/* The packet the data ended inside (when @truncated): its offset. */
	uint64_t truncated_offset;
};

/* Copies the counters so far into @stats. */
void pts_flow_get_stats(const struct pts_flow *flow,
			struct pts_flow_stats *stats);

/* Disassembles instruction @i of the INSNS record @rec (Intel syntax) into
 * @out. Same returns as pts_insn_disasm(), plus -PTS_ERR_NOMAP. Texts are
 * kept per instruction for the next calls: the first call takes a 4 MiB
 * table, freed with @flow; a change of the image drops what it holds. */
int pts_flow_disasm(struct pts_flow *flow, const struct pts_flow_rec *rec,
		    uint32_t i, char *out, size_t cap);

/* Formats an EVENT record as libipt's ptxed prints it, without brackets
 * ("enabled", "exec mode: 64-bit", "paging, cr3: 0000000000001000", ...).
 * Returns the length or -PTS_ERR_AGAIN when @cap is too small. */
int pts_flow_event_text(const struct pts_flow_rec *rec, char *out, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* PTSCOPE_DECODER_H */
