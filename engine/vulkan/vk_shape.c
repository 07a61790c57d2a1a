/* Host side of the data movement kernels: axis swap (kiln_permute_args) and block copy
 * along a middle axis (kiln_copy_block_args). f32 and f16 data run the plain and "_f16"
 * shaders; i32 runs the f32 one, whose copy moves 32-bit patterns unchanged. */
#include "push.h"
#include "vk_internal.h"

typedef struct { PERMUTE_PUSH } permute_push;
typedef struct { COPY_BLOCK_PUSH } copy_block_push;

/* The shader for moving `dtype` elements; accumulation only for f32 and f16. */
static kiln_status mover(vk_dev *d, const char *base, kiln_dtype dtype, int accumulate, char name[VK_SHADER_NAME]) {
    if (dtype == KILN_I32 && accumulate)
        return kiln_set_error(KILN_ERR_DTYPE, "vulkan %s: i32 elements can be copied, not accumulated", base);
    return vk_variant(d, base, 0, dtype == KILN_I32 ? KILN_F32 : dtype, name);
}

kiln_status vk_permute(void *dev, const kiln_permute_args *a) {
    vk_dev *d = vk_of(dev);
    char name[VK_SHADER_NAME];
    kiln_status s = mover(d, "permute", a->dtype, a->accumulate, name);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    int64_t n = a->d0 * a->d1 * a->d2 * a->d3;
    permute_push p = {{0}, vk_u32(a->d0), vk_u32(a->d1), vk_u32(a->d2), vk_u32(a->d3), (u32)(a->accumulate != 0)};
    vk_launch l = {.shader = name, .n_ops = 2, .push = &p, .push_bytes = sizeof p};
    l.ops[0] = vk_in(a->x, n, es);
    l.ops[1] = vk_out(a->y, n, es);
    return vk_run_flat(d, &l, (uint64_t)n);
}

kiln_status vk_copy_block(void *dev, const kiln_copy_block_args *a) {
    vk_dev *d = vk_of(dev);
    char name[VK_SHADER_NAME];
    kiln_status s = mover(d, "copy_block", a->dtype, a->accumulate, name);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    copy_block_push p = {{0},
                         vk_u32(a->outer),
                         vk_u32(a->inner),
                         vk_u32(a->src_axis),
                         vk_u32(a->dst_axis),
                         vk_u32(a->src_start),
                         vk_u32(a->dst_start),
                         vk_u32(a->len),
                         (u32)(a->accumulate != 0)};
    vk_launch l = {.shader = name, .n_ops = 2, .push = &p, .push_bytes = sizeof p};
    /* the touched extent: from the first block's start to the last block's end */
    int64_t src_extent = ((a->outer - 1) * a->src_axis + a->src_start + a->len) * a->inner;
    int64_t dst_extent = ((a->outer - 1) * a->dst_axis + a->dst_start + a->len) * a->inner;
    l.ops[0] = vk_in(a->src, src_extent, es);
    l.ops[1] = vk_out(a->dst, dst_extent, es);
    return vk_run_flat(d, &l, (uint64_t)(a->outer * a->len * a->inner));
}
