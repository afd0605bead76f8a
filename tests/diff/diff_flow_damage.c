/* Differential test of the flow walker on DAMAGED traces: valid traces
 * (flow_gen.c's generated programs and, when /usr/bin/bash exists,
 * `ptscope synth` walks over it) are damaged deterministically (bits
 * flipped, byte ranges dropped, duplicated or zeroed, the trace cut, a
 * packet replaced by a valid packet of another kind, a packet inserted, or
 * several of these), then decoded by libipt's instruction decoder (pt_insn)
 * and by ptscope (fed in random chunks). Neither may crash or hang.
 *
 * What must be equal. Both decoders resync at a PSB after an error, but not
 * always at the same one: libipt's query decoder reads ahead and searches
 * from where it stopped reading (howto_libipt.md: "the decoder reads ahead
 * until it arrives at a query relevant packet"; sync_forward starts from
 * the last PSB it saw), and it finds PSBs by scanning bytes, while ptscope
 * follows packets. So each decoder's output is cut into segments, one per
 * sync: the PSB it synced at, the instructions and events (enabled,
 * disabled, overflow, resumed: as flow_tokens.h) up to the next error, and
 * how it ended. For every PSB at which BOTH started a segment:
 *   - the tokens agree up to the end of the shorter segment;
 *   - if neither ends with an error, they are equal;
 *   - if one ends with an error, so does the other (both saw an
 *     inconsistency), and both errors lie before the next PSB after the
 *     earlier one (neither decodes through a PSB the other failed before).
 * Segments that start at a PSB only one decoder synced at are not
 * compared: the state (return stack, pending TNT) differs by design.
 *
 * Legitimate differences, tolerated exactly (each counted and printed):
 *   - RULE_ERR_COUNT: how many instructions come before an error. libipt
 *     reads packets ahead and "errors encountered during that time will be
 *     postponed until the respective query call" (howto_libipt.md,
 *     Timing), and pt_insn_next "may indicate errors that occur after the
 *     returned instruction" (Iterating); ptscope reports a bad packet when
 *     it reaches it. So when both fail (as above), one flow may be a
 *     longer prefix than the other;
 *   - end of data: libipt's -pte_eos error (it needed a packet the buffer
 *     does not hold: "decoding reached the end of the Intel PT buffer")
 *     and ptscope's TRUNCATED (a packet cut by the end) are that kind of
 *     error; a clean end (libipt's pts_eos flag, ptscope's end of trace)
 *     is none;
 *   - RULE_END_KIND: the same flow to the end, where one decoder ends
 *     cleanly and the other reports the cut data: libipt ignores a
 *     truncated status packet it reads ahead at the end (no query needs
 *     it) and ptscope reports every cut packet; libipt reports -pte_eos
 *     where its query found no packet and ptscope ends at the same place,
 *     also when that query read ahead past a TIP.PGD into a status
 *     packet the end cut from its event (the eos takes the [disabled]'s
 *     place);
 *   - RULE_NEW_PACKET: packets libipt 2.0.5 does not know (CFE, EVD, BBP,
 *     BIP, BEP; bit flips make them) are -pte_bad_opc for libipt and
 *     decoded by ptscope: libipt's segment may end there. ptscope may
 *     fail later, past a PSB pattern libipt's byte scan sees but that
 *     lies inside a packet after the new one (no PSB: SDM 36.3.7 puts a
 *     PSB at packet boundaries only), or past a real PSB: then ptscope
 *     decodes the trace again from the PSB libipt syncs at next, and its
 *     segment from there must agree with libipt's;
 *   - RULE_STATUS_EARLY: a PIP, MODE.Exec or VMCS that nothing can take
 *     (they bind to MOV CR3, VMPTRLD or a far transfer, SDM 36.4.2), a PTW
 *     with no PTWRITE on the way (SDM 36.4.2.21), or a
 *     FUP where a branch needs its TIP (a FUP outside PSB+ starts an
 *     asynchronous event at its own IP and is never alone: SDM Table
 *     36-15), or a MODE.TSX with no FUP after it (it is always followed
 *     by a FUP with its IP, SDM 36.4.2.8): ptscope reports the mismatch
 *     at the packet, or takes it and reports the mismatch at the packet
 *     after it (a PSB or a TNT where its TIP should be); libipt keeps it
 *     as a pending event and fails later, after a PSB too, or binds it
 *     to a later TIP, FUP or instruction and goes on;
 *   - RULE_TIMING: libipt 2.0.5 fails (-pte_bad_query) at a CBR it meets
 *     where it looks for a TIP (its query decoder makes a CBR an event; a
 *     CBR may come between any two packets, SDM 36.3.1: frequency
 *     changes are asynchronous), or at a PSB+ with a CBR of ratio 0,
 *     which its clock rejects, or at a CYC of 10 bytes or more
 *     (-pte_bad_packet: libipt 2.0.5 refuses a CYC whose value passes bit
 *     64; the SDM sets no length limit, ptscope reads up to 15 bytes, as
 *     tests/common/oracle.c has it); ptscope does not bind timing packets
 *     to the flow and goes on. (A TSC where a TIP was is not tolerated:
 *     the TIP may be missing.)
 *   - RULE_INVALID_INSN: a damaged TIP lands inside an instruction, on
 *     bytes the opcode map makes invalid in 64-bit mode (1F, CE, FF /7,
 *     ...; SDM Vol. 2, App. A), a reserved form (MOV to or from segment
 *     register 6 or 7, 8C/8E; group 6 /6 /7; group 11 but MOV, XABORT
 *     and XBEGIN; the x87 forms the escape opcode tables leave blank, see
 *     x87_reserved()), a register operand where
 *     only memory is defined (LEA, far CALL/JMP FF /3 /5), a LOCK
 *     prefix on an instruction that takes none (lockable()), 0F F0
 *     without F2 (LDDQU needs it), 0F D6 without 66, F2 or F3 (the
 *     MOVQ forms need one), 0F B8 without F3 (POPCNT needs it; JMPE is
 *     not in Intel 64), a VEX3 prefix (C4) with a reserved
 *     map (m-mmmm 0 or above 3: #UD), or an EVEX prefix (62) whose fixed
 *     bits are wrong (P0[3:2] must be 0, P1[2] must be 1: SDM Vol. 2A,
 *     EVEX bit fields; else #UD) or whose map is 0 (only 0F, 0F38 and
 *     0F3A are defined, SDM Vol. 2A 3.1.1.2). libipt's instruction
 *     length decoder sizes them anyway and walks on; ptscope reports
 *     BAD_INSN there;
 *   - RULE_HANG: code that loops without needing trace (jmp . after a
 *     damaged TIP) runs forever in libipt, which has no such limit; here
 *     it is cut at an instruction cap, and ptscope must stop with
 *     NO_PROGRESS (its idle limit is lowered for this test);
 *   - RULE_HANG_BAD_PACKET: the same loop, reached by a TIP whose next
 *     packet does not decode. libipt's query decoder reads that packet
 *     ahead and holds the error back until a query needs it
 *     (howto_libipt.md, Timing), which the loop never makes; ptscope
 *     fails at the bad packet before the loop's first instruction,
 *     since the packet after a TIP may be a FUP of an asynchronous
 *     event at the TIP's target, before that instruction runs (SDM
 *     36.4.2.6);
 *   - RULE_PSB_NO_FUP: a PSB+ with no FUP met while tracing. PSB+ holds
 *     a FUP iff PacketEn = 1 (SDM 36.3.7, 36.4.2.17), so tracing is off
 *     there and only a TIP.PGE may turn it on again: ptscope fails
 *     at the packet right after the PSBEND (a TNT or TIP). libipt reads
 *     the PSB+ FUP only when it syncs and walks on as if tracing were
 *     still on: its segment goes on past ptscope's error. Also after an
 *     OVF resolved by a FUP, and with a stray PSBEND after the PSB+
 *     (which both decoders pass over). When a TIP.PGE follows the PSB+,
 *     ptscope goes on there and libipt, still on, fails at it
 *     (-pte_bad_context);
 *   - RULE_PSB_FUP_AWAY: a PSB+ met while tracing whose FUP is not on
 *     the walk up to the next branch that needs a packet. The FUP gives
 *     the IP where decoding goes on (SDM 36.3.7): the packets after the
 *     PSB+ are for the instructions from there on, so ptscope fails at
 *     that branch, with the first packet after the PSBEND at the head.
 *     libipt binds the PSB+ status events to the FUP's IP; with a PIP
 *     among them it fails at that branch too, else it walks on (and
 *     fails only at its next event): its segment goes on past ptscope's
 *     error (first with the [overflow] of an OVF right after the packet
 *     ptscope fails at). When an OVF follows the PSB+, both walk on
 *     towards the FUP's IP (the code ran on to it before the overflow)
 *     and fail (until session 33 ptscope took the overflow at once);
 *   - RULE_PGD_NOIP, kept on purpose (decoder/flow.c, need_tip()): a
 *     TIP.PGD without IP where a near branch needs its packet is a
 *     disable there for ptscope (the windows model shows it as a gap
 *     nothing explains) and no binding for libipt (far branches only,
 *     pt_insn_at_disabled_event): the segments are compared up to it;
 *   - RULE_READ_AHEAD: both fail with the same flow, ptscope at the packet
 *     before a PSB, libipt past it but not past that PSB+'s PSBEND.
 *     libipt's offset is where its query decoder has read ahead to, and
 *     it decodes a PSB+ as one unit (pt_qry_decode_psb reads the header
 *     up to the PSBEND). A PSB pattern inside a packet is no PSB;
 *   - RULE_PSB_BACK: both fail with the same flow, ptscope at a packet
 *     inside PSB+ that does not belong there (or does not decode), libipt
 *     at that PSB+'s PSB: when pt_qry_read_psb_header fails,
 *     pt_qry_decode_psb moves back to the PSB (so that a resync may try it
 *     again) and the error is reported there. The byte scan may see a PSB
 *     between them that is the same PSB+ (a longer run of 02 82 pairs, or
 *     its pattern inside a packet of it). ptscope may report a TIP.PGD
 *     and TIP.PGE, or an OVF and the FUP it resolves at, right before
 *     the PSB that libipt does not: after the packet of an event,
 *     pt_qry_event reads ahead to the next packet a query needs
 *     (pt_qry_read_ahead), through the PSB+, and returns the PSB+'s error
 *     in place of the event;
 *   - RULE_OVF_LASTIP: the FUP (or TIP.PGE) an overflow resolves at has
 *     an IP compressed against last-IP. "Any IP compression that follows
 *     the OVF is guaranteed to use as a reference LastIP the IP payload of
 *     an IP packet that preceded the overflow" (SDM 36.4.2.16, OVF,
 *     Application): ptscope keeps last-IP across the OVF; libipt 2.0.5
 *     resets it (pt_qry_decode_ovf calls pt_qry_reset, which clears
 *     last-IP) and resumes at the bare payload; where one of the two IPs
 *     has no code, that decoder's segment ends there. The segments are
 *     compared up to the [overflow];
 *   - RULE_PSB_ENABLES: a PSB+ with a FUP met while tracing is off (after
 *     an OVF that resolved with tracing off, or a TIP.PGD). PSB+ holds a
 *     FUP iff PacketEn = 1 (SDM 36.3.7, 36.4.2.17) and the FUP gives the
 *     IP where decoding goes on: ptscope goes on there. libipt publishes
 *     no enabled event for a PSB+ it meets while decoding (only at a sync;
 *     its SKD010 workaround alone resumes at such a FUP after an OVF) and
 *     fails at the next packet with -pte_no_enable (at the TIP of a FUP +
 *     TIP pair: it reads the two as one event; at the TIP.PGE of a
 *     TIP.PGD + TIP.PGE pair, the TIP.PGD one more disable for it, see
 *     RULE_PGD_WHILE_OFF). When that packet is a
 *     TIP.PGE (after a MODE.Exec or not), libipt goes on there, and
 *     ptscope, walking from the FUP's IP, fails on the way (a damaged
 *     FUP: code that does not decode) or at the packets after the PSB+;
 *   - RULE_PSB_NO_MODE: libipt syncs at a PSB+ with a FUP but no
 *     MODE.Exec, which the SDM puts in every PSB+ with PacketEn = 1 (36.3.7).
 *     pt_insn resets its mode to unknown at a sync and fails with
 *     -pte_bad_insn at the first instruction; ptscope keeps the mode it
 *     had (64-bit at the start): a decoder's choice for an incomplete
 *     PSB+, as pt-sgx-facts.md 4.4 has a streaming decoder keep its mode
 *     across a PSB+ without MODE.Exec. The same for an OVF in PSB+
 *     before the FUP (libipt reports the [overflow] first). (A MODE.Exec
 *     with the reserved CS.L = CS.D = 1 leaves no mode for either: both
 *     fail at the first instruction);
 *   - RULE_FUP_AT_END: the trace ends with a FUP, whose TIP or TIP.PGD is
 *     cut off. The FUP gives the IP the code got to (SDM 36.4.2.6); no
 *     instruction before it takes a packet, so ptscope walks to it and
 *     ends there, as at a branch whose packet is cut off. libipt's query
 *     decoder has read the FUP ahead, finds no packet after it and reports
 *     the end of the trace (pts_eos) right after the last instruction that
 *     took a packet. When the damage changed the FUP's IP, ptscope meets a
 *     branch that needs a packet before it gets there and fails at the
 *     FUP (TRACE_MISMATCH), or at an instruction invalid in 64-bit mode
 *     (BAD_INSN, as in RULE_INVALID_INSN); libipt still ends cleanly.
 *     The same when a PSB cut off by the end follows the FUP, or a PSBEND
 *     outside PSB+ (which both decoders pass over); when the TIP or
 *     TIP.PGD is there but cut by the end, ptscope reports the cut packet
 *     at the FUP's IP;
 *   - RULE_PGD_WHILE_OFF: a TIP.PGD while tracing is off (a duplicate of
 *     the one before). A TIP.PGD marks PacketEn going from 1 to 0 (SDM
 *     36.4.2.5): ptscope fails there with TRACE_MISMATCH;
 *     libipt's query decoder takes it as one more disable and goes on;
 *   - RULE_MODE_BEFORE_FUP: a MODE.Exec right before a FUP. In a compound
 *     event the FUP comes first, then MODE.Exec (and PIP, VMCS), then the
 *     TIP or TIP.PGD (SDM Table 36-15); only PSB+ has MODE.Exec before
 *     its FUP. ptscope binds the MODE.Exec to the next branch that takes a
 *     packet (a far transfer) and fails there or at the FUP; libipt binds
 *     it to the FUP's IP and goes on with the FUP's event. The same
 *     between a MODE.TSX and its FUP, which comes right after it (SDM
 *     Table 36-15): ptscope does not bind the MODE.TSX and fails at it.
 *     What follows ptscope's last agreeing token is not compared;
 *   - RULE_RET_STACKS: ptscope finds its return stack empty at a
 *     compressed RET where libipt pops an address, the flows equal up to
 *     there. A dropped TIP lets one decoder take a RET as compressed (a
 *     TNT bit, a pop) and the other as uncompressed (a TIP to the same
 *     address, no pop): the flows agree, the stacks do not. Or an OVF
 *     came between the CALL and the RET: ptscope resets its stack there
 *     (no compression across an overflow, SDM 36.4.2.16), libipt 2.0.5
 *     keeps it (pt_insn_process_overflow). libipt goes on to the end
 *     (which may come right after that RET), or to a later error (past a
 *     PSB too);
 *   - RULE_MODE_AT_PGD: a MODE.Exec right before a TIP.PGD without IP,
 *     which binds to a far transfer (SYSCALL into a ring not traced; SDM
 *     Table 36-15 puts MODE.Exec before TIP or TIP.PGD): libipt 2.0.5
 *     fails right after it with -pte_bad_context, ptscope goes on
 *     (tests/unit/test_flow_errata.c, "mode at syscall pgd");
 *   - RULE_IP16: in 16-bit code (a damaged MODE.Exec) a near branch's
 *     target wraps at 64 KiB (SDM Vol. 2, JMP, Jcc, CALL: with operand
 *     size 16, EIP <- tempEIP AND 0000FFFFH): ptscope truncates it,
 *     libipt 2.0.5 does not. What follows is not compared. Where
 *     libipt's target is the IP of a FUP + TIP.PGD, it reports the
 *     [disabled] there and ptscope walks on below 64 KiB; where no code
 *     is mapped below 64 KiB, ptscope fails there (NOMAP);
 *   - RULE_OVF_IN_PSB: an OVF inside PSB+ and the PSBEND after it. "OVF
 *     also terminates PSB+" (SDM 36.4.2.18, pt-sgx-facts.md): ptscope
 *     passes over the PSBEND and resumes at the FUP or TIP.PGE after it
 *     (SDM 36.4.2.16); libipt 2.0.5 fails at the PSBEND with
 *     -pte_bad_context. The flows agree up to ptscope's [overflow]
 *     (and, when ptscope fails later past the PSB libipt syncs at next,
 *     from that PSB on). The same for a stray PSBEND right after an OVF
 *     outside PSB+ (a PSBEND outside PSB+ means nothing to either decoder
 *     elsewhere);
 *   - RULE_FUP_OVF: a FUP, then an OVF in place of its TIP or TIP.PGD
 *     (lost in the overflow). The FUP gives the IP the code got to (SDM
 *     36.4.2.6): ptscope walks there, then reports the overflow; libipt
 *     reports the overflow as soon as its query decoder meets it, before
 *     the walk. ptscope's walk to the FUP's IP (the instruction after
 *     its last one, or the target of a direct JMP or CALL there) is taken
 *     out and the rest compared as any other pair. When the damage put
 *     the FUP's IP off the walk, ptscope meets a branch that needs a
 *     packet first and fails at the FUP (TRACE_MISMATCH, as for
 *     RULE_FUP_AT_END); libipt goes on after the overflow.
 *   - RULE_MWAIT: an MWAIT with no FUP after it. Its IP comes with the
 *     FUP of an EXSTOP whose IP bit is set (SDM 36.4.2.22-23); an EXSTOP
 *     without IP has no FUP, so ptscope reports the MWAIT without IP and
 *     goes on; libipt binds it to the next FUP and fails at a TIP or TNT
 *     in its place (-pte_bad_query). Where that FUP is the first of a
 *     FUP + TIP pair later on (an interrupt), libipt walks on past the
 *     pair's IP, where ptscope takes the pair, and fails at its TIP.
 *
 * With the default seed and with seeds 1-8000 every case agrees or parts by
 * one of these rules. CI runs the seeds tests/diff/meson.build lists.
 *
 * A failure prints the trace, the case (TRACE:MUT), the mutation with its
 * offsets and both decoders' ends; `diff_flow_damage --case T:M` runs that
 * case alone with the same other arguments, and FLOW_DAMAGE_DUMP=DIR writes
 * the damaged trace and the code for `ptscope flow --resync-on-error`.
 *
 * usage: diff_flow_damage [INSNS [SEED [MUTATIONS]]] [--case T:M]
 *        (default 6000 instructions per trace, seed 1, 120 mutations per
 *        trace)
 */
#include "flow_gen.h"
#include "flow_setup.h"
#include "flow_tokens.h"
#include "reserved_insn.h"
#include "rng.h"
#include "synth_run.h"

#include <ptscope/decoder.h>
#include <ptscope/packets.h>

#include <intel-pt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

/* ptscope's hang guard (in blocks), lowered so that a damaged loop ends
 * fast; libipt gets an instruction cap per segment, above what ptscope
 * walks before it unless its blocks hold several turns of the loop (a
 * block runs on through direct jumps): RULE_HANG takes either end. */
#define IDLE_LIMIT 20000u
#define LIBIPT_EXTRA_INSNS 400000u

/* ------------------------------------------------------------------------ */
/* Reporting: the case being run, for failures, crashes and hangs.          */

static char current[1024];
static int failures;

static void say_current(void)
{
	ssize_t r = write(2, current, strlen(current));
	(void)r;
}

static void on_signal(int sig)
{
	static const char msg[] = "\ncrash or hang (signal) in the case above\n";
	say_current();
	ssize_t r = write(2, msg, sizeof(msg) - 1);
	(void)r;
	signal(sig, SIG_DFL);
	raise(sig);
}

static void watch_crashes(void)
{
	signal(SIGALRM, on_signal);
	signal(SIGSEGV, on_signal);
	signal(SIGBUS, on_signal);
	signal(SIGFPE, on_signal);
	signal(SIGABRT, on_signal);
#if defined(__SANITIZE_ADDRESS__)
	/* ASan reports and exits without a signal: name the case too. */
	__sanitizer_set_death_callback(say_current);
#endif
}

/* ------------------------------------------------------------------------ */
/* Base traces.                                                             */

struct pkt_ref {
	uint64_t offset;
	uint8_t size, kind;
};

struct base {
	char name[96];
	uint8_t *trace;
	size_t size;
	struct pts_image *img;    /* the code, for both decoders */
	const char *elf;          /* synth traces: the ELF (for the repro) */
	struct flow_gen gen;      /* generated traces: code at gen.base */
	uint64_t code_lo, code_hi;
	struct pkt_ref *pkts;     /* packets of the valid trace */
	size_t npkts;
};

/* The packets of @b's valid trace (ptscope's packet layer; the traces are
 * valid, so libipt's would be the same). */
static int list_packets(struct base *b)
{
	struct pts_pkt_decoder *d = pts_pkt_decoder_new(NULL);
	struct pts_input in = {b->trace, b->size, 0};
	size_t cap = 0;
	if (!d)
		return -1;
	pts_pkt_end(d);
	for (;;) {
		struct pts_packet p;
		int r = pts_pkt_next(d, &in, &p);
		if (r == -PTS_ERR_EOS)
			break;
		if (r < 0) {
			fprintf(stderr, "%s: packet error in the valid trace: %s\n",
				b->name, pts_strerror(r));
			pts_pkt_decoder_free(d);
			return -1;
		}
		if (b->npkts == cap) {
			cap = cap ? cap * 2 : 4096;
			b->pkts = realloc(b->pkts, cap * sizeof(*b->pkts));
			if (!b->pkts)
				exit(2);
		}
		b->pkts[b->npkts++] = (struct pkt_ref){p.offset, p.size, p.kind};
	}
	pts_pkt_decoder_free(d);
	return b->npkts ? 0 : -1;
}

static void base_free(struct base *b)
{
	pts_image_free(b->img);
	if (b->elf)
		free(b->trace); /* flow_gen owns the others */
	flow_gen_free(&b->gen);
	free(b->pkts);
	memset(b, 0, sizeof(*b));
}

#define NGEN FLOW_GEN_CASES

/* synth scenarios over bash (diff_flow_synth's features, short PSB
 * periods so that a trace has many sync points). */
static const struct {
	const char *name;
	uint8_t retcomp, user_only, long_tnt;
	uint32_t async_rate, ovf_rate, ret_nocomp_rate;
} syn_cfgs[] = {
	{"synth plain", 1, 0, 0, 0, 0, 0},
	{"synth async tnt64", 1, 0, 1, 300, 0, 300000},
	{"synth overflow", 0, 1, 0, 100, 100, 0},
};
#define NSYN (sizeof(syn_cfgs) / sizeof(syn_cfgs[0]))
static const char bash[] = "/usr/bin/bash";

static int make_gen(struct base *b, unsigned c, uint64_t insns, uint64_t seed)
{
	struct flow_gen_opts o = {0};
	o.seed = seed * 1000 + c;
	o.insns = insns;
	o.functions = 40;
	const char *name = flow_gen_case(c, &o);
	o.psb_period = 256;
	snprintf(b->name, sizeof(b->name), "gen %s (flow_gen seed %" PRIu64
		 ")", name, o.seed);
	if (flow_gen_run(&o, &b->gen) < 0)
		return -1;
	b->trace = b->gen.trace;
	b->size = b->gen.trace_size;
	b->img = pts_image_new();
	if (!b->img || pts_image_add_mem(b->img, 0, b->gen.code,
					 b->gen.code_size, b->gen.base) < 0)
		return -1;
	b->code_lo = b->gen.base;
	b->code_hi = b->gen.base + b->gen.code_size;
	return 0;
}

static int make_syn(struct base *b, unsigned c, uint64_t insns, uint64_t seed)
{
	struct syn_options o;
	struct pts_config cfg;
	struct syn_sink sink;
	struct syn_emit_stats st;
	snprintf(b->name, sizeof(b->name), "%s over %s (synth seed %" PRIu64
		 ")", syn_cfgs[c].name, bash, seed + c);
	b->img = pts_image_new();
	if (!b->img || pts_image_add_elf(b->img, 0, bash, 0) < 0)
		return -1;
	b->elf = bash;
	syn_options_default(&o);
	o.seed = seed + c;
	o.insns = insns;
	o.psb_period = 512;
	o.retcomp = syn_cfgs[c].retcomp;
	o.user_only = syn_cfgs[c].user_only;
	o.long_tnt = syn_cfgs[c].long_tnt;
	o.async_rate = syn_cfgs[c].async_rate;
	o.ovf_rate = syn_cfgs[c].ovf_rate;
	o.ret_nocomp_rate = syn_cfgs[c].ret_nocomp_rate;
	pts_config_init(&cfg);
	syn_options_to_config(&o, &cfg);
	syn_sink_init(&sink, NULL);
	int err = syn_walk_to_memory(&o, &cfg, b->img, 0, &sink, NULL, NULL,
				     &st);
	pts_config_fini(&cfg);
	if (err < 0) {
		free(sink.mem);
		return -1;
	}
	b->trace = sink.mem;
	b->size = sink.mem_len;
	const struct pts_symbol *syms;
	size_t n = pts_image_functions(b->img, 0, &syms);
	b->code_lo = n ? syms[0].addr : 0x400000;
	b->code_hi = n ? syms[n - 1].addr + 1 : 0x500000;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Mutations.                                                               */

struct buf {
	uint8_t *p;
	size_t n, cap;
};

/* Replaces @del bytes at @at by @nins bytes from @ins. */
static void splice(struct buf *b, size_t at, size_t del, const uint8_t *ins,
		   size_t nins)
{
	if (at > b->n)
		at = b->n;
	if (del > b->n - at)
		del = b->n - at;
	size_t n = b->n - del + nins;
	if (n > b->cap) {
		b->cap = n * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			exit(2);
	}
	memmove(b->p + at + nins, b->p + at + del, b->n - at - del);
	if (nins) /* a drop passes no bytes */
		memcpy(b->p + at, ins, nins);
	b->n = n;
}

/* Drops bytes [@at, @at + @len) of @out, or (@dup) repeats them. */
static void drop_or_dup(struct buf *out, size_t at, size_t len, int dup)
{
	uint8_t *copy;

	if (!dup) {
		splice(out, at, len, NULL, 0);
		return;
	}
	copy = malloc(len);
	if (!copy)
		exit(2);
	memcpy(copy, out->p + at, len);
	splice(out, at + len, 0, copy, len);
	free(copy);
}

/* Appends to the mutation's description. */
static void describe(char *desc, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void describe(char *desc, size_t cap, const char *fmt, ...)
{
	size_t len = strlen(desc);
	va_list ap;
	va_start(ap, fmt);
	if (len < cap)
		vsnprintf(desc + len, cap - len, fmt, ap);
	va_end(ap);
}

/* An IP for a made-up packet: in the code (often not at an instruction),
 * a target the trace names elsewhere, or anywhere. */
static uint64_t some_ip(struct pts_rng *rng, const struct base *b)
{
	uint64_t r = pts_rng_below(rng, 10);
	if (r < 5)
		return b->code_lo + pts_rng_below(rng, b->code_hi - b->code_lo);
	if (r < 9) {
		/* The IP of a random IP packet of the valid trace, read back
		 * with a full decode of the packets before it would cost
		 * more than it is worth: take the code start plus a small
		 * offset made from that packet's position instead. */
		size_t k = pts_rng_below(rng, b->npkts);
		return b->code_lo + (b->pkts[k].offset * 7) %
					    (b->code_hi - b->code_lo + 1);
	}
	return pts_rng_bits(rng, 48);
}

static const uint8_t made_kinds[] = {
	PTS_PKT_TNT8, PTS_PKT_TNT64, PTS_PKT_TIP, PTS_PKT_TIP_PGE,
	PTS_PKT_TIP_PGD, PTS_PKT_FUP, PTS_PKT_PSB, PTS_PKT_PSBEND,
	PTS_PKT_OVF, PTS_PKT_PAD, PTS_PKT_MODE_EXEC, PTS_PKT_MODE_TSX,
	PTS_PKT_PIP, PTS_PKT_TSC, PTS_PKT_CBR, PTS_PKT_STOP,
};

/* A valid packet of a kind libipt 2.0.5 knows, not @avoid, into @out.
 * Returns its size. */
static int make_packet(struct pts_rng *rng, const struct base *b, int avoid,
		       uint8_t *out, size_t cap, char *desc, size_t dcap)
{
	static const uint8_t ipcs[] = {PTS_IPC_SUPPRESSED, PTS_IPC_UPDATE_16,
				       PTS_IPC_UPDATE_32, PTS_IPC_SEXT_48,
				       PTS_IPC_UPDATE_48, PTS_IPC_FULL};
	struct pts_packet p;
	uint8_t kind;
	do {
		kind = made_kinds[pts_rng_below(rng, sizeof(made_kinds))];
	} while (kind == avoid);
	memset(&p, 0, sizeof(p));
	p.kind = kind;
	uint64_t ip;
	switch (p.kind) {
	case PTS_PKT_TNT8:
		p.u.tnt.count = (uint8_t)(1 + pts_rng_below(rng, 6));
		p.u.tnt.bits = pts_rng_bits(rng, p.u.tnt.count);
		break;
	case PTS_PKT_TNT64:
		p.u.tnt.count = (uint8_t)(1 + pts_rng_below(rng, 47));
		p.u.tnt.bits = pts_rng_bits(rng, p.u.tnt.count);
		break;
	case PTS_PKT_TIP: case PTS_PKT_TIP_PGE: case PTS_PKT_TIP_PGD:
	case PTS_PKT_FUP:
		p.ipc = ipcs[pts_rng_below(rng, sizeof(ipcs))];
		ip = some_ip(rng, b);
		p.u.ip.payload = p.ipc == PTS_IPC_UPDATE_16   ? ip & 0xffff
				 : p.ipc == PTS_IPC_UPDATE_32 ? ip & 0xffffffff
				 : p.ipc == PTS_IPC_FULL      ? ip
				 : p.ipc ? ip & 0xffffffffffffull : 0;
		break;
	case PTS_PKT_MODE_EXEC:
		/* Mostly 64-bit, sometimes 32- or 16-bit code. */
		p.u.exec.csl = pts_rng_below(rng, 4) != 0;
		p.u.exec.csd = !p.u.exec.csl && pts_rng_below(rng, 2);
		break;
	case PTS_PKT_MODE_TSX:
		p.u.tsx.intx = (uint8_t)pts_rng_below(rng, 2);
		p.u.tsx.abrt = (uint8_t)pts_rng_below(rng, 2);
		break;
	case PTS_PKT_PIP:
		p.u.pip.cr3 = pts_rng_bits(rng, 46) << 5;
		p.u.pip.nr = (uint8_t)pts_rng_below(rng, 2);
		break;
	case PTS_PKT_TSC:
		p.u.tsc = pts_rng_bits(rng, 56);
		break;
	case PTS_PKT_CBR:
		p.u.cbr.ratio = (uint8_t)pts_rng_below(rng, 256);
		break;
	default:
		break;
	}
	int n = pts_pkt_encode(&p, out, cap);
	if (n <= 0) {
		fprintf(stderr, "cannot encode a %s packet\n",
			pts_pkt_kind_name(p.kind));
		exit(2);
	}
	describe(desc, dcap, "%s", pts_pkt_kind_name(p.kind));
	if (p.kind == PTS_PKT_TIP || p.kind == PTS_PKT_TIP_PGE ||
	    p.kind == PTS_PKT_TIP_PGD || p.kind == PTS_PKT_FUP)
		describe(desc, dcap, "(ipc %u, %#" PRIx64 ")", p.ipc,
			 p.u.ip.payload);
	return n;
}

enum mut {
	M_FLIP, M_DROP, M_DUP, M_TRUNC, M_REPLACE, M_ZERO, M_INSERT,
	M_DROP_PKTS, M_DUP_PKTS, M_MULTI, M_COUNT
};

/* A byte offset in @b (@b->n > 0). */
static size_t any_offset(struct pts_rng *rng, const struct buf *b)
{
	return (size_t)pts_rng_below(rng, b->n);
}

/* One raw-byte damage of kind @m (not MULTI) to @out; @v describes the
 * valid trace's packets (used only while @aligned). */
static void damage(struct pts_rng *rng, const struct base *v, int aligned,
		   int m, struct buf *out, char *desc, size_t dcap)
{
	size_t at = any_offset(rng, out), len, k, j;
	uint8_t pkt[32];
	switch (m) {
	case M_FLIP:
		len = 1 + pts_rng_below(rng, 3);
		describe(desc, dcap, "flip");
		for (size_t i = 0; i < len; i++) {
			size_t o = at + pts_rng_below(rng, 32);
			if (o >= out->n)
				o = out->n - 1;
			unsigned bit = (unsigned)pts_rng_below(rng, 8);
			out->p[o] ^= (uint8_t)(1u << bit);
			describe(desc, dcap, " %zu.%u", o, bit);
		}
		break;
	case M_DROP:
	case M_DUP:
		len = 1 + pts_rng_below(rng, 48);
		if (len > out->n - at)
			len = out->n - at;
		drop_or_dup(out, at, len, m == M_DUP);
		describe(desc, dcap, "%s [%zu, %zu)", m == M_DROP ? "drop" : "dup",
			 at, at + len);
		break;
	case M_TRUNC:
		out->n = at;
		describe(desc, dcap, "truncate at %zu", at);
		break;
	case M_ZERO:
		len = 1 + pts_rng_below(rng, 64);
		if (len > out->n - at)
			len = out->n - at;
		memset(out->p + at, 0, len);
		describe(desc, dcap, "zero [%zu, %zu)", at, at + len);
		break;
	case M_REPLACE:
	case M_INSERT:
		if (!aligned) {
			/* Offsets of the valid trace no longer hold. */
			damage(rng, v, 0, M_FLIP, out, desc, dcap);
			break;
		}
		k = pts_rng_below(rng, v->npkts);
		at = (size_t)v->pkts[k].offset;
		describe(desc, dcap, m == M_REPLACE ? "replace %s at %zu by " :
			 "insert before %s at %zu: ",
			 pts_pkt_kind_name(v->pkts[k].kind), at);
		len = (size_t)make_packet(rng, v, m == M_REPLACE ? v->pkts[k].kind
							: -1, pkt, sizeof(pkt), desc,
					  dcap);
		splice(out, at, m == M_REPLACE ? v->pkts[k].size : 0, pkt, len);
		break;
	case M_DROP_PKTS:
	case M_DUP_PKTS:
		if (!aligned) {
			damage(rng, v, 0, m == M_DROP_PKTS ? M_DROP : M_DUP, out,
			       desc, dcap);
			break;
		}
		/* Whole packets: a stream that decodes but lies. */
		k = pts_rng_below(rng, v->npkts);
		j = k + 1 + pts_rng_below(rng, 4);
		if (j > v->npkts)
			j = v->npkts;
		at = (size_t)v->pkts[k].offset;
		len = (size_t)(v->pkts[j - 1].offset + v->pkts[j - 1].size) - at;
		drop_or_dup(out, at, len, m == M_DUP_PKTS);
		describe(desc, dcap, "%s packets %zu..%zu [%zu, %zu)",
			 m == M_DROP_PKTS ? "drop" : "dup", k, j - 1, at, at + len);
		break;
	default:
		break;
	}
}

/* Damages a copy of @v's trace into @out by case seed @seed. */
static void mutate(const struct base *v, uint64_t seed, struct buf *out,
		   char *desc, size_t dcap)
{
	struct pts_rng rng;
	pts_rng_seed(&rng, seed);
	out->n = 0;
	splice(out, 0, 0, v->trace, v->size);
	desc[0] = 0;
	int m = (int)pts_rng_below(&rng, M_COUNT);
	if (m != M_MULTI) {
		damage(&rng, v, 1, m, out, desc, dcap);
		return;
	}
	/* Two or three damages; offsets after the first are those of the
	 * trace as the earlier ones left it. */
	unsigned n = 2 + (unsigned)pts_rng_below(&rng, 2);
	for (unsigned i = 0; i < n && out->n; i++) {
		int k;
		do {
			k = (int)pts_rng_below(&rng, M_COUNT);
		} while (k == M_MULTI || k == M_TRUNC);
		if (i)
			describe(desc, dcap, "; then ");
		damage(&rng, v, i == 0, k, out, desc, dcap);
	}
}

/* ------------------------------------------------------------------------ */
/* Decoding into segments.                                                  */

/* How a segment ended: cleanly at the end of the trace, with an error
 * (END_CUT: the error is the end of the data), or at libipt's cap. */
enum { END_EOS, END_ERROR, END_CUT, END_CAP };

struct seg {
	uint64_t psb;     /* offset of the PSB it was synced at */
	size_t from, to;  /* its tokens */
	uint64_t off;     /* where the error was seen */
	int end;          /* END_* */
	int err;          /* the decoder's error code (END_ERROR) */
	uint64_t ip;      /* ptscope: the instruction the error names */
};

struct flow {
	struct pts_toks t;
	struct seg *seg;
	size_t nseg, cap;
	/* ptscope: the tokens of its disables by a TIP.PGD without IP */
	size_t *pgd_noip;
	size_t npgd, cappgd;
	unsigned sync_errors; /* libipt: failed syncs */
};

static struct seg *seg_open(struct flow *f, uint64_t psb)
{
	if (f->nseg == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 16;
		f->seg = realloc(f->seg, f->cap * sizeof(*f->seg));
		if (!f->seg)
			exit(2);
	}
	struct seg *s = &f->seg[f->nseg++];
	*s = (struct seg){.psb = psb, .from = f->t.n, .to = f->t.n};
	return s;
}

static void seg_close(struct flow *f, int end, int err, uint64_t off)
{
	struct seg *s = &f->seg[f->nseg - 1];
	s->to = f->t.n;
	s->end = end;
	s->err = err;
	s->off = off;
}

static void note_pgd_noip(struct flow *f, size_t tok)
{
	if (f->npgd == f->cappgd) {
		f->cappgd = f->cappgd ? f->cappgd * 2 : 16;
		f->pgd_noip = realloc(f->pgd_noip,
				      f->cappgd * sizeof(*f->pgd_noip));
		if (!f->pgd_noip)
			exit(2);
	}
	f->pgd_noip[f->npgd++] = tok;
}

static int is_pgd_noip(const struct flow *f, size_t tok)
{
	for (size_t i = 0; i < f->npgd; i++)
		if (f->pgd_noip[i] == tok)
			return 1;
	return 0;
}

static void flow_free(struct flow *f)
{
	pts_toks_free(&f->t);
	free(f->pgd_noip);
	free(f->seg);
	memset(f, 0, sizeof(*f));
}

static void add_event(struct pts_toks *t, int e)
{
	pts_toks_add(t, PTS_TOK_EVENT(e));
}

/* Drains libipt's pending events into tokens (as flow_tokens.c). */
static int lib_events(struct pt_insn_decoder *d, int status,
		      struct pts_toks *t)
{
	while (status >= 0 && (status & pts_event_pending)) {
		struct pt_event ev;
		status = pt_insn_event(d, &ev, sizeof(ev));
		if (status < 0 || ev.status_update)
			continue;
		if (ev.type == ptev_enabled)
			add_event(t, ev.variant.enabled.resumed
					     ? PTS_TOK_RESUMED
					     : PTS_TOK_ENABLED);
		else if (ev.type == ptev_disabled ||
			 ev.type == ptev_async_disabled)
			add_event(t, PTS_TOK_DISABLED);
		else if (ev.type == ptev_overflow)
			add_event(t, PTS_TOK_OVERFLOW);
	}
	return status;
}

/* One libipt segment from a successful sync with @status; closes it. */
static void lib_segment(struct pt_insn_decoder *d, int status, uint64_t cap,
			struct flow *f)
{
	uint64_t n = 0, off = 0;
	for (;;) {
		status = lib_events(d, status, &f->t);
		if (status < 0 || (status & pts_eos))
			break;
		struct pt_insn insn;
		memset(&insn, 0, sizeof(insn)); /* iclass ptic_error */
		status = pt_insn_next(d, &insn, sizeof(insn));
		if (insn.iclass != ptic_error) {
			pts_toks_add(&f->t, insn.ip);
			f->t.insns++;
		}
		if (status < 0)
			break;
		if (++n > cap) {
			pt_insn_get_offset(d, &off);
			seg_close(f, END_CAP, 0, off);
			return;
		}
	}
	pt_insn_get_offset(d, &off);
	if (status >= 0)
		seg_close(f, END_EOS, 0, off);
	else
		seg_close(f, status == -pte_eos ? END_CUT : END_ERROR, status,
			  off);
}

/* libipt's flow of @trace, resyncing after errors as howto_libipt.md's
 * decode loop does (sync_forward again until it succeeds or says eos). */
static void run_libipt(const struct base *b, const struct buf *trace,
		       struct flow *f)
{
	struct pt_config cfg;
	pt_config_init(&cfg);
	cfg.begin = trace->p;
	cfg.end = trace->p + trace->n;
	struct pt_insn_decoder *d = pt_insn_alloc_decoder(&cfg);
	if (!d || pt_image_set_callback(pt_insn_get_image(d),
					pts_test_libipt_read, b->img) < 0) {
		fprintf(stderr, "libipt decoder set-up failed\n");
		exit(2);
	}
	/* Every sync lands on a later PSB: the trace bounds the loop. */
	for (size_t tries = 0; tries <= trace->n; tries++) {
		int status = pt_insn_sync_forward(d);
		if (status == -pte_eos)
			break;
		if (status < 0) {
			f->sync_errors++;
			continue;
		}
		uint64_t psb = 0;
		pt_insn_get_sync_offset(d, &psb);
		seg_open(f, psb);
		lib_segment(d, status, b->gen.ntruth + f->t.insns +
					       LIBIPT_EXTRA_INSNS, f);
		if (f->seg[f->nseg - 1].end == END_CAP)
			break; /* a loop; the rest is not compared */
	}
	pt_insn_free_decoder(d);
}

/* Decodes all of @trace with ptscope's packet layer (errors skipped, as
 * the decoder resyncs) and calls @visit on each packet until it returns
 * nonzero. Returns that, or 0. */
static int each_packet(const struct buf *trace,
		       int (*visit)(const struct pts_packet *p, void *ctx),
		       void *ctx)
{
	struct pts_pkt_decoder *d = pts_pkt_decoder_new(NULL);
	struct pts_input in = {trace->p, trace->n, 0};
	int stop = 0;
	if (!d)
		exit(2);
	pts_pkt_end(d);
	while (!stop) {
		struct pts_packet p;
		int r = pts_pkt_next(d, &in, &p);
		if (r == -PTS_ERR_EOS || r == -PTS_ERR_AGAIN)
			break;
		if (r >= 0)
			stop = visit(&p, ctx);
	}
	pts_pkt_decoder_free(d);
	return stop;
}

struct offsets {
	uint64_t *v;
	size_t n, cap;
};

static int add_psb(const struct pts_packet *p, void *ctx)
{
	struct offsets *o = ctx;
	if (p->kind != PTS_PKT_PSB)
		return 0;
	if (o->n == o->cap) {
		o->cap = o->cap ? o->cap * 2 : 64;
		o->v = realloc(o->v, o->cap * sizeof(*o->v));
		if (!o->v)
			exit(2);
	}
	o->v[o->n++] = p->offset;
	return 0;
}

/* The offsets of the PSBs ptscope's packet layer finds in @trace (where
 * it can sync), in order. */
static size_t ptscope_psbs(const struct buf *trace, uint64_t **out)
{
	struct offsets o = {NULL, 0, 0};
	each_packet(trace, add_psb, &o);
	*out = o.v;
	return o.n;
}

/* A range of trace offsets and what to look for in it. */
struct range {
	uint64_t from, to;
	int (*match)(const struct pts_packet *p);
};

/* 1 at a packet in the range that r->match takes, -1 past the range. */
static int match_in(const struct pts_packet *p, void *ctx)
{
	const struct range *r = ctx;
	if (p->offset < r->from)
		return 0;
	if (p->offset > r->to)
		return -1;
	return r->match(p);
}

/* Whether ptscope's packet layer finds a packet @match takes in
 * [@from, @to] of @trace. */
static int packet_in(const struct buf *trace, uint64_t from, uint64_t to,
		     int (*match)(const struct pts_packet *p))
{
	struct range r = {from, to, match};
	return each_packet(trace, match_in, &r) == 1;
}

/* A packet libipt 2.0.5 does not know (RULE_NEW_PACKET). */
static int new_kind(const struct pts_packet *p)
{
	return p->kind == PTS_PKT_CFE || p->kind == PTS_PKT_EVD ||
	       p->kind == PTS_PKT_BBP || p->kind == PTS_PKT_BIP ||
	       p->kind == PTS_PKT_BEP;
}

/* A PSB as the packet layer finds it: a PSB pattern inside a packet is
 * none. */
static int psb_kind(const struct pts_packet *p)
{
	return p->kind == PTS_PKT_PSB;
}

/* A MODE.Exec for 16-bit code, CS.L = CS.D = 0 (RULE_IP16). */
static int mode16_kind(const struct pts_packet *p)
{
	return p->kind == PTS_PKT_MODE_EXEC && !p->u.exec.csl &&
	       !p->u.exec.csd;
}

struct ptscope_run {
	struct flow *f;
	const uint64_t *psbs;
	size_t npsbs;
	uint64_t resume_from; /* the next segment starts at a PSB from here */
	int open;
	int bad_psb; /* a record with no PSB at or after resume_from */
};

/* The segment the next record belongs to: after an error, ptscope skips
 * packets to the next PSB at or after the error's offset. */
static void ptscope_need_seg(struct ptscope_run *r)
{
	if (r->open)
		return;
	size_t k = 0;
	while (k < r->npsbs && r->psbs[k] < r->resume_from)
		k++;
	if (k == r->npsbs)
		r->bad_psb = 1;
	seg_open(r->f, k < r->npsbs ? r->psbs[k] : UINT64_MAX);
	r->open = 1;
}

static void ptscope_rec(struct ptscope_run *r, const struct pts_flow_rec *rec)
{
	struct pts_toks *t = &r->f->t;
	/* Skipped bytes are no flow (libipt skips them silently). */
	if (rec->kind == PTS_FLOW_SKIP ||
	    (rec->kind == PTS_FLOW_EVENT &&
	     ((rec->flags & PTS_EV_F_STATUS) || rec->type == PTS_EV_END)))
		return;
	ptscope_need_seg(r);
	if (rec->kind == PTS_FLOW_INSNS) {
		for (uint32_t k = 0; k < rec->n; k++)
			pts_toks_add(t, rec->ips[k]);
		t->insns += rec->n;
	} else if (rec->kind == PTS_FLOW_ERROR) {
		/* A packet cut by the end of the trace: libipt's -pte_eos. */
		seg_close(r->f, rec->error == -PTS_ERR_TRUNCATED ? END_CUT
								 : END_ERROR,
			  rec->error, rec->offset);
		r->f->seg[r->f->nseg - 1].ip = rec->ip;
		r->open = 0;
		r->resume_from = rec->offset;
	} else if (rec->type == PTS_EV_ENABLED) {
		add_event(t, (rec->flags & PTS_EV_F_RESUMED) ? PTS_TOK_RESUMED
							    : PTS_TOK_ENABLED);
	} else if (rec->type == PTS_EV_DISABLED ||
		   rec->type == PTS_EV_ASYNC_DISABLED) {
		if (rec->type == PTS_EV_DISABLED &&
		    (rec->flags & PTS_EV_F_IP_SUPPRESSED))
			note_pgd_noip(r->f, t->n);
		add_event(t, PTS_TOK_DISABLED);
	} else if (rec->type == PTS_EV_OVERFLOW) {
		add_event(t, PTS_TOK_OVERFLOW);
	}
}

/* ptscope's flow of @trace, fed in random chunks (1..4096 bytes) with
 * random record counts asked for, from @seed. */
static void run_ptscope(const struct base *b, const struct buf *trace,
			uint64_t seed, struct flow *f, int *bad_psb)
{
	struct pts_flow_config config = {0};
	config.idle_limit = IDLE_LIMIT;
	struct pts_flow *fl = pts_flow_new(&config, b->img);
	if (!fl)
		exit(2);
	struct ptscope_run r = {.f = f};
	r.npsbs = ptscope_psbs(trace, (uint64_t **)&r.psbs);
	struct pts_rng rng;
	pts_rng_seed(&rng, seed);
	struct pts_flow_rec recs[64];
	struct pts_input in = {NULL, 0, 0};
	size_t pos = 0;
	for (;;) {
		int max = 1 + (int)pts_rng_below(&rng, 64);
		int n = pts_flow_next(fl, &in, recs, max);
		if (n == -PTS_ERR_AGAIN) {
			if (pos == trace->n) {
				pts_flow_end(fl);
				continue;
			}
			size_t len = 1 + pts_rng_below(&rng, 4096);
			if (len > trace->n - pos)
				len = trace->n - pos;
			in = (struct pts_input){trace->p + pos, len, 0};
			pos += len;
			continue;
		}
		if (n < 0)
			break;
		for (int i = 0; i < n; i++)
			ptscope_rec(&r, &recs[i]);
	}
	if (r.open)
		seg_close(f, END_EOS, 0, trace->n);
	*bad_psb = r.bad_psb;
	free((void *)r.psbs);
	pts_flow_free(fl);
}

/* ------------------------------------------------------------------------ */
/* Comparison.                                                              */

enum { RULE_ERR_COUNT, RULE_END_KIND, RULE_NEW_PACKET, RULE_HANG,
       RULE_STATUS_EARLY, RULE_TIMING, RULE_INVALID_INSN, RULE_PSB_NO_FUP,
       RULE_PSB_FUP_AWAY, RULE_PGD_NOIP, RULE_READ_AHEAD, RULE_PSB_BACK,
       RULE_OVF_LASTIP, RULE_PSB_ENABLES, RULE_PSB_NO_MODE, RULE_FUP_AT_END,
       RULE_PGD_WHILE_OFF, RULE_MODE_BEFORE_FUP, RULE_RET_STACKS,
       RULE_MODE_AT_PGD, RULE_IP16, RULE_OVF_IN_PSB, RULE_FUP_OVF,
       RULE_MWAIT, RULE_HANG_BAD_PACKET, NRULES };
static const char *const rule_names[NRULES] = {
	"both fail, one after more instructions",
	"same flow, one ends cleanly, the other at cut data",
	"packet unknown to libipt 2.0.5",
	"loop without trace (libipt capped, ptscope NO_PROGRESS)",
	"a packet nothing can take (ptscope fails there)",
	"libipt fails at a CBR or long CYC, which the flow does not use",
	"an instruction invalid in 64-bit mode, sized by libipt",
	"a PSB+ without FUP while tracing (tracing off for ptscope only)",
	"a PSB+ FUP off the walk (checked by ptscope only)",
	"a TIP.PGD without IP bound by ptscope only (kept on purpose)",
	"libipt's error offset read ahead into a PSB+",
	"libipt's error in PSB+ reported at its PSB",
	"a compressed IP after OVF (libipt resets last-IP there)",
	"a PSB+ with FUP while off (tracing on for ptscope only)",
	"a PSB+ with FUP but no MODE.Exec (mode unknown to libipt)",
	"a FUP ends the trace (libipt ends before its IP)",
	"a TIP.PGD while tracing is off (ignored by libipt)",
	"a MODE.Exec before a FUP (bound to the FUP by libipt)",
	"return stacks apart (a RET compressed for one decoder only)",
	"MODE.Exec before a TIP.PGD without IP (libipt fails after it)",
	"a branch target in 16-bit code (truncated by ptscope only)",
	"an OVF ends PSB+ (libipt fails at the PSBEND after it)",
	"a FUP, then OVF (ptscope walks to the FUP's IP first)",
	"an MWAIT without a FUP after it (libipt fails at the next packet)",
	"loop without trace after a bad packet (libipt capped, ptscope fails)",
};

struct kind_at {
	uint64_t off;
	int kind;
	unsigned size;
};

static int find_kind(const struct pts_packet *p, void *ctx)
{
	struct kind_at *k = ctx;
	if (p->offset < k->off)
		return 0;
	k->kind = p->offset == k->off ? p->kind : -1;
	k->size = p->size;
	return 1;
}

/* The kind and size of the packet at @off (kind -1: none starts there). */
static struct kind_at packet_at(const struct buf *trace, uint64_t off)
{
	struct kind_at k = {off, -1, 0};
	each_packet(trace, find_kind, &k);
	return k;
}

static int kind_at(const struct buf *trace, uint64_t off)
{
	return packet_at(trace, off).kind;
}

/* The packets the flow does not use. */
static int timing_kind(int kind)
{
	return kind == PTS_PKT_TSC || kind == PTS_PKT_MTC ||
	       kind == PTS_PKT_TMA || kind == PTS_PKT_CYC ||
	       kind == PTS_PKT_CBR || kind == PTS_PKT_PAD ||
	       kind == PTS_PKT_MNT;
}

struct after {
	uint64_t off;
	int flow_only; /* pass over timing packets and PADs */
};

static int find_after(const struct pts_packet *p, void *ctx)
{
	struct after *a = ctx;
	if (p->offset <= a->off || (a->flow_only && timing_kind(p->kind)))
		return 0;
	a->off = p->offset;
	return 1;
}

/* The offset of the packet after the one at @off (@off when none); with
 * @flow_only, of the next packet the flow uses. */
static uint64_t packet_after(const struct buf *trace, uint64_t off,
			     int flow_only)
{
	struct after a = {off, flow_only};
	each_packet(trace, find_after, &a);
	return a.off;
}

struct kind_before {
	uint64_t off;
	int kind;   /* of the packet before the one at off (timing aside) */
	int ipc;    /* its IP compression */
	int in_psb; /* inside PSB+ */
	uint64_t at; /* its offset */
	uint64_t psb; /* the offset of the last PSB */
};

static int find_before(const struct pts_packet *p, void *ctx)
{
	struct kind_before *k = ctx;
	if (p->offset >= k->off)
		return 1;
	/* PADs, timing packets and a PSBEND outside PSB+ (which means
	 * nothing) aside */
	if (p->kind == PTS_PKT_PSB) {
		k->in_psb = 1;
		k->psb = p->offset;
	}
	if (timing_kind(p->kind) || (p->kind == PTS_PKT_PSBEND && !k->in_psb))
		return 0;
	k->in_psb &= p->kind != PTS_PKT_PSBEND;
	k->kind = p->kind;
	k->ipc = p->ipc;
	k->at = p->offset;
	return 0;
}

/* The packet before the one at @off (see find_before; kind -1 when
 * none). */
static struct kind_before packet_before(const struct buf *trace,
					uint64_t off)
{
	struct kind_before k = {.off = off, .kind = -1};
	each_packet(trace, find_before, &k);
	return k;
}

static int kind_before(const struct buf *trace, uint64_t off)
{
	return packet_before(trace, off).kind;
}

struct mwait_fup {
	uint64_t fup; /* the FUP to be found */
	int open;     /* an MWAIT not followed by a FUP yet */
};

static int find_mwait_fup(const struct pts_packet *p, void *ctx)
{
	struct mwait_fup *m = ctx;
	if (p->kind == PTS_PKT_FUP && p->offset == m->fup)
		return m->open;
	if (p->kind == PTS_PKT_MWAIT)
		m->open = 1;
	else if (p->kind == PTS_PKT_FUP)
		m->open = 0;
	return 0;
}

/* RULE_MWAIT: whether the packet before the one at @off is a FUP that an
 * MWAIT before it (with no FUP in between) waits for: libipt takes that
 * FUP's IP for the MWAIT, far from it when the MWAIT has none (seed
 * 6310), and fails at the packet after the FUP. */
static int fup_taken_by_mwait(const struct buf *trace, uint64_t off)
{
	struct kind_before k = packet_before(trace, off);
	struct mwait_fup m = {k.at, 0};
	return k.kind == PTS_PKT_FUP && each_packet(trace, find_mwait_fup, &m);
}

/* Where the event of the packet at @off begins: at the FUP right before
 * a TIP or TIP.PGD (libipt reads the two as one event and reports an
 * error at the second), at the MODE.Exec right before a TIP.PGE (bound to
 * it); else at @off. */
static uint64_t event_start(const struct buf *trace, uint64_t off)
{
	int kind = kind_at(trace, off);
	struct kind_before k = packet_before(trace, off);
	if ((kind == PTS_PKT_TIP || kind == PTS_PKT_TIP_PGD) &&
	    k.kind == PTS_PKT_FUP)
		return k.at;
	if (kind == PTS_PKT_TIP_PGE && k.kind == PTS_PKT_MODE_EXEC)
		return k.at;
	return off;
}

/* RULE_FUP_AT_END: whether ptscope's error at @off is at a PSB that ends
 * the trace (cut off: no PSBEND) right after a FUP. */
static int fup_then_last_psb(const struct buf *trace, uint64_t off)
{
	return kind_at(trace, off) == PTS_PKT_PSB &&
	       packet_after(trace, off, 0) == off &&
	       kind_before(trace, off) == PTS_PKT_FUP;
}

/* RULE_MODE_BEFORE_FUP: whether ptscope's error at @off is at a MODE.Exec
 * right before a FUP, at a FUP right after a MODE.Exec, or at a MODE.TSX
 * right before such a MODE.Exec. */
static int mode_before_fup(const struct buf *trace, uint64_t off)
{
	int kind = kind_at(trace, off);
	if (kind == PTS_PKT_MODE_TSX) {
		off = packet_after(trace, off, 0);
		kind = kind_at(trace, off);
		if (kind != PTS_PKT_MODE_EXEC)
			return 0;
	}
	if (kind == PTS_PKT_MODE_EXEC)
		return kind_at(trace, packet_after(trace, off, 0)) == PTS_PKT_FUP;
	return kind == PTS_PKT_FUP &&
	       kind_before(trace, off) == PTS_PKT_MODE_EXEC;
}

struct mode_pgd {
	uint64_t from, to; /* the packets asked about: [from, to] */
	int mode;          /* the packet before was a MODE.Exec */
};

static int scan_mode_pgd(const struct pts_packet *p, void *ctx)
{
	struct mode_pgd *m = ctx;
	if (p->offset > m->to)
		return -1;
	if (p->offset >= m->from && m->mode && p->kind == PTS_PKT_TIP_PGD &&
	    p->ipc == PTS_IPC_SUPPRESSED)
		return 1;
	m->mode = p->kind == PTS_PKT_MODE_EXEC;
	return 0;
}

/* RULE_MODE_AT_PGD: whether libipt's -pte_bad_context at @a->off comes
 * right after a MODE.Exec and TIP.PGD without IP (and the TIP.PGE after
 * it): the TIP.PGD lies within the 16 bytes before (1 byte, then a
 * TIP.PGE of at most 9 and a few PADs or timing packets), or before the
 * PSB of the PSB+ that holds @a->off. */
static int lib_fails_at_mode_pgd(const struct buf *trace, const struct seg *a)
{
	/* inside a PSB+ it read ahead to (RULE_PSB_BACK): from its PSB */
	struct kind_before k = packet_before(trace, a->off);
	uint64_t to = k.in_psb ? k.psb : a->off;
	struct mode_pgd m = {to > 16 ? to - 16 : 0, to, 0};
	return a->end == END_ERROR && a->err == -pte_bad_context &&
	       each_packet(trace, scan_mode_pgd, &m) == 1;
}

/* Whether @kind is PIP, MODE.Exec, VMCS, FUP, MODE.TSX or PTW: a packet
 * that binds to a kind of instruction or a later packet
 * (RULE_STATUS_EARLY). */
static int status_kind(int kind)
{
	return kind == PTS_PKT_PIP || kind == PTS_PKT_MODE_EXEC ||
	       kind == PTS_PKT_VMCS || kind == PTS_PKT_FUP ||
	       kind == PTS_PKT_MODE_TSX || kind == PTS_PKT_PTW;
}

/* Whether ptscope's error at @off is at such a packet. */
static int status_packet_at(const struct buf *trace, uint64_t off)
{
	return status_kind(kind_at(trace, off));
}

/* Whether ptscope's error at @off is at the packet after one: it took the
 * status packet (a MODE.Exec for a far branch, a FUP for an event) and
 * then failed at what came next (a PSB, a TNT) instead of its TIP. */
static int status_packet_before(const struct buf *trace, uint64_t off)
{
	return status_kind(kind_before(trace, off));
}

/* The code at @ip into @x (*@n bytes): the index of the opcode after the
 * legacy and REX prefixes (pts_test_opcode_at()). */
static int opcode_at(const struct base *b, uint64_t ip, uint8_t x[15],
		     int *n, int *lock)
{
	*n = pts_image_fetch(b->img, 0, ip, x, 15);
	return pts_test_opcode_at(x, *n, lock);
}

/* Whether the instruction at @ip is reserved in 64-bit mode
 * (pts_test_reserved64(), RULE_INVALID_INSN). */
static int invalid_in_64(const struct base *b, uint64_t ip)
{
	uint8_t x[15];
	int n = pts_image_fetch(b->img, 0, ip, x, 15);
	return n > 0 && pts_test_reserved64(x, n);
}

/* Whether the instruction at @ip is a near branch that takes a packet: a
 * conditional branch, an indirect JMP or CALL, a near RET
 * (RULE_PGD_NOIP; far transfers, which libipt binds a TIP.PGD without IP
 * to too, are not). */
static int near_branch(const struct base *b, uint64_t ip)
{
	uint8_t x[15];
	int lock, n, i = opcode_at(b, ip, x, &n, &lock);
	if (i >= n)
		return 0;
	/* Jcc, LOOPNE/LOOPE/LOOP/JrCXZ, RET */
	if ((x[i] & 0xf0) == 0x70 || (x[i] >= 0xe0 && x[i] <= 0xe3) ||
	    x[i] == 0xc3 || x[i] == 0xc2)
		return 1;
	if (x[i] == 0x0f)
		return i + 1 < n && (x[i + 1] & 0xf0) == 0x80;
	if (x[i] == 0xff && i + 1 < n) {
		unsigned reg = (x[i + 1] >> 3) & 7;
		return reg == 2 || reg == 4;
	}
	return 0;
}

struct psb_scan {
	uint64_t off;  /* the packet asked about */
	int in_psb;    /* inside PSB+ */
	int fup;       /* the PSB+ has a FUP ... */
	uint64_t ip;   /* ... with this IP */
	int after;     /* right after a PSB+ (timing packets aside) */
};

static int scan_psb(const struct pts_packet *p, void *ctx)
{
	struct psb_scan *s = ctx;
	if (p->offset >= s->off)
		return p->offset == s->off && s->after ? 1 : -1;
	if (p->kind == PTS_PKT_PSB) {
		s->in_psb = 1;
		s->fup = 0;
	} else if (p->kind == PTS_PKT_FUP && s->in_psb) {
		/* the last one holds; without IP it says tracing is off */
		s->fup = p->ipc != PTS_IPC_SUPPRESSED;
		s->ip = p->u.ip.ip;
	}
	if (p->kind == PTS_PKT_PSBEND) {
		/* A PSBEND outside PSB+ is dropped (as libipt does): after a
		 * PSB+, a stray one leaves it right after. */
		s->after = s->in_psb || s->after;
		s->in_psb = 0;
	} else {
		s->after = s->after && timing_kind(p->kind);
	}
	return 0;
}

/* Whether the packet at @off comes right after a PSB+ (timing packets
 * aside); then @fup says whether it has a FUP, and @ip its IP
 * (RULE_PSB_NO_FUP, RULE_PSB_FUP_AWAY). */
static int after_psb(const struct buf *trace, uint64_t off, int *fup,
		     uint64_t *ip)
{
	struct psb_scan s = {off, 0, 0, 0, 0};
	if (each_packet(trace, scan_psb, &s) != 1)
		return 0;
	*fup = s.fup;
	*ip = s.ip;
	return 1;
}

/* Whether the packet at @off comes right after a PSB+ whose FUP has @ip,
 * and is a TIP.PGE or a MODE.Exec right before one (RULE_PSB_ENABLES). */
static int psb_fup_before_pge(const struct buf *trace, uint64_t off,
			      uint64_t ip)
{
	int fup;
	uint64_t fup_ip;
	if (!after_psb(trace, off, &fup, &fup_ip) || !fup || fup_ip != ip)
		return 0;
	if (kind_at(trace, off) == PTS_PKT_MODE_EXEC)
		off = packet_after(trace, off, 0);
	return kind_at(trace, off) == PTS_PKT_TIP_PGE;
}

/* RULE_PSB_NO_FUP and RULE_PSB_FUP_AWAY: ptscope, walking (its last
 * token, @last, is an instruction, or for RULE_PSB_NO_FUP the [enabled] or
 * [resumed] of a TIP.PGE, or the [overflow] of an OVF resolved by a FUP,
 * right before the PSB+), fails with a mismatch at
 * the first packet after a PSB+ that says tracing is off, or that it goes
 * on at an IP other than the branch (@last) that needs that packet.
 * Returns the rule, or -1. */
static int psb_misfit(const struct buf *trace, const struct seg *b,
		      uint64_t last)
{
	int fup;
	uint64_t ip;
	int on = last == PTS_TOK_EVENT(PTS_TOK_ENABLED) ||
		 last == PTS_TOK_EVENT(PTS_TOK_RESUMED) ||
		 last == PTS_TOK_EVENT(PTS_TOK_OVERFLOW);
	if (b->end != END_ERROR || b->err != -PTS_ERR_TRACE_MISMATCH ||
	    (PTS_TOK_IS_EVENT(last) && !on) ||
	    !after_psb(trace, b->off, &fup, &ip))
		return -1;
	if (!fup)
		return RULE_PSB_NO_FUP;
	return !on && b->ip == last && ip != last ? RULE_PSB_FUP_AWAY : -1;
}

/* Whether libipt's error @err at @off is at a CBR, or a CYC of 10 bytes
 * or more (RULE_TIMING). */
static int timing_error_at(const struct buf *trace, uint64_t off, int err)
{
	const struct kind_at k = packet_at(trace, off);
	return k.kind == PTS_PKT_CBR ||
	       (k.kind == PTS_PKT_CYC && k.size >= 10 && err == -pte_bad_packet);
}

struct psb_span {
	uint64_t lo, hi;  /* the packets asked about: [lo, hi) */
	int psbs;         /* PSB packets among them */
	int ended;        /* a PSBEND after the first of them */
};

static int count_psb(const struct pts_packet *p, void *ctx)
{
	struct psb_span *s = ctx;
	if (p->offset < s->lo)
		return 0;
	if (p->offset >= s->hi)
		return 1;
	if (p->kind == PTS_PKT_PSB)
		s->psbs++;
	else if (p->kind == PTS_PKT_PSBEND && s->psbs)
		s->ended = 1;
	return 0;
}

/* Whether the packets in [@lo, @hi) of @trace hold no PSB, or one whose
 * PSB+ goes on to @hi: @hi then lies in that PSB+ (RULE_READ_AHEAD,
 * RULE_PSB_BACK). A PSB pattern inside another packet is not a PSB. */
static int in_one_psb_plus(const struct buf *trace, uint64_t lo, uint64_t hi)
{
	struct psb_span s = {lo, hi, 0, 0};
	each_packet(trace, count_psb, &s);
	return s.psbs <= 1 && !s.ended;
}

/* For ovf_ip_rebuilt(): libipt's IP is not known (it failed there). */
#define ANY_PAYLOAD UINT64_MAX

struct ovf_ip {
	uint64_t lib, ours; /* the IPs the decoders resumed at */
	int after_ovf;      /* right after an OVF (timing packets aside) */
};

static int find_ovf_ip(const struct pts_packet *p, void *ctx)
{
	struct ovf_ip *o = ctx;
	if ((p->kind == PTS_PKT_FUP || p->kind == PTS_PKT_TIP_PGE) &&
	    o->after_ovf &&
	    (p->ipc == PTS_IPC_UPDATE_16 || p->ipc == PTS_IPC_UPDATE_32 ||
	     p->ipc == PTS_IPC_UPDATE_48) &&
	    (o->lib == ANY_PAYLOAD || p->u.ip.payload == o->lib) &&
	    p->u.ip.ip == o->ours)
		return 1;
	if (p->kind == PTS_PKT_OVF)
		o->after_ovf = 1;
	else if (!timing_kind(p->kind) &&
		 !(p->kind == PTS_PKT_MODE_EXEC && o->after_ovf))
		o->after_ovf = 0; /* a MODE.Exec may precede the TIP.PGE */
	return 0;
}

/* Whether a FUP or TIP.PGE right after an OVF in @trace has an IP
 * compressed against last-IP that libipt rebuilds as @lib (against 0) and
 * ptscope as @ours (against the IP before the OVF): RULE_OVF_LASTIP. */
static int ovf_ip_rebuilt(const struct buf *trace, uint64_t lib,
			  uint64_t ours)
{
	struct ovf_ip o = {lib, ours, 0};
	return each_packet(trace, find_ovf_ip, &o) == 1;
}

struct psb_status {
	uint64_t psb;    /* the PSB asked about */
	int in_psb;      /* in its PSB+ */
	int fup, mode;   /* it holds a FUP with IP, a MODE.Exec */
	int cbr0;        /* it holds a CBR with ratio 0 */
	int ovf;         /* an OVF ended it */
};

static int scan_psb_status(const struct pts_packet *p, void *ctx)
{
	struct psb_status *s = ctx;
	if (p->offset < s->psb)
		return 0;
	if (p->offset == s->psb) {
		s->in_psb = p->kind == PTS_PKT_PSB;
		return !s->in_psb;
	}
	if (p->kind == PTS_PKT_PSBEND || p->kind == PTS_PKT_PSB)
		return 1;
	/* an OVF inside ends the PSB+ status; the FUP it resolves at says
	 * tracing is on */
	if (p->kind == PTS_PKT_OVF) {
		s->ovf = 1;
		return 0;
	}
	if (p->kind == PTS_PKT_FUP) /* the last one holds */
		s->fup = p->ipc != PTS_IPC_SUPPRESSED;
	if (s->ovf)
		return !timing_kind(p->kind);
	s->mode |= p->kind == PTS_PKT_MODE_EXEC;
	s->cbr0 |= p->kind == PTS_PKT_CBR && !p->u.cbr.ratio;
	return 0;
}

/* What the PSB+ at @psb holds (in_psb 0: no PSB there). */
static struct psb_status psb_status_at(const struct buf *trace, uint64_t psb)
{
	struct psb_status s = {.psb = psb};
	each_packet(trace, scan_psb_status, &s);
	return s;
}

/* Whether the PSB+ at @psb holds a FUP (tracing on) but no MODE.Exec,
 * which it must then hold (SDM 36.3.7): RULE_PSB_NO_MODE. */
static int psb_without_mode(const struct buf *trace, uint64_t psb)
{
	struct psb_status s = psb_status_at(trace, psb);
	return s.in_psb && s.fup && !s.mode;
}

/* Whether the PSB+ at @psb holds a CBR with ratio 0, which libipt's clock
 * rejects (-pte_bad_packet, reported at the PSB): RULE_TIMING. */
static int psb_with_cbr0(const struct buf *trace, uint64_t psb)
{
	struct psb_status s = psb_status_at(trace, psb);
	return s.in_psb && s.cbr0;
}

/* RULE_OVF_IN_PSB: whether the packet at @off of @trace is a PSBEND
 * right after an OVF (inside PSB+ or not). */
static int ovf_ends_psb(const struct buf *trace, uint64_t off)
{
	return packet_before(trace, off).kind == PTS_PKT_OVF &&
	       kind_at(trace, off) == PTS_PKT_PSBEND;
}

struct fup_ovf {
	uint64_t last;    /* the last instruction of a walk */
	uint64_t target;  /* its direct JMP or CALL target, or 0 */
	int after_fup;    /* right after a FUP (timing packets aside) */
	uint64_t fup_ip;  /* its IP */
};

static int find_fup_ovf(const struct pts_packet *p, void *ctx)
{
	struct fup_ovf *f = ctx;
	if (p->kind == PTS_PKT_OVF && f->after_fup &&
	    ((f->fup_ip > f->last && f->fup_ip - f->last <= 15) ||
	     (f->target && f->fup_ip == f->target)))
		return 1;
	if (timing_kind(p->kind))
		return 0;
	f->after_fup = p->kind == PTS_PKT_FUP && p->ipc != PTS_IPC_SUPPRESSED;
	f->fup_ip = p->u.ip.ip;
	return 0;
}

/* The target of the direct JMP or CALL at @ip in @img (64-bit), or 0 for
 * any other instruction. */
static uint64_t direct_target(const struct pts_image *img, uint64_t ip)
{
	struct pts_insn_classifier *cls = pts_insn_classifier_new();
	struct pts_insn_info in;
	uint64_t to = 0;
	if (cls && pts_insn_decode(cls, img, 0, PTS_EXEC_64, ip, &in) > 0 &&
	    (in.iclass == PTS_INSN_JMP || in.iclass == PTS_INSN_CALL))
		to = in.target;
	pts_insn_classifier_free(cls);
	return to;
}

/* RULE_FUP_OVF: whether @trace has a FUP right before an OVF (timing
 * packets aside) whose IP is where the code in @img goes after @last: the
 * next instruction (within an instruction's 15 bytes), or the target of a
 * direct JMP or CALL at @last. */
static int fup_then_ovf(const struct pts_image *img, const struct buf *trace,
			uint64_t last)
{
	struct fup_ovf f = {last, direct_target(img, last), 0, 0};
	return each_packet(trace, find_fup_ovf, &f);
}

/* RULE_FUP_OVF: whether the packet at @off of @trace is a FUP right
 * before an OVF (timing packets and PADs aside: seed 5440). */
static int fup_before_ovf(const struct buf *trace, uint64_t off)
{
	uint64_t next = packet_after(trace, off, 1);
	return kind_at(trace, off) == PTS_PKT_FUP && next != off &&
	       kind_at(trace, next) == PTS_PKT_OVF;
}

/* Whether the last packet of @trace but PADs, timing packets and a stray
 * PSBEND is a FUP with an IP (RULE_FUP_AT_END). */
static int fup_ends(const struct buf *trace)
{
	struct kind_before k = packet_before(trace, UINT64_MAX);
	return k.kind == PTS_PKT_FUP && k.ipc != PTS_IPC_SUPPRESSED;
}

/* Whether tokens [@from, @to) of @t are all instructions, or with
 * @enables_too also the [enabled], [disabled] and [resumed] of TIP.PGE and
 * TIP.PGD packets and the [overflow] of an OVF (that libipt's query
 * decoder read past, see RULE_PSB_BACK). */
static int only_walk(const struct pts_toks *t, size_t from, size_t to,
		     int enables_too)
{
	for (size_t i = from; i < to; i++)
		if (PTS_TOK_IS_EVENT(t->v[i]) &&
		    !(enables_too &&
		      (t->v[i] == PTS_TOK_EVENT(PTS_TOK_ENABLED) ||
		       t->v[i] == PTS_TOK_EVENT(PTS_TOK_DISABLED) ||
		       t->v[i] == PTS_TOK_EVENT(PTS_TOK_RESUMED) ||
		       t->v[i] == PTS_TOK_EVENT(PTS_TOK_OVERFLOW))))
			return 0;
	return 1;
}

struct totals {
	uint64_t cases, traces, segs_lib, segs_pts, pairs, tokens, errors_both;
	uint64_t eos_both, rules[NRULES], lib_sync_errors, unmatched;
};

struct dcase {
	const struct base *b;
	const struct buf *trace;
	unsigned t, m;
	uint64_t seed;
	const char *desc;
};

static void show_toks(const char *who, const struct pts_toks *t,
		      const struct seg *s, size_t at)
{
	char what[64];
	snprintf(what, sizeof(what), "%s [token %zu of %zu]", who, at,
		 s->to - s->from);
	pts_toks_show(what, t, s->from, s->to, s->from + at);
}

static void end_text(const struct seg *s, int lib, char *out, size_t cap)
{
	if (s->end == END_EOS)
		snprintf(out, cap, "end of trace");
	else if (s->end == END_CUT)
		snprintf(out, cap, "end of data (%s) at %" PRIu64,
			 lib ? pt_errstr(pt_errcode(s->err)) : pts_errname(s->err),
			 s->off);
	else if (s->end == END_CAP)
		snprintf(out, cap, "instruction cap at %" PRIu64, s->off);
	else
		snprintf(out, cap, "error %s at %" PRIu64,
			 lib ? pt_errstr(pt_errcode(s->err)) : pts_errname(s->err),
			 s->off);
}

static void dump_case(const struct dcase *c, char *cmd, size_t cap);

static void report(const struct dcase *c, const struct flow *lib,
		   const struct seg *a, const struct flow *ours,
		   const struct seg *b, size_t at, const char *why)
{
	char ea[128], eb[128], cmd[1200];
	end_text(a, 1, ea, sizeof(ea));
	end_text(b, 0, eb, sizeof(eb));
	dump_case(c, cmd, sizeof(cmd));
	fprintf(stderr, "FAIL %s: case %u:%u (mutation seed %#" PRIx64 "): %s\n"
		"  segment from the PSB at %" PRIu64 ": %s\n"
		"  libipt: %zu tokens, %s; ptscope: %zu tokens, %s\n",
		c->b->name, c->t, c->m, c->seed, c->desc, a->psb, why,
		a->to - a->from, ea, b->to - b->from, eb);
	show_toks("libipt ", &lib->t, a, at);
	show_toks("ptscope", &ours->t, b, at);
	fprintf(stderr, "  repro: %s\n", cmd);
	failures++;
}

static int fails(const struct seg *s)
{
	return s->end == END_ERROR || s->end == END_CUT;
}

/* Whether @err is ptscope's error for bytes that do not decode as a
 * packet. */
static int packet_error(int err)
{
	return err == -PTS_ERR_BAD_OPCODE || err == -PTS_ERR_BAD_PACKET ||
	       err == -PTS_ERR_BAD_IPC || err == -PTS_ERR_CYC_TOO_LONG;
}

/* Whether no PSB lies between the errors at @x and @y (byte scan, as
 * libipt's sync; a PSB at the later offset counts: an error there is the
 * PSB's). */
static int same_region(const struct dcase *c, uint64_t x, uint64_t y)
{
	uint64_t lo = x < y ? x : y, hi = x < y ? y : x;
	ptrdiff_t p = pts_psb_find(c->trace->p, c->trace->n, (size_t)lo + 1);
	return p < 0 || (uint64_t)p >= hi;
}

/* RULE_READ_AHEAD and RULE_PSB_BACK: both fail with the same flow and the
 * one PSB between their errors is that of a PSB+ holding the later one.
 * Returns the rule, or -1. */
static int same_psb_plus(const struct dcase *c, const struct seg *a,
			 const struct seg *b)
{
	if (b->off < a->off && in_one_psb_plus(c->trace, b->off + 1, a->off))
		return RULE_READ_AHEAD;
	if (a->off < b->off && kind_at(c->trace, a->off) == PTS_PKT_PSB &&
	    in_one_psb_plus(c->trace, a->off, b->off))
		return RULE_PSB_BACK;
	return -1;
}

/* RULE_PSB_ENABLES and RULE_PSB_NO_MODE: libipt fails right after a PSB+
 * with a FUP, where ptscope's flow (longer by @la < @lb) goes on;
 * RULE_PSB_NO_FUP: libipt, still on after a PSB+ without FUP, fails at
 * the TIP.PGE after it (-pte_bad_context), where ptscope's tracing goes on
 * again. Returns the rule, or -1. */
static int lib_fails_at_psb(const struct dcase *c, const struct flow *lib,
			    const struct seg *a, const struct flow *ours,
			    const struct seg *b, size_t la, size_t lb)
{
	int fup;
	uint64_t ip;
	if (a->end != END_ERROR || la >= lb)
		return -1;
	/* libipt reports it at the PSBEND when a TNT follows (its query
	 * decoder has read the TNT ahead), at the TIP of a FUP + TIP
	 * pair */
	uint64_t off = kind_at(c->trace, a->off) == PTS_PKT_PSBEND
			       ? packet_after(c->trace, a->off, 0)
			       : event_start(c->trace, a->off);
	/* at the TIP.PGE of a TIP.PGD + TIP.PGE pair: libipt takes the
	 * TIP.PGD as one more disable (RULE_PGD_WHILE_OFF) */
	const struct kind_before pgd = packet_before(c->trace, off);
	const uint64_t enables = kind_at(c->trace, off) == PTS_PKT_TIP_PGE &&
					 pgd.kind == PTS_PKT_TIP_PGD
				 ? pgd.at
				 : off;
	if (a->err == -pte_no_enable && la > 0 &&
	    PTS_TOK_IS_EVENT(lib->t.v[a->to - 1]) &&
	    after_psb(c->trace, enables, &fup, &ip) && fup &&
	    ours->t.v[b->from + la] == ip)
		return RULE_PSB_ENABLES;
	if (a->err == -pte_bad_insn &&
	    (la == 0 || (la == 1 && lib->t.v[a->from] ==
					    PTS_TOK_EVENT(PTS_TOK_OVERFLOW))) &&
	    psb_without_mode(c->trace, a->psb))
		return RULE_PSB_NO_MODE;
	uint64_t next = ours->t.v[b->from + la];
	if (a->err == -pte_bad_context &&
	    kind_at(c->trace, a->off) == PTS_PKT_TIP_PGE &&
	    (next == PTS_TOK_EVENT(PTS_TOK_ENABLED) ||
	     next == PTS_TOK_EVENT(PTS_TOK_RESUMED)) &&
	    after_psb(c->trace, off, &fup, &ip) && !fup)
		return RULE_PSB_NO_FUP;
	return -1;
}

/* RULE_OVF_LASTIP: whether the flows part at token @p (0 < p, within
 * one segment at least), right after an [overflow], at the IP the overflow
 * resolved at, rebuilt from a compressed IP: an address for each decoder,
 * or, when it resolved at a TIP.PGE, libipt's [enabled] at the bare
 * payload (where its segment ends: no code there) against ptscope's
 * [resumed] at the rebuilt IP, where tracing stopped before; or libipt's
 * segment ends at the [overflow] (no code at the bare payload), or
 * ptscope's (no code at the rebuilt IP). What follows is not compared. */
static int ovf_lastip_part(const struct dcase *c, const struct flow *lib,
			   const struct seg *a, const struct flow *ours,
			   const struct seg *b, size_t p)
{
	const uint64_t *l = lib->t.v + a->from, *o = ours->t.v + b->from;
	/* ptscope failed at the IP (no code there), libipt goes on at the
	 * bare payload */
	if (b->from + p == b->to)
		return b->end == END_ERROR &&
		       (b->err == -PTS_ERR_BAD_INSN ||
			b->err == -PTS_ERR_NOMAP) &&
		       o[p - 1] == PTS_TOK_EVENT(PTS_TOK_OVERFLOW) &&
		       !PTS_TOK_IS_EVENT(l[p]) &&
		       ovf_ip_rebuilt(c->trace, l[p], b->ip);
	/* libipt failed at the bare payload (nothing mapped, or bytes that
	 * are no instruction: seed 7916), ptscope goes on at the IP */
	const int lib_nomap =
		a->from + p == a->to && a->end == END_ERROR &&
		(a->err == -pte_nomap || a->err == -pte_bad_insn) &&
		b->from + p < b->to &&
		!PTS_TOK_IS_EVENT(o[p]) &&
		ovf_ip_rebuilt(c->trace, ANY_PAYLOAD, o[p]);
	/* tracing was off before the OVF, or the OVF resolved with it off:
	 * both [enabled], then the IPs */
	if (p > 1 && l[p - 1] == PTS_TOK_EVENT(PTS_TOK_ENABLED) &&
	    l[p - 2] == PTS_TOK_EVENT(PTS_TOK_OVERFLOW)) {
		if (a->from + p == a->to)
			return lib_nomap;
		return !PTS_TOK_IS_EVENT(l[p]) && !PTS_TOK_IS_EVENT(o[p]) &&
		       ovf_ip_rebuilt(c->trace, l[p], o[p]);
	}
	if (l[p - 1] != PTS_TOK_EVENT(PTS_TOK_OVERFLOW))
		return 0;
	if (a->from + p == a->to)
		return lib_nomap;
	if (!PTS_TOK_IS_EVENT(l[p]))
		return ovf_ip_rebuilt(c->trace, l[p], o[p]);
	if (l[p] != PTS_TOK_EVENT(PTS_TOK_ENABLED) ||
	    o[p] != PTS_TOK_EVENT(PTS_TOK_RESUMED) || b->from + p + 1 >= b->to)
		return 0;
	/* libipt walks on from the bare payload when code is there */
	if (a->to == a->from + p + 1)
		return ovf_ip_rebuilt(c->trace, ANY_PAYLOAD, o[p + 1]);
	return !PTS_TOK_IS_EVENT(l[p + 1]) &&
	       ovf_ip_rebuilt(c->trace, l[p + 1], o[p + 1]);
}

static int compare_pair(const struct dcase *c, const struct flow *lib,
			const struct seg *a, const struct flow *ours,
			const struct seg *b, struct totals *tot);

/* RULE_OVF_IN_PSB: libipt's segment @a ends at a PSBEND right after an
 * OVF (-pte_bad_context), where ptscope's @b, equal for all of @a's @p
 * tokens, reports the [overflow] and goes on. */
static int ovf_in_psb(const struct dcase *c, const struct seg *a,
		      const struct flow *ours, const struct seg *b, size_t p)
{
	size_t la = a->to - a->from, lb = b->to - b->from;
	return a->end == END_ERROR && a->err == -pte_bad_context && p == la &&
	       la < lb &&
	       ours->t.v[b->from + la] == PTS_TOK_EVENT(PTS_TOK_OVERFLOW) &&
	       ovf_ends_psb(c->trace, a->off);
}

/* RULE_NEW_PACKET past a PSB: libipt, stopped at @a's packet that it
 * does not know, syncs at the next PSB, which ptscope's walk crosses with
 * the state it had (pending TNT bits, return stack). ptscope decodes the
 * trace again from that PSB (the bytes before it turned into PADs): its
 * segment from there must agree with libipt's. */
static int agree_from_next_psb(const struct dcase *c, const struct flow *lib,
			       const struct seg *a, struct totals *tot)
{
	size_t i = (size_t)(a - lib->seg) + 1;
	if (i >= lib->nseg)
		return 0;
	const struct seg *next = &lib->seg[i];
	struct buf padded = {malloc(c->trace->n), c->trace->n, c->trace->n};
	if (!padded.p)
		abort();
	memset(padded.p, 0, next->psb);
	memcpy(padded.p + next->psb, c->trace->p + next->psb,
	       c->trace->n - next->psb);
	struct flow again = {0};
	int bad_psb, ok = 0;
	run_ptscope(c->b, &padded, c->seed, &again, &bad_psb);
	struct dcase c2 = *c;
	c2.trace = &padded;
	if (again.nseg > 0 && again.seg[0].psb == next->psb)
		ok = !compare_pair(&c2, lib, next, &again, &again.seg[0], tot);
	flow_free(&again);
	free(padded.p);
	return ok;
}

/* compare_pair() with ptscope's tokens [@from, @to) of segment @b taken
 * out. */
static int compare_without(const struct dcase *c, const struct flow *lib,
			   const struct seg *a, const struct flow *ours,
			   const struct seg *b, size_t from, size_t to,
			   struct totals *tot)
{
	const size_t cut = to - from;
	struct flow less = {0};
	struct seg b2 = *b;
	for (size_t i = 0; i < ours->t.n; i++)
		if (i < from || i >= to)
			pts_toks_add(&less.t, ours->t.v[i]);
	less.pgd_noip = calloc(ours->npgd + 1, sizeof(size_t));
	if (!less.pgd_noip)
		abort();
	for (size_t i = 0; i < ours->npgd; i++)
		if (ours->pgd_noip[i] < from || ours->pgd_noip[i] >= to)
			less.pgd_noip[less.npgd++] =
				ours->pgd_noip[i] - (ours->pgd_noip[i] >= to
							     ? cut
							     : 0);
	b2.to -= cut;
	int r = compare_pair(c, lib, a, &less, &b2, tot);
	flow_free(&less);
	return r;
}

/* Checks one pair of segments from the same PSB. Returns 0 when they
 * agree (possibly by a rule, counted in @tot). */
static int compare_pair(const struct dcase *c, const struct flow *lib,
			const struct seg *a, const struct flow *ours,
			const struct seg *b, struct totals *tot)
{
	size_t la = a->to - a->from, lb = b->to - b->from;
	size_t n = la < lb ? la : lb, p = 0;
	while (p < n && lib->t.v[a->from + p] == ours->t.v[b->from + p])
		p++;
	tot->pairs++;
	tot->tokens += p;
	/* RULE_PGD_NOIP: the flows part at ptscope's disable by a TIP.PGD
	 * without IP, which libipt does not bind there: what follows is
	 * not compared. */
	if (p > 0 && (p < n || la <= lb) && p < lb &&
	    is_pgd_noip(ours, b->from + p) &&
	    near_branch(c->b, ours->t.v[b->from + p - 1])) {
		tot->rules[RULE_PGD_NOIP]++;
		return 0;
	}
	/* RULE_PSB_ENABLES with a TIP.PGE after the PSB+: libipt, off, goes
	 * on at the TIP.PGE; ptscope, on from the PSB+ FUP's IP, walks from
	 * there and fails on the way or at the packets after the PSB+. */
	if (p > 0 && p < n && b->end == END_ERROR &&
	    lib->t.v[a->from + p - 1] == PTS_TOK_EVENT(PTS_TOK_DISABLED) &&
	    (lib->t.v[a->from + p] == PTS_TOK_EVENT(PTS_TOK_RESUMED) ||
	     lib->t.v[a->from + p] == PTS_TOK_EVENT(PTS_TOK_ENABLED)) &&
	    only_walk(&ours->t, b->from + p, b->to, 0) &&
	    psb_fup_before_pge(c->trace, b->off, ours->t.v[b->from + p])) {
		tot->rules[RULE_PSB_ENABLES]++;
		return 0;
	}
	if (p > 0 && (p < la || p < lb) &&
	    ovf_lastip_part(c, lib, a, ours, b, p)) {
		tot->rules[RULE_OVF_LASTIP]++;
		return 0;
	}
	/* RULE_FUP_OVF: libipt's [overflow] comes where ptscope walks on to
	 * a FUP's IP first; the rest is compared without that walk. */
	if (p < n && lib->t.v[a->from + p] == PTS_TOK_EVENT(PTS_TOK_OVERFLOW)) {
		size_t q = b->from + p;
		while (q < b->to && !PTS_TOK_IS_EVENT(ours->t.v[q]))
			q++;
		if (q > b->from + p && q < b->to &&
		    ours->t.v[q] == PTS_TOK_EVENT(PTS_TOK_OVERFLOW) &&
		    fup_then_ovf(c->b->img, c->trace,
				 ours->t.v[q - 1])) {
			tot->rules[RULE_FUP_OVF]++;
			/* the pair is counted again without the walk */
			tot->pairs--;
			tot->tokens -= p;
			return compare_without(c, lib, a, ours, b, b->from + p, q,
					       tot);
		}
		/* the FUP's IP off the walk: ptscope fails at the FUP */
		if (q == b->to && b->end == END_ERROR &&
		    b->err == -PTS_ERR_TRACE_MISMATCH &&
		    fup_before_ovf(c->trace, b->off)) {
			tot->rules[RULE_FUP_OVF]++;
			return 0;
		}
	}
	/* RULE_IP16: in 16-bit code a near branch's target is truncated to
	 * 16 bits (SDM Vol. 2, JMP/Jcc/CALL with operand size 16: "EIP <-
	 * tempEIP AND 0000FFFFH"); ptscope does, libipt 2.0.5 does not. A
	 * damaged MODE.Exec (CS.L = CS.D = 0) takes 64-bit code there. */
	if (p > 0 && p < n && !PTS_TOK_IS_EVENT(lib->t.v[a->from + p]) &&
	    !PTS_TOK_IS_EVENT(ours->t.v[b->from + p]) &&
	    ours->t.v[b->from + p] == (lib->t.v[a->from + p] & 0xffff)) {
		tot->rules[RULE_IP16]++;
		return 0;
	}
	/* The same where libipt's untruncated target is the IP of its next
	 * event (a FUP + TIP.PGD there): libipt reports the event, ptscope
	 * walks on below 64 KiB. */
	if (p > 0 && p < n && PTS_TOK_IS_EVENT(lib->t.v[a->from + p]) &&
	    !PTS_TOK_IS_EVENT(ours->t.v[b->from + p]) &&
	    !PTS_TOK_IS_EVENT(ours->t.v[b->from + p - 1]) &&
	    ours->t.v[b->from + p] <= 0xffff &&
	    ours->t.v[b->from + p - 1] > 0xffff &&
	    packet_in(c->trace, a->psb,
		      b->end == END_ERROR ? b->off : UINT64_MAX, mode16_kind)) {
		tot->rules[RULE_IP16]++;
		return 0;
	}
	/* RULE_MODE_BEFORE_FUP, and RULE_STATUS_EARLY at a MODE.Exec that
	 * libipt applies at once (its instructions take the new mode) or at
	 * a MODE.TSX with no FUP right after it (libipt binds it to a later
	 * FUP, and that FUP's event parts the flows). */
	if (b->end == END_ERROR && b->err == -PTS_ERR_TRACE_MISMATCH &&
	    (!fails(a) || a->off > b->off) &&
	    only_walk(&ours->t, b->from + p, b->to, 0)) {
		const int kind = kind_at(c->trace, b->off);
		if (mode_before_fup(c->trace, b->off)) {
			tot->rules[RULE_MODE_BEFORE_FUP]++;
			return 0;
		}
		if (kind == PTS_PKT_MODE_EXEC ||
		    (kind == PTS_PKT_MODE_TSX &&
		     kind_at(c->trace, packet_after(c->trace, b->off, 0)) !=
			     PTS_PKT_FUP)) {
			tot->rules[RULE_STATUS_EARLY]++;
			return 0;
		}
	}
	/* RULE_MWAIT with the FUP of a later FUP + TIP pair taken for the
	 * MWAIT: libipt walks on past the pair's IP, where ptscope takes the
	 * pair (an interrupt), and fails at its TIP. */
	if (p < n && a->end == END_ERROR && a->err == -pte_bad_query &&
	    fup_taken_by_mwait(c->trace, a->off) &&
	    only_walk(&lib->t, a->from + p, a->to, 0)) {
		tot->rules[RULE_MWAIT]++;
		return 0;
	}
	if (p < n) {
		report(c, lib, a, ours, b, p, "the flows differ");
		return 1;
	}
	/* RULE_INVALID_INSN: ptscope stops at an instruction the opcode map
	 * makes invalid; libipt's length decoder sizes it and goes on. */
	if (b->end == END_ERROR && b->err == -PTS_ERR_BAD_INSN && la > lb &&
	    lib->t.v[a->from + lb] == b->ip && invalid_in_64(c->b, b->ip)) {
		tot->rules[RULE_INVALID_INSN]++;
		return 0;
	}
	/* RULE_IP16 where no code is mapped at ptscope's truncated target:
	 * ptscope fails there, libipt walks on at the untruncated one. */
	if (b->end == END_ERROR && b->err == -PTS_ERR_NOMAP && la > lb &&
	    !PTS_TOK_IS_EVENT(lib->t.v[a->from + lb]) &&
	    lib->t.v[a->from + lb] > 0xffff &&
	    (lib->t.v[a->from + lb] & 0xffff) == b->ip &&
	    packet_in(c->trace, a->psb, b->off, mode16_kind)) {
		tot->rules[RULE_IP16]++;
		return 0;
	}
	if (a->end == END_EOS && b->end == END_EOS) {
		tot->eos_both++;
		if (la == lb)
			return 0;
		/* RULE_FUP_AT_END: ptscope walks on to the IP of the FUP that
		 * ends the trace; libipt ends before. */
		if (la < lb && fup_ends(c->trace) &&
		    only_walk(&ours->t, b->from + la, b->to, 0)) {
			tot->rules[RULE_FUP_AT_END]++;
			return 0;
		}
		report(c, lib, a, ours, b, n, "both reach the end, not equal");
		return 1;
	}
	/* RULE_FUP_AT_END with the TIP or TIP.PGD cut by the end: ptscope
	 * walks to the FUP's IP and reports the cut packet. */
	if (a->end == END_EOS && b->end == END_CUT && la < lb && p == la &&
	    fup_ends(c->trace) && only_walk(&ours->t, b->from + la, b->to, 0)) {
		tot->rules[RULE_FUP_AT_END]++;
		return 0;
	}
	/* RULE_FUP_AT_END with an IP off the walk: ptscope fails at that
	 * FUP on the way, or at an invalid instruction before it. */
	if (a->end == END_EOS && b->end == END_ERROR &&
	    (b->err == -PTS_ERR_TRACE_MISMATCH ||
	     (b->err == -PTS_ERR_BAD_INSN && invalid_in_64(c->b, b->ip))) &&
	    la <= lb &&
	    ((fup_ends(c->trace) && kind_at(c->trace, b->off) == PTS_PKT_FUP) ||
	     fup_then_last_psb(c->trace, b->off)) &&
	    only_walk(&ours->t, b->from + la, b->to, 0)) {
		tot->rules[RULE_FUP_AT_END]++;
		return 0;
	}
	/* RULE_PSB_NO_FUP, RULE_PSB_FUP_AWAY: ptscope fails at the packet
	 * after a PSB+ that does not fit its walk; libipt walks on past that
	 * point (or first reports the overflow of an OVF right after it), to
	 * the end or to a later error. */
	const uint64_t lib_next = la > lb ? lib->t.v[a->from + lb] : 0;
	const int lib_walks_on =
		!PTS_TOK_IS_EVENT(lib_next) ||
		(lib_next == PTS_TOK_EVENT(PTS_TOK_OVERFLOW) &&
		 b->end == END_ERROR &&
		 kind_at(c->trace, packet_after(c->trace, b->off, 0)) ==
			 PTS_PKT_OVF);
	int psb_rule = lb > 0 && la > lb && lib_walks_on &&
				(!fails(a) || a->off > b->off)
			       ? psb_misfit(c->trace, b, ours->t.v[b->to - 1])
			       : -1;
	/* RULE_PSB_ENABLES, RULE_PSB_NO_MODE: libipt fails right after the
	 * PSB+; what ptscope meets later (a later error too) has nothing of
	 * libipt's to be compared with. */
	int lib_psb = lib_fails_at_psb(c, lib, a, ours, b, la, lb);
	/* RULE_TIMING: libipt fails at a timing packet where ptscope goes on
	 * (to the end or a later error, after a PSB too). */
	int timing = a->end == END_ERROR && la <= lb &&
		     (b->end == END_EOS || b->off > a->off) &&
		     (timing_error_at(c->trace, a->off, a->err) ||
		      psb_with_cbr0(c->trace, a->off));
	/* RULE_MODE_AT_PGD: likewise at a MODE.Exec + TIP.PGD */
	int mode_pgd = la <= lb && (b->end == END_EOS || b->off > a->off) &&
		       lib_fails_at_mode_pgd(c->trace, a);
	/* RULE_MWAIT: likewise at the packet after an MWAIT */
	int mwait = a->end == END_ERROR && a->err == -pte_bad_query &&
		    la <= lb && (b->end == END_EOS || b->off > a->off) &&
		    kind_before(c->trace, a->off) == PTS_PKT_MWAIT;
	int lib_early = timing	   ? RULE_TIMING
			: mode_pgd ? RULE_MODE_AT_PGD
			: mwait	   ? RULE_MWAIT
				   : -1;
	/* RULE_RET_STACKS: libipt pops where ptscope's stack is empty, and
	 * goes on (to the end, or to a later error past a PSB), or the trace
	 * ends right after that RET. */
	int ret_stacks = b->end == END_ERROR &&
			 b->err == -PTS_ERR_RETSTACK_EMPTY &&
			 (la > lb || (la == lb && a->end == END_EOS));
	if (fails(a) && fails(b)) {
		tot->errors_both++;
		if (!same_region(c, a->off, b->off)) {
			/* RULE_STATUS_EARLY: a status packet no instruction
			 * up to the next branch can take; ptscope fails at
			 * it, libipt keeps it pending and fails later. */
			if (b->end == END_ERROR && b->off < a->off &&
			    (status_packet_at(c->trace, b->off) ||
			     (b->err == -PTS_ERR_TRACE_MISMATCH &&
			      status_packet_before(c->trace, b->off)))) {
				tot->rules[RULE_STATUS_EARLY]++;
				return 0;
			}
			if (psb_rule >= 0 || lib_psb >= 0) {
				tot->rules[psb_rule >= 0 ? psb_rule : lib_psb]++;
				return 0;
			}
			if (lib_early >= 0 || ret_stacks) {
				tot->rules[lib_early >= 0 ? lib_early
							  : RULE_RET_STACKS]++;
				return 0;
			}
			/* libipt reads a PSB+ ahead: ptscope may walk on
			 * to the branch that needs a packet first, and
			 * report the enables and disables before it */
			int same = la == lb || (la < lb &&
						only_walk(&ours->t, b->from + la,
							  b->to, 1))
					   ? same_psb_plus(c, a, b)
					   : -1;
			if (same >= 0) {
				tot->rules[same]++;
				return 0;
			}
			/* RULE_NEW_PACKET: libipt stops at a packet it does
			 * not know; the PSB its byte scan sees before
			 * ptscope's error is a pattern inside a packet
			 * ptscope decodes after it. */
			if (a->end == END_ERROR && a->err == -pte_bad_opc &&
			    a->off < b->off && la <= lb &&
			    packet_in(c->trace, a->off, a->off, new_kind) &&
			    (!packet_in(c->trace, a->off, b->off, psb_kind) ||
			     agree_from_next_psb(c, lib, a, tot))) {
				tot->rules[RULE_NEW_PACKET]++;
				return 0;
			}
			/* RULE_OVF_IN_PSB with ptscope failing past the PSB
			 * libipt syncs at next: from there they agree */
			if (ovf_in_psb(c, a, ours, b, p) &&
			    agree_from_next_psb(c, lib, a, tot)) {
				tot->rules[RULE_OVF_IN_PSB]++;
				return 0;
			}
			report(c, lib, a, ours, b, n, "both fail, but a PSB "
			       "lies between the errors");
			return 1;
		}
		if (la != lb)
			tot->rules[RULE_ERR_COUNT]++;
		return 0;
	}
	if (psb_rule >= 0) {
		tot->rules[psb_rule]++;
		return 0;
	}
	if (lib_psb >= 0) {
		tot->rules[lib_psb]++;
		return 0;
	}
	/* RULE_END_KIND after a disable: libipt reads ahead past it into a
	 * status packet that waits for the next event's packet, meets the
	 * end there, and its -pte_eos takes the [disabled]'s place */
	int lost_disable = a->end == END_CUT && b->end == END_EOS &&
			   la + 1 == lb &&
			   ours->t.v[b->to - 1] ==
				   PTS_TOK_EVENT(PTS_TOK_DISABLED) &&
			   status_kind(packet_before(c->trace, UINT64_MAX).kind);
	if ((la == lb && ((a->end == END_EOS && b->end == END_CUT) ||
			  (a->end == END_CUT && b->end == END_EOS))) ||
	    lost_disable) {
		tot->rules[RULE_END_KIND]++;
		return 0;
	}
	if (ovf_in_psb(c, a, ours, b, p)) {
		tot->rules[RULE_OVF_IN_PSB]++;
		return 0;
	}
	/* RULE_NEW_PACKET: libipt stops at a packet it does not know. */
	if (a->end == END_ERROR && a->err == -pte_bad_opc && la <= lb &&
	    packet_in(c->trace, a->psb,
		      b->end == END_ERROR ? b->off : UINT64_MAX, new_kind)) {
		tot->rules[RULE_NEW_PACKET]++;
		return 0;
	}
	/* RULE_STATUS_EARLY with libipt going on: it binds a MODE.Exec to the
	 * next TIP of any branch (applied at that TIP's IP) and keeps a PIP
	 * for a later MOV CR3 or far branch. */
	if (b->end == END_ERROR && !fails(a) && la >= lb &&
	    (status_packet_at(c->trace, b->off) ||
	     (b->err == -PTS_ERR_TRACE_MISMATCH &&
	      status_packet_before(c->trace, b->off)))) {
		tot->rules[RULE_STATUS_EARLY]++;
		return 0;
	}
	if (lib_early >= 0) {
		tot->rules[lib_early]++;
		return 0;
	}
	/* RULE_HANG: libipt walks a loop that needs no trace until its cap;
	 * ptscope gives up on it with NO_PROGRESS, before the cap or after
	 * it (its guard counts blocks, and a block may hold many turns of a
	 * loop of direct jumps). */
	if (a->end == END_CAP && b->end == END_ERROR &&
	    b->err == -PTS_ERR_NO_PROGRESS) {
		tot->rules[RULE_HANG]++;
		return 0;
	}
	/* RULE_HANG_BAD_PACKET: libipt walks such a loop until its cap
	 * with the decode error it read ahead held back; ptscope fails at
	 * the bad packet before the loop. */
	if (a->end == END_CAP && b->end == END_ERROR && la >= lb &&
	    packet_error(b->err)) {
		tot->rules[RULE_HANG_BAD_PACKET]++;
		return 0;
	}
	if (ret_stacks) {
		tot->rules[RULE_RET_STACKS]++;
		return 0;
	}
	/* RULE_PGD_WHILE_OFF: ptscope, off after its last [disabled], fails
	 * at a TIP.PGD; libipt goes on. */
	if (b->end == END_ERROR && b->err == -PTS_ERR_TRACE_MISMATCH &&
	    lb > 0 && la > lb &&
	    ours->t.v[b->to - 1] == PTS_TOK_EVENT(PTS_TOK_DISABLED) &&
	    kind_at(c->trace, b->off) == PTS_PKT_TIP_PGD) {
		tot->rules[RULE_PGD_WHILE_OFF]++;
		return 0;
	}
	report(c, lib, a, ours, b, n, "one decoder fails, the other does not");
	return 1;
}

/* Compares the segments both decoders started at the same PSB. */
static int compare(const struct dcase *c, const struct flow *lib,
		   const struct flow *ours, struct totals *tot)
{
	size_t i = 0, j = 0;
	int bad = 0;
	tot->segs_lib += lib->nseg;
	tot->segs_pts += ours->nseg;
	while (i < lib->nseg && j < ours->nseg) {
		const struct seg *a = &lib->seg[i], *b = &ours->seg[j];
		if (a->psb < b->psb) {
			i++;
			tot->unmatched++;
		} else if (b->psb < a->psb) {
			j++;
			tot->unmatched++;
		} else {
			bad |= compare_pair(c, lib, a, ours, b, tot);
			i++;
			j++;
		}
	}
	return bad;
}

/* ------------------------------------------------------------------------ */
/* Running cases.                                                           */

/* Writes the damaged trace (and generated code) under $FLOW_DAMAGE_DUMP
 * and the ptscope command that decodes it into @cmd. */
static void dump_case(const struct dcase *c, char *cmd, size_t cap)
{
	const char *dir = getenv("FLOW_DAMAGE_DUMP");
	char pt[512], bin[512];
	snprintf(cmd, cap, "diff_flow_damage ARGS --case %u:%u "
		 "(FLOW_DAMAGE_DUMP=DIR writes the trace)", c->t, c->m);
	if (!dir)
		return;
	snprintf(pt, sizeof(pt), "%s/t%u-m%u.pt", dir, c->t, c->m);
	snprintf(bin, sizeof(bin), "%s/t%u.bin", dir, c->t);
	FILE *f = fopen(pt, "wb");
	if (f) {
		fwrite(c->trace->p, 1, c->trace->n, f);
		fclose(f);
	}
	if (c->b->elf) {
		snprintf(cmd, cap, "ptscope flow --resync-on-error --elf %s %s",
			 c->b->elf, pt);
		return;
	}
	f = fopen(bin, "wb");
	if (f) {
		fwrite(c->b->gen.code, 1, c->b->gen.code_size, f);
		fclose(f);
	}
	snprintf(cmd, cap, "ptscope flow --resync-on-error --raw %s:0x%" PRIx64
		 " %s", bin, c->b->gen.base, pt);
}

static void run_case(const struct base *b, unsigned t, unsigned m,
		     uint64_t seed, struct buf *trace, struct totals *tot)
{
	char desc[600];
	uint64_t mseed = seed * 0x9e3779b97f4a7c15ull ^ ((uint64_t)t << 32 | m);
	mutate(b, mseed, trace, desc, sizeof(desc));
	snprintf(current, sizeof(current), "\n%s: case %u:%u (mutation seed "
		 "%#" PRIx64 "): %s\n", b->name, t, m, mseed, desc);
	struct dcase c = {b, trace, t, m, mseed, desc};
	struct flow lib = {0}, ours = {0};
	int bad_psb = 0;
	alarm(60);
	run_libipt(b, trace, &lib);
	run_ptscope(b, trace, mseed, &ours, &bad_psb);
	alarm(0);
	tot->cases++;
	tot->lib_sync_errors += lib.sync_errors;
	if (bad_psb) {
		char cmd[1200];
		dump_case(&c, cmd, sizeof(cmd));
		fprintf(stderr, "FAIL %s: case %u:%u: %s\n  ptscope delivered "
			"records after an error with no PSB behind it\n  "
			"repro: %s\n", b->name, t, m, desc, cmd);
		failures++;
	}
	compare(&c, &lib, &ours, tot);
	if (getenv("FLOW_DAMAGE_VERBOSE")) {
		fprintf(stderr, "%s", current);
		for (int k = 0; k < 2; k++) {
			const struct flow *f = k ? &ours : &lib;
			for (size_t s = 0; s < f->nseg; s++) {
				char e[128];
				end_text(&f->seg[s], !k, e, sizeof(e));
				fprintf(stderr, "  %s psb %" PRIu64 ": %zu tokens, "
					"%s\n", k ? "ptscope" : "libipt ",
					f->seg[s].psb,
					f->seg[s].to - f->seg[s].from, e);
			}
		}
	}
	flow_free(&lib);
	flow_free(&ours);
}

/* The undamaged trace must decode the same with both and without error:
 * otherwise the damage results mean nothing. */
static int check_valid(const struct base *b, unsigned t, struct totals *tot)
{
	struct buf trace = {0};
	splice(&trace, 0, 0, b->trace, b->size);
	struct dcase c = {b, &trace, t, UINT32_MAX, 0, "none (valid trace)"};
	struct flow lib = {0}, ours = {0};
	int bad_psb = 0;
	run_libipt(b, &trace, &lib);
	run_ptscope(b, &trace, t, &ours, &bad_psb);
	int bad = lib.nseg != 1 || ours.nseg != 1 || bad_psb ||
		  compare(&c, &lib, &ours, tot) || lib.seg[0].end != END_EOS;
	if (bad)
		fprintf(stderr, "%s: the valid trace does not decode alike "
			"(%zu/%zu segments)\n", b->name, lib.nseg, ours.nseg);
	flow_free(&lib);
	flow_free(&ours);
	free(trace.p);
	return bad;
}

static int make_base(struct base *b, unsigned t, uint64_t insns,
		     uint64_t seed)
{
	memset(b, 0, sizeof(*b));
	int err = t < NGEN ? make_gen(b, t, insns, seed)
			   : make_syn(b, t - (unsigned)NGEN, insns, seed);
	if (err < 0 || list_packets(b) < 0) {
		fprintf(stderr, "trace %u (%s): cannot make it\n", t, b->name);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t nums[3] = {6000, 1, 120};
	int only_t = -1, only_m = -1, nn = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--case") && i + 1 < argc) {
			if (sscanf(argv[++i], "%d:%d", &only_t, &only_m) != 2) {
				fprintf(stderr, "--case T:M\n");
				return 2;
			}
		} else if (nn < 3) {
			nums[nn++] = strtoull(argv[i], NULL, 0);
		}
	}
	uint64_t insns = nums[0], seed = nums[1];
	unsigned muts = (unsigned)nums[2];
	unsigned ntraces = (unsigned)NGEN +
			   (access(bash, R_OK) == 0 ? (unsigned)NSYN : 0);
	struct totals tot = {0};
	struct buf trace = {0};
	watch_crashes();
	for (unsigned t = 0; t < ntraces; t++) {
		if (only_t >= 0 && (unsigned)only_t != t)
			continue;
		struct base b;
		if (make_base(&b, t, insns, seed) < 0) {
			failures++;
			base_free(&b);
			continue;
		}
		tot.traces++;
		if (check_valid(&b, t, &tot))
			failures++;
		for (unsigned m = 0; m < muts; m++)
			if (only_m < 0 || (unsigned)only_m == m)
				run_case(&b, t, m, seed, &trace, &tot);
		base_free(&b);
	}
	free(trace.p);
	printf("%" PRIu64 " traces, %" PRIu64 " damaged cases: %" PRIu64
	       " segments libipt, %" PRIu64 " ptscope, %" PRIu64
	       " compared from the same PSB (%" PRIu64 " tokens equal; %"
	       PRIu64 " both to the end, %" PRIu64 " both failing), %" PRIu64
	       " unmatched, %" PRIu64 " libipt sync errors\n",
	       tot.traces, tot.cases, tot.segs_lib, tot.segs_pts, tot.pairs,
	       tot.tokens, tot.eos_both, tot.errors_both, tot.unmatched,
	       tot.lib_sync_errors);
	for (int r = 0; r < NRULES; r++)
		printf("  tolerated, %s: %" PRIu64 "\n", rule_names[r],
		       tot.rules[r]);
	printf("%d failures\n", failures);
	return failures ? 1 : 0;
}
