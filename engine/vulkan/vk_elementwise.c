/* Host side of the elementwise kernels: axpby, binary and sum_rows. They run their "_f16"
 * shader variant for f16 data (vk_variant), which needs a device with 16-bit storage
 * (vk_require_f16). */
#include "push.h"
#include "vk_internal.h"

typedef struct { AXPBY_PUSH } axpby_push;
typedef struct { BINARY_PUSH } binary_push;
typedef struct { SUM_ROWS_PUSH } sum_rows_push;

kiln_status vk_axpby_piece(void *dev, const kiln_axpby_args *a) {
    vk_dev *d = vk_of(dev);
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_axpby, a->dtype, &shader);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    axpby_push p = {.n = vk_u32(a->n), .alpha = a->alpha, .beta = a->beta};
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    l.ops[VK_OP(axpby, x)] = vk_in(a->x, a->n, es);
    l.ops[VK_OP(axpby, y)] = vk_out(a->y, a->n, es);
    l.ops[VK_OP(axpby, num)] = vk_in(a->num, 1, 4);
    l.ops[VK_OP(axpby, den)] = vk_in(a->den, 1, 4);
    return vk_run_flat(d, &l, (uint64_t)a->n);
}

kiln_status vk_binary_piece(void *dev, const kiln_binary_args *a) {
    vk_dev *d = vk_of(dev);
    if ((unsigned)a->op > KILN_BIN_DIV) /* the shader would take any other value for a division */
        return kiln_set_error(KILN_ERR_ARGUMENT, "vulkan binary: unknown op %d", (int)a->op);
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_binary, a->dtype, &shader);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    binary_push p = {.n = vk_u32(a->n), .nb = vk_u32(a->nb), .op = (u32)a->op}; /* KILN_ABI_BIN_* */
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    l.ops[VK_OP(binary, a)] = vk_in(a->a, a->n, es);
    l.ops[VK_OP(binary, b)] = vk_in(a->b, a->nb, es);
    l.ops[VK_OP(binary, out)] = vk_out(a->out, a->n, es);
    return vk_run_flat(d, &l, (uint64_t)a->n);
}

/* Shape of the column-sum workgroups (sum_rows, norm_bwd_params): WX columns by WY row
 * lanes, within the device's invocation limit. */
void vk_column_wg(const vk_dev *d, uint32_t *wx, uint32_t *wy) {
    *wx = 32;
    *wy = d->dclass == VK_CLASS_CPU ? 2 : 8;
    while (*wx * *wy > d->caps.max_wg_invocations) *wy /= 2;
}

kiln_status vk_sum_rows(void *dev, const kiln_sum_rows_args *a) {
    vk_dev *d = vk_of(dev);
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_sum_rows, a->dtype, &shader);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    sum_rows_push p = {.rows = vk_u32(a->rows), .cols = vk_u32(a->cols), .alpha = a->alpha};
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p, .n_spec = 2};
    l.ops[VK_OP(sum_rows, x)] = vk_in(a->x, a->rows * a->cols, es);
    l.ops[VK_OP(sum_rows, out)] = vk_out(a->out, a->cols, es);
    vk_column_wg(d, &l.spec[0], &l.spec[1]);
    l.groups[0] = vk_div_up((uint64_t)a->cols, l.spec[0]);
    l.groups[1] = l.groups[2] = 1;
    return vk_dispatch(d, &l);
}
