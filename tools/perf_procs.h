/* Which process runs where in a per-cpu queue, told to the flow decoder
 * with PIP packets (internal to tools/).
 *
 * The flow decoder looks code up in the address space of the CR3 the last
 * PIP packet gave (the default space, which every space falls back to,
 * when there was none). A per-cpu queue runs several processes one after
 * the other; perf knows which from the context-switch sideband
 * (ITRACE_START, SWITCH_CPU_WIDE, SWITCH) and the time. Here each process
 * (each exec of it) gets a space of its own, keyed by a CR3 no real one
 * uses (bits 51:48 set), holding its user maps; the kernel maps stay in
 * the default space. The flow decoder is told where a process starts by a
 * PIP packet with that key inserted into the bytes it is fed:
 *   - inside every PSB+ (before PSBEND), for the process running there (a
 *     PIP in PSB+ is status, allowed whatever the state);
 *   - where tracing is off and the sideband names another process, before
 *     the TIP.PGE that resumes tracing (the decoder binds it to the
 *     TIP.PGE). A switch while tracing is on (kernel tracing) waits for
 *     the next such place.
 * Real PIPs in the trace (MOV CR3, with kernel tracing) get the maps of the
 * process the sideband names at their time. A process switch takes effect
 * at the first packet stamped at or after it: perf runs a queue's decoder
 * up to each sideband event's time before applying the event. */
#ifndef PTS_TOOLS_PERF_PROCS_H
#define PTS_TOOLS_PERF_PROCS_H

#include "perf_images.h"

/* A PIP to insert before the packet at stream offset @offset. */
struct proc_inject {
	uint64_t offset;
	uint64_t cr3;
};

struct perf_procs {
	struct proc_inject *inj; /* ascending offsets */
	uint32_t n, cap;
	/* the spaces made: (process, end of its exec generation) -> key */
	struct proc_slot *slots;
	uint32_t nr_slots, cap_slots;
	/* real CR3s seen, already given maps */
	uint64_t *real;
	uint32_t nr_real, cap_real;
	int nomem;
};

/* Scans queue @qi (a per-cpu queue, on CPU @cpu, timed) for its processes:
 * fills @out (zeroed first) and adds each process's maps to its space of
 * @img. @out->n is 0 when the sideband names no process for the queue.
 * Returns 0 or -PTS_ERR_NOMEM. */
int pts_perfprocs_scan(struct perf_cmd *pc, uint32_t qi, int32_t cpu,
		       struct perf_maps *maps, struct pts_image *img,
		       struct perf_procs *out);
void pts_perfprocs_free(struct perf_procs *p);

/* The PIP packet for @cr3 into @buf (>= 16 bytes); returns its size. */
int pts_perfprocs_pip(uint64_t cr3, uint8_t *buf, size_t cap);

#endif
