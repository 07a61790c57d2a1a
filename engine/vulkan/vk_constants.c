/* Host side of the constants family: fill (kiln_fill_args; f16 and i32 as packed 32-bit
 * words), the sinusoidal table (kiln_sinusoid_args; f32, or f16 through the "_f16"
 * variant) and the inf/NaN check (kiln_finite_args; f16 as packed 32-bit words). */
#include <string.h>

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
    l.ops[VK_OP(sinusoid, out)] = vk_out(a->out, a->positions * a->channels, vk_elem(a->dtype));
    return vk_run_flat(d, &l, (uint64_t)(a->positions * a->channels));
}

kiln_status vk_check_finite_piece(void *dev, const kiln_finite_args *a) {
    vk_dev *d = vk_of(dev);
    if (a->dtype != KILN_F32 && a->dtype != KILN_F16)
        return kiln_set_error(KILN_ERR_DTYPE, "check_finite: x must be f32 or f16, got %s", kiln_dtype_name(a->dtype));
    if (a->dtype == KILN_F16 && vk_require_f16(d, "check_finite")) return kiln_error_status();
    check_finite_push p = {.n = vk_u32(a->n), .f16 = a->dtype == KILN_F16};
    vk_launch l = {.shader = VK_SHADER_check_finite, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    l.ops[VK_OP(check_finite, x)] = vk_in(a->x, a->n, a->dtype == KILN_F16 ? 2 : 4);
    l.ops[VK_OP(check_finite, flag)] = vk_out(a->flag, 1, 4);
    return vk_run_flat(d, &l, (uint64_t)a->n);
}

typedef struct { FILL_PUSH } fill_push;

kiln_status vk_fill_piece(void *dev, const kiln_fill_args *a) {
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
    l.ops[VK_OP(fill, dst)] = vk_out(a->dst, a->n, vk_elem(a->dtype));
    /* f16 writes whole words: at most n/2 + 1 of them */
    return vk_run_flat(d, &l, a->dtype == KILN_F16 ? (uint64_t)a->n / 2 + 2 : (uint64_t)a->n);
}
