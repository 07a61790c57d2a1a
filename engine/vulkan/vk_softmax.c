/* Host side of the masked softmax (kiln_softmax_args): one workgroup per row; f32 or f16
 * data (the "_f16" variants). */
#include "push.h"
#include "vk_internal.h"

typedef struct { SOFTMAX_FWD_PUSH } softmax_fwd_push;
typedef struct { SOFTMAX_BWD_PUSH } softmax_bwd_push;

kiln_status vk_softmax_fwd(void *dev, const kiln_softmax_args *a) {
    vk_dev *d = vk_of(dev);
    char name[VK_SHADER_NAME];
    kiln_status s = vk_variant(d, "softmax_fwd", 1, a->dtype, name);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    int64_t rows = a->batch * a->heads * a->tq, n = rows * a->tk;
    softmax_fwd_push p = {{0}, vk_u32(a->batch), vk_u32(a->heads), vk_u32(a->tq), vk_u32(a->tk), a->scale,
                          1.0f / a->temperature, (u32)(a->causal != 0)};
    vk_launch l = {.shader = name, .n_ops = 4, .push = &p, .push_bytes = sizeof p, .n_spec = 1};
    l.spec[0] = vk_row_wg(d, a->tk);
    l.ops[0] = vk_in(a->x, n, es);
    l.ops[1] = vk_in(a->add, n, es);
    l.ops[2] = vk_in(a->lengths, a->batch, 4);
    l.ops[3] = vk_out(a->y, n, es);
    vk_grid_1d(d, (uint64_t)rows, l.groups);
    return vk_dispatch(d, &l);
}

kiln_status vk_softmax_bwd(void *dev, const kiln_softmax_args *a) {
    vk_dev *d = vk_of(dev);
    if (!vk_has(a->dx) && !vk_has(a->dadd)) return KILN_OK;
    char name[VK_SHADER_NAME];
    kiln_status s = vk_variant(d, "softmax_bwd", 1, a->dtype, name);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    int64_t rows = a->batch * a->heads * a->tq, n = rows * a->tk;
    float inv_temp = 1.0f / a->temperature;
    softmax_bwd_push p = {{0}, vk_u32(rows), vk_u32(a->tk), a->scale * inv_temp, inv_temp};
    vk_launch l = {.shader = name, .n_ops = 4, .push = &p, .push_bytes = sizeof p, .n_spec = 1};
    l.spec[0] = vk_row_wg(d, a->tk);
    l.ops[0] = vk_in(a->y, n, es);
    l.ops[1] = vk_in(a->dy, n, es);
    l.ops[2] = vk_out(a->dx, n, es);
    l.ops[3] = vk_out(a->dadd, n, es);
    vk_grid_1d(d, (uint64_t)rows, l.groups);
    return vk_dispatch(d, &l);
}
