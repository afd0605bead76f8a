/* The trace configuration file: parser and writer (format in model.h and
 * fixtures/FORMATS.md). Line-oriented on purpose: a person edits these, and
 * a diff of two of them should say which setting changed. */
#include <ptscope/model.h>

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define CFG_VERSION 1

void pts_config_init(struct pts_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
}

void pts_config_fini(struct pts_config *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < cfg->n_images; i++)
		free(cfg->images[i].path);
	free(cfg->images);
	free(cfg->enclaves);
	free(cfg->enclave_entry);
	pts_config_init(cfg);
}

int pts_config_add_image(struct pts_config *cfg,
			 const struct pts_image_spec *img)
{
	if (!cfg || !img || !img->path || img->kind > PTS_IMAGE_RAW)
		return -PTS_ERR_INVALID;
	struct pts_image_spec *grown =
		realloc(cfg->images, (cfg->n_images + 1) * sizeof(*grown));
	if (!grown)
		return -PTS_ERR_NOMEM;
	cfg->images = grown;
	struct pts_image_spec *dst = &cfg->images[cfg->n_images];
	*dst = *img;
	dst->path = strdup(img->path);
	if (!dst->path)
		return -PTS_ERR_NOMEM;
	cfg->n_images++;
	return 0;
}

int pts_config_add_enclave(struct pts_config *cfg,
			   const struct pts_enclave *enc, uint64_t entry)
{
	if (!cfg || !enc || enc->end <= enc->begin)
		return -PTS_ERR_INVALID;
	/* an address is in one enclave or none: the map could not say
	 * whether a gap there is a production enclave's */
	for (size_t i = 0; i < cfg->n_enclaves; i++)
		if (enc->begin < cfg->enclaves[i].end &&
		    cfg->enclaves[i].begin < enc->end)
			return -PTS_ERR_BAD_CONFIG;
	size_t n = cfg->n_enclaves + 1;
	struct pts_enclave *encs = realloc(cfg->enclaves, n * sizeof(*encs));
	if (!encs)
		return -PTS_ERR_NOMEM;
	cfg->enclaves = encs;
	uint64_t *entries = realloc(cfg->enclave_entry, n * sizeof(*entries));
	if (!entries)
		return -PTS_ERR_NOMEM;
	cfg->enclave_entry = entries;
	encs[n - 1] = *enc;
	entries[n - 1] = entry;
	cfg->n_enclaves = n;
	/* The model reads the map through trace; realloc may have moved it. */
	cfg->trace.enclaves = cfg->enclaves;
	cfg->trace.n_enclaves = cfg->n_enclaves;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Parsing.                                                                 */

/* The cursor over one line. */
struct cfg_line {
	const char *p, *end;
	int no; /* from 1 */
};

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static void skip_space(struct cfg_line *l)
{
	while (l->p < l->end && is_space(*l->p))
		l->p++;
}

/* Next whitespace-separated token into @buf; 0 when the line is done. */
static int next_token(struct cfg_line *l, char *buf, size_t cap)
{
	skip_space(l);
	size_t n = 0;
	while (l->p < l->end && !is_space(*l->p)) {
		if (n + 1 < cap)
			buf[n++] = *l->p;
		l->p++;
	}
	buf[n] = '\0';
	return n > 0;
}

static int parse_u64(const char *s, uint64_t *v)
{
	return pts_parse_u64(s, s + strlen(s), v) < 0 ? -1 : 0;
}

static int token_u64(struct cfg_line *l, uint64_t *v)
{
	char tok[64];
	if (!next_token(l, tok, sizeof(tok)))
		return -1;
	return parse_u64(tok, v);
}

/* The rest of the line, trailing blanks cut, joined to @base_dir when
 * relative. NULL on no memory or an empty rest. */
static char *rest_path(struct cfg_line *l, const char *base_dir)
{
	skip_space(l);
	const char *e = l->end;
	while (e > l->p && is_space(e[-1]))
		e--;
	size_t n = (size_t)(e - l->p);
	if (!n)
		return NULL;
	size_t dn = (base_dir && *base_dir && l->p[0] != '/')
			    ? strlen(base_dir) : 0;
	char *path = malloc(dn + 1 + n + 1);
	if (!path)
		return NULL;
	size_t k = 0;
	if (dn) {
		memcpy(path, base_dir, dn);
		k = dn;
		if (path[k - 1] != '/')
			path[k++] = '/';
	}
	memcpy(path + k, l->p, n);
	path[k + n] = '\0';
	l->p = l->end;
	return path;
}

static int parse_image(struct pts_config *cfg, struct cfg_line *l,
		       const char *base_dir)
{
	char kind[16];
	struct pts_image_spec img;
	memset(&img, 0, sizeof(img));
	if (!next_token(l, kind, sizeof(kind)))
		return -PTS_ERR_BAD_FORMAT;
	if (strcmp(kind, "elf") == 0) {
		img.kind = PTS_IMAGE_ELF;
		if (token_u64(l, &img.base) < 0)
			return -PTS_ERR_BAD_FORMAT;
	} else if (strcmp(kind, "raw") == 0) {
		img.kind = PTS_IMAGE_RAW;
		if (token_u64(l, &img.from) < 0 || token_u64(l, &img.to) < 0 ||
		    token_u64(l, &img.addr) < 0)
			return -PTS_ERR_BAD_FORMAT;
	} else {
		return -PTS_ERR_BAD_FORMAT;
	}
	img.path = rest_path(l, base_dir);
	if (!img.path)
		return -PTS_ERR_BAD_FORMAT;
	img.line = l->no;
	int err = pts_config_add_image(cfg, &img);
	free(img.path);
	return err;
}

/* "enclave BEGIN END KIND [OPTION]...": the options and the kind as in a
 * spec on the command line (enclave_spec.c). */
static int parse_enclave(struct pts_config *cfg, struct cfg_line *l)
{
	struct pts_enclave enc;
	uint64_t entry = 0;
	char tok[160];
	int kind, err;
	memset(&enc, 0, sizeof(enc));
	cfg->why = "BEGIN and END are numbers, then the kind";
	if (token_u64(l, &enc.begin) < 0 || token_u64(l, &enc.end) < 0 ||
	    !next_token(l, tok, sizeof(tok)))
		return -PTS_ERR_BAD_FORMAT;
	kind = pts_enclave_kind_of(tok, strlen(tok));
	cfg->why = "the kind is production or debug";
	if (kind < 0)
		return -PTS_ERR_BAD_FORMAT;
	enc.kind = (uint8_t)kind;
	while (next_token(l, tok, sizeof(tok))) {
		err = pts_enclave_option(&enc, &entry, tok, strlen(tok), NULL,
					 &cfg->why);
		if (err < 0)
			return err;
	}
	cfg->why = "END is not above BEGIN";
	if (enc.end <= enc.begin)
		return -PTS_ERR_BAD_CONFIG;
	cfg->why = "it overlaps an enclave given before";
	err = pts_config_add_enclave(cfg, &enc, entry);
	if (err != -PTS_ERR_BAD_CONFIG)
		cfg->why = NULL;
	return err;
}

static int parse_line(struct pts_config *cfg, struct cfg_line *l,
		      const char *base_dir, int *have_version)
{
	char key[32];
	struct pts_trace_config *t = &cfg->trace;
	uint64_t a, b, c;

	if (!next_token(l, key, sizeof(key)))
		return 0; /* blank or comment-only */
	if (!*have_version) {
		if (strcmp(key, "ptscope-config") != 0)
			return -PTS_ERR_BAD_FORMAT;
		cfg->why = "this ptscope reads version 1";
		if (token_u64(l, &a) < 0 || a != CFG_VERSION)
			return -PTS_ERR_BAD_FORMAT;
		cfg->why = NULL;
		*have_version = 1;
		return 0;
	}
	int err = 0;
	if (strcmp(key, "ctl") == 0) {
		if (token_u64(l, &t->ctl) < 0)
			return -PTS_ERR_BAD_FORMAT;
		t->known |= PTS_CFG_CTL;
	} else if (strncmp(key, "addr", 4) == 0 && key[4] >= '0' &&
		   key[4] <= '3' && key[5] == '\0') {
		unsigned n = (unsigned)(key[4] - '0');
		if (token_u64(l, &a) < 0 || token_u64(l, &b) < 0)
			return -PTS_ERR_BAD_FORMAT;
		if (a > b)
			return -PTS_ERR_BAD_CONFIG;
		t->addr_a[n] = a;
		t->addr_b[n] = b;
		t->known |= PTS_CFG_ADDR;
	} else if (strcmp(key, "cr3_match") == 0) {
		if (token_u64(l, &t->cr3_match) < 0)
			return -PTS_ERR_BAD_FORMAT;
		t->known |= PTS_CFG_CR3;
	} else if (strcmp(key, "cpuid_15") == 0) {
		/* EAX or EBX 0: no ratio enumerated; the line is left
		 * out then (as the --cpuid15 option is) */
		if (token_u64(l, &a) < 0 || token_u64(l, &b) < 0 ||
		    token_u64(l, &c) < 0 || !a || !b || a > UINT32_MAX ||
		    b > UINT32_MAX || c > UINT32_MAX)
			return -PTS_ERR_BAD_FORMAT;
		t->cpuid_15_eax = (uint32_t)a;
		t->cpuid_15_ebx = (uint32_t)b;
		t->cpuid_15_ecx = (uint32_t)c;
		t->known |= PTS_CFG_CPUID15;
	} else if (strcmp(key, "nom_freq") == 0) {
		if (token_u64(l, &a) < 0 || !a || a > 255) /* 0: unknown */
			return -PTS_ERR_BAD_FORMAT;
		t->nom_freq = (uint8_t)a;
		t->known |= PTS_CFG_NOMFREQ;
	} else if (strcmp(key, "mtc_freq") == 0) {
		if (token_u64(l, &a) < 0 || a > 15)
			return -PTS_ERR_BAD_FORMAT;
		t->mtc_freq = (uint8_t)a;
		t->known |= PTS_CFG_MTCFREQ;
	} else if (strcmp(key, "cpu") == 0) {
		char tok[64];
		if (!next_token(l, tok, sizeof(tok)) ||
		    pts_cpu_parse(tok, &t->cpu) < 0)
			return -PTS_ERR_BAD_FORMAT;
	} else if (strcmp(key, "image") == 0) {
		return parse_image(cfg, l, base_dir);
	} else if (strcmp(key, "enclave") == 0) {
		return parse_enclave(cfg, l);
	} else {
		return -PTS_ERR_BAD_FORMAT;
	}
	/* Anything after the values (other than a comment) is a mistake. */
	skip_space(l);
	if (l->p != l->end)
		err = -PTS_ERR_BAD_FORMAT;
	return err;
}

int pts_config_parse(struct pts_config *cfg, const char *text, size_t len,
		     const char *base_dir, int *err_line)
{
	if (!cfg || (!text && len))
		return -PTS_ERR_INVALID;
	int have_version = 0, line_no = 0;
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *hash = memchr(p, '#', (size_t)(le - p));
		struct cfg_line l = {p, hash ? hash : le, ++line_no};
		/* A NUL would end a token or a path early: what follows it
		 * would be dropped without a word (found by fuzz_config). */
		int err = memchr(p, '\0', (size_t)(le - p))
				  ? -PTS_ERR_BAD_FORMAT
				  : parse_line(cfg, &l, base_dir, &have_version);
		if (err < 0) {
			if (err_line)
				*err_line = line_no;
			return err;
		}
		p = nl ? nl + 1 : end;
	}
	if (!have_version) {
		if (err_line)
			*err_line = line_no ? line_no : 1;
		return -PTS_ERR_BAD_FORMAT;
	}
	return 0;
}

int pts_config_load(struct pts_config *cfg, const char *path, int *err_line)
{
	if (!cfg || !path)
		return -PTS_ERR_INVALID;
	FILE *f = fopen(path, "rb");
	if (!f)
		return -PTS_ERR_IO;
	char *text = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 8192;
			char *grown = realloc(text, cap);
			if (!grown) {
				free(text);
				fclose(f);
				return -PTS_ERR_NOMEM;
			}
			text = grown;
		}
		size_t got = fread(text + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
		if (len > PTS_CONFIG_MAX_BYTES) {
			free(text);
			fclose(f);
			return -PTS_ERR_UNSUPPORTED;
		}
	}
	const int failed = ferror(f), saved = errno; /* EISDIR... */
	fclose(f);
	if (failed) {
		free(text);
		errno = saved;
		return -PTS_ERR_IO;
	}
	/* The directory part of @path ("" when there is none). */
	char *dir = strdup(path);
	if (!dir) {
		free(text);
		return -PTS_ERR_NOMEM;
	}
	char *slash = strrchr(dir, '/');
	if (slash)
		slash[slash == dir ? 1 : 0] = '\0';
	else
		dir[0] = '\0';
	int err = pts_config_parse(cfg, text, len, dir, err_line);
	free(dir);
	free(text);
	return err;
}

/* ------------------------------------------------------------------------ */
/* Writing.                                                                 */

static const struct {
	uint8_t bit;
	const char *name;
} ctl_bits[] = {
	{0, "TraceEn"},   {1, "CYCEn"},     {2, "OS"},        {3, "User"},
	{4, "PwrEvtEn"},  {5, "FUPonPTW"},  {6, "FabricEn"},  {7, "CR3Filter"},
	{8, "ToPA"},      {9, "MTCEn"},     {10, "TSCEn"},    {11, "DisRETC"},
	{12, "PTWEn"},    {13, "BranchEn"}, {31, "EventEn"},  {55, "DisTNT"},
	{56, "InjectPsbPmiOnEnable"},
};

int pts_config_ctl_text(uint64_t ctl, char *buf, size_t cap)
{
	char tmp[512];
	size_t n = 0;
	tmp[0] = '\0';
	for (size_t i = 0; i < sizeof(ctl_bits) / sizeof(ctl_bits[0]); i++)
		if (ctl & (1ull << ctl_bits[i].bit))
			n += (size_t)snprintf(tmp + n, sizeof(tmp) - n, "%s%s",
					      n ? " " : "", ctl_bits[i].name);
	static const struct {
		uint8_t shift;
		const char *name;
	} fields[] = {{14, "MTCFreq"}, {19, "CycThresh"}, {24, "PSBFreq"}};
	for (size_t i = 0; i < 3; i++) {
		unsigned v = (unsigned)(ctl >> fields[i].shift) & 0xf;
		if (v)
			n += (size_t)snprintf(tmp + n, sizeof(tmp) - n,
					      "%s%s=%u", n ? " " : "",
					      fields[i].name, v);
	}
	static const char *const addr_kind[] = {"", "filter", "stop"};
	for (unsigned r = 0; r < 4; r++) {
		unsigned v = (unsigned)(ctl >> PTS_CTL_ADDR_CFG_SHIFT(r)) & 0xf;
		if (v)
			n += (size_t)snprintf(tmp + n, sizeof(tmp) - n,
					      "%sADDR%u=%s", n ? " " : "", r,
					      v <= 2 ? addr_kind[v] : "?");
	}
	if (cap)
		snprintf(buf, cap, "%s", tmp);
	return (int)n;
}

/* @path relative to the directory @dir when both exist; else a copy of
 * @path. NULL on no memory. */
static char *relative_path(const char *path, const char *dir)
{
	char *rp = realpath(path, NULL);
	char *rd = dir ? realpath(dir, NULL) : NULL;
	if (!rp || !rd) {
		free(rp);
		free(rd);
		return strdup(path);
	}
	/* Longest common prefix that ends at a component boundary. */
	size_t common = 0;
	for (size_t i = 0;; i++) {
		char a = rp[i], b = rd[i];
		if ((a == '/' || a == '\0') && (b == '/' || b == '\0'))
			common = i;
		if (a != b || !a)
			break;
	}
	size_t ups = 0;
	for (const char *q = rd + common; *q; q++)
		if (*q == '/')
			ups++;
	const char *tail = rp + common + (rp[common] == '/');
	char *out = malloc(ups * 3 + strlen(tail) + 2);
	if (out) {
		size_t k = 0;
		for (size_t i = 0; i < ups; i++) {
			memcpy(out + k, "../", 3);
			k += 3;
		}
		strcpy(out + k, tail);
		if (!out[0])
			strcpy(out, ".");
	}
	free(rp);
	free(rd);
	return out;
}

int pts_config_write(const struct pts_config *cfg, const char *rel_dir,
		     FILE *out)
{
	if (!cfg || !out)
		return -PTS_ERR_INVALID;
	const struct pts_trace_config *t = &cfg->trace;
	char text[512];
	fprintf(out, "ptscope-config %d\n", CFG_VERSION);
	if (t->known & PTS_CFG_CTL) {
		pts_config_ctl_text(t->ctl, text, sizeof(text));
		fprintf(out, "ctl 0x%llx  # %s\n", (unsigned long long)t->ctl,
			text);
	}
	for (unsigned n = 0; n < 4; n++) {
		unsigned kind = (unsigned)(t->ctl >> PTS_CTL_ADDR_CFG_SHIFT(n)) &
				0xf;
		if ((t->known & PTS_CFG_ADDR) &&
		    (kind || t->addr_a[n] || t->addr_b[n]))
			fprintf(out, "addr%u 0x%llx 0x%llx\n", n,
				(unsigned long long)t->addr_a[n],
				(unsigned long long)t->addr_b[n]);
	}
	if (t->known & PTS_CFG_CR3)
		fprintf(out, "cr3_match 0x%llx\n",
			(unsigned long long)t->cr3_match);
	if (t->known & PTS_CFG_CPUID15)
		fprintf(out, "cpuid_15 %u %u %u\n", t->cpuid_15_eax,
			t->cpuid_15_ebx, t->cpuid_15_ecx);
	if (t->known & PTS_CFG_NOMFREQ)
		fprintf(out, "nom_freq %u\n", t->nom_freq);
	if (t->known & PTS_CFG_MTCFREQ)
		fprintf(out, "mtc_freq %u\n", t->mtc_freq);
	if (t->cpu.family)
		fprintf(out, "cpu %u/%u/%u\n", t->cpu.family, t->cpu.model,
			t->cpu.stepping);
	for (size_t i = 0; i < cfg->n_images; i++) {
		const struct pts_image_spec *img = &cfg->images[i];
		char *path = rel_dir ? relative_path(img->path, rel_dir)
				     : strdup(img->path);
		if (!path)
			return -PTS_ERR_NOMEM;
		if (img->kind == PTS_IMAGE_ELF)
			fprintf(out, "image elf 0x%llx %s\n",
				(unsigned long long)img->base, path);
		else
			fprintf(out, "image raw 0x%llx 0x%llx 0x%llx %s\n",
				(unsigned long long)img->from,
				(unsigned long long)img->to,
				(unsigned long long)img->addr, path);
		free(path);
	}
	for (size_t i = 0; i < cfg->n_enclaves; i++) {
		const struct pts_enclave *e = &cfg->enclaves[i];
		fprintf(out, "enclave 0x%llx 0x%llx %s",
			(unsigned long long)e->begin,
			(unsigned long long)e->end,
			e->kind == PTS_ENCLAVE_DEBUG ? "debug" : "production");
		if (cfg->enclave_entry && cfg->enclave_entry[i])
			fprintf(out, " entry=0x%llx",
				(unsigned long long)cfg->enclave_entry[i]);
		if (e->has_aep)
			fprintf(out, " aep=0x%llx",
				(unsigned long long)e->aep);
		for (unsigned k = 0; k < e->n_eexit; k++)
			fprintf(out, " eexit=0x%llx",
				(unsigned long long)e->eexit[k]);
		if (e->name[0])
			fprintf(out, " name=%s", e->name);
		fputc('\n', out);
	}
	return ferror(out) ? -PTS_ERR_IO : 0;
}
