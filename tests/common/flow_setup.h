/* Setting up a flow decode from a trace configuration, the same way for
 * ptscope and for libipt (tests and benchmarks that compare the two). */
#ifndef PTS_TESTS_FLOW_SETUP_H
#define PTS_TESTS_FLOW_SETUP_H

#include <ptscope/decoder.h>
#include <ptscope/model.h>

#include <intel-pt.h>

/* Adds the images @cfg names to @img (default address space).
 * Returns 0 or the first pts_image_add_*() error. */
int pts_test_add_images(struct pts_image *img, const struct pts_config *cfg);

/* Fills @pc for a decode of [@begin, @end) with the address filter ranges
 * of @tc (ADDRn_CFG from its CTL) and the errata of its CPU. */
void pts_test_libipt_config(const struct pts_trace_config *tc,
			    const uint8_t *begin, const uint8_t *end,
			    struct pt_config *pc);

/* A libipt image read callback over a pts_image (@ctx), so that both
 * decoders read the same bytes. */
int pts_test_libipt_read(uint8_t *buf, size_t size,
			 const struct pt_asid *asid, uint64_t ip, void *ctx);

/* Adds the images @cfg names to libipt's @img as file sections (ELF
 * PT_LOAD file bytes, raw ranges) held in the section cache @isc (which
 * keeps them mapped, as ptxed does), so that libipt reads code its own
 * fastest way. @isc must outlive the decoder.
 * Returns 0, or < 0 when a file cannot be read or added. */
int pts_test_libipt_images(struct pt_image *img,
			   struct pt_image_section_cache *isc,
			   const struct pts_config *cfg);

/* Runs `PTSCOPE synth --walk ELF --insns INSNS EXTRA...` into a new
 * directory under $TMPDIR (its path in @dir, @cap bytes), loads the
 * configuration it writes into @cfg and its images into @img, and reads
 * the trace into memory (*@data, malloc'd: no decoder pays for page
 * faults on the file). The directory stays (libipt maps the files it
 * names lazily); pts_test_remove_dir() removes it. Returns 0, or -1 after
 * saying why on stderr. */
int pts_test_synth_walk(const char *ptscope, const char *elf,
			const char *insns, char *const *extra, int nextra,
			char *dir, size_t cap, struct pts_config *cfg,
			struct pts_image *img, const uint8_t **data,
			size_t *size);

/* rm -rf @dir (NULL or "": nothing). */
void pts_test_remove_dir(const char *dir);

#endif
