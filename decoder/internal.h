/* decoder/ internals shared between its .c files (not installed). */
#ifndef PTS_DECODER_INTERNAL_H
#define PTS_DECODER_INTERNAL_H

#include <ptscope/decoder.h>

#include <stdbool.h>

/* One contiguous run of code bytes. */
struct pts_mapping {
	uint64_t begin, end; /* [begin, end) */
	const uint8_t *data; /* bytes of begin */
};

/* One address space: mappings sorted by address, never overlapping;
 * symbols (functions and code labels, aliases too: lookups by name find
 * them) sorted by address, the one that names an address first; function
 * entries alone, sorted by address, one per address. */
struct pts_space {
	uint64_t cr3;
	struct pts_mapping *maps;
	size_t nmaps, capmaps;
	struct pts_symbol *syms;
	size_t nsyms, capsyms;
	struct pts_symbol *fns;
	size_t nfns, capfns;
};

/* The mapping of @space that holds @addr, or NULL. */
const struct pts_mapping *pts_space_lookup(const struct pts_space *space,
					   uint64_t addr);

/* The space keyed @cr3, or NULL when there is none. */
const struct pts_space *pts_image_space(const struct pts_image *img,
					uint64_t cr3);

/* Adds symbol @sym to space @cr3 (its name is copied); a
 * @function symbol is also a function entry (pts_image_functions()), a code
 * label is not. Call pts_image_sort_symbols() when a batch is complete. */
int pts_image_add_symbol(struct pts_image *img, uint64_t cr3,
			 const struct pts_symbol *sym, bool function);
/* Sorts and deduplicates the symbols and function entries of space @cr3. */
void pts_image_sort_symbols(struct pts_image *img, uint64_t cr3);

/* Maps @size bytes of a buffer the image set already owns at @addr. */
int pts_image_map(struct pts_image *img, uint64_t cr3, const uint8_t *data,
		  uint64_t size, uint64_t addr);

/* A whole file mapped privately, and which file it is. */
struct pts_mapped_file {
	void *ptr;
	size_t len;
	uint64_t dev, ino;
};

/* Hands a file mapping (munmap'd at free) to the image set, which then
 * knows it reads that file (pts_image_reads_file()). */
int pts_image_keep_mmap(struct pts_image *img,
			const struct pts_mapped_file *m);

/* Maps the whole file @path privately into *@m. On -PTS_ERR_IO errno
 * says why (EISDIR for a directory, ENODEV for any other file that is
 * not a regular one). */
int pts_file_map(const char *path, struct pts_mapped_file *m);

/* ------------------------------------------------------------------------ */
/* Block cache (block.c).                                                    */

/* Most instructions one block holds; longer straight runs are split. */
#define PTS_BLOCK_MAX_INSNS 256
/* Addresses after the end of any run of a block's ips[] that are mapped
 * and initialised (the arena's padding, block.c): a copy may move whole
 * chunks of 8 addresses and read up to 7 past the run. */
#define PTS_BLOCK_IPS_OVERREAD 7
/* Most direct jumps and calls one block follows: bounds the records a
 * careful walk (segment by segment) emits for one block. */
#define PTS_BLOCK_MAX_SEGS 8
/* pts_block.segs[]: the index of a followed direct branch, and whether it
 * is a CALL that pushes its return address. */
#define PTS_SEG_PUSH 0x8000u
#define PTS_SEG_INDEX 0x7fffu

/* A run of classified instructions that needs no trace: it follows direct
 * jumps and calls (the segments) and ends at the first instruction that
 * consults the trace or binds packets (anything but PLAIN, JMP and CALL),
 * at a cap, or before code that does not decode. The walker hands out
 * ips/sizes by pointer, one record per block.
 *
 * The first 64 bytes (a block is 64-aligned) hold all the walker reads
 * while it goes from block to block on TNT bits and TIPs: key, successor
 * links, where the last instruction goes, the run arrays. The rest (hash
 * chain, segments) is for building and for careful walks. */
struct pts_block {
	uint64_t ip;
	struct pts_block *succ[2]; /* [0] fall-through / not taken,
				      [1] taken direct target: the walker
				      follows these instead of hashing */
	struct pts_block *ind;     /* last indirect / return target */
	uint64_t target;           /* last instruction's direct target */
	uint64_t next;             /* address after the last instruction */
	uint64_t cr3;
	uint32_t n;                /* >= 1 */
	uint8_t mode;
	uint8_t last_class;        /* enum pts_iclass of ips[n - 1] */
	uint8_t last_flags;        /* PTS_INSN_F_* of ips[n - 1] */
	uint8_t npush;             /* segments that push */
	/* Cold: building, careful walks, records. */
	uint64_t id;               /* run id base (pts_run_id_new()) */
	uint64_t last_ip;          /* ips[n - 1] */
	uint8_t *sizes;
	struct pts_block *hnext;   /* hash chain */
	uint16_t *segs;            /* @nsegs followed branches, in order */
	struct pts_block **seglink; /* per segment: the block its return
				       address starts (calls; a hint) */
	uint8_t nsegs;
	uint32_t node;             /* its pts_node in the cache */
	/* The @n addresses follow the block (pts_block_ips()). */
	_Alignas(8) uint64_t ips[];
};

/* A block as the coverage walk sees it (cov_fast.c): 32 bytes, in one
 * dense array per cache, so that going from block to block on TNT bits
 * and TIPs touches a working set the CPU caches hold (the blocks
 * themselves, with their addresses, are ~250 bytes apart). Node ids start
 * at 1; 0 is "not known yet". The links are written by that walk alone,
 * in the (space, mode) of their node, so they need no check. */
struct pts_node {
	uint64_t ip;
	uint32_t link[2];  /* conditional branch: as pts_block.succ; else
			      [0] the last indirect or return target */
	uint32_t src_half; /* edge hash halves (coverage_internal.h) of */
	uint32_t dst_half; /* the last instruction and of the first */
	uint32_t extra;    /* the first of its pts_node_extra, if any */
	uint8_t n1;        /* instructions - 1 */
	uint8_t last_class;
	uint8_t nsegs;     /* followed direct branches: extras */
	uint8_t pad;
};

/* Per followed direct branch of a block, then one for a last indirect
 * CALL: the edge (not for the CALL), the return address pushed (0: none)
 * and the node found there by a return, a hint. */
struct pts_node_extra {
	uint64_t ret;
	uint32_t hash;
	uint32_t ret_node;
};

/* &@b->seglink[@k] without loading @b->seglink: the links follow the
 * block's @n addresses (block.c lays a block out so). */
static inline struct pts_block **pts_block_seglink(struct pts_block *b,
						   uint32_t n, unsigned k)
{
	return (struct pts_block **)(b->ips + n) + k;
}

/* A fresh run id base: process-wide, never reused, so that a coverage
 * sink that outlives a walker, or serves several, never mistakes one run
 * for another. Each block takes one. */
uint64_t pts_run_id_new(void);

/* pts_flow_rec.run of instructions [@from, @from + @n) of the block with
 * id @id (@from < PTS_BLOCK_MAX_INSNS): one run id names one sequence of
 * addresses. */
#define PTS_RUN_SHIFT 20
static inline uint64_t pts_run_id(uint64_t id, uint32_t from, uint32_t n)
{
	return id << PTS_RUN_SHIFT | (uint64_t)from << 10 | (n - 1);
}

struct pts_block_cache;

/* A cache bounded to about @bytes (0: 64 MiB). NULL on no memory. */
struct pts_block_cache *pts_block_cache_new(size_t bytes);
void pts_block_cache_free(struct pts_block_cache *cache);
/* Drops every block (pointers into the cache become invalid). */
void pts_block_cache_flush(struct pts_block_cache *cache);
/* True when the cache has reached its bound and should be flushed at the
 * next point where no block is referenced. */
bool pts_block_cache_full(const struct pts_block_cache *cache);
/* @size bytes (16-aligned) that live until the next flush and count
 * against the bound (records derived from blocks). NULL on no
 * memory. */
void *pts_block_cache_alloc(struct pts_block_cache *cache, size_t size);
/* The node array (index by pts_block.node), the block of each node, and
 * the extras (index by pts_node.extra): they move when blocks are built.
 * The first member of struct pts_block_cache, so that the coverage walk
 * reads them inline, without a call per node. */
struct pts_node_arrays {
	struct pts_node *nodes;
	struct pts_block **blocks;
	struct pts_node_extra *extras;
};

static inline struct pts_node *
pts_block_cache_nodes(struct pts_block_cache *cache)
{
	return ((struct pts_node_arrays *)(void *)cache)->nodes;
}

static inline struct pts_node_extra *
pts_block_cache_extras(struct pts_block_cache *cache)
{
	return ((struct pts_node_arrays *)(void *)cache)->extras;
}

static inline struct pts_block *
pts_block_cache_node_block(const struct pts_block_cache *cache, uint32_t id)
{
	const struct pts_node_arrays *a = (const void *)cache;
	return a->blocks[id];
}
/* Number of blocks built with the classifier since creation. */
uint64_t pts_block_cache_built(const struct pts_block_cache *cache);

/* Bytes taken by the ModRM byte at @m (@avail bytes there) with its SIB
 * and displacement; 0 when @avail is too short to tell. */
size_t pts_modrm_len(const uint8_t *m, size_t avail, bool addr16);

/* The length of the instruction at @b (@len bytes there, prefixes
 * included) when it is one of the common ones insn_length.c knows in
 * @mode; 0 otherwise (capstone decides). Never a length capstone would
 * not give. */
int pts_insn_length(const uint8_t *b, size_t len, int mode);

/* The length of the instruction at @b (@len bytes there, prefixes
 * included; its opcode at @b[@op], after the legacy and REX prefixes, @osz
 * and @asz whether 66 and 67 are among them) where capstone 4 and Intel's
 * CPUs part (insn_length_intel.c): VEX and EVEX instructions, 0F 01 and
 * the 0F 38/0F 3A maps, opcodes 8F, 8C and 8E, PREFETCHWT1, 66 before a
 * near branch in 64-bit mode. 0 for other instructions, and when @len is
 * too short to tell; -1 for the encodings Intel's map leaves blank where
 * capstone 4 decodes another vendor's instruction (not an instruction:
 * BAD_INSN). */
int pts_insn_length_intel(const uint8_t *b, size_t len, int mode, size_t op,
			  bool osz, bool asz);

/* Whether the instruction bytes @b start with VMLAUNCH or VMRESUME
 * (classify.c; for erratum SKD022). */
bool pts_insn_is_vmentry(const uint8_t *b, size_t len, int mode);

/* The block at @ip (space @cr3, @mode): from the cache, else decoded from
 * @img with @cls and added. Returns 0 (found) or 1 (built) and sets *@blk;
 * -PTS_ERR_NOMAP or
 * -PTS_ERR_BAD_INSN when not even the first instruction decodes;
 * -PTS_ERR_NOMEM. */
int pts_block_get(struct pts_block_cache *cache, const struct pts_image *img,
		  struct pts_insn_classifier *cls, uint64_t cr3, int mode,
		  uint64_t ip, struct pts_block **blk);

#endif
