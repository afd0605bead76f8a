/* libipt must agree with the synthesizer: each synthesized trace (a walk
 * over a real ELF) is decoded with libipt's instruction flow decoder
 * (pt_insn) and every instruction address it reports is compared with the
 * ground truth, in order.
 *
 * Rules for the comparison (the places where libipt 2.0.5 legitimately
 * reports less than the truth holds):
 *   - An ENCLU whose FUP opens the transition (FUP(CLIP) + TIP/TIP.PGD,
 *     pt-sgx-facts 4.3) executed, but libipt binds the FUP before the
 *     instruction and does not report it: skipped without counting.
 *   - Hidden instructions (enclave, ring 0 with OS=0, filter, TraceStop,
 *     CR3 filter, overflow) must not be reported, except straight-line
 *     ones libipt walks before it meets an overflow's OVF: counted,
 *     allowed only in overflow runs.
 *   - A taken conditional branch that leaves the IP filter range (or
 *     lands in a TraceStop range) gives TIP.PGD with the IP suppressed
 *     (pt-sgx-facts 1.3, TIP.PGD: the target follows from the code).
 *     libipt 2.0.5 binds a suppressed TIP.PGD only to far branches, CPL
 *     or CR3 changes (and to direct JMP/CALL under erratum SKL014), so at
 *     such a Jcc it asks for a TNT and fails with pte_bad_query. That
 *     error is counted apart, at a visible Jcc whose successor the filter
 *     or a TraceStop hides only, and the visible instructions libipt
 *     skips until its resync are not misses.
 * Everything else is a mismatch: an address libipt reports that is not
 * the next truth instruction, a visible instruction it skips, or a
 * decode error.
 *
 * What libipt 2.0.5 does at the enclave transitions (pt-sgx-facts 4.3),
 * checked by the enclave scenarios below over fixtures/bin/enclave_demo:
 *   - production EENTER/ERESUME, FUP(ENCLU) TIP.PGD(): event
 *     async_disabled with at = the ENCLU's address; the last instruction
 *     reported is the one before the ENCLU, the ENCLU itself never (the
 *     first rule above);
 *   - production EEXIT and AEX, [MODE.Exec] TIP.PGE(target or AEP): event
 *     enabled at that IP, the flow goes on from there;
 *   - AEX, then (user-only) the interrupt at the AEP FUP(AEP) TIP.PGD()
 *     and the IRET's TIP.PGE(AEP): async_disabled at the AEP with no
 *     instruction between, enabled at the AEP (resumed);
 *   - debug enclave, FUP(ENCLU) TIP(entry | target) and FUP(CLIP) TIP(AEP):
 *     async_branch from the FUP's IP; the ENCLU is not reported either,
 *     and every instruction inside ELRANGE is.
 * Asserted: every visible ENCLU gets its async_disabled/async_branch event
 * at its address before libipt reports anything after it, and no ENCLU is
 * reported as an instruction.
 *
 * usage: diff_synth_libipt [INSNS [SEED [ELF]]]; exit 77 without an ELF.
 *        diff_synth_libipt --run PROGRAM: a ptrace recording instead.
 * The enclave scenarios walk fixtures/bin/enclave_demo (found through
 * PTS_SOURCE_ROOT) whatever ELF is given.
 */
#include "synth_run.h"

#include <intel-pt.h>

#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct truth_insn {
	uint64_t ip;
	uint8_t hidden, enclu, kind;
};

struct truth {
	struct truth_insn *v;
	size_t n, cap;
};

static void on_step(void *ctx, const struct syn_step *s, int hidden)
{
	struct truth *t = ctx;
	if (!syn_is_insn(s))
		return;
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 1 << 16;
		t->v = realloc(t->v, t->cap * sizeof(*t->v));
		if (!t->v)
			abort();
	}
	t->v[t->n++] = (struct truth_insn){s->ip, (uint8_t)hidden,
					   s->kind == SYN_ENCLU, s->kind};
}

static int read_image(uint8_t *buf, size_t size,
		      const struct pt_asid *asid, uint64_t ip, void *ctx)
{
	(void)asid;
	int n = pts_image_fetch(ctx, 0, ip, buf, size);
	return n < 0 ? -pte_nomap : n;
}

struct result {
	uint64_t matched, missed, hidden_reported, mismatches, errors;
	uint64_t disabled; /* ptev_disabled events: synchronous TIP.PGD */
	/* ENCLU: visible ones matched by an async_disabled/async_branch
	 * event at their address, ones libipt reported as instructions,
	 * visible ones in the truth. */
	uint64_t enclu_events, enclu_reported, enclu_visible;
	/* The conditional-branch rule libipt cannot follow (see the top):
	 * times met, visible instructions its resync skipped after it. */
	uint64_t cond_pgd, cond_pgd_skipped;
	/* TraceStop packets (ptev_stop); PIPs (ptev_paging) with the CR3 of
	 * the options and with another one. */
	uint64_t stops, paging, paging_other;
};

/* The index of the first visible ENCLU at or after @i (t->n: none). */
static size_t next_enclu(const struct truth *t, size_t i)
{
	while (i < t->n && !(t->v[i].enclu && !t->v[i].hidden))
		i++;
	return i;
}

/* Compares libipt's flow on @trace with @t. */
static void compare(const struct syn_sink *trace, struct pts_image *img,
		    const struct syn_options *o, const struct truth *t,
		    struct result *r)
{
	struct pt_config config;
	memset(r, 0, sizeof(*r));
	for (size_t i = 0; i < t->n; i++)
		r->enclu_visible += t->v[i].enclu && !t->v[i].hidden;
	size_t enclu_next = next_enclu(t, 0);
	pt_config_init(&config);
	config.begin = trace->mem;
	config.end = trace->mem + trace->mem_len;
	for (unsigned i = 0; i < o->n_addr; i++) {
		uint64_t cfg = o->addr_cfg[i];
		config.addr_filter.config.addr_cfg |= cfg << (4 * i);
		(&config.addr_filter.addr0_a)[2 * i] = o->addr_a[i];
		(&config.addr_filter.addr0_a)[2 * i + 1] = o->addr_b[i];
	}
	struct pt_insn_decoder *dec = pt_insn_alloc_decoder(&config);
	struct pt_image *pimg = pt_insn_get_image(dec);
	pt_image_set_callback(pimg, read_image, img);

	size_t p = 0;
	int after_cond_pgd = 0;
	int status = pt_insn_sync_forward(dec);
	while (status >= 0 || status == -pte_eos) {
		if (status == -pte_eos)
			break;
		while (status & pts_event_pending) {
			struct pt_event ev;
			status = pt_insn_event(dec, &ev, sizeof(ev));
			if (status < 0)
				break;
			r->disabled += ev.type == ptev_disabled;
			r->stops += ev.type == ptev_stop;
			/* A PIP carries CR3[51:5]; libipt reports one in a
			 * PSB+ as an async paging event. */
			if (ev.type == ptev_paging ||
			    ev.type == ptev_async_paging) {
				uint64_t want = o->cr3 & ~0x1full &
						((1ull << 52) - 1);
				uint64_t cr3 = ev.type == ptev_paging
						       ? ev.variant.paging.cr3
						       : ev.variant.async_paging.cr3;
				r->paging += cr3 == want;
				r->paging_other += cr3 != want;
			}
			uint64_t at = ev.type == ptev_async_disabled
					      ? ev.variant.async_disabled.at
				      : ev.type == ptev_async_branch
					      ? ev.variant.async_branch.from
					      : 0;
			/* The next visible ENCLU's event: at its address,
			 * before libipt reported anything after it. (An AEX
			 * or interrupt at an ENCLU's address gives one too;
			 * those are extra.) */
			if (at && enclu_next < t->n && t->v[enclu_next].ip == at &&
			    p <= enclu_next) {
				r->enclu_events++;
				enclu_next = next_enclu(t, enclu_next + 1);
			}
		}
		if (status < 0)
			goto error;
		struct pt_insn insn;
		status = pt_insn_next(dec, &insn, sizeof(insn));
		if (status < 0) {
			if (status == -pte_eos)
				break;
			goto error;
		}
		/* Find insn.ip at or after p: the first visible occurrence
		 * (a loop may run both inside an overflow and after it),
		 * else the first hidden one. */
		size_t q = p, first = SIZE_MAX;
		uint64_t missed = 0, missed_first = 0;
		while (q < t->n && q - p < 200000 &&
		       (t->v[q].ip != insn.ip || t->v[q].hidden)) {
			if (t->v[q].ip == insn.ip && first == SIZE_MAX) {
				first = q;
				missed_first = missed;
			}
			if (!t->v[q].hidden && !t->v[q].enclu)
				missed++;
			q++;
		}
		if ((q >= t->n || q - p >= 200000) && first != SIZE_MAX) {
			q = first;
			missed = missed_first;
		}
		if (q >= t->n || t->v[q].ip != insn.ip) {
			if (r->mismatches++ < 5)
				fprintf(stderr, "  mismatch: libipt 0x%llx, truth "
						"#%zu 0x%llx\n",
					(unsigned long long)insn.ip, p,
					p < t->n ? (unsigned long long)t->v[p].ip
						 : 0ull);
			continue;
		}
		if (after_cond_pgd) {
			r->cond_pgd_skipped += missed;
			missed = 0;
			after_cond_pgd = 0;
		}
		if (missed && r->missed == 0)
			fprintf(stderr, "  first skip: %llu visible before "
					"truth #%zu 0x%llx\n",
				(unsigned long long)missed, q,
				(unsigned long long)insn.ip);
		r->missed += missed;
		if (t->v[q].hidden && r->hidden_reported++ < 3 &&
		    getenv("SYNTH_DEBUG")) {
			fprintf(stderr, "  hidden reported #%zu 0x%llx (p=%zu):",
				q, (unsigned long long)insn.ip, p);
			for (size_t k = q > 3 ? q - 3 : 0; k < q + 3 && k < t->n; k++)
				fprintf(stderr, " %llx/%u",
					(unsigned long long)t->v[k].ip,
					t->v[k].hidden);
			fputc('\n', stderr);
		}
		else
			r->matched++;
		r->enclu_reported += t->v[q].enclu;
		p = q + 1;
		continue;
error:
		if (status == -pte_bad_query && p + 1 < t->n &&
		    t->v[p].kind == SYN_COND && !t->v[p].hidden &&
		    (t->v[p + 1].hidden == SYN_HID_FILTER ||
		     t->v[p + 1].hidden == SYN_HID_STOPPED)) {
			/* A taken Jcc leaving the filter range or landing
			 * in a TraceStop range: TIP.PGD() where libipt
			 * wants a TNT. */
			r->cond_pgd++;
			after_cond_pgd = 1;
		} else if (r->errors++ < 5) {
			uint64_t off = 0;
			pt_insn_get_offset(dec, &off);
			fprintf(stderr, "  libipt error %s at offset 0x%llx "
					"(truth #%zu)\n",
				pt_errstr(pt_errcode(status)),
				(unsigned long long)off, p);
		}
		status = pt_insn_sync_forward(dec);
	}
	pt_insn_free_decoder(dec);
}

struct scenario {
	const char *name;
	void (*setup)(struct syn_options *o, const struct pts_image *img);
	int overflow; /* hidden overflow instructions may be reported */
	int enclave;  /* walk the enclave demo: enum pts_enclave_kind + 1 */
	/* What the scenario must show beyond the common rules, or NULL;
	 * returns nonzero (and says why) when it does not. */
	int (*check)(const struct syn_options *o, const struct truth *t,
		     const struct result *r, const struct syn_emit_stats *st);
};

static void plain(struct syn_options *o, const struct pts_image *img)
{
	(void)o;
	(void)img;
}

static void no_retcomp(struct syn_options *o, const struct pts_image *img)
{
	(void)img;
	o->retcomp = 0;
}

static void async_user(struct syn_options *o, const struct pts_image *img)
{
	(void)img;
	o->user_only = 1;
	o->async_rate = 300;
}

static void async_kernel(struct syn_options *o, const struct pts_image *img)
{
	(void)img;
	o->async_rate = 300;
	o->long_tnt = 1;
}

static void timing(struct syn_options *o, const struct pts_image *img)
{
	(void)img;
	o->tsc = o->mtc = o->cyc = 1;
	o->cyc_thresh = 2;
	o->freq_rate = 20;
	o->psb_period = 2048;
}

static void overflow(struct syn_options *o, const struct pts_image *img)
{
	(void)img;
	o->ovf_rate = 100;
	o->user_only = 1;
}

/* The middle half of the functions as one filter range. */
static void filter(struct syn_options *o, const struct pts_image *img)
{
	const struct pts_symbol *syms;
	size_t n = pts_image_functions(img, 0, &syms);
	o->n_addr = 1;
	o->addr_cfg[0] = PTS_ADDR_FILTER;
	o->addr_a[0] = syms[n / 4].addr;
	o->addr_b[0] = syms[3 * n / 4].addr - 1;
}

/* fixtures/bin/enclave_demo (fixtures/src/enclave_demo.c): ELRANGE,
 * OENTRY (enclave_entry) and the AEP (the bare ENCLU in enclave_call). */
#define DEMO_ELRANGE_BEGIN 0x500000ull
#define DEMO_ELRANGE_END 0x501000ull
#define DEMO_AEP 0x400138ull

/* EEXIT and AEX with the interrupt at the AEP invisible (OS=0). */
static void enclave_user(struct syn_options *o, const struct pts_image *img)
{
	(void)img;
	o->user_only = 1;
	o->aex_rate = 3000;
	o->async_rate = 300;
}

/* AEX without the kernel model: TIP.PGE(AEP) right before the ERESUME's
 * FUP(AEP) TIP.PGD(); ring 0 traced for the SYSCALLs. */
static void enclave_nokernel(struct syn_options *o, const struct pts_image *img)
{
	(void)img;
	o->kernel = 0;
	o->aex_rate = 3000;
}

/* Timing and overflows inside the gaps, PSBs in them too. */
static void enclave_timing(struct syn_options *o, const struct pts_image *img)
{
	timing(o, img);
	o->user_only = 1;
	o->aex_rate = 3000;
	o->ovf_rate = 100;
	o->psb_period = 256;
}

/* TraceStop at three function entries (ranges of one byte): the walk
 * enters them by calls and jumps, whose TIP.PGD carries the target, which
 * libipt binds; a RET never lands on an entry and a Jcc seldom does (their
 * TIP.PGD() is the filter's limitation above). Software re-enables
 * tracing some instructions after each stop (syn_drive), so it stops
 * again and again. */
static void tracestop(struct syn_options *o, const struct pts_image *img)
{
	const struct pts_symbol *syms;
	size_t n = pts_image_functions(img, 0, &syms);
	o->n_addr = 3;
	for (unsigned i = 0; i < 3; i++) {
		o->addr_cfg[i] = PTS_ADDR_STOP;
		o->addr_a[i] = o->addr_b[i] = syms[(i + 1) * n / 4].addr;
	}
}

/* The CR3 filter on: bits 63:5 of CR3 must match (pt-sgx-facts 3.4), so
 * PWT and PCD (bits 3, 4) set in CR3 alone still match. */
static void cr3_match(struct syn_options *o, const struct pts_image *img)
{
	(void)img;
	o->cr3 = 0x7654018;
	o->cr3_filter = 1;
	o->cr3_match = 0x7654000;
}

static void cr3_mismatch(struct syn_options *o, const struct pts_image *img)
{
	cr3_match(o, img);
	o->cr3_match = 0x1234000;
}

/* How many runs of instructions the truth hides for @why. */
static uint64_t hidden_runs(const struct truth *t, int why)
{
	uint64_t runs = 0;
	for (size_t i = 0; i < t->n; i++)
		runs += t->v[i].hidden == why &&
			(i == 0 || t->v[i - 1].hidden != why);
	return runs;
}

/* Every run of stopped instructions began with a TraceStop packet that
 * libipt reported (its ptev_stop) after a TIP.PGD; the common rules
 * already hold libipt to the truth up to each stop and to nothing
 * within the run. */
static int check_tracestop(const struct syn_options *o, const struct truth *t,
			   const struct result *r,
			   const struct syn_emit_stats *st)
{
	(void)o;
	uint64_t runs = hidden_runs(t, SYN_HID_STOPPED);
	if (runs && r->stops == runs && st->pgds >= runs)
		return 0;
	fprintf(stderr, "  tracestop: %llu stopped runs, %llu ptev_stop, "
			"%llu TIP.PGD\n",
		(unsigned long long)runs, (unsigned long long)r->stops,
		(unsigned long long)st->pgds);
	return 1;
}

/* A matching CR3 hides nothing; every PIP (OS=1) names it. */
static int check_cr3_match(const struct syn_options *o, const struct truth *t,
			   const struct result *r,
			   const struct syn_emit_stats *st)
{
	(void)o;
	(void)st;
	if (r->matched == t->n && r->paging && !r->paging_other)
		return 0;
	fprintf(stderr, "  cr3 match: %llu of %zu matched, %llu PIPs with "
			"the CR3, %llu with another\n",
		(unsigned long long)r->matched, t->n,
		(unsigned long long)r->paging,
		(unsigned long long)r->paging_other);
	return 1;
}

/* ContextEn = 0 throughout: every instruction hidden for CR3, no flow
 * packet (TNT, TIP*, FUP) and no PIP, libipt reports nothing. */
static int check_cr3_mismatch(const struct syn_options *o,
			      const struct truth *t, const struct result *r,
			      const struct syn_emit_stats *st)
{
	(void)o;
	uint64_t flow = st->tips + st->pges + st->pgds + st->fups +
			st->tnt_bits;
	if (t->n && hidden_runs(t, SYN_HID_CR3) == 1 &&
	    t->v[0].hidden == SYN_HID_CR3 && !r->matched &&
	    !r->hidden_reported && !flow && !r->paging && !r->paging_other)
		return 0;
	fprintf(stderr, "  cr3 mismatch: %llu reported, %llu flow packets, "
			"%llu PIPs\n",
		(unsigned long long)(r->matched + r->hidden_reported),
		(unsigned long long)flow,
		(unsigned long long)(r->paging + r->paging_other));
	return 1;
}

static const struct scenario scenarios[] = {
	{"plain", plain, 0, 0, NULL},
	{"no-retcomp", no_retcomp, 0, 0, NULL},
	{"async user-only", async_user, 0, 0, NULL},
	{"async OS=1 long-tnt", async_kernel, 0, 0, NULL},
	{"timing", timing, 0, 0, NULL},
	{"overflow", overflow, 1, 0, NULL},
	{"ip-filter", filter, 0, 0, NULL},
	{"production user-only", enclave_user, 0, 1 + PTS_ENCLAVE_PRODUCTION, NULL},
	{"production OS=1", enclave_nokernel, 0, 1 + PTS_ENCLAVE_PRODUCTION, NULL},
	{"production timing+ovf", enclave_timing, 1, 1 + PTS_ENCLAVE_PRODUCTION, NULL},
	{"debug user-only", enclave_user, 0, 1 + PTS_ENCLAVE_DEBUG, NULL},
	{"debug OS=1", enclave_nokernel, 0, 1 + PTS_ENCLAVE_DEBUG, NULL},
	{"tracestop", tracestop, 0, 0, check_tracestop},
	{"cr3 match", cr3_match, 0, 0, check_cr3_match},
	{"cr3 mismatch", cr3_mismatch, 0, 0, check_cr3_mismatch},
};

/* The enclave demo's path (PTS_SOURCE_ROOT, else the source tree this was
 * built from), in @buf. */
static const char *demo_path(char *buf, size_t cap)
{
	const char *root = getenv("PTS_SOURCE_ROOT");
	snprintf(buf, cap, "%s/fixtures/bin/enclave_demo",
		 root ? root : PTS_SOURCE_DIR);
	return buf;
}

static void demo_config(struct pts_config *cfg, int kind)
{
	struct pts_enclave e;
	memset(&e, 0, sizeof(e));
	e.begin = DEMO_ELRANGE_BEGIN;
	e.end = DEMO_ELRANGE_END;
	e.kind = (uint8_t)kind;
	e.aep = DEMO_AEP;
	e.has_aep = 1;
	if (pts_config_add_enclave(cfg, &e, DEMO_ELRANGE_BEGIN) < 0)
		abort();
}

/* --run PROGRAM: a real run recorded with ptrace, user space only. Every
 * SYSCALL must show as a CPL gap, TIP.PGD() ... TIP.PGE(NLIP) (libipt:
 * ptev_disabled), with the kernel stub's instructions hidden as "cpl". */
static int run_program(char *prog)
{
	struct syn_options o;
	struct pts_config cfg;
	struct truth t = {NULL, 0, 0};
	struct syn_run *run = NULL;
	char *argv[] = {prog, NULL};
	syn_options_default(&o);
	o.user_only = 1;
	o.insns = 10000000;
	pts_config_init(&cfg);
	if (syn_run_start(&o, argv, &run) < 0) {
		fprintf(stderr, "cannot run %s (ptrace not allowed?)\n", prog);
		return 77;
	}
	struct syn_sink *sink = calloc(1, sizeof(*sink));
	syn_sink_init(sink, NULL);
	struct syn_emitter *em = syn_emit_new(&o, &cfg, sink);
	struct syn_driver d;
	memset(&d, 0, sizeof(d));
	d.o = &o;
	d.cfg = &cfg;
	d.em = em;
	d.start = syn_run_ip(run);
	d.start_where = (struct syn_where){3, -1};
	d.source = run;
	d.next = syn_run_next;
	d.on_step = on_step;
	d.ctx = &t;
	int err = syn_drive(&d);
	if (err >= 0)
		err = syn_run_images(run, &cfg);
	struct pts_image *img = pts_image_new();
	for (size_t i = 0; err >= 0 && i < cfg.n_images; i++) {
		const struct pts_image_spec *is = &cfg.images[i];
		err = pts_image_add_raw(img, 0, is->path, is->from, is->to,
					is->addr);
	}
	int failed = 1;
	if (err < 0) {
		fprintf(stderr, "run %s: %s\n", prog, pts_strerror(err));
	} else {
		struct result r;
		uint64_t syscalls = 0, cpl_hidden = 0;
		for (size_t i = 0; i < t.n; i++)
			cpl_hidden += t.v[i].hidden == SYN_HID_CPL;
		struct syn_emit_stats st;
		syn_emit_stats(em, &st);
		syscalls = st.pgds;
		compare(sink, img, &o, &t, &r);
		failed = r.mismatches || r.errors || r.missed ||
			 r.hidden_reported || !syscalls ||
			 r.disabled != syscalls ||
			 cpl_hidden < syscalls || r.matched + cpl_hidden != t.n;
		printf("run %s: %zu insns %zu bytes: %llu matched, %llu "
		       "missed, %llu mismatches, %llu errors; %llu system "
		       "calls (TIP.PGD), %llu libipt disabled events, %llu "
		       "ring-0 instructions hidden %s\n",
		       prog, t.n, sink->mem_len,
		       (unsigned long long)r.matched,
		       (unsigned long long)r.missed,
		       (unsigned long long)r.mismatches,
		       (unsigned long long)r.errors,
		       (unsigned long long)syscalls,
		       (unsigned long long)r.disabled,
		       (unsigned long long)cpl_hidden, failed ? "FAIL" : "ok");
	}
	pts_image_free(img);
	syn_emit_free(em);
	syn_run_free(run);
	free(sink->mem);
	free(sink);
	free(t.v);
	pts_config_fini(&cfg);
	return failed;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--run") == 0)
		return run_program(argv[2]);
	uint64_t insns = argc > 1 ? strtoull(argv[1], NULL, 0) : 1000000;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
	const char *elf = argc > 3 ? argv[3] : "/usr/bin/bash";
	int failed = 0;

	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
		const struct scenario *sc = &scenarios[i];
		struct pts_image *img = pts_image_new();
		char demo[4096];
		const char *path = sc->enclave ? demo_path(demo, sizeof(demo))
					       : elf;
		if (pts_image_add_elf(img, 0, path, 0) < 0) {
			fprintf(stderr, "no ELF %s: skipped\n", path);
			pts_image_free(img);
			return 77;
		}
		struct syn_options o;
		struct pts_config cfg;
		struct syn_sink *sink = calloc(1, sizeof(*sink));
		struct truth t = {NULL, 0, 0};
		struct syn_emit_stats st;
		pts_config_init(&cfg);
		syn_options_default(&o);
		o.seed = seed + i;
		o.insns = insns;
		sc->setup(&o, img);
		if (sc->enclave)
			demo_config(&cfg, sc->enclave - 1);
		syn_sink_init(sink, NULL);
		int err = syn_walk_to_memory(&o, &cfg, img, 0, sink, on_step,
					     &t, &st);
		struct result r;
		if (err < 0) {
			fprintf(stderr, "%s: synthesis failed: %s\n", sc->name,
				pts_strerror(err));
			failed = 1;
		} else {
			compare(sink, img, &o, &t, &r);
			/* Every visible ENCLU: one libipt event bound to
			 * its address, never an instruction. */
			int bad = r.mismatches || r.errors || r.missed ||
				  (r.hidden_reported && !sc->overflow) ||
				  r.enclu_reported ||
				  r.enclu_events != r.enclu_visible;
			if (sc->check && sc->check(&o, &t, &r, &st))
				bad = 1;
			printf("%-22s %8zu insns %8zu bytes: %llu matched, %llu "
			       "missed, %llu hidden reported, %llu mismatches, "
			       "%llu errors (%llu PGD, %llu OVF; ENCLU: %llu "
			       "visible, %llu events, %llu reported; Jcc "
			       "TIP.PGD(): %llu, %llu skipped) %s\n",
			       sc->name, t.n, sink->mem_len,
			       (unsigned long long)r.matched,
			       (unsigned long long)r.missed,
			       (unsigned long long)r.hidden_reported,
			       (unsigned long long)r.mismatches,
			       (unsigned long long)r.errors,
			       (unsigned long long)st.pgds,
			       (unsigned long long)st.ovfs,
			       (unsigned long long)r.enclu_visible,
			       (unsigned long long)r.enclu_events,
			       (unsigned long long)r.enclu_reported,
			       (unsigned long long)r.cond_pgd,
			       (unsigned long long)r.cond_pgd_skipped,
			       bad ? "FAIL" : "ok");
			failed |= bad;
		}
		free(t.v);
		free(sink->mem);
		free(sink);
		pts_config_fini(&cfg);
		pts_image_free(img);
	}
	return failed;
}
