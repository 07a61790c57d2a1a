/* Compile-time checks that the public and backend enums carry the values the kernels read
 * from abi/kernel_abi.h: a renumbered enum fails the build, not a test on some device. */
#include "abi/kernel_abi.h"
#include "core/backend.h"
#include "kiln/ops.h"

_Static_assert(KILN_ACT_GELU == KILN_ABI_ACT_GELU, "kiln_act and kernel_abi.h disagree");
_Static_assert(KILN_ACT_RELU == KILN_ABI_ACT_RELU, "kiln_act and kernel_abi.h disagree");
_Static_assert(KILN_ACT_SILU == KILN_ABI_ACT_SILU, "kiln_act and kernel_abi.h disagree");
_Static_assert(KILN_ACT_RELU2 == KILN_ABI_ACT_RELU2, "kiln_act and kernel_abi.h disagree");
_Static_assert(KILN_ACT_SQRT == KILN_ABI_ACT_SQRT, "KILN_ACT_SQRT and kernel_abi.h disagree");
_Static_assert(KILN_BIN_ADD == KILN_ABI_BIN_ADD, "kiln_binary_op and kernel_abi.h disagree");
_Static_assert(KILN_BIN_SUB == KILN_ABI_BIN_SUB, "kiln_binary_op and kernel_abi.h disagree");
_Static_assert(KILN_BIN_MUL == KILN_ABI_BIN_MUL, "kiln_binary_op and kernel_abi.h disagree");
_Static_assert(KILN_BIN_DIV == KILN_ABI_BIN_DIV, "kiln_binary_op and kernel_abi.h disagree");
_Static_assert(KILN_ROPE_ADJACENT == KILN_ABI_ROPE_ADJACENT, "kiln_rope_layout and kernel_abi.h disagree");
_Static_assert(KILN_ROPE_HALF == KILN_ABI_ROPE_HALF, "kiln_rope_layout and kernel_abi.h disagree");
_Static_assert(KILN_F32 == KILN_ABI_DTYPE_F32, "kiln_dtype and kernel_abi.h disagree");
_Static_assert(KILN_F16 == KILN_ABI_DTYPE_F16, "kiln_dtype and kernel_abi.h disagree");
_Static_assert(KILN_I32 == KILN_ABI_DTYPE_I32, "kiln_dtype and kernel_abi.h disagree");

/* ISO C forbids an empty translation unit */
typedef int kiln_abi_check_unit;
