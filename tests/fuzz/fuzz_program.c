#include "fuzz_program.h"

#include "fuzz_target.h"

const struct flow_gen *fuzz_program(struct pts_image **image)
{
	static struct flow_gen program;
	static struct pts_image *img;
	if (!img) {
		struct flow_gen_opts o = {0};
		o.seed = 1;
		o.insns = 1000;
		o.functions = 24;
		o.syscall_per_mille = 30;
		REQUIRE(flow_gen_run(&o, &program) >= 0);
		img = pts_image_new();
		REQUIRE(img);
		REQUIRE(pts_image_add_mem(img, 0, program.code,
					  program.code_size, program.base) == 0);
	}
	*image = img;
	return &program;
}
