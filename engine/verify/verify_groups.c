/* The list of verification groups (kiln/verify.h). */
#include <string.h>

#include "verify/cases.h"

static const kiln_verify_group *const g_groups[] = {
#define KILN_VERIFY_GROUP(name) &kiln_verify_group_##name,
#include "verify/group_list.h"
#undef KILN_VERIFY_GROUP
};

const kiln_verify_group *const *kiln_verify_groups(int *count) {
    if (count) *count = (int)(sizeof g_groups / sizeof g_groups[0]);
    return g_groups;
}

const kiln_verify_group *kiln_verify_group_find(const char *name) {
    for (size_t i = 0; name && i < sizeof g_groups / sizeof g_groups[0]; i++)
        if (!strcmp(g_groups[i]->name, name)) return g_groups[i];
    return NULL;
}
