# Compiler capabilities the CPU backend's optional kernels need, checked at configure time.
#
# KILN_HAVE_AVX512FP16: the compiler has the AVX512-FP16 intrinsics (the f16 FMA-ceiling
# kernels of cpu/cpu_probe.c). gcc 12 has them; clang 14 and 15 do not accept the target.
# Without them the build still runs everywhere: the f16 ceiling on such CPUs says why it
# is missing.
include(CheckCSourceCompiles)
set(KILN_AVX512FP16 OFF)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  check_c_source_compiles("
    #include <immintrin.h>
    __attribute__((target(\"avx512fp16,avx512vl\"))) static __m512h f(__m512h a) { return _mm512_fmadd_ph(a, a, a); }
    int main(void) { return (int)sizeof(&f); }" KILN_COMPILER_HAS_AVX512FP16)
  if(KILN_COMPILER_HAS_AVX512FP16)
    set(KILN_AVX512FP16 ON)
  endif()
endif()
