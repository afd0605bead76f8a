/* Enclave specs, the one grammar `windows --enclave`, `perf windows
 * --enclave`, `synth --enclave` and the configuration file's enclave lines
 * share: BEGIN-END:KIND[,OPTION]... on the command line, "enclave BEGIN END
 * KIND [OPTION]..." in a file; KIND production or debug, an OPTION one of
 * aep=A, eexit=A (up to PTS_ENCLAVE_MAX_EEXIT), entry=A (OENTRY) and
 * name=N. An address is a number, 0x hex or decimal (pts_parse_u64(), as
 * image specs read them); `synth` also takes SYMBOL[+OFFSET] (struct
 * pts_enclave_addr_reader).
 */
#include <ptscope/model.h>

#include <stdlib.h>
#include <string.h>

/* The longest BEGIN or END, or option, a spec may hold. */
#define SPEC_WORD 128

/* What a spec's parts must be, by whether symbols are read too. */
struct spec_words {
	const char *begin, *end, *aep, *eexit, *entry;
};

static const struct spec_words numbers_only = {
	"no number BEGIN before the '-'", "no number END before the ':'",
	"aep= takes an address", "eexit= takes an address",
	"entry= takes an address"};

static const struct spec_words with_symbols = {
	"no address or SYMBOL[+OFFSET] BEGIN before the '-'",
	"no address or SYMBOL[+OFFSET] END before the ':'",
	"aep= takes an address or SYMBOL", "eexit= takes an address or SYMBOL",
	"entry= takes an address or SYMBOL"};

/* @len bytes of @s as an address, by @rd or as a number. */
static int read_addr(const char *s, size_t len,
		     const struct pts_enclave_addr_reader *rd, uint64_t *v)
{
	char word[SPEC_WORD];

	if (len >= sizeof(word))
		return -1;
	memcpy(word, s, len);
	word[len] = '\0';
	return rd && rd->read ? rd->read(rd->ctx, word, v)
			      : pts_parse_u64(word, word + len, v);
}

int pts_enclave_kind_of(const char *word, size_t len)
{
	if (len == 10 && strncmp(word, "production", len) == 0)
		return PTS_ENCLAVE_PRODUCTION;
	if (len == 5 && strncmp(word, "debug", len) == 0)
		return PTS_ENCLAVE_DEBUG;
	return -1;
}

/* Whether @opt (@len bytes) starts with @key, "aep=" and the like. */
static int is_key(const char *opt, size_t len, const char *key)
{
	const size_t n = strlen(key);

	return len >= n && strncmp(opt, key, n) == 0;
}

int pts_enclave_option(struct pts_enclave *enc, uint64_t *entry,
		       const char *opt, size_t len,
		       const struct pts_enclave_addr_reader *rd,
		       const char **why)
{
	const struct spec_words *w = rd ? &with_symbols : &numbers_only;
	uint64_t v;

	if (is_key(opt, len, "name=")) {
		*why = "name= given twice";
		if (enc->name[0])
			return -PTS_ERR_BAD_FORMAT;
		*why = "name= takes 1 to 31 characters";
		if (len == 5 || len - 5 >= sizeof(enc->name))
			return -PTS_ERR_BAD_FORMAT;
		memcpy(enc->name, opt + 5, len - 5);
		enc->name[len - 5] = '\0';
		return 0;
	}
	if (is_key(opt, len, "aep=")) {
		/* the model knows one AEP per enclave (SDKs register one) */
		*why = "aep= given twice (one AEP per enclave)";
		if (enc->has_aep)
			return -PTS_ERR_BAD_FORMAT;
		*why = w->aep;
		if (read_addr(opt + 4, len - 4, rd, &v) < 0)
			return -PTS_ERR_BAD_FORMAT;
		enc->aep = v;
		enc->has_aep = 1;
		return 0;
	}
	if (is_key(opt, len, "eexit=")) {
		*why = w->eexit;
		if (read_addr(opt + 6, len - 6, rd, &v) < 0)
			return -PTS_ERR_BAD_FORMAT;
		*why = "too many eexit= targets";
		if (enc->n_eexit >= PTS_ENCLAVE_MAX_EEXIT)
			return -PTS_ERR_BAD_CONFIG;
		enc->eexit[enc->n_eexit++] = v;
		return 0;
	}
	if (is_key(opt, len, "entry=")) {
		*why = w->entry;
		if (read_addr(opt + 6, len - 6, rd, &v) < 0)
			return -PTS_ERR_BAD_FORMAT;
		if (entry)
			*entry = v;
		return 0;
	}
	*why = "an unknown option (aep=, eexit=, entry=, name=)";
	return -PTS_ERR_BAD_FORMAT;
}

/* BEGIN-END before the ':' at @colon (NULL: there is none). */
static int parse_range(const char *text, const char *colon,
		       const struct pts_enclave_addr_reader *rd,
		       struct pts_enclave *enc, const char **why)
{
	const struct spec_words *w = rd ? &with_symbols : &numbers_only;
	const char *stop = colon ? colon : text + strlen(text);
	const char *dash = memchr(text, '-', (size_t)(stop - text));

	*why = w->begin;
	if (!dash || read_addr(text, (size_t)(dash - text), rd,
			       &enc->begin) < 0)
		return -PTS_ERR_BAD_FORMAT;
	*why = w->end;
	if (read_addr(dash + 1, (size_t)(stop - dash - 1), rd, &enc->end) < 0)
		return -PTS_ERR_BAD_FORMAT;
	*why = "no ':production' or ':debug' after END";
	if (!colon)
		return -PTS_ERR_BAD_FORMAT;
	*why = "END is not above BEGIN";
	return enc->end > enc->begin ? 0 : -PTS_ERR_BAD_CONFIG;
}

int pts_enclave_parse_spec(const char *text,
			   const struct pts_enclave_addr_reader *rd,
			   struct pts_enclave *enc, uint64_t *entry,
			   const char **why)
{
	const char *colon, *s;
	size_t len;
	int err, kind;

	*why = "no spec";
	if (!text || !enc)
		return -PTS_ERR_INVALID;
	memset(enc, 0, sizeof(*enc));
	if (entry)
		*entry = 0;
	colon = strchr(text, ':');
	err = parse_range(text, colon, rd, enc, why);
	if (err < 0)
		return err;
	len = strcspn(colon + 1, ",");
	kind = pts_enclave_kind_of(colon + 1, len);
	*why = "the kind is production or debug";
	if (kind < 0)
		return -PTS_ERR_BAD_FORMAT;
	enc->kind = (uint8_t)kind;
	for (s = colon + 1 + len; *s == ','; s += 1 + len) {
		len = strcspn(s + 1, ",");
		err = pts_enclave_option(enc, entry, s + 1, len, rd, why);
		if (err < 0)
			return err;
	}
	*why = NULL;
	return 0;
}

int pts_enclave_parse(const char *text, struct pts_enclave *enc)
{
	const char *why;

	return pts_enclave_parse_spec(text, NULL, enc, NULL, &why);
}

int pts_config_add_enclave_spec(struct pts_config *cfg, const char *text,
				const struct pts_enclave_addr_reader *rd,
				const char **why)
{
	struct pts_enclave enc;
	uint64_t entry;
	int err = pts_enclave_parse_spec(text, rd, &enc, &entry, why);

	if (err < 0)
		return err;
	err = pts_config_add_enclave(cfg, &enc, entry);
	if (err == -PTS_ERR_BAD_CONFIG)
		*why = "it overlaps an enclave given before";
	else
		*why = err < 0 ? pts_strerror(err) : NULL;
	return err;
}
