/* The length decoder (decoder/insn_length.c) against capstone, the path it
 * short-cuts: wherever it gives a length, capstone must decode the same
 * bytes (64-bit mode) to an instruction of that length.
 *   - hand-made rows: lengths it must know, forms it must leave to capstone;
 *   - every byte offset of the executable segments of real ELF files (libc,
 *     this program), so that misaligned starts give odd prefix and opcode
 *     mixes, not only the code compilers write;
 *   - random bytes, and random prefixes before common opcodes.
 * It also reports how many of the instructions of a linear sweep it knows.
 *
 * usage: test_insn_length [ELF...] (default: libc, /proc/self/exe)
 */
#include "check.h"
#include "internal.h"
#include "rng.h"

#include <capstone/capstone.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static csh cs;
static cs_insn *insn;
static uint64_t compared, known;

/* Capstone's length of the instruction at @b, 0 when it does not decode. */
static int cs_length(const uint8_t *b, size_t len)
{
	const uint8_t *code = b;
	size_t avail = len;
	uint64_t addr = 0x1000;
	return cs_disasm_iter(cs, &code, &avail, &addr, insn) ? insn->size : 0;
}

/* Compares the two at @b; returns capstone's length. */
static int compare(const uint8_t *b, size_t len, const char *where,
		   uint64_t off)
{
	int fast = pts_insn_length(b, len, PTS_EXEC_64);
	int slow = cs_length(b, len);
	compared++;
	if (fast > 0) {
		known++;
		CHECKF(fast == slow,
		       "%s+%#" PRIx64 ": length %d, capstone %d (%02x %02x %02x "
		       "%02x %02x %02x)", where, off, fast, slow, b[0],
		       len > 1 ? b[1] : 0, len > 2 ? b[2] : 0, len > 3 ? b[3] : 0,
		       len > 4 ? b[4] : 0, len > 5 ? b[5] : 0);
	}
	return slow;
}

static const struct row {
	uint8_t bytes[15];
	size_t len;
	int want; /* 0: left to capstone */
} rows[] = {
	{{0x55}, 1, 1},                                 /* push rbp */
	{{0x48, 0x89, 0xe5}, 3, 3},                     /* mov rbp, rsp */
	{{0x48, 0x8b, 0x05, 1, 2, 3, 4}, 7, 7},         /* mov rax, [rip+d] */
	{{0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0}, 9, 9}, /* fs:0x28 */
	{{0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8}, 10, 10}, /* mov rax, imm64 */
	{{0xb8, 1, 2, 3, 4}, 5, 5},                     /* mov eax, imm32 */
	{{0x66, 0xb8, 1, 2}, 4, 4},                     /* mov ax, imm16 */
	{{0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0}, 10, 10}, /* nopw */
	{{0x0f, 0x84, 1, 2, 3, 4}, 6, 6},               /* je rel32 */
	{{0x74, 0x10}, 2, 2},                           /* je rel8 */
	{{0xe8, 1, 2, 3, 4}, 5, 5},                     /* call rel32 */
	{{0xc3}, 1, 1},                                 /* ret */
	{{0xf6, 0x40, 0x10, 0x01}, 4, 4},               /* test byte, imm8 */
	{{0xf7, 0xd8}, 2, 2},                           /* neg eax */
	{{0xff, 0x24, 0xc5, 1, 2, 3, 4}, 7, 7},         /* jmp [rax*8+d] */
	{{0x0f, 0xba, 0xe0, 0x05}, 4, 4},               /* bt eax, 5 */
	{{0x66, 0x0f, 0xef, 0xc0}, 4, 4},               /* pxor */
	{{0x48, 0x8d, 0x04, 0x24}, 4, 4},               /* lea rax, [rsp] */
	{{0xf3, 0xc3}, 2, 0},                           /* rep ret */
	{{0xf0, 0x0f, 0xb1, 0x17}, 4, 0},               /* lock cmpxchg */
	{{0xc5, 0xf9, 0xef, 0xc0}, 4, 0},               /* VEX */
	{{0x62, 0xf1, 0x7d, 0x48, 0xef, 0xc0}, 6, 0},   /* EVEX */
	{{0xd9, 0xe8}, 2, 0},                           /* x87 */
	{{0x0f, 0x38, 0x00, 0xc1}, 4, 0},               /* three-byte map */
	{{0xc7, 0xf8, 1, 2, 3, 4}, 6, 0},               /* xbegin */
	{{0x66, 0xe8, 1, 2}, 4, 0},                     /* call rel16 */
	{{0x8d, 0xc0}, 2, 0},                           /* lea, register */
	{{0x48, 0x8b}, 2, 0},                           /* cut short */
	{{0xe8, 1, 2}, 3, 0},                           /* cut short */
};

static void table(void)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		CHECKF(pts_insn_length(r->bytes, r->len, PTS_EXEC_64) == r->want,
		       "row %zu: length %d, want %d", i,
		       pts_insn_length(r->bytes, r->len, PTS_EXEC_64), r->want);
		if (r->want)
			CHECKF(cs_length(r->bytes, r->len) == r->want,
			       "row %zu: capstone disagrees with the table", i);
		/* Other modes are capstone's. */
		CHECK(pts_insn_length(r->bytes, r->len, PTS_EXEC_32) == 0);
	}
}

/* Every byte offset of the executable segments of @path; a linear sweep
 * too, for the share of real instructions known. */
static void elf_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		printf("%s: absent, skipped\n", path);
		return;
	}
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	rewind(f);
	uint8_t *data = size > 0 ? malloc((size_t)size) : NULL;
	if (!data || fread(data, 1, (size_t)size, f) != (size_t)size) {
		fclose(f);
		free(data);
		FAIL("%s: cannot read", path);
		return;
	}
	fclose(f);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)data;
	uint64_t c0 = compared, k0 = known, sweep = 0, sweep_known = 0;
	for (unsigned p = 0; (size_t)size >= sizeof(*eh) && p < eh->e_phnum;
	     p++) {
		Elf64_Phdr ph;
		memcpy(&ph, data + eh->e_phoff + p * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) ||
		    ph.p_offset + ph.p_filesz > (uint64_t)size)
			continue;
		const uint8_t *seg = data + ph.p_offset;
		for (uint64_t o = 0; o < ph.p_filesz; o++) {
			size_t avail = ph.p_filesz - o < 15 ? ph.p_filesz - o
							    : 15;
			compare(seg + o, avail, path, ph.p_offset + o);
		}
		for (uint64_t o = 0; o < ph.p_filesz;) {
			size_t avail = ph.p_filesz - o < 15 ? ph.p_filesz - o
							    : 15;
			int n = cs_length(seg + o, avail);
			sweep++;
			sweep_known += pts_insn_length(seg + o, avail,
						       PTS_EXEC_64) > 0;
			o += n > 0 ? (uint64_t)n : 1;
		}
	}
	printf("%s: %" PRIu64 " offsets, %" PRIu64 " with a length; linear "
	       "sweep: %" PRIu64 " of %" PRIu64 " instructions known\n",
	       path, compared - c0, known - k0, sweep_known, sweep);
	free(data);
}

/* Random bytes, and random prefixes in front of common opcodes. */
static void random_bytes(void)
{
	static const uint8_t prefixes[] = {0x66, 0x67, 0x2e, 0x3e, 0x26,
					   0x36, 0x64, 0x65, 0x40, 0x48,
					   0x41, 0x4c, 0x0f, 0xf3};
	struct pts_rng rng;
	pts_rng_seed(&rng, 7);
	uint8_t b[15];
	for (int n = 0; n < 2000000; n++) {
		for (size_t i = 0; i < sizeof(b); i++)
			b[i] = (uint8_t)pts_rng_next(&rng);
		unsigned np = (unsigned)pts_rng_below(&rng, 4);
		for (unsigned i = 0; i < np; i++)
			b[i] = prefixes[pts_rng_below(&rng, sizeof(prefixes))];
		compare(b, 1 + pts_rng_below(&rng, sizeof(b)), "random",
			(uint64_t)n);
	}
}

int main(int argc, char **argv)
{
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK ||
	    !(insn = cs_malloc(cs))) {
		FAIL("capstone");
		return pts_check_exit();
	}
	table();
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			elf_file(argv[i]);
	} else {
		elf_file("/lib/x86_64-linux-gnu/libc.so.6");
		elf_file("/proc/self/exe");
	}
	random_bytes();
	printf("%" PRIu64 " compared, %" PRIu64 " with a length\n", compared,
	       known);
	cs_free(insn, 1);
	cs_close(&cs);
	return pts_check_exit();
}
