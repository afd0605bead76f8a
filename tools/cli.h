/* Helpers every ptscope subcommand shares: messages, option parsing,
 * number parsing, opening the trace, and a buffered standard output.
 *
 * Conventions:
 * - Messages go to stderr as "ptscope <cmd>: <text>".
 * - Exit status: PTS_EXIT_OK, PTS_EXIT_ERRORS (the input had errors),
 *   PTS_EXIT_USAGE (bad usage or I/O error).
 * - Options use getopt_long; call pts_cli_getopt() in a loop and hand
 *   '?' and ':' to pts_cli_bad_option().
 */
#ifndef PTS_TOOLS_CLI_H
#define PTS_TOOLS_CLI_H

#include <ptscope/packets.h>

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

enum { PTS_EXIT_OK = 0, PTS_EXIT_ERRORS = 1, PTS_EXIT_USAGE = 2 };

/* "ptscope <cmd>: <message>\n" on stderr. */
void pts_cli_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The message, then "Try 'ptscope <cmd> --help'."; returns PTS_EXIT_USAGE. */
int pts_cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Why a library call failed with @err on a file: for an I/O error, the
 * system's reason (errno, which the library leaves set then: "No such
 * file or directory", not "input/output error"), else pts_strerror(). */
const char *pts_cli_errstr(int err);

/* Reports that @path could not be written, with the system's reason
 * (errno, as fopen(), fwrite() or fclose() left it). */
void pts_cli_write_error(const char *cmd, const char *path);

/* ToPA input (issue #7): a packet cut by the end of a linearized buffer is
 * truncation, not a decode error. pts_cli_topa_cut_by() says why its last
 * packet may be cut ("ToPA STOP" when the write position is at the end of
 * a STOP region, else "end of buffer"); pts_cli_format_truncated() writes
 * the line that says so for bytes [@begin, @end) at @p (within @room, no
 * newline), as ptdump text or a JSON object, and returns its length. */
struct pts_topa_info;
const char *pts_cli_topa_cut_by(const struct pts_topa_info *info);
int pts_cli_format_truncated(char *p, size_t room, int jsonl, uint64_t begin,
			     uint64_t end, const char *why);

/* Reports why the configuration file @path did not load: @err from
 * pts_config_load(), @line where its parsing stopped, @why what is wrong
 * there when the parser said (struct pts_config.why; may be NULL). */
void pts_cli_config_error(const char *cmd, const char *path, int line,
			  int err, const char *why);

/* The first 18 bytes of ELF file @path (e_ident, e_type) into @h: 1, or
 * 0 when it is no ELF file or cannot be read. */
int pts_cli_elf_header(const char *path, unsigned char h[18]);

/* @path with its directory resolved (the file itself need not exist):
 * "a.pt" and "./a.pt" give one name. Returns NULL (free() it) when the
 * directory does not resolve. */
char *pts_cli_resolved_path(const char *path);

/* Whether @a and @b name one file: the same path, one existing file under
 * two names, or (while either is still to be written) one name in one
 * directory reached by two paths ("a.pt", "./a.pt"). */
int pts_cli_same_file(const char *a, const char *b);

/* pts_cli_errstr() for the argument of --elf (@raw 0) or --raw (@raw 1):
 * for a --raw that does not parse or maps no bytes, the form it takes. */
const char *pts_cli_image_errstr(int raw, int err);

/* getopt_long() with our settings: no messages from getopt itself (we
 * print our own) and options only before the operands are not required
 * (GNU permutation stays on). @shortopts should start with ':'. */
int pts_cli_getopt(int argc, char **argv, const char *shortopts,
		   const struct option *longopts);

/* Reports the option getopt rejected ('?' unknown, ':' missing
 * argument); returns PTS_EXIT_USAGE. */
int pts_cli_bad_option(const char *cmd, int ret, char **argv);

/* An unsigned number (decimal or 0x hex, as pts_parse_u64() reads it) no
 * larger than @max, said nothing about: 0, -1 for no number, -2 for one
 * above @max. */
int pts_cli_number(const char *arg, uint64_t max, uint64_t *value);

/* Parses an unsigned number (decimal or 0x hex) no larger than
 * @max for option @opt. Returns 0, or prints why not (a usage error) and
 * returns -1. */
int pts_cli_parse_u64(const char *cmd, const char *opt, const char *arg,
		      uint64_t max, uint64_t *value);

/* Which of the NULL-terminated @names option @opt's @arg is: its index
 * into *@index. Otherwise prints the choices ("--format: expected ptdump
 * or jsonl, got 'x'") and returns PTS_EXIT_USAGE. */
int pts_cli_parse_choice(const char *cmd, const char *opt, const char *arg,
			 const char *const *names, int *index);

/* --format @arg of a command that prints @text or jsonl: *@jsonl 0 or 1.
 * Returns 0, or prints the choices and returns PTS_EXIT_USAGE. */
int pts_cli_parse_format(const char *cmd, const char *arg, const char *text,
			 int *jsonl);

/* ptdump's --lastip and --no-offset (in @popts) with --format jsonl
 * (@jsonl) would change nothing: refused, naming @what ("dump", ...).
 * Returns 0 or PTS_EXIT_USAGE. */
int pts_cli_ptdump_only(const char *cmd, const char *what, int jsonl,
			const struct pts_print_opts *popts);

/* The operands from argv[@first] on: exactly one trace, else says what is
 * wrong ("no trace given", "one trace only, got 'B' too"). Returns 0 with
 * *@trace, or PTS_EXIT_USAGE. */
int pts_cli_trace_operand(const char *cmd, int argc, char **argv, int first,
			  const char **trace);

/* No operands from argv[@first] on, where the input is given otherwise
 * (ToPA, perf.data). Returns 0, or says so and returns PTS_EXIT_USAGE. */
int pts_cli_no_operand(const char *cmd, int argc, char **argv, int first);

/* Parses --cpu @arg (FAMILY/MODEL[/STEPPING] or none) into *@cpu.
 * Returns 0, or prints why not and returns PTS_EXIT_USAGE. */
int pts_cli_parse_cpu(const char *cmd, const char *arg, struct pts_cpu *cpu);

/* Opens the trace @path ("-" = standard input) with pts_source_open().
 * Returns 0, or prints why not and returns -1. */
int pts_cli_open_trace(const char *cmd, const char *path,
		       struct pts_source **src);

/* Seconds on a monotonic clock, for throughput figures. */
double pts_cli_now(void);

/* A buffered writer: lines are formatted straight into one big buffer
 * that goes out with fwrite() in large blocks. */
struct pts_out {
	FILE *file;
	char *buf;
	size_t len;
	size_t cap;
	int failed; /* a write failed */
	int err;    /* its errno */
};

/* Returns 0, or -1 on no memory. */
int pts_out_init(struct pts_out *out, FILE *file, size_t cap);
/* Room for at least @n more bytes (flushes when needed): a pointer to the
 * free space; its size is pts_out_room(). */
char *pts_out_reserve(struct pts_out *out, size_t n);
static inline size_t pts_out_room(const struct pts_out *out)
{
	return out->cap - out->len;
}
/* Keeps @n bytes written at the pointer pts_out_reserve() gave. */
static inline void pts_out_commit(struct pts_out *out, size_t n)
{
	out->len += n;
}
/* Keeps the @len bytes formatted at @p (from pts_out_reserve(), with room
 * for one more byte) as one line; a printer's error (@len < 0) drops it. */
static inline void pts_out_line(struct pts_out *out, char *p, int len)
{
	if (len < 0)
		return;
	p[len] = '\n';
	pts_out_commit(out, (size_t)len + 1);
}
void pts_out_puts(struct pts_out *out, const char *s);
/* @v as 16 lowercase hex digits at @p (as "%016" PRIx64 without the NUL,
 * a tenth of snprintf()'s time: `flow` writes one a line); returns
 * @p + 16. */
char *pts_out_hex16(char *p, uint64_t v);
/* @v in decimal (as "%" PRIu64) / lowercase hex without leading zeros
 * (as "%" PRIx64) at @p, no NUL; return the end (for lines printed per
 * instruction, as pts_out_hex16()). */
char *pts_out_dec(char *p, uint64_t v);
char *pts_out_hex(char *p, uint64_t v);
/* Writes what is buffered; returns 0 or -1 (also kept in @failed). */
int pts_out_flush(struct pts_out *out);
/* Flushes and frees; returns 0 or -1 when any write failed. */
int pts_out_fini(struct pts_out *out);
/* Says that writing @out failed, with the system's reason. */
void pts_out_error(const char *cmd, const struct pts_out *out);

#endif /* PTS_TOOLS_CLI_H */
