/* Host side of the memory and elementwise kernels: fill, cast, axpby, binary, sum_rows,
 * activations and dropout. fill and cast handle f16 as packed 32-bit words; the others
 * run their "_f16" shader variant for f16 data (vk_variant). Either way f16 needs a
 * device with 16-bit storage (vk_require_f16). */
#include <string.h>

#include "push.h"
#include "vk_internal.h"

typedef struct { FILL_PUSH } fill_push;
typedef struct { CAST_PUSH } cast_push;
typedef struct { AXPBY_PUSH } axpby_push;
typedef struct { BINARY_PUSH } binary_push;
typedef struct { SUM_ROWS_PUSH } sum_rows_push;
typedef struct { ACT_FWD_PUSH } act_fwd_push;
typedef struct { ACT_BWD_PUSH } act_bwd_push;
typedef struct { DROPOUT_PUSH } dropout_push;

kiln_status vk_fill(void *dev, const kiln_fill_args *a) {
    vk_dev *d = vk_of(dev);
    kiln_status s = a->dtype == KILN_F16 ? vk_require_f16(d, "fill") : KILN_OK;
    if (s) return s;
    fill_push p = {.n = vk_u32(a->n), .f16 = a->dtype == KILN_F16};
    if (a->dtype == KILN_F32) {
        memcpy(&p.bits, &a->value, 4);
    } else if (a->dtype == KILN_I32) {
        int32_t v = (int32_t)a->value;
        memcpy(&p.bits, &v, 4);
    } else {
        p.bits = kiln_f32_to_f16(a->value);
    }
    /* Whole 32-bit words of one repeated pattern (f32, i32; f16 from an even element over
     * an even count): vkCmdFillBuffer, which lavapipe runs as a memset (the shader stores
     * lane by lane, ~10x slower: zeroing GPT-2's gradients took a fifth of a step) and GPUs
     * on their transfer path. */
    uint64_t at = a->dst.buf ? a->dst.buf->offset + a->dst.off : 1, bytes = (uint64_t)a->n * vk_elem(a->dtype);
    if (a->n > 0 && at % 4 == 0 && bytes % 4 == 0)
        return vk_fill_words(d, a->dst, bytes, a->dtype == KILN_F16 ? p.bits * 0x10001u : p.bits);
    vk_launch l = {.shader = VK_SHADER_fill, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    l.ops[0] = vk_out(a->dst, a->n, vk_elem(a->dtype));
    /* f16 writes whole words: at most n/2 + 1 of them */
    return vk_run_flat(d, &l, a->dtype == KILN_F16 ? (uint64_t)a->n / 2 + 2 : (uint64_t)a->n);
}

kiln_status vk_cast(void *dev, const kiln_cast_args *a) {
    vk_dev *d = vk_of(dev);
    cast_push p = {.n = vk_u32(a->n)};
    kiln_dtype s = a->src_dtype, t = a->dst_dtype;
    if ((s == KILN_F16 || t == KILN_F16) && vk_require_f16(d, "cast")) return kiln_error_status();
    if (s == t)
        p.mode = s == KILN_F16 ? KILN_ABI_VK_CAST_COPY16 : KILN_ABI_VK_CAST_COPY32;
    else if (s == KILN_F32 && t == KILN_F16)
        p.mode = KILN_ABI_VK_CAST_F32_TO_F16;
    else if (s == KILN_F16 && t == KILN_F32)
        p.mode = KILN_ABI_VK_CAST_F16_TO_F32;
    else
        return kiln_set_error(KILN_ERR_DTYPE, "cast from %s to %s is not supported", kiln_dtype_name(s),
                              kiln_dtype_name(t));
    vk_launch l = {.shader = VK_SHADER_cast, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    l.ops[0] = vk_in(a->src, a->n, vk_elem(s));
    l.ops[1] = vk_out(a->dst, a->n, vk_elem(t));
    return vk_run_flat(d, &l, t == KILN_F16 ? (uint64_t)a->n / 2 + 2 : (uint64_t)a->n);
}

kiln_status vk_axpby(void *dev, const kiln_axpby_args *a) {
    vk_dev *d = vk_of(dev);
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_axpby, a->dtype, &shader);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    axpby_push p = {.n = vk_u32(a->n), .alpha = a->alpha, .beta = a->beta};
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    l.ops[0] = vk_in(a->x, a->n, es);
    l.ops[1] = vk_out(a->y, a->n, es);
    l.ops[2] = vk_in(a->num, 1, 4);
    l.ops[3] = vk_in(a->den, 1, 4);
    return vk_run_flat(d, &l, (uint64_t)a->n);
}

kiln_status vk_binary(void *dev, const kiln_binary_args *a) {
    vk_dev *d = vk_of(dev);
    if ((unsigned)a->op > KILN_BIN_DIV) /* the shader would take any other value for a division */
        return kiln_set_error(KILN_ERR_ARGUMENT, "vulkan binary: unknown op %d", (int)a->op);
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_binary, a->dtype, &shader);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    binary_push p = {.n = vk_u32(a->n), .nb = vk_u32(a->nb), .op = (u32)a->op}; /* KILN_ABI_BIN_* */
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    l.ops[0] = vk_in(a->a, a->n, es);
    l.ops[1] = vk_in(a->b, a->nb, es);
    l.ops[2] = vk_out(a->out, a->n, es);
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
    l.ops[0] = vk_in(a->x, a->rows * a->cols, es);
    l.ops[1] = vk_out(a->out, a->cols, es);
    vk_column_wg(d, &l.spec[0], &l.spec[1]);
    l.groups[0] = vk_div_up((uint64_t)a->cols, l.spec[0]);
    l.groups[1] = l.groups[2] = 1;
    return vk_dispatch(d, &l);
}

kiln_status vk_act_fwd(void *dev, const kiln_act_args *a) {
    vk_dev *d = vk_of(dev);
    if (!((a->kind >= KILN_ACT_GELU && a->kind <= KILN_ACT_RELU2) || a->kind == KILN_ACT_SQRT))
        return kiln_set_error(KILN_ERR_ARGUMENT, "vulkan act_fwd: unknown activation kind %d", a->kind);
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_act_fwd, a->dtype, &shader);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    act_fwd_push p = {.n = vk_u32(a->n), .kind = (u32)a->kind}; /* KILN_ABI_ACT_* */
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    l.ops[0] = vk_in(a->x, a->n, es);
    l.ops[1] = vk_out(a->y, a->n, es);
    return vk_run_flat(d, &l, (uint64_t)a->n);
}

kiln_status vk_act_bwd(void *dev, const kiln_act_args *a) {
    vk_dev *d = vk_of(dev);
    if (!(a->kind >= KILN_ACT_GELU && a->kind <= KILN_ACT_RELU2))
        return kiln_set_error(KILN_ERR_ARGUMENT, "vulkan act_bwd: activation kind %d has no backward", a->kind);
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_act_bwd, a->dtype, &shader);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    act_bwd_push p = {.n = vk_u32(a->n), .kind = (u32)a->kind}; /* KILN_ABI_ACT_* */
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    l.ops[0] = vk_in(a->x, a->n, es);
    l.ops[1] = vk_in(a->dy, a->n, es);
    l.ops[2] = vk_out(a->dx, a->n, es);
    return vk_run_flat(d, &l, (uint64_t)a->n);
}

/* The dropout kernel: forward y = mask(x), or backward dx += mask(dy) (accumulating). */
static kiln_status vk_dropout(vk_dev *d, const kiln_dropout_args *a, kiln_ref in, kiln_ref out, int backward) {
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_dropout, a->dtype, &shader);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    dropout_push p = {.n = vk_u32(a->n),
                      .prob = a->prob,
                      .keep = 1.0f - a->prob,
                      .seed_lo = (u32)a->seed,
                      .seed_hi = (u32)(a->seed >> 32),
                      .stream_lo = (u32)a->stream,
                      .stream_hi = (u32)(a->stream >> 32),
                      .accumulate = (u32)backward};
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    l.ops[0] = vk_in(in, a->n, es);
    l.ops[1] = vk_out(out, a->n, es);
    return vk_run_flat(d, &l, (uint64_t)a->n);
}

kiln_status vk_dropout_fwd(void *dev, const kiln_dropout_args *a) { return vk_dropout(vk_of(dev), a, a->x, a->y, 0); }
kiln_status vk_dropout_bwd(void *dev, const kiln_dropout_args *a) { return vk_dropout(vk_of(dev), a, a->dy, a->dx, 1); }
