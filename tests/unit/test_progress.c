/* The progress line of long runs (tools/progress.c): silent for the first
 * second, then one line per period with percent, rate and time left;
 * the text when the size is unknown; off unless forced when the output is
 * not a terminal. The clock is passed in, so times here are exact. */
#include "check.h"
#include "progress.h"

#include <stdlib.h>
#include <string.h>

static void format(void)
{
	char buf[160];
	pts_progress_format(buf, sizeof(buf), 512ull << 20, 2048ull << 20,
			    2.0);
	/* 512 MiB in 2 s = 268.4 MB/s; 1.5 GiB left takes 6 s more. */
	CHECKF(strcmp(buf, "25% of 2.0 GiB, 512.0 MiB, 268.4 MB/s, 6 s left") ==
		       0,
	       "got '%s'", buf);
	pts_progress_format(buf, sizeof(buf), 1000, 0, 0.5);
	CHECKF(strcmp(buf, "1000 B, 0.0 MB/s") == 0, "got '%s'", buf);
	/* More than announced (the file grew): no percent past 100. */
	pts_progress_format(buf, sizeof(buf), 3 << 20, 1 << 20, 1.0);
	CHECKF(strcmp(buf, "3.0 MiB, 3.1 MB/s") == 0, "got '%s'", buf);
}

/* A meter for "flow" in @mode writing into a memory stream (NULL when
 * that cannot be opened). */
static FILE *started(struct pts_progress *pm, enum pts_progress_mode mode,
		     char **text, size_t *len, uint64_t total, double now)
{
	FILE *out = open_memstream(text, len);
	CHECK(out != NULL);
	if (out) {
		pts_progress_mode = mode;
		pts_progress_start(pm, out, "flow", total, now);
	}
	return out;
}

/* Forced on into a log (not a terminal): nothing during the first
 * second, then one line, then none until the log period is over. */
static void forced_log(void)
{
	char *text = NULL;
	size_t len = 0;
	struct pts_progress pm;
	FILE *out = started(&pm, PTS_PROGRESS_ALWAYS, &text, &len, 100 << 20,
			    10.0);
	if (!out)
		return;
	pts_progress_update(&pm, 1 << 20, 10.5);
	fflush(out);
	CHECKF(len == 0, "printed before the delay: '%s'", text);
	pts_progress_update(&pm, 10 << 20, 11.0);
	pts_progress_update(&pm, 20 << 20, 12.0); /* within the period */
	pts_progress_update(&pm, 60 << 20, 11.0 + PTS_PROGRESS_LOG_PERIOD);
	pts_progress_end(&pm);
	fclose(out);
	CHECKF(strcmp(text, "ptscope flow: 10% of 100.0 MiB, 10.0 MiB, "
			    "10.5 MB/s, 9 s left\n"
			    "ptscope flow: 60% of 100.0 MiB, 60.0 MiB, "
			    "10.5 MB/s, 4 s left\n") == 0,
	       "got '%s'", text);
	free(text);
}

/* Automatic mode on something that is not a terminal: silent. */
static void auto_off(void)
{
	char *text = NULL;
	size_t len = 0;
	struct pts_progress pm;
	FILE *out = started(&pm, PTS_PROGRESS_AUTO, &text, &len, 0, 0.0);
	if (!out)
		return;
	pts_progress_update(&pm, 1 << 30, 100.0);
	pts_progress_end(&pm);
	pts_progress_mode = PTS_PROGRESS_NEVER;
	pts_progress_start(&pm, out, "flow", 0, 0.0);
	pts_progress_update(&pm, 1 << 30, 100.0);
	pts_progress_end(&pm);
	fclose(out);
	CHECKF(len == 0, "printed '%s'", text);
	free(text);
}

static void file_size(void)
{
	CHECK(pts_progress_file_size("-") == 0);
	CHECK(pts_progress_file_size("/dev/null") == 0);
	CHECK(pts_progress_file_size("/nonexistent/x") == 0);
	char path[] = "/tmp/pts-progress-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	FILE *f = fdopen(fd, "w");
	fputs("12345", f);
	fclose(f);
	CHECK(pts_progress_file_size(path) == 5);
	remove(path);
}

int main(void)
{
	format();
	forced_log();
	auto_off();
	file_size();
	return pts_check_exit();
}
