/* The packet printers: every packet kind as libipt's ptdump prints it (each
 * expectation is a literal line, spaced as ptdump's fixed-width fields make
 * it), the --lastip and --no-offset variants, error lines, and JSON lines
 * (literal objects plus a small JSON checker over every kind).
 *
 * Where the expectations come from: libipt's ptdump.c print_packet() and
 * print_buffer(), and its test/src/dump-all-packets.ptt expectations (which
 * compare with folded white space; here the spacing is exact).
 */
#include <ptscope/packets.h>

#include "check.h"

#include <stdio.h>
#include <string.h>

struct line_case {
	struct pts_packet pkt;
	const char *want;
};

#define IP(k, off, c, p) {.offset = off, .kind = k, .ipc = c, .u.ip = {p, 0}}

/* One case per packet kind and per distinct payload spelling. */
static const struct line_case kind_cases[] = {
	{{.offset = 0x0, .kind = PTS_PKT_PSB}, "0000000000000000  psb"},
	{{.offset = 0x10, .kind = PTS_PKT_PSBEND}, "0000000000000010  psbend"},
	{{.offset = 0x12, .kind = PTS_PKT_PAD}, "0000000000000012  pad"},
	{{.offset = 0x13, .kind = PTS_PKT_OVF}, "0000000000000013  ovf"},
	{{.offset = 0x15, .kind = PTS_PKT_STOP}, "0000000000000015  stop"},
	{{.offset = 0x20, .kind = PTS_PKT_TNT8, .u.tnt = {0x6, 3}},
	 "0000000000000020  tnt.8      !!."},
	{{.offset = 0x21, .kind = PTS_PKT_TNT8, .u.tnt = {0x22, 6}},
	 "0000000000000021  tnt.8      !...!."},
	{{.offset = 0x30,
	  .kind = PTS_PKT_TNT64,
	  .u.tnt = {0x49324c9324cd, 47}},
	 "0000000000000030  tnt.64     "
	 "!..!..!..!!..!..!..!!..!..!..!!..!..!..!!..!!.!"},
	{IP(PTS_PKT_FUP, 0x40, 3, 0x401000),
	 "0000000000000040  fup        3: 0000000000401000"},
	{IP(PTS_PKT_TIP_PGD, 0x41, 0, 0),
	 "0000000000000041  tip.pgd    0: ????????????????"},
	{IP(PTS_PKT_TIP, 0x42, 1, 0x1002),
	 "0000000000000042  tip        1: ????????????1002"},
	{IP(PTS_PKT_TIP_PGE, 0x43, 2, 0x2001),
	 "0000000000000043  tip.pge    2: ????????00002001"},
	{IP(PTS_PKT_TIP, 0x44, 3, 0xffffffff1000),
	 "0000000000000044  tip        3: ffffffffffff1000"},
	{IP(PTS_PKT_TIP, 0x45, 4, 0xffffffff4000),
	 "0000000000000045  tip        4: ????ffffffff4000"},
	{IP(PTS_PKT_TIP, 0x46, 6, 0x00cccccccccc4000),
	 "0000000000000046  tip        6: 00cccccccccc4000"},
	{{.offset = 0x50, .kind = PTS_PKT_PIP, .u.pip = {0xafafa0, 0}},
	 "0000000000000050  pip        afafa0                    cr3  "
	 "0000000000afafa0"},
	{{.offset = 0x58, .kind = PTS_PKT_PIP, .u.pip = {0xafafa0, 1}},
	 "0000000000000058  pip        afafa0, nr                cr3  "
	 "0000000000afafa0"},
	{{.offset = 0x60, .kind = PTS_PKT_MODE_EXEC},
	 "0000000000000060  mode.exec"},
	{{.offset = 0x62, .kind = PTS_PKT_MODE_EXEC, .u.exec = {0, 1, 0}},
	 "0000000000000062  mode.exec  cs.d"},
	{{.offset = 0x64, .kind = PTS_PKT_MODE_EXEC, .u.exec = {1, 0, 0}},
	 "0000000000000064  mode.exec  cs.l"},
	{{.offset = 0x66, .kind = PTS_PKT_MODE_EXEC, .u.exec = {1, 0, 1}},
	 "0000000000000066  mode.exec  cs.l, if"},
	{{.offset = 0x68, .kind = PTS_PKT_MODE_EXEC, .u.exec = {0, 0, 1}},
	 "0000000000000068  mode.exec  if"},
	{{.offset = 0x6a, .kind = PTS_PKT_MODE_EXEC, .u.exec = {1, 1, 1}},
	 "000000000000006a  mode.exec  cs.d, cs.l, if"},
	{{.offset = 0x70, .kind = PTS_PKT_MODE_TSX, .u.tsx = {1, 0}},
	 "0000000000000070  mode.tsx   intx"},
	{{.offset = 0x72, .kind = PTS_PKT_MODE_TSX}, "0000000000000072  mode.tsx"},
	{{.offset = 0x74, .kind = PTS_PKT_MODE_TSX, .u.tsx = {0, 1}},
	 "0000000000000074  mode.tsx   abrt"},
	{{.offset = 0x76, .kind = PTS_PKT_MODE_TSX, .u.tsx = {1, 1}},
	 "0000000000000076  mode.tsx   intx, abrt"},
	{{.offset = 0x80, .kind = PTS_PKT_TSC, .u.tsc = 0x12345},
	 "0000000000000080  tsc        12345"},
	{{.offset = 0x88, .kind = PTS_PKT_CBR, .u.cbr = {0x24}},
	 "0000000000000088  cbr        24"},
	{{.offset = 0x8c, .kind = PTS_PKT_TMA, .u.tma = {0x12, 0x34}},
	 "000000000000008c  tma        12, 34"},
	{{.offset = 0x93, .kind = PTS_PKT_MTC, .u.mtc_ctc = 0x94},
	 "0000000000000093  mtc        94"},
	{{.offset = 0x95, .kind = PTS_PKT_CYC, .u.cyc = 0x57},
	 "0000000000000095  cyc        57"},
	{{.offset = 0xa0, .kind = PTS_PKT_VMCS, .u.vmcs_base = 0xabcd000},
	 "00000000000000a0  vmcs       abcd000                   vmcs "
	 "000000000abcd000"},
	{{.offset = 0xa7, .kind = PTS_PKT_MNT, .u.mnt = 0x2a2242e5d4c3b2a1},
	 "00000000000000a7  mnt        2a2242e5d4c3b2a1"},
	{{.offset = 0xb0, .kind = PTS_PKT_EXSTOP}, "00000000000000b0  exstop"},
	{{.offset = 0xb2, .kind = PTS_PKT_EXSTOP, .u.exstop = {1}},
	 "00000000000000b2  exstop     ip"},
	{{.offset = 0xb4, .kind = PTS_PKT_MWAIT, .u.mwait = {0xb, 0x1}},
	 "00000000000000b4  mwait      0000000b, 00000001"},
	{{.offset = 0xc0, .kind = PTS_PKT_PWRE, .u.pwre = {15, 15, 0}},
	 "00000000000000c0  pwre       c0.0"},
	{{.offset = 0xc4, .kind = PTS_PKT_PWRE, .u.pwre = {15, 15, 1}},
	 "00000000000000c4  pwre       c0.0, hw"},
	{{.offset = 0xc8, .kind = PTS_PKT_PWRE, .u.pwre = {6, 1, 0}},
	 "00000000000000c8  pwre       c7.2"},
	{{.offset = 0xd0, .kind = PTS_PKT_PWRX, .u.pwrx = {0, 5, 1, 0, 0}},
	 "00000000000000d0  pwrx       int: c1, c6"},
	{{.offset = 0xd7, .kind = PTS_PKT_PWRX, .u.pwrx = {0, 5, 0, 1, 0}},
	 "00000000000000d7  pwrx        st: c1, c6"},
	{{.offset = 0xde, .kind = PTS_PKT_PWRX, .u.pwrx = {0, 5, 0, 0, 1}},
	 "00000000000000de  pwrx        hw: c1, c6"},
	{{.offset = 0xe5, .kind = PTS_PKT_PWRX},
	 "00000000000000e5  pwrx       bad: c1, c1"},
	{{.offset = 0xf0, .kind = PTS_PKT_PTW, .u.ptw = {0x90abcdef, 0, 1}},
	 "00000000000000f0  ptw        0: 90abcdef, ip"},
	{{.offset = 0xf6,
	  .kind = PTS_PKT_PTW,
	  .u.ptw = {0x1234567890abcdef, 1, 0}},
	 "00000000000000f6  ptw        1: 1234567890abcdef"},
	{{.offset = 0x100, .kind = PTS_PKT_CFE, .u.cfe = {2, 0, 0}},
	 "0000000000000100  cfe        2"},
	{{.offset = 0x104, .kind = PTS_PKT_CFE, .u.cfe = {3, 0xf0, 1}},
	 "0000000000000104  cfe        3, ip"},
	{{.offset = 0x108, .kind = PTS_PKT_CFE, .u.cfe = {1, 14, 0}},
	 "0000000000000108  cfe        1: 14"},
	{{.offset = 0x10c, .kind = PTS_PKT_CFE, .u.cfe = {5, 0xf0, 1}},
	 "000000000000010c  cfe        5: f0, ip"},
	{{.offset = 0x110, .kind = PTS_PKT_EVD, .u.evd = {0xf00baa, 2}},
	 "0000000000000110  evd        2: f00baa"},
	{{.offset = 0x120, .kind = PTS_PKT_BBP, .u.bbp = {1, 1}},
	 "0000000000000120  bbp        1, sz"},
	{{.offset = 0x123, .kind = PTS_PKT_BBP, .u.bbp = {0, 0x1f}},
	 "0000000000000123  bbp        1f"},
	{{.offset = 0x126,
	  .kind = PTS_PKT_BIP,
	  .u.bip = {0x1122334455667788, 3}},
	 "0000000000000126  bip        3: 1122334455667788"},
	{{.offset = 0x12f, .kind = PTS_PKT_BEP}, "000000000000012f  bep"},
	{{.offset = 0x131, .kind = PTS_PKT_BEP, .u.bep = {1}},
	 "0000000000000131  bep        ip"},
};

/* --lastip over a sequence: the printer's own last-IP carries over. */
static const struct line_case lastip_cases[] = {
	/* nothing known yet: ptdump reports "no ip" before the line */
	{IP(PTS_PKT_TIP_PGD, 0x41, 0, 0),
	 "[41: error tracking last-ip: no ip]\n"
	 "0000000000000041  tip.pgd    0: ????????????????       ip   "
	 "<unavailable>"},
	{IP(PTS_PKT_FUP, 0x50, 3, 0x401000),
	 "0000000000000050  fup        3: 0000000000401000       ip   "
	 "0000000000401000"},
	{IP(PTS_PKT_TIP, 0x59, 1, 0x1002),
	 "0000000000000059  tip        1: ????????????1002       ip   "
	 "0000000000401002"},
	{IP(PTS_PKT_TIP_PGD, 0x5c, 0, 0),
	 "000000000000005c  tip.pgd    0: ????????????????       ip   "
	 "<suppressed>"},
	{IP(PTS_PKT_TIP_PGE, 0x5d, 2, 0x2001),
	 "000000000000005d  tip.pge    2: ????????00002001       ip   "
	 "0000000000002001"},
	{IP(PTS_PKT_TIP, 0x62, 4, 0xffffffff4000),
	 "0000000000000062  tip        4: ????ffffffff4000       ip   "
	 "0000ffffffff4000"},
	{IP(PTS_PKT_TIP, 0x69, 6, 0xffffffffffff4000),
	 "0000000000000069  tip        6: ffffffffffff4000       ip   "
	 "ffffffffffff4000"},
	/* a reserved IPBytes (the decoder never gives one) */
	{IP(PTS_PKT_TIP, 0x72, 5, 0x1234),
	 "[72: bad ipc: unknown packet]\n"
	 "[72: error tracking last-ip: unknown packet]\n"
	 "0000000000000072  tip        5: 0000000000001234       ip   "
	 "<unavailable>"},
	/* non-IP packets are not tracked; PIP always shows cr3 */
	{{.offset = 0x80, .kind = PTS_PKT_PIP, .u.pip = {0xafafa0, 1}},
	 "0000000000000080  pip        afafa0, nr                cr3  "
	 "0000000000afafa0"},
	{{.offset = 0x88, .kind = PTS_PKT_TNT8, .u.tnt = {0x1, 1}},
	 "0000000000000088  tnt.8      !"},
};

static const struct line_case no_offset_cases[] = {
	{{.kind = PTS_PKT_PSB}, "psb"},
	{{.offset = 0x20, .kind = PTS_PKT_TNT8, .u.tnt = {0x6, 3}},
	 "tnt.8      !!."},
	{IP(PTS_PKT_FUP, 0x40, 3, 0x401000), "fup        3: 0000000000401000"},
	{{.offset = 0x50, .kind = PTS_PKT_PIP, .u.pip = {0xafafa0, 0}},
	 "pip        afafa0                    cr3  0000000000afafa0"},
	{{.offset = 0x60, .kind = PTS_PKT_MODE_EXEC}, "mode.exec"},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void check_lines(const char *what, const struct line_case *cases,
			size_t n, const struct pts_print_opts *opts)
{
	struct pts_lastip lip;
	char out[512];

	pts_lastip_reset(&lip);
	for (size_t i = 0; i < n; i++) {
		memset(out, 0x5a, sizeof(out));
		const int len =
			pts_print_ptdump(&cases[i].pkt, opts, &lip, out, sizeof(out));
		CHECKF(len == (int)strlen(cases[i].want) &&
			      strcmp(out, cases[i].want) == 0,
		      "%s #%zu (%s):\n  want '%s'\n  got  '%s' (%d)", what, i,
		      pts_pkt_kind_name(cases[i].pkt.kind), cases[i].want,
		      len >= 0 ? out : "", len);
	}
}

static void test_kinds_covered(void)
{
	int seen[PTS_PKT_KIND_COUNT] = {0};
	for (size_t i = 0; i < COUNT(kind_cases); i++)
		seen[kind_cases[i].pkt.kind] = 1;
	for (int k = 0; k < PTS_PKT_KIND_COUNT; k++)
		CHECKF(seen[k], "no ptdump case for %s", pts_pkt_kind_name(k));
}

/* Too small a buffer: -PTS_ERR_AGAIN, never a write past @cap. */
static void test_short_buffer(void)
{
	const struct pts_print_opts opts = {1, 1};
	const struct line_case *c = &lastip_cases[1];
	const size_t need = strlen(c->want) + 1;
	char out[256];

	for (size_t cap = 0; cap < need; cap++) {
		struct pts_lastip lip;
		pts_lastip_reset(&lip);
		memset(out, 0x5a, sizeof(out));
		CHECKF(pts_print_ptdump(&c->pkt, &opts, &lip, out, cap) ==
			      -PTS_ERR_AGAIN,
		      "cap %zu: want AGAIN", cap);
		CHECKF(out[cap] == 0x5a, "cap %zu: wrote past the end", cap);
		CHECKF(pts_print_jsonl(&c->pkt, out, cap < 20 ? cap : 20) ==
			      -PTS_ERR_AGAIN,
		      "jsonl cap %zu: want AGAIN", cap);
	}
	struct pts_packet bad = {.kind = PTS_PKT_KIND_COUNT};
	CHECKF(pts_print_ptdump(&bad, &opts, NULL, out, sizeof(out)) ==
		      -PTS_ERR_INVALID,
	      "bad kind accepted");
}

static void test_error_lines(void)
{
	static const struct {
		int err;
		uint64_t begin, end;
		const char *ptdump, *jsonl;
	} cases[] = {
		{-PTS_ERR_BAD_OPCODE, 0x1a, 0x1b,
		 "[1a: error decoding packet: unknown opcode]",
		 "{\"error\":\"BAD_OPCODE\",\"message\":\"unknown opcode\","
		 "\"offset\":26,\"end\":27}"},
		{-PTS_ERR_BAD_IPC, 0x100, 0x101,
		 "[100: error decoding packet: unknown packet]", NULL},
		{-PTS_ERR_SKIPPED, 0x1a, 0x40,
		 "[1a-40: skipped 38 bytes to resync]",
		 "{\"error\":\"SKIPPED\",\"message\":\"bytes skipped to "
		 "resynchronize\",\"offset\":26,\"end\":64,\"bytes\":38}"},
	};
	char out[256];

	for (size_t i = 0; i < COUNT(cases); i++) {
		int len = pts_print_ptdump_error(cases[i].err, cases[i].begin,
						 cases[i].end, out, sizeof(out));
		CHECKF(len > 0 && strcmp(out, cases[i].ptdump) == 0,
		      "error #%zu: want '%s' got '%s'", i, cases[i].ptdump, out);
		if (!cases[i].jsonl)
			continue;
		len = pts_print_jsonl_error(cases[i].err, cases[i].begin,
					    cases[i].end, out, sizeof(out));
		CHECKF(len > 0 && strcmp(out, cases[i].jsonl) == 0,
		      "jsonl error #%zu: want '%s' got '%s'", i,
		      cases[i].jsonl, out);
	}
}

/* ------------------------------------------------------------------------ */
/* JSON: a minimal recursive-descent checker (objects, arrays, strings
 * without escapes beyond \", numbers, true/false/null).                    */

static const char *json_value(const char *p);

static const char *json_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static const char *json_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	for (; *p && *p != '"'; p++) {
		if ((unsigned char)*p < 0x20)
			return NULL;
		if (*p == '\\' && !*++p)
			return NULL;
	}
	return *p == '"' ? p + 1 : NULL;
}

static const char *json_number(const char *p)
{
	const char *start = p;
	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else
		while (*p >= '0' && *p <= '9')
			p++;
	if (p == start || p[-1] == '-')
		return NULL;
	return p;
}

static const char *json_members(const char *p, char open, char close)
{
	if (*p++ != open)
		return NULL;
	p = json_ws(p);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (open == '{') {
			p = json_string(json_ws(p));
			if (!p || *(p = json_ws(p)) != ':')
				return NULL;
			p++;
		}
		p = json_value(p);
		if (!p)
			return NULL;
		p = json_ws(p);
		if (*p == close)
			return p + 1;
		if (*p++ != ',')
			return NULL;
	}
}

static const char *json_value(const char *p)
{
	p = json_ws(p);
	switch (*p) {
	case '{':
		return json_members(p, '{', '}');
	case '[':
		return json_members(p, '[', ']');
	case '"':
		return json_string(p);
	case 't':
		return strncmp(p, "true", 4) ? NULL : p + 4;
	case 'f':
		return strncmp(p, "false", 5) ? NULL : p + 5;
	case 'n':
		return strncmp(p, "null", 4) ? NULL : p + 4;
	default:
		return json_number(p);
	}
}

static int json_valid(const char *s)
{
	const char *end = json_value(s);
	return end && *json_ws(end) == '\0' && *json_ws(s) == '{';
}

static void test_json_checker(void)
{
	CHECKF(json_valid("{\"a\":[1,true,{\"b\":\"x\"}],\"c\":null}"),
	      "checker rejects valid JSON");
	CHECKF(!json_valid("{\"a\":1,}"), "checker accepts a trailing comma");
	CHECKF(!json_valid("{\"a\":01}"), "checker accepts a leading zero");
	CHECKF(!json_valid("{\"a\":1"), "checker accepts an open object");
}

static void test_jsonl(void)
{
	static const struct line_case cases[] = {
		{{.offset = 0, .kind = PTS_PKT_PSB, .size = 16},
		 "{\"kind\":\"psb\",\"offset\":0,\"size\":16}"},
		{{.offset = 0x20, .kind = PTS_PKT_TNT8, .size = 1,
		  .u.tnt = {0x6, 3}},
		 "{\"kind\":\"tnt.8\",\"offset\":32,\"size\":1,\"count\":3,"
		 "\"tnt\":\"!!.\"}"},
		{{.offset = 0x40, .kind = PTS_PKT_FUP, .size = 3, .ipc = 1,
		  .u.ip = {0x1000, 0x401000}},
		 "{\"kind\":\"fup\",\"offset\":64,\"size\":3,\"ipc\":1,"
		 "\"payload\":\"0x1000\",\"ip\":\"0x401000\"}"},
		{{.offset = 0x43, .kind = PTS_PKT_TIP_PGD, .size = 1},
		 "{\"kind\":\"tip.pgd\",\"offset\":67,\"size\":1,\"ipc\":0,"
		 "\"suppressed\":true}"},
		{{.offset = 0x50, .kind = PTS_PKT_PIP, .size = 8,
		  .u.pip = {0xafafa0, 1}},
		 "{\"kind\":\"pip\",\"offset\":80,\"size\":8,\"cr3\":\"0xafafa0\","
		 "\"nr\":true}"},
		{{.offset = 0x60, .kind = PTS_PKT_MODE_EXEC, .size = 2,
		  .u.exec = {1, 0, 1}},
		 "{\"kind\":\"mode.exec\",\"offset\":96,\"size\":2,\"csl\":true,"
		 "\"csd\":false,\"if\":true,\"mode\":\"64-bit\"}"},
		{{.offset = 0x80, .kind = PTS_PKT_TSC, .size = 8,
		  .u.tsc = 0x12345},
		 "{\"kind\":\"tsc\",\"offset\":128,\"size\":8,\"tsc\":\"0x12345\"}"},
		{{.offset = 0x8c, .kind = PTS_PKT_TMA, .size = 7,
		  .u.tma = {0x12, 0x34}},
		 "{\"kind\":\"tma\",\"offset\":140,\"size\":7,\"ctc\":18,"
		 "\"fc\":52}"},
		{{.offset = 0xd0, .kind = PTS_PKT_PWRX, .size = 7,
		  .u.pwrx = {0, 5, 1, 0, 0}},
		 "{\"kind\":\"pwrx\",\"offset\":208,\"size\":7,\"last\":0,"
		 "\"deepest\":5,\"interrupt\":true,\"store\":false,"
		 "\"autonomous\":false}"},
		{{.offset = 0x104, .kind = PTS_PKT_CFE, .size = 4,
		  .u.cfe = {3, 0xf0, 1}},
		 "{\"kind\":\"cfe\",\"offset\":260,\"size\":4,\"type\":3,"
		 "\"vector\":240,\"ipbit\":true}"},
	};
	char out[512];

	for (size_t i = 0; i < COUNT(cases); i++) {
		const int len = pts_print_jsonl(&cases[i].pkt, out, sizeof(out));
		CHECKF(len == (int)strlen(cases[i].want) &&
			      strcmp(out, cases[i].want) == 0,
		      "jsonl #%zu:\n  want '%s'\n  got  '%s'", i, cases[i].want,
		      len >= 0 ? out : "");
	}
	/* every kind gives valid JSON that starts with its kind */
	for (size_t i = 0; i < COUNT(kind_cases); i++) {
		const struct pts_packet *pkt = &kind_cases[i].pkt;
		char head[64];
		const int len = pts_print_jsonl(pkt, out, sizeof(out));
		snprintf(head, sizeof(head), "{\"kind\":\"%s\",\"offset\":",
			 pts_pkt_kind_name(pkt->kind));
		CHECKF(len > 0 && json_valid(out) &&
			      strncmp(out, head, strlen(head)) == 0,
		      "jsonl of %s: '%s'", pts_pkt_kind_name(pkt->kind), out);
	}
	for (int err = PTS_ERR_OK + 1; err < PTS_ERR_COUNT; err++) {
		const int len = pts_print_jsonl_error(-err, 1, 2, out, sizeof(out));
		CHECKF(len > 0 && json_valid(out), "jsonl error %d: '%s'", err,
		      out);
	}
}

int main(void)
{
	const struct pts_print_opts plain = {1, 0};
	const struct pts_print_opts lastip = {1, 1};
	const struct pts_print_opts no_offset = {0, 0};

	test_kinds_covered();
	check_lines("kind", kind_cases, COUNT(kind_cases), &plain);
	check_lines("lastip", lastip_cases, COUNT(lastip_cases), &lastip);
	check_lines("no-offset", no_offset_cases, COUNT(no_offset_cases),
		    &no_offset);
	test_short_buffer();
	test_error_lines();
	test_json_checker();
	test_jsonl();
	return pts_check_exit();
}
