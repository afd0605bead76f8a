/* Disassembly text by instruction, for pts_flow_disasm(): see
 * text_cache.h. */
#include "text_cache.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* 2^16 entries of 64 bytes (4 MiB), two to a set. On a 3.7M-instruction
 * walk over all of libc (126k distinct instructions, the benchmark's
 * worst case: real programs loop) 85% of the lookups hit; direct-mapped
 * 81%, with 2^17 entries 92%. */
#define TEXT_CACHE_BITS 16
#define TEXT_MAX 41 /* longer texts (0.1% of them) are not kept */

struct text_entry {
	uint64_t ip, cr3;
	uint32_t epoch; /* 0: empty */
	uint8_t mode, size, len;
	char text[TEXT_MAX];
};

_Static_assert(sizeof(struct text_entry) == 64, "one entry a cache line");

struct pts_text_cache {
	const struct pts_image *img;
	uint64_t gen;
	uint32_t epoch; /* entries of another epoch are stale */
	struct text_entry e[1u << TEXT_CACHE_BITS];
};

struct pts_text_cache *pts_text_cache_new(void)
{
	struct pts_text_cache *c = calloc(1, sizeof(*c));
	if (c)
		c->epoch = 1;
	return c;
}

void pts_text_cache_free(struct pts_text_cache *c)
{
	free(c);
}

/* New code in the image may sit where old code was: texts made before a
 * change no longer count. An epoch makes that one store, not 4 MiB. */
static void follow_image(struct pts_text_cache *c, const struct pts_image *img)
{
	const uint64_t gen = pts_image_generation(img);
	if (c->img == img && c->gen == gen)
		return;
	c->img = img;
	c->gen = gen;
	if (++c->epoch == 0) {
		memset(c->e, 0, sizeof(c->e));
		c->epoch = 1;
	}
}

/* The set of @k: its two ways, most recently used first. */
static struct text_entry *set_of(struct pts_text_cache *c,
				 const struct pts_text_key *k)
{
	uint64_t h = (k->ip ^ k->cr3 * 31) * UINT64_C(0x9e3779b97f4a7c15);
	return &c->e[(h >> (64 - (TEXT_CACHE_BITS - 1))) << 1];
}

static bool matches(const struct pts_text_cache *c,
		    const struct text_entry *e, const struct pts_text_key *k)
{
	return e->epoch == c->epoch && e->ip == k->ip && e->cr3 == k->cr3 &&
	       e->mode == k->mode && e->size == k->size;
}

int pts_text_cache_find(struct pts_text_cache *c, const struct pts_image *img,
			const struct pts_text_key *k, char *out, size_t cap)
{
	follow_image(c, img);
	struct text_entry *set = set_of(c, k);
	int way = matches(c, &set[0], k) ? 0 : matches(c, &set[1], k) ? 1 : -1;
	if (way < 0)
		return -1;
	if (way == 1) {
		struct text_entry t = set[0];
		set[0] = set[1];
		set[1] = t;
	}
	if ((size_t)set[0].len >= cap)
		return -PTS_ERR_AGAIN;
	memcpy(out, set[0].text, set[0].len);
	out[set[0].len] = 0;
	return set[0].len;
}

void pts_text_cache_put(struct pts_text_cache *c, const struct pts_text_key *k,
			const char *text, int len)
{
	struct text_entry *set = set_of(c, k);
	if (len < 0 || (size_t)len > sizeof(set->text))
		return;
	set[1] = set[0];
	set[0] = (struct text_entry){.ip = k->ip,
				     .cr3 = k->cr3,
				     .epoch = c->epoch,
				     .mode = k->mode,
				     .size = k->size,
				     .len = (uint8_t)len};
	memcpy(set[0].text, text, (size_t)len);
}
