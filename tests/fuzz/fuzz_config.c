/* libFuzzer target: the text parsers users feed by hand, the configuration
 * file (`--config`, pts_config_parse()) and the enclave spec (`--enclave`,
 * pts_enclave_parse()).
 * Invariants: no crash, hang or leak; a parse error names a line that
 * exists; a configuration that parses, written out (pts_config_write())
 * and parsed again, writes out the same text (the written form is a fixed
 * point, so `synth --config-out` files always load as they were meant);
 * an enclave spec that parses has a non-empty range.
 *
 * Corpus (corpus/config/): the configuration files of fixtures/, and the
 * first line of each input is also tried as an enclave spec. */
#include "fuzz_target.h"

#include <ptscope/model.h>
#include <ptscope/windows.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* @cfg in the text format, malloc'd. */
static char *written(const struct pts_config *cfg, size_t *len)
{
	char *text = NULL;
	FILE *out = open_memstream(&text, len);
	REQUIRE(out);
	REQUIRE(pts_config_write(cfg, NULL, out) == 0);
	REQUIRE(fclose(out) == 0);
	return text;
}

static void check_config(const char *text, size_t size)
{
	struct pts_config cfg, again;
	int line = 0;
	pts_config_init(&cfg);
	int err = pts_config_parse(&cfg, text, size, NULL, &line);
	if (err < 0) {
		size_t lines = 1;
		for (size_t i = 0; i < size; i++)
			lines += text[i] == '\n';
		REQUIRE(err == -PTS_ERR_BAD_FORMAT || err == -PTS_ERR_BAD_CONFIG ||
			err == -PTS_ERR_NOMEM);
		REQUIRE(err != -PTS_ERR_BAD_FORMAT ||
			(line >= 1 && (size_t)line <= lines));
		pts_config_fini(&cfg);
		return;
	}
	size_t len1, len2;
	char *first = written(&cfg, &len1);
	pts_config_init(&again);
	REQUIRE(pts_config_parse(&again, first, len1, NULL, &line) == 0);
	char *second = written(&again, &len2);
	REQUIRE(len1 == len2 && memcmp(first, second, len1) == 0);
	free(first);
	free(second);
	pts_config_fini(&again);
	pts_config_fini(&cfg);
}

static void check_enclave(const char *text, size_t size)
{
	char spec[256];
	size_t n = 0;
	while (n < size && n < sizeof(spec) - 1 && text[n] != '\n')
		n++;
	memcpy(spec, text, n);
	spec[n] = '\0';
	struct pts_enclave enc;
	if (pts_enclave_parse(spec, &enc) == 0)
		REQUIRE(enc.begin < enc.end);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_config((const char *)data, size);
	check_enclave((const char *)data, size);
	return 0;
}
