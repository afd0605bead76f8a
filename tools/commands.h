/* The ptscope subcommands. Each lives in its own cmd_*.c and takes the
 * arguments after its name (argv[0] is the subcommand name).
 * Exit status: 0 success, 1 the input had errors (or, for verify, violations),
 * 2 usage or I/O error. */
#ifndef PTS_TOOLS_COMMANDS_H
#define PTS_TOOLS_COMMANDS_H

int pts_cmd_dump(int argc, char **argv);

#endif
