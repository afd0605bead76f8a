/* ptscope ToPA layer: turns raw Intel PT output buffers (Table of Physical
 * Addresses, or a single output range) into the linear trace in write order,
 * and writes traces into such buffers (the inverse, for synthesis and tests).
 *
 * The model is "physical memory made of spans": every ToPA table and every
 * output region is read from a span (a file, a part of a memory dump, or a
 * caller's buffer) placed at a physical address. The linearizer walks the
 * tables as hardware does (END chains, circular or ending in a STOP entry),
 * locates the write position from the output MSRs, decides whether the
 * buffer wrapped, and hands out region slices oldest first: no copy of the
 * trace is made. Feed the slices to pts_pkt_next() like pts_source chunks;
 * decoding starts at the first PSB, since the oldest bytes may begin in the
 * middle of a packet.
 *
 * Errors follow packets.h: int >= 0 success, < 0 -PTS_ERR_*. A malformed
 * input is -PTS_ERR_BAD_FORMAT, an inconsistent set of MSR values or options
 * -PTS_ERR_BAD_CONFIG; in both cases pts_topa_errmsg() names the culprit
 * ("table 0x10000 entry 3: reserved bits 0x2 set").
 *
 * ---------------------------------------------------------------------------
 * Description file (pts_topa_load_desc / pts_topa_parse_desc)
 *
 * One directive per line; '#' starts a comment; numbers are decimal or 0x
 * hex; SIZE is 4K << n (4K, 8K, ... 128M) for ToPA entries. FILE names are
 * relative to the description's directory; FILE@OFF reads from byte OFF on.
 *
 *   mode topa|single          output scheme (default topa)
 *   output_base VALUE         IA32_RTIT_OUTPUT_BASE (required, here or
 *                             by pts_topa_set_msrs())
 *   output_mask_ptrs VALUE    IA32_RTIT_OUTPUT_MASK_PTRS (the same)
 *   status VALUE              IA32_RTIT_STATUS (optional)
 *   wrapped yes|no|detect     did the buffer wrap (default detect: bytes
 *                             after the write position are not all zero)
 *   start PHYS                table tracing began in (default: first table)
 *   maxphyaddr N              physical address width (default 52)
 *   table PHYS [FILE[@OFF]]   a ToPA table; its 64-bit entries are read from
 *                             FILE as hardware reads them, or, without FILE,
 *                             from the 'entry' lines that follow, or else
 *                             from a 'memory' dump
 *   entry PHYS SIZE [int] [stop]   an output entry of the last 'table'
 *   entry end PHYS            an END entry pointing to the table at PHYS
 *   entry raw VALUE           an entry given as its 64-bit value
 *   region PHYS FILE[@OFF]    the bytes of an output region (or of the
 *                             single range)
 *   memory PHYS FILE[@OFF]    a memory dump: byte OFF of FILE is at PHYS;
 *                             tables and regions not given otherwise are
 *                             read from it
 *
 * Example: two tables, a 4K and an 8K region, circular through table 0.
 *
 *   output_base 0x10000
 *   output_mask_ptrs 0x000002000000007f   # entry 0, offset 0x200
 *   table 0x10000
 *   entry 0x100000 4K
 *   entry end 0x11000
 *   table 0x11000
 *   entry 0x102000 8K int
 *   entry end 0x10000
 *   region 0x100000 r0.bin
 *   region 0x102000 r1.bin
 *
 * ---------------------------------------------------------------------------
 * Layout spec (pts_topa_writer_new, `ptscope synth --topa SPEC`)
 *
 *   SPEC  := 'single:' BYTES | TABLE ('/' TABLE)* ['@' N]
 *   TABLE := ENTRY (',' ENTRY)*
 *   ENTRY := SIZE [':int'] [':stop']
 *
 * Each TABLE gets an END entry after its output entries pointing to the next
 * table; the last one points to table N (default 0: the whole chain is a
 * ring; N > 0 leaves tables 0..N-1 as a lead-in written once). BYTES is a
 * power of two >= 128 (suffix K or M allowed). Example: "4K,8K/16K:int,4K".
 */
#ifndef PTSCOPE_TOPA_H
#define PTSCOPE_TOPA_H

#include <stddef.h>
#include <stdint.h>

#include "packets.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ToPA entry bits (SDM Table "ToPA Table Entry Fields"). */
#define PTS_TOPA_END (UINT64_C(1) << 0)
#define PTS_TOPA_INT (UINT64_C(1) << 2)
#define PTS_TOPA_STOP (UINT64_C(1) << 4)
#define PTS_TOPA_SIZE_SHIFT 6
#define PTS_TOPA_SIZE_MASK (UINT64_C(0xf) << PTS_TOPA_SIZE_SHIFT)
/* Bits 1, 3, 5, 11:10; the bits from MAXPHYADDR up are reserved as well. */
#define PTS_TOPA_RESERVED_LOW UINT64_C(0xc2a)
/* IA32_RTIT_STATUS.Stopped */
#define PTS_RTIT_STATUS_STOPPED (UINT64_C(1) << 5)

/* The entry for an output region at @phys of 4K << @size_code bytes with
 * @flags (PTS_TOPA_INT, PTS_TOPA_STOP). */
uint64_t pts_topa_entry_region(uint64_t phys, unsigned size_code,
			       uint64_t flags);
/* The END entry pointing to the table at @table_phys. */
uint64_t pts_topa_entry_end(uint64_t table_phys);

enum pts_topa_mode {
	PTS_TOPA_MODE_TOPA = 0,  /* tables of output regions */
	PTS_TOPA_MODE_SINGLE = 1 /* one contiguous range, base + mask */
};

enum pts_topa_wrap {
	PTS_TOPA_WRAP_DETECT = 0, /* wrapped iff bytes after the write
				   * position are not all zero (as perf) */
	PTS_TOPA_WRAP_NO = 1,
	PTS_TOPA_WRAP_YES = 2
};

/* ------------------------------------------------------------------------ */
/* The linearizer.                                                          */

struct pts_topa;

/* Allocates an empty buffer set. Returns 0 and sets *@out, or
 * -PTS_ERR_NOMEM. */
int pts_topa_new(struct pts_topa **out);
/* Whether @path names a file @t read (the description, or a table,
 * region or memory file it names): the same device and inode. A tool
 * writing output checks it first, since writing over a file @t maps
 * would destroy the input while it is being read. 0 for NULL. */
int pts_topa_reads_file(const struct pts_topa *t, const char *path);

/* Frees @t with the files it mapped; NULL is a no-op. */
void pts_topa_free(struct pts_topa *t);

/* The message of the last error, naming the entry, line or MSR at fault;
 * "" when there was none. Valid until the next call on @t. */
const char *pts_topa_errmsg(const struct pts_topa *t);

/* Places @len bytes at physical address @phys. @data is borrowed: it must
 * stay valid and unchanged while @t is used. @name (copied; may be NULL)
 * appears in error messages. Spans must not overlap.
 * Returns 0, -PTS_ERR_BAD_FORMAT for an overlap or an address overflow,
 * -PTS_ERR_NOMEM. */
int pts_topa_add_memory(struct pts_topa *t, uint64_t phys,
			const uint8_t *data, uint64_t len, const char *name);
/* Declares a ToPA table at @phys (its entries come from a span). The first
 * declared table is where tracing began unless pts_topa_set_start() says
 * otherwise. Returns 0, -PTS_ERR_NOMEM. */
int pts_topa_add_table(struct pts_topa *t, uint64_t phys);
/* Sets the output MSRs; @status may be NULL when unknown. */
void pts_topa_set_msrs(struct pts_topa *t, uint64_t output_base,
		       uint64_t output_mask_ptrs, const uint64_t *status);
void pts_topa_set_mode(struct pts_topa *t, enum pts_topa_mode mode);
void pts_topa_set_wrap(struct pts_topa *t, enum pts_topa_wrap wrap);
void pts_topa_set_start(struct pts_topa *t, uint64_t table_phys);
/* Returns 0, or -PTS_ERR_INVALID unless 32 <= @bits <= 52. */
int pts_topa_set_maxphyaddr(struct pts_topa *t, unsigned bits);

/* Replaces how the files a description names are opened: @opener gets the
 * path (joined with the description's directory) and gives the bytes,
 * which must stay valid while @t is used; it returns 0 or a negative
 * -PTS_ERR_* (-PTS_ERR_IO for a missing file). For buffers held in memory
 * (a hypervisor's, a fuzzer's); NULL restores mapping real files. */
void pts_topa_set_opener(struct pts_topa *t,
			 int (*opener)(void *ctx, const char *path,
				       const uint8_t **data, uint64_t *len),
			 void *ctx);

/* Parses a description (format above) from @text, @len bytes, and applies
 * it to @t. Files are opened relative to @dir (NULL: the current directory)
 * and mapped read-only; they stay mapped until pts_topa_free(). @origin names
 * the text in messages ("desc.txt:3: ...").
 * Returns 0, -PTS_ERR_BAD_FORMAT for a malformed line, -PTS_ERR_IO for a file
 * that cannot be read, -PTS_ERR_NOMEM. */
int pts_topa_parse_desc(struct pts_topa *t, const char *text, size_t len,
			const char *dir, const char *origin);
/* Reads the description file @path and parses it (files relative to its
 * directory). Returns as pts_topa_parse_desc(). */
int pts_topa_load_desc(struct pts_topa *t, const char *path);

/* Walks the tables, validates every entry reached, locates the write
 * position, decides the wrap and prepares the slices in write order. Call
 * after the set-up above and before pts_topa_next(); may be called again
 * after a change.
 * Returns 0.
 * Returns -PTS_ERR_BAD_FORMAT for a malformed table or a missing region: a
 *   reserved bit, a misaligned base, END in entry 0, INT/STOP on an END
 *   entry, an END to no table, an entry or region no span covers.
 * Returns -PTS_ERR_BAD_CONFIG for MSR values that are missing or do not fit
 *   the tables (reserved bits, offset past the region, an entry never
 *   reached), or
 *   wrapped=yes with a buffer that ends in a STOP entry.
 * Returns -PTS_ERR_NOMEM. */
int pts_topa_linearize(struct pts_topa *t);

/* What pts_topa_linearize() found. */
struct pts_topa_info {
	uint64_t buffer_size; /* bytes of all regions reached */
	uint64_t ring_size;   /* bytes that are overwritten on wrap */
	uint64_t write_pos;   /* position of the next write in write order */
	uint64_t linear_size; /* bytes pts_topa_next() hands out */
	uint64_t table;       /* current table (OUTPUT_BASE) */
	uint32_t entry;       /* current entry (MaskOrTableOffset) */
	uint32_t regions;     /* output regions reached */
	uint32_t tables;      /* tables reached */
	uint8_t mode;         /* enum pts_topa_mode */
	uint8_t circular;     /* 1: an END chain leads back (may wrap) */
	uint8_t wrapped;      /* 1: oldest bytes were overwritten */
	uint8_t stop;         /* 1: the chain ends in a STOP entry */
	uint8_t stopped;      /* 1: the write position is at the end of a
			       * STOP region: the last packet may be cut */
};

/* Fills @info. Returns 0, or -PTS_ERR_INVALID before a successful
 * pts_topa_linearize(). */
int pts_topa_get_info(const struct pts_topa *t, struct pts_topa_info *info);

/* Gives the next slice of the linear trace in @chunk (pos 0; valid while
 * @t lives). Returns 1 for a slice, 0 at the end, -PTS_ERR_INVALID before
 * pts_topa_linearize(). */
int pts_topa_next(struct pts_topa *t, struct pts_input *chunk);
/* Starts the slices over from the oldest byte. */
void pts_topa_rewind(struct pts_topa *t);

/* ------------------------------------------------------------------------ */
/* The writer: fills a ToPA layout with a byte stream as hardware would.    */

struct pts_topa_writer;

/* Builds the tables and zero-filled regions of @spec (format above), at
 * physical addresses chosen here. Returns 0 and sets *@out,
 * -PTS_ERR_BAD_CONFIG for a malformed spec (*@out NULL), -PTS_ERR_NOMEM. */
int pts_topa_writer_new(const char *spec, struct pts_topa_writer **out);
/* Frees @w; NULL is a no-op. */
void pts_topa_writer_free(struct pts_topa_writer *w);

/* Appends @len bytes at the write position, wrapping around rings. Returns
 * how many were stored: fewer than @len once a STOP region is full. */
size_t pts_topa_writer_write(struct pts_topa_writer *w, const uint8_t *data,
			     size_t len);

/* Leaves the write pointers at a region's end instead of stepping to the
 * next entry when a write ends there (hardware may do either until the
 * next byte comes). 0 (default) steps. */
void pts_topa_writer_set_lazy(struct pts_topa_writer *w, int lazy);

/* The MSR values hardware would leave after the writes so far. */
void pts_topa_writer_msrs(const struct pts_topa_writer *w,
			  uint64_t *output_base, uint64_t *output_mask_ptrs,
			  uint64_t *status);
/* Bytes stored so far, and the bytes the buffer holds at most (the lead-in
 * plus the ring). */
uint64_t pts_topa_writer_written(const struct pts_topa_writer *w);
uint64_t pts_topa_writer_capacity(const struct pts_topa_writer *w);

/* Hands the tables, regions and MSRs of @w to @t (the spans are borrowed
 * from @w, which must outlive @t's use of them). Returns 0 or what
 * pts_topa_add_memory() returns. */
int pts_topa_writer_export(const struct pts_topa_writer *w,
			   struct pts_topa *t);

/* Writes @prefix.desc plus one file per table (@prefix.tN.bin, binary
 * entries) and region (@prefix.rN.bin); with @inline_tables the entries are
 * written into the description instead. Returns 0 or -PTS_ERR_IO. */
int pts_topa_writer_save(const struct pts_topa_writer *w, const char *prefix,
			 int inline_tables);

#ifdef __cplusplus
}
#endif

#endif /* PTSCOPE_TOPA_H */
