#include "win_compare.h"

#include <string.h>

static int same_point(const struct pts_win_point *a,
		      const struct pts_win_point *b)
{
	return a->offset == b->offset && a->ip == b->ip && a->tsc == b->tsc &&
	       a->has_ip == b->has_ip && a->has_time == b->has_time &&
	       a->edge == b->edge;
}

int pts_test_same_record(const struct pts_win_record *a,
			 const struct pts_win_record *b)
{
	return a->type == b->type && a->cause == b->cause &&
	       a->basis == b->basis && a->entry == b->entry &&
	       a->exit == b->exit && a->flags == b->flags &&
	       a->enclave == b->enclave && a->candidates == b->candidates &&
	       a->psbs == b->psbs && a->ovfs == b->ovfs && a->cbrs == b->cbrs &&
	       a->rule == b->rule && same_point(&a->begin, &b->begin) &&
	       same_point(&a->end, &b->end) && a->packets == b->packets &&
	       a->tnt_bits == b->tnt_bits && a->tips == b->tips &&
	       strcmp(a->detail, b->detail) == 0;
}
