/* One packet as one JSON object (JSON lines), for scripts.
 *
 * Keys come in a fixed order: "kind", "offset", "size", then the packet's
 * fields in the order of struct pts_packet. Addresses and other 64-bit
 * values are strings "0x..." (JSON numbers lose bits above 2^53 in many
 * readers); small fields are numbers, flags are booleans. All strings we
 * write are fixed ASCII names, so no escaping is needed.
 */
#include <ptscope/packets.h>

#include "print_buf.h"

static void key(struct pts_pbuf *b, const char *name)
{
	pts_pb_puts(b, ",\"");
	pts_pb_puts(b, name);
	pts_pb_puts(b, "\":");
}

static void kv_num(struct pts_pbuf *b, const char *name, uint64_t v)
{
	key(b, name);
	pts_pb_dec(b, v);
}

static void kv_hex(struct pts_pbuf *b, const char *name, uint64_t v)
{
	key(b, name);
	pts_pb_puts(b, "\"0x");
	pts_pb_hex(b, v, 0);
	pts_pb_putc(b, '"');
}

static void kv_bool(struct pts_pbuf *b, const char *name, int v)
{
	key(b, name);
	pts_pb_puts(b, v ? "true" : "false");
}

static void kv_str(struct pts_pbuf *b, const char *name, const char *s)
{
	key(b, name);
	pts_pb_putc(b, '"');
	pts_pb_puts(b, s);
	pts_pb_putc(b, '"');
}

static void put_tnt(struct pts_pbuf *b, const struct pts_packet *pkt)
{
	kv_num(b, "count", pkt->u.tnt.count);
	/* oldest first, '!' taken, '.' not taken (as ptdump shows them) */
	key(b, "tnt");
	pts_pb_putc(b, '"');
	for (unsigned i = pkt->u.tnt.count; i > 0; i--)
		pts_pb_putc(b, (pkt->u.tnt.bits >> (i - 1)) & 1 ? '!' : '.');
	pts_pb_putc(b, '"');
}

static void put_ip(struct pts_pbuf *b, const struct pts_packet *pkt)
{
	kv_num(b, "ipc", pkt->ipc);
	if (pkt->ipc == PTS_IPC_SUPPRESSED) {
		kv_bool(b, "suppressed", 1);
		return;
	}
	kv_hex(b, "payload", pkt->u.ip.payload);
	kv_hex(b, "ip", pkt->u.ip.ip);
}

static void put_mode(struct pts_pbuf *b, const struct pts_packet *pkt)
{
	if (pkt->kind == PTS_PKT_MODE_TSX) {
		kv_bool(b, "intx", pkt->u.tsx.intx);
		kv_bool(b, "abrt", pkt->u.tsx.abrt);
		return;
	}
	/* (CS.D, CS.L): 00 16-bit, 01 64-bit, 10 32-bit, 11 invalid */
	static const char *const modes[4] = {"16-bit", "64-bit", "32-bit",
					     "invalid"};
	kv_bool(b, "csl", pkt->u.exec.csl);
	kv_bool(b, "csd", pkt->u.exec.csd);
	kv_bool(b, "if", pkt->u.exec.iflag);
	kv_str(b, "mode",
	       modes[(pkt->u.exec.csd & 1) << 1 | (pkt->u.exec.csl & 1)]);
}

static void put_timing(struct pts_pbuf *b, const struct pts_packet *pkt)
{
	switch (pkt->kind) {
	case PTS_PKT_CBR:
		kv_num(b, "ratio", pkt->u.cbr.ratio);
		break;
	case PTS_PKT_TSC:
		kv_hex(b, "tsc", pkt->u.tsc);
		break;
	case PTS_PKT_MTC:
		kv_num(b, "ctc", pkt->u.mtc_ctc);
		break;
	case PTS_PKT_TMA:
		kv_num(b, "ctc", pkt->u.tma.ctc);
		kv_num(b, "fc", pkt->u.tma.fc);
		break;
	default: /* CYC */
		kv_num(b, "cyc", pkt->u.cyc);
		break;
	}
}

static void put_power(struct pts_pbuf *b, const struct pts_packet *pkt)
{
	switch (pkt->kind) {
	case PTS_PKT_EXSTOP:
		kv_bool(b, "ipbit", pkt->u.exstop.ip);
		break;
	case PTS_PKT_MWAIT:
		kv_num(b, "hints", pkt->u.mwait.hints);
		kv_num(b, "ext", pkt->u.mwait.ext);
		break;
	case PTS_PKT_PWRE:
		kv_num(b, "state", pkt->u.pwre.state);
		kv_num(b, "sub_state", pkt->u.pwre.sub_state);
		kv_bool(b, "hw", pkt->u.pwre.hw);
		break;
	default: /* PWRX */
		kv_num(b, "last", pkt->u.pwrx.last);
		kv_num(b, "deepest", pkt->u.pwrx.deepest);
		kv_bool(b, "interrupt", pkt->u.pwrx.interrupt);
		kv_bool(b, "store", pkt->u.pwrx.store);
		kv_bool(b, "autonomous", pkt->u.pwrx.autonomous);
		break;
	}
}

static void put_other(struct pts_pbuf *b, const struct pts_packet *pkt)
{
	switch (pkt->kind) {
	case PTS_PKT_PIP:
		kv_hex(b, "cr3", pkt->u.pip.cr3);
		kv_bool(b, "nr", pkt->u.pip.nr);
		break;
	case PTS_PKT_VMCS:
		kv_hex(b, "base", pkt->u.vmcs_base);
		break;
	case PTS_PKT_MNT:
		kv_hex(b, "payload", pkt->u.mnt);
		break;
	case PTS_PKT_PTW:
		kv_hex(b, "payload", pkt->u.ptw.payload);
		kv_num(b, "plc", pkt->u.ptw.plc);
		kv_bool(b, "ipbit", pkt->u.ptw.ip);
		break;
	case PTS_PKT_BBP:
		kv_num(b, "item_bytes", pkt->u.bbp.sz ? 4 : 8);
		kv_num(b, "type", pkt->u.bbp.type);
		break;
	case PTS_PKT_BIP:
		kv_hex(b, "payload", pkt->u.bip.payload);
		kv_num(b, "id", pkt->u.bip.id);
		break;
	case PTS_PKT_BEP:
		kv_bool(b, "ipbit", pkt->u.bep.ip);
		break;
	case PTS_PKT_CFE:
		kv_num(b, "type", pkt->u.cfe.type);
		kv_num(b, "vector", pkt->u.cfe.vector);
		kv_bool(b, "ipbit", pkt->u.cfe.ip);
		break;
	case PTS_PKT_EVD:
		kv_hex(b, "payload", pkt->u.evd.payload);
		kv_num(b, "type", pkt->u.evd.type);
		break;
	default: /* PAD, STOP, OVF, PSB, PSBEND: no fields */
		break;
	}
}

int pts_print_jsonl(const struct pts_packet *pkt, char *out, size_t cap)
{
	struct pts_pbuf b;

	if (!pkt || pkt->kind >= PTS_PKT_KIND_COUNT || (!out && cap))
		return -PTS_ERR_INVALID;
	pts_pb_init(&b, out, cap);
	pts_pb_puts(&b, "{\"kind\":\"");
	pts_pb_puts(&b, pts_pkt_kind_name(pkt->kind));
	pts_pb_putc(&b, '"');
	kv_num(&b, "offset", pkt->offset);
	kv_num(&b, "size", pkt->size);

	switch (pkt->kind) {
	case PTS_PKT_TNT8:
	case PTS_PKT_TNT64:
		put_tnt(&b, pkt);
		break;
	case PTS_PKT_TIP:
	case PTS_PKT_TIP_PGE:
	case PTS_PKT_TIP_PGD:
	case PTS_PKT_FUP:
		put_ip(&b, pkt);
		break;
	case PTS_PKT_MODE_EXEC:
	case PTS_PKT_MODE_TSX:
		put_mode(&b, pkt);
		break;
	case PTS_PKT_CBR:
	case PTS_PKT_TSC:
	case PTS_PKT_MTC:
	case PTS_PKT_TMA:
	case PTS_PKT_CYC:
		put_timing(&b, pkt);
		break;
	case PTS_PKT_EXSTOP:
	case PTS_PKT_MWAIT:
	case PTS_PKT_PWRE:
	case PTS_PKT_PWRX:
		put_power(&b, pkt);
		break;
	default:
		put_other(&b, pkt);
		break;
	}
	pts_pb_putc(&b, '}');
	return pts_pb_finish(&b);
}

int pts_print_jsonl_error(int err, uint64_t begin, uint64_t end, char *out,
			  size_t cap)
{
	struct pts_pbuf b;

	if (!out && cap)
		return -PTS_ERR_INVALID;
	pts_pb_init(&b, out, cap);
	pts_pb_puts(&b, "{\"error\":\"");
	pts_pb_puts(&b, pts_errname(err));
	pts_pb_putc(&b, '"');
	kv_str(&b, "message", pts_strerror(err));
	kv_num(&b, "offset", begin);
	kv_num(&b, "end", end);
	if (err == -PTS_ERR_SKIPPED || err == PTS_ERR_SKIPPED)
		kv_num(&b, "bytes", end - begin);
	pts_pb_putc(&b, '}');
	return pts_pb_finish(&b);
}
