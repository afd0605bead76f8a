/* Internals shared by the topa_*.c files (not installed). */
#ifndef PTS_TOPA_INTERNAL_H
#define PTS_TOPA_INTERNAL_H

#include <ptscope/topa.h>

#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>

/* Bounds that keep hostile descriptions (and the fuzzer) from asking for
 * unbounded memory or time; real buffer sets are far below them. */
#define PTS_TOPA_MAX_SPANS 65536u
#define PTS_TOPA_MAX_TABLES 65536u
#define PTS_TOPA_MAX_REGIONS (1u << 20)
/* Hardware's last entry index: byte offset 0x0FFFFFF8 in a table. */
#define PTS_TOPA_MAX_INDEX 0x1ffffffu

/* Bytes at a physical address: a file, a dump, or a caller's buffer. */
struct pts_topa_span {
	uint64_t phys;
	uint64_t len;
	const uint8_t *data;
	char *name; /* owned; may be NULL */
};

/* One output region in traversal order. */
struct pts_topa_region {
	uint64_t phys;
	uint64_t size;
	const uint8_t *data;
	uint64_t table; /* the table and entry that name it */
	uint32_t index;
	uint8_t stop;
};

/* Something to release in pts_topa_free(): a mapping or a heap block. */
struct pts_topa_owned {
	void *addr;
	size_t len;
	uint8_t mapped;
	uint8_t from_file; /* read from the file @dev, @ino */
	dev_t dev;
	ino_t ino;
};

struct pts_topa {
	struct pts_topa_span *spans;
	uint32_t nspans, cap_spans;
	uint64_t *decl_tables; /* declared with pts_topa_add_table() */
	uint32_t ndecl, cap_decl;
	struct pts_topa_owned *owned;
	uint32_t nowned, cap_owned;

	uint64_t output_base, mask_ptrs, status;
	uint8_t have_base, have_mask, have_status;
	uint8_t mode;
	uint8_t wrap;
	uint8_t have_start;
	uint8_t maxphyaddr;
	uint64_t start;

	/* pts_topa_linearize() results */
	struct pts_topa_region *regions;
	uint32_t nregions, cap_regions;
	uint32_t loop_start; /* first region of the ring (== nregions: none) */
	struct pts_input *slices;
	uint32_t nslices, cap_slices;
	uint32_t next_slice;
	uint8_t ready;
	struct pts_topa_info info;

	/* Opens the files a description names (pts_topa_set_opener()); NULL:
	 * pts_topa_map_file(). */
	int (*opener)(void *ctx, const char *path, const uint8_t **data,
		      uint64_t *len);
	void *opener_ctx;

	/* Room for messages naming a file by a path of PATH_MAX bytes (the
	 * 320 bytes of old cut such messages short). */
	char err[4608];
};

/* Records a message for pts_topa_errmsg() and returns -@code. */
int pts_topa_fail(struct pts_topa *t, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The span holding [@phys, @phys + @len), or NULL. */
const struct pts_topa_span *pts_topa_find(const struct pts_topa *t,
					  uint64_t phys, uint64_t len);

/* A span that holds some of the @len bytes at @phys, or NULL: for the
 * message when pts_topa_find() finds none that holds them all. */
const struct pts_topa_span *pts_topa_partial(const struct pts_topa *t,
					     uint64_t phys, uint64_t len);

/* Keeps @addr (a heap block, or a mapping of @len bytes when @mapped) for
 * release in pts_topa_free(); releases it at once on failure.
 * Returns 0 or -PTS_ERR_NOMEM. */
int pts_topa_own(struct pts_topa *t, void *addr, size_t len, int mapped);

/* Maps @path read-only (reads it when it cannot be mapped) and owns the
 * bytes. Returns 0 and sets *@data, *@len, or -PTS_ERR_IO with a message. */
int pts_topa_map_file(struct pts_topa *t, const char *path,
		      const uint8_t **data, uint64_t *len);

/* Grows *@arr (elements of @elem bytes) to hold @need; Returns 0 or
 * -PTS_ERR_NOMEM. */
int pts_topa_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem);

/* Parses "4K".."128M" (a power of two with an optional K/M suffix) into
 * bytes. Returns 0 or -1. */
int pts_topa_parse_bytes(const char *s, const char *e, uint64_t *v);

/* Little-endian 64-bit load/store. */
uint64_t pts_topa_load64(const uint8_t *p);
void pts_topa_store64(uint8_t *p, uint64_t v);

#endif
