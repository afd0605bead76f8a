/* The flow walker's errata workarounds (--cpu), on hand-made traces over
 * hand-made code:
 *   - SKL014: a TIP.PGD without IP binds to a direct JMP whose target is
 *     outside the IP filter range (Skylake), not without the erratum;
 *   - BDM70: a PSB+ FUP right before a TIP.PGE does not enable tracing
 *     (Broadwell), while without the erratum it does (and the TIP.PGE is
 *     then a mismatch).
 * Code: 0x1000 jmp 0x2000; 0x2000 nop; 0x2001 ret.
 */
#include "check.h"

#include <ptscope/decoder.h>

#include <stdio.h>
#include <string.h>

struct trace {
	uint8_t buf[256];
	size_t len;
	struct pts_lastip lip;
};

static void put(struct trace *t, const struct pts_packet *p)
{
	int n = pts_pkt_encode(p, t->buf + t->len, sizeof(t->buf) - t->len);
	CHECK(n > 0);
	if (n > 0)
		t->len += (size_t)n;
}

static void put_kind(struct trace *t, int kind)
{
	struct pts_packet p;
	memset(&p, 0, sizeof(p));
	p.kind = (uint8_t)kind;
	put(t, &p);
}

/* An IP packet; @ip 0: suppressed. */
static void put_ip(struct trace *t, int kind, uint64_t ip)
{
	struct pts_packet p;
	memset(&p, 0, sizeof(p));
	if (ip) {
		pts_pkt_make_ip(&p, kind, ip, &t->lip);
	} else {
		p.kind = (uint8_t)kind;
		p.ipc = PTS_IPC_SUPPRESSED;
	}
	put(t, &p);
}

static void psb(struct trace *t)
{
	put_kind(t, PTS_PKT_PSB);
	pts_lastip_reset(&t->lip);
}

static void mode64(struct trace *t)
{
	struct pts_packet p;
	memset(&p, 0, sizeof(p));
	p.kind = PTS_PKT_MODE_EXEC;
	p.u.exec.csl = 1;
	put(t, &p);
}

/* The flow as text: "E1000" enabled, "D" disabled, "R" error, addresses. */
static void decode(const struct trace *t, const struct pts_flow_config *fc,
		   char *out, size_t cap)
{
	static const uint8_t code[] = {0xe9, 0xfb, 0x0f, 0x00, 0x00};
	static const uint8_t code2[] = {0x90, 0xc3};
	struct pts_image *img = pts_image_new();
	CHECK(pts_image_add_mem(img, 0, code, sizeof(code), 0x1000) == 0);
	CHECK(pts_image_add_mem(img, 0, code2, sizeof(code2), 0x2000) == 0);
	struct pts_flow *f = pts_flow_new(fc, img);
	struct pts_input in = {t->buf, t->len, 0};
	struct pts_flow_rec recs[16];
	size_t len = 0;
	int n;
	out[0] = 0;
	pts_flow_end(f);
	while ((n = pts_flow_next(f, &in, recs, 16)) > 0) {
		for (int i = 0; i < n; i++) {
			const struct pts_flow_rec *r = &recs[i];
			if (r->kind == PTS_FLOW_INSNS) {
				for (uint32_t k = 0; k < r->n; k++)
					len += (size_t)snprintf(
						out + len, cap - len, "%llx ",
						(unsigned long long)r->ips[k]);
			} else if (r->kind == PTS_FLOW_ERROR) {
				len += (size_t)snprintf(out + len, cap - len,
							"R ");
			} else if (r->type == PTS_EV_ENABLED) {
				len += (size_t)snprintf(
					out + len, cap - len, "E%llx ",
					(unsigned long long)r->ip);
			} else if (r->type == PTS_EV_DISABLED) {
				len += (size_t)snprintf(out + len, cap - len,
							"D ");
			}
		}
	}
	pts_flow_free(f);
	pts_image_free(img);
}

static void skl014(void)
{
	struct trace t = {0};
	psb(&t);
	put_kind(&t, PTS_PKT_PSBEND);
	mode64(&t);
	put_ip(&t, PTS_PKT_TIP_PGE, 0x1000);
	put_ip(&t, PTS_PKT_TIP_PGD, 0);

	struct pts_flow_config fc = {0};
	fc.addr_cfg[0] = 1;
	fc.addr_a[0] = 0x1000;
	fc.addr_b[0] = 0x1fff;
	char flow[256];
	decode(&t, &fc, flow, sizeof(flow));
	/* No erratum: the JMP needs no trace, the RET takes the TIP.PGD. */
	CHECK(strcmp(flow, "E1000 1000 2000 2001 D ") == 0);
	fprintf(stderr, "skl014 off: %s\n", flow);

	CHECK(pts_cpu_parse("6/94", &fc.cpu) == 0); /* Skylake */
	decode(&t, &fc, flow, sizeof(flow));
	CHECK(strcmp(flow, "E1000 1000 D ") == 0);
	fprintf(stderr, "skl014 on:  %s\n", flow);

	/* Without filter ranges the erratum is not applied (libipt). */
	memset(fc.addr_cfg, 0, sizeof(fc.addr_cfg));
	decode(&t, &fc, flow, sizeof(flow));
	CHECK(strcmp(flow, "E1000 1000 2000 2001 D ") == 0);
}

static void bdm70(void)
{
	struct trace t = {0};
	psb(&t);
	mode64(&t);
	put_ip(&t, PTS_PKT_FUP, 0x1000);
	put_kind(&t, PTS_PKT_PSBEND);
	put_ip(&t, PTS_PKT_TIP_PGE, 0x2000);
	put_ip(&t, PTS_PKT_TIP_PGD, 0);

	struct pts_flow_config fc = {0};
	char flow[256];
	decode(&t, &fc, flow, sizeof(flow));
	/* No erratum: the FUP enables at 0x1000, where the TIP.PGE is a
	 * mismatch. */
	CHECK(strcmp(flow, "E1000 R ") == 0);
	fprintf(stderr, "bdm70 off: %s\n", flow);

	CHECK(pts_cpu_parse("6/61", &fc.cpu) == 0); /* Broadwell */
	decode(&t, &fc, flow, sizeof(flow));
	CHECK(strcmp(flow, "E2000 2000 2001 D ") == 0);
	fprintf(stderr, "bdm70 on:  %s\n", flow);
}

int main(void)
{
	skl014();
	bdm70();
	return pts_check_exit();
}
