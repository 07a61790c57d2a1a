/* Push-constant layouts, shared by the shaders (GLSL) and engine/vulkan (C).
 *
 * Each kernel's block starts with one element offset per operand (binding), filled in by
 * vk_dispatch: operands are addressed as block + offset, and an absent optional operand
 * has offset KILN_ABSENT. All fields are 32-bit, so the C struct and the GLSL block
 * (std430 push-constant layout) agree; the whole block fits the 128-byte minimum. */
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

/* fill: n elements of dtype; f16 fills whole words of (h | h << 16) */
#define FILL_PUSH u32 off[1]; u32 n; u32 dtype; u32 bits;

/* cast: mode 0 copy 32-bit, 1 copy f16, 2 f32 -> f16, 3 f16 -> f32 */
#define CAST_PUSH u32 off[2]; u32 n; u32 mode;

/* axpby: x, y, num, den */
#define AXPBY_PUSH u32 off[4]; u32 n; f32 alpha; f32 beta;

/* binary: a, b, out */
#define BINARY_PUSH u32 off[3]; u32 n; u32 nb; u32 op;

/* sum_rows: x, out */
#define SUM_ROWS_PUSH u32 off[2]; u32 rows; u32 cols; f32 alpha;

/* activations: x, y (fwd) or x, dy, dx (bwd) */
#define ACT_PUSH u32 off[3]; u32 n; u32 kind;

/* segmented reductions (sum, sum of squares, p log p): x, partial, out.
 * Element (b, s, r) of x is at (b * segs + s) * inner + r; segment s sums over b and r. */
#define REDUCE_PUSH u32 off[3]; u32 outer; u32 segs; u32 inner; u32 kind; u32 pass; u32 groups; f32 scale; u32 accumulate;

/* embedding: table, ids, out, err_flag (fwd) or ids, dout, dtable (bwd). The table
 * operand holds rows v0 .. v0 + vn - 1 of the vocab rows (a table larger than one binding
 * is processed in windows); ids outside the window are another dispatch's. */
#define EMBED_PUSH u32 off[4]; u32 rows; u32 vocab; u32 dim; u32 v0; u32 vn;
/* embedding backward in f16 (embed_bwd_f16): ids, dout, dtable, owner (i32 [vocab]), acc
 * (f32 [rows][cols] for columns c0 .. c0 + cols - 1). store = 0: add positions r0 .. r0 +
 * rn - 1 (dout holds their rows) into acc; store = 1: round acc into dtable. */
#define EMBED_BWD_F16_PUSH u32 off[5]; u32 rows; u32 vocab; u32 dim; u32 c0; u32 cols; u32 v0; u32 vn; u32 r0; u32 rn; u32 store;
/* embed_owner: ids, owner */
#define EMBED_OWNER_PUSH u32 off[2]; u32 rows; u32 vocab;

/* layernorm / rmsnorm forward: x, weight, bias, y, mean, rstd */
#define NORM_FWD_PUSH u32 off[6]; u32 rows; u32 cols; f32 eps; u32 rms;
/* backward, rows pass: x, weight, mean, rstd, dy, dx */
#define NORM_BWD_PUSH u32 off[6]; u32 rows; u32 cols; u32 rms;
/* backward, columns pass: x, mean, rstd, dy, dweight, dbias */
#define NORM_COLS_PUSH u32 off[6]; u32 rows; u32 cols; u32 rms;

/* softmax forward: x, add, lengths, y */
#define SOFTMAX_FWD_PUSH u32 off[4]; u32 batch; u32 heads; u32 tq; u32 tk; f32 scale; f32 inv_temp; u32 causal;
/* softmax backward: y, dy, dx, dadd */
#define SOFTMAX_BWD_PUSH u32 off[4]; u32 rows; u32 tk; f32 dx_scale; f32 dadd_scale;

/* entropy backward: p, dout, dp */
#define ENTROPY_BWD_PUSH u32 off[3]; u32 n; u32 heads; u32 inner; f32 scale;

/* dropout: x, y (fwd) or dy, dx (bwd, accumulate) */
#define DROPOUT_PUSH u32 off[2]; u32 n; f32 prob; f32 keep; u32 seed_lo; u32 seed_hi; u32 stream_lo; u32 stream_hi; u32 accumulate;

/* cross-entropy rows pass: logits, targets, lse, err_flag, row_loss (2 floats per row) */
#define XENT_FWD_PUSH u32 off[5]; u32 rows; u32 vocab; f32 smoothing; i32 ignore_index;
/* cross-entropy final pass: row_loss, loss, count */
#define XENT_SUM_PUSH u32 off[3]; u32 rows;
/* cross-entropy backward: logits, targets, lse, count, dloss, dlogits */
#define XENT_BWD_PUSH u32 off[6]; u32 rows; u32 vocab; f32 smoothing; i32 ignore_index;

/* permute (swap axes 1 and 2): x, y */
#define PERMUTE_PUSH u32 off[2]; u32 d0; u32 d1; u32 d2; u32 d3; u32 accumulate;

/* copy_block: src, dst */
#define COPY_BLOCK_PUSH u32 off[2]; u32 outer; u32 inner; u32 src_axis; u32 dst_axis; u32 src_start; u32 dst_start; u32 len; u32 accumulate;

/* sinusoid: out */
#define SINUSOID_PUSH u32 off[1]; u32 positions; u32 channels;

/* check_finite: x, flag */
#define FINITE_PUSH u32 off[2]; u32 n; u32 f16;

/* clip_coef: sumsq, coef, norm */
#define CLIP_PUSH u32 off[3]; f32 clip; f32 unscale;

/* adam: param, grad, m, v, half_copy, coef, skip */
#define ADAM_PUSH u32 off[7]; u32 n; u32 grad_f16; f32 lr; f32 beta1; f32 beta2; f32 eps; f32 weight_decay; f32 bc1; f32 bc2; u32 decoupled;

/* gemm: a, b, c, bias. Strides and leading dimensions in elements. */
#define GEMM_PUSH u32 off[4]; u32 m; u32 n; u32 k; u32 lda; u32 ldb; u32 ldc; u32 stride_a; u32 stride_b; u32 stride_c; f32 alpha; f32 beta; u32 batch;

/* gemm_pack: src, packed dst (texels). rows: M (A) or N (B); panels: Mp / R or Np / C; kp: padded K;
 * stride: source elements between batches (0: shared, packed once) */
#define GEMM_PACK_PUSH u32 off[2]; u32 rows; u32 k; u32 ld; u32 stride; u32 panels; u32 kp;
/* gemm_packed: packed a, packed b (texel offsets and strides), c, bias */
#define GEMM_PACKED_PUSH u32 off[4]; u32 m; u32 n; u32 mp; u32 np; u32 kp; u32 ldc; u32 stride_a; u32 stride_b; u32 stride_c; f32 alpha; f32 beta; u32 batch;

/* gemm_coopmat: packed a, packed b (f16, padded row-major), padded f32 product */
#define GEMM_COOPMAT_PUSH u32 off[3]; u32 mp; u32 np; u32 kp; u32 stride_a; u32 stride_b; u32 stride_c;
/* gemm_coopmat_pack: src (f16), dst (f16 words); op(X) is rows x cols, padded to rows_p x cols_p */
#define GEMM_COOPMAT_PACK_PUSH u32 off[2]; u32 rows; u32 cols; u32 ld; u32 stride; u32 rows_p; u32 cols_p; u32 trans;
/* gemm_coopmat_epilogue: padded product, c, bias */
#define GEMM_COOPMAT_EPILOGUE_PUSH u32 off[3]; u32 m; u32 n; u32 np; u32 ldc; u32 stride_p; u32 stride_c; f32 alpha; f32 beta;

/* fma_peak (benchmark): out */
#define FMA_PEAK_PUSH u32 off[1]; u32 iters; u32 n;

#endif
