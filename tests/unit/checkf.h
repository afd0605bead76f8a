/* CHECKF: check.h's CHECK with a printf-style message, for table-driven
 * tests whose failures must say which row and what differed. Counts into
 * check.h's pts_check_failures, so pts_check_exit() covers both. */
#ifndef PTS_TEST_CHECKF_H
#define PTS_TEST_CHECKF_H

#include "check.h"

#define CHECKF(cond, ...)                                                      \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);        \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
			pts_check_failures++;                                  \
		}                                                              \
	} while (0)

#endif /* PTS_TEST_CHECKF_H */
