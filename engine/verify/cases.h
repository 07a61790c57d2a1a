/* The verification groups, one file each (cases_<group>.c, which defines
 * kiln_verify_group_<group>), and the list that gathers them (verify_groups.c). */
#ifndef KILN_VERIFY_CASES_H
#define KILN_VERIFY_CASES_H

#include "kiln/verify.h"

#define KILN_VERIFY_GROUP(name) extern const kiln_verify_group kiln_verify_group_##name;
#include "verify/group_list.h"
#undef KILN_VERIFY_GROUP

#endif
