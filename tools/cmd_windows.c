/* ptscope windows: when tracing was on, when it was off, why, and (with
 * --verify) whether anything is wrong. Streams the trace through the packet
 * decoder into the windows model (windows.h) and prints its records as a
 * table or as JSON lines, then a summary. With images (--elf, --raw, the
 * images of --config) the flow decoder runs over the same bytes and gives
 * the model what only the code tells (windows_evidence.h); without, the
 * packets alone are read, at packet speed. */
#include "cli.h"
#include "commands.h"
#include "flow_run.h"
#include "perf_cmd.h"
#include "windows_evidence.h"
#include "windows_report.h"

#include <ptscope/model.h>
#include <ptscope/perfdata.h>
#include <ptscope/windows.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char cmd[] = "windows";

struct windows {
	struct pts_winrep_opts opts;
	uint8_t perf;     /* TRACE is a perf.data file */
	uint8_t have_cfg; /* --config or a configuration option was given */
	uint8_t packets_only; /* --packets-only: ignore images */
	struct pts_image *img; /* --elf, --raw, --config images; NULL: none */
	const char *trace;
	struct pts_trace_input *in; /* given by `topa ... windows` */
	const char *config_path;
	struct pts_config config; /* --config, then the options on top */
	struct pts_pkt_config pkt_config;
	struct pts_out out;
	const char *ctl_arg; /* the last --ctl value, as given */
	uint64_t file_ctl;   /* --config's ctl, before the options */
	uint8_t ctl_in_file; /* --config has a ctl line */
};

static void help(void)
{
	fputs("usage: ptscope windows [OPTIONS] TRACE\n"
	      "\n"
	      "Says when tracing was on (windows: PacketEn = 1), when it was\n"
	      "off (gaps) and why, from the packets of a raw Intel PT trace\n"
	      "(TRACE; '-' reads standard input), the configuration and the\n"
	      "enclave map. Gap causes: enclave, cpl, cr3, ip-filter,\n"
	      "tracestop, disabled, overflow, decode-error, truncated,\n"
	      "needs-images (only the code can tell; candidates listed),\n"
	      "unknown.\n"
	      "\n"
	      "options:\n"
	      "      --config=FILE     trace configuration (ptscope-config 1;\n"
	      "                        its images are used as --elf/--raw)\n"
	      "      --elf=FILE[:BASE] code from an ELF file: run the flow\n"
	      "                        decoder for evidence from the code\n"
	      "      --raw=FILE[:FROM[-TO]]:ADDR  code from a raw file\n"
	      "      --packets-only    ignore images: packets alone\n"
	      "      --enclave=SPEC    BEGIN-END:production|debug[,aep=ADDR]\n"
	      "                        [,eexit=ADDR][,name=N]; END exclusive;\n"
	      "                        repeat for several enclaves (not\n"
	      "                        overlapping); entry=ADDR is allowed\n"
	      "                        (synth's OENTRY), and not needed\n"
	      "      --ctl=VALUE       IA32_RTIT_CTL as traced\n"
	      "      --ring=R          user, kernel or both: sets CTL.OS/User\n"
	      "      --filter=A-B      an IP filter range (ADDRn_CFG=1)\n"
	      "      --stop-range=A-B  a TraceStop range (ADDRn_CFG=2)\n"
	      "      --cr3=VALUE       IA32_RTIT_CR3_MATCH\n"
	      "      --cpuid15=EAX:EBX[:ECX]  CPUID 0x15 (TSC/crystal ratio)\n"
	      "      --nom-freq=N      MSR_PLATFORM_INFO[15:8] (CYC timing)\n"
	      "      --mtc-freq=N      CTL.MTCFreq when --ctl is not given\n"
	      "      --cpu=CPU         FAMILY/MODEL[/STEPPING] (errata)\n"
	      "      --no-sync         decode from byte 0, not the first PSB\n"
	      "      --perf            TRACE is a perf.data file: one report\n"
	      "                        per AUX queue (CPU or thread); its PT\n"
	      "                        event gives the configuration, options\n"
	      "                        override it\n"
	      "      --verify          check the rules of gap verification and\n"
	      "                        print each violation\n"
	      "  -f, --format=FMT      text (default) or jsonl\n"
	      "  -h, --help            this text\n"
	      "\n"
	      "Options given after --config override its values.\n"
	      "With images, each FUP+TIP.PGD is checked for an ENCLU at the\n"
	      "FUP (entry-not-enclu), each bare TIP.PGD's branch and each\n"
	      "TIP.PGE target settle needs-images gaps, and compressed\n"
	      "returns with an empty return stack are reported\n"
	      "(retstack-empty).\n"
	      "Exit status: 0 clean, 1 --verify found violations (--perf:\n"
	      "or the perf.data is damaged), 2 usage or I/O error.\n",
	      stdout);
}

/* --- options ---------------------------------------------------------------- */

/* --ring: RTIT_CTL's User and OS bits (TraceEn and BranchEn too when no
 * --ctl came first). Returns 0, or PTS_EXIT_USAGE after saying why. */
static int set_ring(struct pts_trace_config *tc, const char *arg)
{
	static const char *const names[] = {"user", "kernel", "both", NULL};
	static const uint64_t ring_bits[] = {PTS_CTL_USER, PTS_CTL_OS,
					     PTS_CTL_USER | PTS_CTL_OS};
	int i;

	if (pts_cli_parse_choice(cmd, "--ring", arg, names, &i))
		return PTS_EXIT_USAGE;
	const uint64_t bits = ring_bits[i];

	if (!(tc->known & PTS_CFG_CTL))
		tc->ctl = PTS_CTL_TRACEEN | PTS_CTL_BRANCHEN;
	tc->ctl = (tc->ctl & ~(PTS_CTL_OS | PTS_CTL_USER)) | bits;
	tc->known |= PTS_CFG_CTL;
	return 0;
}

static int set_cpuid15(struct pts_trace_config *tc, const char *arg)
{
	uint64_t v[3] = {0, 0, 0};
	int n = 0;
	const char *s = arg;

	for (;;) {
		const char *end = s + strcspn(s, ":");

		if (n == 3 || pts_parse_u64(s, end, &v[n++]) < 0)
			return -1;
		if (*end == '\0')
			break;
		s = end + 1;
	}
	/* EAX 0 would divide by zero; EBX 0 means "not enumerated" (SDM
	 * Vol. 2A, CPUID leaf 15H): neither gives a ratio. */
	if (n < 2 || !v[0] || !v[1] || v[0] > UINT32_MAX ||
	    v[1] > UINT32_MAX || v[2] > UINT32_MAX)
		return -1;
	tc->cpuid_15_eax = (uint32_t)v[0];
	tc->cpuid_15_ebx = (uint32_t)v[1];
	tc->cpuid_15_ecx = (uint32_t)v[2];
	tc->known |= PTS_CFG_CPUID15;
	return 0;
}

/* IA32_RTIT_CTL's ADDR0..3_CFG fields. */
#define ADDR_CFG_BITS (0xffffull << PTS_CTL_ADDR_CFG_SHIFT(0))

/* The options that change the configuration, applied after --config. */
static int apply_option(struct windows *w, int c, const char *arg)
{
	struct pts_trace_config *tc = &w->config.trace;
	uint64_t v;

	switch (c) {
	case 'E': {
		const char *why;

		if (pts_config_add_enclave_spec(&w->config, arg, NULL, &why) <
		    0)
			return pts_cli_usage_error(cmd, "--enclave: '%s': %s",
						   arg, why);
		return 0;
	}
	case 'c':
		if (pts_cli_parse_u64(cmd, "--ctl", arg, UINT64_MAX, &v) < 0)
			return PTS_EXIT_USAGE;
		/* Keep ADDRn_CFG from --filter given before, unless the
		 * value has ADDRn_CFG fields of its own. */
		if (!(v & ADDR_CFG_BITS) && (tc->known & PTS_CFG_ADDR))
			v |= tc->ctl & ADDR_CFG_BITS;
		tc->ctl = v;
		tc->known |= PTS_CFG_CTL;
		w->ctl_arg = arg;
		return 0;
	case 'r':
		return set_ring(tc, arg);
	case 'F':
	case 'S': {
		const char *opt = c == 'F' ? "--filter" : "--stop-range";
		int err = pts_config_add_range(
			tc, arg, c == 'F' ? PTS_ADDR_FILTER : PTS_ADDR_STOP);
		if (err == -PTS_ERR_BAD_CONFIG)
			return pts_cli_usage_error(cmd,
						   "%s: more than 4 ranges "
						   "(--filter and --stop-range "
						   "share ADDR0-3)",
						   opt);
		if (err < 0)
			return pts_cli_usage_error(cmd,
						   "%s: expected A-B (numbers, "
						   "0x hex or decimal, A <= B), "
						   "got '%s'",
						   opt, arg);
		return 0;
	}
	case '3':
		if (pts_cli_parse_u64(cmd, "--cr3", arg, UINT64_MAX,
				      &tc->cr3_match) < 0)
			return PTS_EXIT_USAGE;
		tc->known |= PTS_CFG_CR3;
		return 0;
	case '5':
		if (set_cpuid15(tc, arg) < 0)
			return pts_cli_usage_error(
				cmd, "--cpuid15: expected EAX:EBX[:ECX], "
				     "EAX and EBX above 0 (EBX 0: no ratio "
				     "enumerated; leave the option out)");
		return 0;
	case 'N':
		if (pts_cli_parse_u64(cmd, "--nom-freq", arg, 255, &v) < 0)
			return PTS_EXIT_USAGE;
		if (!v) /* a ratio: CYC times would divide by it */
			return pts_cli_usage_error(
				cmd, "--nom-freq: expected 1 to 255, got 0");
		tc->nom_freq = (uint8_t)v;
		tc->known |= PTS_CFG_NOMFREQ;
		return 0;
	case 'M':
		if (pts_cli_parse_u64(cmd, "--mtc-freq", arg, 15, &v) < 0)
			return PTS_EXIT_USAGE;
		tc->mtc_freq = (uint8_t)v;
		tc->known |= PTS_CFG_MTCFREQ;
		return 0;
	case 'C':
		if (pts_cli_parse_cpu(cmd, arg, &tc->cpu))
			return PTS_EXIT_USAGE;
		w->pkt_config.cpu = tc->cpu;
		return 0;
	default:
		return pts_cli_usage_error(cmd, "internal: option %c", c);
	}
}

static const struct option longopts[] = {
	{"config", required_argument, NULL, 'K'},
	{"enclave", required_argument, NULL, 'E'},
	{"ctl", required_argument, NULL, 'c'},
	{"ring", required_argument, NULL, 'r'},
	{"filter", required_argument, NULL, 'F'},
	{"stop-range", required_argument, NULL, 'S'},
	{"cr3", required_argument, NULL, '3'},
	{"cpuid15", required_argument, NULL, '5'},
	{"nom-freq", required_argument, NULL, 'N'},
	{"mtc-freq", required_argument, NULL, 'M'},
	{"cpu", required_argument, NULL, 'C'},
	{"no-sync", no_argument, NULL, 'Y'},
	{"perf", no_argument, NULL, 'P'},
	{"elf", required_argument, NULL, 'L'},
	{"raw", required_argument, NULL, 'W'},
	{"packets-only", no_argument, NULL, 'O'},
	{"verify", no_argument, NULL, 'V'},
	{"format", required_argument, NULL, 'f'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

/* The image set, made on first use. Returns it or NULL (message given). */
static struct pts_image *images(struct windows *w)
{
	if (!w->img && !(w->img = pts_image_new()))
		pts_cli_error(cmd, "out of memory");
	return w->img;
}

/* --elf FILE[:BASE] ('L') or --raw FILE[:FROM[-TO]]:ADDR ('W'), in the
 * default address space: code seen from every CR3. */
static int add_image(struct windows *w, int c, const char *arg)
{
	struct pts_image *img = images(w);

	if (!img || pts_cli_add_image(cmd, c == 'L' ? "--elf" : "--raw", img,
				      arg) < 0)
		return PTS_EXIT_USAGE;
	return 0;
}

static int add_config_image(struct windows *w, const struct pts_image_spec *s)
{
	struct pts_image *img = images(w);

	if (!img || pts_cli_config_image(cmd, w->config_path, img, s) < 0)
		return PTS_EXIT_USAGE;
	return 0;
}

/* Two passes: the first finds --config (and the non-config options), the
 * second applies the configuration options on top of the file. */
static int parse_args(struct windows *w, int argc, char **argv)
{
	int c, err_line = 0, err;

	while ((c = pts_cli_getopt(argc, argv, ":f:h", longopts)) != -1) {
		switch (c) {
		case 'K':
			w->config_path = optarg;
			break;
		case 'Y':
			w->pkt_config.no_sync = 1;
			break;
		case 'V':
			w->opts.verify = 1;
			break;
		case 'P':
			w->perf = 1;
			break;
		case 'O':
			w->packets_only = 1;
			break;
		case 'L':
		case 'W':
			err = add_image(w, c, optarg);
			if (err)
				return err;
			break;
		case 'f':
			if (pts_cli_parse_format(cmd, optarg, "text",
						 &w->opts.jsonl))
				return PTS_EXIT_USAGE;
			break;
		case 'h':
			help();
			return -1;
		case '?':
		case ':':
			return pts_cli_bad_option(cmd, c, argv);
		default:
			w->have_cfg = 1;
			break;
		}
	}
	if (w->in && w->perf)
		return pts_cli_usage_error(cmd, "the trace is given already");
	if (w->in)
		w->trace = "ToPA buffer";
	if (w->in ? pts_cli_no_operand(cmd, argc, argv, optind)
		  : pts_cli_trace_operand(cmd, argc, argv, optind, &w->trace))
		return PTS_EXIT_USAGE;
	if (w->config_path) {
		err = pts_config_load(&w->config, w->config_path, &err_line);
		if (err < 0) {
			pts_cli_config_error(cmd, w->config_path, err_line,
					     err, w->config.why);
			return PTS_EXIT_USAGE;
		}
		w->pkt_config.cpu = w->config.trace.cpu;
		w->file_ctl = w->config.trace.ctl;
		w->ctl_in_file = (w->config.trace.known & PTS_CFG_CTL) != 0;
		w->have_cfg = 1;
		for (size_t i = 0; i < w->config.n_images; i++) {
			err = add_config_image(w, &w->config.images[i]);
			if (err)
				return err;
		}
	}
	return 0;
}

/* Second pass: the configuration options, on top of --config (or of the
 * perf.data event). */
static int apply_options(struct windows *w, int argc, char **argv)
{
	int c, err;

	optind = 1;
	while ((c = pts_cli_getopt(argc, argv, ":f:h", longopts)) != -1) {
		if (strchr("KYPVfhLWO", c))
			continue;
		err = apply_option(w, c, optarg);
		if (err)
			return err;
	}
	/* With TraceEn clear nothing is traced; without OS and User,
	 * ContextEn is never 1: no trace either. Checked on the value
	 * --ring and --filter leave, whether --ctl or --config gave it. */
	const uint64_t ctl = w->config.trace.ctl;
	const int given = w->ctl_arg || (w->config_path &&
					 (w->config.trace.known & PTS_CFG_CTL));
	if (!given || ((ctl & PTS_CTL_TRACEEN) &&
		       (ctl & (PTS_CTL_OS | PTS_CTL_USER))))
		return 0;
	char what[96];
	if (w->ctl_arg)
		snprintf(what, sizeof(what), "--ctl=%.60s", w->ctl_arg);
	else if (ctl == w->file_ctl)
		snprintf(what, sizeof(what), "ctl 0x%" PRIx64, ctl);
	else
		snprintf(what, sizeof(what),
			 "ctl 0x%" PRIx64 " (0x%" PRIx64 " after the options)",
			 w->file_ctl, ctl);
	return pts_cli_usage_error(
		cmd, "%s%s%s: %s clear: nothing is traced with that value",
		w->ctl_arg ? "" : w->config_path, w->ctl_arg ? "" : ": ", what,
		ctl & PTS_CTL_TRACEEN ? "OS (bit 2) and User (bit 3) are"
				      : "TraceEn (bit 0) is");
}

/* --- raw traces ----------------------------------------------------------- */

static int run_raw(struct windows *w)
{
	struct pts_trace_input opened = {0};
	struct pts_trace_input *src = w->in ? w->in : &opened;
	struct pts_pkt_decoder *dec;
	struct pts_winrep rep;
	struct pts_winev *ev = NULL;
	struct pts_input chunk;
	int r, status = PTS_EXIT_OK;

	memset(&rep, 0, sizeof(rep));
	if (!w->in && pts_trace_input_open(cmd, w->trace, &opened) < 0)
		return PTS_EXIT_USAGE;
	/* Bytes before the first PSB: a trace that starts mid-stream (a file
	 * cut at its start, a ring that wrapped), not a decode error; but an
	 * unwrapped ToPA buffer starts where tracing did, at a packet (its
	 * PADs are no skipped bytes: decoded from byte 0, as --no-sync says
	 * of a file). */
	if (src->topa) {
		struct pts_topa_info ti;

		w->opts.lead_truncated =
			pts_topa_get_info(src->topa, &ti) == 0 && ti.wrapped;
		w->opts.tail_truncated = 1;
		if (!w->opts.lead_truncated)
			w->pkt_config.no_sync = 1;
	} else {
		w->opts.lead_truncated = !w->pkt_config.no_sync;
	}
	dec = pts_pkt_decoder_new(&w->pkt_config);
	if (!dec || pts_winrep_init(&rep, &w->config.trace, &w->opts,
				    &w->out) < 0 ||
	    (w->img && !(ev = pts_winev_new(&rep, w->img,
					     &w->pkt_config.cpu)))) {
		pts_cli_error(cmd, "out of memory");
		if (rep.model)
			pts_winrep_fini(&rep);
		pts_pkt_decoder_free(dec);
		pts_trace_input_close(&opened);
		return PTS_EXIT_USAGE;
	}
	/* The flow decoder sees each chunk first: the packets of the same
	 * bytes then wait in the report for what it found (the chunk stays
	 * valid until the next read). */
	while ((r = pts_trace_input_next(src, &chunk)) == 1) {
		if (ev && pts_winev_flow(ev, chunk) < 0) {
			r = -PTS_ERR_NOMEM;
			break;
		}
		if (pts_winrep_decode(&rep, dec, &chunk) == -PTS_ERR_NO_PROGRESS)
			break;
	}
	if (r < 0) {
		pts_cli_error(cmd, "cannot read %s: %s", w->trace,
			      pts_cli_errstr(r));
		status = PTS_EXIT_USAGE;
	} else if (r == 0) {
		struct pts_input none = {NULL, 0, 0};

		pts_pkt_end(dec);
		if (pts_winrep_decode(&rep, dec, &none) == -PTS_ERR_NO_PROGRESS)
			status = PTS_EXIT_USAGE;
	} else {
		status = PTS_EXIT_USAGE;
	}
	if (ev)
		pts_winev_finish(ev, cmd);
	pts_winrep_finish(&rep, src->bytes + w->pkt_config.base_offset);
	if (rep.failed) {
		pts_cli_error(cmd, "internal error in the windows model");
		status = PTS_EXIT_USAGE;
	}
	if (status == PTS_EXIT_OK && w->opts.verify &&
	    pts_winrep_violations(&rep))
		status = PTS_EXIT_ERRORS;
	pts_winev_free(ev);
	pts_winrep_fini(&rep);
	pts_pkt_decoder_free(dec);
	pts_trace_input_close(&opened);
	return status;
}

/* --- perf.data ------------------------------------------------------------ */

/* Each queue of the perf.data, as `perf windows` walks it, configured
 * from the file and the options on top. */
static int run_perf(struct windows *w, int argc, char **argv)
{
	struct pts_perf *perf = NULL;
	struct pts_winrep rep;
	int status = PTS_EXIT_OK;
	uint64_t violations = 0;

	/* A damaged file is said so, and then exits 1 as `perf windows`
	 * does: its reports cover what precedes the damage. */
	const int damaged = pts_perfcmd_open(cmd, w->trace, &perf);
	if (damaged < 0)
		return -damaged;
	if (pts_perfcmd_no_pt(cmd, w->trace, perf)) {
		pts_perf_close(perf);
		return PTS_EXIT_USAGE;
	}
	if (!w->config_path)
		pts_perfcmd_trace_config(perf, &w->config.trace);
	status = apply_options(w, argc, argv);
	/* the file's CPU (errata) and clock, unless options said otherwise
	 * (--cpu sets the configuration's too); its CTL has MTCFreq */
	w->pkt_config.cpu = w->config.trace.cpu;
	w->opts.tsc_hz = pts_config_tsc_hz(&w->config.trace);
	if (w->config.trace.known & PTS_CFG_CTL)
		w->opts.mtc_freq_assumed = 0;
	for (uint32_t i = 0; status == PTS_EXIT_OK &&
			     i < pts_perf_queue_count(perf); i++) {
		const struct pts_perf_queue *q = pts_perf_queue_get(perf, i);
		const struct pts_perfwin_queue wq = {perf, i, w->pkt_config,
						     w->img, cmd, NULL};

		if (w->opts.jsonl) {
			char line[160];

			snprintf(line, sizeof(line),
				 "{\"type\":\"queue\",\"idx\":%" PRIu32
				 ",\"cpu\":%" PRId32 ",\"tid\":%" PRId32 "}\n",
				 q->idx, q->cpu, q->tid);
			pts_out_puts(&w->out, line);
		} else {
			pts_perfwin_queue_line(&w->out, perf, q);
		}
		if (pts_winrep_init(&rep, &w->config.trace, &w->opts,
				    &w->out) < 0) {
			pts_cli_error(cmd, "out of memory");
			status = PTS_EXIT_USAGE;
			break;
		}
		if (pts_perfwin_run_queue(&wq, &rep) < 0 || rep.failed)
			status = PTS_EXIT_USAGE;
		violations += pts_winrep_violations(&rep);
		pts_winrep_fini(&rep);
	}
	pts_perf_close(perf);
	if (status == PTS_EXIT_OK &&
	    (damaged || (w->opts.verify && violations)))
		status = PTS_EXIT_ERRORS;
	return status;
}

int pts_cmd_windows(int argc, char **argv)
{
	return pts_cmd_windows_input(argc, argv, NULL);
}

int pts_cmd_windows_input(int argc, char **argv, struct pts_trace_input *in)
{
	struct windows w;
	int status;

	memset(&w, 0, sizeof(w));
	w.in = in;
	pts_config_init(&w.config);
	optind = 1;
	status = parse_args(&w, argc, argv);
	if (status == 0 && !w.perf)
		status = apply_options(&w, argc, argv);
	if (status != 0) {
		pts_image_free(w.img);
		pts_config_fini(&w.config);
		return status < 0 ? PTS_EXIT_OK : status;
	}
	if (status == 0 && w.perf && w.img && !w.packets_only)
		status = pts_cli_usage_error(cmd, "--perf: images are not "
						  "used yet (give "
						  "--packets-only)");
	if (status != 0) {
		pts_image_free(w.img);
		pts_config_fini(&w.config);
		return status;
	}
	if (w.packets_only) {
		pts_image_free(w.img);
		w.img = NULL;
	}
	w.opts.have_map = w.config.n_enclaves != 0 || w.img;
	w.opts.tsc_hz = pts_config_tsc_hz(&w.config.trace);
	/* --ring and --filter make a CTL of their own, MTCFreq 0 in it */
	w.opts.mtc_freq_assumed =
		(w.config.trace.known & PTS_CFG_CPUID15) &&
		!(w.config.trace.known & PTS_CFG_MTCFREQ) && !w.ctl_arg &&
		!w.ctl_in_file;
	if (pts_out_init(&w.out, stdout, 1u << 20) < 0) {
		pts_cli_error(cmd, "out of memory");
		pts_image_free(w.img);
		pts_config_fini(&w.config);
		return PTS_EXIT_USAGE;
	}
	status = w.perf ? run_perf(&w, argc, argv) : run_raw(&w);
	if (pts_out_fini(&w.out) < 0) {
		pts_out_error(cmd, &w.out);
		status = PTS_EXIT_USAGE;
	}
	pts_image_free(w.img);
	pts_config_fini(&w.config);
	return status;
}

