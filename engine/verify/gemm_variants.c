/* Forcing GEMM variants (kiln/verify.h): through the backend's slots. */
#include "core/internal.h"
#include "kiln/verify.h"

int kiln_gemm_variants(kiln_ctx *ctx, const char **names, int cap) {
    if (!ctx || !names || cap <= 0 || !ctx->be->gemm_variants) return 0;
    return ctx->be->gemm_variants(ctx->dev, names, cap);
}

kiln_status kiln_set_gemm_variant(kiln_ctx *ctx, const char *name) {
    if (!ctx) return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_set_gemm_variant: no context");
    if (!ctx->be->set_gemm_variant) {
        if (!name || !*name) return KILN_OK;
        return kiln_set_error(KILN_ERR_ARGUMENT, "%s: the backend has no GEMM variants to force", ctx->be->name);
    }
    return ctx->be->set_gemm_variant(ctx->dev, name);
}
