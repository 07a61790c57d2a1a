/* Host side of the data movement kernels: axis swap (kiln_permute_args), block copy
 * along a middle axis (kiln_copy_block_args) and the dtype cast (kiln_cast_args; f16 as
 * packed 32-bit words). f32 and f16 data run the plain and "_f16"
 * shaders; i32 runs the f32 one, whose copy moves 32-bit patterns unchanged. */
#include "push.h"
#include "vk_internal.h"

typedef struct { PERMUTE_PUSH } permute_push;
typedef struct { COPY_BLOCK_PUSH } copy_block_push;

/* The build of `kernel` that moves `dtype` elements; accumulation only for f32 and f16. */
static kiln_status mover(vk_dev *d, vk_shader_id kernel, kiln_dtype dtype, int accumulate, vk_shader_id *shader) {
    if (dtype == KILN_I32 && accumulate)
        return kiln_set_error(KILN_ERR_DTYPE, "vulkan %s: i32 elements can be copied, not accumulated",
                              kiln_vk_shaders[kernel].name);
    return vk_variant(d, kernel, dtype == KILN_I32 ? KILN_F32 : dtype, shader);
}

kiln_status vk_permute(void *dev, const kiln_permute_args *a) {
    vk_dev *d = vk_of(dev);
    vk_shader_id shader;
    kiln_status s = mover(d, VK_SHADER_permute, a->dtype, a->accumulate, &shader);
    if (s) return s;
    int64_t n = a->d0 * a->d1 * a->d2 * a->d3;
    permute_push p = {.d0 = vk_u32(a->d0),
                      .d1 = vk_u32(a->d1),
                      .d2 = vk_u32(a->d2),
                      .d3 = vk_u32(a->d3),
                      .accumulate = a->accumulate != 0};
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    uint32_t es = vk_elem(a->dtype);
    l.ops[VK_OP(permute, x)] = vk_in(a->x, n, es);
    l.ops[VK_OP(permute, y)] = vk_out(a->y, n, es);
    return vk_run_flat(d, &l, (uint64_t)n);
}

kiln_status vk_copy_block(void *dev, const kiln_copy_block_args *a) {
    vk_dev *d = vk_of(dev);
    vk_shader_id shader;
    kiln_status s = mover(d, VK_SHADER_copy_block, a->dtype, a->accumulate, &shader);
    if (s) return s;
    copy_block_push p = {.outer = vk_u32(a->outer),
                         .inner = vk_u32(a->inner),
                         .src_axis = vk_u32(a->src_axis),
                         .dst_axis = vk_u32(a->dst_axis),
                         .src_start = vk_u32(a->src_start),
                         .dst_start = vk_u32(a->dst_start),
                         .len = vk_u32(a->len),
                         .accumulate = a->accumulate != 0};
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    uint32_t es = vk_elem(a->dtype);
    /* the touched extent: from the first block's start to the last block's end */
    int64_t src_extent = ((a->outer - 1) * a->src_axis + a->src_start + a->len) * a->inner;
    int64_t dst_extent = ((a->outer - 1) * a->dst_axis + a->dst_start + a->len) * a->inner;
    l.ops[VK_OP(copy_block, src)] = vk_in(a->src, src_extent, es);
    l.ops[VK_OP(copy_block, dst)] = vk_out(a->dst, dst_extent, es);
    return vk_run_flat(d, &l, (uint64_t)(a->outer * a->len * a->inner));
}

typedef struct { CAST_PUSH } cast_push;

kiln_status vk_cast_piece(void *dev, const kiln_cast_args *a) {
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
    l.ops[VK_OP(cast, src)] = vk_in(a->src, a->n, vk_elem(s));
    l.ops[VK_OP(cast, dst)] = vk_out(a->dst, a->n, vk_elem(t));
    return vk_run_flat(d, &l, t == KILN_F16 ? (uint64_t)a->n / 2 + 2 : (uint64_t)a->n);
}
