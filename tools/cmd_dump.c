/* placeholder until written */
#include "commands.h"
int pts_cmd_dump(int argc, char **argv) { (void)argc; (void)argv; return 2; }
