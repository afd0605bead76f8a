/* Differential test of instruction lengths and classes: every instruction
 * of every function of real ELF files (libc, libcrypto with its AVX-512
 * and XOP code paths, python, bash, this program), as libipt's decoder
 * walks them linearly, classified by ptscope (pts_insn_decode) and by
 * libipt (pt_insn_next on a trace that enables tracing at the
 * instruction). Both must give the same length and the same kind of
 * control flow. Then hand-made rows of what capstone 4 gets wrong for
 * Intel CPUs (decoder/insn_length_intel.c), in 64- and 32-bit mode, and
 * every opcode of every VEX and EVEX map.
 *
 * usage: diff_insn_libipt [ELF...]   (absent files are skipped; exit 77
 *        when none exists)
 */
#include "check.h"
#include "reserved_insn.h"

#include <ptscope/decoder.h>

#include <intel-pt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CR3 0x1000

static const struct pts_image *code_image;

static int read_code(uint8_t *buf, size_t size, const struct pt_asid *asid,
		     uint64_t ip, void *ctx)
{
	(void)asid, (void)ctx;
	int n = pts_image_fetch(code_image, CR3, ip, buf, size);
	return n < 0 ? -pte_nomap : n;
}

/* A trace that enables tracing at @ip in @mode (64- or 32-bit), then has
 * @next for the instruction there: a TNT bit (conditional branches,
 * compressed returns), a TIP (indirect and far branches), a TIP.PGD. */
static size_t trace_at(uint8_t *buf, size_t cap, uint64_t ip, int mode,
		       enum pt_packet_type next)
{
	struct pt_config cfg;
	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + cap;
	struct pt_encoder *e = pt_alloc_encoder(&cfg);
	struct pt_packet p = {.type = ppt_psb};
	pt_enc_next(e, &p);
	p = (struct pt_packet){.type = ppt_mode};
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec.csl = mode == PTS_EXEC_64;
	p.payload.mode.bits.exec.csd = mode == PTS_EXEC_32;
	pt_enc_next(e, &p);
	p = (struct pt_packet){.type = ppt_psbend};
	pt_enc_next(e, &p);
	p = (struct pt_packet){.type = ppt_tip_pge};
	p.payload.ip.ipc = pt_ipc_full;
	p.payload.ip.ip = ip;
	pt_enc_next(e, &p);
	p = (struct pt_packet){.type = next};
	if (next == ppt_tnt_8) {
		p.payload.tnt.bit_size = 1;
		p.payload.tnt.payload = 1;
	} else {
		p.payload.ip.ipc = next == ppt_tip ? pt_ipc_full
						    : pt_ipc_suppressed;
		p.payload.ip.ip = ip;
	}
	pt_enc_next(e, &p);
	uint64_t end = 0;
	pt_enc_get_offset(e, &end);
	pt_free_encoder(e);
	return (size_t)end;
}

/* libipt's decode of the instruction at @ip; its size, or a negative
 * pt_error_code when no trace lets libipt decode it. */
static int libipt_insn(uint64_t ip, int mode, struct pt_insn *insn)
{
	static const enum pt_packet_type nexts[] = {ppt_tnt_8, ppt_tip,
						    ppt_tip_pgd};
	int err = -pte_internal;
	for (size_t k = 0; k < sizeof(nexts) / sizeof(nexts[0]); k++) {
		uint8_t buf[64];
		struct pt_config cfg;
		pt_config_init(&cfg);
		cfg.begin = buf;
		cfg.end = buf + trace_at(buf, sizeof(buf), ip, mode, nexts[k]);
		struct pt_insn_decoder *d = pt_insn_alloc_decoder(&cfg);
		if (!d)
			return -pte_nomem;
		pt_image_set_callback(pt_insn_get_image(d), read_code, NULL);
		int st = pt_insn_sync_forward(d);
		struct pt_event ev;
		while (st >= 0 && (st & pts_event_pending))
			st = pt_insn_event(d, &ev, sizeof(ev));
		err = st < 0 ? st : pt_insn_next(d, insn, sizeof(*insn));
		pt_insn_free_decoder(d);
		if (err >= 0)
			return insn->size;
	}
	return err;
}

/* Whether ptscope's class @ours is libipt's @theirs: libipt's classes
 * are coarser (direct and indirect alike; other is anything that does
 * not branch, and its own far class takes the far transfers). */
static bool same_kind(int ours, enum pt_insn_class theirs)
{
	switch (ours) {
	case PTS_INSN_JCC: return theirs == ptic_cond_jump;
	case PTS_INSN_JMP: case PTS_INSN_JMP_IND: return theirs == ptic_jump;
	case PTS_INSN_CALL: case PTS_INSN_CALL_IND: return theirs == ptic_call;
	case PTS_INSN_RET: return theirs == ptic_return;
	case PTS_INSN_FAR:
		return theirs == ptic_far_call || theirs == ptic_far_return ||
		       theirs == ptic_far_jump;
	case PTS_INSN_PTWRITE: return theirs == ptic_ptwrite;
	default: return theirs == ptic_other;
	}
}

static uint64_t compared, reserved;

/* Whether ptscope may reject the instruction at @b (15 bytes there) that
 * libipt sizes: a form Intel's map reserves (pts_test_reserved64()). */
typedef int (*may_reject_fn)(const uint8_t *b);

/* Compares the instruction at @ip; returns libipt's size (0 when libipt
 * does not decode it either). ptscope's rejection of what libipt sizes
 * fails unless @may_reject (NULL: never) allows it. */
static int compare_at(struct pts_insn_classifier *cls, uint64_t ip, int mode,
		      const char *where, may_reject_fn may_reject)
{
	struct pt_insn theirs;
	struct pts_insn_info ours;
	int t = libipt_insn(ip, mode, &theirs);
	int o = pts_insn_decode(cls, code_image, CR3, mode, ip, &ours);
	uint8_t b[15] = {0};
	pts_image_fetch(code_image, CR3, ip, b, sizeof(b));
	compared++;
	if (t > 0 && o < 0 && may_reject && may_reject(b)) {
		reserved++;
		return t;
	}
	CHECKF((t < 0 && o < 0) || o == t,
	       "%s %#" PRIx64 ": length %d, libipt %d (%02x %02x %02x %02x "
	       "%02x %02x %02x %02x)", where, ip, o, t, b[0], b[1], b[2], b[3],
	       b[4], b[5], b[6], b[7]);
	if (o > 0 && o == t)
		CHECKF(same_kind(ours.iclass, theirs.iclass),
		       "%s %#" PRIx64 ": class %s, libipt class %d", where, ip,
		       pts_iclass_name(ours.iclass), (int)theirs.iclass);
	return t > 0 ? t : 0;
}

/* Every function of the ELF file @path, swept linearly by libipt's
 * lengths. Returns false when the file is absent. */
static bool elf_file(struct pts_insn_classifier *cls, const char *path)
{
	if (access(path, R_OK) != 0) {
		printf("%s: absent, skipped\n", path);
		return false;
	}
	struct pts_image *img = pts_image_new();
	CHECK(img != NULL);
	CHECKF(pts_image_add_elf(img, CR3, path, 0) > 0, "%s: load", path);
	code_image = img;
	const struct pts_symbol *fn;
	size_t nfn = pts_image_functions(img, CR3, &fn);
	uint64_t c0 = compared;
	for (size_t i = 0; i < nfn; i++) {
		for (uint64_t ip = fn[i].addr; ip < fn[i].addr + fn[i].size;) {
			int n = compare_at(cls, ip, PTS_EXEC_64, path, NULL);
			ip += n > 0 ? (uint64_t)n : 1;
		}
	}
	printf("%s: %zu functions, %" PRIu64 " instructions compared\n", path,
	       nfn, compared - c0);
	pts_image_free(img);
	code_image = NULL;
	return true;
}

/* Compares the instruction @bytes (@n of them, NOPs after) at an address
 * of its own; returns libipt's size. */
static int compare_bytes(struct pts_insn_classifier *cls,
			 const uint8_t *bytes, size_t n, int mode,
			 const char *where, may_reject_fn may_reject)
{
	uint8_t code[32];
	memset(code, 0x90, sizeof(code));
	memcpy(code, bytes, n < sizeof(code) ? n : sizeof(code));
	struct pts_image *img = pts_image_new();
	CHECK(img != NULL);
	CHECK(pts_image_add_mem(img, CR3, code, sizeof(code), 0x400000) == 0);
	code_image = img;
	int t = compare_at(cls, 0x400000, mode, where, may_reject);
	pts_image_free(img);
	code_image = NULL;
	return t;
}

/* Every opcode of every VEX and EVEX map, with a register, a SIB and a
 * RIP-relative ModRM form, in 64- and 32-bit mode: valid or not, the CPU
 * and libipt size them alike, and so must ptscope, for bytes a damaged
 * trace leads into (map 0F opcodes without a legacy ModRM: bswap, Jcc's
 * displacement, RDTSC...). */
static void vector_opcodes(struct pts_insn_classifier *cls)
{
	static const struct {
		uint8_t prefix[4];
		size_t n;
	} prefixes[] = {
		{{0xc5, 0xf8}, 2},		 /* VEX2, map 0F */
		{{0xc4, 0xe1, 0x78}, 3},	 /* VEX3, maps 0F, 0F38, 0F3A */
		{{0xc4, 0xe2, 0x78}, 3},	 {{0xc4, 0xe3, 0x78}, 3},
		{{0x62, 0xf1, 0x7c, 0x48}, 4}, /* EVEX, the same maps */
		{{0x62, 0xf2, 0x7c, 0x48}, 4}, {{0x62, 0xf3, 0x7c, 0x48}, 4},
	};
	static const uint8_t forms[][6] = {
		{0xc0, 1, 2, 3, 4, 5},	   /* register */
		{0x44, 0x24, 0x08, 1, 2, 3}, /* [rsp+8] */
		{0x05, 1, 2, 3, 4, 5},	   /* [rip+disp32] */
	};
	uint64_t c0 = compared;
	for (size_t p = 0; p < sizeof(prefixes) / sizeof(prefixes[0]); p++) {
		for (unsigned op = 0; op < 256; op++) {
			for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]);
			     f++) {
				uint8_t b[16];
				size_t n = prefixes[p].n;
				memcpy(b, prefixes[p].prefix, n);
				b[n++] = (uint8_t)op;
				memcpy(b + n, forms[f], sizeof(forms[f]));
				n += sizeof(forms[f]);
				char where[48];
				snprintf(where, sizeof(where),
					 "prefix %zu opcode %02x form %zu", p,
					 op, f);
				compare_bytes(cls, b, n, PTS_EXEC_64, where,
					      NULL);
				/* 32-bit mode: the register form is the
				 * prefix, the others LES/LDS/BOUND */
				compare_bytes(cls, b, n, PTS_EXEC_32, where,
					      NULL);
			}
		}
	}
	printf("VEX/EVEX opcodes: %" PRIu64 " compared\n", compared - c0);
}

/* What capstone 4 sizes otherwise (or not at all), in both modes where the
 * encoding exists there. */
static void rows(struct pts_insn_classifier *cls)
{
	static const struct {
		uint8_t bytes[15];
		int mode;
		int size; /* what Intel's rules give; libipt must agree */
	} rows[] = {
		/* vpmadd52luq ymm16, ymm3, [rsi+0x20] (AVX-512 IFMA) */
		{{0x62, 0xe2, 0xe5, 0x28, 0xb4, 0x46, 0x01}, PTS_EXEC_64, 7},
		/* vpcmpuq k2, ymm4, ymm16, 1 */
		{{0x62, 0xb3, 0xdd, 0x28, 0x1e, 0xd0, 0x01}, PTS_EXEC_64, 7},
		/* vprold zmm1, zmm1, 12 */
		{{0x62, 0xf1, 0x75, 0x48, 0x72, 0xc9, 0x0c}, PTS_EXEC_64, 7},
		/* vbroadcasti128 ymm15, [r10] */
		{{0xc4, 0x42, 0x7d, 0x5a, 0x3a}, PTS_EXEC_64, 5},
		/* vzeroupper: no ModRM */
		{{0xc5, 0xf8, 0x77}, PTS_EXEC_64, 3},
		/* the same in 32-bit mode (a register ModRM form after C5) */
		{{0xc5, 0xf8, 0x77}, PTS_EXEC_32, 3},
		/* 32-bit mode: C5 with a memory ModRM is LDS */
		{{0xc5, 0x06}, PTS_EXEC_32, 2},
		/* 8F with ModRM.reg 1: POP (group 1A), not AMD's XOP */
		{{0x8f, 0x48, 0x78, 0xc3, 0xc8, 0x38}, PTS_EXEC_64, 3},
		{{0x8f, 0x48, 0x78, 0xc3, 0xc8, 0x38}, PTS_EXEC_32, 3},
		{{0x8f, 0xe8, 0x78, 0xc2, 0xec, 0x0e}, PTS_EXEC_64, 2},
		/* 66 before near branches in 64-bit mode: ignored */
		{{0x66, 0x0f, 0x84, 0xe7, 0, 0, 0}, PTS_EXEC_64, 7},
		{{0x66, 0xe9, 0x6f, 0xfe, 0xff, 0xff}, PTS_EXEC_64, 6},
		{{0x66, 0xe8, 1, 2, 3, 4}, PTS_EXEC_64, 6},
		/* ... but not in 32-bit mode: a 16-bit displacement */
		{{0x66, 0xe9, 0x6f, 0xfe, 0xff, 0xff}, PTS_EXEC_32, 4},
		/* RDPKRU, WRPKRU (libc's pkey_get, pkey_set) */
		{{0x0f, 0x01, 0xee}, PTS_EXEC_64, 3},
		{{0x0f, 0x01, 0xef}, PTS_EXEC_64, 3},
		/* three-byte maps: 0F 38 without, 0F 3A with an immediate */
		{{0x66, 0x0f, 0x38, 0xcf, 0xc1}, PTS_EXEC_64, 5},
		{{0x66, 0x0f, 0x3a, 0xce, 0xc1, 0x00}, PTS_EXEC_64, 6},
		/* REX.R before 8C/8E: ignored (mov eax, es; mov word ptr
		 * [rax], es; mov ds, r8d); diff_flow_damage seed 2214 */
		{{0x44, 0x8c, 0xc0}, PTS_EXEC_64, 3},
		{{0x4e, 0x8c, 0x00, 0x00}, PTS_EXEC_64, 3},
		{{0x45, 0x8e, 0xd8}, PTS_EXEC_64, 3},
		{{0x4c, 0x8c, 0x80, 1, 2, 3, 4}, PTS_EXEC_64, 7},
		/* prefetchwt1 [rip+0x4030201] (unknown to capstone 4) */
		{{0x0f, 0x0d, 0x15, 1, 2, 3, 4}, PTS_EXEC_64, 7},
		{{0x0f, 0x0d, 0x15, 1, 2, 3, 4}, PTS_EXEC_32, 7},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char where[32];
		snprintf(where, sizeof(where), "row %zu", i);
		CHECKF(compare_bytes(cls, rows[i].bytes, sizeof(rows[i].bytes),
				     rows[i].mode, where, NULL) == rows[i].size,
		       "%s: libipt does not give %d", where, rows[i].size);
	}
}

static int reserved_form(const uint8_t *b)
{
	return pts_test_reserved64(b, 15);
}

/* Every opcode of the one-byte and 0F maps after each of these prefixes
 * (none, REX, REX.W, REX.R, REX.WRXB, 66, F3, F2, LOCK) with every
 * ModRM.reg in a register, a SIB and a RIP-relative form, in 64-bit mode:
 * where both decoders size an instruction they agree on its length and
 * kind; where only libipt does, it is reserved (reserved_form()).
 * Found capstone 4's gaps on REX.R before 8C/8E and PREFETCHWT1, and its
 * VIA and AMD instructions in Intel's blanks (insn_length_intel.c). */
static void legacy_opcodes(struct pts_insn_classifier *cls)
{
	static const uint8_t prefixes[] = {0, 0x40, 0x48, 0x44, 0x4f,
					   0x66, 0xf3, 0xf2, 0xf0};
	static const uint8_t forms[][6] = {
		{0xc0, 1, 2, 3, 4, 5},	   /* register */
		{0x44, 0x24, 0x08, 1, 2, 3}, /* [rsp+8] */
		{0x05, 1, 2, 3, 4, 5},	   /* [rip+disp32] */
	};
	/* blank in Intel's map: PadLock, SSE4a (after 66 or F2) */
	static const uint8_t blanks[][6] = {
		{0x0f, 0xa6, 0xc0}, {0x0f, 0xa7, 0xe8},
		{0x66, 0x0f, 0x78, 0xc0, 1, 2}, {0xf2, 0x0f, 0x79, 0xc1},
	};
	enum { FORMS = 3 * 8, NPREFIXES = sizeof(prefixes) };
	uint64_t c0 = compared, r0 = reserved;
	/* one index over map x prefix x opcode x form */
	for (unsigned k = 0; k < 2 * NPREFIXES * 256 * FORMS; k++) {
		const unsigned f = k % FORMS, op = k / FORMS % 256;
		const unsigned p = k / FORMS / 256 % NPREFIXES;
		const unsigned map = 1 + k / FORMS / 256 / NPREFIXES;
		uint8_t b[16];
		size_t n = 0;
		char where[48];
		if (prefixes[p])
			b[n++] = prefixes[p];
		if (map == 2)
			b[n++] = 0x0f;
		b[n++] = (uint8_t)op;
		memcpy(b + n, forms[f / 8], 6);
		b[n] |= (uint8_t)((f % 8) << 3); /* ModRM.reg */
		n += 6;
		snprintf(where, sizeof(where),
			 "map %u prefix %02x op %02x form %u", map, prefixes[p],
			 op, f);
		compare_bytes(cls, b, n, PTS_EXEC_64, where, reserved_form);
	}
	for (size_t i = 0; i < sizeof(blanks) / sizeof(blanks[0]); i++) {
		struct pts_insn_info info;
		CHECKF(pts_insn_classify(cls, PTS_EXEC_64, 0x1000, blanks[i],
					 sizeof(blanks[i]), &info) ==
			       -PTS_ERR_BAD_INSN,
		       "blank %zu: sized", i);
	}
	printf("one-byte and 0F opcodes: %" PRIu64 " compared, %" PRIu64
	       " reserved forms ptscope rejects\n",
	       compared - c0, reserved - r0);
}

int main(int argc, char **argv)
{
	static const char *const defaults[] = {
		"/lib/x86_64-linux-gnu/libc.so.6",
		"/usr/lib/x86_64-linux-gnu/libcrypto.so.3",
		"/usr/bin/python3.11",
		"/bin/bash",
		"/proc/self/exe",
	};
	struct pts_insn_classifier *cls = pts_insn_classifier_new();
	CHECK(cls != NULL);
	rows(cls);
	vector_opcodes(cls);
	legacy_opcodes(cls);
	int found = 0;
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			found += elf_file(cls, argv[i]);
	} else {
		for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]);
		     i++)
			found += elf_file(cls, defaults[i]);
	}
	pts_insn_classifier_free(cls);
	printf("%" PRIu64 " instructions compared\n", compared);
	if (!found)
		return 77;
	return pts_check_exit();
}
