/* The backend interface: one table of function pointers per backend (cpu, vulkan, opencl).
 *
 * The ops in engine/ops/ do the shape checks, allocate outputs and call these kernels; a
 * kernel sees only buffers, byte offsets and sizes, and trusts its arguments. Kernels are
 * recorded asynchronously: a backend may queue them and run them later, in order. Only
 * download() and sync() wait.
 *
 * Conventions every backend follows:
 *  - a kiln_ref with buf == NULL is an absent optional operand;
 *  - "+=" in a comment means the kernel accumulates into its output (backward kernels
 *    accumulate into gradients, which the engine zero-fills when it allocates them);
 *  - elements are f32 unless a dtype field says otherwise; ids/lengths/targets are i32;
 *  - a kernel returns KILN_OK or an error (after calling kiln_set_error).
 *
 * Precision (mixed-precision training, docs/design.md "Precision"): most structs end with
 * `dtype`, the storage type (KILN_F32 or KILN_F16) of every floating operand of the kernel
 * except those its comment marks "f32" (statistics, scalars, the loss). With f16 a kernel
 * loads to f32, computes and accumulates in f32, and rounds once on store (nearest even);
 * "+=" into an f16 output is load, add in f32, round. A device may use f16 arithmetic only
 * where the result is the same to f16 rounding. KILN_F32 is 0, so a zero-initialized
 * struct means f32 everywhere. */
#ifndef KILN_CORE_BACKEND_H
#define KILN_CORE_BACKEND_H

#include "abi/kernel_abi.h"
#include "kiln/kiln.h"

typedef struct kiln_buf kiln_buf; /* defined by each backend */

typedef struct kiln_ref {
    kiln_buf *buf;
    size_t off; /* bytes */
} kiln_ref;

/* v rounded up to a multiple of m (m > 0): tile padding, alignment. One helper for every
 * backend instead of a copy per file. */
static inline int64_t kiln_round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/* ---- argument structs, one per kernel slot or family of slots (core/kernel_slots.def) ---- */

/* y[m, n] = sum_k x[m, k] w[n, k] (+ bias[n]), w a matrix quantized in one of ggml's block
 * formats (kiln/quant.h): row r's blocks are the bytes at word r * row_words of w (rows
 * padded to whole 32-bit words), read as bytes, little-endian. x, bias and y are `dtype`
 * (f32 or f16); each block's products are summed in f32, scaled by its d (and, Q4_1, its
 * m times the sum of x), and the row's blocks summed in f32. A backend may first round the
 * activations to int8, in blocks with one f32 scale, as ggml's CPU backend does (32 values,
 * or 256 for the K formats: cpu/cpu_quant_dot.h), and sum integer products; its
 * qmatmul_rounds_x capability says so.
 *
 * qmatmul_t, the transposed product (the gradient of x): y[m, k] = sum_n x[m, n] w[n, k],
 * with x the output's gradient dy [m, n], y [m, k] and no bias; read from the blocks (a
 * kernel decodes each block it needs, never a dequantized copy of the matrix), f32
 * arithmetic on the values as given. */
typedef struct kiln_qmatmul_args {
    kiln_ref x, w, bias, y;
    int format; /* kiln_qformat */
    int64_t m, n, k, row_words;
    kiln_dtype dtype;
} kiln_qmatmul_args;


/* C[b] = alpha * op(A[b]) op(B[b]) + beta * C[b] (+ bias[n] on every row when present).
 * op(A) is MxK: A is stored row-major MxK with row stride lda, or KxM when trans_a.
 * op(B) is KxN: B is stored KxN with row stride ldb, or NxK when trans_b.
 * Batch b uses A + b*stride_a etc. (elements); a stride of 0 shares the operand.
 * beta == 0 means C is overwritten (its old contents, even NaN, are ignored). */
typedef struct kiln_gemm_args {
    kiln_ref a, b, c, bias;
    kiln_dtype a_dtype, b_dtype, c_dtype; /* f32 or f16; accumulation is f32 */
    int64_t m, n, k, batch;
    int trans_a, trans_b;
    int64_t lda, ldb, ldc;
    int64_t stride_a, stride_b, stride_c;
    float alpha, beta;
} kiln_gemm_args;

/* y = alpha * x + beta * y over n elements (beta == 0 overwrites y). x absent: y = beta*y.
 * When num is present, alpha is further multiplied by num[0]; when den is present, divided
 * by den[0] (device scalars: a loss seed, a norm), and x absent then means x = 1. */
typedef struct kiln_axpby_args {
    kiln_ref x, y, num, den;
    int64_t n;
    float alpha, beta;
    kiln_dtype dtype; /* x and y; num and den are f32 */
} kiln_axpby_args;

typedef enum kiln_binary_op { KILN_BIN_ADD = 0, KILN_BIN_SUB, KILN_BIN_MUL, KILN_BIN_DIV } kiln_binary_op;
/* out[i] = a[i] op b[i % nb] over n elements (nb divides n; nb == n is no broadcast, nb == 1
 * a scalar b). */
typedef struct kiln_binary_args {
    kiln_ref a, b, out;
    int64_t n, nb;
    kiln_binary_op op;
    kiln_dtype dtype; /* a, b and out */
} kiln_binary_args;

/* out[j] += alpha * sum_i x[i * cols + j] for j < cols, i < rows: the backward of a
 * broadcast (bias, position table). */
typedef struct kiln_sum_rows_args {
    kiln_ref x, out;
    int64_t rows, cols;
    float alpha;
    kiln_dtype dtype; /* x and out */
} kiln_sum_rows_args;

/* Activation forward: y = f(x). Backward: dx += dy * f'(x). kind is a kiln_act, or
 * KILN_ACT_SQRT (forward only). */
#define KILN_ACT_SQRT 100
typedef struct kiln_act_args {
    kiln_ref x, y, dy, dx;
    int64_t n;
    int kind;
    kiln_dtype dtype; /* x, y, dy, dx */
} kiln_act_args;

/* out[0] = alpha * sum x (overwrite), or with square: out[0] += sum x^2 (accumulate). */
typedef struct kiln_reduce_args {
    kiln_ref x, out;
    int64_t n;
    float alpha;
    int square; /* 1: accumulate the sum of squares */
    kiln_dtype dtype; /* x; out is f32 */
} kiln_reduce_args;

/* fwd: out[r, :] = table[ids[r], :] for r < rows; an id outside [0, vocab) makes the
 *      kernel return KILN_ERR_RANGE (or, on a device, set err_flag[0] = 1 when err_flag is
 *      present; the engine checks it on the next read).
 * bwd: dtable[ids[r], :] += dout[r, :]. */
typedef struct kiln_embed_args {
    kiln_ref table, ids, out, dout, dtable, err_flag;
    int64_t rows, vocab, dim;
    kiln_dtype dtype; /* table, out, dout, dtable */
} kiln_embed_args;

/* LayerNorm over rows of length cols. fwd: y, mean[rows], rstd[rows] (saved). weight and
 * bias are optional. bwd: dx += ..., dweight += ..., dbias += ... (each optional).
 * RMSNorm (rms = KILN_ABI_NORM_RMS) uses the same struct: no bias, no mean; rstd =
 * rsqrt(mean(x^2) + eps). The flag reaches every backend's kernels with this meaning. */
typedef struct kiln_norm_args {
    kiln_ref x, weight, bias, y, mean, rstd;
    kiln_ref dy, dx, dweight, dbias;
    int64_t rows, cols;
    float eps;
    kiln_dtype dtype; /* x, weight, bias, y, dy, dx, dweight, dbias; mean and rstd are f32 */
    int rms; /* KILN_ABI_NORM_RMS (1): RMSNorm; KILN_ABI_NORM_LAYER (0): LayerNorm */
} kiln_norm_args;

/* Masked softmax over [batch, heads, tq, tk]:
 *   z = (scale * x + add) / temperature, with masked keys removed; y = softmax(z).
 * Key j is masked for query i when causal and j > i + (tk - tq), or when lengths is
 * present and j >= lengths[b]. A row with every key masked is all zeros.
 * bwd: g = y * (dy - sum_j dy*y); dx += g * scale / temperature; dadd += g / temperature. */
typedef struct kiln_softmax_args {
    kiln_ref x, add, lengths, y;
    kiln_ref dy, dx, dadd;
    int64_t batch, heads, tq, tk;
    float scale, temperature;
    int causal;
    kiln_dtype dtype; /* x, add, y, dy, dx, dadd */
} kiln_softmax_args;

/* Fused attention (FlashAttention-2) over q [B, Tq, H, D], k and v [B, Tk, KVH, D] (row-major:
 * the heads interleaved as the projections give them), query head h reading kv head
 * h / (H / KVH). s_ij = scale * q_i . k_j (scale already divided by the temperature); key j is
 * masked when causal && j > i + (tk - tq), or lengths.buf && j >= lengths[b].
 * fwd: p = softmax_j(s) over unmasked keys, lse_i = log sum_j exp(s_ij) (f32 [B, H, Tq]; an
 *      all-masked row: lse = KILN_ATTN_LSE_EMPTY and y = 0), p'_ij = keep_ij ? p_ij / (1 - dropout) : 0,
 *      y_i = sum_j p'_ij v_j. keep_ij: kiln_rng_uniform(seed, stream, ((b*H+h)*tq+i)*tk+j) >=
 *      dropout (all kept when dropout == 0).
 * bwd_dq: delta_i = dy_i . y_i (written to delta, f32 [B, H, Tq]); dS_ij = p_ij (dP_ij - delta_i)
 *      with dP_ij = keep_ij/(1-dropout) * dy_i . v_j (p recomputed as exp(s_ij - lse_i));
 *      dq_i += scale * sum_j dS_ij k_j.
 * bwd_dkv (after bwd_dq, reads delta): dk_j += scale * sum over the group's query heads and
 *      rows i of dS_ij q_i; dv_j += sum_i p'_ij dy_i. No float atomics: each work-group owns
 *      its output rows. dq, dk, dv are ADDED to (gradient accumulators); a NULL ref skips it. */
typedef struct kiln_attention_args {
    kiln_ref q, k, v, lengths, y, lse;   /* forward (lengths: i32 [B], or a NULL ref) */
    kiln_ref dy, delta, dq, dk, dv;       /* backward */
    int64_t batch, heads, kv_heads, tq, tk, head_dim;
    float scale;                          /* scale / temperature */
    int causal;
    float dropout;
    uint64_t seed, stream;
    kiln_dtype dtype;                     /* q k v y dy dq dk dv; lse, delta f32 */
} kiln_attention_args;
/* The log-sum-exp of a query row whose keys are all masked. Kernels treat lse <
 * KILN_ATTN_LSE_EMPTY_BELOW as such a row (no inf arithmetic: OpenCL may compile with
 * relaxed math). */
#define KILN_ATTN_LSE_EMPTY (-3.0e38f)
#define KILN_ATTN_LSE_EMPTY_BELOW (-1.0e38f)

/* Attention entropy over p [batch, heads, tq, tk]:
 * fwd: out[h] = -(1 / (batch*tq)) sum_{b,i,j} p log p   (0 log 0 = 0)
 * bwd: dp[b,h,i,j] += dout[h] * -(log p + 1) / (batch*tq)  (0 where p == 0). */
typedef struct kiln_entropy_args {
    kiln_ref p, out, dout, dp;
    int64_t batch, heads, tq, tk;
    kiln_dtype dtype; /* p and dp; out and dout are f32 */
} kiln_entropy_args;

/* Dropout: keep element i when kiln_rng_uniform(seed, stream, i) >= prob.
 * fwd: y = keep ? x / (1 - prob) : 0.   bwd: dx += keep ? dy / (1 - prob) : 0. */
typedef struct kiln_dropout_args {
    kiln_ref x, y, dy, dx;
    int64_t n;
    float prob;
    uint64_t seed, stream;
    kiln_dtype dtype; /* x, y, dy, dx */
} kiln_dropout_args;

/* Cross-entropy from logits [rows, vocab] with targets [rows].
 * fwd: loss[0] = (1/count) sum over valid rows of
 *        (1 - smoothing) * (lse - z[t]) + smoothing * (lse - mean_v z[v]),
 *      count[0] = number of valid rows (target != ignore_index) as f32, lse[r] saved.
 *      A target outside [0, vocab) that is not ignore_index: KILN_ERR_RANGE / err_flag.
 * bwd: dlogits[r, v] += dloss[0] / max(count,1) * (softmax(z)[v] - (1-s)[v==t] - s/vocab),
 *      zero for ignored rows. */
typedef struct kiln_xent_args {
    kiln_ref logits, targets, loss, count, lse, err_flag;
    kiln_ref dloss, dlogits;
    int64_t rows, vocab;
    float smoothing;
    int ignore_index;
    kiln_dtype dtype; /* logits and dlogits; loss, count, lse and dloss are f32 */
} kiln_xent_args;

/* Swaps axes 1 and 2 of a [d0, d1, d2, d3] tensor: y[a, c, b, d] (+)= x[a, b, c, d]
 * (y is [d0, d2, d1, d3]). accumulate: += instead of =. */
typedef struct kiln_permute_args {
    kiln_ref x, y;
    int64_t d0, d1, d2, d3;
    int accumulate;
    kiln_dtype dtype; /* x and y: f32, f16 or i32 (a move of elements) */
} kiln_permute_args;

/* Rotary position embeddings over x [batch, seq, heads, dim] (kiln_rope in kiln/ops.h):
 * pair i of every head (channels (2i, 2i+1) for KILN_ABI_ROPE_ADJACENT, (i, i + dim/2) for
 * KILN_ABI_ROPE_HALF) of row t turns by the angle (pos0 + t) * base^(-2i/dim) / factors[i]
 * (factors f32 [dim/2], absent: 1).
 * fwd: y = R(angle) x.   bwd: dx (+)= R(-angle) dy, "+=" when accumulate, else overwritten. */
typedef struct kiln_rope_args {
    kiln_ref x, y, dy, dx, freq_factors;
    int64_t batch, seq, heads, dim, pos0;
    float base;
    int layout;     /* KILN_ABI_ROPE_ADJACENT or KILN_ABI_ROPE_HALF */
    int accumulate; /* bwd only */
    kiln_dtype dtype; /* x, y, dy, dx; freq_factors is f32 */
} kiln_rope_args;

/* Copies a block along a middle axis: viewing src as [outer, src_axis, inner] and dst as
 * [outer, dst_axis, inner], dst[o, dst_start + i, k] (+)= src[o, src_start + i, k] for
 * i < len. Concat and slice, forward and backward. */
typedef struct kiln_copy_block_args {
    kiln_ref src, dst;
    int64_t outer, inner, src_axis, dst_axis, src_start, dst_start, len;
    int accumulate;
    kiln_dtype dtype; /* src and dst: f32, f16 or i32; accumulate only for f32 and f16 */
} kiln_copy_block_args;

/* out[t, c] for t < positions, c < channels: the sinusoidal table (see ops.h). */
typedef struct kiln_sinusoid_args {
    kiln_ref out;
    int64_t positions, channels;
    kiln_dtype dtype; /* out */
} kiln_sinusoid_args;

/* flag[0] (i32) = 1 when any of x[0..n) is inf or NaN; untouched otherwise.
 * dtype f32 or f16. */
typedef struct kiln_finite_args {
    kiln_ref x, flag;
    int64_t n;
    kiln_dtype dtype;
} kiln_finite_args;

/* dst = (dst_dtype) src over n elements; f32 <-> f16 (round to nearest even), or a plain
 * copy when the dtypes are equal (any dtype). */
typedef struct kiln_cast_args {
    kiln_ref src, dst;
    int64_t n;
    kiln_dtype src_dtype, dst_dtype;
} kiln_cast_args;

/* Fill n elements of dtype with value (i32: (int32_t)value). */
typedef struct kiln_fill_args {
    kiln_ref dst;
    int64_t n;
    kiln_dtype dtype;
    float value;
} kiln_fill_args;

/* coef[0] = unscale * min(1, clip / (sqrt(sumsq[0]) * unscale + 1e-6)) when clip > 0,
 * else unscale; norm[0] = sqrt(sumsq[0]) * unscale (the unscaled gradient norm). */
typedef struct kiln_clip_args {
    kiln_ref sumsq, coef, norm;
    float clip, unscale;
} kiln_clip_args;

/* One Adam(W) update of n elements, skipped entirely when skip is present and nonzero:
 *   g = grad * coef[0] (coef absent: 1)  (+ wd * p when !decoupled)
 *   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
 *   p -= lr * (m / bc1) / (sqrt(v / bc2) + eps)  (+ lr * wd * p first when decoupled)
 *   half_copy = (f16) p when present.
 * bc1 = 1 - b1^t, bc2 = 1 - b2^t are computed by the engine. grad is f32 or f16. */
typedef struct kiln_adam_args {
    kiln_ref param, grad, m, v, half_copy, coef, skip;
    kiln_dtype grad_dtype;
    int64_t n;
    float lr, beta1, beta2, eps, weight_decay, bc1, bc2;
    int decoupled;
} kiln_adam_args;

/* ---- device measurement (kiln/probe.h; engine/core/probe.c runs the warm-ups, repeats,
 * statistics and result checks, the backends only record the work) ---- */

/* The FMA-ceiling kernel. Each of `items` work items (a thread on the CPU, an invocation or
 * work-item on a GPU) keeps chains x width independent accumulators (chains as many as the
 * backend needs to hide FMA latency, set on return), numbered k = 0, 1, ... and starting at
 * 1 + (k % 32) / 16. Each of `iters` rounds does a = fma(a, mul, add) on every accumulator
 * in `dtype` arithmetic, `width` lanes per instruction. Item i then writes out[i] (f32) =
 * the sum of its accumulators (any order, f32). out is optional: a backend writes results
 * nobody reads into scratch memory, so that the work cannot be optimized away.
 * items == 0 asks for as many items as fill the device (set on return). A dtype or width
 * the device has no arithmetic or vector type for: KILN_ERR_UNSUPPORTED, nothing recorded. */
typedef struct kiln_probe_fma_args {
    kiln_ref out;
    kiln_dtype dtype; /* KILN_F32 or KILN_F16 */
    int width;        /* 1, 2, 4, 8, 16 (32: f16 on 512-bit vectors) */
    int64_t items;    /* in/out */
    int64_t iters;
    float mul, add;
    int chains;       /* out: accumulators per item per lane */
} kiln_probe_fma_args;
/* What each item writes for `accumulators` (= chains x width) accumulators (core/probe.c). */
double kiln_probe_fma_expected(kiln_dtype dtype, int accumulators, float mul, float add, int64_t iters);

/* dst[0, bytes) = src[0, bytes) with the device's widest plain loads and stores (bytes and
 * both offsets multiples of 16): the memory-bandwidth ceiling. */
typedef struct kiln_probe_copy_args {
    kiln_ref src, dst;
    size_t bytes;
} kiln_probe_copy_args;

/* counter[0] (i32) += 1, `count` times, as `count` separate tiny kernels, each depending on
 * the previous one (as the kernels of a training step do): the cost of one more kernel. */
typedef struct kiln_probe_dispatch_args {
    kiln_ref counter;
    int count;
} kiln_probe_dispatch_args;

/* ---- the table ---- */
typedef struct kiln_backend {
    const char *name; /* "cpu", "vulkan", "opencl" */
    void (*close)(void *dev);
    const char *(*device_name)(void *dev);
    /* 1 when the device is a CPU in disguise (lavapipe, PoCL): "auto" then prefers the
     * native CPU backend, which is faster on the same cores. NULL means a GPU. */
    int (*device_is_cpu)(void *dev);

    /* memory: a buffer of at least `bytes`; contents undefined */
    kiln_status (*alloc)(void *dev, size_t bytes, kiln_buf **out);
    void (*free)(void *dev, kiln_buf *buf);
    kiln_status (*upload)(void *dev, kiln_ref dst, const void *src, size_t bytes);
    kiln_status (*download)(void *dev, kiln_ref src, void *dst, size_t bytes);
    kiln_status (*sync)(void *dev);
    /* an upper bound on one buffer's size (0: none) and the alignment of tensor offsets */
    size_t max_buffer_bytes;
    size_t offset_alignment;
    /* the device's memory (kiln_device_memory, kiln/context.h), before KILN_MEMORY_LIMIT */
    kiln_status (*memory_info)(void *dev, kiln_memory_info *out);

    /* kernels: one member per slot of core/kernel_slots.def */
#define KILN_SLOT(family, slot, args, output, output_dtype) kiln_status (*slot)(void *dev, const args *a);
#include "core/kernel_slots.def"

    /* GEMM kernels that `kiln verify` and the tests force one at a time (kiln/verify.h):
     * the names of those this device can run, into names[0..cap), and their count; NULL
     * when the backend has one GEMM path. set_gemm_variant forces one of them for later
     * products (NULL: the backend's own choice again). */
    int (*gemm_variants)(void *dev, const char **names, int cap);
    kiln_status (*set_gemm_variant)(void *dev, const char *name);

    /* capabilities */
    int (*supports_f16)(void *dev); /* 1 when the device can store f16 (16-bit storage); NULL means yes */
    /* 1 when qmatmul rounds activations to int8 blocks first (kiln_qmatmul_rounds_activations
     * in kiln/quant.h); NULL means it never does */
    int (*qmatmul_rounds_x)(void *dev);

    /* device measurement (kiln/probe.h). timer_begin starts timing the work recorded from
     * now on and returns the backend's state for it in *timer; timer_end waits for that work,
     * returns the device time it took (seconds on the device's clock, from the start of the
     * first timed command to the end of the last) and frees the state, even on failure. */
    kiln_status (*timer_begin)(void *dev, void **timer);
    kiln_status (*timer_end)(void *dev, void *timer, double *device_s);
    /* the driver's name and version, as the device reports them, into buf */
    void (*driver_info)(void *dev, char *buf, size_t size);
    kiln_status (*probe_fma)(void *dev, kiln_probe_fma_args *a);
    kiln_status (*probe_copy)(void *dev, const kiln_probe_copy_args *a);
    kiln_status (*probe_dispatch)(void *dev, const kiln_probe_dispatch_args *a);
} kiln_backend;

/* The host's physical RAM, and the process's cgroup memory limit (v2's memory.max, v1's
 * memory.limit_in_bytes; UINT64_MAX when none) (core/memory_info.c): the CPU backend's
 * memory, and a CPU-type device's. */
uint64_t kiln_host_ram(void);
uint64_t kiln_host_cgroup_limit(void);

/* Backend openers. `index` < 0 picks the best device. Each returns KILN_ERR_NO_BACKEND
 * (driver missing) or KILN_ERR_NO_DEVICE with a message, and on success the table and the
 * backend's device state. */
kiln_status kiln_cpu_open(int index, const kiln_backend **table, void **dev);
kiln_status kiln_cpu_list(void *out_file);
#ifdef KILN_HAVE_VULKAN
kiln_status kiln_vulkan_open(int index, const kiln_backend **table, void **dev);
kiln_status kiln_vulkan_list(void *out_file);
#endif
#ifdef KILN_HAVE_OPENCL
kiln_status kiln_opencl_open(int index, const kiln_backend **table, void **dev);
kiln_status kiln_opencl_list(void *out_file);
#endif

#endif
