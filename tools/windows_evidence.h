/* `ptscope windows` with images: the flow decoder (decoder.h) runs over the
 * same chunks as the packet decoder and turns what only the code can tell
 * into evidence for the windows model (pts_win_evidence(), windows.h):
 *   - the instruction at which tracing stopped: the FUP address of FUP +
 *     TIP.PGD(), the branch a bare TIP.PGD binds to (checklist 4.7 item 1:
 *     ENCLU or not; SYSCALL, MOV CR3, a near branch...);
 *   - the instruction at which it resumed (the TIP.PGE target: an ENCLU
 *     there is an AEP);
 *   - compressed returns that found the return stack empty.
 *
 * The model must have a gap's evidence before the packet that closes it,
 * but the flow decoder runs some packets behind its input (it looks ahead).
 * So packets wait in a queue and go to the model only once the flow decoder
 * has reported past them: evidence lands at the same place whatever the
 * chunking. Uses public headers only. */
#ifndef PTS_TOOLS_WINDOWS_EVIDENCE_H
#define PTS_TOOLS_WINDOWS_EVIDENCE_H

#include "windows_report.h"

#include <ptscope/decoder.h>

struct pts_winev;

/* Starts the flow decoder over the code in @img (borrowed) for the report
 * @rep (borrowed; sets rep->ev). Returns NULL on no memory. */
struct pts_winev *pts_winev_new(struct pts_winrep *rep,
				const struct pts_image *img,
				const struct pts_cpu *cpu);
/* As pts_winev_new() for a stream whose next byte is at stream offset
 * @base_offset (a stream restarted after lost data, as in `perf
 * windows`). */
struct pts_winev *pts_winev_new_at(struct pts_winrep *rep,
				   const struct pts_image *img,
				   const struct pts_cpu *cpu,
				   uint64_t base_offset);
/* Frees @ev (NULL: no-op) and detaches it from its report. */
void pts_winev_free(struct pts_winev *ev);

/* Runs the flow decoder over @chunk (a copy of the view the packet decoder
 * gets; consumed here). Returns 0 or -PTS_ERR_NOMEM. */
int pts_winev_flow(struct pts_winev *ev, struct pts_input chunk);

/* The packet decoder's output for the same bytes, in stream order. */
void pts_winev_packets(struct pts_winev *ev, const struct pts_packet *pkts,
		       int n);
void pts_winev_lost(struct pts_winev *ev, int cause, uint64_t begin,
		    uint64_t end);

/* Hands the model what the flow decoder has covered. */
void pts_winev_drain(struct pts_winev *ev);

/* End of the trace: the flow decoder finishes, everything left goes to
 * the model. Prints the flow decoder's own errors (wrong or missing
 * images) to stderr as @cmd. */
void pts_winev_finish(struct pts_winev *ev, const char *cmd);

/* What the flow decoder made of the trace. */
struct pts_winev_stats {
	uint64_t evidence; /* pieces given to the model */
	uint64_t errors;   /* flow errors, return-stack ones included */
};
void pts_winev_get_stats(const struct pts_winev *ev,
			 struct pts_winev_stats *st);

#endif
