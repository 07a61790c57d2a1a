/* Elementwise arithmetic: casts, axpby, binary ops with broadcasting. One work-item per
 * element. The casts take both types explicitly (the host uses them from the f32 program). */

/* f32 -> f16, round to nearest even (kiln_f32_to_f16) */
__kernel void cast_f32_f16(const __global float *src, ulong src_off, __global half *dst,
                           ulong dst_off, long n) {
    long i = get_global_id(0);
    if (i >= n) return;
    half_store(dst, dst_off + i, src[src_off + i]);
}

__kernel void cast_f16_f32(const __global half *src, ulong src_off, __global float *dst,
                           ulong dst_off, long n) {
    long i = get_global_id(0);
    if (i >= n) return;
    dst[dst_off + i] = half_load(src, src_off + i);
}

/* y = alpha' x + beta y, alpha' = alpha * num[0] / den[0] (each when present); x absent
 * means x = 1. beta == 0 overwrites y without reading it (it may hold NaN). x and y are
 * real_t; num and den are f32. */
__kernel void axpby(const __global real_t *x, ulong x_off, __global real_t *y, ulong y_off,
                    const __global float *num, ulong num_off, const __global float *den,
                    ulong den_off, long n, float alpha, float beta, int has_x, int has_num,
                    int has_den) {
    long i = get_global_id(0);
    if (i >= n) return;
    /* the same operation order as the CPU: alpha *= num; alpha /= den */
    if (has_num) alpha *= num[num_off];
    if (has_den) alpha /= den[den_off];
    float xv = has_x ? LOAD(x, x_off + i) : 1.0f;
    STORE(y, y_off + i, beta == 0.0f ? alpha * xv : alpha * xv + beta * LOAD(y, y_off + i));
}

/* x op y for an op of kiln_binary_op (KILN_ABI_BIN_* in engine/abi/kernel_abi.h) */
float binary_value(float x, float y, int op) {
    switch (op) {
    case KILN_ABI_BIN_ADD: return x + y;
    case KILN_ABI_BIN_SUB: return x - y;
    case KILN_ABI_BIN_MUL: return x * y;
    default: return x / y; /* KILN_ABI_BIN_DIV */
    }
}

/* out[i] = a[i] op b[i % nb] (all real_t), one kernel per op with the op a compile-time
 * constant: with the op chosen at run time PoCL did not vectorize the f16 variant (10x
 * slower than f32).
 * grid (nb, n / nb): element i = r * nb + j reads b[j], with no division, and without a
 * broadcast (nb == n) the grid is 1-D; an `i % nb` index was 20x slower in f16 too. */
#define BINARY(name, op)                                                                         \
    __kernel void name(const __global real_t *a, ulong a_off, const __global real_t *b,          \
                       ulong b_off, __global real_t *out, ulong out_off, long nb) {               \
        long j = get_global_id(0), r = get_global_id(1);                                         \
        if (j >= nb) return;                                                                     \
        long i = r * nb + j;                                                                     \
        STORE(out, out_off + i, binary_value(LOAD(a, a_off + i), LOAD(b, b_off + j), op));       \
    }
BINARY(binary_add, KILN_ABI_BIN_ADD)
BINARY(binary_sub, KILN_ABI_BIN_SUB)
BINARY(binary_mul, KILN_ABI_BIN_MUL)
BINARY(binary_div, KILN_ABI_BIN_DIV)
