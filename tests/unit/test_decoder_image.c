/* Unit tests: images (memory, raw files, ELF, specs, symbols) and
 * instruction classification. */
#include <ptscope/decoder.h>

#include "check.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_mem(void)
{
	struct pts_image *img = pts_image_new();
	const uint8_t a[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
	const uint8_t b[4] = {0xaa, 0xbb, 0xcc, 0xdd};
	const uint8_t *p;
	CHECK(pts_image_add_mem(img, 0, a, sizeof(a), 0x1000) == 0);
	CHECK(pts_image_read(img, 0, 0x1000, &p) == 16 && p[0] == 1);
	CHECK(pts_image_read(img, 0, 0x100f, &p) == 1 && p[0] == 16);
	CHECK(pts_image_read(img, 0, 0x1010, &p) == -PTS_ERR_NOMAP);
	CHECK(pts_image_read(img, 0, 0xfff, &p) == -PTS_ERR_NOMAP);
	/* Newer code replaces the middle of older code. */
	uint64_t gen = pts_image_generation(img);
	CHECK(pts_image_add_mem(img, 0, b, sizeof(b), 0x1004) == 0);
	CHECK(pts_image_generation(img) != gen);
	CHECK(pts_image_read(img, 0, 0x1000, &p) == 4 && p[3] == 4);
	CHECK(pts_image_read(img, 0, 0x1004, &p) == 4 && p[0] == 0xaa);
	CHECK(pts_image_read(img, 0, 0x1008, &p) == 8 && p[0] == 9);
	/* Fetch crosses adjacent mappings. */
	uint8_t buf[32];
	CHECK(pts_image_fetch(img, 0, 0x1002, buf, sizeof(buf)) == 14);
	CHECK(buf[0] == 3 && buf[2] == 0xaa && buf[6] == 9);
	/* Other spaces fall back to the default one; their own code wins. */
	CHECK(pts_image_add_mem(img, 0x5000, b, sizeof(b), 0x1000) == 0);
	CHECK(pts_image_read(img, 0x5000, 0x1000, &p) == 4 && p[0] == 0xaa);
	CHECK(pts_image_read(img, 0x5000, 0x1008, &p) == 8 && p[0] == 9);
	CHECK(pts_image_read(img, 0x6000, 0x1000, &p) == 4 && p[0] == 1);
	/* Bad ranges. */
	CHECK(pts_image_add_mem(img, 0, a, 0, 0x1000) == -PTS_ERR_INVALID);
	CHECK(pts_image_add_mem(img, 0, a, 16, UINT64_MAX - 4) ==
	      -PTS_ERR_INVALID);
	pts_image_free(img);
	pts_image_free(NULL);
}

static void test_raw(void)
{
	char path[] = "/tmp/pts_test_rawXXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	uint8_t data[64];
	for (int i = 0; i < 64; i++)
		data[i] = (uint8_t)i;
	CHECK(write(fd, data, sizeof(data)) == (ssize_t)sizeof(data));
	close(fd);

	struct pts_image *img = pts_image_new();
	char spec[128];
	const uint8_t *p;
	snprintf(spec, sizeof(spec), "%s:0x10-0x20:0x400000", path);
	CHECK(pts_image_add_raw_spec(img, 0, spec) == 0);
	CHECK(pts_image_read(img, 0, 0x400000, &p) == 16 && p[0] == 0x10);
	snprintf(spec, sizeof(spec), "%s:8:0x500000", path);
	CHECK(pts_image_add_raw_spec(img, 0, spec) == 0);
	CHECK(pts_image_read(img, 0, 0x500000, &p) == 56 && p[0] == 8);
	snprintf(spec, sizeof(spec), "%s:0x600000", path);
	CHECK(pts_image_add_raw_spec(img, 0, spec) == 0);
	CHECK(pts_image_read(img, 0, 0x600000, &p) == 64 && p[0] == 0);
	snprintf(spec, sizeof(spec), "%s:0x20-0x10:0x700000", path);
	CHECK(pts_image_add_raw_spec(img, 0, spec) == -PTS_ERR_INVALID);
	snprintf(spec, sizeof(spec), "%s:0-0x100:0x700000", path);
	CHECK(pts_image_add_raw_spec(img, 0, spec) == -PTS_ERR_INVALID);
	/* a FROM-TO that does not parse is bad syntax, not a file named
	 * "PATH:1-" (it said No such file or directory) */
	snprintf(spec, sizeof(spec), "%s:1-:0x700000", path);
	CHECK(pts_image_add_raw_spec(img, 0, spec) == -PTS_ERR_INVALID);
	snprintf(spec, sizeof(spec), "%s:1-2junk:0x700000", path);
	CHECK(pts_image_add_raw_spec(img, 0, spec) == -PTS_ERR_INVALID);
	CHECK(pts_image_add_raw_spec(img, 0, "/nonexistent:0x1000") ==
	      -PTS_ERR_IO);
	CHECK(errno == ENOENT);
	/* errno says why, for the message: not a stale or unset value */
	errno = 0;
	CHECK(pts_image_add_elf(img, 0, "/", 0) == -PTS_ERR_IO);
	CHECK(errno == EISDIR);
	errno = 0;
	CHECK(pts_image_add_raw(img, 0, "/dev/null", 0, 0, 0x800000) ==
	      -PTS_ERR_IO);
	CHECK(errno == ENODEV);
	CHECK(pts_image_add_raw_spec(img, 0, "nocolon") == -PTS_ERR_INVALID);
	CHECK(pts_image_add_elf(img, 0, path, 0) == -PTS_ERR_BAD_FORMAT);
	pts_image_free(img);
	unlink(path);
}

/* Loads this test's own executable and compares the code of a function
 * with what is in memory (its text is position independent). */
static void test_elf(void)
{
	struct pts_image *img = pts_image_new();
	CHECK(pts_image_add_elf(img, 0, "/proc/self/exe", 0) > 0);
	const struct pts_symbol *sym = pts_image_symbol_find(img, 0, "test_mem");
	CHECK(sym != NULL);
	if (sym) {
		const uint8_t *p;
		CHECK(pts_image_read(img, 0, sym->addr, &p) > 16);
		CHECK(memcmp(p, (const void *)(uintptr_t)test_mem, 16) == 0);
		CHECK(sym->size > 0);
		CHECK(pts_image_symbol_at(img, 0, sym->addr + 3) == sym);
		const struct pts_symbol *fns;
		size_t n = pts_image_functions(img, 0, &fns);
		CHECK(n > 3);
		for (size_t i = 1; i < n; i++)
			CHECK(fns[i - 1].addr < fns[i].addr);
	}
	/* At a base: the lowest segment moves there, symbols follow. */
	struct pts_image *img2 = pts_image_new();
	CHECK(pts_image_add_elf_spec(img2, 0x1000, "/proc/self/exe:0x7f0000000000") > 0);
	const struct pts_symbol *s2 = pts_image_symbol_find(img2, 0x1000, "test_mem");
	CHECK(s2 && sym && s2->addr == sym->addr + 0x7f0000000000ull);
	CHECK(pts_image_symbol_find(img2, 0, "test_mem") == NULL);
	pts_image_free(img2);
	pts_image_free(img);
}

/* A hand-made ELF executable (as an assembler would leave a hand-written
 * _start: no STT_FUNC for the labels): one PT_LOAD at 0x400000 holding
 * .text (0x400080, 16 bytes, AX) and .data (0x400090, 8 bytes, WA). Its
 * symbols: "fn" STT_FUNC [0x400080, +4) and its alias "fn_alias"; "lbl"
 * STT_NOTYPE at 0x400084 in .text; and NOTYPE symbols perf does not name
 * code by: "hid" (hidden, in .text), "dat" (in .data, not executable),
 * "absv" (SHN_ABS). */
static int write_label_elf(const char *path)
{
	static const char strtab[] = "\0fn\0lbl\0hid\0dat\0absv\0fn_alias";
	static const char shstrtab[] =
		"\0.text\0.data\0.symtab\0.strtab\0.shstrtab";
	enum { TEXT = 0x80, DATA = 0x90, STR = 0x98,
	       SHSTR = STR + sizeof(strtab),
	       SYM = (SHSTR + sizeof(shstrtab) + 7) & ~7,
	       NSYM = 7, SHDR = SYM + NSYM * sizeof(Elf64_Sym), NSEC = 6 };
	static uint8_t f[SHDR + NSEC * sizeof(Elf64_Shdr)];
	memset(f, 0, sizeof(f));
	Elf64_Ehdr eh = {
		.e_ident = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64,
			    ELFDATA2LSB, EV_CURRENT},
		.e_type = ET_EXEC, .e_machine = EM_X86_64,
		.e_version = EV_CURRENT, .e_entry = 0x400080,
		.e_phoff = sizeof(Elf64_Ehdr), .e_shoff = SHDR,
		.e_ehsize = sizeof(Elf64_Ehdr),
		.e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 1,
		.e_shentsize = sizeof(Elf64_Shdr), .e_shnum = NSEC,
		.e_shstrndx = 5,
	};
	Elf64_Phdr ph = {.p_type = PT_LOAD, .p_flags = PF_R | PF_X,
			 .p_vaddr = 0x400000, .p_paddr = 0x400000,
			 .p_filesz = DATA + 8, .p_memsz = DATA + 8,
			 .p_align = 0x1000};
	memcpy(f, &eh, sizeof(eh));
	memcpy(f + eh.e_phoff, &ph, sizeof(ph));
	memset(f + TEXT, 0x90, 16); /* nops */
	memcpy(f + STR, strtab, sizeof(strtab));
	memcpy(f + SHSTR, shstrtab, sizeof(shstrtab));
	const Elf64_Sym syms[NSYM] = {
		{0},
		{1, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), STV_DEFAULT, 1,
		 0x400080, 4},
		{4, ELF64_ST_INFO(STB_LOCAL, STT_NOTYPE), STV_DEFAULT, 1,
		 0x400084, 0},
		{8, ELF64_ST_INFO(STB_GLOBAL, STT_NOTYPE), STV_HIDDEN, 1,
		 0x400088, 0},
		{12, ELF64_ST_INFO(STB_GLOBAL, STT_NOTYPE), STV_DEFAULT, 2,
		 0x400090, 0},
		{16, ELF64_ST_INFO(STB_GLOBAL, STT_NOTYPE), STV_DEFAULT,
		 SHN_ABS, 0x40008c, 0},
		{21, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), STV_DEFAULT, 1,
		 0x400080, 4},
	};
	memcpy(f + SYM, syms, sizeof(syms));
	const Elf64_Shdr sh[NSEC] = {
		{0},
		{1, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 0x400080, TEXT,
		 16, 0, 0, 1, 0},
		{7, SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, 0x400090, DATA, 8, 0,
		 0, 1, 0},
		{13, SHT_SYMTAB, 0, 0, SYM, sizeof(syms), 4, 1, 8,
		 sizeof(Elf64_Sym)},
		{21, SHT_STRTAB, 0, 0, STR, sizeof(strtab), 0, 0, 1, 0},
		{29, SHT_STRTAB, 0, 0, SHSTR, sizeof(shstrtab), 0, 0, 1, 0},
	};
	memcpy(f + SHDR, sh, sizeof(sh));
	FILE *out = fopen(path, "wb");
	if (!out)
		return -1;
	size_t n = fwrite(f, 1, sizeof(f), out);
	return fclose(out) == 0 && n == sizeof(f) ? 0 : -1;
}

/* write_label_elf() into a fresh file named after the template @path. */
static void temp_label_elf(char *path)
{
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	CHECK(write_label_elf(path) == 0);
}

/* STT_NOTYPE symbols in executable sections name code (as perf does for
 * assembler labels); they are not function entries. */
static void test_elf_labels(void)
{
	char path[] = "/tmp/pts_test_labelsXXXXXX";
	temp_label_elf(path);
	struct pts_image *img = pts_image_new();
	CHECK(pts_image_add_elf(img, 0, path, 0) == 1);
	const struct pts_symbol *fn = pts_image_symbol_find(img, 0, "fn");
	const struct pts_symbol *lbl = pts_image_symbol_find(img, 0, "lbl");
	CHECK(fn && fn->addr == 0x400080 && fn->size == 4);
	CHECK(lbl && lbl->addr == 0x400084 && lbl->size == 0);
	CHECK(pts_image_symbol_at(img, 0, 0x400083) == fn);
	CHECK(pts_image_symbol_at(img, 0, 0x400084) == lbl);
	/* No size: the label runs on; the hidden one does not cut it. */
	CHECK(pts_image_symbol_at(img, 0, 0x40008a) == lbl);
	CHECK(pts_image_symbol_at(img, 0, 0x40007f) == NULL);
	CHECK(pts_image_symbol_find(img, 0, "hid") == NULL);
	CHECK(pts_image_symbol_find(img, 0, "dat") == NULL);
	CHECK(pts_image_symbol_find(img, 0, "absv") == NULL);
	/* An alias names its address by name, not by address (fn does: one
	 * symbol per address); it was dropped altogether (fuzz_elf). */
	const struct pts_symbol *alias =
		pts_image_symbol_find(img, 0, "fn_alias");
	CHECK(alias && alias->addr == 0x400080 && alias->size == 4);
	/* Function entries: STT_FUNC only. */
	const struct pts_symbol *fns;
	CHECK(pts_image_functions(img, 0, &fns) == 1);
	CHECK(fns && fns[0].addr == 0x400080 && strcmp(fns[0].name, "fn") == 0);
	/* At a base, labels move with the code. */
	struct pts_image *img2 = pts_image_new();
	CHECK(pts_image_add_elf(img2, 0, path, 0x10000000) == 1);
	lbl = pts_image_symbol_at(img2, 0, 0x10000084);
	CHECK(lbl && strcmp(lbl->name, "lbl") == 0);
	pts_image_free(img2);
	/* A base that puts a segment past the top of the address space (it
	 * fits at its link address): the caller's mistake, refused; nothing
	 * maps. */
	struct pts_image *img3 = pts_image_new();
	CHECK_EQ(pts_image_add_elf(img3, 0, path, UINT64_C(0xfffffffffffffff0)),
		 -PTS_ERR_INVALID);
	CHECK_EQ(pts_image_generation(img3), 0);
	pts_image_free(img3);
	pts_image_free(img);
	unlink(path);
}

/* pts_elf_code_at(): code by the sections; by the segment only in a file
 * without sections; at a base as the image loads it. */
static void test_elf_code_at(void)
{
	char path[] = "/tmp/pts_test_codeatXXXXXX";
	temp_label_elf(path);
	char based[64];
	snprintf(based, sizeof(based), "%s:0x10000000", path);
	CHECK_EQ(pts_elf_code_at(path, 0x400080), 1);  /* .text */
	CHECK_EQ(pts_elf_code_at(path, 0x40008f), 1);
	/* .data, though its segment is R E */
	CHECK_EQ(pts_elf_code_at(path, 0x400090), 0);
	/* the program headers, in no section: the segment is R E, but the
	 * sections say what is code (synth --start walked the header) */
	CHECK_EQ(pts_elf_code_at(path, 0x400040), 0);
	/* the same file without its section headers: the segment says */
	FILE *f = fopen(path, "r+b");
	static const uint8_t no_sections[16] = {0};
	CHECK(f && fseek(f, 0x28, SEEK_SET) == 0 &&
	      fwrite(no_sections, 1, 8, f) == 8 && /* e_shoff */
	      fseek(f, 0x3c, SEEK_SET) == 0 &&
	      fwrite(no_sections, 1, 4, f) == 4); /* e_shnum, e_shstrndx */
	if (f)
		fclose(f);
	CHECK_EQ(pts_elf_code_at(path, 0x400040), 1);
	CHECK_EQ(pts_elf_code_at(path, 0x400090), 1);
	CHECK(write_label_elf(path) == 0); /* with sections again */
	CHECK_EQ(pts_elf_code_at(path, 0x500000), 0);  /* nothing there */
	CHECK_EQ(pts_elf_code_at(based, 0x10000080), 1);
	CHECK_EQ(pts_elf_code_at(based, 0x10000090), 0);
	CHECK_EQ(pts_elf_code_at(based, 0x400080), 0);
	CHECK_EQ(pts_elf_code_at("/nonexistent/x.elf", 0), -PTS_ERR_IO);
	CHECK_EQ(pts_elf_code_at("", 0), -PTS_ERR_INVALID);
	unlink(path);
}

struct case_ {
	int mode;
	uint8_t bytes[15];
	uint8_t len;
	int size;
	int iclass;
	uint64_t target; /* checked when nonzero */
	uint8_t flags;
};

static void test_classify(void)
{
	static const struct case_ cases[] = {
		{PTS_EXEC_64, {0x90}, 1, 1, PTS_INSN_PLAIN, 0, 0},
		{PTS_EXEC_64, {0x74, 0x05}, 2, 2, PTS_INSN_JCC, 0x1007, PTS_INSN_F_TARGET},
		{PTS_EXEC_64, {0x0f, 0x84, 0xfa, 0xff, 0xff, 0xff}, 6, 6, PTS_INSN_JCC, 0x1000, PTS_INSN_F_TARGET},
		{PTS_EXEC_64, {0xe3, 0xfe}, 2, 2, PTS_INSN_JCC, 0x1000, PTS_INSN_F_TARGET},
		{PTS_EXEC_64, {0xe2, 0x10}, 2, 2, PTS_INSN_JCC, 0x1012, PTS_INSN_F_TARGET},
		{PTS_EXEC_64, {0xeb, 0x80}, 2, 2, PTS_INSN_JMP, 0xf82, PTS_INSN_F_TARGET},
		{PTS_EXEC_64, {0xe9, 0, 1, 0, 0}, 5, 5, PTS_INSN_JMP, 0x1105, PTS_INSN_F_TARGET},
		{PTS_EXEC_64, {0xe8, 0, 0, 0, 0}, 5, 5, PTS_INSN_CALL, 0x1005, PTS_INSN_F_TARGET | PTS_INSN_F_CALL0},
		{PTS_EXEC_64, {0xe8, 0x10, 0, 0, 0}, 5, 5, PTS_INSN_CALL, 0x1015, PTS_INSN_F_TARGET},
		{PTS_EXEC_64, {0xff, 0xd0}, 2, 2, PTS_INSN_CALL_IND, 0, 0},
		{PTS_EXEC_64, {0x41, 0xff, 0x14, 0x24}, 4, 4, PTS_INSN_CALL_IND, 0, 0},
		{PTS_EXEC_64, {0xff, 0xe0}, 2, 2, PTS_INSN_JMP_IND, 0, 0},
		{PTS_EXEC_64, {0x3e, 0xff, 0xe0}, 3, 3, PTS_INSN_JMP_IND, 0, 0},
		{PTS_EXEC_64, {0xf2, 0xff, 0x25, 1, 2, 3, 4}, 7, 7, PTS_INSN_JMP_IND, 0, 0},
		{PTS_EXEC_64, {0xc3}, 1, 1, PTS_INSN_RET, 0, 0},
		{PTS_EXEC_64, {0xf2, 0xc3}, 2, 2, PTS_INSN_RET, 0, 0},
		{PTS_EXEC_64, {0xc2, 0x08, 0x00}, 3, 3, PTS_INSN_RET, 0, 0},
		{PTS_EXEC_64, {0xcb}, 1, 1, PTS_INSN_FAR, 0, 0},
		{PTS_EXEC_64, {0x48, 0xcf}, 2, 2, PTS_INSN_FAR, 0, 0},
		{PTS_EXEC_64, {0x0f, 0x05}, 2, 2, PTS_INSN_FAR, 0, 0},
		{PTS_EXEC_64, {0x48, 0x0f, 0x07}, 3, 3, PTS_INSN_FAR, 0, 0},
		{PTS_EXEC_64, {0xcc}, 1, 1, PTS_INSN_FAR, 0, 0},
		{PTS_EXEC_64, {0xcd, 0x80}, 2, 2, PTS_INSN_FAR, 0, 0},
		{PTS_EXEC_64, {0xff, 0x2c, 0x24}, 3, 3, PTS_INSN_FAR, 0, 0},
		{PTS_EXEC_64, {0x0f, 0x01, 0xc2}, 3, 3, PTS_INSN_FAR, 0, 0},
		{PTS_EXEC_64, {0x0f, 0x01, 0xd7}, 3, 3, PTS_INSN_ENCLU, 0, 0},
		{PTS_EXEC_64, {0xf3, 0x0f, 0xae, 0xe0}, 4, 4, PTS_INSN_PTWRITE, 0, 0},
		{PTS_EXEC_64, {0xf3, 0x48, 0x0f, 0xae, 0x60, 0x08}, 6, 6, PTS_INSN_PTWRITE, 0, 0},
		{PTS_EXEC_64, {0xf3, 0x0f, 0xae, 0x25, 1, 2, 3, 4}, 8, 8, PTS_INSN_PTWRITE, 0, 0},
		{PTS_EXEC_64, {0xf3, 0x0f, 0xae, 0x64, 0x24, 0x10}, 6, 6, PTS_INSN_PTWRITE, 0, 0},
		{PTS_EXEC_64, {0xf3, 0x0f, 0x1e, 0xfa}, 4, 4, PTS_INSN_PLAIN, 0, 0},
		/* hint NOPs capstone 4 rejects, libipt takes (SDM: NOP) */
		{PTS_EXEC_64, {0x0f, 0x1e, 0xfa}, 3, 3, PTS_INSN_PLAIN, 0, 0},
		{PTS_EXEC_64, {0x0f, 0x1f, 0xc0}, 3, 3, PTS_INSN_PLAIN, 0, 0},
		{PTS_EXEC_64, {0x66, 0x0f, 0x19, 0x84, 0x24, 1, 2, 3, 4}, 9, 9, PTS_INSN_PLAIN, 0, 0},
		{PTS_EXEC_32, {0x67, 0x0f, 0x1c, 0x46, 0x10}, 5, 5, PTS_INSN_PLAIN, 0, 0},
		{PTS_EXEC_64, {0x0f, 0x22, 0xd8}, 3, 3, PTS_INSN_OTHER, 0, 0},
		{PTS_EXEC_64, {0x0f, 0x22, 0xc0}, 3, 3, PTS_INSN_PLAIN, 0, 0},
		{PTS_EXEC_64, {0x0f, 0x30}, 2, 2, PTS_INSN_OTHER, 0, 0},
		{PTS_EXEC_64, {0x0f, 0x0b}, 2, 2, PTS_INSN_OTHER, 0, 0},
		{PTS_EXEC_64, {0xc7, 0xf8, 0x10, 0, 0, 0}, 6, 6, PTS_INSN_OTHER, 0x1016, PTS_INSN_F_TARGET | PTS_INSN_F_XBEGIN},
		{PTS_EXEC_64, {0x0f, 0x01, 0xd5}, 3, 3, PTS_INSN_OTHER, 0, 0},
		{PTS_EXEC_32, {0xe9, 0, 0, 0, 0x80}, 5, 5, PTS_INSN_JMP, 0x80001005, PTS_INSN_F_TARGET},
		{PTS_EXEC_32, {0x66, 0xe9, 0x00, 0xf0}, 4, 4, PTS_INSN_JMP, 0x0004, PTS_INSN_F_TARGET},
		{PTS_EXEC_32, {0x9a, 1, 2, 3, 4, 5, 6}, 7, 7, PTS_INSN_FAR, 0, 0},
		{PTS_EXEC_16, {0xe9, 0x00, 0xf0}, 3, 3, PTS_INSN_JMP, 0x0003, PTS_INSN_F_TARGET},
		{PTS_EXEC_16, {0xf3, 0x0f, 0xae, 0x26, 1, 2}, 6, 6, PTS_INSN_PTWRITE, 0, 0},
		{PTS_EXEC_64, {0x0f}, 1, -PTS_ERR_TRUNCATED, 0, 0, 0},
		{PTS_EXEC_64, {0xe8, 0x00}, 2, -PTS_ERR_TRUNCATED, 0, 0, 0},
		{PTS_EXEC_64, {0x0f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 15, 0, 0, 0, 0},
	};
	struct pts_insn_classifier *cls = pts_insn_classifier_new();
	CHECK(cls != NULL);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct case_ *c = &cases[i];
		struct pts_insn_info info;
		memset(&info, 0x5a, sizeof(info));
		int r = pts_insn_classify(cls, c->mode, 0x1000, c->bytes, c->len,
					  &info);
		if (c->size == 0) /* only: no crash, some answer */
			continue;
		if (r != c->size || (r > 0 && (info.iclass != c->iclass ||
					       info.flags != c->flags ||
					       (c->target &&
						info.target != c->target)))) {
			FAIL("case %zu: got %d class %s flags %x target %llx",
			     i, r, pts_iclass_name(info.iclass), info.flags,
			     (unsigned long long)info.target);
		}
	}
	char text[64];
	const uint8_t jmp[] = {0xeb, 0xfe};
	CHECK(pts_insn_disasm(cls, PTS_EXEC_64, 0x401000, jmp, 2, text,
			      sizeof(text)) > 0);
	CHECK(strcmp(text, "jmp 0x401000") == 0);
	CHECK(pts_insn_disasm(cls, PTS_EXEC_64, 0, jmp, 2, text, 4) ==
	      -PTS_ERR_AGAIN);
	/* Sized without capstone: a hint NOP is a nop, the others (here
	 * REX.R before 8C, which capstone 4 rejects) their bytes. */
	const uint8_t hint[] = {0x0f, 0x1f, 0xc0}, sreg[] = {0x44, 0x8c, 0xc0};
	CHECK(pts_insn_disasm(cls, PTS_EXEC_64, 0, hint, 3, text,
			      sizeof(text)) > 0);
	CHECK(strcmp(text, "nop") == 0);
	CHECK(pts_insn_disasm(cls, PTS_EXEC_64, 0, sreg, 3, text,
			      sizeof(text)) > 0);
	CHECK(strcmp(text, ".byte 0x44, 0x8c, 0xc0") == 0);
	CHECK(pts_insn_disasm(cls, PTS_EXEC_64, 0, sreg, 3, text, 10) ==
	      -PTS_ERR_AGAIN);

	/* Decode from an image; an instruction cut by the end of code. */
	struct pts_image *img = pts_image_new();
	const uint8_t code[] = {0x90, 0xe8, 0x00};
	pts_image_add_mem(img, 0, code, sizeof(code), 0x2000);
	struct pts_insn_info info;
	CHECK(pts_insn_decode(cls, img, 0, PTS_EXEC_64, 0x2000, &info) == 1);
	CHECK(pts_insn_decode(cls, img, 0, PTS_EXEC_64, 0x2001, &info) ==
	      -PTS_ERR_BAD_INSN);
	CHECK(pts_insn_decode(cls, img, 0, PTS_EXEC_64, 0x3000, &info) ==
	      -PTS_ERR_NOMAP);
	pts_image_free(img);
	pts_insn_classifier_free(cls);
	pts_insn_classifier_free(NULL);
	CHECK(strcmp(pts_exec_mode_name(PTS_EXEC_64), "64-bit") == 0);
}

/* fixtures/bin/enclave_demo has PT_LOADs at 0x400000 (0x3d8 bytes),
 * 0x4013d8 and 0x500000 (0x181 bytes). At base 0xffffffffffff0000 the
 * first fits but the last would wrap around to 0xf0000, where flow then
 * decoded the enclave: refused, nothing mapped. At the highest base where
 * all fit, all three map. */
static void test_elf_base_wraps(void)
{
	const char *root = getenv("PTS_SOURCE_ROOT");
	char elf[4096], spec[4200];
	snprintf(elf, sizeof(elf), "%s/fixtures/bin/enclave_demo",
		 root ? root : ".");
	struct pts_image *img = pts_image_new();
	CHECK_EQ(pts_image_add_elf(img, 0, elf, UINT64_C(0xffffffffffff0000)),
		 -PTS_ERR_INVALID);
	snprintf(spec, sizeof(spec), "%s:0xffffffffffff0000", elf);
	CHECK_EQ(pts_image_add_elf_spec(img, 0, spec), -PTS_ERR_INVALID);
	CHECK_EQ(pts_image_generation(img), 0);
	const uint64_t fits = UINT64_C(0) - 0x100182;
	CHECK_EQ(pts_image_add_elf(img, 0, elf, fits), 3);
	const uint8_t *code;
	CHECK_EQ(pts_image_read(img, 0, fits + 0x100000, &code), 0x181);
	CHECK_EQ(pts_image_read(img, 0, 0xf0000, &code), -PTS_ERR_NOMAP);
	pts_image_free(img);
}

/* libc's pthread_cond_signal has two versions in .dynsym: GLIBC_2.3.2,
 * the default, and GLIBC_2.2.5 at a lower address. A lookup by name finds
 * the one the dynamic linker binds (dlsym in this process, less libc's
 * load base); it found the lowest-addressed one. The older one still
 * names its code. */
static void test_elf_symbol_versions(void)
{
	void *now = dlsym(RTLD_DEFAULT, "pthread_cond_signal");
	void *old = dlvsym(RTLD_DEFAULT, "pthread_cond_signal", "GLIBC_2.2.5");
	Dl_info libc;
	CHECK(now && old && now != old && dladdr(now, &libc));
	if (!now || !old || !dladdr(now, &libc))
		return;
	const uint64_t base = (uint64_t)(uintptr_t)libc.dli_fbase;
	struct pts_image *img = pts_image_new();
	CHECK(pts_image_add_elf(img, 0, libc.dli_fname, 0) > 0);
	const struct pts_symbol *sym =
		pts_image_symbol_find(img, 0, "pthread_cond_signal");
	CHECK(sym && sym->addr == (uint64_t)(uintptr_t)now - base &&
	      !sym->older_version);
	sym = pts_image_symbol_at(img, 0, (uint64_t)(uintptr_t)old - base);
	CHECK(sym && !strcmp(sym->name, "pthread_cond_signal") &&
	      sym->older_version);
	pts_image_free(img);
}

int main(void)
{
	test_mem();
	test_raw();
	test_elf();
	test_elf_labels();
	test_elf_base_wraps();
	test_elf_symbol_versions();
	test_elf_code_at();
	test_classify();
	return pts_check_exit();
}
