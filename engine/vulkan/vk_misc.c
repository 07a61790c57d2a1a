/* Host side of the sinusoidal table (kiln_sinusoid_args; f32, or f16 through the "_f16"
 * variant) and the inf/NaN check (kiln_finite_args; f16 as packed 32-bit words). */
#include "push.h"
#include "vk_internal.h"

typedef struct { SINUSOID_PUSH } sinusoid_push;
typedef struct { FINITE_PUSH } finite_push;

kiln_status vk_sinusoid(void *dev, const kiln_sinusoid_args *a) {
    vk_dev *d = vk_of(dev);
    char name[VK_SHADER_NAME];
    kiln_status s = vk_variant(d, "sinusoid", 0, a->dtype, name);
    if (s) return s;
    sinusoid_push p = {{0}, vk_u32(a->positions), vk_u32(a->channels)};
    vk_launch l = {.shader = name, .n_ops = 1, .push = &p, .push_bytes = sizeof p};
    l.ops[0] = vk_out(a->out, a->positions * a->channels, vk_elem(a->dtype));
    return vk_run_flat(d, &l, (uint64_t)(a->positions * a->channels));
}

kiln_status vk_check_finite(void *dev, const kiln_finite_args *a) {
    vk_dev *d = vk_of(dev);
    if (a->dtype != KILN_F32 && a->dtype != KILN_F16)
        return kiln_set_error(KILN_ERR_DTYPE, "check_finite: x must be f32 or f16, got %s", kiln_dtype_name(a->dtype));
    if (a->dtype == KILN_F16 && vk_require_f16(d, "check_finite")) return kiln_error_status();
    finite_push p = {{0}, vk_u32(a->n), (u32)(a->dtype == KILN_F16)};
    vk_launch l = {.shader = "check_finite", .n_ops = 2, .push = &p, .push_bytes = sizeof p};
    l.ops[0] = vk_in(a->x, a->n, a->dtype == KILN_F16 ? 2 : 4);
    l.ops[1] = vk_out(a->flag, 1, 4);
    return vk_run_flat(d, &l, (uint64_t)a->n);
}
