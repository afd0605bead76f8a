/* The ptscope subcommands. Each lives in its own cmd_*.c and takes the
 * arguments after its name (argv[0] is the subcommand name).
 * Exit status: 0 success, 1 the input had errors (or, for verify, violations),
 * 2 usage or I/O error. */
#ifndef PTS_TOOLS_COMMANDS_H
#define PTS_TOOLS_COMMANDS_H

int pts_cmd_dump(int argc, char **argv);
int pts_cmd_flow(int argc, char **argv);
int pts_cmd_perf(int argc, char **argv);
int pts_cmd_topa(int argc, char **argv);
int pts_cmd_windows(int argc, char **argv);
int pts_cmd_synth(int argc, char **argv);
int pts_cmd_cov(int argc, char **argv);

/* The same commands on a trace given by the caller (`ptscope topa ...
 * flow|windows|cov`) instead of a TRACE operand; flow_run.h. */
struct pts_trace_input;
int pts_cmd_flow_input(int argc, char **argv, struct pts_trace_input *in);
int pts_cmd_windows_input(int argc, char **argv, struct pts_trace_input *in);
int pts_cmd_cov_input(int argc, char **argv, struct pts_trace_input *in);

#endif
