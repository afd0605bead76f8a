/* Code that traps a random walk, for test_synth_walk (`ptscope synth
 * --walk`, tools/synth/walk.c): the shapes by which real programs end or
 * spin, each in a function of its own so that the test can find it by
 * name. Built without a C library; never run, only walked. Each function
 * is reached by a direct call from _start and is a function entry the walk
 * may restart at. */

/* Static (no prototypes wanted), kept and called as written. */
#define WALKED static __attribute__((noipa, used))

struct node {
	struct node *next, *child;
	unsigned long v;
};

/* The process ends: exit_group until it takes (glibc's _exit and the
 * loop after main returns). No conditional branch: the walk's no-progress
 * rule has to catch it. */
WALKED __attribute__((noreturn)) void leave_process(long status)
{
	for (;;)
		__asm__ volatile("syscall"
				 :
				 : "a"(231L), "D"(status)
				 : "rcx", "r11", "memory");
}

/* A spin with no way out: `pause; jmp .-2`. */
WALKED __attribute__((noreturn)) void hang(void)
{
	for (;;)
		__asm__ volatile("pause");
}

/* Known as noreturn by its name: the walk must never run it. */
WALKED __attribute__((noreturn)) void abort(void)
{
	for (;;)
		__asm__ volatile("ud2");
}

/* An error check before a noreturn call (the stack canary's shape). */
WALKED unsigned long checked(unsigned long x)
{
	if (x > 1000)
		abort();
	return x * 3;
}

/* A retry loop around a SYSCALL (EINTR). */
WALKED long retry_read(long fd)
{
	long r;
	do
		__asm__ volatile("syscall"
				 : "=a"(r)
				 : "a"(0L), "D"(fd), "S"(0L), "d"(0L)
				 : "rcx", "r11", "memory");
	while (r == -4);
	return r;
}

/* Several back edges to one head (libc's argp option scan): at 7 rounds
 * in 8 on each, the walk would stay for thousands of rounds. */
WALKED unsigned long scan(const struct node *n)
{
	unsigned long k = 0;
	while (n->v || n->next || n->child) {
		k++;
		n++;
	}
	return k;
}

/* A function that calls itself in a loop: a branching process. */
WALKED unsigned long tree_sum(const struct node *n)
{
	unsigned long s = 0;
	for (; n; n = n->next)
		s += n->v + tree_sum(n->child);
	return s;
}

static struct node nodes[4];
static volatile unsigned long sink;

void _start(void);

__attribute__((noreturn, used)) void _start(void)
{
	sink = checked(sink) + scan(nodes) + tree_sum(nodes) +
	       (unsigned long)retry_read(0);
	if (sink == 7)
		hang();
	leave_process(0);
}
