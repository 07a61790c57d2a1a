/* Host side of the sinusoidal table (kiln_sinusoid_args; f32, or f16 through the "_f16"
 * variant) and the inf/NaN check (kiln_finite_args; f16 as packed 32-bit words). */
#include "push.h"
#include "vk_internal.h"

typedef struct { SINUSOID_PUSH } sinusoid_push;
typedef struct { CHECK_FINITE_PUSH } check_finite_push;

kiln_status vk_sinusoid(void *dev, const kiln_sinusoid_args *a) {
    vk_dev *d = vk_of(dev);
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_sinusoid, a->dtype, &shader);
    if (s) return s;
    sinusoid_push p = {.positions = vk_u32(a->positions), .channels = vk_u32(a->channels)};
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    l.ops[0] = vk_out(a->out, a->positions * a->channels, vk_elem(a->dtype));
    return vk_run_flat(d, &l, (uint64_t)(a->positions * a->channels));
}

kiln_status vk_check_finite(void *dev, const kiln_finite_args *a) {
    vk_dev *d = vk_of(dev);
    if (a->dtype != KILN_F32 && a->dtype != KILN_F16)
        return kiln_set_error(KILN_ERR_DTYPE, "check_finite: x must be f32 or f16, got %s", kiln_dtype_name(a->dtype));
    if (a->dtype == KILN_F16 && vk_require_f16(d, "check_finite")) return kiln_error_status();
    check_finite_push p = {.n = vk_u32(a->n), .f16 = a->dtype == KILN_F16};
    vk_launch l = {.shader = VK_SHADER_check_finite, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    l.ops[0] = vk_in(a->x, a->n, a->dtype == KILN_F16 ? 2 : 4);
    l.ops[1] = vk_out(a->flag, 1, 4);
    return vk_run_flat(d, &l, (uint64_t)a->n);
}
