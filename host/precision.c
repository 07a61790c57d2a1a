/* --precision parsing and the device check (see precision.h). */
#include "precision.h"

#include <string.h>

#include "cli.h"

int host_parse_precision(const char *name, kiln_dtype *out) {
    if (!strcmp(name, "fp32")) {
        *out = KILN_F32;
        return 0;
    }
    if (!strcmp(name, "fp16")) {
        *out = KILN_F16;
        return 0;
    }
    host_error("--precision %s: expected fp32 or fp16", name);
    return -1;
}

const char *host_precision_name(kiln_dtype dtype) { return dtype == KILN_F16 ? "fp16" : "fp32"; }

int host_check_precision(const kiln_ctx *ctx, kiln_dtype dtype) {
    if (kiln_supports_dtype(ctx, dtype)) return 0;
    host_error("--precision fp16: %s device %s cannot store f16 tensors (no 16-bit storage); "
               "use --precision fp32", kiln_backend_name(ctx), kiln_device_name(ctx));
    return -1;
}
