/* Minimal assertions for test programs: a failed check is reported with
 * its location and the values involved, counted, and the test goes on so
 * that one run shows every failure. */
#ifndef PTS_TEST_CHECK_H
#define PTS_TEST_CHECK_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

extern int pts_check_failures;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
			pts_check_failures++;                                  \
		}                                                              \
	} while (0)

#define CHECK_EQ(got, want)                                                    \
	do {                                                                   \
		uint64_t got_ = (uint64_t)(got), want_ = (uint64_t)(want);     \
		if (got_ != want_) {                                           \
			fprintf(stderr,                                        \
				"%s:%d: check failed: %s == %s: got %" PRIu64  \
				", want %" PRIu64 "\n",                        \
				__FILE__, __LINE__, #got, #want, got_, want_); \
			pts_check_failures++;                                  \
		}                                                              \
	} while (0)

/* Reports a failure with a printf-style message (which row, what
 * differed), counted like a failed CHECK; for failures found by code that
 * has already compared the values. */
#define FAIL(...)                                                              \
	do {                                                                   \
		fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                \
		fprintf(stderr, __VA_ARGS__);                                  \
		fputc('\n', stderr);                                           \
		pts_check_failures++;                                          \
	} while (0)

/* CHECK with a printf-style message, for table-driven tests whose failures
 * must say which row and what differed. */
#define CHECKF(cond, ...)                                                      \
	do {                                                                   \
		if (!(cond))                                                   \
			FAIL(__VA_ARGS__);                                     \
	} while (0)

/* The exit status for main: 0 when every check held, else 1. */
int pts_check_exit(void);

#endif /* PTS_TEST_CHECK_H */
