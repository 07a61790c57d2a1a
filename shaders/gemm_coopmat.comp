// GEMM on cooperative matrices (VK_KHR_cooperative_matrix), for f16 inputs with f32
// accumulation, on devices that report the 16 x 16 x 16 f16 -> f32 subgroup shape (see
// engine/vulkan/vk_gemm_coopmat.c, which also explains why this path cannot be tested
// on the CI machines). Operands come packed by gemm_coopmat_pack.comp: zero-padded
// row-major f16, op(A) as Mp x Kp and op(B) as Kp x Np (multiples of 16), so every tile
// load is whole and aligned. One subgroup per workgroup computes one 16 x 16 tile of the
// padded f32 product; gemm_coopmat_epilogue.comp applies alpha, beta, bias and the edges.
// Built only where glslc knows GL_KHR_cooperative_matrix (cmake/vulkan_backend.cmake).
#version 450
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 0) const uint SUBGROUP = 32;  // the device's subgroup size
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { float16_t a[]; };
layout(std430, binding = 1) readonly buffer B { float16_t b[]; };
layout(std430, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform Push { GEMM_COOPMAT_PUSH } pc;

// the tile, to which the host pads the operands (engine/abi/kernel_abi.h)
#define TILE KILN_ABI_VK_COOPMAT_TILE

void main() {
    uint tn = gl_WorkGroupID.x, tm = gl_WorkGroupID.y, bz = gl_WorkGroupID.z;
    coopmat<float, gl_ScopeSubgroup, TILE, TILE, gl_MatrixUseAccumulator> acc =
        coopmat<float, gl_ScopeSubgroup, TILE, TILE, gl_MatrixUseAccumulator>(0.0);
    uint abase = pc.off[0] + bz * pc.stride_a + tm * uint(TILE) * pc.kp;
    uint bbase = pc.off[1] + bz * pc.stride_b + tn * uint(TILE);
    for (uint k = 0u; k < pc.kp; k += uint(TILE)) {
        coopmat<float16_t, gl_ScopeSubgroup, TILE, TILE, gl_MatrixUseA> ma;
        coopmat<float16_t, gl_ScopeSubgroup, TILE, TILE, gl_MatrixUseB> mb;
        coopMatLoad(ma, a, abase + k, pc.kp, gl_CooperativeMatrixLayoutRowMajor);
        coopMatLoad(mb, b, bbase + k * pc.np, pc.np, gl_CooperativeMatrixLayoutRowMajor);
        acc = coopMatMulAdd(ma, mb, acc);
    }
    coopMatStore(acc, c, pc.off[2] + bz * pc.stride_c + tm * uint(TILE) * pc.np + tn * uint(TILE), pc.np,
                 gl_CooperativeMatrixLayoutRowMajor);
}
