/* The Vulkan kernels' f16 variants against their own f32 build, through the backend table.
 *
 * Every f16 kernel loads f16 to f32, computes in f32 and rounds once on store; the f32
 * kernel runs the same shader source in f32. So on inputs that are f16 values to begin
 * with, each f16 output must be exactly the f16 rounding of the f32 output, and each f32
 * output (statistics, losses) exactly the f32 output: a bit-for-bit check of the storage
 * path (16-bit bindings at odd element offsets, "+=" into f16, f32 operands beside f16
 * ones, an f16 GEMM output with gaps between its rows) that the op tests' tolerances
 * against the CPU cannot make. Those op tests check the arithmetic itself.
 *
 * On a device without 16-bit storage (and in KILN_VK_MIN_LIMITS=1 mode) the backend must
 * say so (supports_f16) and every f16 kernel must fail with KILN_ERR_UNSUPPORTED and a
 * one-line message, those with a packed-word f16 path included, while the f32 kernels
 * still run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "testutil.h"

#ifdef KILN_HAVE_VULKAN

#define MAX_OPS 10

/* An operand: 'd' data (the kernel's dtype), 'f' always f32, 'i' i32; NULL-free values
 * uniform in [lo, hi) ('i': integers in [lo, hi]). out: downloaded and compared. */
typedef struct operand {
    char kind;
    int64_t n;
    float lo, hi;
    int out;
} operand;

/* Calls the kernel with operand refs r[] and data type dt. */
typedef kiln_status (*call_fn)(kiln_ctx *ctx, const kiln_ref *r, kiln_dtype dt);

typedef struct f16_case {
    const char *name;
    call_fn call;
    int n_ops;
    operand ops[MAX_OPS];
} f16_case;

#define BE(ctx) ((ctx)->be)
#define DEV(ctx) ((ctx)->dev)

/* ---- the kernels, one call each ---- */

static kiln_status axpby_beta0(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) {
    kiln_axpby_args a = {.x = r[0], .y = r[1], .num = r[2], .den = r[3], .n = 1001, .alpha = 0.7f, .beta = 0.0f, .dtype = dt};
    return BE(c)->axpby(DEV(c), &a);
}
static kiln_status axpby_beta(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) {
    kiln_axpby_args a = {.x = r[0], .y = r[1], .n = 1001, .alpha = -1.25f, .beta = 0.5f, .dtype = dt};
    return BE(c)->axpby(DEV(c), &a);
}
static kiln_status axpby_no_x(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) {
    kiln_axpby_args a = {.y = r[1], .num = r[2], .den = r[3], .n = 1001, .alpha = 1.0f, .beta = 1.0f, .dtype = dt};
    return BE(c)->axpby(DEV(c), &a);
}
static kiln_status binary_call(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt, kiln_binary_op op, int64_t nb) {
    kiln_binary_args a = {.a = r[0], .b = r[1], .out = r[2], .n = 222, .nb = nb, .op = op, .dtype = dt};
    return BE(c)->binary(DEV(c), &a);
}
static kiln_status add_bcast(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) { return binary_call(c, r, dt, KILN_BIN_ADD, 37); }
static kiln_status sub_full(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) { return binary_call(c, r, dt, KILN_BIN_SUB, 222); }
static kiln_status mul_bcast(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) { return binary_call(c, r, dt, KILN_BIN_MUL, 37); }
static kiln_status mul_scalar(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) { return binary_call(c, r, dt, KILN_BIN_MUL, 1); }
static kiln_status div_bcast(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) { return binary_call(c, r, dt, KILN_BIN_DIV, 37); }
static kiln_status div_scalar(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) { return binary_call(c, r, dt, KILN_BIN_DIV, 1); }
static kiln_status sum_rows(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) {
    kiln_sum_rows_args a = {.x = r[0], .out = r[1], .rows = 45, .cols = 37, .alpha = 0.5f, .dtype = dt};
    return BE(c)->sum_rows(DEV(c), &a);
}
static kiln_status act_fwd(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt, int kind) {
    kiln_act_args a = {.x = r[0], .y = r[1], .n = 999, .kind = kind, .dtype = dt};
    return BE(c)->act_fwd(DEV(c), &a);
}
static kiln_status act_bwd(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt, int kind) {
    kiln_act_args a = {.x = r[0], .dy = r[1], .dx = r[2], .n = 999, .kind = kind, .dtype = dt};
    return BE(c)->act_bwd(DEV(c), &a);
}
static kiln_status gelu_fwd(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) { return act_fwd(c, r, dt, KILN_ACT_GELU); }
static kiln_status silu_fwd(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) { return act_fwd(c, r, dt, KILN_ACT_SILU); }
static kiln_status sqrt_fwd(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) { return act_fwd(c, r, dt, KILN_ACT_SQRT); }
static kiln_status gelu_bwd(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) { return act_bwd(c, r, dt, KILN_ACT_GELU); }
static kiln_status relu2_bwd(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) { return act_bwd(c, r, dt, KILN_ACT_RELU2); }
static kiln_status reduce_sum(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) {
    kiln_reduce_args a = {.x = r[0], .out = r[1], .n = 5001, .alpha = 0.25f, .dtype = dt};
    return BE(c)->reduce(DEV(c), &a);
}
static kiln_status reduce_squares(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) {
    kiln_reduce_args a = {.x = r[0], .out = r[1], .n = 5001, .square = 1, .dtype = dt};
    return BE(c)->reduce(DEV(c), &a);
}
static kiln_status embed_fwd(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) {
    kiln_embed_args a = {.table = r[0], .ids = r[1], .out = r[2], .err_flag = r[3], .rows = 13, .vocab = 11, .dim = 37, .dtype = dt};
    return BE(c)->embed_fwd(DEV(c), &a);
}
static kiln_status embed_bwd(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) {
    kiln_embed_args a = {.ids = r[0], .dout = r[1], .dtable = r[2], .rows = 13, .vocab = 11, .dim = 37, .dtype = dt};
    return BE(c)->embed_bwd(DEV(c), &a);
}
static kiln_status norm_fwd(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt, int rms) {
    kiln_norm_args a = {.x = r[0],
                        .weight = r[1],
                        .bias = rms ? (kiln_ref){0} : r[2],
                        .y = r[3],
                        .mean = rms ? (kiln_ref){0} : r[4],
                        .rstd = r[5],
                        .rows = 7,
                        .cols = 300,
                        .eps = 1e-5f,
                        .dtype = dt,
                        .rms = rms};
    return BE(c)->norm_fwd(DEV(c), &a);
}
static kiln_status norm_bwd(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt, int rms) {
    kiln_norm_args a = {.x = r[0], .weight = r[1], .mean = rms ? (kiln_ref){0} : r[2], .rstd = r[3], .dy = r[4],
                        .dx = r[5], .dweight = r[6], .dbias = rms ? (kiln_ref){0} : r[7], .rows = 7, .cols = 300,
                        .dtype = dt, .rms = rms};
    return BE(c)->norm_bwd(DEV(c), &a);
}
static kiln_status layernorm_fwd(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) { return norm_fwd(c, r, dt, 0); }
static kiln_status rmsnorm_fwd(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) { return norm_fwd(c, r, dt, 1); }
static kiln_status layernorm_bwd(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) { return norm_bwd(c, r, dt, 0); }
static kiln_status rmsnorm_bwd(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) { return norm_bwd(c, r, dt, 1); }
static kiln_status softmax_fwd(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) {
    kiln_softmax_args a = {.x = r[0], .add = r[1], .lengths = r[2], .y = r[3], .batch = 2, .heads = 3, .tq = 5, .tk = 9,
                           .scale = 0.5f, .temperature = 1.3f, .causal = 1, .dtype = dt};
    return BE(c)->softmax_fwd(DEV(c), &a);
}
static kiln_status softmax_bwd(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) {
    kiln_softmax_args a = {.y = r[0], .dy = r[1], .dx = r[2], .dadd = r[3], .batch = 2, .heads = 3, .tq = 5, .tk = 9,
                           .scale = 0.5f, .temperature = 1.3f, .dtype = dt};
    return BE(c)->softmax_bwd(DEV(c), &a);
}
static kiln_status entropy_fwd(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) {
    kiln_entropy_args a = {.p = r[0], .out = r[1], .batch = 2, .heads = 3, .tq = 5, .tk = 9, .dtype = dt};
    return BE(c)->entropy_fwd(DEV(c), &a);
}
static kiln_status entropy_bwd(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) {
    kiln_entropy_args a = {.p = r[0], .dout = r[1], .dp = r[2], .batch = 2, .heads = 3, .tq = 5, .tk = 9, .dtype = dt};
    return BE(c)->entropy_bwd(DEV(c), &a);
}
static kiln_status dropout_fwd(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) {
    kiln_dropout_args a = {.x = r[0], .y = r[1], .n = 1003, .prob = 0.3f, .seed = 7, .stream = 0x100000003ull, .dtype = dt};
    return BE(c)->dropout_fwd(DEV(c), &a);
}
static kiln_status dropout_bwd(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) {
    kiln_dropout_args a = {.dy = r[0], .dx = r[1], .n = 1003, .prob = 0.3f, .seed = 7, .stream = 3, .dtype = dt};
    return BE(c)->dropout_bwd(DEV(c), &a);
}
static kiln_status xent_fwd(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) {
    kiln_xent_args a = {.logits = r[0], .targets = r[1], .loss = r[2], .count = r[3], .lse = r[4], .err_flag = r[5],
                        .rows = 9, .vocab = 101, .smoothing = 0.1f, .ignore_index = -1, .dtype = dt};
    return BE(c)->xent_fwd(DEV(c), &a);
}
static kiln_status xent_bwd(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) {
    kiln_xent_args a = {.logits = r[0], .targets = r[1], .lse = r[2], .count = r[3], .dloss = r[4], .dlogits = r[5],
                        .rows = 9, .vocab = 101, .smoothing = 0.1f, .ignore_index = -1, .dtype = dt};
    return BE(c)->xent_bwd(DEV(c), &a);
}
static kiln_status permute(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt, int acc) {
    kiln_permute_args a = {.x = r[0], .y = r[1], .d0 = 2, .d1 = 3, .d2 = 5, .d3 = 7, .accumulate = acc, .dtype = dt};
    return BE(c)->permute(DEV(c), &a);
}
static kiln_status permute_copy(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) { return permute(c, r, dt, 0); }
static kiln_status permute_acc(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) { return permute(c, r, dt, 1); }
static kiln_status copy_block(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt, int acc) {
    kiln_copy_block_args a = {.src = r[0], .dst = r[1], .outer = 3, .inner = 7, .src_axis = 10, .dst_axis = 12,
                              .src_start = 2, .dst_start = 5, .len = 6, .accumulate = acc, .dtype = dt};
    return BE(c)->copy_block(DEV(c), &a);
}
static kiln_status copy_block_copy(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) { return copy_block(c, r, dt, 0); }
static kiln_status copy_block_acc(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) { return copy_block(c, r, dt, 1); }
static kiln_status sinusoid(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) {
    kiln_sinusoid_args a = {.out = r[0], .positions = 17, .channels = 36, .dtype = dt};
    return BE(c)->sinusoid(DEV(c), &a);
}

/* C [2][37][33 + gap] = 0.75 A [2][37][70] B^T + 0.5 C (+ bias): f16 C goes through the
 * slot's f32 scratch (vk_gemm_f16_out.c); the gaps between rows and batches must survive */
#define GEMM_M 37
#define GEMM_N 29
#define GEMM_K 70
#define GEMM_LDC 33
#define GEMM_SC (GEMM_M * GEMM_LDC + 5)
static kiln_status gemm_f16_c(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt, float beta) {
    kiln_gemm_args a = {.a = r[0], .b = r[1], .c = r[2], .bias = r[3], .a_dtype = dt, .b_dtype = dt, .c_dtype = dt,
                        .m = GEMM_M, .n = GEMM_N, .k = GEMM_K, .batch = 2, .trans_b = 1, .lda = GEMM_K, .ldb = GEMM_K,
                        .ldc = GEMM_LDC, .stride_a = GEMM_M * GEMM_K, .stride_b = GEMM_N * GEMM_K, .stride_c = GEMM_SC,
                        .alpha = 0.75f, .beta = beta};
    return BE(c)->gemm(DEV(c), &a);
}
static kiln_status gemm_beta(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) { return gemm_f16_c(c, r, dt, 0.5f); }
static kiln_status gemm_beta0(kiln_ctx *c, const kiln_ref *r, kiln_dtype dt) { return gemm_f16_c(c, r, dt, 0.0f); }

#define D(count, low, high) {.kind = 'd', .n = (count), .lo = (low), .hi = (high)}
#define DOUT(count, low, high) {.kind = 'd', .n = (count), .lo = (low), .hi = (high), .out = 1}
#define F(count, low, high) {.kind = 'f', .n = (count), .lo = (low), .hi = (high)}
#define FOUT(count, low, high) {.kind = 'f', .n = (count), .lo = (low), .hi = (high), .out = 1}
#define I(count, low, high) {.kind = 'i', .n = (count), .lo = (low), .hi = (high)}
#define IOUT(count) {.kind = 'i', .n = (count), .out = 1}

static const f16_case cases[] = {
    {.name = "axpby_beta0", .call = axpby_beta0, .n_ops = 4,
     .ops = {D(1001, -2, 2), DOUT(1001, -1, 1), F(1, 0.5f, 2), F(1, 1, 3)}},
    {.name = "axpby_beta", .call = axpby_beta, .n_ops = 4,
     .ops = {D(1001, -2, 2), DOUT(1001, -1, 1), F(1, 0.5f, 2), F(1, 1, 3)}},
    {.name = "axpby_no_x", .call = axpby_no_x, .n_ops = 4,
     .ops = {D(1, 0, 0), DOUT(1001, -1, 1), F(1, 0.5f, 2), F(1, 1, 3)}},
    {.name = "add_broadcast", .call = add_bcast, .n_ops = 3, .ops = {D(222, -3, 3), D(37, -3, 3), DOUT(222, 0, 0)}},
    {.name = "sub", .call = sub_full, .n_ops = 3, .ops = {D(222, -3, 3), D(222, -3, 3), DOUT(222, 0, 0)}},
    {.name = "mul_broadcast", .call = mul_bcast, .n_ops = 3, .ops = {D(222, -3, 3), D(37, -3, 3), DOUT(222, 0, 0)}},
    {.name = "mul_scalar", .call = mul_scalar, .n_ops = 3, .ops = {D(222, -3, 3), D(1, -3, 3), DOUT(222, 0, 0)}},
    {.name = "div_broadcast", .call = div_bcast, .n_ops = 3, .ops = {D(222, -3, 3), D(37, 0.5f, 3), DOUT(222, 0, 0)}},
    {.name = "div_scalar", .call = div_scalar, .n_ops = 3, .ops = {D(222, -3, 3), D(1, -3, -0.5f), DOUT(222, 0, 0)}},
    {.name = "sum_rows", .call = sum_rows, .n_ops = 2, .ops = {D(45 * 37, -2, 2), DOUT(37, -1, 1)}},
    {.name = "gelu_fwd", .call = gelu_fwd, .n_ops = 2, .ops = {D(999, -4, 4), DOUT(999, 0, 0)}},
    {.name = "silu_fwd", .call = silu_fwd, .n_ops = 2, .ops = {D(999, -4, 4), DOUT(999, 0, 0)}},
    {.name = "sqrt_fwd", .call = sqrt_fwd, .n_ops = 2, .ops = {D(999, 0, 9), DOUT(999, 0, 0)}},
    {.name = "gelu_bwd", .call = gelu_bwd, .n_ops = 3, .ops = {D(999, -4, 4), D(999, -1, 1), DOUT(999, -1, 1)}},
    {.name = "relu2_bwd", .call = relu2_bwd, .n_ops = 3, .ops = {D(999, -4, 4), D(999, -1, 1), DOUT(999, -1, 1)}},
    {.name = "reduce_sum", .call = reduce_sum, .n_ops = 2, .ops = {D(5001, -1, 1), FOUT(1, 0, 0)}},
    {.name = "reduce_squares", .call = reduce_squares, .n_ops = 2, .ops = {D(5001, -1, 1), FOUT(1, 3, 3)}},
    {.name = "embed_fwd", .call = embed_fwd, .n_ops = 4,
     .ops = {D(11 * 37, -1, 1), I(13, 0, 10), DOUT(13 * 37, 0, 0), IOUT(1)}},
    {.name = "embed_bwd", .call = embed_bwd, .n_ops = 3, .ops = {I(13, 0, 4), D(13 * 37, -1, 1), DOUT(11 * 37, -1, 1)}},
    {.name = "embed_bwd_bad_ids", .call = embed_bwd, .n_ops = 3,
     .ops = {I(13, -2, 12), D(13 * 37, -1, 1), DOUT(11 * 37, -1, 1)}},
    {.name = "layernorm_fwd", .call = layernorm_fwd, .n_ops = 6,
     .ops = {D(2100, -3, 5), D(300, 0.5f, 1.5f), D(300, -1, 1), DOUT(2100, 0, 0), FOUT(7, 0, 0), FOUT(7, 0, 0)}},
    {.name = "rmsnorm_fwd", .call = rmsnorm_fwd, .n_ops = 6,
     .ops = {D(2100, -3, 5), D(300, 0.5f, 1.5f), D(1, 0, 0), DOUT(2100, 0, 0), F(1, 0, 0), FOUT(7, 0, 0)}},
    {.name = "layernorm_bwd", .call = layernorm_bwd, .n_ops = 8,
     .ops = {D(2100, -3, 3), D(300, 0.5f, 1.5f), F(7, -0.5f, 0.5f), F(7, 0.5f, 2), D(2100, -1, 1), DOUT(2100, -1, 1),
             DOUT(300, -1, 1), DOUT(300, -1, 1)}},
    {.name = "rmsnorm_bwd", .call = rmsnorm_bwd, .n_ops = 8,
     .ops = {D(2100, -3, 3), D(300, 0.5f, 1.5f), F(1, 0, 0), F(7, 0.5f, 2), D(2100, -1, 1), DOUT(2100, -1, 1),
             DOUT(300, -1, 1), D(1, 0, 0)}},
    {.name = "softmax_fwd", .call = softmax_fwd, .n_ops = 4,
     .ops = {D(270, -4, 4), D(270, -1, 1), I(2, 3, 9), DOUT(270, 0, 0)}},
    {.name = "softmax_bwd", .call = softmax_bwd, .n_ops = 4,
     .ops = {D(270, 0, 0.5f), D(270, -1, 1), DOUT(270, -1, 1), DOUT(270, -1, 1)}},
    {.name = "entropy_fwd", .call = entropy_fwd, .n_ops = 2, .ops = {D(270, 0, 0.5f), FOUT(3, 0, 0)}},
    {.name = "entropy_bwd", .call = entropy_bwd, .n_ops = 3, .ops = {D(270, 0, 0.5f), F(3, -1, 1), DOUT(270, -1, 1)}},
    {.name = "dropout_fwd", .call = dropout_fwd, .n_ops = 2, .ops = {D(1003, -2, 2), DOUT(1003, 0, 0)}},
    {.name = "dropout_bwd", .call = dropout_bwd, .n_ops = 2, .ops = {D(1003, -2, 2), DOUT(1003, -1, 1)}},
    {.name = "xent_fwd", .call = xent_fwd, .n_ops = 6,
     .ops = {D(909, -5, 5), I(9, -1, 100), FOUT(1, 0, 0), FOUT(1, 0, 0), FOUT(9, 0, 0), IOUT(1)}},
    {.name = "xent_bwd", .call = xent_bwd, .n_ops = 6,
     .ops = {D(909, -5, 5), I(9, -1, 100), F(9, 5, 6), F(1, 5, 9), F(1, 0.5f, 2), DOUT(909, -0.01f, 0.01f)}},
    {.name = "permute_copy", .call = permute_copy, .n_ops = 2, .ops = {D(210, -2, 2), DOUT(210, 0, 0)}},
    {.name = "permute_acc", .call = permute_acc, .n_ops = 2, .ops = {D(210, -2, 2), DOUT(210, -2, 2)}},
    {.name = "copy_block_copy", .call = copy_block_copy, .n_ops = 2, .ops = {D(210, -2, 2), DOUT(252, -1, 1)}},
    {.name = "copy_block_acc", .call = copy_block_acc, .n_ops = 2, .ops = {D(210, -2, 2), DOUT(252, -1, 1)}},
    {.name = "sinusoid", .call = sinusoid, .n_ops = 1, .ops = {DOUT(17 * 36, 0, 0)}},
    {.name = "gemm_beta_gaps", .call = gemm_beta, .n_ops = 4,
     .ops = {D(2 * GEMM_M * GEMM_K, -1, 1), D(2 * GEMM_N * GEMM_K, -1, 1), DOUT(2 * GEMM_SC, -1, 1), F(GEMM_N, -1, 1)}},
    {.name = "gemm_beta0_gaps", .call = gemm_beta0, .n_ops = 4,
     .ops = {D(2 * GEMM_M * GEMM_K, -1, 1), D(2 * GEMM_N * GEMM_K, -1, 1), DOUT(2 * GEMM_SC, -1, 1), F(GEMM_N, -1, 1)}},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

/* ---- running a case ---- */

/* The data operands (kind 'd') start at odd element offsets every other operand, so the
 * f16 bindings begin mid-word. */
static int64_t skip_of(const operand *o, int i) { return o->kind == 'd' ? (i & 1) : 0; }

/* Values of operand i (skip leading elements included), the same for both dtypes: data
 * values are f16 values, so the f32 run starts from exactly what the f16 run stores. */
static float *operand_values(const f16_case *c, int i) {
    const operand *o = &c->ops[i];
    int64_t n = o->n + skip_of(o, i);
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t j = 0; j < n; j++) {
        float u = kiln_rng_uniform(0xf16, (uint64_t)(100 * (c - cases) + i), (uint64_t)j);
        if (o->kind == 'i')
            v[j] = floorf(o->lo + u * (o->hi - o->lo + 1));
        else
            v[j] = o->lo + u * (o->hi - o->lo);
        if (o->kind == 'd') v[j] = kiln_f16_to_f32(kiln_f32_to_f16(v[j]));
    }
    return v;
}

/* Runs case c with data type dt; returns the status and, per output operand, its values
 * (malloc'd, skip removed) in outs[]. */
static kiln_status run_case(kiln_ctx *ctx, const f16_case *c, kiln_dtype dt, float **outs) {
    kiln_tensor *t[MAX_OPS];
    kiln_ref r[MAX_OPS];
    for (int i = 0; i < c->n_ops; i++) {
        const operand *o = &c->ops[i];
        int64_t skip = skip_of(o, i), shape[1] = {o->n + skip};
        kiln_dtype odt = o->kind == 'd' ? dt : o->kind == 'f' ? KILN_F32 : KILN_I32;
        float *v = operand_values(c, i);
        t[i] = kt_tensor(ctx, odt, 1, shape, v);
        free(v);
        r[i] = kiln_ref_of(t[i]);
        r[i].off += (size_t)skip * kiln_dtype_size(odt);
        outs[i] = NULL;
    }
    kiln_status s = c->call(ctx, r, dt);
    for (int i = 0; i < c->n_ops; i++) {
        const operand *o = &c->ops[i];
        if (!s && o->out) {
            int64_t skip = skip_of(o, i), n = o->n + skip;
            float *all = malloc((size_t)n * sizeof *all);
            if (o->kind == 'i') {
                int32_t *iv = malloc((size_t)n * sizeof *iv);
                ck_assert_int_eq(kiln_download(t[i], iv, (size_t)n * 4), KILN_OK);
                for (int64_t j = 0; j < n; j++) all[j] = (float)iv[j];
                free(iv);
            } else {
                ck_assert_msg(kiln_download_f32(t[i], all, n) == KILN_OK, "%s", kiln_error_message());
            }
            outs[i] = malloc((size_t)o->n * sizeof *outs[i]);
            memcpy(outs[i], all + skip, (size_t)o->n * sizeof *all);
            free(all);
        }
        kiln_tensor_free(t[i]);
    }
    return s;
}

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

START_TEST(f16_is_the_rounded_f32_result) {
    const f16_case *c = &cases[_i];
    kiln_ctx *ctx;
    ck_assert_msg(kiln_open("vulkan", &ctx) == KILN_OK, "%s", kiln_error_message());
    ck_assert_ptr_nonnull(BE(ctx)->supports_f16);
    float *ref[MAX_OPS], *got[MAX_OPS];
    kiln_status s = run_case(ctx, c, KILN_F32, ref);
    ck_assert_msg(s == KILN_OK, "%s in f32: %s", c->name, kiln_error_message());
    /* the kernel wrote something: some output differs from its initial values */
    int changed = 0;
    for (int i = 0; i < c->n_ops; i++) {
        const operand *o = &c->ops[i];
        if (!o->out || o->kind == 'i') continue;
        float *init = operand_values(c, i);
        for (int64_t j = 0; j < o->n && !changed; j++) changed = !same_bits(init[j + skip_of(o, i)], ref[i][j]);
        free(init);
    }
    ck_assert_msg(changed, "%s: the f32 kernel left its outputs as they were", c->name);

    if (!BE(ctx)->supports_f16(DEV(ctx))) {
        /* no 16-bit storage: the f16 variant must refuse, in one line naming the cause,
         * before touching its operands (all bound to one f32 buffer here: f16 tensors
         * cannot be made on this device) */
        kiln_tensor *x = kiln_tensor_1d(ctx, KILN_F32, 4096);
        kiln_ref r[MAX_OPS];
        for (int i = 0; i < MAX_OPS; i++) r[i] = kiln_ref_of(x);
        s = c->call(ctx, r, KILN_F16);
        const char *msg = kiln_error_message();
        ck_assert_msg(s == KILN_ERR_UNSUPPORTED, "%s in f16 without 16-bit storage: status %d (%s)", c->name, (int)s, msg);
        ck_assert_msg(strstr(msg, "16-bit storage") && !strchr(msg, '\n'), "%s: message '%s'", c->name, msg);
        kiln_tensor_free(x);
    } else {
        s = run_case(ctx, c, KILN_F16, got);
        ck_assert_msg(s == KILN_OK, "%s in f16: %s", c->name, kiln_error_message());
        for (int i = 0; i < c->n_ops; i++) {
            const operand *o = &c->ops[i];
            if (!o->out) continue;
            for (int64_t j = 0; j < o->n; j++) {
                /* data outputs: the f16 rounding of the f32 result; f32 / i32 outputs: equal */
                float want = o->kind == 'd' ? kiln_f16_to_f32(kiln_f32_to_f16(ref[i][j])) : ref[i][j];
                ck_assert_msg(same_bits(want, got[i][j]) || (isnan(want) && isnan(got[i][j])),
                              "%s: operand %d element %lld is %.9g in f16, want %.9g (f32 result %.9g)", c->name, i,
                              (long long)j, got[i][j], want, ref[i][j]);
            }
            free(got[i]);
        }
    }
    for (int i = 0; i < c->n_ops; i++) free(ref[i]);
    kiln_close(ctx);
}
END_TEST

/* The kernels that handle f16 as packed 32-bit words need no 16-bit storage, but follow
 * the device's one rule all the same: without supports_f16, f16 is refused everywhere. */
START_TEST(packed_word_kernels_follow_supports_f16) {
    kiln_ctx *ctx;
    ck_assert_msg(kiln_open("vulkan", &ctx) == KILN_OK, "%s", kiln_error_message());
    int f16 = BE(ctx)->supports_f16(DEV(ctx));
    kiln_tensor *x = kiln_tensor_1d(ctx, KILN_F32, 64), *flag = kiln_tensor_1d(ctx, KILN_I32, 1);
    ck_assert(x && flag);
    ck_assert_int_eq(kiln_fill(x, 1.0f), KILN_OK);
    ck_assert_int_eq(kiln_fill(flag, 0.0f), KILN_OK);
    kiln_ref r = kiln_ref_of(x);
    kiln_fill_args fill = {.dst = r, .n = 7, .dtype = KILN_F16, .value = 2.0f};
    kiln_cast_args cast = {.src = r, .dst = r, .n = 7, .src_dtype = KILN_F16, .dst_dtype = KILN_F16};
    kiln_finite_args finite = {.x = r, .flag = kiln_ref_of(flag), .n = 7, .dtype = KILN_F16};
    kiln_status s[3] = {BE(ctx)->fill(DEV(ctx), &fill), BE(ctx)->cast(DEV(ctx), &cast),
                        BE(ctx)->check_finite(DEV(ctx), &finite)};
    for (int i = 0; i < 3; i++)
        ck_assert_msg(s[i] == (f16 ? KILN_OK : KILN_ERR_UNSUPPORTED), "kernel %d: status %d with supports_f16 %d", i,
                      (int)s[i], f16);
    ck_assert_int_eq(BE(ctx)->sync(DEV(ctx)), KILN_OK);
    kiln_tensor_free(x);
    kiln_tensor_free(flag);
    kiln_close(ctx);
}
END_TEST

/* An f16 C whose f32 scratch would exceed one buffer: the slot splits it into row blocks
 * (C [4097][8193] f16 is 67 MB; in f32 it would pass the 128 MiB limit). k = 1 and small
 * dyadic values make every result exact, so the check is plain equality. */
START_TEST(gemm_f16_c_beyond_one_buffer) {
    kiln_ctx *ctx;
    ck_assert_msg(kiln_open("vulkan", &ctx) == KILN_OK, "%s", kiln_error_message());
    const int64_t m = 4097, n = 8193;
    if (!BE(ctx)->supports_f16(DEV(ctx)) || (int64_t)(BE(ctx)->max_buffer_bytes / 4) >= m * n) {
        kiln_close(ctx); /* nothing to split here */
        return;
    }
    uint16_t *av = malloc((size_t)m * 2), *bv = malloc((size_t)n * 2), *cv = malloc((size_t)(m * n) * 2);
    ck_assert(av && bv && cv);
    for (int64_t i = 0; i < m; i++) av[i] = kiln_f32_to_f16((float)(i % 5 - 2) / 4);
    for (int64_t j = 0; j < n; j++) bv[j] = kiln_f32_to_f16((float)(j % 7 - 3) / 8);
    for (int64_t e = 0; e < m * n; e++) cv[e] = kiln_f32_to_f16((float)(e % 11 - 5) / 16);
    kiln_tensor *A = kiln_tensor_2d(ctx, KILN_F16, m, 1), *B = kiln_tensor_2d(ctx, KILN_F16, 1, n);
    kiln_tensor *C = kiln_tensor_2d(ctx, KILN_F16, m, n);
    ck_assert_msg(A && B && C, "%s", kiln_error_message());
    ck_assert_int_eq(kiln_upload(A, av, (size_t)m * 2), KILN_OK);
    ck_assert_int_eq(kiln_upload(B, bv, (size_t)n * 2), KILN_OK);
    ck_assert_int_eq(kiln_upload(C, cv, (size_t)(m * n) * 2), KILN_OK);
    kiln_gemm_args g = {.a = kiln_ref_of(A), .b = kiln_ref_of(B), .c = kiln_ref_of(C), .a_dtype = KILN_F16,
                        .b_dtype = KILN_F16, .c_dtype = KILN_F16, .m = m, .n = n, .k = 1, .batch = 1, .lda = 1,
                        .ldb = n, .ldc = n, .alpha = 1.0f, .beta = 0.5f};
    ck_assert_msg(BE(ctx)->gemm(DEV(ctx), &g) == KILN_OK, "%s", kiln_error_message());
    uint16_t *got = malloc((size_t)(m * n) * 2);
    ck_assert_int_eq(kiln_download(C, got, (size_t)(m * n) * 2), KILN_OK);
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            int64_t e = i * n + j;
            float want = kiln_f16_to_f32(av[i]) * kiln_f16_to_f32(bv[j]) + 0.5f * kiln_f16_to_f32(cv[e]);
            if (got[e] != kiln_f32_to_f16(want) && bad++ == 0) first = e;
        }
    ck_assert_msg(bad == 0, "%lld of %lld outputs wrong, the first at row %lld column %lld", (long long)bad,
                  (long long)(m * n), (long long)(first / n), (long long)(first % n));
    free(av), free(bv), free(cv), free(got);
    kiln_tensor_free(A), kiln_tensor_free(B), kiln_tensor_free(C);
    kiln_close(ctx);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_loop_test(tc, f16_is_the_rounded_f32_result, 0, N_CASES);
    tcase_add_test(tc, gemm_f16_c_beyond_one_buffer);
    tcase_add_test(tc, packed_word_kernels_follow_supports_f16);
}

int main(void) {
    int skip = kt_require_backend("vulkan");
    return skip ? skip : kt_run_tests("vulkan_f16", "vulkan", add_tests);
}

#else
int main(void) {
    fprintf(stderr, "skipping: built without Vulkan\n");
    return 77;
}
#endif
