/* Host side of the reductions to a few scalars: sum / sum of squares (kiln_reduce_args),
 * and the segmented reduction the attention entropy's forward also runs
 * (vk_attention_entropy.c). reduce.comp runs in two passes with a fixed split
 * (deterministic, no atomics): partial sums per workgroup, then their sum. */
#include "push.h"
#include "vk_internal.h"

typedef struct { REDUCE_PUSH } reduce_push;

kiln_status vk_reduce_segmented(vk_dev *d, kiln_ref x, kiln_dtype dtype, kiln_ref out, int64_t outer, int64_t segs,
                                int64_t inner, uint32_t kind, float scale, int accumulate) {
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_reduce, dtype, &shader);
    if (s) return s;
    uint32_t wg = vk_row_wg(d, outer * inner);
    uint64_t per_seg = (uint64_t)(outer * inner);
    /* enough workgroups to fill the device, each with at least a few elements per lane */
    uint64_t want = d->dclass == VK_CLASS_CPU ? 16 : 256;
    uint64_t groups = (per_seg + (uint64_t)wg * 4 - 1) / ((uint64_t)wg * 4);
    if (groups > want) groups = want;
    if (groups < 1) groups = 1;
    if (groups * (uint64_t)segs > d->caps.max_wg_count[0]) groups = 1;
    kiln_ref partial = {.buf = NULL};
    if (groups > 1 && (s = vk_scratch(d, (size_t)(groups * (uint64_t)segs) * 4, &partial))) return s;
    reduce_push p = {.outer = vk_u32(outer),
                     .segs = vk_u32(segs),
                     .inner = vk_u32(inner),
                     .kind = kind,
                     .pass = KILN_ABI_VK_REDUCE_PASS_PARTIAL,
                     .groups = (u32)groups,
                     .scale = scale,
                     .accumulate = (u32)accumulate};
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p, .n_spec = 1};
    l.spec[0] = wg;
    l.ops[VK_OP(reduce, x)] = vk_in(x, outer * segs * inner, vk_elem(dtype));
    l.ops[VK_OP(reduce, partial)] = vk_out(partial, (int64_t)groups * segs, 4);
    l.ops[VK_OP(reduce, out)] = vk_out(out, segs, 4);
    if (groups == 1) l.ops[VK_OP(reduce, partial)] = vk_out(out, segs, 4); /* unused: any valid binding */
    l.groups[0] = (uint32_t)groups;
    l.groups[1] = vk_u32(segs);
    l.groups[2] = 1;
    s = vk_dispatch(d, &l);
    if (!s && groups > 1) {
        p.pass = KILN_ABI_VK_REDUCE_PASS_TOTAL;
        l.ops[VK_OP(reduce, x)] = vk_in(partial, (int64_t)groups * segs, 4); /* unused in pass 1 */
        l.ops[VK_OP(reduce, partial)] = vk_in(partial, (int64_t)groups * segs, 4);
        l.groups[0] = vk_u32(segs);
        l.groups[1] = 1;
        s = vk_dispatch(d, &l);
    }
    if (partial.buf) vk_buf_release(d, partial.buf);
    return s;
}

kiln_status vk_reduce_sum(vk_dev *d, kiln_ref x, kiln_dtype dtype, kiln_ref out, int64_t n, int square, float scale,
                          int accumulate) {
    return vk_reduce_segmented(d, x, dtype, out, 1, 1, n, square ? KILN_ABI_VK_REDUCE_SQUARES : KILN_ABI_VK_REDUCE_SUM, scale,
                     accumulate);
}

