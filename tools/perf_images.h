/* The code of the processes a perf.data records (internal to tools/): the
 * MMAP/MMAP2 records sorted by process, with the exec and fork records
 * that decide which of them a process has at a given time, turned into
 * image sets for the flow decoder.
 *
 * A process's maps at perf time T: its own maps recorded at or before T
 * (file order among equal times) and after its last exec (COMM with
 * COMM_EXEC) at or before T; before that exec nothing of its own, and a
 * forked process also sees its parent's maps as of the fork (unless it
 * exec'd since), as perf's thread__fork() copies them. Kernel maps are
 * shared by every process. */
#ifndef PTS_TOOLS_PERF_IMAGES_H
#define PTS_TOOLS_PERF_IMAGES_H

#include "perf_cmd.h"

#include <ptscope/decoder.h>

struct perf_maps;

/* Reads the sideband of @pc->perf (one pass). NULL on no memory. */
struct perf_maps *pts_perfmaps_new(struct perf_cmd *pc);
void pts_perfmaps_free(struct perf_maps *m);

/* The process of thread @tid (COMM, FORK, MMAP records); @tid when no
 * record says. */
int32_t pts_perfmaps_pid_of(const struct perf_maps *m, int32_t tid);

enum { PERFMAPS_ALL = -1, PERFMAPS_KERNEL = -2 };

/* Adds the kernel maps and the user maps of process @pid as of perf time
 * @time to the default space of @img; @pid PERFMAPS_ALL: the user maps of
 * every process, in file order (a later map replaces an earlier one);
 * PERFMAPS_KERNEL: none. */
void pts_perfmaps_load(struct perf_maps *m, struct pts_image *img,
		       int32_t pid, uint64_t time);

/* Adds the user maps of process @pid as of perf time @time to address
 * space @cr3 of @img (its kernel maps stay in the default space). */
void pts_perfmaps_load_space(struct perf_maps *m, struct pts_image *img,
			     uint64_t cr3, int32_t pid, uint64_t time);

/* The time of the first exec of @pid after @time (its maps are the same
 * until then), or UINT64_MAX. */
uint64_t pts_perfmaps_exec_after(const struct perf_maps *m, int32_t pid,
				 uint64_t time);

/* The number of mapped files found so far (by the loads). */
uint32_t pts_perfmaps_found(const struct perf_maps *m);

/* Says on stderr (once) how many mapped files were not found. */
void pts_perfmaps_report(struct perf_maps *m, const char *cmd);

#endif
