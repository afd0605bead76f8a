/* The fixed program the walker's fuzz targets decode random traces over:
 * flow_gen's layout for seed 1 (24 functions, some system calls), so that
 * the corpus traces, made by flow_gen_run() with the same options, fit it. */
#ifndef PTS_FUZZ_PROGRAM_H
#define PTS_FUZZ_PROGRAM_H

#include "flow_gen.h"

#include <ptscope/decoder.h>

/* The program and an image holding its code, made at the first call. */
const struct flow_gen *fuzz_program(struct pts_image **image);

#endif
