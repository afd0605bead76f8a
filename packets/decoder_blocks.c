/* The decoder 64 bytes at a time: the fast path of pts_pkt_count_batch()
 * (`dump --quiet`) and of pts_pkt_skim_batch() (`windows`) on x86-64 CPUs
 * with AVX2 (and faster with AVX-512 VBMI).
 *
 * Two thirds of a capture's packets are one byte long (TNT-8, PAD, CYC
 * without Exp), and the table step of decoder_fast.c spends a chain of two
 * loads on each (the byte, then its size). Here vector compares mark, for a
 * block of 64 bytes, the bytes that are a one-byte packet if a packet starts
 * there, and a table gives every byte's size as a packet start. From a
 * packet start the run of marked bytes is a run of one-byte packets (each
 * is a whole packet, so the next starts right after it): tzcnt finds its
 * end in one step, its packets are counted per kind at the end of the block
 * by popcount, and the packet after it is sized by one load. Bytes inside
 * longer packets get marks and sizes too; they are never read, since the
 * walk only lands on packet starts.
 *
 * The sizes come from the table (by byte permutes with VBMI, worked out
 * from the bytes with AVX2), the CYCs with Exp set from their continuation
 * bytes, the long TNTs from their second byte. What a block cannot size
 * (extended packets but long TNT, MODE, sext-48 IPs, CYCs over 9 bytes,
 * the SKD007 case) goes to pts_fast_rare(); the blocks stop where the table
 * step would: at a packet the slow path must see and after a BBP. The last
 * bytes of a view are left to the table step.
 *
 * Skimming (pts_pkt_skim_batch(), `windows`) walks the same blocks: the
 * runs are made of the one-byte kinds the caller skips, summed up at the
 * end of each block, and of CYCs when handed on (decoded from the runs'
 * bits). A block is walked as counting walks it while its packets are
 * only summed up or handed on (count_skimmed(): their kinds come from
 * byte permutes with VBMI, from compares on AVX2 (classes32()), their
 * sums from masks); another packet is decoded by itself and kept, summed
 * up or collected for the caller's hook (handed on at the end of each
 * block) without a branch on its kind, then the counted walk goes on.
 * CYCs and MTCs go to the hook as bare values when it takes them so
 * (struct pts_skim_timing), not as packet records (6-14% of `windows` on
 * streams with CYC). Each is decoded straight into its place, chosen by
 * the kind its first byte gives.
 *
 * Measured on the benchmark stream (Zen, shared core): the walk must not
 * read a block's sizes right after the stores that made them (the loads
 * then wait for the stores instead of being forwarded from them), so each
 * block is prepared one block ahead: 870 -> 1090 MB/s with VBMI.
 */
#include "packets_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PTS_COUNT_BLOCKS 1
#include <immintrin.h>
#endif

#ifdef PTS_COUNT_BLOCKS

enum { BLOCK = 64 };

/* What a block of 64 bytes says about a packet starting at its byte j. */
struct block {
	uint64_t tnt, pad, cyc; /* bit j: a TNT-8, PAD, CYC without Exp */
	uint64_t one;		/* bit j: any of the three */
	/* The packet's size; 0 for one pts_fast_rare() must see, and at 64,
	 * where a run that ends the block lands. */
	uint8_t size[BLOCK + 1];
	/* With VBMI: run[j] one-byte packets from j (up to the block's end),
	 * and step[j], run[j] plus the size of the packet after them, so
	 * that the walk waits on one load a step (10% faster). */
	uint8_t run[BLOCK], step[BLOCK];
	/* Skimming, by the kind each byte's packet would have (enum
	 * skim_class): the packets a skim must take one by one (kept, or not
	 * sized here), those handed on, those summed up, TIPs, TIPs with an
	 * IP, long TNTs summed up. */
	uint64_t slow, call, skip, tip, tip_ip, tnt64;
};

/* What skimming does with a kind, as far as the counted walk of a block
 * (count_skimmed()) goes: bits of struct walk_out.classes[kind]. A packet
 * of a kind with none of these bits ends the counted walk; so do TNT-8s,
 * which come in runs when skipped, and a 02 that is not a long TNT. */
enum skim_class {
	SC_SUMMED = 1, /* skipped: only counted */
	SC_CALLED = 2, /* handed on */
	SC_TIP = 4,    /* a skipped TIP (SUMMED too) */
	SC_TNT64 = 8   /* a skipped long TNT (summed where the block finds
			  one: the kind says TNT64 for every 02) */
};

/* Which one-byte kinds make the runs the walk crosses in one step. */
enum { RUNS_TNT = 1, RUNS_PAD = 2, RUNS_CYC = 4, RUNS_ALL = 7 };

static inline uint64_t one_bytes(const struct block *k, unsigned runs_of)
{
	return (k->tnt & -(uint64_t)(runs_of & 1)) |
	       (k->pad & -(uint64_t)(runs_of >> 1 & 1)) |
	       (k->cyc & -(uint64_t)(runs_of >> 2 & 1));
}

#define PTS_AVX2 __attribute__((target("avx2,bmi,bmi2,lzcnt,popcnt")))
#define PTS_VBMI                                                              \
	__attribute__((target("avx2,bmi,bmi2,lzcnt,popcnt,avx512f,avx512bw," \
			      "avx512vbmi")))

/* 0..127: byte j of a permute index picks byte j + k of two vectors. */
static const uint8_t iota[128] = {
	0,   1,	  2,   3,   4,	 5,   6,   7,	8,   9,	  10,  11,  12,	 13,
	14,  15,  16,  17,  18,	 19,  20,  21,	22,  23,  24,  25,  26,	 27,
	28,  29,  30,  31,  32,	 33,  34,  35,	36,  37,  38,  39,  40,	 41,
	42,  43,  44,  45,  46,	 47,  48,  49,	50,  51,  52,  53,  54,	 55,
	56,  57,  58,  59,  60,	 61,  62,  63,	64,  65,  66,  67,  68,	 69,
	70,  71,  72,  73,  74,	 75,  76,  77,	78,  79,  80,  81,  82,	 83,
	84,  85,  86,  87,  88,	 89,  90,  91,	92,  93,  94,  95,  96,	 97,
	98,  99,  100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111,
	112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125,
	126, 127};

/* Byte j of the result is byte j + @k of @a then @b. */
static PTS_VBMI inline __m512i shift_in(__m512i a, __m512i b, unsigned k)
{
	return _mm512_permutex2var_epi8(
		a, _mm512_loadu_si512((const void *)(iota + k)), b);
}

/* Runs of @a's nonzero bytes (0 or 1 each) from every byte on, capped at
 * 8, counting @b's bytes after @a's and zeros after @b's: a run of s bytes
 * is extended by the run s bytes on, for s = 1, 2, 4. The runs within @b
 * come back in *@b. */
static PTS_VBMI inline __m512i runs_from(__m512i a, __m512i *b)
{
	const __m512i zero = _mm512_setzero_si512();

	for (unsigned s = 1; s < 8; s <<= 1) {
		const __m512i len = _mm512_set1_epi8((char)s);
		const __m512i on_a = shift_in(a, *b, s);
		const __m512i on_b = shift_in(*b, zero, s);

		a = _mm512_mask_add_epi8(a, _mm512_cmpeq_epi8_mask(a, len), a,
					 on_a);
		*b = _mm512_mask_add_epi8(*b, _mm512_cmpeq_epi8_mask(*b, len),
					  *b, on_b);
	}
	return a;
}

/* Skimming: the class masks of the block of bytes @v, whose packets
 * would have sizes @size (0: not sized here) and which has long TNTs at
 * @tnt64, by the kind of each byte (two byte permutes of tab->kind) and
 * its class (a permute of @classes, enum skim_class by kind). */
static PTS_VBMI inline void classify_vbmi(struct block *k, __m512i v,
					  __m512i size, uint64_t tnt64,
					  const struct pts_fast_tab *tab,
					  const uint8_t *classes)
{
	const __m512i t0 = _mm512_loadu_si512((const void *)tab->kind);
	const __m512i t1 = _mm512_loadu_si512((const void *)(tab->kind + 64));
	const __m512i t2 = _mm512_loadu_si512((const void *)(tab->kind + 128));
	const __m512i t3 = _mm512_loadu_si512((const void *)(tab->kind + 192));
	const __m512i kind = _mm512_mask_blend_epi8(
		_mm512_movepi8_mask(v), _mm512_permutex2var_epi8(t0, v, t1),
		_mm512_permutex2var_epi8(t2, v, t3));
	const __m512i cls = _mm512_permutexvar_epi8(
		kind, _mm512_loadu_si512((const void *)classes));
	/* the kind says TNT64 for every 02, a long TNT only where 02 a3 */
	const uint64_t t64 =
		_mm512_test_epi8_mask(cls, _mm512_set1_epi8(SC_TNT64)) & tnt64;
	const uint64_t unsized =
		_mm512_cmpeq_epi8_mask(size, _mm512_setzero_si512());

	k->call = _mm512_test_epi8_mask(cls, _mm512_set1_epi8(SC_CALLED));
	k->skip = _mm512_test_epi8_mask(cls, _mm512_set1_epi8(SC_SUMMED)) | t64;
	k->tip = _mm512_test_epi8_mask(cls, _mm512_set1_epi8(SC_TIP));
	/* IPBytes (bits 7:5) 0: the IP is suppressed */
	k->tip_ip = k->tip & _mm512_cmpge_epu8_mask(v, _mm512_set1_epi8(0x20));
	k->tnt64 = t64;
	k->slow = ~(k->call | k->skip) | unsized;
}

/* The block at @p (which has 80 bytes: a packet at byte 63 may reach
 * 16 bytes on), by AVX-512: masks by compares, sizes by two 128-entry
 * byte permutes and a blend on bit 7, the CYCs with Exp set by the runs of
 * continuation bytes for every byte at once. */
static PTS_VBMI void prepare_vbmi(struct block *k, const uint8_t *p,
				  const struct pts_fast_tab *tab,
				  unsigned runs_of, const uint8_t *classes)
{
	const __m512i v = _mm512_loadu_si512((const void *)p);
	/* bytes 64..79; the rest may be past the view, so not read */
	const __m512i w = _mm512_maskz_loadu_epi8(0xffff, p + BLOCK);
	const __m512i one = _mm512_set1_epi8(1);
	const __m512i low3 = _mm512_and_si512(v, _mm512_set1_epi8(7));
	const uint64_t odd = _mm512_test_epi8_mask(v, one);
	const uint64_t ext = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(2));
	/* a long TNT: 02 a3 (the last byte's next one is out of sight) */
	const uint64_t tnt64 =
		ext & _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8((char)0xa3)) >>
			      1;
	/* a CYC with Exp set: bits 2:0 = 111; left to pts_fast_rare() in
	 * the SKD007 case (an OVF may follow as its next byte 02) */
	const uint64_t cycx = _mm512_cmpeq_epi8_mask(low3, _mm512_set1_epi8(7)) &
			      ~(tab->skd007 ? ext >> 1 | 1ull << 63 : 0);
	const __m512i t0 = _mm512_loadu_si512((const void *)tab->size);
	const __m512i t1 = _mm512_loadu_si512((const void *)(tab->size + 64));
	const __m512i t2 = _mm512_loadu_si512((const void *)(tab->size + 128));
	const __m512i t3 = _mm512_loadu_si512((const void *)(tab->size + 192));
	__m512i size = _mm512_mask_blend_epi8(
		_mm512_movepi8_mask(v), _mm512_permutex2var_epi8(t0, v, t1),
		_mm512_permutex2var_epi8(t2, v, t3));
	const __m512i zero = _mm512_setzero_si512();
	__m512i cont_w = _mm512_and_si512(w, one), more, run;

	k->pad = _mm512_cmpeq_epi8_mask(v, zero);
	/* every even byte but PAD and the extended opcode is a TNT-8 */
	k->tnt = ~odd & ~k->pad & ~ext;
	k->cyc = _mm512_cmpeq_epi8_mask(low3, _mm512_set1_epi8(3));
	k->one = one_bytes(k, runs_of);

	/* A CYC goes on while its bytes have bit 0 set: after its first
	 * byte, a run of up to 7 such bytes and the one that ends it. */
	more = runs_from(_mm512_and_si512(v, one), &cont_w);
	more = shift_in(more, cont_w, 1);
	size = _mm512_mask_add_epi8(
		size, cycx & _mm512_cmplt_epu8_mask(more, _mm512_set1_epi8(8)),
		more, _mm512_set1_epi8(2));
	size = _mm512_mask_mov_epi8(size, tnt64, _mm512_set1_epi8(8));
	if (classes)
		classify_vbmi(k, v, size, tnt64, tab, classes);

	/* run[] by the same doubling up to 64, zeros past the block; step[]
	 * adds the size at j + run[j] (0 at 64: the zero vector) */
	run = _mm512_maskz_mov_epi8(k->one, one);
	for (unsigned s = 1; s < BLOCK; s <<= 1)
		run = _mm512_mask_add_epi8(
			run,
			_mm512_cmpeq_epi8_mask(run, _mm512_set1_epi8((char)s)),
			run, shift_in(run, zero, s));
	_mm512_storeu_si512((void *)k->run, run);
	_mm512_storeu_si512(
		(void *)k->step,
		_mm512_add_epi8(run,
				_mm512_permutex2var_epi8(
					size,
					_mm512_add_epi8(run, _mm512_loadu_si512(
								     iota)),
					zero)));
}

static PTS_AVX2 inline uint64_t mask64(__m256i lo, __m256i hi)
{
	return (uint64_t)(uint32_t)_mm256_movemask_epi8(lo) |
	       (uint64_t)(uint32_t)_mm256_movemask_epi8(hi) << 32;
}

static PTS_AVX2 inline __m256i load32(const uint8_t *p)
{
	return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

static PTS_AVX2 inline uint64_t equal64(__m256i lo, __m256i hi, char c)
{
	const __m256i x = _mm256_set1_epi8(c);

	return mask64(_mm256_cmpeq_epi8(lo, x), _mm256_cmpeq_epi8(hi, x));
}

/* Bit 0 of 64 bytes. */
static PTS_AVX2 inline uint64_t odd64(__m256i lo, __m256i hi)
{
	/* moved to bit 7, where movemask reads it */
	return mask64(_mm256_slli_epi16(lo, 7), _mm256_slli_epi16(hi, 7));
}

/* tab->size[] of 32 bytes, worked out from the bytes (AVX2 has no byte
 * permute over 256 entries): 1 for TNT-8, PAD and CYC without Exp; for the
 * IP packets (opcode bits 4:0 01, 0d, 11, 1d) 1 + the payload bytes of
 * IPBytes (bits 7:5; 0 for sext-48 and the reserved values, left to
 * pts_fast_rare()); 2 for MTC, 8 for TSC; 0 for the rest. Checked against
 * the table for every byte by test_decoder_fast. */
static PTS_AVX2 inline __m256i table_sizes(__m256i v)
{
	const __m256i one = _mm256_set1_epi8(1);
	const __m256i low5 = _mm256_and_si256(v, _mm256_set1_epi8(0x1f));
	const __m256i ipc = _mm256_and_si256(_mm256_srli_epi16(v, 5),
					     _mm256_set1_epi8(7));
	const __m256i ip_size = _mm256_shuffle_epi8(
		_mm256_setr_epi8(1, 3, 5, 0, 7, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0,
				 0, 1, 3, 5, 0, 7, 0, 9, 0, 0, 0, 0, 0, 0, 0,
				 0, 0),
		ipc);
	const __m256i is_ip = _mm256_or_si256(
		_mm256_or_si256(_mm256_cmpeq_epi8(low5, one),
				_mm256_cmpeq_epi8(low5, _mm256_set1_epi8(0x0d))),
		_mm256_or_si256(_mm256_cmpeq_epi8(low5, _mm256_set1_epi8(0x11)),
				_mm256_cmpeq_epi8(low5,
						  _mm256_set1_epi8(0x1d))));
	const __m256i ext = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(PTS_OPC_EXT));
	const __m256i even =
		_mm256_cmpeq_epi8(_mm256_and_si256(v, one), _mm256_setzero_si256());
	const __m256i short_cyc =
		_mm256_cmpeq_epi8(_mm256_and_si256(v, _mm256_set1_epi8(7)),
				  _mm256_set1_epi8(3));
	const __m256i one_byte = _mm256_or_si256(
		_mm256_andnot_si256(ext, even), short_cyc); /* PAD is even */
	__m256i size = _mm256_and_si256(is_ip, ip_size);

	size = _mm256_or_si256(size, _mm256_and_si256(one_byte, one));
	size = _mm256_or_si256(
		size, _mm256_and_si256(
			      _mm256_cmpeq_epi8(v, _mm256_set1_epi8(PTS_OPC_MTC)),
			      _mm256_set1_epi8(2)));
	return _mm256_or_si256(
		size,
		_mm256_and_si256(_mm256_cmpeq_epi8(v, _mm256_set1_epi8(PTS_OPC_TSC)),
				 _mm256_set1_epi8(8)));
}

/* Skimming on AVX2: enum skim_class of the kind of each of the 32 bytes
 * @v (as tab->kind gives it, by compares: AVX2 has no byte permute over
 * 64 entries), from @classes by kind. Bytes of other kinds get 0; the
 * table does not size them, so they are slow anyway. So do TNT-8s (class
 * 0 always: when skipped, runs cross them). */
static PTS_AVX2 inline __m256i classes32(__m256i v, const uint8_t *classes)
{
	const __m256i zero = _mm256_setzero_si256();
	const __m256i low5 = _mm256_and_si256(v, _mm256_set1_epi8(0x1f));
	/* IPBytes (bits 7:5) the table decodes: 0, 1, 2, 4, 6 */
	const __m256i ipc_ok = _mm256_shuffle_epi8(
		_mm256_setr_epi8(-1, -1, -1, 0, -1, 0, -1, 0, 0, 0, 0, 0, 0, 0,
				 0, 0, -1, -1, -1, 0, -1, 0, -1, 0, 0, 0, 0, 0,
				 0, 0, 0, 0),
		_mm256_and_si256(_mm256_srli_epi16(v, 5), _mm256_set1_epi8(7)));
	const __m256i pad = _mm256_cmpeq_epi8(v, zero);
	const __m256i ext = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(PTS_OPC_EXT));
	const __m256i three = _mm256_set1_epi8(3);
	const __m256i cyc =
		_mm256_cmpeq_epi8(_mm256_and_si256(v, three), three);
	/* the bytes of each kind the table gives a first byte (@kinds) */
	const __m256i mask[9] = {
		pad,
		cyc,
		ext, /* every 02 is a TNT64 to the table */
		_mm256_and_si256(ipc_ok, _mm256_cmpeq_epi8(
						 low5, _mm256_set1_epi8(0x0d))),
		_mm256_and_si256(ipc_ok, _mm256_cmpeq_epi8(
						 low5, _mm256_set1_epi8(0x11))),
		_mm256_and_si256(ipc_ok, _mm256_cmpeq_epi8(
						 low5, _mm256_set1_epi8(0x01))),
		_mm256_and_si256(ipc_ok, _mm256_cmpeq_epi8(
						 low5, _mm256_set1_epi8(0x1d))),
		_mm256_cmpeq_epi8(v, _mm256_set1_epi8(PTS_OPC_MTC)),
		_mm256_cmpeq_epi8(v, _mm256_set1_epi8(PTS_OPC_TSC))};
	static const uint8_t kinds[9] = {
		PTS_PKT_PAD,	 PTS_PKT_CYC,	  PTS_PKT_TNT64,
		PTS_PKT_TIP,	 PTS_PKT_TIP_PGE, PTS_PKT_TIP_PGD,
		PTS_PKT_FUP,	 PTS_PKT_MTC,	  PTS_PKT_TSC};
	__m256i cls = zero;

	for (int i = 0; i < 9; i++) {
		const __m256i c = _mm256_set1_epi8((char)classes[kinds[i]]);

		cls = _mm256_or_si256(cls, _mm256_and_si256(mask[i], c));
	}
	return cls;
}

/* Bit @bit of each byte of @lo, @hi (0..7) as a 64-bit mask. */
static PTS_AVX2 inline uint64_t bit64(__m256i lo, __m256i hi, int bit)
{
	const __m128i by = _mm_cvtsi32_si128(7 - bit);

	return mask64(_mm256_sll_epi16(lo, by), _mm256_sll_epi16(hi, by));
}

/* Skimming: the class masks of the block of bytes @lo, @hi (as
 * classify_vbmi() makes them), whose packets would have sizes 0 at
 * @unsized and which has long TNTs at @tnt64. */
static PTS_AVX2 inline void classify_avx2(struct block *k, __m256i lo,
					  __m256i hi, uint64_t unsized,
					  uint64_t tnt64,
					  const uint8_t *classes)
{
	const __m256i clo = classes32(lo, classes);
	const __m256i chi = classes32(hi, classes);
	const __m256i ipc = _mm256_set1_epi8((char)0xe0);
	const __m256i zero = _mm256_setzero_si256();
	const uint64_t t64 = bit64(clo, chi, 3) & tnt64; /* SC_TNT64 */

	k->call = bit64(clo, chi, 1);		/* SC_CALLED */
	k->skip = bit64(clo, chi, 0) | t64;	/* SC_SUMMED */
	k->tip = bit64(clo, chi, 2);		/* SC_TIP */
	/* IPBytes (bits 7:5) 0: the IP is suppressed */
	k->tip_ip = k->tip &
		    ~mask64(_mm256_cmpeq_epi8(_mm256_and_si256(lo, ipc), zero),
			    _mm256_cmpeq_epi8(_mm256_and_si256(hi, ipc), zero));
	k->tnt64 = t64;
	k->slow = ~(k->call | k->skip) | unsized;
}

/* The block at @p (80 bytes) by AVX2: masks by compares, sizes by
 * table_sizes() (a table load per byte was 600-640 MB/s, this 770), then
 * the few CYCs with Exp set and long TNTs one by one, from the masks;
 * skimming (@classes), the class masks. */
static PTS_AVX2 void prepare_avx2(struct block *k, const uint8_t *p,
				  const struct pts_fast_tab *tab,
				  unsigned runs_of, const uint8_t *classes)
{
	const __m256i lo = load32(p), hi = load32(p + 32);
	const __m256i seven = _mm256_set1_epi8(7);
	const __m256i lo3 = _mm256_and_si256(lo, seven);
	const __m256i hi3 = _mm256_and_si256(hi, seven);
	const uint64_t odd = odd64(lo, hi);
	/* bit 0 of bytes 64..79, as bits 15:0 */
	const uint64_t odd_next = odd64(load32(p + 16), load32(p + 48)) >> 48;
	const uint64_t ext = equal64(lo, hi, 2);
	const uint64_t tnt64 = ext & equal64(lo, hi, (char)0xa3) >> 1;
	const uint64_t cycx = equal64(lo3, hi3, 7) &
			      ~(tab->skd007 ? ext >> 1 | 1ull << 63 : 0);

	const __m256i size_lo = table_sizes(lo), size_hi = table_sizes(hi);
	const __m256i zero = _mm256_setzero_si256();
	/* the bytes sized 0 so far: the loops below size some */
	uint64_t unsized = mask64(_mm256_cmpeq_epi8(size_lo, zero),
				  _mm256_cmpeq_epi8(size_hi, zero)) &
			   ~tnt64;

	k->pad = equal64(lo, hi, 0);
	k->tnt = ~odd & ~k->pad & ~ext;
	k->cyc = equal64(lo3, hi3, 3);
	k->one = one_bytes(k, runs_of);
	_mm256_storeu_si256((__m256i *)(void *)k->size, size_lo);
	_mm256_storeu_si256((__m256i *)(void *)(k->size + 32), size_hi);
	k->size[BLOCK] = 0;
	for (uint64_t m = cycx; m; m &= m - 1) {
		const unsigned j = (unsigned)_tzcnt_u64(m);
		/* bit x: bit 0 of byte j + 1 + x */
		const uint64_t win = odd >> j >> 1 | odd_next << (63 - j);
		const unsigned t = (unsigned)_tzcnt_u64(~win);

		k->size[j] = (uint8_t)(t < 8 ? t + 2 : 0);
		unsized &= ~((uint64_t)(t < 8) << j);
	}
	for (uint64_t m = tnt64; m; m &= m - 1)
		k->size[_tzcnt_u64(m)] = 8;
	if (classes)
		classify_avx2(k, lo, hi, unsized, tnt64, classes);
}

/* The block at @p, by VBMI or AVX2 code, with runs of the one-byte kinds
 * @runs_of says. */
static PTS_AVX2 inline void prepare(struct block *k, const uint8_t *p,
				    const struct pts_fast_tab *tab,
				    unsigned runs_of, const uint8_t *classes,
				    const int vbmi)
{
	if (vbmi)
		prepare_vbmi(k, p, tab, runs_of, classes);
	else
		prepare_avx2(k, p, tab, runs_of, classes);
}

/* A long TNT at @q (next 8 bytes @raw) without its stop bit: an error for
 * the slow path (the block gives it 8 bytes: checked apart, off the chain
 * from one packet start to the next). */
static inline int tnt64_bad(const uint8_t *q, uint64_t raw)
{
	return q[0] == PTS_OPC_EXT && (raw >> 8 & 0xffffffffffffull) < 2;
}

/* From the packet at byte @i (< 64): the one-byte packets after it (*@r)
 * and the size of the packet after them (*@n, 0 at the block's end). */
static PTS_AVX2 inline void run_at(const struct block *k, unsigned i,
				   unsigned *r, unsigned *n, const int vbmi)
{
	if (vbmi) {
		*r = k->run[i];
		*n = k->step[i] - *r;
	} else {
		*r = (unsigned)_tzcnt_u64(~(k->one >> i));
		*n = k->size[i + *r];
	}
}


/* Whether a block at @b can be walked: it and the next one (prepared
 * ahead) are in the view, with the bytes a packet at its end may take, and
 * the batch has @room for all the packets that may start in it. */
static inline int walkable(const uint8_t *b, const uint8_t *dend, int room)
{
	return dend - b >= 2 * BLOCK + PTS_PKT_MAX && room >= BLOCK;
}

/* On to the next block: the packet at b + i is at i - 64 from it, the
 * block prepared ahead is the current one. */
static inline void next_block(const uint8_t **b, unsigned *i, int *cur)
{
	*b += BLOCK;
	*i -= BLOCK;
	*cur ^= 1;
}

/* A walk went over @n bytes of @in: the view, the stream offset, the last
 * IP and the PEBS block context move on. */
static inline void walked(struct pts_input *in, uint64_t *offp, ptrdiff_t n,
			  uint64_t *lipp, uint64_t lip, uint8_t *blk,
			  uint8_t bk)
{
	in->pos += (size_t)n;
	*offp += (uint64_t)n;
	*lipp = lip;
	*blk = bk;
}

/* 0xff in each byte j of the result whose bit j of @m is set. */
static PTS_AVX2 inline __m256i bytes_of_bits(uint32_t m)
{
	const __m256i bit =
		_mm256_set1_epi64x((long long)0x8040201008040201ull);
	/* byte j gets byte j / 8 of @m (each 128-bit lane holds all four) */
	const __m256i spread = _mm256_shuffle_epi8(
		_mm256_set1_epi32((int)m),
		_mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
				 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3,
				 3));

	return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
}

/* n for the 32 TNT-8 bytes @v (a TNT-8 byte's stop bit is at bit n + 1):
 * the top bit's place by nibble tables, the high nibble's when it has
 * one (they are larger than any of the low nibble's). */
static PTS_AVX2 inline __m256i tnt_results32(__m256i v)
{
	const __m256i low = _mm256_set1_epi8(0x0f);
	const __m256i by_high = _mm256_setr_epi8(
		0, 3, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6, /* lane 2: */
		0, 3, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6);
	const __m256i by_low = _mm256_setr_epi8(
		0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, /* lane 2: */
		0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2);

	const __m256i high = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);

	return _mm256_max_epu8(_mm256_shuffle_epi8(by_high, high),
			       _mm256_shuffle_epi8(by_low,
						   _mm256_and_si256(v, low)));
}

/* The results of the TNT-8s at the bytes of @b that @mask marks: by
 * nibble tables, summed by absolute differences (one by one, they were a
 * sixth of the AVX2 skim). */
static PTS_AVX2 inline uint64_t tnt_results_avx2(const uint8_t *b,
						 uint64_t mask)
{
	const uint32_t mask_hi = (uint32_t)(mask >> 32);
	const __m256i lo = _mm256_and_si256(tnt_results32(load32(b)),
					    bytes_of_bits((uint32_t)mask));
	const __m256i hi = _mm256_and_si256(tnt_results32(load32(b + 32)),
					    bytes_of_bits(mask_hi));
	const __m256i sum = _mm256_sad_epu8(_mm256_add_epi8(lo, hi),
					    _mm256_setzero_si256());
	const __m128i half = _mm_add_epi64(_mm256_castsi256_si128(sum),
					   _mm256_extracti128_si256(sum, 1));

	return (uint64_t)_mm_cvtsi128_si64(half) +
	       (uint64_t)_mm_extract_epi64(half, 1);
}

/* n for every TNT-8 byte x >= 4 by x >> 2 (the stop bit is at bit n + 1,
 * so at bit n - 1 of x >> 2), and 0 for x >> 2 = 0. */
static const uint8_t tnt_results_by_quarter[64] = {
	0, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4,
	5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
	6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6,
	6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6};

/* The same for the whole block at once: a byte permute gives every byte's
 * results, the mask keeps the TNT-8s, a sum of absolute differences adds
 * them up. A skim crosses about 26 TNT-8s a block in a capture: one by
 * one, they were a fifth of `windows`' time on a stream without CYC. */
static PTS_VBMI inline uint64_t tnt_results_vbmi(const uint8_t *b,
						 uint64_t mask)
{
	/* x >> 2 for every byte by a 16-bit shift: the byte permute reads
	 * the low 6 bits of each index, not the 2 the next byte shifts in */
	const __m512i quarter =
		_mm512_srli_epi16(_mm512_loadu_si512((const void *)b), 2);
	const __m512i n = _mm512_maskz_permutexvar_epi8(
		mask, quarter,
		_mm512_loadu_si512((const void *)tnt_results_by_quarter));

	return (uint64_t)_mm512_reduce_add_epi64(
		_mm512_sad_epu8(n, _mm512_setzero_si512()));
}

static PTS_AVX2 inline uint64_t tnt_results(const uint8_t *b, uint64_t mask,
					    const int vbmi)
{
	return vbmi ? tnt_results_vbmi(b, mask) : tnt_results_avx2(b, mask);
}

/* What a walk gives: @counts (counting), or packets into @out, what it
 * skips into @sum and what it hands on into @calls (@ncalls of them, to
 * @call at the end of each block; NULL when no kind is handed on) by
 * @actions (skimming; *@stopped after a STOP packet). */
struct walk_out {
	uint64_t *counts;
	struct pts_packet *out;
	const uint8_t *actions;
	struct pts_skim sum;
	int *stopped;
	const struct pts_skim_call *call;
	struct pts_packet *calls;
	int ncalls;
	/* Skimming with VBMI: enum skim_class by kind (64 entries). */
	const uint8_t *classes;
	/* With @call->timing: the block's items (struct pts_skim_timing),
	 * @nitems of them; @values NULL without it. */
	uint64_t *values;
	uint64_t item_mtc, item_pkt;
	int nitems;
};

/* The packets a block handed on go to the caller's hook. */
static inline void flush_calls(struct walk_out *w)
{
	if (w->values) {
		const struct pts_skim_timing t = {w->values, w->item_mtc,
						  w->item_pkt, w->calls,
						  w->nitems};

		w->call->timing(w->call->ctx, &t);
	} else {
		w->call->fn(w->call->ctx, w->calls, w->ncalls);
	}
	w->ncalls = w->nitems = 0;
	w->item_mtc = w->item_pkt = 0;
}

/* Skimming: where the packet at @q goes, by the kind its first byte
 * gives (exact for all but the packets pts_fast_rare() decodes): to
 * @call_at when handed on, else to @keep_at. */
static inline struct pts_packet *skim_slot(const struct pts_fast_tab *tab,
					   const struct walk_out *w,
					   const uint8_t *q,
					   struct pts_packet *keep_at,
					   struct pts_packet *call_at)
{
	const unsigned guess = (uint8_t)tab->ops[q[0]].hdr;

	return w->actions[guess] == PTS_SKIM_CALL ? call_at : keep_at;
}

/* Skimming, the packet @pk just decoded at skim_slot(), whose words at
 * bytes 8 and 24 are @hdr and @w1 (as pts_fast_put() takes them; passed
 * in registers, not loaded back from the stores just made): kept (at
 * @keep_at, *@got + 1), summed up or handed on (at @call_at), without a
 * branch on its kind. Returns 1 when it ends the batch. */
static inline int skim_one(struct walk_out *w, uint64_t hdr, uint64_t w1,
			   const struct pts_packet *pk,
			   struct pts_packet *keep_at,
			   struct pts_packet *call_at, int *got)
{
	const unsigned kind = (uint8_t)hdr;
	const unsigned action = w->actions[kind];
	const uint64_t skip = -(uint64_t)(action == PTS_SKIM_SKIP);
	struct pts_packet *const at =
		action == PTS_SKIM_CALL ? call_at : keep_at;

	if (__builtin_expect(at != pk, 0)) /* a first byte of many kinds */
		*at = *pk;
	const uint64_t is_tnt = skip & -(uint64_t)(kind == PTS_PKT_TNT8 ||
						   kind == PTS_PKT_TNT64);
	uint64_t is_tip = skip & -(uint64_t)(kind == PTS_PKT_TIP);

	w->sum.packets += skip & 1;
	w->sum.tnt_packets += is_tnt & 1;
	w->sum.tnt_bits += is_tnt & (uint8_t)w1;	 /* u.tnt.count */
	w->sum.tips += is_tip & 1;
	is_tip &= -(uint64_t)((uint8_t)(hdr >> 16) != PTS_IPC_SUPPRESSED);
	w->sum.last_ip = (is_tip & w1) | (~is_tip & w->sum.last_ip); /* u.ip.ip */
	w->sum.has_ip |= (int)(is_tip & 1);
	const uint64_t called = action == PTS_SKIM_CALL;

	w->ncalls += (int)called;
	w->item_pkt |= called << w->nitems; /* as an item too */
	w->nitems += (int)called;
	*got += action == PTS_SKIM_KEEP || action == PTS_SKIM_STOP;
	if (__builtin_expect(action != PTS_SKIM_STOP, 1))
		return 0;
	*w->stopped = 1;
	return 1;
}

/* A CYC of @n bytes (1..9, sized by the block) with first byte @c and
 * the 8 bytes after it @raw: its header word and its value. */
static inline uint64_t cyc_hdr(unsigned n)
{
	return PTS_PKT_CYC | (uint64_t)n << 8;
}

static PTS_AVX2 inline uint64_t cyc_value(uint8_t c, uint64_t raw,
					  unsigned n)
{
	return pts_cyc_value(c, _bzhi_u64(raw, 8 * (n - 1)));
}

/* The packet at @q (next 8 bytes @raw) that the block sized @n (0: it
 * could not), decoded into @pk: by the table, for a CYC the block sized
 * from its bytes (skimming keeps CYCs for the clock: a tenth of a
 * capture's packets), else by pts_fast_rare(). Returns its size, 0 when
 * the slow path must see it; the packet's words at bytes 8 and 24 go to
 * *@hdr and *@w1 too. */
static PTS_AVX2 inline unsigned decode_one(const struct pts_fast_tab *tab,
					   const uint8_t *q, uint64_t raw,
					   unsigned n, const uint8_t *dend,
					   uint64_t off, uint64_t *lip,
					   uint8_t *bk, struct pts_packet *pk,
					   uint64_t *hdr, uint64_t *w1)
{
	if (__builtin_expect(n != 0 && tab->size[q[0]] != 0, 1)) {
		const struct pts_fast_op *op = tab->ops + q[0];

		*lip = ((*lip ^ raw) & op->keep) ^ raw;
		*hdr = op->hdr;
		*w1 = op->c1 | (*lip & op->sel);
		pts_fast_put(pk, off, *hdr, op->c0 | (raw & op->mask), *w1);
		return n;
	}
	if (n != 0 && (q[0] & 7) == 7) {
		*hdr = cyc_hdr(n);
		*w1 = 0;
		pts_fast_put(pk, off, *hdr, cyc_value(q[0], raw, n), *w1);
		return n;
	}
	n = pts_fast_rare(tab, q, (size_t)(dend - q), off, lip, bk, pk);
	memcpy(hdr, (const unsigned char *)pk + 8, 8);
	memcpy(w1, (const unsigned char *)pk + 24, 8);
	return n;
}

/* All ones when @c is a CYC's first byte (bits 1:0 = 11: a CYC and
 * nothing else), else 0. */
static inline uint64_t cyc_mask(uint8_t c)
{
	return -(uint64_t)((c & 3) == 3);
}

/* A packet handed on at @q (next 8 bytes @raw), which the block sized @n,
 * decoded into @pk without a branch on its kind: nearly all are CYCs and
 * MTCs, in no order (a branch on them mispredicts often). Returns 0,
 * writing nothing, when decode_one() must take it (a packet neither the
 * block nor the table sizes). */
static PTS_AVX2 inline int decode_timing(const struct pts_fast_tab *tab,
					 const uint8_t *q, uint64_t raw,
					 unsigned n, uint64_t off, uint64_t lip,
					 struct pts_packet *pk)
{
	const struct pts_fast_op *op = tab->ops + q[0];
	const uint64_t cyc = cyc_mask(q[0]);

	if (!n || !(cyc | tab->size[q[0]]))
		return 0;
	pts_fast_put(pk, off, (cyc & cyc_hdr(n)) | (~cyc & op->hdr),
		     (cyc & cyc_value(q[0], raw, n)) |
			     (~cyc & (op->c0 | (raw & op->mask))),
		     ~cyc & (op->c1 | (lip & op->sel)));
	return 1;
}

/* Skimming: the packets of block @k (at @b, stream offset @off) at the
 * bytes @starts (packets the walk stepped on) and @ones (one-byte packets
 * in the runs it crossed) go to the caller's hook, in stream order: CYCs
 * and MTCs as values when it takes them so, the rest as packets.
 * @lip: the last IP there (not changed by the kinds handed on). The
 * sizes of @starts come from k->step with VBMI, else from k->size. */
static PTS_AVX2 inline void hand_on(const struct pts_fast_tab *tab,
				    struct walk_out *w, const struct block *k,
				    const uint8_t *b, const uint8_t *dend,
				    uint64_t off, uint64_t starts, uint64_t ones,
				    uint64_t lip, const int vbmi)
{
	for (uint64_t m = starts | ones; m; m &= m - 1) {
		const unsigned j = (unsigned)_tzcnt_u64(m);
		const uint8_t *const q = b + j;
		const uint64_t raw = pts_load_le64(q + 1);
		/* out of a run, a packet's step is its size (by a mask: a
		 * branch on it mispredicts as often) */
		const unsigned one = (unsigned)(ones >> j & 1);
		const unsigned n =
			one | ((vbmi ? k->step[j] : k->size[j]) & (one - 1));
		const uint64_t cyc = cyc_mask(q[0]);
		const uint64_t mtc = q[0] == PTS_OPC_MTC;

		if (w->values && __builtin_expect((cyc | mtc) != 0, 1)) {
			/* by masks: CYCs and MTCs come in no order */
			w->values[w->nitems] = (cyc & cyc_value(q[0], raw, n)) |
					       (~cyc & (uint8_t)raw);
			w->item_mtc |= mtc << w->nitems;
			w->nitems++;
			continue;
		}
		w->item_pkt |= 1ull << w->nitems++;
		struct pts_packet *const pk = w->calls + w->ncalls++;

		if (__builtin_expect(!decode_timing(tab, q, raw, n, off + j,
						    lip, pk), 0)) {
			uint64_t hdr, w1, scratch_lip = lip;
			uint8_t bk = 0;

			decode_one(tab, q, raw, n, dend, off + j, &scratch_lip,
				   &bk, pk, &hdr, &w1);
		}
	}
}

/* Skimming: the packets of block @k (at @b, stream offset @off)
 * from *@i on, walked as counting walks them (a step waits on one load;
 * the runs crossed go to *@runs, the last IP to *@lip), as long as each is
 * summed up or handed on. Their sums come from the block's class masks,
 * the packets handed on are decoded afterwards from their positions. Stops
 * at the first packet that skim_one() must take (then *@i is where it
 * starts); returns 1 when it got to the end of the block instead. @dend:
 * the end of the view. */
static PTS_AVX2 PTS_ALWAYS_INLINE int
count_skimmed(const struct pts_fast_tab *tab, struct walk_out *w,
	      const struct block *k, const uint8_t *b, const uint8_t *dend,
	      unsigned *ip, uint64_t *lipp, uint64_t *runsp, uint64_t off,
	      uint64_t called_ones, const int vbmi)
{
	uint64_t starts = 0, lip = *lipp, runs = *runsp, tip_lip = 0;
	unsigned i = *ip;
	int end = 0;

	for (;;) {
		unsigned r, n;

		run_at(k, i, &r, &n, vbmi);
		runs |= _bzhi_u64(~0ull, r) << i;
		i += r;
		if (i >= BLOCK) {
			end = 1;
			break;
		}
		const uint8_t *const q = b + i;
		const uint64_t raw = pts_load_le64(q + 1);

		if ((k->slow >> i & 1) || tnt64_bad(q, raw))
			break;
		starts |= 1ull << i;
		lip = ((lip ^ raw) & tab->ops[q[0]].keep) ^ raw;
		/* other packets summed or handed on may carry IPs too */
		tip_lip = (k->tip_ip >> i & 1) ? lip : tip_lip;
		i += n;
		if (i >= BLOCK) {
			end = 1;
			break;
		}
	}
	const uint64_t summed = starts & k->skip, tips = starts & k->tip;

	w->sum.packets += (uint64_t)_mm_popcnt_u64(summed);
	w->sum.tips += (uint64_t)_mm_popcnt_u64(tips);
	if (starts & k->tip_ip) {
		w->sum.last_ip = tip_lip;
		w->sum.has_ip = 1;
	}
	for (uint64_t m = starts & k->tnt64; m; m &= m - 1) {
		const uint8_t *const q = b + _tzcnt_u64(m);

		w->sum.tnt_packets++;
		w->sum.tnt_bits += pts_top_bit(pts_load_le64(q + 2) &
					       0xffffffffffffull);
	}
	hand_on(tab, w, k, b, dend, off, starts & k->call,
		runs & ~*runsp & called_ones, lip, vbmi);
	*ip = i;
	*lipp = lip;
	*runsp = runs;
	return end;
}

/* The walk, inlined with @vbmi and @skimming constant: counting (only
 * @w->counts[kind] += 1 for each packet; the runs are of all one-byte
 * kinds) or skimming (the runs are of the one-byte kinds skipped). */
static PTS_AVX2 PTS_ALWAYS_INLINE int walk(const struct pts_fast_tab *tab,
					   struct pts_input *in,
					   uint64_t *offp, uint64_t *lipp,
					   uint8_t *blk, struct walk_out *out,
					   int max, const int vbmi,
					   const int skimming)
{
	/* A copy the packet stores cannot alias: the sums stay in
	 * registers. */
	struct walk_out local = *out, *const w = &local;
	/* CYCs handed on cross in runs too, then go to the hook from the
	 * run's bits: a tenth of a capture's packets no longer end a run */
	const int cyc_called =
		skimming && w->actions[PTS_PKT_CYC] == PTS_SKIM_CALL;
	const unsigned runs_of =
		!skimming ? RUNS_ALL
			  : (w->actions[PTS_PKT_TNT8] == PTS_SKIM_SKIP ? RUNS_TNT
								       : 0) |
				    (w->actions[PTS_PKT_PAD] == PTS_SKIM_SKIP
					     ? RUNS_PAD
					     : 0) |
				    (w->actions[PTS_PKT_CYC] == PTS_SKIM_SKIP ||
						     cyc_called
					     ? RUNS_CYC
					     : 0);
	const uint8_t *const start = in->data + in->pos;
	const uint8_t *const dend = in->data + in->size;
	const uint8_t *b = start; /* the block */
	unsigned i = 0;		  /* the next packet, from b */
	uint64_t lip = *lipp;
	uint8_t bk = 0;
	int got = 0, stop = 0, cur = 0;
	struct block ks[2]; /* the block and the next one */

	const uint8_t *const classes = skimming ? w->classes : NULL;

	if (!walkable(b, dend, max))
		return 0;
	prepare(&ks[0], b, tab, runs_of, classes, vbmi);
	while (!stop && walkable(b, dend, max - got)) {
		const struct block *const k = &ks[cur];
		uint64_t runs = 0; /* the one-byte packets crossed */
		const uint64_t called_ones = cyc_called ? k->cyc : 0;
		const uint64_t boff = *offp + (uint64_t)(b - start);

		prepare(&ks[cur ^ 1], b + BLOCK, tab, runs_of, classes, vbmi);
		for (;;) {
			unsigned r, n;
			const uint8_t *q;
			uint64_t raw;
			struct pts_packet scratch, *pk;
			struct pts_packet *keep_at = NULL, *call_at = NULL;
			uint64_t hdr, w1;

			/* skimming, back to the counted walk after each
			 * packet taken by itself (a MODE, PSB+: rare, but
			 * the rest of their block used to go one by one) */
			if (classes && count_skimmed(tab, w, k, b, dend, &i,
						     &lip, &runs, boff,
						     called_ones, vbmi))
				break;
			run_at(k, i, &r, &n, vbmi); /* the run may end the block */
			q = b + i + r;
			raw = pts_load_le64(q + 1);
			const uint64_t crossed = _bzhi_u64(~0ull, r) << i;

			runs |= crossed;
			if (skimming && (crossed & called_ones))
				hand_on(tab, w, k, b, dend, boff, 0,
					crossed & called_ones, lip, vbmi);
			if (!skimming &&
			    __builtin_expect(n != 0 && !tnt64_bad(q, raw), 1)) {
				/* counting: the kind is all it needs (and the
				 * block's end gives n = 0) */
				const struct pts_fast_op *op = tab->ops + q[0];

				lip = ((lip ^ raw) & op->keep) ^ raw;
				w->counts[(uint8_t)op->hdr]++;
				got++;
				i += r + n;
				if (i >= BLOCK)
					break;
				continue;
			}
			i += r;
			if (i >= BLOCK)
				break;
			if (skimming) {
				/* without calls no kind is handed on */
				keep_at = w->out + got;
				call_at = w->calls ? w->calls + w->ncalls
						   : keep_at;
				pk = skim_slot(tab, w, q, keep_at, call_at);
			} else {
				pk = &scratch;
			}
			n = decode_one(tab, q, raw, tnt64_bad(q, raw) ? 0 : n,
				       dend, *offp + (uint64_t)(q - start), &lip,
				       &bk, pk, &hdr, &w1);
			if (!n) {
				stop = 1;
				break;
			}
			if (skimming) {
				stop = skim_one(w, hdr, w1, pk, keep_at,
						call_at, &got);
			} else {
				w->counts[pk->kind]++;
				got++;
			}
			stop |= bk;
			i += n;
			if (stop || i >= BLOCK)
				break;
		}
		if (skimming) {
			w->sum.packets +=
				(uint64_t)_mm_popcnt_u64(runs & ~called_ones);
			w->sum.tnt_packets +=
				(uint64_t)_mm_popcnt_u64(runs & k->tnt);
			w->sum.tnt_bits += tnt_results(b, runs & k->tnt, vbmi);
			/* at most 64 packets start in a block */
			if (w->ncalls | w->nitems)
				flush_calls(w);
		} else {
			w->counts[PTS_PKT_TNT8] +=
				(uint64_t)_mm_popcnt_u64(runs & k->tnt);
			w->counts[PTS_PKT_PAD] +=
				(uint64_t)_mm_popcnt_u64(runs & k->pad);
			w->counts[PTS_PKT_CYC] +=
				(uint64_t)_mm_popcnt_u64(runs & k->cyc);
			got += (int)_mm_popcnt_u64(runs);
		}
		if (stop)
			break;
		next_block(&b, &i, &cur);
	}
	walked(in, offp, b + i - start, lipp, lip, blk, bk);
	out->sum = local.sum;
	return got;
}

static PTS_AVX2 int walk_avx2(const struct pts_fast_tab *tab,
			      struct pts_input *in, uint64_t *off,
			      uint64_t *lip, uint8_t *blk, struct walk_out *w,
			      int max)
{
	return w->actions ? walk(tab, in, off, lip, blk, w, max, 0, 1)
			  : walk(tab, in, off, lip, blk, w, max, 0, 0);
}

static PTS_VBMI int walk_vbmi(const struct pts_fast_tab *tab,
			      struct pts_input *in, uint64_t *off,
			      uint64_t *lip, uint8_t *blk, struct walk_out *w,
			      int max)
{
	return w->actions ? walk(tab, in, off, lip, blk, w, max, 1, 1)
			  : walk(tab, in, off, lip, blk, w, max, 1, 0);
}

/* The walk this CPU runs. */
static int walk_blocks(const struct pts_fast_tab *tab, struct pts_input *in,
		       uint64_t *off, uint64_t *lip, uint8_t *blk,
		       struct walk_out *w, int max)
{
	switch (tab->blocks) {
	case PTS_BLOCKS_VBMI:
		return walk_vbmi(tab, in, off, lip, blk, w, max);
	case PTS_BLOCKS_AVX2:
		return walk_avx2(tab, in, off, lip, blk, w, max);
	default:
		return 0;
	}
}

_Static_assert(PTS_PKT_KIND_COUNT <= 64, "kinds index a 64-byte permute");

void pts_fast_skim_class_tables(struct pts_fast_tab *tab)
{
	memset(tab->class_called, 0, sizeof(tab->class_called));
	memset(tab->class_skipped, 0, sizeof(tab->class_skipped));
	for (int kind = 0; kind < PTS_PKT_KIND_COUNT; kind++) {
		if (kind == PTS_PKT_TNT8)
			continue; /* in runs when skipped */
		/* a packet handed on is decoded after the walk, so with an
		 * IP only by the walk */
		const int has_ip = kind == PTS_PKT_TIP ||
				   kind == PTS_PKT_TIP_PGE ||
				   kind == PTS_PKT_TIP_PGD || kind == PTS_PKT_FUP;

		tab->class_called[kind] = has_ip ? 0 : SC_CALLED;
		tab->class_skipped[kind] = kind == PTS_PKT_TIP ? SC_SUMMED | SC_TIP
					   : kind == PTS_PKT_TNT64 ? SC_TNT64
								   : SC_SUMMED;
	}
}

/* enum skim_class of each kind by @actions (PTS_PKT_KIND_COUNT of them):
 * the class tables' entries where the action calls for them. */
static PTS_VBMI void skim_classes(uint8_t *classes, const uint8_t *actions,
				  const struct pts_fast_tab *tab)
{
	const __m512i a = _mm512_maskz_loadu_epi8(
		_bzhi_u64(~0ull, PTS_PKT_KIND_COUNT), actions);
	const __mmask64 called =
		_mm512_cmpeq_epi8_mask(a, _mm512_set1_epi8(PTS_SKIM_CALL));
	const __mmask64 skipped =
		_mm512_cmpeq_epi8_mask(a, _mm512_set1_epi8(PTS_SKIM_SKIP));
	const __m512i cls = _mm512_mask_loadu_epi8(
		_mm512_maskz_loadu_epi8(called, tab->class_called), skipped,
		tab->class_skipped);

	_mm512_storeu_si512((void *)classes, cls);
}

_Static_assert(PTS_PKT_KIND_COUNT >= 16 && PTS_PKT_KIND_COUNT <= 32,
	       "kinds in two overlapping 16-byte loads");

/* skim_classes() by SSE: the kinds in two overlapping halves (@actions
 * has PTS_PKT_KIND_COUNT entries, not 32). */
static PTS_AVX2 void skim_classes_sse(uint8_t *classes, const uint8_t *actions,
				      const struct pts_fast_tab *tab)
{
	for (int at = 0; at <= PTS_PKT_KIND_COUNT - 16;
	     at += PTS_PKT_KIND_COUNT - 16) {
		const __m128i a = _mm_loadu_si128(
			(const __m128i *)(const void *)(actions + at));
		const __m128i called =
			_mm_cmpeq_epi8(a, _mm_set1_epi8(PTS_SKIM_CALL));
		const __m128i skipped =
			_mm_cmpeq_epi8(a, _mm_set1_epi8(PTS_SKIM_SKIP));
		const __m128i cls = _mm_or_si128(
			_mm_and_si128(called,
				      _mm_loadu_si128((const __m128i *)(
					      const void *)(tab->class_called +
							    at))),
			_mm_and_si128(skipped,
				      _mm_loadu_si128((const __m128i *)(
					      const void *)(tab->class_skipped +
							    at))));

		_mm_storeu_si128((__m128i *)(void *)(classes + at), cls);
	}
}

int pts_fast_skim_blocks(const struct pts_fast_tab *tab, struct pts_input *in,
			 uint64_t *off, uint64_t *lip, uint8_t *blk,
			 struct pts_packet *out, int max,
			 const struct pts_skim_ctx *skim, int *stop)
{
	struct pts_packet calls[BLOCK];
	uint64_t values[BLOCK];
	uint8_t classes[64];
	struct walk_out w = {
		.out = out,
		.actions = skim->actions,
		.sum = *skim->sum,
		.stopped = stop,
		.call = skim->call,
		.calls = skim->call ? calls : NULL,
		.classes = classes,
		.values = skim->call && skim->call->timing ? values : NULL};

	if (tab->blocks == PTS_BLOCKS_VBMI)
		skim_classes(classes, skim->actions, tab);
	else if (tab->blocks == PTS_BLOCKS_AVX2)
		skim_classes_sse(classes, skim->actions, tab);
	const int got = walk_blocks(tab, in, off, lip, blk, &w, max);

	*skim->sum = w.sum;
	return got;
}

int pts_fast_blocks_cap = PTS_BLOCKS_VBMI;

int pts_fast_blocks_supported(void)
{
	int level = PTS_BLOCKS_NONE;

	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") &&
	    __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("popcnt"))
		level = PTS_BLOCKS_AVX2;
	if (level && __builtin_cpu_supports("avx512f") &&
	    __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512vbmi"))
		level = PTS_BLOCKS_VBMI;
	return level < pts_fast_blocks_cap ? level : pts_fast_blocks_cap;
}

int pts_fast_count_blocks(const struct pts_fast_tab *tab, struct pts_input *in,
			  uint64_t *off, uint64_t *lip, uint8_t *blk,
			  uint64_t *counts, int max)
{
	struct walk_out w = {.counts = counts};

	return walk_blocks(tab, in, off, lip, blk, &w, max);
}

#else

int pts_fast_skim_blocks(const struct pts_fast_tab *tab, struct pts_input *in,
			 uint64_t *off, uint64_t *lip, uint8_t *blk,
			 struct pts_packet *out, int max,
			 const struct pts_skim_ctx *skim, int *stop)
{
	(void)tab, (void)in, (void)off, (void)lip, (void)blk, (void)out;
	(void)max, (void)skim, (void)stop;
	return 0;
}

int pts_fast_blocks_cap = PTS_BLOCKS_NONE;

void pts_fast_skim_class_tables(struct pts_fast_tab *tab)
{
	(void)tab; /* only the block walks read them */
}

int pts_fast_blocks_supported(void)
{
	return PTS_BLOCKS_NONE;
}

int pts_fast_count_blocks(const struct pts_fast_tab *tab, struct pts_input *in,
			  uint64_t *off, uint64_t *lip, uint8_t *blk,
			  uint64_t *counts, int max)
{
	(void)tab, (void)in, (void)off, (void)lip, (void)blk, (void)counts;
	(void)max;
	return 0;
}

#endif
