/* Shared helpers of the ptscope subcommands (see cli.h). */
#include "cli.h"

#include <ptscope/model.h>
#include <ptscope/topa.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

__attribute__((format(printf, 2, 0))) static void
verror(const char *cmd, const char *fmt, va_list ap)
{
	fprintf(stderr, "ptscope %s: ", cmd);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void pts_cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	verror(cmd, fmt, ap);
	va_end(ap);
}

int pts_cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	verror(cmd, fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try 'ptscope %s --help'.\n", cmd);
	return PTS_EXIT_USAGE;
}

int pts_cli_getopt(int argc, char **argv, const char *shortopts,
		   const struct option *longopts)
{
	opterr = 0;
	return getopt_long(argc, argv, shortopts, longopts, NULL);
}

int pts_cli_bad_option(const char *cmd, int ret, char **argv)
{
	/* getopt leaves the offending word just before optind */
	const char *word = optind > 0 ? argv[optind - 1] : "?";

	if (ret == ':')
		return pts_cli_usage_error(cmd, "option '%s' needs an argument",
					   word);
	if (optopt && strncmp(word, "--", 2) != 0)
		return pts_cli_usage_error(cmd, "unknown option '-%c'", optopt);
	return pts_cli_usage_error(cmd, "unknown option '%s'", word);
}

int pts_cli_number(const char *arg, uint64_t max, uint64_t *value)
{
	uint64_t v;
	const int err = arg ? pts_parse_u64(arg, arg + strlen(arg), &v)
			    : -PTS_ERR_INVALID;

	if (err == -PTS_ERR_TOO_LARGE || (!err && v > max))
		return -2;
	if (err < 0)
		return -1;
	*value = v;
	return 0;
}

int pts_cli_parse_u64(const char *cmd, const char *opt, const char *arg,
		      uint64_t max, uint64_t *value)
{
	const int err = pts_cli_number(arg, max, value);

	if (err == -2)
		pts_cli_usage_error(cmd, "%s: %s is too large (at most %llu)",
				    opt, arg, (unsigned long long)max);
	else if (err < 0)
		pts_cli_usage_error(cmd, "%s: expected a number, got '%s'", opt,
				    arg ? arg : "");
	return err < 0 ? -1 : 0;
}

const char *pts_cli_errstr(int err)
{
	if (err != -PTS_ERR_IO || !errno)
		return pts_strerror(err);
	/* what the mappers set for a device, pipe or socket */
	return errno == ENODEV ? "not a regular file" : strerror(errno);
}

int pts_cli_parse_choice(const char *cmd, const char *opt, const char *arg,
			 const char *const *names, int *index)
{
	char list[256];
	size_t len = 0;
	int n = 0;

	for (; names[n]; n++)
		if (strcmp(arg, names[n]) == 0) {
			*index = n;
			return 0;
		}
	list[0] = 0;
	for (int i = 0; i < n && len < sizeof(list); i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
					i == 0	       ? ""
					: i == n - 1 ? " or "
						     : ", ",
					names[i]);
	return pts_cli_usage_error(cmd, "%s: expected %s, got '%s'", opt, list,
				   arg);
}

int pts_cli_parse_format(const char *cmd, const char *arg, const char *text,
			 int *jsonl)
{
	const char *const names[] = {text, "jsonl", NULL};

	return pts_cli_parse_choice(cmd, "--format", arg, names, jsonl);
}

int pts_cli_ptdump_only(const char *cmd, const char *what, int jsonl,
			const struct pts_print_opts *popts)
{
	if (!jsonl || (!popts->show_lastip && popts->show_offset))
		return 0;
	return pts_cli_usage_error(cmd, "%s applies to %s's default format "
					"only",
				   popts->show_lastip ? "--lastip"
						      : "--no-offset",
				   what);
}

int pts_cli_trace_operand(const char *cmd, int argc, char **argv, int first,
			  const char **trace)
{
	if (first >= argc)
		return pts_cli_usage_error(cmd, "no trace given");
	if (first + 1 < argc)
		return pts_cli_usage_error(cmd, "one trace only, got '%s' too",
					   argv[first + 1]);
	*trace = argv[first];
	return 0;
}

int pts_cli_no_operand(const char *cmd, int argc, char **argv, int first)
{
	if (first < argc)
		return pts_cli_usage_error(
			cmd, "unexpected '%s': the trace is given already",
			argv[first]);
	return 0;
}

int pts_cli_parse_cpu(const char *cmd, const char *arg, struct pts_cpu *cpu)
{
	if (pts_cpu_parse(arg, cpu) < 0)
		return pts_cli_usage_error(cmd,
					   "--cpu: expected FAMILY/MODEL"
					   "[/STEPPING] or none, got '%s'",
					   arg);
	return 0;
}

void pts_cli_write_error(const char *cmd, const char *path)
{
	pts_cli_error(cmd, "cannot write %s: %s", path, strerror(errno));
}

/* Line @n (from 1) of the file @path, without its newline, into @buf
 * (cut to @cap - 1 bytes; "" when it cannot be read). Returns whether a
 * line up to @n is the version line a configuration starts with. */
static int config_line(const char *path, int n, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	int version = 0;
	buf[0] = '\0';
	for (int i = 1; f && i <= n && fgets(buf, (int)cap, f); i++) {
		/* the rest of a line too long for @buf */
		int ch = 0;
		if (!strchr(buf, '\n'))
			while ((ch = fgetc(f)) != EOF && ch != '\n')
				;
		version |= !strncmp(buf + strspn(buf, " \t"),
				    "ptscope-config", 14);
	}
	if (f)
		fclose(f);
	buf[strcspn(buf, "\r\n")] = '\0';
	return version;
}

void pts_cli_config_error(const char *cmd, const char *path, int line,
			  int err, const char *why)
{
	char text[96];
	if (err == -PTS_ERR_IO) {
		pts_cli_error(cmd, "cannot read %s: %s", path,
			      pts_cli_errstr(err));
		return;
	}
	if (err == -PTS_ERR_UNSUPPORTED) {
		pts_cli_error(cmd,
			      "%s: more than %u MiB: not a ptscope "
			      "configuration (fixtures/FORMATS.md)",
			      path, PTS_CONFIG_MAX_BYTES >> 20);
		return;
	}
	const int version = config_line(path, line, text, sizeof(text));
	if (err != -PTS_ERR_BAD_FORMAT && err != -PTS_ERR_BAD_CONFIG) {
		pts_cli_error(cmd, "%s:%d: %s", path, line, pts_strerror(err));
	} else if (version && why) {
		pts_cli_error(cmd, "%s:%d: '%s': %s", path, line, text, why);
	} else if (!version) {
		pts_cli_error(cmd,
			      "%s:%d: not a ptscope configuration (its first "
			      "directive is 'ptscope-config 1'; "
			      "fixtures/FORMATS.md)",
			      path, line);
	} else if (err == -PTS_ERR_BAD_CONFIG) {
		pts_cli_error(cmd,
			      "%s:%d: '%s': values that contradict each other "
			      "(a range A-B with A above B, too many EEXIT "
			      "targets, an enclave ending before it begins or "
			      "overlapping one before it)",
			      path, line, text);
	} else {
		pts_cli_error(cmd,
			      "%s:%d: cannot parse '%s' (an unknown directive "
			      "or a bad value; fixtures/FORMATS.md)",
			      path, line, text);
	}
}

int pts_cli_elf_header(const char *path, unsigned char h[18])
{
	FILE *f = fopen(path, "rb");
	size_t n = f ? fread(h, 1, 18, f) : 0;
	if (f)
		fclose(f);
	return n == 18 && memcmp(h, "\177ELF", 4) == 0;
}

char *pts_cli_resolved_path(const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	char *dir = strdup(slash ? path : "."), *real, *out = NULL;

	if (!dir)
		return NULL;
	if (slash) /* "/x" lies in "/", "d/x" in "d" */
		dir[slash == path ? 1 : slash - path] = 0;
	real = realpath(dir, NULL);
	if (real && (out = malloc(strlen(real) + strlen(base) + 2)))
		sprintf(out, "%s/%s", real, base);
	free(real);
	free(dir);
	return out;
}

/* stat() of @path, where "-" is standard input (a trace read from it may
 * be a file redirected in). */
static int stat_path(const char *path, struct stat *st)
{
	return strcmp(path, "-") ? stat(path, st) : fstat(STDIN_FILENO, st);
}

int pts_cli_same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	if (!strcmp(a, b))
		return 1;
	if (stat_path(a, &sa) == 0 && stat_path(b, &sb) == 0)
		return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	/* not both there yet: the same name in the same directory */
	char *ra = pts_cli_resolved_path(a), *rb = pts_cli_resolved_path(b);
	const int same = ra && rb && !strcmp(ra, rb);
	free(ra);
	free(rb);
	return same;
}

const char *pts_cli_image_errstr(int raw, int err)
{
	if (raw && err == -PTS_ERR_INVALID)
		return "expected FILE[:FROM[-TO]]:ADDR, FROM below TO, bytes "
		       "inside the file, the range not wrapping around";
	if (!raw && err == -PTS_ERR_BAD_FORMAT)
		return "not an ELF file, or a damaged one, or one with no "
		       "loadable segment";
	if (!raw && err == -PTS_ERR_INVALID)
		return "at that BASE a segment runs past the top of the "
		       "address space";
	return pts_cli_errstr(err);
}

/* Whether file @path starts with perf.data's magic. */
static int is_perf_data(const char *path)
{
	char magic[8];
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : NULL;
	const int yes = f && fread(magic, 1, 8, f) == 8 &&
			memcmp(magic, "PERFILE2", 8) == 0;
	if (f)
		fclose(f);
	return yes;
}

int pts_cli_open_trace(const char *cmd, const char *path,
		       struct pts_source **src)
{
	if (is_perf_data(path)) {
		/* decoded as raw PT it gives garbage and plausible gaps */
		pts_cli_error(cmd,
			      "%s is a perf.data capture, not a raw trace: "
			      "`ptscope perf dump|flow|windows %s` reads it",
			      path, path);
		return -1;
	}
	errno = 0;
	const int err = pts_source_open(path, src);

	if (err >= 0)
		return 0;
	pts_cli_error(cmd, "cannot open %s: %s",
		      strcmp(path, "-") ? path : "standard input",
		      pts_cli_errstr(err));
	return -1;
}

double pts_cli_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int pts_out_init(struct pts_out *out, FILE *file, size_t cap)
{
	out->file = file;
	out->len = 0;
	out->cap = cap;
	out->failed = 0;
	out->err = 0;
	out->buf = malloc(cap);
	return out->buf ? 0 : -1;
}

int pts_out_flush(struct pts_out *out)
{
	if (out->len && !out->failed &&
	    fwrite(out->buf, 1, out->len, out->file) != out->len) {
		out->failed = 1;
		out->err = errno;
	}
	out->len = 0;
	if (!out->failed && fflush(out->file) != 0) {
		out->failed = 1;
		out->err = errno;
	}
	return out->failed ? -1 : 0;
}

char *pts_out_reserve(struct pts_out *out, size_t n)
{
	if (out->cap - out->len < n)
		pts_out_flush(out);
	return out->buf + out->len;
}

void pts_out_puts(struct pts_out *out, const char *s)
{
	size_t n = strlen(s);

	while (n) {
		size_t room = out->cap - out->len;
		if (!room) {
			pts_out_flush(out);
			room = out->cap;
		}
		const size_t k = n < room ? n : room;
		memcpy(out->buf + out->len, s, k);
		out->len += k;
		s += k;
		n -= k;
	}
}

const char *pts_cli_topa_cut_by(const struct pts_topa_info *info)
{
	return info->stopped ? "ToPA STOP" : "end of buffer";
}

int pts_cli_format_truncated(char *p, size_t room, int jsonl, uint64_t begin,
			     uint64_t end, const char *why)
{
	const int n =
		jsonl ? snprintf(p, room,
				 "{\"truncated\":\"%s\",\"offset\":%" PRIu64
				 ",\"end\":%" PRIu64 "}",
				 why, begin, end)
		      : snprintf(p, room,
				 "[%" PRIx64 "-%" PRIx64 ": truncated: trace "
				 "ends inside a packet (%s)]",
				 begin, end, why);
	return n < 0 ? 0 : (size_t)n < room ? n : (int)room - 1;
}

static const char hex_digits[16] = "0123456789abcdef";

char *pts_out_hex16(char *p, uint64_t v)
{
	for (int i = 15; i >= 0; i--, v >>= 4)
		p[i] = hex_digits[v & 0xf];
	return p + 16;
}

char *pts_out_dec(char *p, uint64_t v)
{
	int n = 1;
	for (uint64_t t = v; t >= 10; t /= 10)
		n++;
	for (int i = n - 1; i >= 0; i--, v /= 10)
		p[i] = (char)('0' + v % 10);
	return p + n;
}

char *pts_out_hex(char *p, uint64_t v)
{
	const int n = v ? (67 - __builtin_clzll(v)) / 4 : 1;
	for (int i = n - 1; i >= 0; i--, v >>= 4)
		p[i] = hex_digits[v & 0xf];
	return p + n;
}

void pts_out_error(const char *cmd, const struct pts_out *out)
{
	pts_cli_error(cmd, "cannot write the output: %s",
		      out->err ? strerror(out->err) : "write error");
}

int pts_out_fini(struct pts_out *out)
{
	const int r = pts_out_flush(out);
	free(out->buf);
	out->buf = NULL;
	out->cap = 0;
	return r;
}
