/* Internal to packets/: the bounded text writer both printers share.
 *
 * Printing is what limits `ptscope dump`, so numbers are formatted by hand
 * (no snprintf per field). The writer counts what it would have written
 * past @cap, so one check at the end tells whether the line fit.
 */
#ifndef PTS_PRINT_BUF_H
#define PTS_PRINT_BUF_H

#include <ptscope/packets.h>

#include <stddef.h>
#include <stdint.h>

struct pts_pbuf {
	char *out;
	size_t cap;
	size_t len; /* may pass @cap: then the text did not fit */
};

static inline void pts_pb_init(struct pts_pbuf *b, char *out, size_t cap)
{
	b->out = out;
	b->cap = cap;
	b->len = 0;
}

static inline void pts_pb_putc(struct pts_pbuf *b, char c)
{
	if (b->len < b->cap)
		b->out[b->len] = c;
	b->len++;
}

static inline void pts_pb_puts(struct pts_pbuf *b, const char *s)
{
	while (*s)
		pts_pb_putc(b, *s++);
}

/* At most @max characters of @s. */
static inline void pts_pb_putn(struct pts_pbuf *b, const char *s, size_t max)
{
	for (size_t i = 0; i < max && s[i]; i++)
		pts_pb_putc(b, s[i]);
}

/* Lower-case hex, zero-padded to at least @width digits (0: no padding). */
static inline void pts_pb_hex(struct pts_pbuf *b, uint64_t v, unsigned width)
{
	char tmp[16];
	unsigned n = 0;
	do {
		tmp[n++] = "0123456789abcdef"[v & 0xf];
		v >>= 4;
	} while (v);
	while (n < width && n < 16)
		tmp[n++] = '0';
	while (n)
		pts_pb_putc(b, tmp[--n]);
}

static inline void pts_pb_dec(struct pts_pbuf *b, uint64_t v)
{
	char tmp[20];
	unsigned n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		pts_pb_putc(b, tmp[--n]);
}

/* Spaces until the text written since @from is @width wide. */
static inline void pts_pb_pad(struct pts_pbuf *b, size_t from, size_t width)
{
	while (b->len - from < width)
		pts_pb_putc(b, ' ');
}

/* Terminates the text; returns its length, or -PTS_ERR_AGAIN when it and
 * its NUL did not fit. */
static inline int pts_pb_finish(struct pts_pbuf *b)
{
	if (b->len >= b->cap) {
		if (b->cap)
			b->out[b->cap - 1] = '\0';
		return -PTS_ERR_AGAIN;
	}
	b->out[b->len] = '\0';
	return (int)b->len;
}

#endif /* PTS_PRINT_BUF_H */
