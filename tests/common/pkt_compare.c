#include "pkt_compare.h"

#include <inttypes.h>
#include <stdio.h>

static int describe(char *out, size_t cap, const char *field, uint64_t want,
		    uint64_t got)
{
	snprintf(out, cap, "%s: want 0x%" PRIx64 ", got 0x%" PRIx64, field, want,
		 got);
	return 1;
}

/* Checks one field; a macro so that the report names the field as written. */
#define FIELD(expr)                                                            \
	do {                                                                   \
		if ((uint64_t)(want->expr) != (uint64_t)(got->expr))           \
			return describe(out, cap, #expr, (uint64_t)(want->expr), \
					(uint64_t)(got->expr));                \
	} while (0)

static int diff_payload(const struct pts_packet *want,
			const struct pts_packet *got, char *out, size_t cap)
{
	switch (want->kind) {
	case PTS_PKT_TNT8:
	case PTS_PKT_TNT64:
		FIELD(u.tnt.count);
		FIELD(u.tnt.bits);
		break;
	case PTS_PKT_TIP:
	case PTS_PKT_TIP_PGE:
	case PTS_PKT_TIP_PGD:
	case PTS_PKT_FUP:
		FIELD(u.ip.payload);
		FIELD(u.ip.ip);
		break;
	case PTS_PKT_PIP:
		FIELD(u.pip.cr3);
		FIELD(u.pip.nr);
		break;
	case PTS_PKT_MODE_EXEC:
		FIELD(u.exec.csl);
		FIELD(u.exec.csd);
		FIELD(u.exec.iflag);
		break;
	case PTS_PKT_MODE_TSX:
		FIELD(u.tsx.intx);
		FIELD(u.tsx.abrt);
		break;
	case PTS_PKT_CBR:
		FIELD(u.cbr.ratio);
		break;
	case PTS_PKT_TSC:
		FIELD(u.tsc);
		break;
	case PTS_PKT_MTC:
		FIELD(u.mtc_ctc);
		break;
	case PTS_PKT_TMA:
		FIELD(u.tma.ctc);
		FIELD(u.tma.fc);
		break;
	case PTS_PKT_CYC:
		FIELD(u.cyc);
		break;
	case PTS_PKT_VMCS:
		FIELD(u.vmcs_base);
		break;
	case PTS_PKT_MNT:
		FIELD(u.mnt);
		break;
	case PTS_PKT_PTW:
		FIELD(u.ptw.payload);
		FIELD(u.ptw.plc);
		FIELD(u.ptw.ip);
		break;
	case PTS_PKT_EXSTOP:
		FIELD(u.exstop.ip);
		break;
	case PTS_PKT_MWAIT:
		FIELD(u.mwait.hints);
		FIELD(u.mwait.ext);
		break;
	case PTS_PKT_PWRE:
		FIELD(u.pwre.state);
		FIELD(u.pwre.sub_state);
		FIELD(u.pwre.hw);
		break;
	case PTS_PKT_PWRX:
		FIELD(u.pwrx.last);
		FIELD(u.pwrx.deepest);
		FIELD(u.pwrx.interrupt);
		FIELD(u.pwrx.store);
		FIELD(u.pwrx.autonomous);
		break;
	case PTS_PKT_BBP:
		FIELD(u.bbp.sz);
		FIELD(u.bbp.type);
		break;
	case PTS_PKT_BIP:
		FIELD(u.bip.id);
		FIELD(u.bip.payload);
		break;
	case PTS_PKT_BEP:
		FIELD(u.bep.ip);
		break;
	case PTS_PKT_CFE:
		FIELD(u.cfe.type);
		FIELD(u.cfe.vector);
		FIELD(u.cfe.ip);
		break;
	case PTS_PKT_EVD:
		FIELD(u.evd.type);
		FIELD(u.evd.payload);
		break;
	default:
		/* PAD, STOP, OVF, PSB, PSBEND: no payload. */
		break;
	}
	out[0] = '\0';
	return 0;
}

int pts_pkt_diff(const struct pts_packet *want, const struct pts_packet *got,
		 char *out, size_t cap)
{
	FIELD(offset);
	if (want->kind != got->kind) {
		snprintf(out, cap, "kind: want %s, got %s",
			 pts_pkt_kind_name(want->kind),
			 pts_pkt_kind_name(got->kind));
		return 1;
	}
	FIELD(size);
	FIELD(ipc);
	return diff_payload(want, got, out, cap);
}
