/* The report of `ptscope windows` (and of any subcommand that shows the
 * windows of a stream, such as `perf windows`): drives a windows model
 * (ptscope/windows.h) with a packet decoder and prints its records as a
 * table or as JSON lines, then a summary. Uses public headers only. */
#ifndef PTS_TOOLS_WINDOWS_REPORT_H
#define PTS_TOOLS_WINDOWS_REPORT_H

#include "cli.h"

#include <ptscope/windows.h>

#include <stdint.h>

struct pts_winrep_opts {
	int jsonl;        /* 0: text table */
	uint8_t verify;   /* print violations (else only count them) */
	uint8_t have_map; /* an enclave map was given (else a note) */
	uint64_t tsc_hz;  /* 0: times in TSC ticks only */
	/* The stream may start mid-way (a file cut at its start, a wrapped
	 * ToPA ring): the bytes skipped before its first PSB are a truncated
	 * gap, not a decode error. */
	uint8_t lead_truncated;
	/* The stream may end inside a packet (a ToPA STOP or full buffer,
	 * perf's AUX data): a last packet cut off is a truncated gap. In a
	 * plain file it is a decode error, as `dump` and `flow` report it. */
	uint8_t tail_truncated;
	/* A TSC/CTC ratio was given without MTCFreq (--mtc-freq, --ctl or a
	 * configuration): MTCs are taken as N = 0, said in a note. */
	uint8_t mtc_freq_assumed;
	/* jsonl: writes fields that go first in each object (after '{',
	 * ending in ','), e.g. `perf windows`' queue and perf time; @r is
	 * NULL for the summary. Returns their length. NULL: none. */
	size_t (*jsonl_fields)(void *ctx, const struct pts_win_record *r,
			       char *p, size_t cap);
	void *jsonl_ctx;
};

struct pts_winev;

struct pts_winrep {
	struct pts_winrep_opts opts;
	struct pts_out *out;          /* not owned */
	struct pts_win_model *model;  /* owned */
	/* With images: packets wait there for the flow decoder's evidence
	 * (windows_evidence.h) instead of going straight to the model. */
	struct pts_winev *ev;         /* not owned; NULL: packets only */
	unsigned stuck;
	int failed; /* the model reported an internal error */
	/* The last pts_pkt_skim_batch() call went over few bytes: records
	 * come thick (enclave gaps every few packets), and a plain batch is
	 * cheaper next. */
	int plain_next;
};

/* Starts a report of one stream traced with @cfg into @out. Returns 0 or
 * -PTS_ERR_NOMEM. */
int pts_winrep_init(struct pts_winrep *r, const struct pts_trace_config *cfg,
		    const struct pts_winrep_opts *opts, struct pts_out *out);
/* Frees the model; the output stays with the caller. */
void pts_winrep_fini(struct pts_winrep *r);

/* Decodes what @in holds with @dec and feeds the model; decode errors,
 * skips and a cut last packet become lost-byte gaps. Returns -PTS_ERR_AGAIN
 * (more input wanted), -PTS_ERR_EOS (after pts_pkt_end(), all done) or
 * -PTS_ERR_NO_PROGRESS (the decoder is stuck; reported on stderr). */
int pts_winrep_decode(struct pts_winrep *r, struct pts_pkt_decoder *dec,
		      struct pts_input *in);

/* Feeds @n packets to the model now (draining its records). */
void pts_winrep_feed(struct pts_winrep *r, const struct pts_packet *pkts,
		     int n);
/* Tells the model bytes [@begin, @end) were lost (@cause
 * PTS_GAP_DECODE_ERROR or PTS_GAP_TRUNCATED). */
void pts_winrep_lost(struct pts_winrep *r, int cause, uint64_t begin,
		     uint64_t end);
/* Gives the model one piece of the flow decoder's evidence; evidence that
 * does not apply (no gap open) is dropped. */
void pts_winrep_evidence(struct pts_winrep *r,
			 const struct pts_win_evidence *ev);

/* Bytes the source lost (ToPA/AUX truncation, a buffer that does not
 * continue the previous one) at stream offset @offset. */
void pts_winrep_truncated(struct pts_winrep *r, uint64_t offset);

/* Ends the stream at offset @end: prints the last records and the
 * summary. */
void pts_winrep_finish(struct pts_winrep *r, uint64_t end);

/* Violations found so far (counted whether printed or not). */
uint64_t pts_winrep_violations(const struct pts_winrep *r);

#endif
