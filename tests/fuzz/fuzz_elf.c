/* libFuzzer target: random bytes as an ELF file for the image loader
 * (pts_image_add_elf(), `--elf FILE[:BASE]`): program headers, symbol
 * tables and string tables come from the user's files and may be anything.
 * The bytes go to a memory file (memfd) that the loader maps as it maps
 * any file; an odd size loads at a base, an even one at the link address.
 * Invariants: no crash, hang or leak; a load either fails with
 * -PTS_ERR_BAD_FORMAT (or, at a base, -PTS_ERR_INVALID: a segment would
 * run past the top of the address space there, maps nothing) or maps
 * segments whose bytes are all readable; every
 * function entry has a name and is found again by address and by name;
 * pts_elf_code_at() on the same file answers 0 or 1 when the load worked.
 *
 * Corpus (corpus/elf/): small ELF files (fixtures/bin/enclave_demo, cut
 * and whole). */
#include "fuzz_target.h"

#include <ptscope/decoder.h>

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The code at @addr, when mapped: every byte of its mapping from there on
 * is read (ASan checks that it is mapped). */
static void check_code(const struct pts_image *img, uint64_t addr)
{
	const uint8_t *bytes;
	int n = pts_image_read(img, 0, addr, &bytes);
	if (n == -PTS_ERR_NOMAP)
		return;
	REQUIRE(n > 0);
	volatile uint8_t sum = 0;
	for (int i = 0; i < n; i++)
		sum ^= bytes[i]; /* ASan: every byte is mapped */
	(void)sum;
}

static void check_functions(const struct pts_image *img)
{
	const struct pts_symbol *syms;
	size_t n = pts_image_functions(img, 0, &syms);
	for (size_t i = 0; i < n; i++) {
		REQUIRE(syms[i].name && syms[i].name[0]);
		REQUIRE(i == 0 || syms[i - 1].addr < syms[i].addr);
		REQUIRE(pts_image_symbol_at(img, 0, syms[i].addr));
		REQUIRE(pts_image_symbol_find(img, 0, syms[i].name));
		check_code(img, syms[i].addr);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz_elf", MFD_CLOEXEC);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, data, size) == (ssize_t)size);
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct pts_image *img = pts_image_new();
	REQUIRE(img);
	uint64_t base = (size & 1) ? UINT64_C(0x7f0000000000) : 0;
	int mapped = pts_image_add_elf(img, 0, path, base);
	/* -PTS_ERR_IO: an empty file cannot be mapped. */
	REQUIRE(mapped > 0 || mapped == -PTS_ERR_BAD_FORMAT ||
		(mapped == -PTS_ERR_INVALID && base &&
		 pts_image_generation(img) == 0) ||
		(mapped == -PTS_ERR_IO && size == 0));
	if (mapped > 0)
		check_functions(img);
	/* The same file as a spec, for whether an address is code. */
	char spec[96];
	snprintf(spec, sizeof(spec), base ? "%s:0x7f0000000000" : "%s", path);
	const int code = pts_elf_code_at(spec, base + 0x401000);
	REQUIRE(code == 0 || code == 1 || code == -PTS_ERR_BAD_FORMAT ||
		code == -PTS_ERR_IO || (code == -PTS_ERR_INVALID && base));
	REQUIRE(mapped <= 0 || code >= 0);
	pts_image_free(img);
	close(fd);
	return 0;
}
