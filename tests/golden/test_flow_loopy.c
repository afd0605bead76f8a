/* The hase-loopy capture (perf 4.15, Skylake): the AUX bytes of the
 * perf.data decoded over the `loopy` binary give the 57 instructions that
 * `perf script --itrace=i0nse` printed (perf-script-i0nse.txt), in order.
 * Skips (77) when the captures are absent. */
#include <ptscope/decoder.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SKIP 77

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *p = n > 0 ? malloc((size_t)n) : NULL;
	if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
		free(p);
		p = NULL;
	}
	fclose(f);
	*len = p ? (size_t)n : 0;
	return p;
}

static uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Concatenates the payloads of the PERF_RECORD_AUXTRACE records (type 71:
 * a 48-byte record, its `size` data bytes follow it). */
static uint8_t *aux_bytes(const uint8_t *file, size_t len, size_t *out_len)
{
	if (len < 104 || memcmp(file, "PERFILE2", 8) != 0)
		return NULL;
	uint64_t data_off = le(file + 40, 8), data_size = le(file + 48, 8);
	if (data_off > len || data_size > len - data_off)
		return NULL;
	uint8_t *out = malloc(len);
	size_t n = 0;
	for (uint64_t pos = data_off; out && pos + 8 <= data_off + data_size;) {
		uint32_t type = (uint32_t)le(file + pos, 4);
		uint16_t size = (uint16_t)le(file + pos + 6, 2);
		if (size < 8)
			break;
		if (type == 71 && pos + 48 <= len) {
			uint64_t payload = le(file + pos + 8, 8);
			if (payload > len - pos - 48)
				break;
			memcpy(out + n, file + pos + 48, payload);
			n += payload;
			pos += 48 + payload;
			continue;
		}
		pos += size;
	}
	*out_len = n;
	return out;
}

/* The instruction addresses of perf script's output: the token before
 * "SYMBOL+0xOFF". */
static size_t expected(const char *path, uint64_t *ips, size_t max)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char line[512];
	size_t n = 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		char *plus = strstr(line, "+0x");
		if (!plus)
			continue;
		char *sym = plus;
		while (sym > line && sym[-1] != ' ')
			sym--;
		char *end = sym;
		while (end > line && end[-1] == ' ')
			end--;
		char *start = end;
		while (start > line && start[-1] != ' ')
			start--;
		ips[n++] = strtoull(start, NULL, 16);
	}
	fclose(f);
	return n;
}

int main(void)
{
	const char *dir = getenv("PTS_CAPTURES");
	char path[4096];
	if (!dir)
		dir = "../shared/captures";
	snprintf(path, sizeof(path), "%s/hase-loopy/loopy-20180404T162955.perf",
		 dir);
	size_t len, aux_len = 0;
	uint8_t *file = slurp(path, &len);
	if (!file) {
		printf("skip: no capture at %s\n", path);
		return SKIP;
	}
	uint8_t *aux = aux_bytes(file, len, &aux_len);
	uint64_t want[128];
	snprintf(path, sizeof(path), "%s/hase-loopy/perf-script-i0nse.txt", dir);
	size_t nwant = expected(path, want, 128);

	struct pts_image *img = pts_image_new();
	snprintf(path, sizeof(path), "%s/hase-loopy/loopy", dir);
	int err = pts_image_add_elf(img, 0, path, 0);
	struct pts_flow *flow = pts_flow_new(NULL, img);
	struct pts_input in = {aux, aux_len, 0};
	struct pts_flow_rec recs[64];
	uint64_t got[256];
	size_t ngot = 0, errors = 0;
	pts_flow_end(flow);
	int n;
	while ((n = pts_flow_next(flow, &in, recs, 64)) > 0 ||
	       n == -PTS_ERR_AGAIN) {
		if (n == -PTS_ERR_AGAIN)
			break;
		for (int i = 0; i < n; i++) {
			if (recs[i].kind == PTS_FLOW_ERROR)
				errors++;
			for (uint32_t k = 0; recs[i].kind == PTS_FLOW_INSNS &&
					     k < recs[i].n && ngot < 256; k++)
				got[ngot++] = recs[i].ips[k];
		}
	}
	int bad = err < 0 || !aux || aux_len == 0 || nwant != 57 || errors ||
		  ngot != nwant;
	for (size_t i = 0; !bad && i < nwant; i++)
		if (got[i] != want[i]) {
			fprintf(stderr, "instruction %zu: %llx, expected %llx\n", i,
				(unsigned long long)got[i],
				(unsigned long long)want[i]);
			bad = 1;
		}
	printf("loopy: %zu AUX bytes, %zu instructions (expected %zu), %zu "
	       "errors: %s\n", aux_len, ngot, nwant, errors, bad ? "FAIL" : "ok");
	pts_flow_free(flow);
	pts_image_free(img);
	free(aux);
	free(file);
	return bad ? 1 : 0;
}
