/* The small units of the packet layer: error texts and names, kind names,
 * ptdump's --cpu parsing, the errata table, byte sources, and the number
 * parser of specs and description files.
 */
#include <ptscope/packets.h>

#include "check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void errors(void)
{
	if (strcmp(pts_errname(-PTS_ERR_BAD_OPCODE), "BAD_OPCODE") != 0 ||
	    strcmp(pts_errname(PTS_ERR_BAD_OPCODE), "BAD_OPCODE") != 0)
		FAIL("pts_errname(BAD_OPCODE)");
	if (strcmp(pts_strerror(-PTS_ERR_AGAIN), "need more input") != 0 ||
	    strcmp(pts_strerror(PTS_ERR_AGAIN), "need more input") != 0)
		FAIL("pts_strerror(AGAIN)");
	if (strcmp(pts_errname(0), "OK") != 0)
		FAIL("pts_errname(0)");
	for (int e = 0; e < PTS_ERR_COUNT; e++)
		if (!pts_strerror(e)[0] || !pts_errname(-e)[0])
			FAIL("empty text for error %d", e);
	if (!pts_strerror(PTS_ERR_COUNT) || !pts_strerror(-PTS_ERR_COUNT) ||
	    !pts_errname(-2147483647 - 1) || !pts_strerror(12345))
		FAIL("out-of-range error codes");
	if (strcmp(pts_errname(PTS_ERR_COUNT), "UNKNOWN") != 0)
		FAIL("pts_errname(COUNT) = %s", pts_errname(PTS_ERR_COUNT));
}

static void kinds(void)
{
	if (strcmp(pts_pkt_kind_name(PTS_PKT_TIP_PGD), "tip.pgd") != 0 ||
	    strcmp(pts_pkt_kind_name(PTS_PKT_PAD), "pad") != 0 ||
	    strcmp(pts_pkt_kind_name(PTS_PKT_EVD), "evd") != 0)
		FAIL("kind names");
	if (strcmp(pts_pkt_kind_name(-1), "invalid") != 0 ||
	    strcmp(pts_pkt_kind_name(PTS_PKT_KIND_COUNT), "invalid") != 0)
		FAIL("invalid kind names");
	for (int k = 0; k < PTS_PKT_KIND_COUNT; k++)
		for (int j = 0; j < k; j++)
			if (strcmp(pts_pkt_kind_name(k), pts_pkt_kind_name(j)) == 0)
				FAIL("kinds %d and %d share a name", j, k);
}

static void cpu_parse(void)
{
	static const struct {
		const char *text;
		int ret;
		unsigned family, model, stepping;
	} rows[] = {
		{"6/78", 0, 6, 78, 0},
		{"6/94/3", 0, 6, 94, 3},
		{"0x6/0x5e/0x3", 0, 6, 0x5e, 3},
		{"none", 0, 0, 0, 0},
		{"65535/255/255", 0, 65535, 255, 255},
		{"6", -PTS_ERR_INVALID, 0, 0, 0},
		{"6/", -PTS_ERR_INVALID, 0, 0, 0},
		{"6/78/", -PTS_ERR_INVALID, 0, 0, 0},
		{"6/256", -PTS_ERR_INVALID, 0, 0, 0},
		{"65536/1", -PTS_ERR_INVALID, 0, 0, 0},
		{"-6/78", -PTS_ERR_INVALID, 0, 0, 0},
		{"6/78/1/2", -PTS_ERR_INVALID, 0, 0, 0},
		{"6/78x", -PTS_ERR_INVALID, 0, 0, 0},
		{"", -PTS_ERR_INVALID, 0, 0, 0},
		{" 6/78", -PTS_ERR_INVALID, 0, 0, 0},
		/* decimal, as every number users write: 085 is not octal */
		{"06/085/010", 0, 6, 85, 10},
		{"6/089", 0, 6, 89, 0},
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct pts_cpu cpu = {7, 7, 7};
		int r = pts_cpu_parse(rows[i].text, &cpu);

		if (r != rows[i].ret)
			FAIL("cpu \"%s\": %d, want %d", rows[i].text, r,
			     rows[i].ret);
		else if (r == 0 && (cpu.family != rows[i].family ||
				    cpu.model != rows[i].model ||
				    cpu.stepping != rows[i].stepping))
			FAIL("cpu \"%s\": %u/%u/%u", rows[i].text, cpu.family,
			     cpu.model, cpu.stepping);
	}
	if (pts_cpu_parse(NULL, NULL) != -PTS_ERR_INVALID)
		FAIL("cpu NULL");
}

static void errata(void)
{
	struct pts_cpu cpu = {6, 0x4e, 3};
	struct pts_errata e;

	/* Skylake client: the SKD/SKL set. */
	pts_cpu_errata(&cpu, &e);
	if (!e.bdm70 || !e.skd007 || !e.skd022 || !e.skd010 || !e.skl014 ||
	    !e.skl168 || e.bdm64 || e.apl11 || e.apl12 || e.skz84)
		FAIL("errata 6/0x4e");
	/* Broadwell. */
	cpu.model = 0x3d;
	pts_cpu_errata(&cpu, &e);
	if (!e.bdm70 || !e.bdm64 || e.skd007 || e.skl014)
		FAIL("errata 6/0x3d");
	/* Skylake server: SKZ84. */
	cpu.model = 0x55;
	pts_cpu_errata(&cpu, &e);
	if (!e.skz84 || !e.skl014 || !e.skd022 || !e.bdm70 || e.skd007)
		FAIL("errata 6/0x55");
	/* Ice Lake. */
	cpu.model = 0x7e;
	pts_cpu_errata(&cpu, &e);
	if (!e.bdm70 || !e.skl014 || !e.skd022 || e.apl11 || e.skz84)
		FAIL("errata 6/0x7e");
	/* Alder Lake. */
	cpu.model = 0x97;
	pts_cpu_errata(&cpu, &e);
	if (!e.apl11 || !e.bdm70 || e.apl12)
		FAIL("errata 6/0x97");
	/* Apollo Lake. */
	cpu.model = 0x5c;
	pts_cpu_errata(&cpu, &e);
	if (!e.apl11 || !e.apl12 || e.bdm70)
		FAIL("errata 6/0x5c");
	/* Goldmont Plus and later Atoms. */
	cpu.model = 0x7a;
	pts_cpu_errata(&cpu, &e);
	if (!e.apl11 || e.apl12 || e.bdm70)
		FAIL("errata 6/0x7a");
	/* Family 0x13. */
	cpu.family = 0x13;
	cpu.model = 0x01;
	pts_cpu_errata(&cpu, &e);
	if (!e.skz84 || !e.bdm70)
		FAIL("errata 0x13/0x01");
	/* Unknown CPUs and "none": no errata. */
	cpu.family = 6;
	cpu.model = 0x01;
	memset(&e, 0xff, sizeof(e));
	pts_cpu_errata(&cpu, &e);
	if (e.bdm70 || e.skd007 || e.apl11 || e.skz84)
		FAIL("errata of an unknown model");
	memset(&e, 0xff, sizeof(e));
	pts_cpu_errata(NULL, &e);
	if (e.bdm70 || e.skd007)
		FAIL("errata of no CPU");
	pts_cpu_errata(&cpu, NULL);
}

static void source(void)
{
	char path[] = "/tmp/pts_test_source_XXXXXX";
	size_t size = 3u << 20 | 12345;
	uint8_t *data = malloc(size);
	struct pts_source *src = NULL;
	struct pts_input in;
	size_t got = 0;
	int fd, r, ok = 1;

	if (!data) {
		FAIL("no memory");
		return;
	}
	for (size_t i = 0; i < size; i++)
		data[i] = (uint8_t)(i * 7 + (i >> 11));
	fd = mkstemp(path);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size) {
		FAIL("cannot write %s", path);
		free(data);
		return;
	}
	close(fd);

	if (pts_source_open(path, &src) != 0) {
		FAIL("pts_source_open(%s)", path);
	} else {
		while ((r = pts_source_next(src, &in)) == 1) {
			/* Bounded chunks, in order, nothing lost. */
			if (in.pos != 0 || in.size == 0 || in.size > (1u << 20) ||
			    got + in.size > size ||
			    memcmp(in.data, data + got, in.size) != 0)
				ok = 0;
			got += in.size;
		}
		if (r != 0 || !ok || got != size ||
		    pts_source_bytes(src) != size)
			FAIL("source read %zu of %zu bytes (r %d ok %d)", got,
			     size, r, ok);
		/* The end stays the end. */
		if (pts_source_next(src, &in) != 0 || in.size != 0)
			FAIL("source after the end");
		pts_source_close(src);
	}
	unlink(path);
	free(data);

	src = (struct pts_source *)1;
	if (pts_source_open("/nonexistent/pts/trace", &src) != -PTS_ERR_IO ||
	    src != NULL)
		FAIL("missing file");
	errno = 0;
	if (pts_source_open("/", &src) != -PTS_ERR_IO || src != NULL ||
	    errno != EISDIR)
		FAIL("a directory is not a trace");
	if (pts_source_open(NULL, &src) != -PTS_ERR_INVALID)
		FAIL("NULL path");
	pts_source_close(NULL);
	if (pts_source_bytes(NULL) != 0)
		FAIL("bytes of NULL");
}

static void numbers(void)
{
	static const struct {
		const char *text;
		int err;
		uint64_t value;
	} cases[] = {
		{"0", 0, 0},
		{"42", 0, 42},
		{"0x2A", 0, 42},
		{"0X2a", 0, 42},
		{"18446744073709551615", 0, UINT64_MAX},
		{"0xffffffffffffffff", 0, UINT64_MAX},
		{"18446744073709551616", -PTS_ERR_TOO_LARGE, 0},
		{"0x10000000000000000", -PTS_ERR_TOO_LARGE, 0},
		{"184467440737095516160z", -PTS_ERR_INVALID, 0},
		{"0400", 0, 400},
		{"010", 0, 10},
		{"", -PTS_ERR_INVALID, 0},
		{"0x", -PTS_ERR_INVALID, 0},
		{"-1", -PTS_ERR_INVALID, 0},
		{"+1", -PTS_ERR_INVALID, 0},
		{" 1", -PTS_ERR_INVALID, 0},
		{"1 ", -PTS_ERR_INVALID, 0},
		{"2a", -PTS_ERR_INVALID, 0},
		{"0x1g", -PTS_ERR_INVALID, 0},
		{"1K", -PTS_ERR_INVALID, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *t = cases[i].text;
		uint64_t v = 7;
		int err = pts_parse_u64(t, t + strlen(t), &v);
		CHECKF(err == cases[i].err, "\"%s\": %d", t, err);
		CHECKF(v == (err ? 7 : cases[i].value), "\"%s\": %llu", t,
		       (unsigned long long)v);
	}
	/* Only [s, end) counts: what follows is not read. */
	const char *t = "123junk";
	uint64_t v = 0;
	CHECK(pts_parse_u64(t, t + 3, &v) == 0 && v == 123);

	static const struct {
		const char *text;
		int err;
		uint64_t a, b;
	} ranges[] = {
		{"0x400000-0x4fffff", 0, 0x400000, 0x4fffff},
		{"0400-0500", 0, 400, 500},
		{"5-3", 0, 5, 3}, /* the order is the caller's to judge */
		{"5--1", -PTS_ERR_INVALID, 0, 0},
		{"5-", -PTS_ERR_INVALID, 0, 0},
		{"-5", -PTS_ERR_INVALID, 0, 0},
		{"5", -PTS_ERR_INVALID, 0, 0},
		{"", -PTS_ERR_INVALID, 0, 0},
		{"1-2-3", -PTS_ERR_INVALID, 0, 0},
		{"1-18446744073709551616", -PTS_ERR_TOO_LARGE, 0, 0},
	};
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		const char *r = ranges[i].text;
		uint64_t a = 7, b = 7;
		int err = pts_parse_range(r, r + strlen(r), &a, &b);
		CHECKF(err == ranges[i].err, "\"%s\": %d", r, err);
		CHECKF(err ? a == 7 && b == 7
			   : a == ranges[i].a && b == ranges[i].b,
		       "\"%s\": %llx-%llx", r, (unsigned long long)a,
		       (unsigned long long)b);
	}
}

int main(void)
{
	errors();
	kinds();
	cpu_parse();
	errata();
	source();
	numbers();
	return pts_check_exit();
}
