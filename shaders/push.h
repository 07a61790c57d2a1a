/* Push-constant layouts, shared by the shaders (GLSL) and engine/vulkan (C).
 *
 * Each kernel's block starts with one element offset per operand (binding), filled in by
 * vk_dispatch: operands are addressed as block + offset, and an absent optional operand
 * has offset KILN_ABSENT. All fields are 32-bit, so the C struct and the GLSL block
 * (std430 push-constant layout) agree; the whole block fits the 128-byte minimum.
 *
 * The operand count of each kernel, <KERNEL>_OPS, is declared here once: it sizes off[] on
 * both sides, the host passes it as vk_launch.n_ops (VK_OPS), and the shader binds exactly
 * that many buffers, 0 .. <KERNEL>_OPS - 1. The backend checks the last part when it starts
 * (vk_shaders.c reflects every embedded module); vk_dispatch refuses each launch of a
 * module that failed, and a launch whose n_ops differs from what its shader binds. */
#ifndef KILN_PUSH_H
#define KILN_PUSH_H

#if defined(VULKAN)
#define u32 uint
#define i32 int
#define f32 float
#else
#include <stdint.h>
typedef uint32_t u32;
typedef int32_t i32;
typedef float f32;
#endif

#define KILN_ABSENT 0xffffffffu

/* fill: dst; n elements, `bits` their 32-bit pattern, or with f16 = 1 a half that fills
 * whole words as (h | h << 16) */
#define FILL_OPS 1
#define FILL_PUSH u32 off[FILL_OPS]; u32 n; u32 f16; u32 bits;

/* cast: src, dst; mode KILN_ABI_VK_CAST_* */
#define CAST_OPS 2
#define CAST_PUSH u32 off[CAST_OPS]; u32 n; u32 mode;

/* axpby: x, y, num, den */
#define AXPBY_OPS 4
#define AXPBY_PUSH u32 off[AXPBY_OPS]; u32 n; f32 alpha; f32 beta;

/* binary: a, b, out; op KILN_ABI_BIN_* (add, sub, mul, div) */
#define BINARY_OPS 3
#define BINARY_PUSH u32 off[BINARY_OPS]; u32 n; u32 nb; u32 op;

/* sum_rows: x, out */
#define SUM_ROWS_OPS 2
#define SUM_ROWS_PUSH u32 off[SUM_ROWS_OPS]; u32 rows; u32 cols; f32 alpha;

/* activations (kind KILN_ABI_ACT_*): x, y (act_fwd); x, dy, dx (act_bwd) */
#define ACT_FWD_OPS 2
#define ACT_FWD_PUSH u32 off[ACT_FWD_OPS]; u32 n; u32 kind;
#define ACT_BWD_OPS 3
#define ACT_BWD_PUSH u32 off[ACT_BWD_OPS]; u32 n; u32 kind;

/* segmented reductions (kind KILN_ABI_VK_REDUCE_*, pass KILN_ABI_VK_REDUCE_PASS_*): x,
 * partial, out. Element (b, s, r) of x is at (b * segs + s) * inner + r; segment s sums
 * over b and r. */
#define REDUCE_OPS 3
#define REDUCE_PUSH u32 off[REDUCE_OPS]; u32 outer; u32 segs; u32 inner; u32 kind; u32 pass; u32 groups; f32 scale; u32 accumulate;

/* embedding forward: table, ids, out, err_flag; backward (f32): ids, dout, dtable. The
 * table operand holds rows v0 .. v0 + vn - 1 of the vocab rows (a table larger than one
 * binding is processed in windows); ids outside the window are another dispatch's. */
#define EMBED_FWD_OPS 4
#define EMBED_FWD_PUSH u32 off[EMBED_FWD_OPS]; u32 rows; u32 vocab; u32 dim; u32 v0; u32 vn;
#define EMBED_BWD_OPS 3
#define EMBED_BWD_PUSH u32 off[EMBED_BWD_OPS]; u32 rows; u32 vocab; u32 dim; u32 v0; u32 vn;
/* embedding backward in f16 (embed_bwd_f16): ids, dout, dtable, owner (i32 [vocab]), acc
 * (f32 [rows][cols] for columns c0 .. c0 + cols - 1). phase KILN_ABI_VK_EMBED_BWD_ADD: add
 * positions r0 .. r0 + rn - 1 (dout holds their rows) into acc; KILN_ABI_VK_EMBED_BWD_STORE:
 * round acc into dtable. */
#define EMBED_BWD_F16_OPS 5
#define EMBED_BWD_F16_PUSH u32 off[EMBED_BWD_F16_OPS]; u32 rows; u32 vocab; u32 dim; u32 c0; u32 cols; u32 v0; u32 vn; u32 r0; u32 rn; u32 phase;
/* embed_owner: ids, owner */
#define EMBED_OWNER_OPS 2
#define EMBED_OWNER_PUSH u32 off[EMBED_OWNER_OPS]; u32 rows; u32 vocab;

/* LayerNorm / RMSNorm (rms KILN_ABI_NORM_RMS or KILN_ABI_NORM_LAYER).
 * norm_fwd: x, weight, bias, y, mean, rstd */
/* qmatmul: x, w (32-bit words), bias, y (kiln_qmatmul_args) */
#define QMATMUL_OPS 4
#define QMATMUL_PUSH u32 off[QMATMUL_OPS]; u32 m; u32 n; u32 k; u32 row_words; u32 format;
/* qmatmul's int8 path (devices with integer dot products, vk_quant.c). qmatmul_qx: x, qx
 * (KILN_ABI_VK_QX_WORDS words per block of x); qmatmul_dot: qx, w, bias, y */
#define QMATMUL_QX_OPS 2
#define QMATMUL_QX_PUSH u32 off[QMATMUL_QX_OPS]; u32 blocks;
#define QMATMUL_DOT_OPS 4
#define QMATMUL_DOT_PUSH u32 off[QMATMUL_DOT_OPS]; u32 m; u32 n; u32 k; u32 row_words; u32 format;
#define NORM_FWD_OPS 6
#define NORM_FWD_PUSH u32 off[NORM_FWD_OPS]; u32 rows; u32 cols; f32 eps; u32 rms;
/* norm_bwd_dx, the backward's rows pass: x, weight, mean, rstd, dy, dx */
#define NORM_BWD_DX_OPS 6
#define NORM_BWD_DX_PUSH u32 off[NORM_BWD_DX_OPS]; u32 rows; u32 cols; u32 rms;
/* norm_bwd_params, the backward's columns pass: x, mean, rstd, dy, dweight, dbias */
#define NORM_BWD_PARAMS_OPS 6
#define NORM_BWD_PARAMS_PUSH u32 off[NORM_BWD_PARAMS_OPS]; u32 rows; u32 cols; u32 rms;

/* softmax forward: x, add, lengths, y */
#define SOFTMAX_FWD_OPS 4
#define SOFTMAX_FWD_PUSH u32 off[SOFTMAX_FWD_OPS]; u32 batch; u32 heads; u32 tq; u32 tk; f32 scale; f32 inv_temp; u32 causal;
/* softmax backward: y, dy, dx, dadd */
#define SOFTMAX_BWD_OPS 4
#define SOFTMAX_BWD_PUSH u32 off[SOFTMAX_BWD_OPS]; u32 rows; u32 tk; f32 dx_scale; f32 dadd_scale;

/* entropy backward: p, dout, dp */
#define ENTROPY_BWD_OPS 3
#define ENTROPY_BWD_PUSH u32 off[ENTROPY_BWD_OPS]; u32 n; u32 heads; u32 inner; f32 scale;

/* dropout: x, y (fwd) or dy, dx (bwd, accumulate) */
#define DROPOUT_OPS 2
#define DROPOUT_PUSH u32 off[DROPOUT_OPS]; u32 n; f32 prob; f32 keep; u32 seed_lo; u32 seed_hi; u32 stream_lo; u32 stream_hi; u32 accumulate;

/* cross-entropy rows pass: logits, targets, lse, err_flag, row_loss (2 floats per row) */
#define XENT_FWD_OPS 5
#define XENT_FWD_PUSH u32 off[XENT_FWD_OPS]; u32 rows; u32 vocab; f32 smoothing; i32 ignore_index;
/* cross-entropy final pass: row_loss, loss, count */
#define XENT_SUM_OPS 3
#define XENT_SUM_PUSH u32 off[XENT_SUM_OPS]; u32 rows;
/* cross-entropy backward: logits, targets, lse, count, dloss, dlogits */
#define XENT_BWD_OPS 6
#define XENT_BWD_PUSH u32 off[XENT_BWD_OPS]; u32 rows; u32 vocab; f32 smoothing; i32 ignore_index;

/* permute (swap axes 1 and 2): x, y */
#define PERMUTE_OPS 2
#define PERMUTE_PUSH u32 off[PERMUTE_OPS]; u32 d0; u32 d1; u32 d2; u32 d3; u32 accumulate;

/* copy_block: src, dst */
#define COPY_BLOCK_OPS 2
#define COPY_BLOCK_PUSH u32 off[COPY_BLOCK_OPS]; u32 outer; u32 inner; u32 src_axis; u32 dst_axis; u32 src_start; u32 dst_start; u32 len; u32 accumulate;

/* sinusoid: out */
#define SINUSOID_OPS 1
#define SINUSOID_PUSH u32 off[SINUSOID_OPS]; u32 positions; u32 channels;

/* check_finite: x, flag */
#define CHECK_FINITE_OPS 2
#define CHECK_FINITE_PUSH u32 off[CHECK_FINITE_OPS]; u32 n; u32 f16;

/* clip_coef: sumsq, coef, norm */
#define CLIP_COEF_OPS 3
#define CLIP_COEF_PUSH u32 off[CLIP_COEF_OPS]; f32 clip; f32 unscale;

/* adam: param, grad, m, v, half_copy, coef, skip */
#define ADAM_OPS 7
#define ADAM_PUSH u32 off[ADAM_OPS]; u32 n; u32 grad_f16; f32 lr; f32 beta1; f32 beta2; f32 eps; f32 weight_decay; f32 bc1; f32 bc2; u32 decoupled;

/* gemm_tiled: a, b, c, bias. Strides and leading dimensions in elements. */
#define GEMM_TILED_OPS 4
#define GEMM_TILED_PUSH u32 off[GEMM_TILED_OPS]; u32 m; u32 n; u32 k; u32 lda; u32 ldb; u32 ldc; u32 stride_a; u32 stride_b; u32 stride_c; f32 alpha; f32 beta; u32 batch;

/* gemm_pack and gemm_pack_texel: src, packed dst (texels). rows: M (A) or N (B); panels:
 * Mp / R or Np / C; kp: padded K; stride: source elements between batches (0: shared,
 * packed once) */
#define GEMM_PACK_OPS 2
#define GEMM_PACK_PUSH u32 off[GEMM_PACK_OPS]; u32 rows; u32 k; u32 ld; u32 stride; u32 panels; u32 kp;
/* gemm_packed and gemm_shuffle: packed a, packed b (texel offsets and strides), c, bias */
#define GEMM_PACKED_OPS 4
#define GEMM_PACKED_PUSH u32 off[GEMM_PACKED_OPS]; u32 m; u32 n; u32 mp; u32 np; u32 kp; u32 ldc; u32 stride_a; u32 stride_b; u32 stride_c; f32 alpha; f32 beta; u32 batch;

/* gemm_coopmat: packed a, packed b (f16, padded row-major), padded f32 product */
#define GEMM_COOPMAT_OPS 3
#define GEMM_COOPMAT_PUSH u32 off[GEMM_COOPMAT_OPS]; u32 mp; u32 np; u32 kp; u32 stride_a; u32 stride_b; u32 stride_c;
/* gemm_coopmat_pack: src (f16), dst (f16 words); op(X) is rows x cols, padded to rows_p x cols_p */
#define GEMM_COOPMAT_PACK_OPS 2
#define GEMM_COOPMAT_PACK_PUSH u32 off[GEMM_COOPMAT_PACK_OPS]; u32 rows; u32 cols; u32 ld; u32 stride; u32 rows_p; u32 cols_p; u32 trans;
/* gemm_coopmat_epilogue: padded product, c, bias */
#define GEMM_COOPMAT_EPILOGUE_OPS 3
#define GEMM_COOPMAT_EPILOGUE_PUSH u32 off[GEMM_COOPMAT_EPILOGUE_OPS]; u32 m; u32 n; u32 np; u32 ldc; u32 stride_p; u32 stride_c; f32 alpha; f32 beta;

/* The push blocks that engine/core/kernel_slots.def declares (KILN_VK_PUSH), generated
 * by cmake/kernel_slots.cmake. */
#include "kernel_push.h"

/* fma_peak (benchmark): out */
#define FMA_PEAK_OPS 1
#define FMA_PEAK_PUSH u32 off[FMA_PEAK_OPS]; u32 iters; u32 n;

#endif
