/* Host side of LayerNorm and RMSNorm (kiln_norm_args). One kernel family serves both:
 * RMSNorm is the same computation without centering (push flag rms, KILN_ABI_NORM_*).
 * The forward is norm_fwd; the backward is two dispatches, a row pass for dx (norm_bwd_dx)
 * and a column pass for dweight / dbias (norm_bwd_params). The data operands are f32 or
 * f16 (the "_f16" variants); mean and rstd are always f32. */
#include "push.h"
#include "vk_internal.h"

typedef struct { NORM_FWD_PUSH } norm_fwd_push;
typedef struct { NORM_BWD_DX_PUSH } norm_bwd_dx_push;
typedef struct { NORM_BWD_PARAMS_PUSH } norm_bwd_params_push;

/* An operand RMSNorm does not have (bias, mean, dbias): absent, whatever the caller passed. */
static kiln_ref unless_rms(u32 rms, kiln_ref r) { return rms == KILN_ABI_NORM_RMS ? (kiln_ref){.buf = NULL} : r; }

kiln_status vk_norm_fwd(void *dev, const kiln_norm_args *a) {
    vk_dev *d = vk_of(dev);
    u32 rms = (u32)a->rms;
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_norm_fwd, a->dtype, &shader);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    norm_fwd_push p = {.rows = vk_u32(a->rows), .cols = vk_u32(a->cols), .eps = a->eps, .rms = rms};
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p, .n_spec = 1};
    l.spec[0] = vk_row_wg(d, a->cols);
    int64_t n = a->rows * a->cols;
    l.ops[VK_OP(norm_fwd, x)] = vk_in(a->x, n, es);
    l.ops[VK_OP(norm_fwd, w)] = vk_in(a->weight, a->cols, es);
    l.ops[VK_OP(norm_fwd, bias)] = vk_in(unless_rms(rms, a->bias), a->cols, es);
    l.ops[VK_OP(norm_fwd, y)] = vk_out(a->y, n, es);
    l.ops[VK_OP(norm_fwd, mean)] = vk_out(unless_rms(rms, a->mean), a->rows, 4);
    l.ops[VK_OP(norm_fwd, rstd)] = vk_out(a->rstd, a->rows, 4);
    vk_grid_1d(d, (uint64_t)a->rows, l.groups);
    return vk_dispatch(d, &l);
}

kiln_status vk_norm_bwd(void *dev, const kiln_norm_args *a) {
    vk_dev *d = vk_of(dev);
    u32 rms = (u32)a->rms;
    int64_t n = a->rows * a->cols;
    uint32_t es = vk_elem(a->dtype);
    vk_shader_id shader;
    kiln_status s;
    if (vk_has(a->dx)) {
        if ((s = vk_variant(d, VK_SHADER_norm_bwd_dx, a->dtype, &shader))) return s;
        norm_bwd_dx_push p = {.rows = vk_u32(a->rows), .cols = vk_u32(a->cols), .rms = rms};
        vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p, .n_spec = 1};
        l.spec[0] = vk_row_wg(d, a->cols);
        l.ops[VK_OP(norm_bwd_dx, x)] = vk_in(a->x, n, es);
        l.ops[VK_OP(norm_bwd_dx, w)] = vk_in(a->weight, a->cols, es);
        l.ops[VK_OP(norm_bwd_dx, mean)] = vk_in(unless_rms(rms, a->mean), a->rows, 4);
        l.ops[VK_OP(norm_bwd_dx, rstd)] = vk_in(a->rstd, a->rows, 4);
        l.ops[VK_OP(norm_bwd_dx, dy)] = vk_in(a->dy, n, es);
        l.ops[VK_OP(norm_bwd_dx, dx)] = vk_out(a->dx, n, es);
        vk_grid_1d(d, (uint64_t)a->rows, l.groups);
        if ((s = vk_dispatch(d, &l))) return s;
    }
    kiln_ref dbias = unless_rms(rms, a->dbias);
    if (!vk_has(a->dweight) && !vk_has(dbias)) return KILN_OK;
    if ((s = vk_variant(d, VK_SHADER_norm_bwd_params, a->dtype, &shader))) return s;
    norm_bwd_params_push p = {.rows = vk_u32(a->rows), .cols = vk_u32(a->cols), .rms = rms};
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p, .n_spec = 2};
    vk_column_wg(d, &l.spec[0], &l.spec[1]);
    l.ops[VK_OP(norm_bwd_params, x)] = vk_in(a->x, n, es);
    l.ops[VK_OP(norm_bwd_params, mean)] = vk_in(unless_rms(rms, a->mean), a->rows, 4);
    l.ops[VK_OP(norm_bwd_params, rstd)] = vk_in(a->rstd, a->rows, 4);
    l.ops[VK_OP(norm_bwd_params, dy)] = vk_in(a->dy, n, es);
    l.ops[VK_OP(norm_bwd_params, dw)] = vk_out(a->dweight, a->cols, es);
    l.ops[VK_OP(norm_bwd_params, db)] = vk_out(dbias, a->cols, es);
    l.groups[0] = vk_div_up((uint64_t)a->cols, l.spec[0]);
    l.groups[1] = l.groups[2] = 1;
    return vk_dispatch(d, &l);
}
