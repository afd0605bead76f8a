#include "skim_expect.h"

void pts_test_skim_add(struct pts_skim *sum, const struct pts_packet *pk)
{
	sum->packets++;
	if (pk->kind == PTS_PKT_TNT8 || pk->kind == PTS_PKT_TNT64) {
		sum->tnt_packets++;
		sum->tnt_bits += pk->u.tnt.count;
	} else if (pk->kind == PTS_PKT_TIP) {
		sum->tips++;
		if (pk->ipc != PTS_IPC_SUPPRESSED) {
			sum->last_ip = pk->u.ip.ip;
			sum->has_ip = 1;
		}
	}
}
