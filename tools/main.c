/* ptscope: one executable, one subcommand per file (cmd_*.c). */
#include "commands.h"
#include "progress.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#ifndef PTS_VERSION
#define PTS_VERSION "unknown"
#endif

struct subcommand {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct subcommand subcommands[] = {
	{"dump", pts_cmd_dump, "print the packets of a raw PT trace"},
	{"cov", pts_cmd_cov, "branch edges and an AFL-style edge bitmap"},
	{"flow", pts_cmd_flow, "the executed instructions, given the code"},
	{"perf", pts_cmd_perf, "a perf.data capture (info, dump, flow, windows)"},
	{"topa", pts_cmd_topa, "linearize ToPA / single-range output buffers"},
	{"synth", pts_cmd_synth, "make a trace and its ground truth (walk or run)"},
	{"windows", pts_cmd_windows, "when tracing was on, off, and why (--verify)"},
};

static void usage(FILE *out)
{
	fprintf(out, "usage: ptscope [--progress|--no-progress] COMMAND [OPTIONS] ...\n\n"
		     "Intel Processor Trace decoder that says what a trace shows and "
		     "what it hides.\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
		fprintf(out, "  %-10s %s\n", subcommands[i].name,
			subcommands[i].summary);
	fprintf(out, "  %-10s %s\n", "help", "this text, or `help COMMAND`");
	fprintf(out, "\n`ptscope COMMAND --help` describes a command; "
		     "`ptscope --version`\nprints the version.\n"
		     "Runs longer than a second show a progress line on stderr when it\n"
		     "is a terminal and stdout is not; --progress forces it (one line every %g s in a\n"
		     "log), --no-progress turns it off.\n",
		PTS_PROGRESS_LOG_PERIOD);
}

static const struct subcommand *find(const char *name)
{
	for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
		if (strcmp(subcommands[i].name, name) == 0)
			return &subcommands[i];
	return NULL;
}

/* Takes the global options before COMMAND; returns how many there were. */
static int global_options(int argc, char **argv)
{
	int i = 1;
	for (; i < argc; i++) {
		if (strcmp(argv[i], "--progress") == 0)
			pts_progress_mode = PTS_PROGRESS_ALWAYS;
		else if (strcmp(argv[i], "--no-progress") == 0)
			pts_progress_mode = PTS_PROGRESS_NEVER;
		else
			break;
	}
	return i - 1;
}

/* Runs the command line; returns the exit status. */
static int dispatch(int argc, char **argv)
{
	int skip = global_options(argc, argv);
	argc -= skip;
	argv += skip;
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *name = argv[1];
	if (strcmp(name, "help") == 0 || strcmp(name, "--help") == 0 ||
	    strcmp(name, "-h") == 0) {
		if (argc > 2 && strcmp(argv[2], "help") != 0 &&
		    strcmp(argv[2], "--help") != 0 &&
		    strcmp(argv[2], "-h") != 0) {
			const struct subcommand *about = find(argv[2]);
			char *help_argv[] = {argv[2], "--help", NULL};

			if (about)
				return about->run(2, help_argv);
			name = argv[2]; /* a typo: say so, not the usage alone */
		} else {
			usage(stdout);
			return 0;
		}
	}
	if (strcmp(name, "--version") == 0) {
		printf("ptscope %s\n", PTS_VERSION);
		return 0;
	}
	const struct subcommand *cmd = find(name);
	if (!cmd) {
		fprintf(stderr, "ptscope: unknown command '%s'\n\n", name);
		usage(stderr);
		return 2;
	}
	return cmd->run(argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
	int status = dispatch(argc, argv);
	/* What is still buffered goes out now: a full disk or a closed
	 * pipe must not pass for success (`help > /dev/full` exited 0).
	 * A command that saw the failure has said so (exit 2). */
	if ((fflush(stdout) != 0 || ferror(stdout)) && status != 2) {
		fprintf(stderr, "ptscope: cannot write the output: %s\n",
			strerror(errno));
		status = 2;
	}
	return status;
}
