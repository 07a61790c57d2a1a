/* The precisions' names (see precision.h). */
#include "model/precision.h"

#include <string.h>

const char *precision_name(kiln_dtype dtype) { return dtype == KILN_F16 ? "fp16" : "fp32"; }

int precision_from_name(const char *name, kiln_dtype *out) {
    if (!strcmp(name, "fp32")) {
        *out = KILN_F32;
        return 0;
    }
    if (!strcmp(name, "fp16")) {
        *out = KILN_F16;
        return 0;
    }
    return -1;
}
