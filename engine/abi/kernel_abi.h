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

/* ---- normalization: one kernel family serves LayerNorm and RMSNorm; the flag `rms` is 1
 * for RMSNorm (no centering, no bias, no saved mean) and 0 for LayerNorm, on every backend */
#define KILN_ABI_NORM_LAYER 0
#define KILN_ABI_NORM_RMS 1

/* ---- tile sizes and work-group shapes the host must know to size its grids ---- */
/* (each backend's section below names the kernel that uses the value) */

#endif
