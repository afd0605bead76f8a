/* placeholder until written */
typedef int pts_placeholder_cli_;
