/* perf.data: finding the file behind a MMAP's path on this machine, the way
 * perf does with --symfs and its build-id cache, plus explicit remaps. */
#include "perfdata_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Writes the concatenation of up to three parts. Returns 0, or
 * -PTS_ERR_AGAIN when @cap is too small. */
static int join3(char *out, size_t cap, const char *a, size_t alen,
		 const char *b, size_t blen, const char *c, size_t clen)
{
	if (alen + blen + clen + 1 > cap)
		return -PTS_ERR_AGAIN;
	memcpy(out, a, alen);
	memcpy(out + alen, b, blen);
	memcpy(out + alen + blen, c, clen);
	out[alen + blen + clen] = 0;
	return 0;
}

/* 1 when @path names a readable regular file or link to one. */
static int readable(const char *path)
{
	return access(path, R_OK) == 0;
}

static int try_remaps(const struct pts_perf_image_opts *opts, const char *fn,
		      size_t len, char *out, size_t cap)
{
	for (uint32_t i = 0; i < opts->nr_remaps; i++) {
		const char *r = opts->remaps[i];
		const char *eq = r ? strchr(r, '=') : NULL;
		if (!eq)
			continue;
		size_t olen = (size_t)(eq - r);
		if (olen > len || memcmp(fn, r, olen) != 0)
			continue;
		int rc = join3(out, cap, eq + 1, strlen(eq + 1), fn + olen,
			       len - olen, "", 0);
		if (rc < 0)
			return rc;
		if (readable(out))
			return 1;
	}
	return 0;
}

/* perf's cache: DIR/.build-id/XX/YYYY... (a link to the cached file) and,
 * since perf 4.x, DIR/.build-id/XX/YYYY.../elf. */
static int try_buildid_cache(const struct pts_perf_image_opts *opts,
			     const uint8_t *id, size_t size, char *out,
			     size_t cap)
{
	char dir[4096];
	if (opts->buildid_dir) {
		snprintf(dir, sizeof(dir), "%s", opts->buildid_dir);
	} else {
		const char *home = getenv("HOME");
		if (!home)
			return 0;
		snprintf(dir, sizeof(dir), "%s/.debug", home);
	}
	char hex[2 * 20 + 1];
	for (size_t i = 0; i < size && i < 20; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	hex[2 * (size < 20 ? size : 20)] = 0;
	if (size < 2)
		return 0;
	static const char *const tails[] = {"/elf", ""};
	for (size_t t = 0; t < 2; t++) {
		int n = snprintf(out, cap, "%s/.build-id/%.2s/%s%s", dir, hex,
				 hex + 2, tails[t]);
		if (n < 0 || (size_t)n >= cap)
			return -PTS_ERR_AGAIN;
		if (readable(out))
			return 1;
	}
	return 0;
}

int pts_perf_image_path(const struct pts_perf *perf,
			const struct pts_perf_image_opts *opts,
			const char *filename, size_t len,
			const uint8_t *build_id, size_t bid_size, char *out,
			size_t cap)
{
	static const struct pts_perf_image_opts none;
	if (!opts)
		opts = &none;
	if (!filename || !out || cap == 0)
		return -PTS_ERR_INVALID;
	/* A path with a NUL inside cannot name a file. */
	if (memchr(filename, 0, len))
		len = strlen(filename);
	int rc = try_remaps(opts, filename, len, out, cap);
	if (rc)
		return rc;
	if (opts->sysroot && *opts->sysroot) {
		rc = join3(out, cap, opts->sysroot, strlen(opts->sysroot),
			   filename[0] == '/' ? "" : "/",
			   filename[0] == '/' ? 0 : 1, filename, len);
		if (rc < 0)
			return rc;
		if (readable(out))
			return 1;
	}
	if (!build_id && perf) {
		const struct pts_perf_build_id *b =
			pts_perf_build_id_find(perf, filename, len);
		if (b) {
			build_id = b->id;
			bid_size = b->size;
		}
	}
	if (build_id && !opts->no_buildid_cache) {
		rc = try_buildid_cache(opts, build_id, bid_size, out, cap);
		if (rc)
			return rc;
	}
	if (opts->sysroot && *opts->sysroot)
		return 0;
	rc = join3(out, cap, filename, len, "", 0, "", 0);
	if (rc < 0)
		return rc;
	return readable(out) ? 1 : 0;
}
