/* The code of the processes a perf.data records: perf_images.h. */
#include "perf_images.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FORK_DEPTH 16

/* A sideband event that shapes a process's maps, in file order. */
struct map_note {
	struct pts_perf_mmap mmap; /* MMAP: the map (strings in the file) */
	uint64_t time;             /* perf time; 0 when not recorded */
	uint64_t seq;              /* file order */
	int32_t pid, ppid;         /* FORK: child, parent */
	uint8_t kind;              /* NOTE_* */
};

enum { NOTE_MAP, NOTE_KERNEL_MAP, NOTE_EXEC, NOTE_FORK };

struct perf_maps {
	struct perf_cmd *pc;
	struct map_note *notes;
	uint32_t n, cap;
	struct {
		int32_t tid, pid;
	} *threads;
	uint32_t nr_threads, cap_threads;
	uint32_t maps, found;
	char missing[256]; /* the first file not found */
	uint8_t reported;
};

/* ------------------------------------------------------------------------ */
/* One map into an image set.                                               */

/* ELF e_type of @path: 2 executable (linked at its addresses), 3 shared
 * object or PIE, 0 not an ELF file. */
static int elf_type(const char *path)
{
	unsigned char h[18];
	return pts_cli_elf_header(path, h) ? h[16] | h[17] << 8 : 0;
}

/* Maps one MMAP: the file's bytes at the mapped range (exactly what the
 * process saw), and, for ELF files, its symbols (for --format perf). */
static void add_map(struct perf_maps *m, struct pts_image *img, uint64_t cr3,
		    const struct pts_perf_mmap *mm, int kernel)
{
	struct pts_perf_image_opts io = {0};
	char path[4096];
	io.sysroot = m->pc->sysroot;
	io.remaps = m->pc->remaps;
	io.nr_remaps = m->pc->nr_remaps;
	m->maps++;
	if (pts_perf_image_path(m->pc->perf, &io, mm->filename.ptr,
				mm->filename.len,
				mm->build_id_size ? mm->build_id : NULL,
				mm->build_id_size, path, sizeof(path)) != 1) {
		if (!m->missing[0])
			snprintf(m->missing, sizeof(m->missing), "%.*s",
				 (int)mm->filename.len, mm->filename.ptr);
		return;
	}
	m->found++;
	int type = elf_type(path);
	/* An ELF file brings its symbols (for --format perf): an executable
	 * is linked where it runs; a shared object or PIE is taken to have
	 * its first segment at file offset 0, address 0. The code is the
	 * file's bytes in the mapped range, as perf reads it (an ELF loaded
	 * whole gave code the process never mapped), but for the kernel,
	 * whose map names addresses, not file offsets. */
	const uint64_t base = type == 2 ? 0 : mm->addr - mm->pgoff;
	if (type == 2 || type == 3) {
		if (kernel && pts_image_add_elf(img, cr3, path, base) > 0)
			return;
		if (!kernel)
			pts_image_add_elf_symbols(img, cr3, path, base);
	}
	if (pts_image_add_raw(img, cr3, path, mm->pgoff, mm->pgoff + mm->len,
			      mm->addr) < 0)
		pts_image_add_raw(img, cr3, path, mm->pgoff, 0, mm->addr);
}

/* Anonymous memory, [vdso], [heap] ...: no file to read code from. A
 * relative name (the kernel gives none; a capture written by a tool may)
 * is a file, as perf opens it, from the current directory. */
static int is_file(const struct pts_perf_str *fn)
{
	return fn->len > 1 && fn->ptr[0] != '[' &&
	       !(fn->len >= 11 && memcmp(fn->ptr, "anon_inode:", 11) == 0) &&
	       !(fn->len >= 6 && memcmp(fn->ptr, "//anon", 6) == 0) &&
	       !(fn->len >= 5 && memcmp(fn->ptr, "/dev/", 5) == 0) &&
	       !(fn->len >= 8 && memcmp(fn->ptr, "/memfd:", 7) == 0);
}

/* ------------------------------------------------------------------------ */
/* Reading the sideband.                                                    */

static int add_note(struct perf_maps *m, const struct map_note *n)
{
	if (pts_perfcmd_grow((void **)&m->notes, &m->cap, m->n + 1,
			     sizeof(*m->notes)) < 0)
		return -1;
	m->notes[m->n] = *n;
	m->notes[m->n].seq = m->n;
	m->n++;
	return 0;
}

static int add_thread(struct perf_maps *m, int32_t tid, int32_t pid)
{
	if (pts_perfcmd_grow((void **)&m->threads, &m->cap_threads,
			     m->nr_threads + 1, sizeof(*m->threads)) < 0)
		return -1;
	m->threads[m->nr_threads].tid = tid;
	m->threads[m->nr_threads].pid = pid;
	m->nr_threads++;
	return 0;
}

/* The note a record makes, if any. Returns 1 and fills @n, else 0. */
static int note_of(const struct pts_perf_record *rec, struct map_note *n)
{
	memset(n, 0, sizeof(*n));
	n->time = rec->sid.have & PTS_PERF_SAMPLE_TIME ? rec->sid.time : 0;
	switch (rec->type) {
	case PTS_PERF_RECORD_MMAP:
	case PTS_PERF_RECORD_MMAP2:
		if (!is_file(&rec->u.mmap.filename))
			return 0;
		n->mmap = rec->u.mmap;
		n->pid = (int32_t)rec->u.mmap.pid;
		n->kind = rec->u.mmap.cpumode == 1 ? NOTE_KERNEL_MAP : NOTE_MAP;
		return 1;
	case PTS_PERF_RECORD_COMM:
		if (!rec->u.comm.exec)
			return 0;
		n->pid = (int32_t)rec->u.comm.pid;
		n->kind = NOTE_EXEC;
		return 1;
	case PTS_PERF_RECORD_FORK:
		if (rec->u.task.pid == rec->u.task.ppid)
			return 0; /* a new thread shares the maps anyway */
		n->pid = (int32_t)rec->u.task.pid;
		n->ppid = (int32_t)rec->u.task.ppid;
		n->time = rec->u.task.time;
		n->kind = NOTE_FORK;
		return 1;
	default:
		return 0;
	}
}

struct perf_maps *pts_perfmaps_new(struct perf_cmd *pc)
{
	struct perf_maps *m = calloc(1, sizeof(*m));
	struct pts_perf_cursor cur;
	struct pts_perf_record rec;
	int rc;
	if (!m)
		return NULL;
	m->pc = pc;
	pts_perf_cursor_init(pc->perf, &cur);
	while ((rc = pts_perf_next_record(pc->perf, &cur, &rec, NULL)) != 0) {
		struct map_note n;
		if (rc < 0)
			continue;
		if (note_of(&rec, &n) && add_note(m, &n) < 0)
			goto nomem;
		if ((rec.type == PTS_PERF_RECORD_COMM &&
		     add_thread(m, (int32_t)rec.u.comm.tid,
				(int32_t)rec.u.comm.pid) < 0) ||
		    (rec.type == PTS_PERF_RECORD_FORK &&
		     add_thread(m, (int32_t)rec.u.task.tid,
				(int32_t)rec.u.task.pid) < 0))
			goto nomem;
	}
	return m;
nomem:
	pts_perfmaps_free(m);
	return NULL;
}

void pts_perfmaps_free(struct perf_maps *m)
{
	if (!m)
		return;
	free(m->notes);
	free(m->threads);
	free(m);
}

int32_t pts_perfmaps_pid_of(const struct perf_maps *m, int32_t tid)
{
	for (uint32_t i = m->nr_threads; i-- > 0;)
		if (m->threads[i].tid == tid)
			return m->threads[i].pid;
	for (uint32_t i = 0; i < m->n; i++)
		if (m->notes[i].kind == NOTE_MAP &&
		    (int32_t)m->notes[i].mmap.tid == tid)
			return m->notes[i].pid;
	return tid;
}

/* ------------------------------------------------------------------------ */
/* A process's maps at a time.                                              */

/* Note @n happened at or before perf time @time (unknown times: always). */
static int by(const struct map_note *n, uint64_t time)
{
	return !n->time || n->time <= time;
}

/* Adds the maps process @pid had at @time, oldest first, to space @cr3. */
static void apply_process(struct perf_maps *m, struct pts_image *img,
			  uint64_t cr3, int32_t pid, uint64_t time, int depth)
{
	/* Its own maps start after its last exec by @time; without one, a
	 * forked process starts with its parent's maps as of the fork. */
	uint32_t from = 0;
	const struct map_note *fork = NULL;
	for (uint32_t i = 0; i < m->n; i++) {
		const struct map_note *n = &m->notes[i];
		if (n->pid != pid || !by(n, time))
			continue;
		if (n->kind == NOTE_EXEC) {
			from = i + 1;
			fork = NULL;
		} else if (n->kind == NOTE_FORK && i >= from) {
			fork = n;
		}
	}
	if (fork && depth < MAX_FORK_DEPTH && fork->ppid != pid)
		apply_process(m, img, cr3, fork->ppid,
			      fork->time ? fork->time : time, depth + 1);
	for (uint32_t i = from; i < m->n; i++) {
		const struct map_note *n = &m->notes[i];
		if (n->kind == NOTE_MAP && n->pid == pid && by(n, time))
			add_map(m, img, cr3, &n->mmap, 0);
	}
}

void pts_perfmaps_load(struct perf_maps *m, struct pts_image *img,
		       int32_t pid, uint64_t time)
{
	for (uint32_t i = 0; i < m->n; i++)
		if (m->notes[i].kind == NOTE_KERNEL_MAP ||
		    (pid == PERFMAPS_ALL && m->notes[i].kind == NOTE_MAP))
			add_map(m, img, 0, &m->notes[i].mmap,
				m->notes[i].kind == NOTE_KERNEL_MAP);
	if (pid >= 0)
		apply_process(m, img, 0, pid, time, 0);
}

void pts_perfmaps_load_space(struct perf_maps *m, struct pts_image *img,
			     uint64_t cr3, int32_t pid, uint64_t time)
{
	apply_process(m, img, cr3, pid, time, 0);
}

uint64_t pts_perfmaps_exec_after(const struct perf_maps *m, int32_t pid,
				 uint64_t time)
{
	uint64_t next = UINT64_MAX;
	for (uint32_t i = 0; i < m->n; i++) {
		const struct map_note *n = &m->notes[i];
		if (n->kind == NOTE_EXEC && n->pid == pid && n->time > time &&
		    n->time < next)
			next = n->time;
	}
	return next;
}

uint32_t pts_perfmaps_found(const struct perf_maps *m)
{
	return m->found;
}

void pts_perfmaps_report(struct perf_maps *m, const char *cmd)
{
	if (m->found < m->maps && !m->reported && !m->pc->quiet)
		pts_cli_error(cmd, "%" PRIu32 " of %" PRIu32 " mapped files not "
			      "found (first: %s); try --sysroot or --remap",
			      m->maps - m->found, m->maps, m->missing);
	m->reported = 1;
}
