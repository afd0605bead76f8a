/* The libFuzzer entry point every target in tests/fuzz defines. Built with
 * -fsanitize=fuzzer it is driven by libFuzzer; otherwise replay_main.c
 * runs it over a corpus as an ordinary test. */
#ifndef PTS_FUZZ_TARGET_H
#define PTS_FUZZ_TARGET_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Checks an invariant inside a target: aborting is what makes libFuzzer
 * keep the input and the replay test fail. */
#define REQUIRE(cond)                                                          \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: invariant violated: %s\n",     \
				__FILE__, __LINE__, #cond);                    \
			abort();                                               \
		}                                                              \
	} while (0)

#endif /* PTS_FUZZ_TARGET_H */
