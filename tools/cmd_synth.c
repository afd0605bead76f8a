/* ptscope synth: makes a trace, the bytes a real Intel CPU would write for
 * a known instruction flow, plus that flow as ground truth, the flow a
 * correct decoder must print, and the configuration file the other
 * subcommands read with --config (formats: fixtures/FORMATS.md). */
#include "cli.h"
#include "commands.h"
#include "flow_run.h"
#include "perf_synth.h"
#include "synth/synth_run.h"
#include "synth/topa_out.h"

#include <ptscope/topa.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char cmd[] = "synth";

static void help(void)
{
	fputs("usage: ptscope synth (--walk ELF[:BASE] | --run PROGRAM [ARGS])\n"
	      "                     -o TRACE [OPTIONS]\n"
	      "\n"
	      "Synthesizes an Intel PT trace for a known instruction flow:\n"
	      "a seeded walk over the machine code of ELF (64-bit code), or\n"
	      "a real run of PROGRAM single-stepped with ptrace (user space\n"
	      "only). Options may come before or after PROGRAM; ARGS that\n"
	      "start with '-' go after '--' (--run /bin/ls -- -l).\n"
	      "\n"
	      "outputs:\n"
	      "  -o, --output=TRACE    the raw trace\n"
	      "      --truth=FILE      every executed instruction, hidden ones\n"
	      "                        with why, events, timing marks\n"
	      "      --visible=FILE    the flow a correct decoder prints\n"
	      "      --config-out=FILE the trace configuration (--config)\n"
	      "      --perf-data=FILE  the trace in a perf.data file that Linux\n"
	      "                        perf decodes (one thread, MMAPs of the\n"
	      "                        images, 1 TSC tick = 1 ns)\n"
	      "      --perf-data-zstd[=all]  write it as `perf record -z`\n"
	      "                        does: sideband in zstd COMPRESSED\n"
	      "                        records; =all: the AUXTRACE data too\n"
	      "                        (ptscope reads that, perf does not)\n"
	      "      --topa=SPEC       also TRACE.desc, tables and regions:\n"
	      "                        the trace in a ToPA layout (syntax in\n"
	      "                        ptscope/topa.h: 4K,8K:int/16K:stop@1)\n"
	      "flow:\n"
	      "      --insns=N         instructions (1000..1000000000;\n"
	      "                        default 100000; a run stops at exit\n"
	      "                        or at N, when given)\n"
	      "      --seed=N          the walk's seed (default 1)\n"
	      "      --start=ADDR|SYM  where the walk starts (default: entry)\n"
	      "      --no-kernel       SYSCALLs and interrupts do not visit\n"
	      "                        the kernel stub (SYSCALL restarts)\n"
	      "packets:\n"
	      "      --psb-period=N    bytes between PSBs (default 4096); the\n"
	      "                        config's PSBFreq is the next power of\n"
	      "                        two from 2K up (hardware's choices)\n"
	      "      --no-retcomp      DisRETC: no return compression\n"
	      "      --ret-nocomp-rate=R  compressible RETs sent as TIP anyway\n"
	      "      --long-tnt        pack up to 47 results into TNT-64\n"
	      "      --user-only       OS=0: ring 0 is not traced\n"
	      "      --filter=A-B      IP filter range (ADDRn, inclusive; <= 4)\n"
	      "      --tracestop=A-B   TraceStop range\n"
	      "      --cr3=V --cr3-match=V   the process CR3; CR3 filter\n"
	      "timing:\n"
	      "      --tsc --mtc[=N] --cyc[=THRESH]   TSCEn, MTCEn with\n"
	      "                        MTCFreq N (3), CYCEn with CycThresh\n"
	      "      --cpi=Q8          core cycles per instruction x 256 (384)\n"
	      "      --tsc-ratio=EAX:EBX   CPUID 0x15 (2:200)\n"
	      "      --nom=N --cbr=N   nominal and starting core:bus ratio (24)\n"
	      "      --freq-rate=R     frequency changes (CBR + TSC)\n"
	      "events (R: per million instructions):\n"
	      "      --async-rate=R    interrupts (FUP + TIP / TIP.PGD)\n"
	      "      --ovf-rate=R --ovf-len=N   internal overflows\n"
	      "      --enclave=BEGIN-END:production|debug[,entry=A][,aep=A]\n"
	      "                [,eexit=A][,name=N]  an enclave, END exclusive;\n"
	      "                        addresses may be symbols of the ELF\n"
	      "                        (sym or sym+0x10)\n"
	      "      --aex-rate=R      asynchronous exits inside enclaves\n"
	      "  -q, --quiet           no summary on stderr\n"
	      "  -h, --help            this text\n"
	      "\n"
	      "Exit status: 0 written, 1 the synthesis failed (the walk or\n"
	      "the run could not go on), 2 usage or I/O error.\n",
	      stdout);
}

enum {
	OPT_WALK = 256, OPT_RUN, OPT_TRUTH, OPT_VISIBLE, OPT_CONFIG_OUT,
	OPT_INSNS, OPT_SEED, OPT_START, OPT_NO_KERNEL, OPT_PSB, OPT_NO_RETC,
	OPT_RET_NOCOMP, OPT_LONG_TNT, OPT_USER_ONLY, OPT_FILTER, OPT_STOP,
	OPT_CR3, OPT_CR3_MATCH, OPT_TSC, OPT_MTC, OPT_CYC, OPT_CPI,
	OPT_TSC_RATIO, OPT_NOM, OPT_CBR, OPT_FREQ_RATE, OPT_ASYNC, OPT_OVF,
	OPT_OVF_LEN, OPT_ENCLAVE, OPT_AEX, OPT_TOPA, OPT_PERF_DATA,
	OPT_PERF_ZSTD
};

static const struct option longopts[] = {
	{"walk", required_argument, NULL, OPT_WALK},
	{"run", no_argument, NULL, OPT_RUN},
	{"output", required_argument, NULL, 'o'},
	{"truth", required_argument, NULL, OPT_TRUTH},
	{"visible", required_argument, NULL, OPT_VISIBLE},
	{"config-out", required_argument, NULL, OPT_CONFIG_OUT},
	{"perf-data", required_argument, NULL, OPT_PERF_DATA},
	{"perf-data-zstd", optional_argument, NULL, OPT_PERF_ZSTD},
	{"insns", required_argument, NULL, OPT_INSNS},
	{"seed", required_argument, NULL, OPT_SEED},
	{"start", required_argument, NULL, OPT_START},
	{"no-kernel", no_argument, NULL, OPT_NO_KERNEL},
	{"psb-period", required_argument, NULL, OPT_PSB},
	{"no-retcomp", no_argument, NULL, OPT_NO_RETC},
	{"ret-nocomp-rate", required_argument, NULL, OPT_RET_NOCOMP},
	{"long-tnt", no_argument, NULL, OPT_LONG_TNT},
	{"user-only", no_argument, NULL, OPT_USER_ONLY},
	{"filter", required_argument, NULL, OPT_FILTER},
	{"tracestop", required_argument, NULL, OPT_STOP},
	{"cr3", required_argument, NULL, OPT_CR3},
	{"cr3-match", required_argument, NULL, OPT_CR3_MATCH},
	{"tsc", no_argument, NULL, OPT_TSC},
	{"mtc", optional_argument, NULL, OPT_MTC},
	{"cyc", optional_argument, NULL, OPT_CYC},
	{"cpi", required_argument, NULL, OPT_CPI},
	{"tsc-ratio", required_argument, NULL, OPT_TSC_RATIO},
	{"nom", required_argument, NULL, OPT_NOM},
	{"cbr", required_argument, NULL, OPT_CBR},
	{"freq-rate", required_argument, NULL, OPT_FREQ_RATE},
	{"async-rate", required_argument, NULL, OPT_ASYNC},
	{"ovf-rate", required_argument, NULL, OPT_OVF},
	{"ovf-len", required_argument, NULL, OPT_OVF_LEN},
	{"enclave", required_argument, NULL, OPT_ENCLAVE},
	{"aex-rate", required_argument, NULL, OPT_AEX},
	{"topa", required_argument, NULL, OPT_TOPA},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

struct synth_cli {
	struct syn_options o;
	const char *walk, *output, *truth, *visible, *config_out, *start;
	const char *perf_data;
	int perf_zstd; /* pts_perf_write_opts.compress */
	const char *topa;
	char **run_argv;
	int insns_given; /* --insns: a run stops there too */
	const char *ranges[4];
	uint8_t range_cfg[4];
	unsigned n_ranges;
	const char *enclaves[8];
	unsigned n_enclaves;
	int quiet;
};

/* A number, or SYMBOL[+OFFSET] of the walked image. */
static int parse_addr(struct pts_image *img, const char *text, uint64_t *v)
{
	if (text[0] >= '0' && text[0] <= '9')
		return pts_parse_u64(text, text + strlen(text), v) < 0 ? -1 : 0;
	char name[128];
	const char *plus = strchr(text, '+');
	size_t n = plus ? (size_t)(plus - text) : strlen(text);
	if (!img || n >= sizeof(name))
		return -1;
	memcpy(name, text, n);
	name[n] = '\0';
	const struct pts_symbol *sym = pts_image_symbol_find(img, 0, name);
	if (!sym)
		return -1;
	uint64_t off = 0;
	if (plus &&
	    pts_parse_u64(plus + 1, plus + 1 + strlen(plus + 1), &off) < 0)
		return -1;
	*v = sym->addr + off;
	return 0;
}

/* "A-B" with A and B addresses (symbols allowed). */
static int parse_range(struct pts_image *img, const char *text, uint64_t *a,
		       uint64_t *b)
{
	char buf[256];
	if (strlen(text) >= sizeof(buf))
		return -1;
	strcpy(buf, text);
	char *dash = strchr(buf, '-');
	if (!dash)
		return -1;
	*dash = '\0';
	return parse_addr(img, buf, a) < 0 || parse_addr(img, dash + 1, b) < 0
		       ? -1
		       : 0;
}

/* EI_CLASS of the ELF that spec "FILE[:BASE]" names (0: unknown). */
enum { ELF_CLASS32 = 1 };
static int elf_class(const char *spec)
{
	uint64_t base;
	char *path = pts_elf_spec_split(spec, &base);
	unsigned char h[18];
	const int elf = path && pts_cli_elf_header(path, h);
	free(path);
	return elf ? h[4] : 0;
}

/* An enclave spec's addresses: numbers, or symbols of the walked image. */
static int read_enclave_addr(void *img, const char *text, uint64_t *v)
{
	return parse_addr(img, text, v);
}

/* The long name of option @val. */
static const char *opt_name(int val)
{
	for (const struct option *o = longopts; o->name; o++)
		if (o->val == val)
			return o->name;
	return "?";
}

/* A rate per million for option @opt. */
static int rate(const char *opt, const char *arg, uint32_t *v)
{
	uint64_t x;
	if (pts_cli_parse_u64(cmd, opt, arg, 1000000, &x) < 0)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

/* An output file and the option that names it. */
struct synth_out {
	const char *opt, *path;
};

/* check_paths() for the @n outputs @outs and the program @elf. */
static int check_outputs(const struct synth_out *outs, size_t n,
			 const char *elf)
{
	for (size_t i = 0; i < n; i++) {
		if (!outs[i].path)
			continue;
		if (!strcmp(outs[i].path, "-")) /* not stdout: a file "-" */
			return pts_cli_usage_error(
				cmd, "%s -: synth writes files; give a path",
				outs[i].opt);
		if (pts_cli_same_file(outs[i].path, elf))
			return pts_cli_usage_error(
				cmd, "%s %s is the program being read",
				outs[i].opt, outs[i].path);
		for (size_t j = 0; j < i; j++)
			if (outs[j].path &&
			    pts_cli_same_file(outs[j].path, outs[i].path))
				return pts_cli_usage_error(
					cmd, "%s and %s name the same file (%s)",
					outs[j].opt, outs[i].opt, outs[i].path);
	}
	return 0;
}

/* Whether @path is one of the tables and regions --topa writes beside
 * @trace: TRACE.tN.bin, TRACE.rN.bin (their number is the layout's). */
static int topa_piece(const char *trace, const char *path)
{
	char *t = pts_cli_resolved_path(trace);
	char *p = pts_cli_resolved_path(path);
	int hit = 0;
	if (t && p && strncmp(p, t, strlen(t)) == 0) {
		const char *s = p + strlen(t);
		if (s[0] == '.' && (s[1] == 'r' || s[1] == 't') &&
		    isdigit((unsigned char)s[2])) {
			for (s += 2; isdigit((unsigned char)*s); s++)
				;
			hit = strcmp(s, ".bin") == 0;
		}
	}
	free(t);
	free(p);
	return hit;
}

/* TRACE with @suffix appended (the files synth writes beside it). */
static char *beside(const char *trace, const char *suffix)
{
	char *p = malloc(strlen(trace) + strlen(suffix) + 1);

	if (p)
		strcat(strcpy(p, trace), suffix);
	return p;
}

/* Whether --config-out comes with TRACE.kstub: ring 0 is traced, and
 * the decoder needs the kernel stub's bytes. */
static int writes_kstub(const struct synth_cli *c)
{
	return c->config_out && !c->o.user_only && c->o.kernel;
}

/* No output may be the program being read (synth maps it: writing it
 * would crash the run and destroy the file) or another output, those
 * written beside the trace included (TRACE.desc with --topa, TRACE.kstub
 * with --config-out when ring 0 is traced), and --topa's layout must be
 * valid. Checked before anything is opened. */
static int check_paths(const struct synth_cli *c)
{
	const int kstub = writes_kstub(c);
	char *desc = c->topa ? beside(c->output, ".desc") : NULL;
	char *stub = kstub ? beside(c->output, ".kstub") : NULL;
	const struct synth_out outs[] = {
		{"-o", c->output},	   {"--truth", c->truth},
		{"--visible", c->visible}, {"--config-out", c->config_out},
		{"--perf-data", c->perf_data}, {"--topa (its .desc)", desc},
		{"--config-out (its .kstub)", stub}};
	struct pts_topa_writer *w = NULL;
	struct stat st;
	uint64_t base;
	char *elf = c->run_argv ? strdup(c->run_argv[0])
				: pts_elf_spec_split(c->walk, &base);
	int status;

	if (!elf || (c->topa && !desc) || (kstub && !stub))
		status = pts_cli_usage_error(cmd, "out of memory");
	else if ((desc || stub) && stat(c->output, &st) == 0 &&
		 !S_ISREG(st.st_mode))
		status = pts_cli_usage_error(
			cmd, "-o %s: not a regular file, and %s writes a file "
			     "beside it",
			c->output, desc ? "--topa" : "--config-out");
	else if (c->topa && pts_topa_writer_new(c->topa, &w) < 0)
		status = pts_cli_usage_error(
			cmd, "--topa %s: bad layout (see --help)", c->topa);
	else if (c->perf_zstd && !c->perf_data)
		status = pts_cli_usage_error(
			cmd, "--perf-data-zstd needs --perf-data FILE");
	else
		status = check_outputs(outs, sizeof(outs) / sizeof(outs[0]),
				       elf);
	/* outs[0] is -o itself */
	for (size_t i = 1; c->topa && status == 0 &&
			   i < sizeof(outs) / sizeof(outs[0]); i++)
		if (outs[i].path && topa_piece(c->output, outs[i].path))
			status = pts_cli_usage_error(
				cmd, "%s %s is a file --topa writes beside -o",
				outs[i].opt, outs[i].path);
	pts_topa_writer_free(w);
	free(elf);
	free(desc);
	free(stub);
	return status;
}

static int parse_args(struct synth_cli *c, int argc, char **argv)
{
	int ret;
	uint64_t v;
	syn_options_default(&c->o);
	while ((ret = pts_cli_getopt(argc, argv, ":o:qh", longopts)) != -1) {
		int bad = 0;
		const char *want = NULL; /* the values a bad one breaks */
		char name[40]; /* the option, for messages */
		snprintf(name, sizeof(name), "--%s", opt_name(ret));
		switch (ret) {
		case 'h':
			help();
			return -1;
		case 'q': c->quiet = 1; break;
		case 'o': c->output = optarg; break;
		case OPT_WALK: c->walk = optarg; break;
		case OPT_RUN: c->run_argv = (char **)1; break;
		case OPT_TRUTH: c->truth = optarg; break;
		case OPT_VISIBLE: c->visible = optarg; break;
		case OPT_CONFIG_OUT: c->config_out = optarg; break;
		case OPT_PERF_DATA: c->perf_data = optarg; break;
		case OPT_PERF_ZSTD:
			if (optarg && strcmp(optarg, "all") != 0)
				return pts_cli_usage_error(cmd, "--perf-data-zstd "
							  "takes no value or "
							  "=all");
			c->perf_zstd = optarg ? 2 : 1;
			break;
		case OPT_START: c->start = optarg; break;
		case OPT_INSNS:
			c->insns_given = 1;
			bad = pts_cli_number(optarg, 1000000000, &c->o.insns) <
				      0 ||
			      c->o.insns < 1000;
			want = "1000 to 1000000000";
			break;
		case OPT_SEED:
			bad = pts_cli_parse_u64(cmd, "--seed", optarg,
						UINT64_MAX, &c->o.seed) < 0;
			break;
		case OPT_NO_KERNEL: c->o.kernel = 0; break;
		case OPT_PSB:
			/* 0 would put a PSB+ after every instruction */
			bad = pts_cli_number(optarg, 1ull << 30,
					     &c->o.psb_period) < 0 ||
			      !c->o.psb_period;
			want = "1 to 1073741824";
			break;
		case OPT_NO_RETC: c->o.retcomp = 0; break;
		case OPT_RET_NOCOMP:
			bad = rate(name, optarg, &c->o.ret_nocomp_rate);
			break;
		case OPT_LONG_TNT: c->o.long_tnt = 1; break;
		case OPT_USER_ONLY: c->o.user_only = 1; break;
		case OPT_FILTER:
		case OPT_STOP:
			if (c->n_ranges == 4)
				return pts_cli_usage_error(cmd, "at most 4 ranges");
			c->range_cfg[c->n_ranges] =
				ret == OPT_FILTER ? PTS_ADDR_FILTER : PTS_ADDR_STOP;
			c->ranges[c->n_ranges++] = optarg;
			break;
		case OPT_CR3:
			bad = pts_cli_parse_u64(cmd, "--cr3", optarg, UINT64_MAX,
						&c->o.cr3) < 0;
			break;
		case OPT_CR3_MATCH:
			c->o.cr3_filter = 1;
			bad = pts_cli_parse_u64(cmd, "--cr3-match", optarg,
						UINT64_MAX, &c->o.cr3_match) < 0;
			break;
		case OPT_TSC: c->o.tsc = 1; break;
		case OPT_MTC:
			c->o.mtc = 1;
			if (optarg) {
				bad = pts_cli_parse_u64(cmd, "--mtc", optarg, 15,
							&v) < 0;
				c->o.mtc_freq = (uint8_t)v;
			}
			break;
		case OPT_CYC:
			c->o.cyc = 1;
			if (optarg) {
				bad = pts_cli_parse_u64(cmd, "--cyc", optarg, 15,
							&v) < 0;
				c->o.cyc_thresh = (uint8_t)v;
			}
			break;
		case OPT_CPI:
			bad = pts_cli_number(optarg, 1 << 16, &v) < 0 || !v;
			want = "1 to 65536";
			c->o.cpi_q8 = (uint32_t)v;
			break;
		case OPT_TSC_RATIO: {
			unsigned a, b;
			bad = sscanf(optarg, "%u:%u", &a, &b) != 2 || !a || !b ||
			      b / a >= 512;
			want = "A:B, both above 0, B/A below 512";
			c->o.eax = a;
			c->o.ebx = b;
			break;
		}
		case OPT_NOM:
		case OPT_CBR:
			bad = pts_cli_number(optarg, 255, &v) < 0 || !v;
			want = "1 to 255";
			if (ret == OPT_NOM)
				c->o.nom_ratio = (uint8_t)v;
			else
				c->o.cbr = (uint8_t)v;
			break;
		case OPT_FREQ_RATE:
			bad = rate(name, optarg, &c->o.freq_rate);
			break;
		case OPT_ASYNC:
			bad = rate(name, optarg, &c->o.async_rate);
			break;
		case OPT_OVF: bad = rate(name, optarg, &c->o.ovf_rate); break;
		case OPT_OVF_LEN:
			bad = pts_cli_number(optarg, 1000000, &v) < 0 || !v;
			want = "1 to 1000000";
			c->o.ovf_len = (uint32_t)v;
			break;
		case OPT_ENCLAVE:
			if (c->n_enclaves == 8)
				return pts_cli_usage_error(cmd, "at most 8 enclaves");
			c->enclaves[c->n_enclaves++] = optarg;
			break;
		case OPT_AEX: bad = rate(name, optarg, &c->o.aex_rate); break;
		case OPT_TOPA: c->topa = optarg; break;
		default:
			return pts_cli_bad_option(cmd, ret, argv);
		}
		/* Without @want the parser has said what is wrong. */
		if (bad && want)
			return pts_cli_usage_error(
				cmd, "%s: bad value '%s' (%s)", name, optarg,
				want);
		if (bad)
			return PTS_EXIT_USAGE;
	}
	if (!c->output)
		return pts_cli_usage_error(cmd, "-o TRACE is required");
	if (c->run_argv) {
		if (c->walk)
			return pts_cli_usage_error(cmd, "--run or --walk, not "
							"both");
		if (optind >= argc)
			return pts_cli_usage_error(cmd, "--run needs PROGRAM "
							"[ARGS]");
		c->run_argv = argv + optind;
		/* User space only: the kernel is never seen (OS=0). */
		c->o.user_only = 1;
		c->o.kernel = 1;
		if (!c->insns_given)
			c->o.insns = 1000000000;
	} else if (!c->walk || optind != argc) {
		return pts_cli_usage_error(cmd, "give --walk ELF or --run PROGRAM");
	}
	return check_paths(c);
}

static FILE *open_out(const char *path)
{
	if (!path)
		return NULL;
	FILE *f = fopen(path, "wb");
	if (!f)
		pts_cli_write_error(cmd, path);
	return f;
}

/* The directory of @path ("." when none), for relative image paths. */
static char *dir_of(const char *path)
{
	char *d = strdup(path);
	char *slash = d ? strrchr(d, '/') : NULL;
	if (slash)
		*slash = '\0';
	else if (d)
		strcpy(d, ".");
	return d;
}

static int write_config(struct synth_cli *c, struct pts_config *cfg)
{
	if (!c->config_out)
		return 0;
	syn_options_to_config(&c->o, cfg);
	if (writes_kstub(c)) {
		/* Ring 0 is traced: the decoder needs the stub's bytes. */
		char *kpath = beside(c->output, ".kstub");
		if (!kpath)
			return -1;
		FILE *k = fopen(kpath, "wb");
		int ok = k && fwrite(syn_kstub, 1, sizeof(syn_kstub), k) ==
				      sizeof(syn_kstub);
		if (k && fclose(k))
			ok = 0;
		struct pts_image_spec img = {PTS_IMAGE_RAW, kpath, 0, 0,
					     sizeof(syn_kstub), SYN_KSTUB_BASE,
					     0};
		int err = ok ? pts_config_add_image(cfg, &img) : -1;
		free(kpath);
		if (err < 0) {
			pts_cli_error(cmd, "cannot write the kernel stub: %s",
				      strerror(errno));
			return -1;
		}
	}
	FILE *f = open_out(c->config_out);
	char *dir = dir_of(c->config_out);
	int err = f && dir ? pts_config_write(cfg, dir, f) : -1;
	free(dir);
	if (f && fclose(f))
		err = -1;
	if (err < 0 && f) /* else open_out() said why */
		pts_cli_write_error(cmd, c->config_out);
	return err < 0 ? -1 : 0;
}

/* --topa: the finished trace file copied into the ToPA layout. */
static int write_topa(const struct synth_cli *c, FILE *out)
{
	struct syn_topa_result r;
	int err = fflush(out) ? -PTS_ERR_IO
			      : syn_topa_save(c->topa, c->output, c->output, &r);
	if (err < 0) {
		/* the layout was checked before (check_paths()) */
		pts_cli_error(cmd, "--topa %s: %s", c->topa,
			      pts_strerror(err));
		return -1;
	}
	if (!c->quiet)
		fprintf(stderr,
			"ptscope synth: %s.desc: %llu of %llu bytes stored "
			"(buffer %llu)%s\n",
			c->output, (unsigned long long)r.stored,
			(unsigned long long)r.trace_bytes,
			(unsigned long long)r.capacity,
			r.stored < r.trace_bytes  ? ", stopped"
			: r.trace_bytes > r.capacity ? ", wrapped"
						     : "");
	return 0;
}

int pts_cmd_synth(int argc, char **argv)
{
	struct synth_cli c;
	memset(&c, 0, sizeof(c));
	int ret = parse_args(&c, argc, argv);
	if (ret)
		return ret < 0 ? PTS_EXIT_OK : ret; /* -1: --help */

	int status = PTS_EXIT_USAGE, err;
	struct pts_config cfg;
	struct pts_image *img = NULL;
	struct syn_walk *walk = NULL;
	struct syn_run *run = NULL;
	struct syn_emitter *em = NULL;
	struct syn_truth *truth = NULL;
	FILE *out = NULL, *ftruth = NULL, *fvis = NULL;
	struct syn_sink *sink = malloc(sizeof(*sink));
	pts_config_init(&cfg);
	if (!sink)
		goto done;

	if (c.walk) {
		img = pts_image_new();
		if (!img) {
			pts_cli_error(cmd, "out of memory");
			goto done;
		}
		if (elf_class(c.walk) == ELF_CLASS32) {
			/* its code read as 64-bit would be another program */
			pts_cli_usage_error(cmd, "--walk %s: a 32-bit ELF: the "
					    "walk is of 64-bit code only",
					    c.walk);
			goto done;
		}
		if (pts_cli_add_image(cmd, "--walk", img, c.walk) < 0)
			goto done;
	}
	for (unsigned i = 0; i < c.n_ranges; i++) {
		if (parse_range(img, c.ranges[i], &c.o.addr_a[i],
				&c.o.addr_b[i]) < 0 ||
		    c.o.addr_a[i] > c.o.addr_b[i]) {
			pts_cli_usage_error(cmd, "bad range '%s'", c.ranges[i]);
			goto done;
		}
		c.o.addr_cfg[i] = c.range_cfg[i];
	}
	c.o.n_addr = (uint8_t)c.n_ranges;
	for (unsigned i = 0; i < c.n_enclaves; i++) {
		const struct pts_enclave_addr_reader rd = {read_enclave_addr,
							   img};
		const char *why;
		if (pts_config_add_enclave_spec(&cfg, c.enclaves[i], &rd,
						&why) < 0) {
			pts_cli_usage_error(cmd, "--enclave: '%s': %s",
					    c.enclaves[i], why);
			goto done;
		}
	}

	struct syn_driver d;
	memset(&d, 0, sizeof(d));
	if (c.walk) {
		uint64_t start = 0;
		const char *elf = c.walk;
		if (c.start && parse_addr(img, c.start, &start) < 0) {
			pts_cli_usage_error(cmd,
					    "--start '%s': no symbol of %s "
					    "and no number (0x hex or decimal)",
					    c.start, c.walk);
			goto done;
		}
		if (!c.start) {
			const struct pts_symbol *s =
				pts_image_symbol_find(img, 0, "_start");
			start = s ? s->addr : 0;
		}
		if ((err = syn_walk_new(&c.o, &cfg, img, start, &walk)) < 0) {
			pts_cli_error(cmd, "%s: %s", elf, pts_strerror(err));
			goto done;
		}
		/* The walk starts at a function entry instead of an
		 * address without code: not what was asked for. */
		if (c.start && syn_walk_ip(walk) != start) {
			pts_cli_usage_error(cmd,
					    "--start %s: no instruction at "
					    "0x%" PRIx64 " in %s",
					    c.start, start, elf);
			goto done;
		}
		/* Data decodes as instructions too: the address must be in
		 * an executable section. */
		if (c.start && pts_elf_code_at(elf, start) == 0) {
			pts_cli_usage_error(
				cmd, "--start %s: 0x%" PRIx64 " is in no "
				     "executable section of %s (data?)",
				c.start, start, elf);
			goto done;
		}
		d.start = syn_walk_ip(walk);
		d.start_where = syn_walk_where(walk);
		d.source = walk;
		d.next = syn_walk_source_next;
		d.restart_here = syn_walk_source_restart;
	} else {
		if ((err = syn_run_start(&c.o, c.run_argv, &run)) < 0) {
			pts_cli_error(cmd, "cannot run %s", c.run_argv[0]);
			goto done;
		}
		d.start = syn_run_ip(run);
		d.start_where = (struct syn_where){3, -1};
		d.source = run;
		d.next = syn_run_next;
	}

	out = open_out(c.output);
	if (!out || (c.truth && !(ftruth = open_out(c.truth))) ||
	    (c.visible && !(fvis = open_out(c.visible))))
		goto done;
	syn_sink_init(sink, out);
	em = syn_emit_new(&c.o, &cfg, sink);
	truth = (ftruth || fvis) ? syn_truth_new(ftruth, fvis) : NULL;
	if (!em || ((ftruth || fvis) && !truth))
		goto done;
	d.o = &c.o;
	d.cfg = &cfg;
	d.em = em;
	d.truth = truth;
	double t0 = pts_cli_now();
	err = syn_drive(&d);
	double dt = pts_cli_now() - t0;
	if (err < 0) {
		pts_cli_error(cmd, "synthesis failed: %s", pts_strerror(err));
		status = PTS_EXIT_ERRORS;
		goto done;
	}
	if (c.walk) {
		/* The ELF as given on the command line ("FILE[:BASE]"). */
		struct pts_image_spec is = {PTS_IMAGE_ELF, NULL, 0, 0, 0, 0, 0};
		char *path = pts_elf_spec_split(c.walk, &is.base);
		is.path = path;
		err = path ? pts_config_add_image(&cfg, &is) : -1;
		free(path);
	} else {
		err = syn_run_images(run, &cfg);
		if (err < 0)
			pts_cli_error(cmd, "cannot read the mappings of the "
					   "program run: %s",
				      pts_cli_errstr(err));
	}
	if (err < 0 || write_config(&c, &cfg) < 0 ||
	    (c.topa && write_topa(&c, out) < 0))
		goto done;
	if (syn_truth_free(truth) < 0) {
		truth = NULL;
		pts_cli_error(cmd, "cannot write the truth");
		goto done;
	}
	truth = NULL;
	if (!c.quiet) {
		struct syn_emit_stats st;
		syn_emit_stats(em, &st);
		fprintf(stderr,
			"ptscope synth: %llu instructions (%llu visible), "
			"%llu bytes, %llu packets, %llu PSB, %llu OVF, "
			"%.2f s (%.1f M insn/s)\n",
			(unsigned long long)d.insns,
			(unsigned long long)d.visible,
			(unsigned long long)sink->total,
			(unsigned long long)st.packets,
			(unsigned long long)st.psbs,
			(unsigned long long)st.ovfs, dt,
			dt > 0 ? (double)d.insns / dt / 1e6 : 0.0);
	}
	status = PTS_EXIT_OK;
done:
	syn_truth_free(truth);
	if (out && fclose(out) && status == PTS_EXIT_OK) {
		pts_cli_write_error(cmd, c.output);
		status = PTS_EXIT_USAGE;
	}
	out = NULL;
	if (status == PTS_EXIT_OK && c.perf_data)
		syn_options_to_config(&c.o, &cfg); /* without --config-out too */
	int perr = 0;
	if (status == PTS_EXIT_OK && c.perf_data)
		perr = pts_synth_perf_data(c.output, &cfg,
					   c.walk ? "synth" : c.run_argv[0],
					   c.perf_data, c.perf_zstd);
	if (perr < 0) {
		pts_cli_error(cmd, "cannot write %s: %s", c.perf_data,
			      perr == -PTS_ERR_UNSUPPORTED
				      ? "ptscope was built without libzstd"
				      : pts_cli_errstr(perr));
		status = PTS_EXIT_USAGE;
	}
	if (ftruth)
		fclose(ftruth);
	if (fvis)
		fclose(fvis);
	syn_emit_free(em);
	syn_walk_free(walk);
	syn_run_free(run);
	pts_image_free(img);
	pts_config_fini(&cfg);
	free(sink);
	return status;
}
