/* perf.data: Intel PT's AUXTRACE_INFO priv[] array, the PT event's config,
 * and TSC to perf time. Layout: docs/perf-data-facts.md section 3. */
#include "perfdata_internal.h"

/* priv[] indexes (perf's intel-pt.h). */
enum {
	PRIV_PMU_TYPE,
	PRIV_TIME_SHIFT,
	PRIV_TIME_MULT,
	PRIV_TIME_ZERO,
	PRIV_CAP_USER_TIME_ZERO,
	PRIV_TSC_BIT,
	PRIV_NORETCOMP_BIT,
	PRIV_HAVE_SCHED_SWITCH,
	PRIV_SNAPSHOT_MODE,
	PRIV_PER_CPU_MMAPS,
	PRIV_MTC_BIT,
	PRIV_MTC_FREQ_BITS,
	PRIV_TSC_CTC_N,
	PRIV_TSC_CTC_D,
	PRIV_CYC_BIT,
	PRIV_MAX_NONTURBO_RATIO,
	PRIV_FILTER_STR_LEN,
	PRIV_FIXED_COUNT /* the filter string follows */
};

#define PERF_AUXTRACE_INTEL_PT 1

int pts_perf_pt_info(const struct pts_perf *perf, struct pts_perf_pt_info *info)
{
	memset(info, 0, sizeof(*info));
	const uint8_t *b = perf->auxtrace_info;
	size_t n = perf->auxtrace_info_size;
	if (!b || n < 8)
		return -PTS_ERR_BAD_FORMAT;
	info->type = pts_rd32(b);
	if (info->type != PERF_AUXTRACE_INTEL_PT)
		return -PTS_ERR_UNSUPPORTED;
	const uint8_t *priv = b + 8;
	size_t nr = (n - 8) / 8;
	info->nr_priv = (uint32_t)(nr > UINT32_MAX ? UINT32_MAX : nr);
	if (nr < PERF_AUXTRACE_INFO_MIN_PRIV)
		return -PTS_ERR_BAD_FORMAT;
	/* Fields beyond those present stay 0, as perf leaves them unset. */
	uint64_t v[PRIV_FIXED_COUNT] = {0};
	for (size_t i = 0; i < PRIV_FIXED_COUNT && i < nr; i++)
		v[i] = pts_rd64(priv + 8 * i);
	info->pmu_type = v[PRIV_PMU_TYPE];
	info->time_shift = v[PRIV_TIME_SHIFT];
	info->time_mult = v[PRIV_TIME_MULT];
	info->time_zero = v[PRIV_TIME_ZERO];
	info->cap_user_time_zero = v[PRIV_CAP_USER_TIME_ZERO];
	info->tsc_bit = v[PRIV_TSC_BIT];
	info->noretcomp_bit = v[PRIV_NORETCOMP_BIT];
	info->have_sched_switch = v[PRIV_HAVE_SCHED_SWITCH];
	info->snapshot_mode = v[PRIV_SNAPSHOT_MODE];
	info->per_cpu_mmaps = v[PRIV_PER_CPU_MMAPS];
	info->mtc_bit = v[PRIV_MTC_BIT];
	info->mtc_freq_bits = v[PRIV_MTC_FREQ_BITS];
	info->tsc_ctc_n = v[PRIV_TSC_CTC_N];
	info->tsc_ctc_d = v[PRIV_TSC_CTC_D];
	info->cyc_bit = v[PRIV_CYC_BIT];
	info->max_nonturbo_ratio = v[PRIV_MAX_NONTURBO_RATIO];
	if (nr <= PRIV_FILTER_STR_LEN)
		return 0;
	/* The filter string: NUL-terminated, padded to 8 bytes. */
	uint64_t flen = v[PRIV_FILTER_STR_LEN];
	size_t left = (nr - PRIV_FIXED_COUNT) * 8;
	const uint8_t *fs = priv + 8 * PRIV_FIXED_COUNT;
	size_t used = 0;
	if (flen) {
		if (flen >= left) {
			info->bad_filter_len = flen;
			return -PTS_ERR_BAD_FORMAT;
		}
		info->filter = pts_perf_str_at(fs, (size_t)flen);
		used = ((size_t)flen + 1 + 7) & ~(size_t)7;
	}
	/* perf >= 5.18 appends cap_event_trace when there is room. */
	if (left >= used + 8) {
		info->have_cap_event_trace = 1;
		info->cap_event_trace = pts_rd64(fs + used);
	}
	return 0;
}

const struct pts_perf_attr *pts_perf_pt_attr(const struct pts_perf *perf)
{
	struct pts_perf_pt_info info;
	if (pts_perf_pt_info(perf, &info) < 0)
		return NULL;
	for (uint32_t i = 0; i < perf->nr_attrs; i++)
		if (perf->attrs[i].type == info.pmu_type)
			return &perf->attrs[i];
	return NULL;
}

/* IA32_RTIT_CTL bits that perf's intel_pt format exposes in attr.config
 * (at the same positions): CYCEn 1, PwrEvtEn 4, FUPonPTW 5, MTCEn 9,
 * TSCEn 10, DisRETC 11, PTWEn 12, BranchEn 13, MTCFreq 17:14,
 * CycThresh 22:19, PSBFreq 27:24, EventEn 31, DisTNT 55. */
#define RTIT_CONFIG_MASK 0x008000008f7bfe32ull
#define RTIT_TRACE_EN (1ull << 0)
#define RTIT_OS (1ull << 2)
#define RTIT_USER (1ull << 3)

int pts_perf_pt_config(const struct pts_perf *perf,
		       struct pts_perf_pt_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	const struct pts_perf_attr *a = pts_perf_pt_attr(perf);
	if (!a)
		return -PTS_ERR_UNSUPPORTED;
	uint64_t c = a->config;
	cfg->os = !a->exclude_kernel;
	cfg->user = !a->exclude_user;
	cfg->rtit_ctl = (c & RTIT_CONFIG_MASK) | RTIT_TRACE_EN |
			(cfg->os ? RTIT_OS : 0) | (cfg->user ? RTIT_USER : 0);
	cfg->cyc = (c >> 1) & 1;
	cfg->pwr_evt = (c >> 4) & 1;
	cfg->fup_on_ptw = (c >> 5) & 1;
	cfg->mtc = (c >> 9) & 1;
	cfg->tsc = (c >> 10) & 1;
	cfg->noretcomp = (c >> 11) & 1;
	cfg->ptw = (c >> 12) & 1;
	cfg->branch = (c >> 13) & 1;
	cfg->mtc_period = (c >> 14) & 0xf;
	cfg->cyc_thresh = (c >> 19) & 0xf;
	cfg->psb_period = (c >> 24) & 0xf;
	return 0;
}

int pts_perf_time_conv(const struct pts_perf *perf,
		       struct pts_perf_time_conv *tc)
{
	memset(tc, 0, sizeof(*tc));
	struct pts_perf_pt_info info;
	if (pts_perf_pt_info(perf, &info) == 0 && info.cap_user_time_zero) {
		tc->time_shift = info.time_shift;
		tc->time_mult = info.time_mult;
		tc->time_zero = info.time_zero;
		tc->valid = 1;
	} else if (perf->have_time_conv &&
		   (!perf->time_conv.extended ||
		    perf->time_conv.cap_user_time_zero)) {
		tc->time_shift = perf->time_conv.time_shift;
		tc->time_mult = perf->time_conv.time_mult;
		tc->time_zero = perf->time_conv.time_zero;
		tc->valid = 1;
	}
	if (perf->have_time_conv && perf->time_conv.extended &&
	    perf->time_conv.cap_user_time_short) {
		tc->cap_user_time_short = 1;
		tc->time_cycles = perf->time_conv.time_cycles;
		tc->time_mask = perf->time_conv.time_mask;
	}
	if (tc->time_shift >= 64)
		tc->valid = 0;
	return tc->valid;
}

uint64_t pts_perf_tsc_to_time(const struct pts_perf_time_conv *tc,
			      uint64_t tsc)
{
	if (!tc->valid)
		return 0;
	if (tc->cap_user_time_short)
		tsc = tc->time_cycles + ((tsc - tc->time_cycles) & tc->time_mask);
	/* Split the TSC so that the product with mult cannot overflow:
	 * whole units of 2^shift and the remainder scaled separately. */
	uint64_t quot = tsc >> tc->time_shift;
	uint64_t rem = tsc & ((1ull << tc->time_shift) - 1);
	return tc->time_zero + quot * tc->time_mult +
	       ((rem * tc->time_mult) >> tc->time_shift);
}

uint64_t pts_perf_tsc_extend(uint64_t tsc56, uint64_t reference)
{
	const uint64_t span = 1ull << 56, half = 1ull << 55;
	uint64_t t = (tsc56 & (span - 1)) | (reference & ~(span - 1));
	/* Pick the candidate closest to the reference: the counter may have
	 * wrapped its 56 bits between the packet and the copy-out. */
	if (t < reference && reference - t > half)
		t += span;
	else if (t > reference && t - reference > half)
		t -= span;
	return t;
}
