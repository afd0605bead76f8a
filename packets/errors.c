/* Error messages and names, generated from the PTS_ERRORS list so that a new
 * code cannot be added without its text. */
#include <ptscope/packets.h>

static const char *const pts_err_msgs[PTS_ERR_COUNT] = {
#define PTS_ERR_MSG_(name, msg) [PTS_ERR_##name] = msg,
	PTS_ERRORS(PTS_ERR_MSG_)
#undef PTS_ERR_MSG_
};

static const char *const pts_err_names[PTS_ERR_COUNT] = {
#define PTS_ERR_NAME_(name, msg) [PTS_ERR_##name] = #name,
	PTS_ERRORS(PTS_ERR_NAME_)
#undef PTS_ERR_NAME_
};

/* Callers pass what functions return (negative) or the enum (positive);
 * both mean the same code. */
static int pts_err_index(int err)
{
	/* -INT_MIN overflows: map every out-of-range value to "unknown". */
	if (err <= -(int)PTS_ERR_COUNT || err >= (int)PTS_ERR_COUNT)
		return -1;
	return err < 0 ? -err : err;
}

const char *pts_strerror(int err)
{
	int i = pts_err_index(err);

	return i < 0 ? "unknown error" : pts_err_msgs[i];
}

const char *pts_errname(int err)
{
	int i = pts_err_index(err);

	return i < 0 ? "UNKNOWN" : pts_err_names[i];
}
