/* Instruction classification: capstone gives the length (and the text;
 * insn_length.c gives the length of common instructions faster,
 * insn_length_intel.c the ones capstone 4 gets wrong for Intel CPUs);
 * the class and the direct target come from the opcode bytes, which is
 * exact and cheaper than capstone's detail mode. */
#include "internal.h"

#include <capstone/capstone.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INSN 15

struct pts_insn_classifier {
	csh handle[4]; /* by enum pts_exec_mode; [0] unused */
	bool open[4];
	cs_insn *insn[4];
};

static const char *const class_names[PTS_INSN_CLASS_COUNT] = {
	[PTS_INSN_PLAIN] = "plain",       [PTS_INSN_JCC] = "jcc",
	[PTS_INSN_JMP] = "jmp",           [PTS_INSN_CALL] = "call",
	[PTS_INSN_JMP_IND] = "jmp.ind",   [PTS_INSN_CALL_IND] = "call.ind",
	[PTS_INSN_RET] = "ret",           [PTS_INSN_FAR] = "far",
	[PTS_INSN_ENCLU] = "enclu",       [PTS_INSN_PTWRITE] = "ptwrite",
	[PTS_INSN_OTHER] = "other",
};

const char *pts_iclass_name(int iclass)
{
	if (iclass < 0 || iclass >= PTS_INSN_CLASS_COUNT)
		return "invalid";
	return class_names[iclass];
}

const char *pts_exec_mode_name(int mode)
{
	switch (mode) {
	case PTS_EXEC_16: return "16-bit";
	case PTS_EXEC_32: return "32-bit";
	case PTS_EXEC_64: return "64-bit";
	default: return "<unknown>";
	}
}

struct pts_insn_classifier *pts_insn_classifier_new(void)
{
	return calloc(1, sizeof(struct pts_insn_classifier));
}

void pts_insn_classifier_free(struct pts_insn_classifier *cls)
{
	if (!cls)
		return;
	for (int m = 1; m < 4; m++) {
		if (!cls->open[m])
			continue;
		cs_free(cls->insn[m], 1);
		cs_close(&cls->handle[m]);
	}
	free(cls);
}

/* The capstone handle for @mode, opened on first use. */
static int handle_for(struct pts_insn_classifier *cls, int mode)
{
	if (mode == PTS_EXEC_UNKNOWN)
		mode = PTS_EXEC_64;
	if (mode < PTS_EXEC_16 || mode > PTS_EXEC_64)
		return -PTS_ERR_INVALID;
	if (cls->open[mode])
		return mode;
	static const cs_mode cs_modes[4] = {0, CS_MODE_16, CS_MODE_32,
					    CS_MODE_64};
	if (cs_open(CS_ARCH_X86, cs_modes[mode], &cls->handle[mode]) != CS_ERR_OK)
		return -PTS_ERR_INTERNAL;
	cls->insn[mode] = cs_malloc(cls->handle[mode]);
	if (!cls->insn[mode]) {
		cs_close(&cls->handle[mode]);
		return -PTS_ERR_NOMEM;
	}
	cls->open[mode] = true;
	return mode;
}

/* Prefix scan result. */
struct prefixes {
	size_t op;   /* index of the first opcode byte */
	bool osz;    /* 0x66 seen */
	bool asz;    /* 0x67 seen */
	bool rep;    /* 0xF3 seen */
	bool other_rep; /* 0xF2 seen */
};

static void scan_prefixes(const uint8_t *b, size_t len, int mode,
			  struct prefixes *p)
{
	memset(p, 0, sizeof(*p));
	size_t i = 0;
	for (; i < len; i++) {
		uint8_t c = b[i];
		if (c == 0x66)
			p->osz = true;
		else if (c == 0xf3)
			p->rep = true;
		else if (c == 0xf2)
			p->other_rep = true;
		else if (c == 0x67)
			p->asz = true;
		else if (c == 0xf0 || c == 0x2e || c == 0x36 || c == 0x3e ||
			 c == 0x26 || c == 0x64 || c == 0x65)
			continue;
		else if (mode == PTS_EXEC_64 && (c & 0xf0) == 0x40)
			continue; /* REX */
		else
			break;
	}
	p->op = i;
}

/* PTWRITE (F3 [REX] 0F AE /4) is unknown to capstone 4: size it here.
 * Returns the size, 0 when @b is not a PTWRITE, or -TRUNCATED. */
static int ptwrite_size(const uint8_t *b, size_t len, int mode,
			const struct prefixes *p)
{
	size_t i = p->op;
	if (!p->rep || i + 3 > len || b[i] != 0x0f || b[i + 1] != 0xae ||
	    ((b[i + 2] >> 3) & 7) != 4)
		return 0;
	bool a67 = memchr(b, 0x67, i) != NULL;
	bool addr16 = mode == PTS_EXEC_16 ? !a67 : (mode == PTS_EXEC_32 && a67);
	size_t m = pts_modrm_len(b + i + 2, len - i - 2, addr16);
	if (!m || i + 2 + m > len)
		return len < MAX_INSN ? -PTS_ERR_TRUNCATED : -PTS_ERR_BAD_INSN;
	return (int)(i + 2 + m);
}

static int64_t sext(const uint8_t *b, size_t w)
{
	uint64_t v = 0;
	for (size_t k = 0; k < w; k++)
		v |= (uint64_t)b[k] << (8 * k);
	unsigned shift = (unsigned)(64 - 8 * w);
	return (int64_t)(v << shift) >> shift;
}

/* Direct target from the displacement that ends the instruction. */
static void set_target(struct pts_insn_info *info, const uint8_t *b,
		       size_t disp_at, int mode, const struct prefixes *p,
		       uint64_t ip)
{
	size_t w = info->size - disp_at;
	if (w != 1 && w != 2 && w != 4)
		return;
	uint64_t t = ip + info->size + (uint64_t)sext(b + disp_at, w);
	bool o16 = mode == PTS_EXEC_16 ? !p->osz : (mode == PTS_EXEC_32 && p->osz);
	if (o16)
		t &= 0xffff;
	else if (mode == PTS_EXEC_32)
		t &= 0xffffffff;
	info->target = t;
	info->flags |= PTS_INSN_F_TARGET;
}

/* Classes of two-byte opcodes (0F xx). */
static int class_0f(const uint8_t *b, size_t n, size_t i, bool prefixed,
		    size_t *disp_at)
{
	uint8_t op = b[i + 1];
	uint8_t modrm = i + 2 < n ? b[i + 2] : 0;
	if (op >= 0x80 && op <= 0x8f) {
		*disp_at = i + 2;
		return PTS_INSN_JCC;
	}
	switch (op) {
	case 0x05: case 0x07: case 0x34: case 0x35:
		return PTS_INSN_FAR;
	case 0x01:
		if (modrm == 0xd7)
			return PTS_INSN_ENCLU;
		if (modrm == 0xc1 || modrm == 0xc2 || modrm == 0xc3 ||
		    modrm == 0xd9)
			return PTS_INSN_FAR; /* VMCALL, VMLAUNCH, VMRESUME,
						VMMCALL */
		if (modrm == 0xd5 || modrm == 0xc8 || modrm == 0xc9 ||
		    modrm == 0xfa || modrm == 0xfb)
			return PTS_INSN_OTHER; /* XEND, MONITOR, MWAIT, ... */
		return PTS_INSN_PLAIN;
	case 0x22:
		return ((modrm >> 3) & 7) == 3 ? PTS_INSN_OTHER : PTS_INSN_PLAIN;
	case 0x30: case 0x0b: case 0xb9: case 0xff:
		return PTS_INSN_OTHER; /* WRMSR, UD2, UD1, UD0 */
	case 0xc7:
		return (!prefixed && (modrm >> 6) != 3 &&
			((modrm >> 3) & 7) == 6) ? PTS_INSN_OTHER
						 : PTS_INSN_PLAIN;
	default:
		return PTS_INSN_PLAIN;
	}
}

/* Whether @b (@len bytes, prefixes included) starts with VMLAUNCH
 * (0F 01 C2) or VMRESUME (0F 01 C3): the VM entries of erratum SKD022.
 * The flow walker asks this only on the rare async-disable path, so it
 * reads the bytes rather than giving the two their own class. */
bool pts_insn_is_vmentry(const uint8_t *b, size_t len, int mode)
{
	struct prefixes p;
	scan_prefixes(b, len, mode, &p);
	size_t i = p.op;
	return i + 3 <= len && b[i] == 0x0f && b[i + 1] == 0x01 &&
	       (b[i + 2] == 0xc2 || b[i + 2] == 0xc3);
}

/* Class (and target position) from the opcode bytes of a decoded insn. */
static int classify_bytes(const uint8_t *b, size_t n, const struct prefixes *p,
			  size_t *disp_at, uint8_t *flags)
{
	size_t i = p->op;
	*disp_at = 0;
	if (i >= n)
		return PTS_INSN_PLAIN;
	uint8_t op = b[i];
	uint8_t modrm = i + 1 < n ? b[i + 1] : 0;
	if (op == 0x0f && i + 1 < n)
		return class_0f(b, n, i, p->osz || p->rep || p->other_rep,
				disp_at);
	if ((op >= 0x70 && op <= 0x7f) || (op >= 0xe0 && op <= 0xe3)) {
		*disp_at = i + 1;
		return PTS_INSN_JCC;
	}
	switch (op) {
	case 0xeb: case 0xe9:
		*disp_at = i + 1;
		return PTS_INSN_JMP;
	case 0xe8:
		*disp_at = i + 1;
		return PTS_INSN_CALL;
	case 0xc2: case 0xc3:
		return PTS_INSN_RET;
	case 0xea: case 0x9a: case 0xca: case 0xcb: case 0xcf:
	case 0xcc: case 0xcd: case 0xce: case 0xf1:
		return PTS_INSN_FAR;
	case 0xf4:
		return PTS_INSN_OTHER; /* HLT */
	case 0xc6:
		return modrm == 0xf8 ? PTS_INSN_OTHER : PTS_INSN_PLAIN;
	case 0xc7:
		if (modrm != 0xf8)
			return PTS_INSN_PLAIN;
		*disp_at = i + 2;
		*flags |= PTS_INSN_F_XBEGIN;
		return PTS_INSN_OTHER;
	case 0xff:
		switch ((modrm >> 3) & 7) {
		case 2: return PTS_INSN_CALL_IND;
		case 3: return PTS_INSN_FAR;
		case 4: return PTS_INSN_JMP_IND;
		case 5: return PTS_INSN_FAR;
		default: return PTS_INSN_PLAIN;
		}
	default:
		return PTS_INSN_PLAIN;
	}
}

/* The hint NOPs, 0F 18-0F 1F with any ModRM (SDM Vol. 2B, NOP; the
 * reserved-NOP opcodes execute as NOPs): capstone 4 rejects some of their
 * register forms (0F 1E FA without F3, 0F 1F C0), which libipt's decoder
 * takes. Returns the size, 0 when @b is not one or is cut. */
static int hint_nop_size(const uint8_t *b, size_t len, int mode,
			 const struct prefixes *p)
{
	size_t i = p->op;
	if (i + 2 >= len || b[i] != 0x0f || b[i + 1] < 0x18 || b[i + 1] > 0x1f)
		return 0;
	bool addr16 = mode == PTS_EXEC_16 ? !p->asz
					  : mode == PTS_EXEC_32 && p->asz;
	size_t m = pts_modrm_len(b + i + 2, len - i - 2, addr16);
	return m && i + 2 + m <= len ? (int)(i + 2 + m) : 0;
}

/* Capstone's decode of the instruction at @bytes into cls->insn[@mode]
 * (@mode from handle_for()). Returns its size, 0 when it does not
 * decode. */
static int capstone(struct pts_insn_classifier *cls, int mode, uint64_t ip,
		    const uint8_t *bytes, size_t len)
{
	const uint8_t *code = bytes;
	size_t avail = len;
	uint64_t addr = ip;
	if (!cs_disasm_iter(cls->handle[mode], &code, &avail, &addr,
			    cls->insn[mode]))
		return 0;
	return cls->insn[mode]->size;
}

int pts_insn_classify(struct pts_insn_classifier *cls, int mode, uint64_t ip,
		      const uint8_t *bytes, size_t len,
		      struct pts_insn_info *info)
{
	if (!cls || !bytes || !info)
		return -PTS_ERR_INVALID;
	int h = handle_for(cls, mode);
	if (h < 0)
		return h;
	mode = h;
	if (len > MAX_INSN)
		len = MAX_INSN;
	memset(info, 0, sizeof(*info));
	struct prefixes p;
	scan_prefixes(bytes, len, mode, &p);

	int size = ptwrite_size(bytes, len, mode, &p);
	if (size < 0)
		return size;
	if (size > 0) {
		info->size = (uint8_t)size;
		info->iclass = PTS_INSN_PTWRITE;
		return size;
	}
	/* The length: from the bytes when they are common enough, else
	 * from capstone. */
	size = pts_insn_length(bytes, len, mode);
	if (!size)
		size = pts_insn_length_intel(bytes, len, mode, p.op, p.osz,
					     p.asz);
	if (size < 0)
		return -PTS_ERR_BAD_INSN;
	if (!size)
		size = capstone(cls, mode, ip, bytes, len);
	if (!size)
		size = hint_nop_size(bytes, len, mode, &p);
	if (!size)
		return len < MAX_INSN ? -PTS_ERR_TRUNCATED : -PTS_ERR_BAD_INSN;
	info->size = (uint8_t)size;

	size_t disp_at;
	info->iclass = (uint8_t)classify_bytes(bytes, info->size, &p, &disp_at,
					       &info->flags);
	if (disp_at)
		set_target(info, bytes, disp_at, mode, &p, ip);
	if (info->iclass == PTS_INSN_CALL && info->target == ip + info->size)
		info->flags |= PTS_INSN_F_CALL0;
	return info->size;
}

int pts_insn_decode(struct pts_insn_classifier *cls,
		    const struct pts_image *img, uint64_t cr3, int mode,
		    uint64_t ip, struct pts_insn_info *info)
{
	if (!img)
		return -PTS_ERR_INVALID;
	uint8_t buf[MAX_INSN];
	int n = pts_image_fetch(img, cr3, ip, buf, sizeof(buf));
	if (n < 0)
		return n;
	int err = pts_insn_classify(cls, mode, ip, buf, (size_t)n, info);
	/* Fewer than 15 bytes here means the code ends: nothing follows. */
	return err == -PTS_ERR_TRUNCATED ? -PTS_ERR_BAD_INSN : err;
}

/* The text of an instruction of @size bytes at @bytes that classifies
 * without capstone (@mode from handle_for()): "nop" for the hint NOPs,
 * which execute as NOPs; for the others (insn_length_intel.c: encodings
 * capstone 4 does not know) the bytes as an assembler directive, rather
 * than a name we cannot give. */
static int unknown_to_capstone(int mode, const uint8_t *bytes, size_t size,
			       char *out, size_t cap)
{
	struct prefixes p;
	scan_prefixes(bytes, size, mode, &p);
	if (hint_nop_size(bytes, size, mode, &p) == (int)size)
		return snprintf(out, cap, "nop");
	size_t n = (size_t)snprintf(out, cap, ".byte");
	for (size_t i = 0; i < size && n < cap; i++)
		n += (size_t)snprintf(out + n, cap - n, "%s0x%02x",
				      i ? ", " : " ", bytes[i]);
	return (int)n;
}

int pts_insn_disasm(struct pts_insn_classifier *cls, int mode, uint64_t ip,
		    const uint8_t *bytes, size_t len, char *out, size_t cap)
{
	if (!cls || !bytes || !out)
		return -PTS_ERR_INVALID;
	int h = handle_for(cls, mode);
	if (h < 0)
		return h;
	if (len > MAX_INSN)
		len = MAX_INSN;
	struct pts_insn_info info;
	int size = pts_insn_classify(cls, h, ip, bytes, len, &info);
	if (size < 0)
		return -PTS_ERR_BAD_INSN;
	int n;
	if (info.iclass == PTS_INSN_PTWRITE) {
		n = snprintf(out, cap, "ptwrite");
	} else if (!capstone(cls, h, ip, bytes, len)) {
		n = unknown_to_capstone(h, bytes, (size_t)size, out, cap);
	} else {
		const cs_insn *insn = cls->insn[h];
		n = snprintf(out, cap, "%s%s%s", insn->mnemonic,
			     insn->op_str[0] ? " " : "", insn->op_str);
	}
	if (n < 0 || (size_t)n >= cap)
		return -PTS_ERR_AGAIN;
	return n;
}
