/* The trace configuration file (model/config_file.c, issue #3): every key
 * parsed, the writer's text read back to the same configuration and
 * written again to the same text, and malformed lines refused with the
 * right code and line number. */
#include "check.h"

#include <ptscope/model.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Every key once, with comments, blank lines and a CRLF line. */
static const char every_key[] =
	"# written by hand\n"
	"ptscope-config 1\n"
	"\n"
	"ctl 0x210000260f  # TraceEn ...\n"
	"addr0 0x401000 0x401fff\n"
	"addr1 0x500000 0x500fff\r\n"
	"cr3_match 0x1000\n"
	"cpuid_15 2 200 24000000\n"
	"nom_freq 24\n"
	"mtc_freq 3\n"
	"cpu 6/142/10\n"
	"   image elf 0 bin/demo prog\n"
	"image raw 0x10 0x40 0xffffffff81000000 /abs/kernel.bin\n"
	"enclave 0x500000 0x501000 production entry=0x500000 aep=0x400138 "
	"eexit=0x400136 eexit=0x400200 name=demo\n"
	"enclave 0x600000 0x602000 debug\n";

static void check_every_key(const struct pts_config *cfg)
{
	const struct pts_trace_config *t = &cfg->trace;
	CHECK_EQ(t->ctl, 0x210000260full);
	CHECK_EQ(t->addr_a[0], 0x401000);
	CHECK_EQ(t->addr_b[0], 0x401fff);
	CHECK_EQ(t->addr_a[1], 0x500000);
	CHECK_EQ(t->addr_b[1], 0x500fff);
	CHECK_EQ(t->cr3_match, 0x1000);
	CHECK_EQ(t->cpuid_15_eax, 2);
	CHECK_EQ(t->cpuid_15_ebx, 200);
	CHECK_EQ(t->cpuid_15_ecx, 24000000);
	CHECK_EQ(t->nom_freq, 24);
	CHECK_EQ(t->mtc_freq, 3);
	CHECK_EQ(t->known, PTS_CFG_CTL | PTS_CFG_ADDR | PTS_CFG_CR3 |
				   PTS_CFG_CPUID15 | PTS_CFG_NOMFREQ |
				   PTS_CFG_MTCFREQ);
	CHECK_EQ(t->cpu.family, 6);
	CHECK_EQ(t->cpu.model, 142);
	CHECK_EQ(t->cpu.stepping, 10);
	CHECK_EQ(cfg->n_images, 2);
	if (cfg->n_images == 2) {
		CHECK_EQ(cfg->images[0].kind, PTS_IMAGE_ELF);
		CHECK_EQ(cfg->images[0].base, 0);
		CHECK(strcmp(cfg->images[0].path, "/cfg/dir/bin/demo prog") == 0);
		CHECK_EQ(cfg->images[1].kind, PTS_IMAGE_RAW);
		CHECK_EQ(cfg->images[1].from, 0x10);
		CHECK_EQ(cfg->images[1].to, 0x40);
		CHECK_EQ(cfg->images[1].addr, 0xffffffff81000000ull);
		CHECK(strcmp(cfg->images[1].path, "/abs/kernel.bin") == 0);
	}
	CHECK_EQ(cfg->n_enclaves, 2);
	CHECK(t->enclaves == cfg->enclaves && t->n_enclaves == cfg->n_enclaves);
	if (cfg->n_enclaves == 2) {
		const struct pts_enclave *e = &cfg->enclaves[0];
		CHECK_EQ(e->begin, 0x500000);
		CHECK_EQ(e->end, 0x501000);
		CHECK_EQ(e->kind, PTS_ENCLAVE_PRODUCTION);
		CHECK_EQ(cfg->enclave_entry[0], 0x500000);
		CHECK(e->has_aep && e->aep == 0x400138);
		CHECK_EQ(e->n_eexit, 2);
		CHECK_EQ(e->eexit[0], 0x400136);
		CHECK_EQ(e->eexit[1], 0x400200);
		CHECK(strcmp(e->name, "demo") == 0);
		e = &cfg->enclaves[1];
		CHECK_EQ(e->kind, PTS_ENCLAVE_DEBUG);
		CHECK_EQ(e->end - e->begin, 0x2000);
		CHECK(!e->has_aep && !e->n_eexit && !e->name[0]);
		CHECK_EQ(cfg->enclave_entry[1], 0);
	}
}

/* @cfg as text (no relative paths). Caller frees. */
static char *write_text(const struct pts_config *cfg, size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);
	CHECK(f != NULL);
	if (!f)
		abort();
	CHECK_EQ(pts_config_write(cfg, NULL, f), 0);
	fclose(f);
	return text;
}

static void test_round_trip(void)
{
	struct pts_config a, b;
	int line = -1;
	pts_config_init(&a);
	pts_config_init(&b);
	CHECK_EQ(pts_config_parse(&a, every_key, strlen(every_key), "/cfg/dir",
				  &line), 0);
	CHECK_EQ(line, -1); /* untouched on success */
	check_every_key(&a);
	/* each image knows its line, for messages about its file */
	if (a.n_images == 2) {
		CHECK_EQ(a.images[0].line, 12);
		CHECK_EQ(a.images[1].line, 13);
	}

	size_t len1, len2;
	char *t1 = write_text(&a, &len1);
	/* Paths are absolute now: no base directory needed. */
	CHECK_EQ(pts_config_parse(&b, t1, len1, "/elsewhere", &line), 0);
	check_every_key(&b);
	char *t2 = write_text(&b, &len2);
	CHECK(len1 == len2 && memcmp(t1, t2, len1) == 0);
	/* The writer spells the CTL bits out. */
	CHECK(strstr(t1, "# TraceEn CYCEn OS User MTCEn TSCEn BranchEn") !=
	      NULL);
	CHECK(strstr(t1, "ADDR0=filter ADDR1=stop\n") != NULL);
	free(t1);
	free(t2);
	pts_config_fini(&a);
	pts_config_fini(&b);
	pts_config_fini(NULL);
}

static void test_ctl_text(void)
{
	char buf[256];
	uint64_t ctl = PTS_CTL_TRACEEN | PTS_CTL_USER | PTS_CTL_BRANCHEN |
		       (3ull << 14) | (2ull << PTS_CTL_CYCTHRESH_SHIFT) |
		       (1ull << PTS_CTL_PSBFREQ_SHIFT) |
		       (1ull << PTS_CTL_ADDR_CFG_SHIFT(0)) |
		       (2ull << PTS_CTL_ADDR_CFG_SHIFT(1));
	int n = pts_config_ctl_text(ctl, buf, sizeof(buf));
	CHECK(strcmp(buf, "TraceEn User BranchEn MTCFreq=3 CycThresh=2 "
			  "PSBFreq=1 ADDR0=filter ADDR1=stop") == 0);
	CHECK_EQ(n, strlen(buf));
	/* Cut to the buffer, full length returned. */
	CHECK_EQ(pts_config_ctl_text(ctl, buf, 8), n);
	CHECK(strcmp(buf, "TraceEn") == 0);
}

/* Relative image paths: joined to the configuration's directory on
 * reading, made relative to a directory on writing. */
static void test_relative_paths(void)
{
	const char *root = getenv("PTS_SOURCE_ROOT");
	if (!root)
		return; /* realpath() needs files that exist */
	char path[4096], dir[4096];
	snprintf(path, sizeof(path), "%s/fixtures/FORMATS.md", root);
	snprintf(dir, sizeof(dir), "%s/tests/unit", root);
	struct pts_config cfg;
	pts_config_init(&cfg);
	struct pts_image_spec img = {PTS_IMAGE_ELF, path, 0, 0, 0, 0, 0};
	CHECK_EQ(pts_config_add_image(&cfg, &img), 0);
	char *text = NULL;
	size_t len;
	FILE *f = open_memstream(&text, &len);
	CHECK_EQ(pts_config_write(&cfg, dir, f), 0);
	fclose(f);
	CHECK(strstr(text, "image elf 0x0 ../../fixtures/FORMATS.md\n") != NULL);
	free(text);
	/* Read back relative to that directory: the same file. */
	pts_config_fini(&cfg);
	const char *line = "ptscope-config 1\nimage elf 0 ../../fixtures/FORMATS.md\n";
	CHECK_EQ(pts_config_parse(&cfg, line, strlen(line), dir, NULL), 0);
	char *back = cfg.n_images ? realpath(cfg.images[0].path, NULL) : NULL;
	char *want = realpath(path, NULL);
	CHECK(back && want && strcmp(back, want) == 0);
	free(back);
	free(want);
	pts_config_fini(&cfg);
	CHECK_EQ(cfg.n_images, 0);
}

struct bad_case {
	const char *text;
	int err;
	int line;
};

static const struct bad_case bad_cases[] = {
	{"", -PTS_ERR_BAD_FORMAT, 1},
	{"# only a comment\n", -PTS_ERR_BAD_FORMAT, 1},
	{"ctl 0x1\n", -PTS_ERR_BAD_FORMAT, 1},
	{"ptscope-config 2\n", -PTS_ERR_BAD_FORMAT, 1},
	{"ptscope-config\n", -PTS_ERR_BAD_FORMAT, 1},
	{"ptscope-config 1\nctl\n", -PTS_ERR_BAD_FORMAT, 2},
	{"ptscope-config 1\n\n# x\nctl 0x1 0x2\n", -PTS_ERR_BAD_FORMAT, 4},
	{"ptscope-config 1\nctl -1\n", -PTS_ERR_BAD_FORMAT, 2},
	{"ptscope-config 1\nctl 12abc\n", -PTS_ERR_BAD_FORMAT, 2},
	{"ptscope-config 1\nctl 0x10000000000000000\n", -PTS_ERR_BAD_FORMAT, 2},
	{"ptscope-config 1\naddr4 1 2\n", -PTS_ERR_BAD_FORMAT, 2},
	{"ptscope-config 1\naddr0 1\n", -PTS_ERR_BAD_FORMAT, 2},
	{"ptscope-config 1\naddr0 5 2\n", -PTS_ERR_BAD_CONFIG, 2},
	{"ptscope-config 1\ncr3_match\n", -PTS_ERR_BAD_FORMAT, 2},
	{"ptscope-config 1\ncpuid_15 1 2\n", -PTS_ERR_BAD_FORMAT, 2},
	{"ptscope-config 1\ncpuid_15 1 2 0x100000000\n", -PTS_ERR_BAD_FORMAT, 2},
	{"ptscope-config 1\nnom_freq 256\n", -PTS_ERR_BAD_FORMAT, 2},
	/* a zero says "not known": the line is left out instead */
	{"ptscope-config 1\ncpuid_15 0 200 24000000\n", -PTS_ERR_BAD_FORMAT, 2},
	{"ptscope-config 1\ncpuid_15 2 0 0\n", -PTS_ERR_BAD_FORMAT, 2},
	{"ptscope-config 1\nnom_freq 0\n", -PTS_ERR_BAD_FORMAT, 2},
	{"ptscope-config 1\nmtc_freq 16\n", -PTS_ERR_BAD_FORMAT, 2},
	{"ptscope-config 1\ncpu six\n", -PTS_ERR_BAD_FORMAT, 2},
	{"ptscope-config 1\nimage\n", -PTS_ERR_BAD_FORMAT, 2},
	{"ptscope-config 1\nimage elf\n", -PTS_ERR_BAD_FORMAT, 2},
	{"ptscope-config 1\nimage elf 0\n", -PTS_ERR_BAD_FORMAT, 2},
	{"ptscope-config 1\nimage raw 0 0 x.bin\n", -PTS_ERR_BAD_FORMAT, 2},
	{"ptscope-config 1\nimage coff 0 x\n", -PTS_ERR_BAD_FORMAT, 2},
	{"ptscope-config 1\nenclave 0x1000\n", -PTS_ERR_BAD_FORMAT, 2},
	/* an address belongs to one enclave at most; touching is fine */
	{"ptscope-config 1\nenclave 0x1000 0x3000 production\n"
	 "enclave 0x2000 0x4000 debug\n",
	 -PTS_ERR_BAD_CONFIG, 3},
	{"ptscope-config 1\nenclave 0x1000 0x3000 production\n"
	 "enclave 0x1000 0x3000 production\n",
	 -PTS_ERR_BAD_CONFIG, 3},
	{"ptscope-config 1\nenclave 1 2 secret\n", -PTS_ERR_BAD_FORMAT, 2},
	{"ptscope-config 1\nenclave 2 1 debug\n", -PTS_ERR_BAD_CONFIG, 2},
	{"ptscope-config 1\nenclave 1 2 debug aep\n", -PTS_ERR_BAD_FORMAT, 2},
	{"ptscope-config 1\nenclave 1 2 debug aep=x\n", -PTS_ERR_BAD_FORMAT, 2},
	{"ptscope-config 1\nenclave 1 2 debug tcs=1\n", -PTS_ERR_BAD_FORMAT, 2},
	{"ptscope-config 1\nenclave 1 2 debug name="
	 "a_name_of_thirty_two_characters_\n", -PTS_ERR_BAD_FORMAT, 2},
	{"ptscope-config 1\nenclave 1 2 debug eexit=1 eexit=2 eexit=3 eexit=4 "
	 "eexit=5\n", -PTS_ERR_BAD_CONFIG, 2},
	{"ptscope-config 1\nnom_freq 24\nbogus 1\n", -PTS_ERR_BAD_FORMAT, 3},
};

/* An enclave line says what is wrong with it as --enclave says it
 * (pts_config.why; the CLI printed only "cannot parse" or "values that
 * contradict each other"); other lines leave it NULL. */
static void test_enclave_reasons(void)
{
	static const char *const cases[][2] = {
		{"enclave 0x1000\n",
		 "BEGIN and END are numbers, then the kind"},
		{"enclave 1 2 secret\n", "the kind is production or debug"},
		{"enclave 2 1 debug\n", "END is not above BEGIN"},
		{"enclave 1 2 debug aep=x\n", "aep= takes an address"},
		{"enclave 1 2 debug aep=1 aep=2\n",
		 "aep= given twice (one AEP per enclave)"},
		{"enclave 1 2 debug tcs=1\n",
		 "an unknown option (aep=, eexit=, entry=, name=)"},
		{"enclave 1 3 debug\nenclave 2 4 debug\n",
		 "it overlaps an enclave given before"},
		{"enclave 1 2 debug\nbogus 1\n", NULL},
	};
	/* a version this ptscope does not read (it said "cannot parse") */
	struct pts_config v2;
	pts_config_init(&v2);
	CHECK(pts_config_parse(&v2, "ptscope-config 2\n", 17, NULL, NULL) < 0);
	CHECKF(v2.why && !strcmp(v2.why, "this ptscope reads version 1"),
	       "version 2: why \"%s\"", v2.why ? v2.why : "(none)");
	pts_config_fini(&v2);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[256];
		struct pts_config cfg;
		pts_config_init(&cfg);
		snprintf(text, sizeof(text), "ptscope-config 1\n%s",
			 cases[i][0]);
		CHECK(pts_config_parse(&cfg, text, strlen(text), NULL, NULL) <
		      0);
		const char *want = cases[i][1], *got = cfg.why;
		CHECKF(want ? got && !strcmp(got, want) : !got,
		       "%s: why \"%s\", want \"%s\"", cases[i][0],
		       got ? got : "(none)", want ? want : "(none)");
		pts_config_fini(&cfg);
	}
}

static void test_bad_lines(void)
{
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct pts_config cfg;
		int line = 0;
		pts_config_init(&cfg);
		int err = pts_config_parse(&cfg, c->text, strlen(c->text), NULL,
					   &line);
		if (err != c->err || line != c->line) {
			FAIL("case %zu \"%s\": got %s line %d, want %s line %d",
			     i, c->text, pts_strerror(err), line,
			     pts_strerror(c->err), c->line);
		}
		pts_config_fini(&cfg);
	}
	/* A NUL byte in a line, in a value, a path or a comment: the line is
	 * wrong, not cut short (fuzz_config found "ctl 0x1<NUL>junk" taken as
	 * ctl 0x1 and an image path cut at a NUL, which wrote back as a line
	 * that did not parse). */
	static const char nul_value[] = "ptscope-config 1\nctl 0x1\0junk\n";
	static const char nul_path[] = "ptscope-config 1\nnom_freq 24\n"
				       "image elf 0 \0\0lib.so\n";
	static const char nul_comment[] = "ptscope-config 1\n# a\0b\n";
	const struct {
		const char *text;
		size_t len;
		int line;
	} nul_cases[] = {{nul_value, sizeof(nul_value) - 1, 2},
			 {nul_path, sizeof(nul_path) - 1, 3},
			 {nul_comment, sizeof(nul_comment) - 1, 2}};
	for (size_t i = 0; i < sizeof(nul_cases) / sizeof(nul_cases[0]); i++) {
		struct pts_config nul_cfg;
		int line = 0;
		pts_config_init(&nul_cfg);
		CHECK_EQ(pts_config_parse(&nul_cfg, nul_cases[i].text,
					  nul_cases[i].len, NULL, &line),
			 -PTS_ERR_BAD_FORMAT);
		CHECK_EQ(line, nul_cases[i].line);
		pts_config_fini(&nul_cfg);
	}
	/* NULL arguments; a missing file keeps errno's story. */
	CHECK_EQ(pts_config_parse(NULL, "", 0, NULL, NULL), -PTS_ERR_INVALID);
	struct pts_config cfg;
	pts_config_init(&cfg);
	CHECK_EQ(pts_config_load(&cfg, "/nonexistent/x.cfg", NULL),
		 -PTS_ERR_IO);
	CHECK_EQ(errno, ENOENT);
	errno = 0; /* a directory opens, then fails at the read */
	CHECK_EQ(pts_config_load(&cfg, "/", NULL), -PTS_ERR_IO);
	CHECK_EQ(errno, EISDIR);
	CHECK_EQ(pts_config_write(NULL, NULL, stdout), -PTS_ERR_INVALID);
	struct pts_enclave empty;
	memset(&empty, 0, sizeof(empty));
	CHECK_EQ(pts_config_add_enclave(&cfg, &empty, 0), -PTS_ERR_INVALID);
	struct pts_image_spec img = {PTS_IMAGE_RAW + 1, "x", 0, 0, 0, 0, 0};
	CHECK_EQ(pts_config_add_image(&cfg, &img), -PTS_ERR_INVALID);
	pts_config_fini(&cfg);
}

int main(void)
{
	test_round_trip();
	test_ctl_text();
	test_relative_paths();
	test_bad_lines();
	test_enclave_reasons();
	return pts_check_exit();
}
