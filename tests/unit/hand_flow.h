/* Flow unit tests on hand-made traces (hand_trace.h) over hand-made code:
 * the code as an image, and the check of a case's flow against the
 * expected one and, when the tests are built with libipt, against
 * libipt 2.0.5's pt_insn. */
#ifndef PTS_TESTS_HAND_FLOW_H
#define PTS_TESTS_HAND_FLOW_H

#include "hand_trace.h"

#include <ptscope/decoder.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hand_section {
	const uint8_t *bytes;
	size_t size;
	uint64_t base;
};

struct hand_code {
	const struct hand_section *sections;
	size_t n;
};

/* @code as an image in address space 0 (CHECKs). */
struct pts_image *hf_image(const struct hand_code *code);

/* Case @label: its flow @got (as the test prints flows) must be @want.
 * With libipt, libipt's flow of @t over @code with the CPU and IP filters
 * of @fc must also agree with ptscope's (instructions, enabled/disabled/
 * overflow events, errors; CBR events too with @cbr), unless @libipt_same
 * is false: a documented difference, which must still be one. */
void hf_expect(const char *label, const char *got, const char *want,
	       const struct hand_code *code, const struct hand_trace *t,
	       const struct pts_flow_config *fc, bool cbr, bool libipt_same);

#endif
