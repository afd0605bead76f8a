/* placeholder until written */
#include <ptscope/packets.h>
typedef int pts_placeholder_errata_;
