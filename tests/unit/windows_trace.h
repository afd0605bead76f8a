/* Test helper for the windows model: builds a trace packet by packet with
 * the encoder (as hardware would write it, IPs compressed against the
 * last-IP), decodes it with the streaming packet decoder and runs the
 * model over it, keeping every record. */
#ifndef PTS_TEST_WINDOWS_TRACE_H
#define PTS_TEST_WINDOWS_TRACE_H

#include <ptscope/windows.h>

#include <stddef.h>
#include <stdint.h>

#define WT_MAX_BYTES 16384
#define WT_MAX_RECS 128

struct wtrace {
	uint8_t buf[WT_MAX_BYTES];
	size_t len;
	struct pts_lastip lip;
	int failed; /* an encode failed: the test is broken */
};

void wt_init(struct wtrace *t);
/* Appends one packet of @kind with no payload (PSBEND, OVF, STOP, PAD). */
void wt_plain(struct wtrace *t, int kind);
/* PSB (resets the last-IP, as the CPU does) ... */
void wt_psb(struct wtrace *t);
/* ... FUP/TIP/TIP.PGE/TIP.PGD at @ip, compressed like a CPU would. */
void wt_ip(struct wtrace *t, int kind, uint64_t ip);
/* TIP.PGD with the IP suppressed. */
void wt_pgd0(struct wtrace *t);
void wt_tnt(struct wtrace *t, unsigned count);
void wt_mode64(struct wtrace *t);
void wt_pip(struct wtrace *t, uint64_t cr3);
void wt_tsc(struct wtrace *t, uint64_t tsc);
void wt_tma(struct wtrace *t, uint16_t ctc, uint16_t fc);
void wt_mtc(struct wtrace *t, uint8_t ctc);
void wt_cyc(struct wtrace *t, uint64_t cycles);
void wt_cbr(struct wtrace *t, uint8_t ratio);
/* @n TSCs that each move time by 2^55 ticks or more. */
void wt_tsc_jumps(struct wtrace *t, int n);
/* A window, a gap and a window, each more than 2^63 ticks long: the tick
 * sums of a summary go past 64 bits. */
void wt_make_wild_tsc(struct wtrace *t);
/* Raw bytes (for decode errors). */
void wt_bytes(struct wtrace *t, const uint8_t *b, size_t n);
/* PSB, [TSC], CBR, [FUP(ip), MODE.Exec], PSBEND: the usual header. */
void wt_header(struct wtrace *t, int with_fup, uint64_t ip);

struct wresult {
	struct pts_win_record recs[WT_MAX_RECS];
	int n;
	struct pts_win_summary sum;
	int err; /* the first error the model returned, else 0 */
};

/* Decodes @t and runs a model with @cfg (may be NULL). @evidence, when not
 * NULL, is given to the model right after the packet at @ev_after (stream
 * offset) has been fed. Returns 0, or -1 when the test setup failed. */
int wt_run(const struct wtrace *t, const struct pts_trace_config *cfg,
	   const struct pts_win_evidence *evidence, uint64_t ev_after,
	   struct wresult *r);
/* wt_run() without evidence, the model's rules off (pts_win_set_verify). */
int wt_run_unverified(const struct wtrace *t,
		      const struct pts_trace_config *cfg, struct wresult *r);

/* The @nth (from 0) record of @type, or NULL. */
const struct pts_win_record *wt_find(const struct wresult *r, int type,
				     int nth);
/* How many records of @type there are; for gaps and violations, only those
 * with cause / rule @what (-1: any). */
int wt_count(const struct wresult *r, int type, int what);
/* Prints the records to stderr (to see what a failing test got). */
void wt_dump(const struct wresult *r);

#endif
