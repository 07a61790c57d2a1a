/* --precision parsing and the device check (see precision_option.h). */
#include "run/precision_option.h"

#include "model/precision.h"
#include "run/cli.h"

cli_opt host_precision_option(const char **precision) {
    return (cli_opt){.name = "--precision", .kind = CLI_STRING, .target = precision, .meta = "P",
                     .help = "fp32, or fp16 (f16 weights, activations and gradients; f32 statistics and loss)"};
}

int host_parse_precision(const char *name, kiln_dtype *out) {
    if (precision_from_name(name, out) == 0) return 0;
    host_error("--precision %s: expected fp32 or fp16", name);
    return -1;
}

int host_check_precision(const kiln_ctx *ctx, kiln_dtype dtype) {
    if (kiln_supports_dtype(ctx, dtype)) return 0;
    host_error("--precision fp16: %s device %s cannot store f16 tensors (no 16-bit storage); "
               "use --precision fp32", kiln_backend_name(ctx), kiln_device_name(ctx));
    return -1;
}
