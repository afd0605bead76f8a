/* A program for `ptscope synth --run` (issue #3): a few write() system
 * calls and a loop, without a C library, so that a single-stepped run is
 * a few thousand instructions and the same on every machine that builds
 * it the same way. Exits with status 0 through exit_group. */

static long sys3(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return ret;
}

static const char msg[] = "syscalls: step\n";

__attribute__((noinline)) static unsigned long work(unsigned long x)
{
	unsigned long s = 0;
	for (unsigned long i = 0; i < x; i++)
		s += (i & 1) ? i * 3 : i >> 1;
	return s;
}

void _start(void);

__attribute__((noreturn, used)) void _start(void)
{
	unsigned long total = 0;
	for (int i = 0; i < 4; i++) {
		total += work(20 + (unsigned long)i);
		sys3(1 /* write */, 1, (long)msg, sizeof(msg) - 1);
	}
	sys3(231 /* exit_group */, total == 0, 0, 0);
	for (;;)
		;
}
