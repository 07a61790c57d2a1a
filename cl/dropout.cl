/* Inverted dropout with the Philox4x32-10 generator of engine/core/rng.c, bit for bit:
 * element i is kept when kiln_rng_uniform(seed, stream, i) >= prob, with
 * kiln_rng_uniform = (kiln_rng_u32 >> 8) * 2^-24 and kiln_rng_u32 the first output word of
 * Philox(counter = (i, stream), key = seed). */

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

uint philox_first(ulong index, ulong stream, ulong seed) {
    uint c0 = (uint)index, c1 = (uint)(index >> 32), c2 = (uint)stream, c3 = (uint)(stream >> 32);
    uint k0 = (uint)seed, k1 = (uint)(seed >> 32);
    for (int round = 0; round < 10; round++) {
        /* the 64-bit products of rng.c, as 64-bit products: PoCL builds mul_hi out of 16-bit
         * pieces, which made dropout 4x slower */
        ulong p0 = (ulong)PHILOX_M0 * c0, p1 = (ulong)PHILOX_M1 * c2;
        uint hi0 = (uint)(p0 >> 32), lo0 = (uint)p0;
        uint hi1 = (uint)(p1 >> 32), lo1 = (uint)p1;
        uint n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c0 = n0;
        c1 = lo1;
        c2 = n2;
        c3 = lo0;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    return c0;
}

/* fwd: y = keep ? x / (1 - prob) : 0 (x and y real_t) */
__kernel void dropout_fwd(const __global real_t *x, ulong x_off, __global real_t *y, ulong y_off,
                          long n, float prob, ulong seed, ulong stream) {
    long i = get_global_id(0);
    if (i >= n) return;
    float u = (float)(philox_first((ulong)i, stream, seed) >> 8) * (1.0f / 16777216.0f);
    STORE(y, y_off + i, u >= prob ? LOAD(x, x_off + i) / (1.0f - prob) : 0.0f);
}

/* bwd: dx += keep ? dy / (1 - prob) : 0 */
__kernel void dropout_bwd(const __global real_t *dy, ulong dy_off, __global real_t *dx,
                          ulong dx_off, long n, float prob, ulong seed, ulong stream) {
    long i = get_global_id(0);
    if (i >= n) return;
    float u = (float)(philox_first((ulong)i, stream, seed) >> 8) * (1.0f / 16777216.0f);
    if (u >= prob) STORE(dx, dx_off + i, LOAD(dx, dx_off + i) + LOAD(dy, dy_off + i) / (1.0f - prob));
}
