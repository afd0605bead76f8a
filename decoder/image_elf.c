/* Images from ELF files (program headers, function symbols and code labels)
 * and the command-line image specs. */
#include "internal.h"

#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Whether @sym is a code label perf would name code by: an STT_NOTYPE
 * symbol with a name, defined in a section (not absolute), not hidden or
 * internal, in an executable section (perf: in a section named *text*). */
static bool is_code_label(Elf *elf, const GElf_Sym *sym)
{
	if (GELF_ST_TYPE(sym->st_info) != STT_NOTYPE ||
	    sym->st_shndx == SHN_UNDEF || sym->st_shndx >= SHN_LORESERVE)
		return false;
	int vis = GELF_ST_VISIBILITY(sym->st_other);
	if (vis == STV_HIDDEN || vis == STV_INTERNAL)
		return false;
	GElf_Shdr sh;
	Elf_Scn *scn = elf_getscn(elf, sym->st_shndx);
	return scn && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR);
}

/* The bit of a .gnu.version entry that hides the version from binding
 * by name (the GNU symbol versioning spec). */
#define VERSYM_HIDDEN_BIT 0x8000

/* Whether symbol @i of .dynsym is an older version of its name: its
 * .gnu.version entry (@versym, NULL when there is none) has the hidden
 * bit. */
static bool older_version(Elf_Data *versym, size_t i)
{
	GElf_Versym v;
	return versym && gelf_getversym(versym, (int)i, &v) &&
	       (v & VERSYM_HIDDEN_BIT);
}

/* Loads the function symbols and code labels of one symbol table section
 * (@versym: the versions of .dynsym's, else NULL). */
static int load_symtab(struct pts_image *img, uint64_t cr3, Elf *elf,
		       Elf_Scn *scn, const GElf_Shdr *sh, uint64_t bias,
		       Elf_Data *versym)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	if (!data || !sh->sh_entsize)
		return 0;
	size_t n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(data, (int)i, &sym))
			break;
		int type = GELF_ST_TYPE(sym.st_info);
		bool function = type == STT_FUNC || type == STT_GNU_IFUNC;
		if ((!function && !is_code_label(elf, &sym)) ||
		    sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		const char *name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		const struct pts_symbol add = {sym.st_value + bias,
					       sym.st_size, name,
					       older_version(versym, i)};
		int err = pts_image_add_symbol(img, cr3, &add, function);
		if (err)
			return err;
	}
	return 0;
}

/* Function symbols and code labels: .symtab when there is one (it is a
 * superset), else .dynsym (stripped libraries). */
static int load_symbols(struct pts_image *img, uint64_t cr3, Elf *elf,
			uint64_t bias)
{
	Elf_Scn *dynsym = NULL, *symtab = NULL, *versym = NULL;
	GElf_Shdr dsh, ssh;
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn;
	     scn = elf_nextscn(elf, scn)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB) {
			symtab = scn;
			ssh = sh;
		} else if (sh.sh_type == SHT_DYNSYM) {
			dynsym = scn;
			dsh = sh;
		} else if (sh.sh_type == SHT_GNU_versym) {
			versym = scn;
		}
	}
	int err = 0;
	if (symtab)
		err = load_symtab(img, cr3, elf, symtab, &ssh, bias, NULL);
	else if (dynsym)
		err = load_symtab(img, cr3, elf, dynsym, &dsh, bias,
				  versym ? elf_getdata(versym, NULL) : NULL);
	pts_image_sort_symbols(img, cr3);
	return err;
}

/* Maps the PT_LOAD segments; returns how many. */
static int map_segments(struct pts_image *img, uint64_t cr3, Elf *elf,
			const uint8_t *file, size_t len, uint64_t bias)
{
	size_t nph;
	if (elf_getphdrnum(elf, &nph) != 0)
		return -PTS_ERR_BAD_FORMAT;
	int mapped = 0;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !ph.p_filesz)
			continue;
		if (ph.p_offset > len || ph.p_filesz > len - ph.p_offset)
			return -PTS_ERR_BAD_FORMAT;
		/* A segment that runs past the top of the address space
		 * (at its link address or at the base asked for) is the
		 * file's fault, not the caller's (found by fuzz_elf). */
		const uint64_t addr = ph.p_vaddr + bias;
		if (addr + ph.p_filesz <= addr)
			return -PTS_ERR_BAD_FORMAT;
		int err = pts_image_map(img, cr3, file + ph.p_offset,
					ph.p_filesz, addr);
		if (err)
			return err;
		mapped++;
	}
	return mapped ? mapped : -PTS_ERR_BAD_FORMAT;
}

/* The load bias that puts the lowest PT_LOAD address at @base. */
static int compute_bias(Elf *elf, uint64_t base, uint64_t *bias)
{
	*bias = 0;
	if (!base)
		return 0;
	size_t nph;
	if (elf_getphdrnum(elf, &nph) != 0)
		return -PTS_ERR_BAD_FORMAT;
	uint64_t low = UINT64_MAX;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    ph.p_vaddr < low)
			low = ph.p_vaddr;
	}
	if (low == UINT64_MAX)
		return -PTS_ERR_BAD_FORMAT;
	/* Every segment must fit below the top of the address space at
	 * @base too: a base that wraps one around to low addresses is the
	 * caller's mistake (one that does not fit at its link address is
	 * the file's, map_segments() says). */
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !ph.p_filesz || ph.p_vaddr + ph.p_filesz <= ph.p_vaddr)
			continue;
		const uint64_t addr = base + (ph.p_vaddr - low);
		if (addr < base || addr + ph.p_filesz <= addr)
			return -PTS_ERR_INVALID;
	}
	*bias = base - low;
	return 0;
}

/* pts_image_add_elf(), with the segments mapped or (@map_code 0) only the
 * symbols loaded. */
static int add_elf(struct pts_image *img, uint64_t cr3, const char *path,
		   uint64_t base, int map_code)
{
	if (!img || !path)
		return -PTS_ERR_INVALID;
	struct pts_mapped_file m;
	int err = pts_file_map(path, &m);
	if (err)
		return err == -PTS_ERR_INVALID ? -PTS_ERR_BAD_FORMAT : err;
	const size_t len = m.len;
	const uint8_t *const p = m.ptr;
	if (len < EI_NIDENT || memcmp(p, ELFMAG, SELFMAG) != 0) {
		munmap(m.ptr, len);
		return -PTS_ERR_BAD_FORMAT;
	}
	/* From here the image set owns the mapping, whatever happens. */
	err = pts_image_keep_mmap(img, &m);
	if (err)
		return err;
	elf_version(EV_CURRENT);
	Elf *elf = elf_memory(m.ptr, len);
	if (!elf)
		return -PTS_ERR_BAD_FORMAT;
	uint64_t bias;
	int mapped = compute_bias(elf, base, &bias);
	if (mapped == 0 && map_code)
		mapped = map_segments(img, cr3, elf, p, len, bias);
	if (mapped >= 0) {
		err = load_symbols(img, cr3, elf, bias);
		if (err)
			mapped = err;
	}
	elf_end(elf);
	return mapped;
}

int pts_image_add_elf(struct pts_image *img, uint64_t cr3, const char *path,
		      uint64_t base)
{
	return add_elf(img, cr3, path, base, 1);
}

int pts_image_add_elf_symbols(struct pts_image *img, uint64_t cr3,
			      const char *path, uint64_t base)
{
	return add_elf(img, cr3, path, base, 0);
}

/* ------------------------------------------------------------------------ */
/* Specs.                                                                    */

/* Copies [@s, @end) into a fresh string. */
static char *dup_range(const char *s, const char *end)
{
	char *out = malloc((size_t)(end - s) + 1);
	if (out) {
		memcpy(out, s, (size_t)(end - s));
		out[end - s] = 0;
	}
	return out;
}

char *pts_elf_spec_split(const char *spec, uint64_t *base)
{
	const char *end = spec + strlen(spec), *colon = strrchr(spec, ':');
	*base = 0;
	if (!colon || pts_parse_u64(colon + 1, end, base) < 0)
		return dup_range(spec, end);
	return dup_range(spec, colon);
}

/* Whether @addr is code in @elf at @bias: in an executable section; in
 * an executable PT_LOAD segment only when the file has no sections to say
 * (a segment also holds the ELF header and read-only data beside the
 * code). */
static int exec_segment_at(Elf *elf, uint64_t bias, uint64_t addr)
{
	int sections = 0;
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn;
	     scn = elf_nextscn(elf, scn)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC))
			continue;
		if (addr - (sh.sh_addr + bias) < sh.sh_size)
			return (sh.sh_flags & SHF_EXECINSTR) != 0;
		sections = 1;
	}
	if (sections)
		return 0;
	size_t nph;
	if (elf_getphdrnum(elf, &nph) != 0)
		return -PTS_ERR_BAD_FORMAT;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    (ph.p_flags & PF_X) &&
		    addr - (ph.p_vaddr + bias) < ph.p_memsz)
			return 1;
	}
	return 0;
}

int pts_elf_code_at(const char *spec, uint64_t addr)
{
	if (!spec || !*spec)
		return -PTS_ERR_INVALID;
	uint64_t base;
	char *path = pts_elf_spec_split(spec, &base);
	if (!path)
		return -PTS_ERR_NOMEM;
	struct pts_mapped_file m;
	int err = pts_file_map(path, &m);
	free(path);
	if (err)
		return err == -PTS_ERR_INVALID ? -PTS_ERR_BAD_FORMAT : err;
	elf_version(EV_CURRENT);
	Elf *elf = m.len >= EI_NIDENT && memcmp(m.ptr, ELFMAG, SELFMAG) == 0
			   ? elf_memory(m.ptr, m.len)
			   : NULL;
	uint64_t bias;
	err = !elf ? -PTS_ERR_BAD_FORMAT : compute_bias(elf, base, &bias);
	if (err == 0)
		err = exec_segment_at(elf, bias, addr);
	if (elf)
		elf_end(elf);
	munmap(m.ptr, m.len);
	return err;
}

int pts_image_add_elf_spec(struct pts_image *img, uint64_t cr3,
			   const char *spec)
{
	if (!img || !spec || !*spec)
		return -PTS_ERR_INVALID;
	uint64_t base;
	char *path = pts_elf_spec_split(spec, &base);
	if (!path)
		return -PTS_ERR_NOMEM;
	int err = pts_image_add_elf(img, cr3, path, base);
	free(path);
	return err;
}

/* Whether [@spec, @end) names a file that exists. */
static bool file_before(const char *spec, const char *end)
{
	char *path = dup_range(spec, end);
	bool there = path && access(path, F_OK) == 0;
	free(path);
	return there;
}

int pts_image_add_raw_spec(struct pts_image *img, uint64_t cr3,
			   const char *spec)
{
	if (!img || !spec)
		return -PTS_ERR_INVALID;
	const char *end = spec + strlen(spec);
	const char *colon = strrchr(spec, ':');
	uint64_t addr, from = 0, to = 0;
	if (!colon || colon == spec || pts_parse_u64(colon + 1, end, &addr) < 0)
		return -PTS_ERR_INVALID;
	const char *file_end = colon;
	/* An optional FROM[-TO] between two colons. */
	const char *prev = colon - 1;
	while (prev > spec && *prev != ':')
		prev--;
	if (*prev == ':' && prev > spec) {
		const char *dash = memchr(prev + 1, '-', (size_t)(colon - prev - 1));
		bool ok = dash ? pts_parse_u64(prev + 1, dash, &from) == 0 &&
					 pts_parse_u64(dash + 1, colon, &to) == 0
			       : pts_parse_u64(prev + 1, colon, &from) == 0;
		if (ok) {
			if (dash && to <= from)
				return -PTS_ERR_INVALID;
			file_end = prev;
		} else if (file_before(spec, prev)) {
			/* "FILE:1-:ADDR": a FROM-TO that does not parse, not
			 * a file named "FILE:1-" */
			return -PTS_ERR_INVALID;
		} else {
			from = to = 0;
		}
	}
	char *path = dup_range(spec, file_end);
	if (!path)
		return -PTS_ERR_NOMEM;
	int err = pts_image_add_raw(img, cr3, path, from, to, addr);
	free(path);
	return err;
}
