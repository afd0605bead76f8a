/* `--run PROGRAM [ARGS]`: a real execution on this machine, recorded one
 * instruction at a time with ptrace single-stepping. User space only: a
 * SYSCALL steps over the whole kernel, so it is modelled as a visit to the
 * kernel stub, which an OS=0 trace shows as TIP.PGD()...TIP.PGE(NLIP), as
 * the CPL filter would (the CLI forces --user-only). ASLR is switched off
 * in the child so that a run of a static test program is reproducible. */
#include "synth_run.h"
#include "walk.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

/* Steps made ahead: the kernel stub's two, or instructions a late
 * single-step trap ran past. */
#define SYN_RUN_QUEUE 16

struct syn_run {
	pid_t pid;
	int mem_fd;
	int ended;
	uint64_t ip;
	struct pts_insn_classifier *cls;
	struct syn_step queue[SYN_RUN_QUEUE];
	unsigned queued, qpos;
	struct pts_config maps; /* executable file mappings, read at exit */
	int have_maps;
};

static int read_rip(pid_t pid, uint64_t *rip)
{
	struct user_regs_struct regs;
	if (ptrace(PTRACE_GETREGS, pid, NULL, &regs) < 0)
		return -PTS_ERR_IO;
	*rip = regs.rip;
	return 0;
}

/* The executable file-backed mappings of the child (its code). */
static void read_maps(struct syn_run *r)
{
	char path[64], line[4352];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)r->pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char perms[8];
		int name_at = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &lo, &hi,
			   perms, &off, &name_at) < 4 || !name_at ||
		    perms[2] != 'x' || line[name_at] != '/')
			continue;
		char *name = line + name_at;
		name[strcspn(name, "\n")] = '\0';
		struct stat st;
		if (stat(name, &st) < 0 || (uint64_t)st.st_size <= off)
			continue;
		uint64_t to = off + (hi - lo);
		if (to > (uint64_t)st.st_size)
			to = (uint64_t)st.st_size;
		struct pts_image_spec img = {PTS_IMAGE_RAW, name, 0, off, to,
					     lo, 0};
		pts_config_add_image(&r->maps, &img);
	}
	fclose(f);
	r->have_maps = 1;
}

int syn_run_start(const struct syn_options *o, char *const argv[],
		  struct syn_run **out)
{
	(void)o;
	struct syn_run *r = calloc(1, sizeof(*r));
	if (!r)
		return -PTS_ERR_NOMEM;
	pts_config_init(&r->maps);
	r->mem_fd = -1;
	r->cls = pts_insn_classifier_new();
	if (!r->cls) {
		free(r);
		return -PTS_ERR_NOMEM;
	}
	pid_t pid = fork();
	if (pid < 0) {
		syn_run_free(r);
		return -PTS_ERR_IO;
	}
	if (pid == 0) {
		personality(ADDR_NO_RANDOMIZE);
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execv(argv[0], argv);
		_exit(127);
	}
	r->pid = pid;
	int status;
	if (waitpid(pid, &status, 0) < 0 || !WIFSTOPPED(status)) {
		syn_run_free(r);
		return -PTS_ERR_IO;
	}
	ptrace(PTRACE_SETOPTIONS, pid, NULL,
	       (void *)(long)(PTRACE_O_EXITKILL | PTRACE_O_TRACEEXIT));
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	r->mem_fd = open(path, O_RDONLY);
	if (r->mem_fd < 0 || read_rip(pid, &r->ip) < 0) {
		syn_run_free(r);
		return -PTS_ERR_IO;
	}
	*out = r;
	return 0;
}

uint64_t syn_run_ip(const struct syn_run *r)
{
	return r->ip;
}

/* Single-steps once; sets *@next to the new RIP, or ends the run. */
static int step_child(struct syn_run *r, uint64_t *next)
{
	int status;
	if (ptrace(PTRACE_SINGLESTEP, r->pid, NULL, NULL) < 0)
		return -PTS_ERR_IO;
	for (;;) {
		if (waitpid(r->pid, &status, 0) < 0)
			return -PTS_ERR_IO;
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			r->ended = 1;
			r->pid = 0;
			return 1;
		}
		if (status >> 8 == (SIGTRAP | (PTRACE_EVENT_EXIT << 8))) {
			read_maps(r);
			r->ended = 1;
			return 1;
		}
		if (WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP)
			return read_rip(r->pid, next);
		/* Another signal: let it through on the next step. */
		if (ptrace(PTRACE_SINGLESTEP, r->pid, NULL,
			   (void *)(long)WSTOPSIG(status)) < 0)
			return -PTS_ERR_IO;
	}
}

static int straight(const struct pts_insn_info *info)
{
	return info->iclass == PTS_INSN_PLAIN || info->iclass == PTS_INSN_OTHER ||
	       info->iclass == PTS_INSN_PTWRITE;
}

/* Some hypervisors deliver the trap of a single step over an instruction
 * they emulate (CPUID) one instruction late: RIP has run past [@from,
 * @to). Queues those instructions when they are straight-line code that
 * ends exactly at @to (a Jcc among them fell through); returns 0 when
 * they cannot be, and the step keeps its jump. */
static int queue_skipped(struct syn_run *r, uint64_t from, uint64_t to)
{
	unsigned n = 0;
	while (from < to && n < SYN_RUN_QUEUE) {
		uint8_t bytes[16];
		struct pts_insn_info info;
		ssize_t got = pread(r->mem_fd, bytes, sizeof(bytes), (off_t)from);
		if (got <= 0 || pts_insn_classify(r->cls, PTS_EXEC_64, from,
						  bytes, (size_t)got, &info) < 0 ||
		    (!straight(&info) && info.iclass != PTS_INSN_JCC))
			return 0;
		r->queue[n] = (struct syn_step){
			.ip = from, .next = from + info.size, .size = info.size,
			.kind = info.iclass == PTS_INSN_JCC ? SYN_COND : SYN_SEQ,
			.at = {3, -1}, .to = {3, -1}};
		from += info.size;
		n++;
	}
	if (from != to)
		return 0;
	r->queued = n;
	r->qpos = 0;
	return 1;
}

int syn_run_next(void *src, struct syn_step *s)
{
	struct syn_run *r = src;
	memset(s, 0, sizeof(*s));
	if (r->qpos < r->queued) {
		*s = r->queue[r->qpos++];
		return 0;
	}
	if (r->ended)
		return 1;
	uint8_t bytes[16];
	ssize_t got = pread(r->mem_fd, bytes, sizeof(bytes), (off_t)r->ip);
	struct pts_insn_info info;
	if (got <= 0)
		return -PTS_ERR_IO;
	int known = pts_insn_classify(r->cls, PTS_EXEC_64, r->ip, bytes,
				      (size_t)got, &info) >= 0;
	uint64_t next = 0, nlip = known ? r->ip + info.size : 0;
	int ended = step_child(r, &next);
	/* A REP string instruction stops after every iteration: it is one
	 * instruction all the same. */
	while (ended == 0 && next == r->ip && (!known || straight(&info)))
		ended = step_child(r, &next);
	if (ended < 0)
		return ended;
	if (!known) {
		/* Capstone lacks some encodings (AVX-512 in libc's string
		 * functions): what it cannot decode is no branch, so the
		 * step says how long it was. */
		if (ended || next <= r->ip || next - r->ip > 15)
			return -PTS_ERR_BAD_INSN;
		memset(&info, 0, sizeof(info));
		info.iclass = PTS_INSN_PLAIN;
		info.size = (uint8_t)(next - r->ip);
		nlip = next;
	}
	if (ended)
		next = nlip; /* the exit: nothing follows */
	uint64_t resume = next; /* where the child stands now */
	if (straight(&info) && next != nlip && queue_skipped(r, nlip, next))
		next = nlip;
	s->ip = r->ip;
	s->size = info.size;
	s->next = next;
	s->at.cpl = s->to.cpl = 3;
	s->at.encl = s->to.encl = -1;
	switch (info.iclass) {
	case PTS_INSN_JCC:
		s->kind = SYN_COND;
		if (next != nlip)
			s->flags = SYN_F_TAKEN;
		break;
	case PTS_INSN_JMP:
		s->kind = SYN_JUMP;
		break;
	case PTS_INSN_CALL:
		s->kind = SYN_CALL;
		if (info.flags & PTS_INSN_F_CALL0)
			s->flags = SYN_F_CALL0;
		break;
	case PTS_INSN_JMP_IND:
		s->kind = SYN_IJUMP;
		break;
	case PTS_INSN_CALL_IND:
		s->kind = SYN_ICALL;
		break;
	case PTS_INSN_RET:
		s->kind = SYN_RET;
		break;
	case PTS_INSN_FAR:
		/* SYSCALL: ring 0 through the stub, back at NLIP. */
		s->kind = SYN_FAR;
		s->next = SYN_KSTUB_SYSCALL;
		s->to.cpl = 0;
		s->extra_cycles = 400;
		r->queue[0] = (struct syn_step){
			.ip = SYN_KSTUB_SYSCALL, .next = SYN_KSTUB_SYSCALL + 3,
			.size = 3, .kind = SYN_SEQ, .at = {0, -1}, .to = {0, -1}};
		r->queue[1] = (struct syn_step){
			.ip = SYN_KSTUB_SYSCALL + 3, .next = next, .size = 3,
			.kind = SYN_FAR, .at = {0, -1}, .to = {3, -1}};
		r->queued = ended ? 1 : 2;
		r->qpos = 0;
		break;
	default:
		s->kind = SYN_SEQ;
		break;
	}
	r->ip = resume;
	return 0;
}

int syn_run_images(struct syn_run *r, struct pts_config *cfg)
{
	/* A run cut short (--insns) left the child stopped, not exited:
	 * its mappings are read now. */
	if (!r->have_maps && r->pid > 0)
		read_maps(r);
	for (size_t i = 0; i < r->maps.n_images; i++) {
		int err = pts_config_add_image(cfg, &r->maps.images[i]);
		if (err < 0)
			return err;
	}
	return r->have_maps ? 0 : -PTS_ERR_IO;
}

void syn_run_free(struct syn_run *r)
{
	if (!r)
		return;
	if (r->pid > 0) {
		/* A tracee held at PTRACE_EVENT_EXIT is already exiting and
		 * SIGKILL does not release it: it must be continued too. */
		int status;
		kill(r->pid, SIGKILL);
		ptrace(PTRACE_CONT, r->pid, NULL, NULL);
		while (waitpid(r->pid, &status, 0) == r->pid &&
		       !WIFEXITED(status) && !WIFSIGNALED(status))
			ptrace(PTRACE_CONT, r->pid, NULL, NULL);
	}
	if (r->mem_fd >= 0)
		close(r->mem_fd);
	pts_insn_classifier_free(r->cls);
	pts_config_fini(&r->maps);
	free(r);
}
