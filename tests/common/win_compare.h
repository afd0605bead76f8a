/* Windows model records compared field by field (tests and fuzz targets
 * that feed one trace to two models in different ways). */
#ifndef PTS_TEST_WIN_COMPARE_H
#define PTS_TEST_WIN_COMPARE_H

#include <ptscope/windows.h>

/* 1 when @a and @b say the same (every field, the detail text too). */
int pts_test_same_record(const struct pts_win_record *a,
			 const struct pts_win_record *b);

#endif
