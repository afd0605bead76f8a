#include "libipt_map.h"

#include <string.h>

static uint64_t sign_extend_48(uint64_t v)
{
	return (v & (1ull << 47)) ? v | 0xffff000000000000ull
				  : v & 0x0000ffffffffffffull;
}

/* SDM "Compressed IP Payload Format": returns the IP @payload stands for,
 * 0 for a suppressed IP (last-IP untouched). */
static uint64_t ref_ip_update(struct pts_ref_lastip *lip,
			      enum pt_ip_compression ipc, uint64_t payload)
{
	switch (ipc) {
	case pt_ipc_suppressed:
		return 0;
	case pt_ipc_update_16:
		lip->ip = (lip->ip & ~0xffffull) | (payload & 0xffffull);
		break;
	case pt_ipc_update_32:
		lip->ip = (lip->ip & ~0xffffffffull) | (payload & 0xffffffffull);
		break;
	case pt_ipc_sext_48:
		lip->ip = sign_extend_48(payload);
		break;
	case pt_ipc_update_48:
		lip->ip = (lip->ip & ~0xffffffffffffull) |
			  (payload & 0xffffffffffffull);
		break;
	case pt_ipc_full:
		lip->ip = payload;
		break;
	}
	return lip->ip;
}

static void map_ip(const struct pt_packet *in, struct pts_ref_lastip *lip,
		   struct pts_packet *out)
{
	out->ipc = (uint8_t)in->payload.ip.ipc;
	out->u.ip.payload = in->payload.ip.ip;
	out->u.ip.ip = ref_ip_update(lip, in->payload.ip.ipc, in->payload.ip.ip);
}

static void map_mode(const struct pt_packet *in, const uint8_t *raw,
		     struct pts_packet *out)
{
	if (in->payload.mode.leaf == pt_mol_tsx) {
		out->kind = PTS_PKT_MODE_TSX;
		out->u.tsx.intx = in->payload.mode.bits.tsx.intx;
		out->u.tsx.abrt = in->payload.mode.bits.tsx.abrt;
		return;
	}
	out->kind = PTS_PKT_MODE_EXEC;
	out->u.exec.csl = in->payload.mode.bits.exec.csl;
	out->u.exec.csd = in->payload.mode.bits.exec.csd;
	/* libipt 2.0.5 predates Event Trace and has no IF field; the SDM puts
	 * IF in bit 2 of the MODE.Exec payload byte, so ptscope must report
	 * that bit. */
	out->u.exec.iflag = (raw[1] >> 2) & 1;
}

static void map_power(const struct pt_packet *in, const uint8_t *raw,
		      struct pts_packet *out)
{
	switch (in->type) {
	case ppt_exstop:
		out->kind = PTS_PKT_EXSTOP;
		out->u.exstop.ip = in->payload.exstop.ip;
		break;
	case ppt_mwait:
		out->kind = PTS_PKT_MWAIT;
		out->u.mwait.hints = in->payload.mwait.hints;
		out->u.mwait.ext = in->payload.mwait.ext;
		break;
	case ppt_pwre:
		out->kind = PTS_PKT_PWRE;
		out->u.pwre.state = in->payload.pwre.state;
		out->u.pwre.sub_state = in->payload.pwre.sub_state;
		/* Deliberate difference. SDM (PWRE packet definition) and Linux
		 * perf: HW is bit 7 of the first payload byte (byte 2 of the
		 * packet). libipt 2.0.5 tests mask 0x8 (bit 3), a bit the SDM
		 * marks reserved, so its hw flag is not the reference here. */
		out->u.pwre.hw = raw[2] >> 7;
		break;
	default: /* ppt_pwrx */
		out->kind = PTS_PKT_PWRX;
		out->u.pwrx.last = in->payload.pwrx.last;
		out->u.pwrx.deepest = in->payload.pwrx.deepest;
		out->u.pwrx.interrupt = in->payload.pwrx.interrupt;
		out->u.pwrx.store = in->payload.pwrx.store;
		out->u.pwrx.autonomous = in->payload.pwrx.autonomous;
		break;
	}
}

int pts_map_libipt(const struct pt_packet *in, uint64_t offset,
		   const uint8_t *raw, struct pts_ref_lastip *lip,
		   struct pts_packet *out)
{
	memset(out, 0, sizeof(*out));
	out->offset = offset;
	out->size = in->size;
	switch (in->type) {
	case ppt_pad:
		out->kind = PTS_PKT_PAD;
		break;
	case ppt_psb:
		out->kind = PTS_PKT_PSB;
		/* The CPU resets its last-IP when it emits a PSB. */
		lip->ip = 0;
		break;
	case ppt_psbend:
		out->kind = PTS_PKT_PSBEND;
		break;
	case ppt_stop:
		out->kind = PTS_PKT_STOP;
		break;
	case ppt_ovf:
		out->kind = PTS_PKT_OVF;
		break;
	case ppt_fup:
		out->kind = PTS_PKT_FUP;
		map_ip(in, lip, out);
		break;
	case ppt_tip:
		out->kind = PTS_PKT_TIP;
		map_ip(in, lip, out);
		break;
	case ppt_tip_pge:
		out->kind = PTS_PKT_TIP_PGE;
		map_ip(in, lip, out);
		break;
	case ppt_tip_pgd:
		out->kind = PTS_PKT_TIP_PGD;
		map_ip(in, lip, out);
		break;
	case ppt_tnt_8:
	case ppt_tnt_64:
		out->kind = in->type == ppt_tnt_8 ? PTS_PKT_TNT8 : PTS_PKT_TNT64;
		out->u.tnt.bits = in->payload.tnt.payload;
		out->u.tnt.count = in->payload.tnt.bit_size;
		break;
	case ppt_mode:
		map_mode(in, raw, out);
		break;
	case ppt_pip:
		out->kind = PTS_PKT_PIP;
		out->u.pip.cr3 = in->payload.pip.cr3;
		out->u.pip.nr = in->payload.pip.nr;
		break;
	case ppt_vmcs:
		out->kind = PTS_PKT_VMCS;
		out->u.vmcs_base = in->payload.vmcs.base;
		break;
	case ppt_cbr:
		out->kind = PTS_PKT_CBR;
		out->u.cbr.ratio = in->payload.cbr.ratio;
		break;
	case ppt_tsc:
		out->kind = PTS_PKT_TSC;
		out->u.tsc = in->payload.tsc.tsc;
		break;
	case ppt_tma:
		out->kind = PTS_PKT_TMA;
		out->u.tma.ctc = in->payload.tma.ctc;
		out->u.tma.fc = in->payload.tma.fc;
		break;
	case ppt_mtc:
		out->kind = PTS_PKT_MTC;
		out->u.mtc_ctc = in->payload.mtc.ctc;
		break;
	case ppt_cyc:
		out->kind = PTS_PKT_CYC;
		out->u.cyc = in->payload.cyc.value;
		break;
	case ppt_mnt:
		out->kind = PTS_PKT_MNT;
		out->u.mnt = in->payload.mnt.payload;
		break;
	case ppt_exstop:
	case ppt_mwait:
	case ppt_pwre:
	case ppt_pwrx:
		map_power(in, raw, out);
		break;
	case ppt_ptw:
		out->kind = PTS_PKT_PTW;
		out->u.ptw.payload = in->payload.ptw.payload;
		out->u.ptw.plc = in->payload.ptw.plc;
		out->u.ptw.ip = in->payload.ptw.ip;
		break;
	default: /* ppt_invalid, ppt_unknown */
		return -1;
	}
	return 0;
}

/* TIP, TIP.PGE, TIP.PGD, FUP: opcode bits 4:0, IPBytes in bits 7:5. */
static int is_ip_opcode(uint8_t b)
{
	uint8_t op = b & 0x1f;

	return op == 0x0d || op == 0x11 || op == 0x01 || op == 0x1d;
}

int pts_map_libipt_error(int pte, const uint8_t *at, size_t avail)
{
	switch (pte) {
	case -pte_eos:
		return -PTS_ERR_TRUNCATED;
	case -pte_bad_opc:
		return -PTS_ERR_BAD_OPCODE;
	case -pte_bad_packet:
		if (avail == 0)
			break;
		/* The only payload libipt rejects in an IP packet is IPBytes 5
		 * or 7 (reserved). */
		if (is_ip_opcode(at[0]))
			return -PTS_ERR_BAD_IPC;
		/* A CYC is rejected only for its length. */
		if ((at[0] & 3) == 3)
			return -PTS_ERR_CYC_TOO_LONG;
		return -PTS_ERR_BAD_PACKET;
	default:
		break;
	}
	return -PTS_ERR_INTERNAL;
}

const char *pts_libipt_type_name(enum pt_packet_type type)
{
	static const char *const names[] = {
		[ppt_invalid] = "invalid", [ppt_unknown] = "unknown",
		[ppt_pad] = "pad",	   [ppt_psb] = "psb",
		[ppt_psbend] = "psbend",   [ppt_fup] = "fup",
		[ppt_tip] = "tip",	   [ppt_tip_pge] = "tip.pge",
		[ppt_tip_pgd] = "tip.pgd", [ppt_tnt_8] = "tnt.8",
		[ppt_tnt_64] = "tnt.64",   [ppt_mode] = "mode",
		[ppt_pip] = "pip",	   [ppt_vmcs] = "vmcs",
		[ppt_cbr] = "cbr",	   [ppt_tsc] = "tsc",
		[ppt_tma] = "tma",	   [ppt_mtc] = "mtc",
		[ppt_cyc] = "cyc",	   [ppt_stop] = "stop",
		[ppt_ovf] = "ovf",	   [ppt_mnt] = "mnt",
		[ppt_exstop] = "exstop",   [ppt_mwait] = "mwait",
		[ppt_pwre] = "pwre",	   [ppt_pwrx] = "pwrx",
		[ppt_ptw] = "ptw",
	};

	if ((unsigned)type < sizeof(names) / sizeof(names[0]) && names[type])
		return names[type];
	return "?";
}
