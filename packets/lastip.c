/* Last-IP tracking: how FUP/TIP/TIP.PGE/TIP.PGD payloads become IPs (SDM
 * "Compressed IP Payload Format", pt-sgx-facts 1.4).
 *
 * The CPU compresses an IP against the last IP it sent; the decoder keeps
 * the same value. The CPU resets its copy to 0 when it emits a PSB and keeps
 * it across an overflow, so the decoder does the same (the callers reset at
 * PSB).
 */
#include "packets_internal.h"

/* Indexed by IPBytes. */
const uint8_t pts_ipc_bytes[8] = {0, 2, 4, 6, 6, 0xff, 8, 0xff};
const uint64_t pts_ipc_mask[8] = {
	0,
	0xffffull,
	0xffffffffull,
	0xffffffffffffull, /* sext-48 reads 48 bits and replaces all 64 */
	0xffffffffffffull,
	0,
	~0ull,
	0,
};

void pts_lastip_reset(struct pts_lastip *lip)
{
	if (!lip)
		return;
	lip->ip = 0;
	lip->have = 0;
}

int pts_lastip_update(struct pts_lastip *lip, unsigned ipc, uint64_t payload,
		      uint64_t *ip)
{
	uint64_t mask, next;

	if (!lip)
		return -PTS_ERR_INVALID;
	if (ipc > 7 || pts_ipc_bytes[ipc] == 0xff)
		return -PTS_ERR_BAD_IPC;
	if (ipc == PTS_IPC_SUPPRESSED)
		return 0;

	mask = pts_ipc_mask[ipc];
	if (ipc == PTS_IPC_SEXT_48)
		next = pts_sext48(payload);
	else
		next = (lip->ip & ~mask) | (payload & mask);

	lip->ip = next;
	lip->have = 1;
	if (ip)
		*ip = next;
	return 1;
}
