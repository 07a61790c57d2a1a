/* f16 storage on OpenCL devices with or without cl_khr_fp16 (PoCL has none): kernels read
 * and write halves with vload_half / vstore_half_rte, so
 *  - f32 -> f16 casts round exactly as kiln_f32_to_f16 (nearest even, subnormals, overflow
 *    to inf, NaN kept), and f16 -> f32 is exact;
 *  - both conversions of cl/common.cl (the built-ins GPUs use, the integer ones CPU devices
 *    use) agree with kiln_f16_to_f32 on every f16 value, and with kiln_f32_to_f16 on every
 *    rounding boundary between f16 values;
 *  - check_finite sees f16 infinities and NaNs;
 *  - an f16 matmul (f32 accumulation) agrees with the CPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#ifdef KILN_HAVE_OPENCL
#include "opencl/cl_internal.h"

/* Values that exercise every rounding path of f32 -> f16. */
static int interesting_values(float *v, int cap) {
    int n = 0;
    const float fixed[] = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.0f, 65520.0f, 1e6f, -1e6f,
                           6.1035156e-5f, 6.0e-8f, 5.96e-8f, 2.98e-8f, 2.99e-8f, 1e-9f,
                           1.00048828125f, 1.000732421875f, 1.0009765625f, /* halfway cases */
                           3.14159265f, -2.71828f, INFINITY, -INFINITY, NAN};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0] && n < cap; i++) v[n++] = fixed[i];
    for (int i = 0; n < cap; i++) {
        /* random magnitudes over the whole f16 range and beyond, both signs */
        float u = kiln_rng_uniform(3, 1, (uint64_t)i), s = kiln_rng_uniform(3, 2, (uint64_t)i);
        v[n++] = (s < 0.5f ? -1.0f : 1.0f) * powf(2.0f, -30.0f + 48.0f * u);
    }
    return n;
}

START_TEST(cast_rounds_like_the_host) {
    kiln_ctx *ctx = kt_ctx();
    enum { N = 4096 };
    float v[N];
    int64_t n = interesting_values(v, N);
    kiln_tensor *x = kiln_tensor_new(ctx, KILN_F32, 1, &n);
    ck_assert(kiln_upload(x, v, sizeof v) == KILN_OK);
    kiln_tensor *h = kiln_cast(x, KILN_F16);
    ck_assert_msg(h != NULL, "%s", kiln_error_message());
    uint16_t got[N];
    ck_assert(kiln_download(h, got, sizeof got) == KILN_OK);
    for (int64_t i = 0; i < n; i++) {
        uint16_t want = kiln_f32_to_f16(v[i]);
        int both_nan = (want & 0x7c00) == 0x7c00 && (want & 0x3ff) && (got[i] & 0x7c00) == 0x7c00 && (got[i] & 0x3ff);
        ck_assert_msg(got[i] == want || both_nan, "f32 %a (%g): device f16 0x%04x, host 0x%04x", v[i], v[i],
                      got[i], want);
    }
    /* and back: f16 -> f32 is exact */
    float back[N];
    ck_assert(kiln_download(kiln_cast(h, KILN_F32), back, sizeof back) == KILN_OK);
    for (int64_t i = 0; i < n; i++) {
        float want = kiln_f16_to_f32(got[i]);
        ck_assert_msg(memcmp(&back[i], &want, 4) == 0 || (isnan(back[i]) && isnan(want)),
                      "f16 0x%04x: device %g, host %g", got[i], back[i], want);
    }
    kiln_step_reset(ctx);
    kiln_tensor_free(x);
}
END_TEST

/* half_load / half_store of cl/common.cl compiled with KILN_CPU_DEVICE forced to cpu_path:
 * f16 -> f32 of every pattern in h[65536] into f, and f32 -> f16 of v[nv] into r. */
static void convert_on_device(int cpu_path, const uint16_t *h, float *f, const float *v, uint16_t *r,
                              size_t nv) {
    kiln_ctx *ctx = kt_ctx();
    cl_dev *d = ctx->dev;
    const char *common = NULL;
    for (int i = 0; i < kiln_cl_source_count; i++)
        if (!strcmp(kiln_cl_sources[i].name, "common")) common = kiln_cl_sources[i].text;
    ck_assert_ptr_nonnull(common);
    static const char kernels[] =
        "__kernel void to_f32(const __global ushort *h, __global float *f) {\n"
        "    size_t i = get_global_id(0);\n"
        "    f[i] = half_load((const __global half *)h, i);\n"
        "}\n"
        "__kernel void to_f16(const __global float *v, __global ushort *r) {\n"
        "    size_t i = get_global_id(0);\n"
        "    half_store((__global half *)r, i, v[i]);\n"
        "}\n";
    size_t size = strlen(common) + sizeof kernels + 128;
    char *source = malloc(size);
    snprintf(source, size, "#undef KILN_CPU_DEVICE\n#define KILN_CPU_DEVICE %d\n%s\n%s", cpu_path, common, kernels);
    cl_program p;
    ck_assert_msg(cl_build_program(d, cpu_path ? "test-f16-cpu" : "test-f16-gpu", source, &p) == KILN_OK, "%s",
                  kiln_error_message());
    free(source);
    cl_int err;
    cl_mem hm = clCreateBuffer(d->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, 65536 * 2, (void *)h, &err);
    cl_mem fm = clCreateBuffer(d->context, CL_MEM_READ_WRITE, 65536 * 4, NULL, &err);
    cl_mem vm = clCreateBuffer(d->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, nv * 4, (void *)v, &err);
    cl_mem rm = clCreateBuffer(d->context, CL_MEM_READ_WRITE, nv * 2, NULL, &err);
    ck_assert(hm && fm && vm && rm);
    cl_kernel k1 = clCreateKernel(p, "to_f32", &err), k2 = clCreateKernel(p, "to_f16", &err);
    ck_assert(k1 && k2);
    clSetKernelArg(k1, 0, sizeof hm, &hm), clSetKernelArg(k1, 1, sizeof fm, &fm);
    clSetKernelArg(k2, 0, sizeof vm, &vm), clSetKernelArg(k2, 1, sizeof rm, &rm);
    size_t n1 = 65536;
    ck_assert_int_eq(clEnqueueNDRangeKernel(d->queue, k1, 1, NULL, &n1, NULL, 0, NULL, NULL), CL_SUCCESS);
    ck_assert_int_eq(clEnqueueNDRangeKernel(d->queue, k2, 1, NULL, &nv, NULL, 0, NULL, NULL), CL_SUCCESS);
    ck_assert_int_eq(clEnqueueReadBuffer(d->queue, fm, CL_TRUE, 0, 65536 * 4, f, 0, NULL, NULL), CL_SUCCESS);
    ck_assert_int_eq(clEnqueueReadBuffer(d->queue, rm, CL_TRUE, 0, nv * 2, r, 0, NULL, NULL), CL_SUCCESS);
    clReleaseKernel(k1), clReleaseKernel(k2), clReleaseProgram(p);
    clReleaseMemObject(hm), clReleaseMemObject(fm), clReleaseMemObject(vm), clReleaseMemObject(rm);
}

static int nan16(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }

START_TEST(both_conversion_paths_match_the_host) {
    uint16_t *h = malloc(65536 * sizeof *h);
    float *f = malloc(65536 * sizeof *f);
    for (int i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    /* f32 inputs: every f16 value, the exact midpoint to the next one (a tie), and the
     * f32 neighbours of that midpoint, for both signs; then some random bit patterns */
    enum { RANDOM = 4096 };
    size_t nv = 0, cap = 65536 * 4 + RANDOM;
    float *v = malloc(cap * sizeof *v);
    uint16_t *r = malloc(cap * sizeof *r);
    for (int i = 0; i < 65536; i++) {
        float a = kiln_f16_to_f32((uint16_t)i);
        if (isnan(a)) continue;
        v[nv++] = a;
        if ((i & 0x7fff) >= 0x7c00) continue; /* inf: no next value */
        float b = kiln_f16_to_f32((uint16_t)(i + 1)); /* the next magnitude, same sign */
        float mid = (float)(((double)a + (double)b) / 2); /* exact in f32 */
        v[nv++] = mid;
        v[nv++] = nextafterf(mid, 0.0f);
        v[nv++] = nextafterf(mid, INFINITY * mid);
    }
    for (int i = 0; i < RANDOM; i++) {
        uint32_t bits = kiln_rng_u32(5, 7, (uint64_t)i);
        memcpy(&v[nv++], &bits, 4);
    }
    for (int cpu_path = 0; cpu_path < 2; cpu_path++) {
        convert_on_device(cpu_path, h, f, v, r, nv);
        const char *path = cpu_path ? "integer (CPU devices)" : "built-in (GPUs)";
        for (int i = 0; i < 65536; i++) {
            float want = kiln_f16_to_f32(h[i]);
            ck_assert_msg(memcmp(&f[i], &want, 4) == 0 || (isnan(want) && isnan(f[i]) && !cpu_path),
                          "%s f16 -> f32 of 0x%04x: %a, host %a", path, h[i], f[i], want);
        }
        for (size_t i = 0; i < nv; i++) {
            uint16_t want = kiln_f32_to_f16(v[i]);
            /* the built-ins may return another NaN; the integer path keeps the payload */
            ck_assert_msg(r[i] == want || (nan16(want) && nan16(r[i]) && !cpu_path),
                          "%s f32 -> f16 of %a: 0x%04x, host 0x%04x", path, v[i], r[i], want);
        }
    }
    free(h), free(f), free(v), free(r);
}
END_TEST

START_TEST(check_finite_sees_f16_inf_and_nan) {
    kiln_ctx *ctx = kt_ctx();
    int64_t n = 300;
    kiln_tensor *flag = kiln_tensor_new(ctx, KILN_I32, 0, NULL);
    uint16_t h[300];
    for (int i = 0; i < 300; i++) h[i] = kiln_f32_to_f16((float)i - 150.0f);
    kiln_tensor *x = kiln_tensor_new(ctx, KILN_F16, 1, &n);
    ck_assert(kiln_upload(x, h, sizeof h) == KILN_OK);
    float f;
    ck_assert(kiln_check_finite(x, flag) == KILN_OK);
    ck_assert(kiln_read_scalar(flag, &f) == KILN_OK);
    ck_assert_float_eq(f, 0);
    const uint16_t bad[2] = {0x7c00 /* +inf */, 0x7e01 /* NaN */};
    for (int k = 0; k < 2; k++) {
        h[217] = bad[k];
        ck_assert(kiln_upload(x, h, sizeof h) == KILN_OK);
        ck_assert(kiln_fill(flag, 0) == KILN_OK);
        ck_assert(kiln_check_finite(x, flag) == KILN_OK);
        ck_assert(kiln_read_scalar(flag, &f) == KILN_OK);
        ck_assert_float_eq(f, 1);
    }
    kiln_tensor_free(x), kiln_tensor_free(flag);
}
END_TEST

/* f16 operands (the bias too: an op takes one dtype), f32 accumulation, f16 output: the
 * forward and every gradient against the CPU's f16 matmul. */
static kiln_tensor *build_matmul_nt(kiln_tensor **in, const void *p) {
    (void)p;
    return kiln_matmul(in[0], in[1], in[2], 0, 1);
}
static kiln_tensor *build_matmul_tn(kiln_tensor **in, const void *p) {
    (void)p;
    return kiln_matmul(in[0], in[1], NULL, 1, 0);
}
static const kiln_verify_case cases[] = {
    {.name = "f16_matmul_nt_bias", .build = build_matmul_nt, .n_in = 3,
     .in = {{.dtype = KILN_F16, .ndim = 2, .shape = {37, 29}}, {.dtype = KILN_F16, .ndim = 2, .shape = {23, 29}},
            {.dtype = KILN_F16, .ndim = 1, .shape = {23}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "f16_matmul_tn_large", .build = build_matmul_tn, .n_in = 2,
     .in = {{.dtype = KILN_F16, .ndim = 2, .shape = {70, 90}}, {.dtype = KILN_F16, .ndim = 2, .shape = {70, 65}}},
     .fwd_tol = 1e-10, .no_grad = 1},
};

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, cast_rounds_like_the_host);
    tcase_add_test(tc, both_conversion_paths_match_the_host);
    tcase_add_test(tc, check_finite_sees_f16_inf_and_nan);
}

int main(int argc, char **argv) {
    (void)argc;
    char *args[] = {argv[0], "--backend", "opencl", NULL};
    return kt_main(3, args, "opencl_f16", add_tests, cases, (int)(sizeof cases / sizeof cases[0]));
}

#else
int main(void) { return 77; } /* built without OpenCL */
#endif
