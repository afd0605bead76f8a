/* ptscope model layer, part 0: the trace configuration file (--config).
 *
 * One small text file says everything about a trace that the packets do not:
 * the IA32_RTIT_CTL bits, the ADDRn ranges, the CR3 match value, the CPUID
 * 0x15 ratio and nominal frequency (for time), the CPU (for errata), which
 * file bytes sit at which address (images), and the enclave map. `ptscope
 * synth` writes one beside every trace it makes; `flow`, `windows` and the
 * others read it with --config. The format is documented in
 * fixtures/FORMATS.md; in short, one directive per line, '#' starts a
 * comment, numbers in C notation (0x.. hex, else decimal):
 *
 *   ptscope-config 1
 *   ctl 0x200000260d           IA32_RTIT_CTL (ADDRn_CFG included)
 *   addr0 0x401000 0x401fff    IA32_RTIT_ADDR0_A/B, both inclusive
 *   cr3_match 0x1000           IA32_RTIT_CR3_MATCH
 *   cpuid_15 2 200 24000000    CPUID.15H EAX EBX ECX (TSC/CTC = EBX/EAX)
 *   nom_freq 24                MSR_PLATFORM_INFO[15:8]
 *   cpu 6/142/10               family/model/stepping (errata)
 *   image elf 0 bin/demo       ELF at its link address (or at BASE)
 *   image raw 0 0x40 0xffffffff81000000 kernel.bin   FROM TO ADDR PATH
 *   enclave 0x7000 0x8000 production aep=0x401100 entry=0x7000 eexit=0x401105
 *
 * Paths are the rest of the line (they may hold spaces); a relative path is
 * relative to the directory of the configuration file. Enclave ranges are
 * [BEGIN, END), END exclusive, as ELRANGE = base + size.
 *
 * The parsed values land in struct pts_trace_config (windows.h), which the
 * model and the flow decoder use; images stay here because only tools with
 * the decoder layer load them.
 *
 * Return convention: int >= 0 is success, < 0 is -PTS_ERR_* (packets.h).
 */
#ifndef PTSCOPE_MODEL_H
#define PTSCOPE_MODEL_H

#include <ptscope/packets.h>
#include <ptscope/windows.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* More IA32_RTIT_CTL fields (windows.h has the single bits). */
#define PTS_CTL_CYCTHRESH_SHIFT 19 /* 4 bits: 0 none, v: 2^(v-1) cycles */
#define PTS_CTL_PSBFREQ_SHIFT 24   /* 4 bits: PSB every 2 KiB << v */

enum pts_image_kind { PTS_IMAGE_ELF = 0, PTS_IMAGE_RAW = 1 };

/* Where file bytes sit in memory (the decoder's pts_image_add_elf/raw). */
struct pts_image_spec {
	uint8_t kind; /* enum pts_image_kind */
	char *path;   /* resolved against the config directory; owned */
	uint64_t base; /* ELF: 0 = link address, else lowest PT_LOAD here */
	uint64_t from, to; /* raw: file bytes [from, to); to 0 = to the end */
	uint64_t addr;     /* raw: load address */
	int line;          /* the configuration line it came from (0: none) */
};

/* A whole configuration. Initialize with pts_config_init(), free with
 * pts_config_fini(). trace.enclaves points into @enclaves (kept in step by
 * the functions below: do not resize the arrays by hand). */
struct pts_config {
	struct pts_trace_config trace;
	struct pts_enclave *enclaves;
	uint64_t *enclave_entry; /* per enclave: OENTRY, 0 when unknown */
	size_t n_enclaves;
	struct pts_image_spec *images;
	size_t n_images;
	/* What is wrong with the line pts_config_parse() stopped at, when
	 * it can say more than its error code (an enclave line says what
	 * --enclave would); NULL otherwise. A static string. */
	const char *why;
};

void pts_config_init(struct pts_config *cfg);
/* Frees what @cfg owns and re-initializes it; NULL is a no-op. */
void pts_config_fini(struct pts_config *cfg);

/* Adds an image; @path is copied as given. Returns 0, -PTS_ERR_NOMEM or
 * -PTS_ERR_INVALID (NULL path, unknown kind). */
int pts_config_add_image(struct pts_config *cfg,
			 const struct pts_image_spec *img);

/* Adds an enclave (copied) with its OENTRY (0 = unknown). Returns 0,
 * -PTS_ERR_NOMEM, -PTS_ERR_INVALID (empty range) or -PTS_ERR_BAD_CONFIG
 * (it overlaps an enclave added before). */
int pts_config_add_enclave(struct pts_config *cfg,
			   const struct pts_enclave *enc, uint64_t entry);
/* Parses enclave spec @text (pts_enclave_parse_spec()) and adds it.
 * Returns 0, or what either returns, with *@why saying what is wrong. */
int pts_config_add_enclave_spec(struct pts_config *cfg, const char *text,
				const struct pts_enclave_addr_reader *rd,
				const char **why);

/* Parses configuration text (@len bytes, need not be NUL-terminated) on top
 * of what @cfg holds. Relative image paths are joined to @base_dir (NULL or
 * "" = keep them as they are).
 * Returns 0.
 * Returns -PTS_ERR_BAD_FORMAT for a line it does not understand (or a
 * missing/unknown "ptscope-config" version line); *@err_line (may be NULL)
 * gets its number, counting from 1.
 * Returns -PTS_ERR_BAD_CONFIG for values that contradict each other (more
 * than 4 ADDRn ranges, a range with A > B).
 * Returns -PTS_ERR_NOMEM, -PTS_ERR_INVALID (NULL arguments). */
int pts_config_parse(struct pts_config *cfg, const char *text, size_t len,
		     const char *base_dir, int *err_line);

/* Reads the file @path and parses it with its directory as @base_dir.
 * Same returns as pts_config_parse(), plus -PTS_ERR_IO (errno kept) and
 * -PTS_ERR_UNSUPPORTED for more than PTS_CONFIG_MAX_BYTES (no
 * configuration is that long; a device such as /dev/zero never ends). */
#define PTS_CONFIG_MAX_BYTES (16u << 20)
int pts_config_load(struct pts_config *cfg, const char *path, int *err_line);

/* Writes @cfg in the text format, with comments that spell out the CTL
 * bits. Image paths are written as they are stored, except that a path is
 * made relative to @rel_dir when @rel_dir is not NULL (so a configuration
 * and the files it names can move together).
 * Returns 0, -PTS_ERR_IO when a write fails, -PTS_ERR_INVALID. */
int pts_config_write(const struct pts_config *cfg, const char *rel_dir,
		     FILE *out);

/* Spells out the set bits and fields of an IA32_RTIT_CTL value ("TraceEn
 * OS User BranchEn MTCFreq=3 ...") into @buf (NUL-terminated, cut to @cap).
 * Returns the full length it wanted. */
int pts_config_ctl_text(uint64_t ctl, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* PTSCOPE_MODEL_H */
