/* Host side of LayerNorm and RMSNorm (kiln_norm_args). One shader family serves both:
 * RMSNorm is the same computation without centering (push flag rms). The backward is two
 * dispatches: a row pass for dx and a column pass for dweight / dbias. The data operands
 * are f32 or f16 (the "_f16" variants); mean and rstd are always f32. */
#include "push.h"
#include "vk_internal.h"

typedef struct { NORM_FWD_PUSH } norm_fwd_push;
typedef struct { NORM_BWD_PUSH } norm_bwd_push;
typedef struct { NORM_COLS_PUSH } norm_cols_push;

static kiln_status norm_fwd(vk_dev *d, const kiln_norm_args *a, int rms) {
    char name[VK_SHADER_NAME];
    kiln_status s = vk_variant(d, "layernorm_fwd", 1, a->dtype, name);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    norm_fwd_push p = {{0}, vk_u32(a->rows), vk_u32(a->cols), a->eps, (u32)rms};
    vk_launch l = {.shader = name, .n_ops = 6, .push = &p, .push_bytes = sizeof p, .n_spec = 1};
    l.spec[0] = vk_row_wg(d, a->cols);
    int64_t n = a->rows * a->cols;
    l.ops[0] = vk_in(a->x, n, es);
    l.ops[1] = vk_in(a->weight, a->cols, es);
    l.ops[2] = vk_in(rms ? (kiln_ref){0, 0} : a->bias, a->cols, es);
    l.ops[3] = vk_out(a->y, n, es);
    l.ops[4] = vk_out(rms ? (kiln_ref){0, 0} : a->mean, a->rows, 4);
    l.ops[5] = vk_out(a->rstd, a->rows, 4);
    vk_grid_1d(d, (uint64_t)a->rows, l.groups);
    return vk_dispatch(d, &l);
}

static kiln_status norm_bwd(vk_dev *d, const kiln_norm_args *a, int rms) {
    int64_t n = a->rows * a->cols;
    uint32_t es = vk_elem(a->dtype);
    char name[VK_SHADER_NAME];
    kiln_status s;
    if (vk_has(a->dx)) {
        if ((s = vk_variant(d, "layernorm_bwd", 1, a->dtype, name))) return s;
        norm_bwd_push p = {{0}, vk_u32(a->rows), vk_u32(a->cols), (u32)rms};
        vk_launch l = {.shader = name, .n_ops = 6, .push = &p, .push_bytes = sizeof p, .n_spec = 1};
        l.spec[0] = vk_row_wg(d, a->cols);
        l.ops[0] = vk_in(a->x, n, es);
        l.ops[1] = vk_in(a->weight, a->cols, es);
        l.ops[2] = vk_in(rms ? (kiln_ref){0, 0} : a->mean, a->rows, 4);
        l.ops[3] = vk_in(a->rstd, a->rows, 4);
        l.ops[4] = vk_in(a->dy, n, es);
        l.ops[5] = vk_out(a->dx, n, es);
        vk_grid_1d(d, (uint64_t)a->rows, l.groups);
        if ((s = vk_dispatch(d, &l))) return s;
    }
    kiln_ref dbias = rms ? (kiln_ref){0, 0} : a->dbias;
    if (!vk_has(a->dweight) && !vk_has(dbias)) return KILN_OK;
    if ((s = vk_variant(d, "layernorm_params", 0, a->dtype, name))) return s;
    norm_cols_push p = {{0}, vk_u32(a->rows), vk_u32(a->cols), (u32)rms};
    vk_launch l = {.shader = name, .n_ops = 6, .push = &p, .push_bytes = sizeof p, .n_spec = 2};
    vk_column_wg(d, &l.spec[0], &l.spec[1]);
    l.ops[0] = vk_in(a->x, n, es);
    l.ops[1] = vk_in(rms ? (kiln_ref){0, 0} : a->mean, a->rows, 4);
    l.ops[2] = vk_in(a->rstd, a->rows, 4);
    l.ops[3] = vk_in(a->dy, n, es);
    l.ops[4] = vk_out(a->dweight, a->cols, es);
    l.ops[5] = vk_out(dbias, a->cols, es);
    l.groups[0] = vk_div_up((uint64_t)a->cols, l.spec[0]);
    l.groups[1] = l.groups[2] = 1;
    return vk_dispatch(d, &l);
}

kiln_status vk_norm_fwd(void *dev, const kiln_norm_args *a) { return norm_fwd(vk_of(dev), a, a->rms); }
kiln_status vk_norm_bwd(void *dev, const kiln_norm_args *a) { return norm_bwd(vk_of(dev), a, a->rms); }
