/* Hand-made traces for flow unit tests (hand_trace.h). */
#include "hand_trace.h"

#include "check.h"

#include <string.h>

void ht_put(struct hand_trace *t, const struct pts_packet *p)
{
	int n = pts_pkt_encode(p, t->buf + t->len, sizeof(t->buf) - t->len);
	CHECK(n > 0);
	if (n > 0)
		t->len += (size_t)n;
}

void ht_put_kind(struct hand_trace *t, int kind)
{
	struct pts_packet p;
	memset(&p, 0, sizeof(p));
	p.kind = (uint8_t)kind;
	ht_put(t, &p);
}

void ht_put_ip(struct hand_trace *t, int kind, uint64_t ip)
{
	struct pts_packet p;
	memset(&p, 0, sizeof(p));
	if (ip) {
		pts_pkt_make_ip(&p, kind, ip, &t->lip);
	} else {
		p.kind = (uint8_t)kind;
		p.ipc = PTS_IPC_SUPPRESSED;
	}
	ht_put(t, &p);
}

void ht_psb(struct hand_trace *t)
{
	ht_put_kind(t, PTS_PKT_PSB);
	pts_lastip_reset(&t->lip);
}

void ht_mode(struct hand_trace *t, int csl, int csd)
{
	struct pts_packet p;
	memset(&p, 0, sizeof(p));
	p.kind = PTS_PKT_MODE_EXEC;
	p.u.exec.csl = (uint8_t)csl;
	p.u.exec.csd = (uint8_t)csd;
	ht_put(t, &p);
}

void ht_tnt(struct hand_trace *t, uint64_t bits, unsigned count)
{
	struct pts_packet p;
	memset(&p, 0, sizeof(p));
	p.kind = PTS_PKT_TNT8;
	p.u.tnt.bits = bits;
	p.u.tnt.count = (uint8_t)count;
	ht_put(t, &p);
}
