/* The facts the host code and the kernels must agree on, declared once for the three
 * languages that read them: C (engine/), GLSL (shaders/, through glslc -I) and OpenCL C
 * (cl/, prepended to every program's source when it is compiled at run time).
 *
 * So that all three can read it, this file holds only comments and `#define NAME <integer
 * literal>` (with a u suffix where GLSL needs an unsigned constant): no enums, typedefs,
 * casts or expressions that one of the languages lacks. The public enums that carry the
 * same values (kiln_act, kiln_binary_op, ...) are checked against these at compile time in
 * engine/core/abi_check.c. */
#ifndef KILN_KERNEL_ABI_H
#define KILN_KERNEL_ABI_H

/* ---- activation kinds (kiln_act in kiln/ops.h; SQRT is internal, forward only) ---- */
#define KILN_ABI_ACT_GELU 0  /* tanh approximation, as GPT-2 */
#define KILN_ABI_ACT_RELU 1
#define KILN_ABI_ACT_SILU 2
#define KILN_ABI_ACT_RELU2 3 /* squared ReLU */
#define KILN_ABI_ACT_SQRT 100

/* ---- elementwise binary ops (kiln_binary_op in engine/core/backend.h) ---- */
#define KILN_ABI_BIN_ADD 0
#define KILN_ABI_BIN_SUB 1
#define KILN_ABI_BIN_MUL 2
#define KILN_ABI_BIN_DIV 3 /* a / b: IEEE division, b == 0 gives inf or NaN */

/* ---- normalization: one kernel family serves LayerNorm and RMSNorm; the flag `rms` is 1
 * for RMSNorm (no centering, no bias, no saved mean) and 0 for LayerNorm, on every backend */
/* Block formats of quantized matrices (kiln_qformat, kiln/quant.h; core/quant.c checks
 * they agree): the qmatmul kernels branch on them. Blocks of 32 values: Q8_0 34 bytes, Q4_0
 * 18, Q4_1 20, Q5_0 22, Q5_1 24; super-blocks of 256: Q4_K 144, Q5_K 176, Q6_K 210 (quant.h
 * gives the layouts). Blocks are not word aligned inside a row. */
#define KILN_ABI_Q8_0 0
#define KILN_ABI_Q4_0 1
#define KILN_ABI_Q4_1 2
#define KILN_ABI_Q5_0 3
#define KILN_ABI_Q5_1 4
#define KILN_ABI_Q4_K 5
#define KILN_ABI_Q5_K 6
#define KILN_ABI_Q6_K 7

#define KILN_ABI_NORM_LAYER 0
#define KILN_ABI_NORM_RMS 1

/* ---- rotary position embeddings (kiln_rope_layout in kiln/ops.h): which channels pair up */
#define KILN_ABI_ROPE_ADJACENT 0 /* (2i, 2i + 1) */
#define KILN_ABI_ROPE_HALF 1     /* (i, i + D/2) */

/* ---- fused attention (kiln_attention): the widest head every backend's kernels take
 * (GPU kernels use smaller tiles above 128) ---- */
#define KILN_ABI_ATTN_HEAD_DIM_MAX 256

/* ---- element types (kiln_dtype in kiln/types.h), for kernels that take an operand's dtype
 * as an argument at run time (OpenCL: the GEMM, check_finite, Adam's gradient) ---- */
#define KILN_ABI_DTYPE_F32 0
#define KILN_ABI_DTYPE_F16 1
#define KILN_ABI_DTYPE_I32 2

/* ---- tile sizes and work-group shapes the host must know to size its grids ---- */
/* (each backend's section below names the kernel that uses the value) */

/* ---- Vulkan ---- */
/* The values only engine/vulkan and shaders/ share (through shaders/common.glsl). */

/* cast.comp's modes (vk_cast_piece, vk_shape.c) */
#define KILN_ABI_VK_CAST_COPY32 0     /* 32-bit elements copied as they are (f32, i32) */
#define KILN_ABI_VK_CAST_COPY16 1     /* f16 copied as it is */
#define KILN_ABI_VK_CAST_F32_TO_F16 2 /* rounded to nearest even */
#define KILN_ABI_VK_CAST_F16_TO_F32 3

/* reduce.comp: what a segment sums (vk_reduce.c), and its two passes */
#define KILN_ABI_VK_REDUCE_SUM 0
#define KILN_ABI_VK_REDUCE_SQUARES 1
#define KILN_ABI_VK_REDUCE_PLOGP 2          /* p log p, 0 where p <= 0 (attention entropy) */
#define KILN_ABI_VK_REDUCE_PASS_PARTIAL 0   /* workgroups sum shares of a segment */
#define KILN_ABI_VK_REDUCE_PASS_TOTAL 1     /* one workgroup per segment sums the partials */

/* embed_bwd_f16 (embed_bwd.comp -DKILN_F16): its two phases (vk_embedding.c) */
#define KILN_ABI_VK_EMBED_BWD_ADD 0   /* add a piece of positions into the f32 rows */
#define KILN_ABI_VK_EMBED_BWD_STORE 1 /* round the f32 rows once into dtable */

/* qmatmul_qx.comp -> qmatmul_dot.comp: the words of one block of 32 activations rounded to
 * int8 (vk_quant.c sizes the scratch by it): 8 words of packed int8 (value j in byte j % 4
 * of word j / 4), then the scale d and d * sum(q), as f32 bits */
#define KILN_ABI_VK_QX_WORDS 10

/* gemm_packed.comp: each invocation computes a block of ROWS x COLS of C and advances k by
 * KSTEP per loop iteration; the host pads the packed panels to whole blocks (vk_gemm.c) */
#define KILN_ABI_VK_PACKED_ROWS 16
#define KILN_ABI_VK_PACKED_COLS 24
#define KILN_ABI_VK_PACKED_KSTEP 8

/* gemm_pack_texel.comp: the texels along k one invocation copies (a cache line of a row;
 * vk_gemm.c sizes the grid by it) */
#define KILN_ABI_VK_PACK_TEXEL_STEPS 4

/* gemm_shuffle.comp: a workgroup is one subgroup of LANES lanes, each owning LANE_COLS
 * columns of the block; the block's rows and the texels of k per loop iteration are
 * ROWS and KSTEPS in the plain build, SHUFFLE16_ROWS and SHUFFLE16_KSTEPS in the
 * gemm_shuffle16 build (shaders/variants.txt). vk_gemm.c sizes panels and grids by them. */
#define KILN_ABI_VK_SHUFFLE_LANES 8
#define KILN_ABI_VK_SHUFFLE_LANE_COLS 8
#define KILN_ABI_VK_SHUFFLE_ROWS 32
#define KILN_ABI_VK_SHUFFLE_KSTEPS 3
#define KILN_ABI_VK_SHUFFLE16_ROWS 16
#define KILN_ABI_VK_SHUFFLE16_KSTEPS 2

/* gemm_coopmat*.comp: the cooperative-matrix tile (M = N = K) to which the operands are
 * padded (vk_gemm_coopmat.c; the device must report this shape, vk_instance.c) */
#define KILN_ABI_VK_COOPMAT_TILE 16

/* probe_fma.comp: the scalar accumulators of one invocation (12 / WIDTH vectors), which
 * vk_probe_fma reports as kiln_probe_fma_args.chains */
#define KILN_ABI_VK_PROBE_FMA_ACCUMULATORS 12

/* fma_peak.comp: its CHAINS accumulators take ROUNDS FMAs each per loop iteration, which
 * kiln_vulkan_fma_peak counts (vk_bench.c) */
#define KILN_ABI_VK_FMA_PEAK_CHAINS 12
#define KILN_ABI_VK_FMA_PEAK_ROUNDS 24

/* ---- OpenCL ---- */

/* The column sums (sum_rows in cl/reduce.cl, norm_bwd_params in cl/norm.cl): a work-group of
 * KILN_WG work-items covers min(KILN_WG, KILN_ABI_CL_COLUMN_TILE) adjacent columns, its
 * other work-items being row lanes; the host launches one work-group per tile of columns. */
#define KILN_ABI_CL_COLUMN_TILE 32

/* xent_rows (cl/cross_entropy.cl) writes each row's loss and whether it counts into a
 * scratch of this many floats per row, which the host allocates and xent_total reads. */
#define KILN_ABI_CL_XENT_ROW_FLOATS 2

/* The GPU backends' matrix-vector products (shaders/gemv.comp, shaders/qgemv.comp,
 * cl/gemm.cl's gemv, cl/quant.cl's qgemv): chosen for products of at most this many rows of
 * activations (a decoded token's), each weight read once for all of them. */
#define KILN_ABI_GEMV_ROWS 4

/* qmatmul_rows (cl/quant.cl): a work-group multiplies one row of the quantized matrix with
 * this many tokens, each unit of the row decoded once for all of them; the host launches
 * ceil(m / QMATMUL_TOKENS) work-groups per row. */
#define KILN_ABI_CL_QMATMUL_TOKENS 4

/* qmatmul_t, the transposed product y = dy W (shaders/qmatmul_t.comp, cl/quant.cl): a
 * work-group owns a tile of output columns, one per invocation (a multiple of 32: whole units
 * of qblock.glsl), and QMATMUL_T_ROWS rows of dy; it walks W's rows QMATMUL_T_PANEL at a
 * time, decoding the panel's units once into shared memory for all its dy rows. The host
 * launches ceil(k / work-group size) x ceil(m / QMATMUL_T_ROWS) work-groups. */
#define KILN_ABI_QMATMUL_T_ROWS 8
#define KILN_ABI_QMATMUL_T_PANEL 16

/* Independent FMA chains per work-item of the probe kernels fma_<dtype>x<width>
 * (cl/probe.cl); the host counts the FMAs a kernel does from the same numbers. A CPU device
 * runs a work-item's vectors as SIMD instructions and needs independent chains within it at
 * every width; a GPU hides latency across work-items and keeps 12 scalar lanes (or the
 * fewest chains of wider vectors) per work-item. */
#define KILN_ABI_CL_FMA_CHAINS_CPU 12
#define KILN_ABI_CL_FMA_CHAINS_GPU_X1 12
#define KILN_ABI_CL_FMA_CHAINS_GPU_X2 6
#define KILN_ABI_CL_FMA_CHAINS_GPU_X4 3
#define KILN_ABI_CL_FMA_CHAINS_GPU_X8 2
#define KILN_ABI_CL_FMA_CHAINS_GPU_X16 1

#endif
