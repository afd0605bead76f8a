/* Disassembly text by instruction (pts_flow_disasm()). Capstone takes
 * about 0.8 us an instruction, 8 times the decode and print of the rest
 * of a `ptscope flow` line, and a trace runs the same instructions again
 * and again. The text of an instruction follows from its address, address
 * space, mode and size as long as the image does not change, so those are
 * the key, and a change of the image (pts_image_generation()) makes every
 * text kept before stale. Bounded: a fixed set-associative table. Not
 * installed. */
#ifndef PTS_DECODER_TEXT_CACHE_H
#define PTS_DECODER_TEXT_CACHE_H

#include <ptscope/decoder.h>

#include <stddef.h>
#include <stdint.h>

struct pts_text_cache;

struct pts_text_key {
	uint64_t ip, cr3;
	uint8_t mode, size;
};

/* NULL when out of memory (pts_flow_disasm() then goes without). */
struct pts_text_cache *pts_text_cache_new(void);
void pts_text_cache_free(struct pts_text_cache *c);

/* The text kept for @k in image @img, into @out (with its NUL): its
 * length, -1 when none is kept, or -PTS_ERR_AGAIN when it does not fit in
 * @cap bytes (as pts_insn_disasm()). */
int pts_text_cache_find(struct pts_text_cache *c, const struct pts_image *img,
			const struct pts_text_key *k, char *out, size_t cap);

/* Keeps @text (@len bytes) for @k, in the image of the last
 * pts_text_cache_find(). */
void pts_text_cache_put(struct pts_text_cache *c, const struct pts_text_key *k,
			const char *text, int len);

#endif
