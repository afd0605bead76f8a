/* Flow decode set-up shared by the flow tests and benchmarks. */
#include "flow_setup.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <gelf.h>
#include <string.h>
#include <unistd.h>

int pts_test_add_images(struct pts_image *img, const struct pts_config *cfg)
{
	for (size_t i = 0; i < cfg->n_images; i++) {
		const struct pts_image_spec *s = &cfg->images[i];
		int err = s->kind == PTS_IMAGE_ELF
				  ? pts_image_add_elf(img, 0, s->path, s->base)
				  : pts_image_add_raw(img, 0, s->path, s->from,
						      s->to, s->addr);
		if (err < 0)
			return err;
	}
	return 0;
}

void pts_test_libipt_config(const struct pts_trace_config *tc,
			    const uint8_t *begin, const uint8_t *end,
			    struct pt_config *pc)
{
	pt_config_init(pc);
	pc->begin = (uint8_t *)begin;
	pc->end = (uint8_t *)end;
	if (tc->cpu.family) {
		pc->cpu.vendor = pcv_intel;
		pc->cpu.family = tc->cpu.family;
		pc->cpu.model = tc->cpu.model;
		pc->cpu.stepping = tc->cpu.stepping;
		pt_cpu_errata(&pc->errata, &pc->cpu);
	}
	if (!(tc->known & PTS_CFG_CTL))
		return;
	for (unsigned n = 0; n < 4; n++) {
		uint64_t cfg = (tc->ctl >> PTS_CTL_ADDR_CFG_SHIFT(n)) & 0xf;
		pc->addr_filter.config.addr_cfg |= cfg << (4 * n);
		(&pc->addr_filter.addr0_a)[2 * n] = tc->addr_a[n];
		(&pc->addr_filter.addr0_a)[2 * n + 1] = tc->addr_b[n];
	}
}

int pts_test_libipt_read(uint8_t *buf, size_t size,
			 const struct pt_asid *asid, uint64_t ip, void *ctx)
{
	(void)asid;
	int n = pts_image_fetch(ctx, 0, ip, buf, size);
	return n < 0 ? -pte_nomap : n;
}

/* The PT_LOAD segments of ELF @path as sections of @img, the lowest at
 * @base (0: link addresses), as pts_image_add_elf() maps them. */
static int libipt_add_file(struct pt_image *img,
			   struct pt_image_section_cache *isc,
			   const char *path, uint64_t offset, uint64_t size,
			   uint64_t vaddr)
{
	int isid = pt_iscache_add_file(isc, path, offset, size, vaddr);
	return isid < 0 ? isid : pt_image_add_cached(img, isc, isid, NULL);
}

static int libipt_add_elf(struct pt_image *img,
			  struct pt_image_section_cache *isc, const char *path,
			  uint64_t base)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t n = 0;
	int err = !e || elf_getphdrnum(e, &n) != 0 ? -1 : 0;
	uint64_t lowest = UINT64_MAX;
	for (size_t i = 0; err == 0 && i < n; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    ph.p_vaddr < lowest)
			lowest = ph.p_vaddr;
	}
	uint64_t bias = base ? base - lowest : 0;
	for (size_t i = 0; err == 0 && i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !ph.p_filesz)
			continue;
		if (libipt_add_file(img, isc, path, ph.p_offset, ph.p_filesz,
				    ph.p_vaddr + bias) < 0)
			err = -1;
	}
	if (e)
		elf_end(e);
	close(fd);
	return err;
}

int pts_test_libipt_images(struct pt_image *img,
			   struct pt_image_section_cache *isc,
			   const struct pts_config *cfg)
{
	for (size_t i = 0; i < cfg->n_images; i++) {
		const struct pts_image_spec *s = &cfg->images[i];
		int err;
		if (s->kind == PTS_IMAGE_ELF) {
			err = libipt_add_elf(img, isc, s->path, s->base);
		} else {
			uint64_t size = s->to ? s->to - s->from : 0;
			if (!size) {
				int fd = open(s->path, O_RDONLY);
				off_t end = fd >= 0 ? lseek(fd, 0, SEEK_END) : -1;
				if (fd >= 0)
					close(fd);
				if (end < 0 || (uint64_t)end <= s->from)
					return -1;
				size = (uint64_t)end - s->from;
			}
			err = libipt_add_file(img, isc, s->path, s->from, size,
					      s->addr);
		}
		if (err < 0)
			return err;
	}
	return 0;
}

int pts_test_synth_walk(const char *ptscope, const char *elf,
			const char *insns, char *const *extra, int nextra,
			char *dir, size_t cap, struct pts_config *cfg,
			struct pts_image *img, const uint8_t **data,
			size_t *size)
{
	const char *tmp = getenv("TMPDIR");
	char trace[4200], config[4200];
	snprintf(dir, cap, "%s/ptscope-walk.XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		fprintf(stderr, "cannot make a directory %s\n", dir);
		dir[0] = 0;
		return -1;
	}
	snprintf(trace, sizeof(trace), "%s/walk.pt", dir);
	snprintf(config, sizeof(config), "%s/walk.cfg", dir);
	pid_t pid = fork();
	if (pid == 0) {
		char *args[64] = {(char *)ptscope, "synth", "--walk", (char *)elf,
				  "--insns", (char *)insns, "-o", trace,
				  "--config-out", config};
		int n = 10;
		for (int i = 0; i < nextra && n < 63; i++)
			args[n++] = extra[i];
		args[n] = NULL;
		execv(ptscope, args);
		_exit(127);
	}
	int ws;
	if (pid < 0 || waitpid(pid, &ws, 0) < 0 || !WIFEXITED(ws) ||
	    WEXITSTATUS(ws)) {
		fprintf(stderr, "ptscope synth failed\n");
		return -1;
	}
	int line = 0;
	if (pts_config_load(cfg, config, &line) < 0 ||
	    pts_test_add_images(img, cfg) < 0) {
		fprintf(stderr, "%s: cannot load\n", config);
		return -1;
	}
	FILE *f = fopen(trace, "rb");
	long n = f && fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
	uint8_t *mem = n > 0 ? malloc((size_t)n) : NULL;
	if (f)
		rewind(f);
	if (!mem || fread(mem, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "%s: cannot read\n", trace);
		if (f)
			fclose(f);
		free(mem);
		return -1;
	}
	fclose(f);
	*data = mem;
	*size = (size_t)n;
	return 0;
}

void pts_test_remove_dir(const char *dir)
{
	char cmd[4300];
	if (!dir || !dir[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}
