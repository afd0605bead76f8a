/* Last-IP (SDM "Compressed IP Payload Format"): each IPBytes value against
 * a known last IP, suppressed and reserved forms, and sequences as a CPU
 * writes them (compressed against 0 after a reset).
 */
#include <ptscope/packets.h>

#include "check.h"

#include <inttypes.h>
#include <stdio.h>

struct row {
	const char *name;
	uint64_t last;    /* last-IP before */
	unsigned ipc;
	uint64_t payload;
	int ret;          /* expected return */
	uint64_t ip;      /* expected IP (and last-IP after) when ret == 1 */
};

static const struct row rows[] = {
	{"suppressed", 0xffffffff81000000ull, 0, 0x1234, 0, 0},
	{"upd16", 0x00007fff12345678ull, 1, 0xabcd, 1, 0x00007fff1234abcdull},
	{"upd16 ignores high payload bits", 0x00007fff12345678ull, 1,
	 0xffffffffffff0001ull, 1, 0x00007fff12340001ull},
	{"upd32", 0xffffffff81000000ull, 2, 0x81234567, 1,
	 0xffffffff81234567ull},
	{"upd32 ignores high payload bits", 0x0000555500000000ull, 2,
	 0x1111222233334444ull, 1, 0x0000555533334444ull},
	{"sext48 positive", 0xffffffffffffffffull, 3, 0x00007fffdeadbeefull, 1,
	 0x00007fffdeadbeefull},
	{"sext48 negative", 0, 3, 0x0000ffff81000010ull, 1,
	 0xffffffff81000010ull},
	{"sext48 bit 47 only", 0x1234, 3, 0x800000000000ull, 1,
	 0xffff800000000000ull},
	{"upd48 keeps 63:48", 0xabcd000000000000ull, 4, 0x0000123456789abcull,
	 1, 0xabcd123456789abcull},
	{"upd48 does not sign-extend", 0, 4, 0x0000800000000000ull, 1,
	 0x0000800000000000ull},
	{"full", 0x1111111111111111ull, 6, 0xfedcba9876543210ull, 1,
	 0xfedcba9876543210ull},
	{"reserved 5", 0x4000, 5, 0x1, -PTS_ERR_BAD_IPC, 0},
	{"reserved 7", 0x4000, 7, 0x1, -PTS_ERR_BAD_IPC, 0},
	{"out of range 8", 0x4000, 8, 0x1, -PTS_ERR_BAD_IPC, 0},
};

static void table(void)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct pts_lastip lip = {r->last, 1};
		uint64_t ip = 0x5a5a5a5a5a5a5a5aull;
		int ret = pts_lastip_update(&lip, r->ipc, r->payload, &ip);

		if (ret != r->ret) {
			FAIL("%s: returned %d, want %d", r->name, ret, r->ret);
			continue;
		}
		if (ret == 1) {
			if (ip != r->ip || lip.ip != r->ip || !lip.have)
				FAIL("%s: ip 0x%" PRIx64 " last 0x%" PRIx64
				     ", want 0x%" PRIx64,
				     r->name, ip, lip.ip, r->ip);
		} else {
			/* Suppressed and reserved leave everything alone. */
			if (lip.ip != r->last || ip != 0x5a5a5a5a5a5a5a5aull)
				FAIL("%s: changed last-IP or output", r->name);
		}
	}
}

static void sequences(void)
{
	struct pts_lastip lip = {0xdeadbeef, 1};
	uint64_t ip = 0;

	/* After a reset (PSB) compressed forms update against 0. */
	pts_lastip_reset(&lip);
	if (lip.ip != 0 || lip.have != 0)
		FAIL("reset: last 0x%" PRIx64 " have %u", lip.ip, lip.have);
	if (pts_lastip_update(&lip, 1, 0x1000, &ip) != 1 || ip != 0x1000)
		FAIL("upd16 after reset: 0x%" PRIx64, ip);
	if (pts_lastip_update(&lip, 2, 0x00401000, &ip) != 1 ||
	    ip != 0x00401000)
		FAIL("upd32: 0x%" PRIx64, ip);
	if (pts_lastip_update(&lip, 1, 0x2345, &ip) != 1 || ip != 0x00402345)
		FAIL("upd16 on upd32: 0x%" PRIx64, ip);
	/* A suppressed IP leaves the last one for the next compression. */
	if (pts_lastip_update(&lip, 0, 0, &ip) != 0)
		FAIL("suppressed returned an IP");
	if (pts_lastip_update(&lip, 1, 0x3000, &ip) != 1 || ip != 0x00403000)
		FAIL("upd16 after suppressed: 0x%" PRIx64, ip);
	if (pts_lastip_update(&lip, 3, 0xffff81000000ull, &ip) != 1 ||
	    ip != 0xffffffff81000000ull)
		FAIL("sext48 kernel IP: 0x%" PRIx64, ip);
	if (pts_lastip_update(&lip, 2, 0x81001234, &ip) != 1 ||
	    ip != 0xffffffff81001234ull)
		FAIL("upd32 on kernel IP: 0x%" PRIx64, ip);
	/* A NULL output is allowed: the caller only wants last-IP. */
	if (pts_lastip_update(&lip, 1, 0x5678, NULL) != 1 ||
	    lip.ip != 0xffffffff81005678ull)
		FAIL("NULL output: last 0x%" PRIx64, lip.ip);
	if (pts_lastip_update(NULL, 1, 0, &ip) != -PTS_ERR_INVALID)
		FAIL("NULL last-IP accepted");
	pts_lastip_reset(NULL);
}

int main(void)
{
	table();
	sequences();
	return pts_check_exit();
}
