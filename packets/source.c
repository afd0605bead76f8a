/* Byte sources: a raw trace file or standard input, handed out in chunks of
 * at most PTS_SOURCE_CHUNK bytes from one buffer, so that memory does not
 * grow with the trace (a pipe has no size and cannot be mapped). */
#include <ptscope/packets.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { PTS_SOURCE_CHUNK = 1 << 20 };

struct pts_source {
	int fd;
	int owned; /* 0 for standard input, which we must not close */
	uint64_t total;
	uint8_t *buf;
};

int pts_source_open(const char *path, struct pts_source **src)
{
	struct pts_source *s;

	if (!path || !src)
		return -PTS_ERR_INVALID;
	*src = NULL;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -PTS_ERR_NOMEM;
	s->buf = malloc(PTS_SOURCE_CHUNK);
	if (!s->buf) {
		free(s);
		return -PTS_ERR_NOMEM;
	}

	if (strcmp(path, "-") == 0) {
		s->fd = STDIN_FILENO;
	} else {
		struct stat st;

		s->fd = open(path, O_RDONLY | O_CLOEXEC);
		/* A directory opens, then fails at the first read: say so
		 * here, with the file's name */
		if (s->fd >= 0 && fstat(s->fd, &st) == 0 &&
		    S_ISDIR(st.st_mode)) {
			close(s->fd);
			s->fd = -1;
			errno = EISDIR;
		}
		if (s->fd < 0) {
			int saved = errno;

			free(s->buf);
			free(s);
			errno = saved;
			return -PTS_ERR_IO;
		}
		s->owned = 1;
	}
	*src = s;
	return 0;
}

int pts_source_next(struct pts_source *src, struct pts_input *chunk)
{
	ssize_t got;

	if (!src || !chunk)
		return -PTS_ERR_INVALID;
	do
		got = read(src->fd, src->buf, PTS_SOURCE_CHUNK);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return -PTS_ERR_IO;

	chunk->data = src->buf;
	chunk->size = (size_t)got;
	chunk->pos = 0;
	if (got == 0)
		return 0;
	src->total += (uint64_t)got;
	return 1;
}

uint64_t pts_source_bytes(const struct pts_source *src)
{
	return src ? src->total : 0;
}

void pts_source_close(struct pts_source *src)
{
	if (!src)
		return;
	if (src->owned)
		close(src->fd);
	free(src->buf);
	free(src);
}
