/* The readable description of a buffer set (format in ptscope/topa.h): one
 * small text file naming the tables, regions and MSR values, so that users
 * do not have to build binary tables by hand. */
#include "topa_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOKENS 8

struct token {
	const char *s, *e;
};

/* Parser state: the current line, and the inline table being filled. */
struct desc {
	struct pts_topa *t;
	const char *dir;
	const char *origin;
	unsigned line;
	struct token tok[MAX_TOKENS];
	unsigned ntok;
	/* the last 'table' without a file: entries collect here */
	int inline_open;
	unsigned inline_line;
	uint64_t inline_phys;
	uint8_t *inline_buf;
	uint32_t inline_n, inline_cap; /* in entries */
};

static int tok_is(const struct token *k, const char *word)
{
	size_t n = strlen(word);
	return (size_t)(k->e - k->s) == n && memcmp(k->s, word, n) == 0;
}

/* Fails with "ORIGIN:LINE: message". */
__attribute__((format(printf, 3, 4))) static int bad(struct desc *d, int code,
						     const char *fmt, ...)
{
	char msg[4352]; /* a message may hold a path */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return pts_topa_fail(d->t, code, "%s:%u: %s", d->origin, d->line, msg);
}

static int want_args(struct desc *d, unsigned min, unsigned max)
{
	if (d->ntok < min + 1 || d->ntok > max + 1)
		return bad(d, PTS_ERR_BAD_FORMAT,
			   max > min ? "'%.*s' takes %u to %u arguments"
				     : "'%.*s' takes %u argument(s)",
			   (int)(d->tok[0].e - d->tok[0].s), d->tok[0].s, min,
			   max);
	return 0;
}

static int num_arg(struct desc *d, unsigned i, uint64_t *v)
{
	const struct token *k = &d->tok[i];
	if (pts_parse_u64(k->s, k->e, v) < 0)
		return bad(d, PTS_ERR_BAD_FORMAT, "'%.*s' is not a number",
			   (int)(k->e - k->s), k->s);
	return 0;
}

/* @err of a call that failed without naming the line: the message again,
 * as "ORIGIN:@line: message". */
static int at_line(struct desc *d, unsigned line, int err)
{
	if (err >= 0 || err == -PTS_ERR_NOMEM)
		return err;
	char msg[sizeof(d->t->err)];
	const unsigned now = d->line;
	snprintf(msg, sizeof(msg), "%s", d->t->err);
	d->line = line;
	err = bad(d, -err, "%s", msg);
	d->line = now;
	return err;
}

/* Adds the entries collected for the open inline table as its span. */
static int close_inline(struct desc *d)
{
	if (!d->inline_open)
		return 0;
	d->inline_open = 0;
	uint8_t *buf = d->inline_buf;
	uint64_t len = (uint64_t)d->inline_n * 8;
	d->inline_buf = NULL;
	d->inline_n = d->inline_cap = 0;
	if (!buf)
		return 0; /* no entries: the table lives in a memory dump */
	int err = pts_topa_own(d->t, buf, (size_t)len, 0);
	if (err < 0)
		return err;
	char name[48];
	snprintf(name, sizeof(name), "table 0x%llx",
		 (unsigned long long)d->inline_phys);
	/* an overlap: named at the table's line, not the next one */
	return at_line(d, d->inline_line,
		       pts_topa_add_memory(d->t, d->inline_phys, buf, len,
					   name));
}

/* FILE or FILE@OFF, relative to the description's directory: adds its
 * bytes at @phys. */
static int add_file(struct desc *d, uint64_t phys, const struct token *k)
{
	const char *at = k->e;
	uint64_t off = 0;
	for (const char *p = k->e; p > k->s; p--) {
		if (p[-1] == '@') {
			if (pts_parse_u64(p, k->e, &off) == 0)
				at = p - 1;
			break;
		}
	}
	size_t nlen = (size_t)(at - k->s);
	size_t dlen = d->dir && k->s[0] != '/' ? strlen(d->dir) : 0;
	char *path = malloc(dlen + nlen + 2);
	if (!path)
		return pts_topa_fail(d->t, PTS_ERR_NOMEM, "out of memory");
	size_t n = 0;
	if (dlen) {
		memcpy(path, d->dir, dlen);
		path[dlen] = '/';
		n = dlen + 1;
	}
	memcpy(path + n, k->s, nlen);
	path[n + nlen] = '\0';
	const uint8_t *data;
	uint64_t len;
	int err;
	if (d->t->opener) {
		err = d->t->opener(d->t->opener_ctx, path, &data, &len);
		if (err < 0)
			pts_topa_fail(d->t, -err, "%s: cannot open", path);
	} else {
		err = pts_topa_map_file(d->t, path, &data, &len);
	}
	if (err < 0) {
		char why[sizeof(d->t->err)];
		snprintf(why, sizeof(why), "%s", d->t->err);
		free(path);
		return bad(d, -err, "%s", why);
	}
	if (off > len) {
		err = bad(d, PTS_ERR_BAD_FORMAT,
			  "%s: offset 0x%llx is past the end of the file "
			  "(%llu bytes)",
			  path, (unsigned long long)off,
			  (unsigned long long)len);
	} else if (off == len) {
		/* it could hold no region: the table that names one would
		 * only find it missing */
		err = bad(d, PTS_ERR_BAD_FORMAT, "%s: no bytes %s", path,
			  off ? "after the offset" : "(an empty file)");
	} else {
		err = pts_topa_add_memory(d->t, phys, data + off, len - off,
					  path);
		if (err < 0) {
			char why[sizeof(d->t->err)];
			snprintf(why, sizeof(why), "%s", d->t->err);
			err = bad(d, -err, "%s", why);
		}
	}
	free(path);
	return err;
}

/* entry PHYS SIZE [int] [stop] | entry end PHYS | entry raw VALUE */
static int parse_entry(struct desc *d)
{
	if (!d->inline_open)
		return bad(d, PTS_ERR_BAD_FORMAT,
			   "'entry' outside a 'table' without a file");
	uint64_t e, v;
	int err;
	if (d->ntok >= 2 && tok_is(&d->tok[1], "end")) {
		if ((err = want_args(d, 2, 2)) < 0 || (err = num_arg(d, 2, &v)))
			return err;
		if (v & 0xfff)
			return bad(d, PTS_ERR_BAD_FORMAT,
				   "END target 0x%llx is not 4K aligned",
				   (unsigned long long)v);
		e = pts_topa_entry_end(v);
	} else if (d->ntok >= 2 && tok_is(&d->tok[1], "raw")) {
		if ((err = want_args(d, 2, 2)) < 0 || (err = num_arg(d, 2, &e)))
			return err;
	} else {
		if ((err = want_args(d, 2, 4)) < 0 || (err = num_arg(d, 1, &v)))
			return err;
		uint64_t size;
		const struct token *k = &d->tok[2];
		if (pts_topa_parse_bytes(k->s, k->e, &size) < 0 ||
		    size < 4096 || size > (UINT64_C(4096) << 15))
			return bad(
				d, PTS_ERR_BAD_FORMAT,
				"'%.*s' is not a ToPA region size (4K..128M)",
				(int)(k->e - k->s), k->s);
		if (v & 0xfff)
			return bad(d, PTS_ERR_BAD_FORMAT,
				   "region base 0x%llx is not 4K aligned",
				   (unsigned long long)v);
		unsigned code = 0;
		while ((UINT64_C(4096) << code) < size)
			code++;
		uint64_t flags = 0;
		for (unsigned i = 3; i < d->ntok; i++) {
			if (tok_is(&d->tok[i], "int"))
				flags |= PTS_TOPA_INT;
			else if (tok_is(&d->tok[i], "stop"))
				flags |= PTS_TOPA_STOP;
			else
				return bad(d, PTS_ERR_BAD_FORMAT,
					   "unknown entry flag '%.*s'",
					   (int)(d->tok[i].e - d->tok[i].s),
					   d->tok[i].s);
		}
		e = pts_topa_entry_region(v, code, flags);
	}
	if (d->inline_n > PTS_TOPA_MAX_INDEX)
		return bad(d, PTS_ERR_BAD_FORMAT,
			   "too many entries in a table");
	if (d->inline_n == d->inline_cap &&
	    pts_topa_grow((void **)&d->inline_buf, &d->inline_cap,
			  d->inline_n + 1, 8) < 0)
		return pts_topa_fail(d->t, PTS_ERR_NOMEM, "out of memory");
	pts_topa_store64(d->inline_buf + (size_t)d->inline_n * 8, e);
	d->inline_n++;
	return 0;
}

static int parse_table(struct desc *d)
{
	uint64_t phys;
	int err;
	if ((err = want_args(d, 1, 2)) < 0 || (err = num_arg(d, 1, &phys)) < 0)
		return err;
	if (phys & 0xfff)
		return bad(d, PTS_ERR_BAD_FORMAT,
			   "table 0x%llx is not 4K aligned",
			   (unsigned long long)phys);
	if ((err = at_line(d, d->line, pts_topa_add_table(d->t, phys))) < 0)
		return err;
	if (d->ntok == 3)
		return add_file(d, phys, &d->tok[2]);
	d->inline_open = 1;
	d->inline_phys = phys;
	d->inline_line = d->line;
	return 0;
}

static int parse_word(struct desc *d, const char *const *words, unsigned n,
		      unsigned *which)
{
	int err = want_args(d, 1, 1);
	if (err < 0)
		return err;
	for (unsigned i = 0; i < n; i++) {
		if (tok_is(&d->tok[1], words[i])) {
			*which = i;
			return 0;
		}
	}
	return bad(d, PTS_ERR_BAD_FORMAT, "unknown value '%.*s'",
		   (int)(d->tok[1].e - d->tok[1].s), d->tok[1].s);
}

static int parse_line(struct desc *d)
{
	static const char *const modes[] = {"topa", "single"};
	static const char *const wraps[] = {"detect", "no", "yes"};
	const struct token *k = &d->tok[0];
	uint64_t v;
	unsigned w = 0;
	int err;
	if (tok_is(k, "entry"))
		return parse_entry(d);
	if ((err = close_inline(d)) < 0)
		return err;
	if (tok_is(k, "table"))
		return parse_table(d);
	if (tok_is(k, "region") || tok_is(k, "memory")) {
		if ((err = want_args(d, 2, 2)) < 0 || (err = num_arg(d, 1, &v)))
			return err;
		return add_file(d, v, &d->tok[2]);
	}
	if (tok_is(k, "mode")) {
		if ((err = parse_word(d, modes, 2, &w)) == 0)
			pts_topa_set_mode(d->t, (enum pts_topa_mode)w);
		return err;
	}
	if (tok_is(k, "wrapped")) {
		if ((err = parse_word(d, wraps, 3, &w)) == 0)
			pts_topa_set_wrap(d->t, (enum pts_topa_wrap)w);
		return err;
	}
	if ((err = want_args(d, 1, 1)) < 0 || (err = num_arg(d, 1, &v)) < 0)
		return err;
	struct pts_topa *t = d->t;
	if (tok_is(k, "output_base")) {
		t->output_base = v;
		t->have_base = 1;
	} else if (tok_is(k, "output_mask_ptrs")) {
		t->mask_ptrs = v;
		t->have_mask = 1;
	} else if (tok_is(k, "status")) {
		t->status = v;
		t->have_status = 1;
	} else if (tok_is(k, "start")) {
		pts_topa_set_start(d->t, v);
	} else if (tok_is(k, "maxphyaddr")) {
		if (v > 64 || pts_topa_set_maxphyaddr(d->t, (unsigned)v) < 0)
			return bad(d, PTS_ERR_BAD_FORMAT,
				   "maxphyaddr must be 32..52");
	} else {
		return bad(d, PTS_ERR_BAD_FORMAT, "unknown directive '%.*s'",
			   (int)(k->e - k->s), k->s);
	}
	return 0;
}

/* Splits [s, e) into tokens, dropping a '#' comment. */
static int tokenize(struct desc *d, const char *s, const char *e)
{
	d->ntok = 0;
	while (s < e) {
		if (*s == '#')
			break;
		if (*s == ' ' || *s == '\t' || *s == '\r') {
			s++;
			continue;
		}
		if (*s == '\0')
			return bad(d, PTS_ERR_BAD_FORMAT, "NUL byte");
		if (d->ntok == MAX_TOKENS)
			return bad(d, PTS_ERR_BAD_FORMAT, "too many words");
		const char *b = s;
		while (s < e && *s != ' ' && *s != '\t' && *s != '\r' &&
		       *s != '#' && *s != '\0')
			s++;
		d->tok[d->ntok++] = (struct token){b, s};
	}
	return 0;
}

int pts_topa_parse_desc(struct pts_topa *t, const char *text, size_t len,
			const char *dir, const char *origin)
{
	struct desc d = {
		.t = t, .dir = dir, .origin = origin ? origin : "desc"};
	const char *p = text, *end = text + len;
	int err = 0;
	t->err[0] = '\0';
	while (p < end && err == 0) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		d.line++;
		err = tokenize(&d, p, le);
		if (err == 0 && d.ntok)
			err = parse_line(&d);
		p = nl ? nl + 1 : end;
	}
	if (err == 0)
		err = close_inline(&d);
	free(d.inline_buf);
	t->ready = 0;
	return err;
}

int pts_topa_load_desc(struct pts_topa *t, const char *path)
{
	const uint8_t *data;
	uint64_t len;
	int err = pts_topa_map_file(t, path, &data, &len);
	if (err < 0)
		return err;
	char *dir = strdup(path);
	if (!dir)
		return pts_topa_fail(t, PTS_ERR_NOMEM, "out of memory");
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	err = pts_topa_parse_desc(t, (const char *)data, (size_t)len,
				  slash ? (dir[0] ? dir : "/") : NULL, path);
	free(dir);
	return err;
}
