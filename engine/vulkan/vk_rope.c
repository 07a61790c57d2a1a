/* Host side of rotary position embeddings (kiln_rope_args): one kernel, shaders/rope.comp,
 * forward (turn 1, x -> y) and backward (turn -1, dy -> dx, accumulating or not), one
 * invocation per (row, pair) for all the row's heads; its "_f16" build for f16 data. A tensor larger than one binding runs in pieces of whole rows
 * (each row is one position's heads), the piece's first row telling the kernel where the
 * positions stand. */
#include <math.h>

#include "push.h"
#include "vk_internal.h"

typedef struct { ROPE_PUSH } rope_push;

static kiln_status vk_rope(vk_dev *d, const kiln_rope_args *a, kiln_ref in, kiln_ref out, float turn, int accumulate) {
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_rope, a->dtype, &shader);
    if (s) return s;
    const uint32_t es = vk_elem(a->dtype);
    const int64_t rows = a->batch * a->seq, width = a->heads * a->dim;
    int64_t per;
    if ((s = vk_rows_per_piece(d, rows, width * es, &per))) return s;
    rope_push p = {.seq = vk_u32(a->seq),
                   .heads = vk_u32(a->heads),
                   .pairs = vk_u32(a->dim / 2),
                   .pos0 = vk_u32(a->pos0),
                   .log2_base = (float)log2((double)a->base),
                   .pairing = (u32)a->layout,
                   .turn = turn,
                   .accumulate = (u32)accumulate};
    for (int64_t r0 = 0; !s && r0 < rows; r0 += per) {
        const int64_t count = rows - r0 < per ? rows - r0 : per, n = count * width;
        p.rows = vk_u32(count);
        p.row0 = vk_u32(r0);
        vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
        l.ops[VK_OP(rope, x)] = vk_in(vk_ref_at(in, r0 * width * es), n, es);
        l.ops[VK_OP(rope, factors)] = vk_in(a->freq_factors, a->dim / 2, 4);
        l.ops[VK_OP(rope, y)] = vk_out(vk_ref_at(out, r0 * width * es), n, es);
        s = vk_run_flat(d, &l, (uint64_t)(count * (a->dim / 2)));
    }
    return s;
}

kiln_status vk_rope_fwd(void *dev, const kiln_rope_args *a) { return vk_rope(vk_of(dev), a, a->x, a->y, 1.0f, 0); }

kiln_status vk_rope_bwd(void *dev, const kiln_rope_args *a) {
    return vk_rope(vk_of(dev), a, a->dy, a->dx, -1.0f, a->accumulate);
}
