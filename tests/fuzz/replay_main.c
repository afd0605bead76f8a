/* Runs a fuzz target's LLVMFuzzerTestOneInput over every file of the
 * corpus directories (or files) given, so that the corpus, including every
 * crasher turned regression file, is replayed by an ordinary compiler and
 * test run. A violated invariant aborts inside the target.
 *
 * usage: replay DIR|FILE...
 */
#include "fuzz_target.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int run_file(const char *path)
{
	FILE *in = fopen(path, "rb");
	uint8_t *data = NULL;
	size_t size = 0, cap = 0;

	if (!in) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	for (;;) {
		if (size == cap) {
			uint8_t *grown = realloc(data, cap ? cap * 2 : 4096);

			if (!grown) {
				free(data);
				fclose(in);
				return -1;
			}
			data = grown;
			cap = cap ? cap * 2 : 4096;
		}
		size_t got = fread(data + size, 1, cap - size, in);

		if (got == 0)
			break;
		size += got;
	}
	fclose(in);
	/* A copy of exactly the input's size, so that a read past the end
	 * is caught by a sanitizer as libFuzzer would catch it. */
	uint8_t *exact = malloc(size ? size : 1);

	if (!exact) {
		free(data);
		return -1;
	}
	if (size)
		memcpy(exact, data, size);
	free(data);
	LLVMFuzzerTestOneInput(exact, size);
	free(exact);
	return 0;
}

static int run_path(const char *path, int *count)
{
	struct stat st;
	DIR *dir;
	struct dirent *ent;
	int status = 0;

	if (stat(path, &st) != 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		if (run_file(path) < 0)
			return -1;
		++*count;
		return 0;
	}
	dir = opendir(path);
	if (!dir) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((ent = readdir(dir)) != NULL && status == 0) {
		char child[4096];

		if (ent->d_name[0] == '.')
			continue;
		snprintf(child, sizeof(child), "%s/%s", path, ent->d_name);
		if (stat(child, &st) == 0 && S_ISREG(st.st_mode)) {
			status = run_file(child);
			if (status == 0)
				++*count;
		}
	}
	closedir(dir);
	return status;
}

int main(int argc, char **argv)
{
	int count = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++)
		if (run_path(argv[i], &count) < 0)
			return 1;
	printf("%d inputs replayed\n", count);
	/* An empty corpus would make this test pass without running. */
	return count > 0 ? 0 : 1;
}
