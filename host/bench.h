/* `kiln bench gemm`: GEMM throughput of a kiln backend against the peers measured in the
 * same run (OpenBLAS on the CPU; CLBlast on the same OpenCL device). host/bench.cmake adds
 * it to the kiln program. */
#ifndef KILN_HOST_BENCH_H
#define KILN_HOST_BENCH_H

/* argv[0] is "gemm"; the options follow. Returns the process exit code. */
int kiln_bench_gemm_main(int argc, char **argv);

#endif
