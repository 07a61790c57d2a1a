/* Every verification group, in the order `kiln verify` runs them: the family of each kernel
 * slot (engine/core/kernel_slots.def, through the generated kernel_groups.h), then the
 * groups of no slot. A group is its cases_<group>.c. (An X-macro list: included with
 * KILN_VERIFY_GROUP defined.) */
#include "kernel_groups.h"
KILN_VERIFY_GROUP(autograd)
