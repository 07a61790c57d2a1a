/* Copies that move data between layouts: the head split/merge permutation, block copies
 * along a middle axis (concat, slice), and the sinusoidal position table.
 * A copy moves the bits of each element (RAW_T: 4 bytes in the f32 variant, which also
 * serves i32 tensors, 2 in the f16 one); an accumulating copy adds in f32 (real_t). */

/* y[a, c, b, d] (+)= x[a, b, c, d]: x is [d0, d1, d2, d3], y is [d0, d2, d1, d3].
 * grid (d3, d2, d0 * d1): reads and writes are contiguous runs of d3, and one division per
 * work-item (64-bit divisions dominated the 1-D version on CPUs). */
__kernel void permute(const __global RAW_T *x, ulong x_off, __global RAW_T *y, ulong y_off,
                      long d1, long d2, long d3, int accumulate) {
    long d = get_global_id(0), c = get_global_id(1), t = get_global_id(2);
    if (d >= d3) return;
    long b;
    long a = divrem(t, d1, &b);
    long o = y_off + ((a * d2 + c) * d1 + b) * d3 + d;
    long i = x_off + ((a * d1 + b) * d2 + c) * d3 + d;
    if (accumulate)
        STORE((__global real_t *)y, o, LOAD((__global real_t *)y, o) + LOAD((const __global real_t *)x, i));
    else
        y[o] = x[i];
}

/* dst[o, dst_start + i, k] (+)= src[o, src_start + i, k] for o < outer, i < len, k < inner;
 * grid (inner, len, outer) */
__kernel void copy_block(const __global RAW_T *src, ulong src_off, __global RAW_T *dst,
                         ulong dst_off, long inner, long src_axis, long dst_axis, long src_start,
                         long dst_start, int accumulate) {
    long k = get_global_id(0), i = get_global_id(1), o = get_global_id(2);
    if (k >= inner) return;
    long si = src_off + (o * src_axis + src_start + i) * inner + k;
    long di = dst_off + (o * dst_axis + dst_start + i) * inner + k;
    if (accumulate)
        STORE((__global real_t *)dst, di, LOAD((__global real_t *)dst, di) + LOAD((const __global real_t *)src, si));
    else
        dst[di] = src[si];
}

/* out[t, 2i] = sin(t / 10000^(2i/C)), out[t, 2i+1] = cos(t / 10000^(2i/C)); grid (C, T).
 * In double where the device has it, as the CPU reference: at t in the thousands, a float
 * angle is already off by 1e-4. */
__kernel void sinusoid(__global real_t *out, ulong out_off, long channels) {
    long c = get_global_id(0), t = get_global_id(1);
    if (c >= channels) return;
    long i2 = c - (c & 1);
#if KILN_FP64
    double angle = (double)t / pow(10000.0, (double)i2 / (double)channels);
    STORE(out, out_off + t * channels + c, (float)((c & 1) ? cos(angle) : sin(angle)));
#else
    float angle = (float)t / pow(10000.0f, (float)i2 / (float)channels);
    STORE(out, out_off + t * channels + c, (c & 1) ? cos(angle) : sin(angle));
#endif
}
