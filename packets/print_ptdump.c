/* One packet as one line of libipt's ptdump (default options, plus
 * --no-offset and --lastip), so that `ptscope dump` output and ptdump's
 * output are equal line for line once runs of white space are folded.
 *
 * The layout follows ptdump (libipt 2.0.5 and later, ptdump/src/ptdump.c):
 * every column is a fixed-size text field printed left-aligned at its full
 * size, so the widths below are those field sizes, and a payload too long
 * for its field is cut where ptdump's snprintf would cut it:
 *
 *   offset (16 hex digits, column 17) ' ' opcode (column 10, only padded
 *   when a payload follows) ' ' payload [(column 25) ' ' tracking id
 *   (column 5) tracking value]
 *
 * The tracking columns appear for PIP ("cr3"), VMCS ("vmcs") and, with
 * --lastip, for IP packets ("ip"). Spellings of packets that libipt 2.0.5
 * does not know come from newer ptdump (MODE.Exec "if", CFE, EVD); libipt
 * has no PEBS-via-PT packets, so BBP/BIP/BEP use ptdump's idioms (hex
 * payload, ", flag") under names of our own.
 */
#include <ptscope/packets.h>

#include "print_buf.h"

/* ptdump's field sizes (including the NUL its snprintf keeps). */
enum {
	COL_OFFSET = 17,
	COL_OPCODE = 10,
	COL_PAYLOAD = 25,
	COL_EXT_PAYLOAD = 48, /* TNT bits */
	COL_TRACK_ID = 5,
	COL_TRACK = 17
};

/* The fields of one line before they are laid out. */
struct ptdump_fields {
	const char *opcode;
	char payload[COL_EXT_PAYLOAD + 16];
	struct pts_pbuf pl;
	int extended;
	const char *track_id;
	char track[COL_TRACK + 8];
	struct pts_pbuf tr;
};

/* ptdump's diagnostic "[<offset>: <what>: <error>]" (no newline). */
static void put_diag(struct pts_pbuf *b, uint64_t offset, const char *what,
		     const char *error)
{
	pts_pb_putc(b, '[');
	pts_pb_hex(b, offset, 0);
	pts_pb_puts(b, ": ");
	pts_pb_puts(b, what);
	pts_pb_puts(b, ": ");
	pts_pb_puts(b, error);
	pts_pb_putc(b, ']');
}

/* ptdump prints a diagnostic as soon as it meets the problem, so it comes
 * as a line of its own before the packet's line. */
static void put_diag_line(struct pts_pbuf *b, uint64_t offset,
			  const char *what, const char *error)
{
	put_diag(b, offset, what, error);
	pts_pb_putc(b, '\n');
}

static uint64_t sext48(uint64_t v)
{
	return (v & (1ull << 47)) ? v | 0xffff000000000000ull
				  : v & 0x0000ffffffffffffull;
}

/* "<ipc>: <ip>" with '?' for the bytes the packet does not carry. */
static void put_ip_payload(struct pts_pbuf *pl, const struct pts_packet *pkt)
{
	const uint64_t p = pkt->u.ip.payload;

	pts_pb_hex(pl, pkt->ipc, 0);
	pts_pb_puts(pl, ": ");
	switch (pkt->ipc) {
	case PTS_IPC_SUPPRESSED:
		pts_pb_puts(pl, "????????????????");
		break;
	case PTS_IPC_UPDATE_16:
		pts_pb_puts(pl, "????????????");
		pts_pb_hex(pl, p, 4);
		break;
	case PTS_IPC_UPDATE_32:
		pts_pb_puts(pl, "????????");
		pts_pb_hex(pl, p, 8);
		break;
	case PTS_IPC_UPDATE_48:
		pts_pb_puts(pl, "????");
		pts_pb_hex(pl, p, 12);
		break;
	case PTS_IPC_SEXT_48:
		pts_pb_hex(pl, sext48(p), 16);
		break;
	default:
		pts_pb_hex(pl, p, 16);
		break;
	}
}

/* ptdump --lastip: apply the payload to the printer's own last-IP and show
 * the result. Like ptdump, a suppressed IP shows "<suppressed>" only once
 * some IP is known; before that it is an error ("no ip"). */
static void track_ip(struct pts_pbuf *b, struct ptdump_fields *f,
		     const struct pts_packet *pkt, struct pts_lastip *lip)
{
	uint64_t ip = 0;
	const int r = pts_lastip_update(lip, pkt->ipc, pkt->u.ip.payload, &ip);

	f->track_id = "ip";
	if (r > 0) {
		pts_pb_hex(&f->tr, ip, 16);
	} else if (r == 0 && lip->have) {
		pts_pb_puts(&f->tr, "<suppressed>");
	} else {
		pts_pb_puts(&f->tr, "<unavailable>");
		put_diag_line(b, pkt->offset, "error tracking last-ip",
			      r < 0 ? "unknown packet" : "no ip");
	}
}

static void fill_ip(struct pts_pbuf *b, struct ptdump_fields *f,
		    const struct pts_packet *pkt,
		    const struct pts_print_opts *opts, struct pts_lastip *lip)
{
	put_ip_payload(&f->pl, pkt);
	if (pkt->ipc == 5 || pkt->ipc == 7)
		put_diag_line(b, pkt->offset, "bad ipc", "unknown packet");
	if (opts && opts->show_lastip && lip)
		track_ip(b, f, pkt, lip);
}

/* Taken/not-taken, oldest first. */
static void fill_tnt(struct ptdump_fields *f, const struct pts_packet *pkt)
{
	f->extended = 1;
	for (unsigned i = pkt->u.tnt.count; i > 0; i--)
		pts_pb_putc(&f->pl, (pkt->u.tnt.bits >> (i - 1)) & 1 ? '!' : '.');
}

/* "a, b" from the names of the flags that are set. */
static void put_flags(struct pts_pbuf *pl, const char *const *names,
		      const uint8_t *set, unsigned n)
{
	const size_t start = pl->len;
	for (unsigned i = 0; i < n; i++) {
		if (!set[i])
			continue;
		if (pl->len != start)
			pts_pb_puts(pl, ", ");
		pts_pb_puts(pl, names[i]);
	}
}

static void fill_mode(struct ptdump_fields *f, const struct pts_packet *pkt)
{
	if (pkt->kind == PTS_PKT_MODE_EXEC) {
		static const char *const names[] = {"cs.d", "cs.l", "if"};
		const uint8_t set[] = {pkt->u.exec.csd, pkt->u.exec.csl,
				       pkt->u.exec.iflag};
		f->opcode = "mode.exec";
		put_flags(&f->pl, names, set, 3);
	} else {
		static const char *const names[] = {"intx", "abrt"};
		const uint8_t set[] = {pkt->u.tsx.intx, pkt->u.tsx.abrt};
		f->opcode = "mode.tsx";
		put_flags(&f->pl, names, set, 2);
	}
}

/* PIP and VMCS also fill ptdump's tracking column, with the full value. */
static void fill_tracked(struct ptdump_fields *f, const char *id, uint64_t v)
{
	pts_pb_hex(&f->pl, v, 0);
	f->track_id = id;
	pts_pb_hex(&f->tr, v, 16);
}

/* ptdump prints C-states one up ("c1" for 0) in 4 bits. */
static void put_cstate(struct pts_pbuf *pl, unsigned state)
{
	pts_pb_putc(pl, 'c');
	pts_pb_dec(pl, (state + 1) & 0xf);
}

static void fill_pwrx(struct ptdump_fields *f, const struct pts_packet *pkt)
{
	const unsigned reasons = pkt->u.pwrx.interrupt + pkt->u.pwrx.store +
				 pkt->u.pwrx.autonomous;
	const char *wr = "bad"; /* none or more than one wake reason */

	if (reasons == 1)
		wr = pkt->u.pwrx.interrupt ? "int"
		     : pkt->u.pwrx.store   ? " st"
					   : " hw";
	pts_pb_puts(&f->pl, wr);
	pts_pb_puts(&f->pl, ": ");
	put_cstate(&f->pl, pkt->u.pwrx.last);
	pts_pb_puts(&f->pl, ", ");
	put_cstate(&f->pl, pkt->u.pwrx.deepest);
}

static void put_ip_flag(struct pts_pbuf *pl, int ip)
{
	if (ip)
		pts_pb_puts(pl, pl->len ? ", ip" : "ip");
}

static void fill_cfe(struct ptdump_fields *f, const struct pts_packet *pkt)
{
	const unsigned type = pkt->u.cfe.type;

	pts_pb_dec(&f->pl, type);
	/* Only these types carry a vector: INTR, VMEXIT_INTR, UINTR
	 * (decimal) and SIPI (hex). */
	if (type == 1 || type == 9 || type == 12) {
		pts_pb_puts(&f->pl, ": ");
		pts_pb_dec(&f->pl, pkt->u.cfe.vector);
	} else if (type == 5) {
		pts_pb_puts(&f->pl, ": ");
		pts_pb_hex(&f->pl, pkt->u.cfe.vector, 0);
	}
	put_ip_flag(&f->pl, pkt->u.cfe.ip);
}

/* "<a>: <b>" in hex, as ptdump prints PTW, EVD and the like. */
static void put_pair(struct pts_pbuf *pl, uint64_t a, uint64_t b)
{
	pts_pb_hex(pl, a, 0);
	pts_pb_puts(pl, ": ");
	pts_pb_hex(pl, b, 0);
}

static void fill_power(struct ptdump_fields *f, const struct pts_packet *pkt)
{
	switch (pkt->kind) {
	case PTS_PKT_EXSTOP:
		put_ip_flag(&f->pl, pkt->u.exstop.ip);
		break;
	case PTS_PKT_MWAIT:
		pts_pb_hex(&f->pl, pkt->u.mwait.hints, 8);
		pts_pb_puts(&f->pl, ", ");
		pts_pb_hex(&f->pl, pkt->u.mwait.ext, 8);
		break;
	case PTS_PKT_PWRE:
		put_cstate(&f->pl, pkt->u.pwre.state);
		pts_pb_putc(&f->pl, '.');
		pts_pb_dec(&f->pl, (pkt->u.pwre.sub_state + 1u) & 0xf);
		if (pkt->u.pwre.hw)
			pts_pb_puts(&f->pl, ", hw");
		break;
	default:
		fill_pwrx(f, pkt);
		break;
	}
}

static void fill_timing(struct ptdump_fields *f, const struct pts_packet *pkt)
{
	switch (pkt->kind) {
	case PTS_PKT_TSC:
		pts_pb_hex(&f->pl, pkt->u.tsc, 0);
		break;
	case PTS_PKT_CBR:
		pts_pb_hex(&f->pl, pkt->u.cbr.ratio, 0);
		break;
	case PTS_PKT_MTC:
		pts_pb_hex(&f->pl, pkt->u.mtc_ctc, 0);
		break;
	case PTS_PKT_TMA:
		pts_pb_hex(&f->pl, pkt->u.tma.ctc, 0);
		pts_pb_puts(&f->pl, ", ");
		pts_pb_hex(&f->pl, pkt->u.tma.fc, 0);
		break;
	default: /* CYC */
		pts_pb_hex(&f->pl, pkt->u.cyc, 0);
		break;
	}
}

/* Everything but the opcode name (which is the kind's name). */
static void fill_payload(struct pts_pbuf *b, struct ptdump_fields *f,
			 const struct pts_packet *pkt,
			 const struct pts_print_opts *opts,
			 struct pts_lastip *lip)
{
	switch (pkt->kind) {
	case PTS_PKT_TNT8:
	case PTS_PKT_TNT64:
		fill_tnt(f, pkt);
		break;
	case PTS_PKT_TIP:
	case PTS_PKT_TIP_PGE:
	case PTS_PKT_TIP_PGD:
	case PTS_PKT_FUP:
		fill_ip(b, f, pkt, opts, lip);
		break;
	case PTS_PKT_PIP:
		fill_tracked(f, "cr3", pkt->u.pip.cr3);
		if (pkt->u.pip.nr)
			pts_pb_puts(&f->pl, ", nr");
		break;
	case PTS_PKT_VMCS:
		fill_tracked(f, "vmcs", pkt->u.vmcs_base);
		break;
	case PTS_PKT_MODE_EXEC:
	case PTS_PKT_MODE_TSX:
		fill_mode(f, pkt);
		break;
	case PTS_PKT_TSC:
	case PTS_PKT_CBR:
	case PTS_PKT_MTC:
	case PTS_PKT_TMA:
	case PTS_PKT_CYC:
		fill_timing(f, pkt);
		break;
	case PTS_PKT_MNT:
		pts_pb_hex(&f->pl, pkt->u.mnt, 0);
		break;
	case PTS_PKT_PTW:
		put_pair(&f->pl, pkt->u.ptw.plc, pkt->u.ptw.payload);
		put_ip_flag(&f->pl, pkt->u.ptw.ip);
		break;
	case PTS_PKT_EXSTOP:
	case PTS_PKT_MWAIT:
	case PTS_PKT_PWRE:
	case PTS_PKT_PWRX:
		fill_power(f, pkt);
		break;
	case PTS_PKT_BBP:
		pts_pb_hex(&f->pl, pkt->u.bbp.type, 0);
		if (pkt->u.bbp.sz)
			pts_pb_puts(&f->pl, ", sz");
		break;
	case PTS_PKT_BIP:
		put_pair(&f->pl, pkt->u.bip.id, pkt->u.bip.payload);
		break;
	case PTS_PKT_BEP:
		put_ip_flag(&f->pl, pkt->u.bep.ip);
		break;
	case PTS_PKT_CFE:
		fill_cfe(f, pkt);
		break;
	case PTS_PKT_EVD:
		pts_pb_dec(&f->pl, pkt->u.evd.type);
		pts_pb_puts(&f->pl, ": ");
		pts_pb_hex(&f->pl, pkt->u.evd.payload, 0);
		break;
	default: /* PAD, STOP, OVF, PSB, PSBEND: no payload */
		break;
	}
}

/* Lays the fields out as ptdump's print_buffer() does. */
static void put_line(struct pts_pbuf *b, const struct ptdump_fields *f,
		     uint64_t offset, const struct pts_print_opts *opts)
{
	/* What ptdump's snprintf keeps of the payload field. */
	const size_t pl_max =
		(size_t)(f->extended ? COL_EXT_PAYLOAD : COL_PAYLOAD) - 1;
	const size_t pl_len = f->pl.len < pl_max ? f->pl.len : pl_max;
	size_t start;

	if (!opts || opts->show_offset) {
		start = b->len;
		pts_pb_hex(b, offset, 16);
		pts_pb_pad(b, start, COL_OFFSET);
		pts_pb_putc(b, ' ');
	}
	start = b->len;
	pts_pb_puts(b, f->opcode);
	if (pl_len)
		pts_pb_pad(b, start, COL_OPCODE);

	if (f->track_id && !f->extended) {
		pts_pb_putc(b, ' ');
		start = b->len;
		pts_pb_putn(b, f->payload, pl_len);
		pts_pb_pad(b, start, COL_PAYLOAD);
		pts_pb_putc(b, ' ');
		start = b->len;
		pts_pb_puts(b, f->track_id);
		pts_pb_pad(b, start, COL_TRACK_ID);
		pts_pb_putn(b, f->track, COL_TRACK - 1);
	} else if (pl_len) {
		pts_pb_putc(b, ' ');
		pts_pb_putn(b, f->payload, pl_len);
	}
}

int pts_print_ptdump(const struct pts_packet *pkt,
		     const struct pts_print_opts *opts, struct pts_lastip *lip,
		     char *out, size_t cap)
{
	struct ptdump_fields f;
	struct pts_pbuf b;

	if (!pkt || pkt->kind >= PTS_PKT_KIND_COUNT || (!out && cap))
		return -PTS_ERR_INVALID;

	pts_pb_init(&b, out, cap);
	f.opcode = pts_pkt_kind_name(pkt->kind);
	f.extended = 0;
	f.track_id = NULL;
	pts_pb_init(&f.pl, f.payload, sizeof(f.payload));
	pts_pb_init(&f.tr, f.track, sizeof(f.track));

	fill_payload(&b, &f, pkt, opts, lip);
	/* The field buffers are larger than any payload we produce; close
	 * them so that put_line() can read them as strings. */
	pts_pb_finish(&f.pl);
	pts_pb_finish(&f.tr);
	put_line(&b, &f, pkt->offset, opts);
	return pts_pb_finish(&b);
}

/* libipt's message for a packet decoder error, so that error lines read as
 * ptdump's; our own message where libipt has no such condition. */
static const char *ptdump_errstr(int err)
{
	switch (err < 0 ? -err : err) {
	case PTS_ERR_BAD_OPCODE:
		return "unknown opcode";
	case PTS_ERR_BAD_PACKET:
	case PTS_ERR_BAD_IPC:
	case PTS_ERR_CYC_TOO_LONG:
		return "unknown packet";
	case PTS_ERR_NOSYNC:
		return "decoder out of sync";
	case PTS_ERR_EOS:
		return "reached end of trace stream";
	default:
		return pts_strerror(err);
	}
}

int pts_print_ptdump_error(int err, uint64_t begin, uint64_t end, char *out,
			   size_t cap)
{
	struct pts_pbuf b;

	if (!out && cap)
		return -PTS_ERR_INVALID;
	pts_pb_init(&b, out, cap);
	if (err == -PTS_ERR_SKIPPED || err == PTS_ERR_SKIPPED) {
		pts_pb_putc(&b, '[');
		pts_pb_hex(&b, begin, 0);
		pts_pb_putc(&b, '-');
		pts_pb_hex(&b, end, 0);
		pts_pb_puts(&b, ": skipped ");
		pts_pb_dec(&b, end - begin);
		pts_pb_puts(&b, " bytes to resync]");
	} else {
		put_diag(&b, begin, "error decoding packet", ptdump_errstr(err));
	}
	return pts_pb_finish(&b);
}
