/* The progress line of long runs (see progress.h). */
#include "progress.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum pts_progress_mode pts_progress_mode = PTS_PROGRESS_AUTO;

void pts_progress_start(struct pts_progress *pm, FILE *out, const char *cmd,
			uint64_t total, double now)
{
	pm->tty = out && isatty(fileno(out));
	/* Automatic only when the output does not go to the same terminal,
	 * where the line would cut through it. */
	int on = pts_progress_mode == PTS_PROGRESS_ALWAYS ||
		 (pts_progress_mode == PTS_PROGRESS_AUTO && pm->tty &&
		  !isatty(STDOUT_FILENO));
	pm->out = on ? out : NULL;
	pm->cmd = cmd;
	pm->total = total;
	pm->start = now;
	pm->next = now + PTS_PROGRESS_DELAY;
	pm->shown = 0;
}

/* @bytes in binary units with one decimal ("1.1 GiB"). */
static int format_size(char *buf, size_t cap, uint64_t bytes)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	unsigned u = 0;
	while (v >= 1024.0 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		v /= 1024.0;
		u++;
	}
	return u ? snprintf(buf, cap, "%.1f %s", v, unit[u])
		 : snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
}

int pts_progress_format(char *buf, size_t cap, uint64_t done, uint64_t total,
			double seconds)
{
	char sdone[32], stotal[32];
	double rate = seconds > 0 ? (double)done / seconds : 0;
	format_size(sdone, sizeof(sdone), done);
	if (!total || done > total)
		return snprintf(buf, cap, "%s, %.1f MB/s", sdone, rate / 1e6);
	format_size(stotal, sizeof(stotal), total);
	unsigned percent = (unsigned)(done * 100.0 / (double)total);
	if (rate <= 0)
		return snprintf(buf, cap, "%u%% of %s, %s", percent, stotal,
				sdone);
	double left = (double)(total - done) / rate;
	return snprintf(buf, cap, "%u%% of %s, %s, %.1f MB/s, %.0f s left",
			percent, stotal, sdone, rate / 1e6, left);
}

void pts_progress_draw(struct pts_progress *pm, uint64_t done, double now)
{
	char line[160];
	pts_progress_format(line, sizeof(line), done, pm->total,
			    now - pm->start);
	if (pm->tty) {
		/* Return to column 0 and erase what a longer line left. */
		fprintf(pm->out, "\rptscope %s: %s\033[K", pm->cmd, line);
		pm->shown = 1;
		pm->next = now + PTS_PROGRESS_TTY_PERIOD;
	} else {
		fprintf(pm->out, "ptscope %s: %s\n", pm->cmd, line);
		pm->next = now + PTS_PROGRESS_LOG_PERIOD;
	}
	fflush(pm->out);
}

void pts_progress_end(struct pts_progress *pm)
{
	if (pm->out && pm->shown) {
		fputs("\r\033[K", pm->out);
		fflush(pm->out);
	}
	pm->shown = 0;
	pm->out = NULL;
}

uint64_t pts_progress_file_size(const char *path)
{
	struct stat st;
	if (!path || strcmp(path, "-") == 0 || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return 0;
	return (uint64_t)st.st_size;
}
