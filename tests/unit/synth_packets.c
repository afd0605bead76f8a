/* Synthesized bytes read back as packets (synth_packets.h), moved here
 * from test_synth_enclave.c for test_synth_filters.c to share. */
#include "synth_packets.h"

#include "check.h"

#include <stdio.h>

int synth_is_timing(int kind)
{
	return kind == PTS_PKT_MTC || kind == PTS_PKT_CYC ||
	       kind == PTS_PKT_TSC || kind == PTS_PKT_TMA;
}

size_t synth_decode(const struct syn_sink *sink, struct pts_packet *pkts,
		    size_t max)
{
	struct pts_pkt_decoder *dec = pts_pkt_decoder_new(NULL);
	struct pts_input in = {sink->mem, sink->mem_len, 0};
	size_t n = 0;
	pts_pkt_end(dec);
	for (;;) {
		struct pts_packet p;
		int r = pts_pkt_next(dec, &in, &p);
		if (r == -PTS_ERR_EOS)
			break;
		CHECK(r > 0);
		if (r <= 0 || n == max)
			break;
		pkts[n++] = p;
	}
	pts_pkt_decoder_free(dec);
	return n;
}

void synth_signature(const struct pts_packet *pkts, size_t n, char *out,
		     size_t cap)
{
	size_t k = 0;
	out[0] = '\0';
	for (size_t i = 0; i < n && k < cap; i++) {
		const struct pts_packet *p = &pkts[i];
		if (synth_is_timing(p->kind))
			continue;
		int ip = p->kind == PTS_PKT_TIP || p->kind == PTS_PKT_FUP ||
			 p->kind == PTS_PKT_TIP_PGE || p->kind == PTS_PKT_TIP_PGD;
		int w;
		if (!ip)
			w = snprintf(out + k, cap - k, "%s%s", k ? " " : "",
				     pts_pkt_kind_name(p->kind));
		else if (p->ipc == PTS_IPC_SUPPRESSED)
			w = snprintf(out + k, cap - k, "%s%s()", k ? " " : "",
				     pts_pkt_kind_name(p->kind));
		else
			w = snprintf(out + k, cap - k, "%s%s(%llx)",
				     k ? " " : "", pts_pkt_kind_name(p->kind),
				     (unsigned long long)p->u.ip.ip);
		k += (size_t)w;
	}
}

