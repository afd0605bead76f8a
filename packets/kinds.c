/* Packet kind names, generated from the PTS_PKT_KINDS list (the names the
 * JSON output and the tests use). */
#include <ptscope/packets.h>

static const char *const pts_kind_names[PTS_PKT_KIND_COUNT] = {
#define PTS_KIND_NAME_(name, str) [PTS_PKT_##name] = str,
	PTS_PKT_KINDS(PTS_KIND_NAME_)
#undef PTS_KIND_NAME_
};

const char *pts_pkt_kind_name(int kind)
{
	if (kind < 0 || kind >= PTS_PKT_KIND_COUNT)
		return "invalid";
	return pts_kind_names[kind];
}
