/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"). Kernels on
 * every backend compute the same function, so masks and inits match bit for bit. */
#include <math.h>
#include <stdlib.h>

#include "core/internal.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void kiln_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        uint32_t n3 = (uint32_t)p0;
        c0 = n0, c1 = n1, c2 = n2, c3 = n3;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

static void draw(uint64_t seed, uint64_t stream, uint64_t index, uint32_t out[4]) {
    const uint32_t ctr[4] = {(uint32_t)index, (uint32_t)(index >> 32), (uint32_t)stream,
                             (uint32_t)(stream >> 32)};
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    kiln_philox4x32_10(ctr, key, out);
}

uint32_t kiln_rng_u32(uint64_t seed, uint64_t stream, uint64_t index) {
    uint32_t out[4];
    draw(seed, stream, index, out);
    return out[0];
}

float kiln_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index) {
    return (float)(kiln_rng_u32(seed, stream, index) >> 8) * (1.0f / 16777216.0f);
}

float kiln_rng_normal(uint64_t seed, uint64_t stream, uint64_t index) {
    uint32_t out[4];
    draw(seed, stream, index, out);
    /* u1 in (0, 1] so the log is finite */
    double u1 = ((double)(out[0] >> 8) + 1.0) * (1.0 / 16777216.0);
    double u2 = (double)(out[1] >> 8) * (1.0 / 16777216.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

static kiln_status init_host(kiln_tensor *t, uint64_t seed, uint64_t stream, float a, float b,
                             int normal) {
    if (!t) return kiln_set_error(KILN_ERR_ARGUMENT, "init: tensor is NULL");
    if (t->dtype == KILN_I32)
        return kiln_set_error(KILN_ERR_DTYPE, "init: cannot fill an i32 tensor with floats");
    int64_t n = kiln_numel(t);
    float *host = malloc((size_t)n * sizeof(float));
    if (!host) return kiln_set_error(KILN_ERR_MEMORY, "init: out of host memory");
    for (int64_t i = 0; i < n; i++) {
        if (normal)
            host[i] = a + b * kiln_rng_normal(seed, stream, (uint64_t)i);
        else
            host[i] = a + (b - a) * kiln_rng_uniform(seed, stream, (uint64_t)i);
    }
    kiln_status s = kiln_upload_f32(t, host, n);
    free(host);
    return s;
}

kiln_status kiln_init_normal(kiln_tensor *t, uint64_t seed, uint64_t stream, float mean,
                             float std) {
    return init_host(t, seed, stream, mean, std, 1);
}

kiln_status kiln_init_uniform(kiln_tensor *t, uint64_t seed, uint64_t stream, float lo,
                              float hi) {
    return init_host(t, seed, stream, lo, hi, 0);
}
