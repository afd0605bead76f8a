/* A progress line on stderr for long runs: how much of the input is done,
 * the rate, and the time left when the size is known.
 *
 * Silent for runs under a second (most runs), so short commands and tests
 * print nothing extra. On a terminal the line is redrawn in place and
 * erased at the end; when forced on for a log (--progress, not a
 * terminal) one line per PTS_PROGRESS_LOG_PERIOD seconds is appended.
 * The caller passes the time in, which keeps the meter free of clocks and
 * testable. */
#ifndef PTS_TOOLS_PROGRESS_H
#define PTS_TOOLS_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

/* Chosen once per process by the global --progress / --no-progress. */
enum pts_progress_mode {
	PTS_PROGRESS_AUTO = 0, /* on when stderr is a terminal, stdout not */
	PTS_PROGRESS_ALWAYS,
	PTS_PROGRESS_NEVER
};
extern enum pts_progress_mode pts_progress_mode;

#define PTS_PROGRESS_DELAY 1.0        /* seconds before the first line */
#define PTS_PROGRESS_TTY_PERIOD 0.25  /* redraw period on a terminal */
#define PTS_PROGRESS_LOG_PERIOD 5.0   /* line period in a log */

struct pts_progress {
	FILE *out;        /* NULL: off */
	const char *cmd;  /* "flow": the line starts "ptscope flow: " */
	uint64_t total;   /* input bytes, 0 when unknown (a pipe) */
	double start;     /* time of pts_progress_start() */
	double next;      /* no line before this time */
	int tty;          /* redraw in place */
	int shown;        /* a line is on the terminal */
};

/* Starts a meter for @cmd over @total bytes (0: unknown) at time @now.
 * @out is where lines go (stderr in the tool); whether it is used follows
 * pts_progress_mode and isatty(@out). */
void pts_progress_start(struct pts_progress *pm, FILE *out, const char *cmd,
			uint64_t total, double now);

/* Prints the line for @done bytes at @now (pts_progress_update's slow
 * path). */
void pts_progress_draw(struct pts_progress *pm, uint64_t done, double now);

/* Reports that @done bytes are consumed at time @now. Cheap when no line
 * is due: call it once per chunk. */
static inline void pts_progress_update(struct pts_progress *pm, uint64_t done,
				       double now)
{
	if (pm->out && now >= pm->next)
		pts_progress_draw(pm, done, now);
}

/* Erases the line on a terminal; nothing else. */
void pts_progress_end(struct pts_progress *pm);

/* The text of a line, without "ptscope CMD: " ("42% of 2.5 GiB, 1.1 GiB,
 * 350.0 MB/s, 4 s left"); for tests. Returns snprintf's count. */
int pts_progress_format(char *buf, size_t cap, uint64_t done, uint64_t total,
			double seconds);

/* The size of the regular file @path, 0 for anything else ("-", pipes). */
uint64_t pts_progress_file_size(const char *path);

#endif /* PTS_TOOLS_PROGRESS_H */
