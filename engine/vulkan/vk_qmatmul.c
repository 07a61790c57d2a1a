/* Host side of the product with a quantized matrix (kiln_qmatmul_args, shaders/qmatmul.comp):
 * one workgroup per weight row and tile of 8 rows of x, x, bias and y f32 or f16 (the "_f16"
 * builds), the activations used as given. It needs no optional feature, so it is the path
 * of every device without integer dot products and of KILN_VK_MIN_LIMITS mode; the others
 * round the activations to int8 as the CPU does (vk_qmatmul_dot.c). */
#include "push.h"
#include "vk_internal.h"

typedef struct { QMATMUL_PUSH } qmatmul_push;

kiln_status vk_qmatmul(void *dev, const kiln_qmatmul_args *a) {
    vk_dev *d = vk_of(dev);
    if (d->caps.int_dot) return vk_qmatmul_int8(d, a);
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_qmatmul, a->dtype, &shader);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    qmatmul_push p = {.m = vk_u32(a->m), .n = vk_u32(a->n), .k = vk_u32(a->k), .row_words = vk_u32(a->row_words),
                      .format = (u32)a->format};
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p, .n_spec = 1};
    l.spec[0] = vk_row_wg(d, a->k / 32);
    l.ops[0] = vk_in(a->x, a->m * a->k, es);
    l.ops[1] = vk_in(a->w, a->n * a->row_words, 4);
    l.ops[2] = vk_in(a->bias, a->n, es);
    l.ops[3] = vk_out(a->y, a->m * a->n, es);
    /* a workgroup per weight row and tile of 8 rows of x (shaders/qmatmul.comp's MT) */
    vk_grid_1d(d, (uint64_t)(a->n * ((a->m + 7) / 8)), l.groups);
    return vk_dispatch(d, &l);
}
