/* CPU cross-entropy from logits: a fused, max-subtracted log-softmax with label smoothing
 * and ignore_index, forward and backward. The forward saves each row's log-sum-exp so the
 * backward rebuilds softmax(z) = exp(z - lse) without a second reduction.
 *
 * f16 logits are widened to f32 a block of rows at a time (the f32 code then runs on the
 * block), and dlogits rounded back once per call.
 *
 * The exponentials are cpu_expf (within 1 ulp, vectorized) of the f32 difference z - zmax,
 * summed in double: the log-sum-exp is then good to a few f32 ulp, as the f32 lse it is
 * stored in. */
#include <math.h>
#include <stdlib.h>

#include "cpu/cpu_internal.h"
#include "cpu/cpu_vmath.h"

/* Exponentials computed per pass into a stack buffer before they are summed. */
#define XENT_CHUNK 256

/* log sum_v exp(z_v) of one row, and sum_v z_v into *sum_z. */
CPU_VECTOR_CLONES static double row_lse(const float *z, int64_t vocab, double *sum_z) {
    const float zmax = cpu_max_f32(z, vocab);
    double sum_exp = 0;
    for (int64_t v0 = 0; v0 < vocab; v0 += XENT_CHUNK) {
        float e[XENT_CHUNK];
        const int64_t len = vocab - v0 < XENT_CHUNK ? vocab - v0 : XENT_CHUNK;
        for (int64_t v = 0; v < len; v++) e[v] = cpu_expf(z[v0 + v] - zmax);
        sum_exp += cpu_sum_f64(e, len);
    }
    *sum_z = cpu_sum_f64(z, vocab);
    return zmax + log(sum_exp);
}

/* dz_v += coef * (exp(z_v - lse) - uniform) for every v of one row. */
CPU_VECTOR_CLONES static void row_softmax_grad(float *dz, const float *z, int64_t vocab, float lse,
                                               float coef, float uniform) {
    for (int64_t v = 0; v < vocab; v++) dz[v] += coef * (cpu_expf(z[v] - lse) - uniform);
}

static int target_valid(int32_t t, int64_t vocab) { return t >= 0 && (int64_t)t < vocab; }

/* The loss terms of rows [0, rows) of f32 logits: adds them and the number of valid rows
 * into *total and *count, writes each row's log-sum-exp (0 for rows without a valid
 * target), and returns the first row whose target is out of range (rows when none). */
static int64_t xent_fwd_rows(const kiln_xent_args *a, const float *logits, const int32_t *targets, float *lse_out,
                             int64_t rows, double *total_out, double *count_out) {
    const int64_t vocab = a->vocab;
    const double s = a->smoothing;
    double total = 0, count = 0;
    int64_t bad_row = rows; /* the first row with an out-of-range target, or rows */
#pragma omp parallel for reduction(+ : total, count) reduction(min : bad_row) if (cpu_use_threads(rows * vocab, CPU_PAR_MIN / 4))
    for (int64_t r = 0; r < rows; r++) {
        const int32_t t = targets[r];
        lse_out[r] = 0.0f;
        if (t == a->ignore_index) continue;
        if (!target_valid(t, vocab)) {
            if (r < bad_row) bad_row = r;
            continue;
        }
        const float *z = logits + r * vocab;
        double sum_z;
        const double lse = row_lse(z, vocab, &sum_z);
        lse_out[r] = (float)lse;
        total += (1.0 - s) * (lse - z[t]) + s * (lse - sum_z / (double)vocab);
        count += 1;
    }
    *total_out += total;
    *count_out += count;
    return bad_row;
}

/* Rows of f16 logits per widened block: a few MiB of f32, however large the vocabulary and
 * the batch (the logits are the largest activation of a language model: a copy of all of
 * them in f32 would double their memory). */
static int64_t f16_block_rows(int64_t vocab) {
    const int64_t rows = ((int64_t)1 << 20) / (vocab > 0 ? vocab : 1);
    return rows > 0 ? rows : 1;
}

kiln_status cpu_xent_fwd(void *dev, const kiln_xent_args *a) {
    (void)dev;
    if (a->dtype != KILN_F32 && a->dtype != KILN_F16)
        return kiln_set_error(KILN_ERR_DTYPE, "cpu xent_fwd: logits must be f32 or f16, got %s", kiln_dtype_name(a->dtype));
    const int32_t *targets = CPU_PTR(a->targets, int32_t);
    float *lse_out = CPU_PTR(a->lse, float);
    const int64_t rows = a->rows, vocab = a->vocab;
    double total = 0, count = 0;
    int64_t bad_row = rows;
    if (a->dtype == KILN_F32) {
        bad_row = xent_fwd_rows(a, CPU_PTR(a->logits, float), targets, lse_out, rows, &total, &count);
    } else { /* f16: blocks of rows widened to f32, then the same code */
        const int64_t block = f16_block_rows(vocab);
        float *z = malloc((size_t)((rows < block ? rows : block) * vocab) * sizeof *z);
        if (!z && rows > 0) return kiln_set_error(KILN_ERR_MEMORY, "cpu xent_fwd: out of memory for f32 logits");
        const uint16_t *logits = CPU_PTR(a->logits, uint16_t);
        for (int64_t r0 = 0; r0 < rows && bad_row == rows; r0 += block) {
            const int64_t len = rows - r0 < block ? rows - r0 : block;
            kiln_f16_to_f32_n(logits + r0 * vocab, z, len * vocab);
            const int64_t bad = xent_fwd_rows(a, z, targets + r0, lse_out + r0, len, &total, &count);
            if (bad < len) bad_row = r0 + bad;
        }
        free(z);
    }
    if (bad_row < rows)
        return kiln_set_error(KILN_ERR_RANGE,
                              "cross_entropy: target %d at row %lld is outside [0, %lld) and is not "
                              "ignore_index (%d)",
                              targets[bad_row], (long long)bad_row, (long long)vocab, a->ignore_index);
    /* no valid row: the loss is 0, not 0/0 */
    CPU_PTR(a->loss, float)[0] = count > 0 ? (float)(total / count) : 0.0f;
    CPU_PTR(a->count, float)[0] = (float)count;
    return KILN_OK;
}

/* dlogits[r, v] += dloss / max(count, 1) * (softmax(z)[v] - (1-s)[v == t] - s / vocab). */
/* f16 logits and dlogits: blocks of rows widened to f32 (logits, and dlogits for its
 * "+="), the f32 kernel on the block, dlogits rounded back. Rows are independent; count
 * and dloss are scalars every block reads. */
static kiln_status xent_bwd_f16(void *dev, const kiln_xent_args *a) {
    const int64_t rows = a->rows, vocab = a->vocab, block = f16_block_rows(vocab);
    const size_t floats = (size_t)((rows < block ? rows : block) * vocab);
    float *z = malloc(floats * sizeof *z), *dz = malloc(floats * sizeof *dz);
    kiln_status s = z && dz ? KILN_OK : kiln_set_error(KILN_ERR_MEMORY, "cpu xent_bwd: out of memory for f32 logits");
    const uint16_t *logits = CPU_PTR(a->logits, uint16_t);
    uint16_t *dlogits = CPU_PTR(a->dlogits, uint16_t);
    struct kiln_buf zb = {.ptr = z, .size = floats * sizeof *z}, dzb = {dz, floats * sizeof *dz};
    for (int64_t r0 = 0; s == KILN_OK && r0 < rows; r0 += block) {
        const int64_t len = rows - r0 < block ? rows - r0 : block;
        kiln_f16_to_f32_n(logits + r0 * vocab, z, len * vocab);
        kiln_f16_to_f32_n(dlogits + r0 * vocab, dz, len * vocab);
        kiln_xent_args part = *a;
        part.dtype = KILN_F32;
        part.rows = len;
        part.logits = (kiln_ref){&zb, 0};
        part.dlogits = (kiln_ref){&dzb, 0};
        part.targets.off += (size_t)r0 * sizeof(int32_t);
        part.lse.off += (size_t)r0 * sizeof(float);
        s = cpu_xent_bwd(dev, &part);
        if (s == KILN_OK) kiln_f32_to_f16_n(dz, dlogits + r0 * vocab, len * vocab);
    }
    free(z);
    free(dz);
    return s;
}

kiln_status cpu_xent_bwd(void *dev, const kiln_xent_args *a) {
    if (a->dtype == KILN_F16) return xent_bwd_f16(dev, a);
    if (a->dtype != KILN_F32)
        return kiln_set_error(KILN_ERR_DTYPE, "cpu xent_bwd: logits must be f32 or f16, got %s", kiln_dtype_name(a->dtype));
    (void)dev;
    const float *logits = CPU_PTR(a->logits, float), *lse = CPU_PTR(a->lse, float);
    const int32_t *targets = CPU_PTR(a->targets, int32_t);
    float *dlogits = CPU_PTR(a->dlogits, float);
    const int64_t rows = a->rows, vocab = a->vocab;
    const float count = CPU_PTR(a->count, float)[0];
    const float coef = CPU_PTR(a->dloss, float)[0] / (count > 1.0f ? count : 1.0f);
    const float s = a->smoothing, uniform = a->smoothing / (float)vocab;
#pragma omp parallel for if (cpu_use_threads(rows * vocab, CPU_PAR_MIN / 4))
    for (int64_t r = 0; r < rows; r++) {
        const int32_t t = targets[r];
        /* ignored rows get nothing; an invalid target already failed the forward */
        if (t == a->ignore_index || !target_valid(t, vocab)) continue;
        const float *z = logits + r * vocab;
        float *dz = dlogits + r * vocab;
        const float lse_r = lse[r], dz_t = dz[t];
        row_softmax_grad(dz, z, vocab, lse_r, coef, uniform);
        /* the target's element, redone from its old value with the one-hot term (kept out
         * of the loop above so that it vectorizes) */
        dz[t] = dz_t + coef * (cpu_expf(z[t] - lse_r) - uniform - (1.0f - s));
    }
    return KILN_OK;
}
