#include "check.h"

int pts_check_failures;

int pts_check_exit(void)
{
	if (pts_check_failures) {
		printf("%d check(s) failed\n", pts_check_failures);
		return 1;
	}
	return 0;
}
