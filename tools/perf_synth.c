/* `ptscope synth --perf-data OUT`: wraps a synthesized trace in the minimal
 * perf.data Linux perf decodes (pts_perf_write), with a MMAP for each
 * executable segment of the configuration's images. */
#include "perf_synth.h"

#include <ptscope/perfdata.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_MAPS 64
#define PAGE 4096u

/* perf's clock for synthesized traces: 1 TSC tick = 1 ns after a fixed
 * start, so perf times read back as TSC values. */
#define TIME_SHIFT 0
#define TIME_MULT 1
#define TIME_ZERO 1000000000ull

static uint64_t rd(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Adds a MMAP for each executable PT_LOAD of the ELF64 file @path loaded
 * at @base (0: its link address), as the kernel maps it (page-aligned). */
static void add_elf_maps(const char *path, uint64_t base,
			 struct pts_perf_write_map *maps, uint32_t *n)
{
	uint8_t eh[64], ph[56];
	FILE *f = fopen(path, "rb");
	if (!f)
		return;
	if (fread(eh, 1, 64, f) == 64 && memcmp(eh, "\177ELF\2", 5) == 0) {
		uint64_t phoff = rd(eh + 32, 8), lowest = UINT64_MAX;
		unsigned phnum = (unsigned)rd(eh + 56, 2);
		for (int pass = 0; pass < 2; pass++)
			for (unsigned i = 0; i < phnum && *n < MAX_MAPS; i++) {
				if (fseek(f, (long)(phoff + 56u * i), SEEK_SET) ||
				    fread(ph, 1, 56, f) != 56 || rd(ph, 4) != 1)
					continue; /* not PT_LOAD */
				uint64_t off = rd(ph + 8, 8), va = rd(ph + 16, 8);
				uint64_t filesz = rd(ph + 32, 8);
				if (pass == 0) {
					lowest = va < lowest ? va : lowest;
					continue;
				}
				if (!(rd(ph + 4, 4) & 1) || !filesz)
					continue; /* not executable */
				uint64_t bias = base ? base - lowest : 0;
				uint64_t skew = off % PAGE;
				struct pts_perf_write_map *m = &maps[(*n)++];
				memset(m, 0, sizeof(*m));
				m->addr = va + bias - skew;
				m->pgoff = off - skew;
				m->len = (filesz + skew + PAGE - 1) / PAGE * PAGE;
				m->filename = path;
			}
	}
	fclose(f);
}

int pts_synth_perf_data(const char *trace_path, const struct pts_config *cfg,
			const char *comm, const char *out_path, int compress)
{
	int fd = open(trace_path, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size <= 0) {
		if (fd >= 0)
			close(fd);
		return -PTS_ERR_IO;
	}
	/* The trace goes from the mapped file into perf.data: no copy. */
	void *pt = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (pt == MAP_FAILED)
		return -PTS_ERR_IO;
	struct pts_perf_write_map maps[MAX_MAPS];
	char *paths[MAX_MAPS]; /* absolute: perf looks files up by name */
	uint32_t n = 0, np = 0;
	for (size_t i = 0; i < cfg->n_images && np < MAX_MAPS; i++) {
		const struct pts_image_spec *s = &cfg->images[i];
		char *path = realpath(s->path, NULL);
		if (!path)
			continue;
		paths[np++] = path;
		if (s->kind == PTS_IMAGE_ELF) {
			add_elf_maps(path, s->base, maps, &n);
		} else if (n < MAX_MAPS && s->to > s->from) {
			maps[n++] = (struct pts_perf_write_map){
				s->addr, s->to - s->from, s->from, path,
				(uint8_t)(s->addr >> 63)};
		}
	}
	struct pts_perf_write_opts o = {0};
	o.pt = pt;
	o.pt_size = (size_t)st.st_size;
	o.pid = o.tid = 4242;
	o.cpu = 0;
	o.comm = comm;
	o.maps = maps;
	o.nr_maps = n;
	o.rtit_ctl = cfg->trace.ctl;
	o.time_zero = TIME_ZERO;
	o.time_mult = TIME_MULT;
	o.time_shift = TIME_SHIFT;
	o.tsc_ctc_n = cfg->trace.cpuid_15_ebx;
	o.tsc_ctc_d = cfg->trace.cpuid_15_eax;
	o.max_nonturbo_ratio = cfg->trace.nom_freq;
	/* perf extends the first TSC packet with the reference: any TSC
	 * within 2^55 of the trace's will do. */
	o.reference = 1;
	o.compress = (uint8_t)compress;
	int err = pts_perf_write(out_path, &o);
	while (np)
		free(paths[--np]);
	munmap(pt, (size_t)st.st_size);
	return err;
}
