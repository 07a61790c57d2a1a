/* The interface between the OpenCL host code and the kernels:
 *  - a kernel's parameter list is written twice, in cl/<family>.cl and as its host wrapper's
 *    cl_arg_* calls; a call that sets fewer or more arguments than the kernel has is refused
 *    by cl_run with one error naming the kernel and both counts, and nothing is enqueued;
 *  - engine/abi/kernel_abi.h is in front of every program the backend compiles, with the
 *    values the host compiles against. */
#include <stdio.h>
#include <string.h>

#include "testutil.h"

#ifdef KILN_HAVE_OPENCL
#include "opencl/cl_internal.h"

static kiln_ctx *g_ctx;

enum { WORDS = 16 };
static const uint32_t PATTERN = 0x5eed1e55u, OTHER = 0x0badf00du;

/* fill_u32 (cl/memory.cl: dst, dst_off, n, value) over the buffer, with `extra` more
 * arguments (negative: fewer) than the kernel takes. */
static kiln_status fill(cl_dev *d, kiln_buf *buf, uint32_t value, int extra) {
    cl_call c = cl_begin(d, "memory", "fill_u32");
    cl_arg_mem(&c, buf->block->mem, buf->off / 4);
    cl_arg_i64(&c, WORDS);
    if (extra >= 0) cl_arg_u32(&c, value);
    for (int i = 0; i < extra; i++) cl_arg_u32(&c, value);
    return cl_run_1d(&c, WORDS);
}

static void expect_words(cl_dev *d, kiln_buf *buf, uint32_t value) {
    uint32_t words[WORDS];
    ck_assert_int_eq(cl_download(d, (kiln_ref){.buf = buf}, words, sizeof words), KILN_OK);
    for (int i = 0; i < WORDS; i++) ck_assert_uint_eq(words[i], value);
}

static void expect_refused(kiln_status s, const char *set) {
    ck_assert_int_eq(s, KILN_ERR_DEVICE);
    const char *msg = kiln_error_message();
    ck_assert_msg(strstr(msg, "fill_u32") && strstr(msg, "cl/memory.cl") &&
                      strstr(msg, "takes 4 arguments") && strstr(msg, set),
                  "the message does not name the kernel and both counts: %s", msg);
    ck_assert_msg(!strchr(msg, '\n'), "not one line: %s", msg);
}

START_TEST(argument_count_mismatch_is_refused) {
    cl_dev *d = g_ctx->dev;
    ck_assert_uint_eq(cl_find_kernel(d, "memory", "fill_u32", 0)->num_args, 4);
    kiln_buf *buf;
    ck_assert_int_eq(cl_alloc(d, WORDS * 4, &buf), KILN_OK);
    ck_assert_msg(fill(d, buf, PATTERN, 0) == KILN_OK, "%s", kiln_error_message());
    expect_refused(fill(d, buf, OTHER, -1), "set 3");
    expect_refused(fill(d, buf, OTHER, 1), "set 5");
    expect_refused(fill(d, buf, OTHER, 3), "set 7");
    /* neither call ran: the buffer holds the first fill */
    expect_words(d, buf, PATTERN);
    cl_free(d, buf);
}
END_TEST

START_TEST(every_program_sees_kernel_abi_h) {
    cl_dev *d = g_ctx->dev;
    static const char source[] =
        "__kernel void abi(__global int *out) {\n"
        "    out[0] = KILN_ABI_ACT_SQRT;\n"
        "    out[1] = KILN_ABI_BIN_MUL;\n"
        "    out[2] = KILN_ABI_NORM_RMS;\n"
        "    out[3] = KILN_ABI_DTYPE_I32;\n"
        "    out[4] = KILN_ABI_CL_COLUMN_TILE;\n"
        "    out[5] = KILN_ABI_CL_FMA_CHAINS_GPU_X4;\n"
        "}\n";
    const int expect[6] = {KILN_ABI_ACT_SQRT, KILN_ABI_BIN_MUL, KILN_ABI_NORM_RMS,
                           KILN_ABI_DTYPE_I32, KILN_ABI_CL_COLUMN_TILE,
                           KILN_ABI_CL_FMA_CHAINS_GPU_X4};
    cl_program p;
    ck_assert_msg(cl_build_program(d, "test-abi", source, &p) == KILN_OK, "%s", kiln_error_message());
    cl_int err;
    cl_mem out = clCreateBuffer(d->context, CL_MEM_READ_WRITE, sizeof expect, NULL, &err);
    cl_kernel k = clCreateKernel(p, "abi", &err);
    ck_assert(out && k);
    ck_assert_int_eq(clSetKernelArg(k, 0, sizeof out, &out), CL_SUCCESS);
    size_t one = 1;
    ck_assert_int_eq(clEnqueueNDRangeKernel(d->queue, k, 1, NULL, &one, NULL, 0, NULL, NULL), CL_SUCCESS);
    int got[6];
    ck_assert_int_eq(clEnqueueReadBuffer(d->queue, out, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL),
                     CL_SUCCESS);
    for (int i = 0; i < 6; i++) ck_assert_int_eq(got[i], expect[i]);
    clReleaseKernel(k);
    clReleaseMemObject(out);
    clReleaseProgram(p);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, argument_count_mismatch_is_refused);
    tcase_add_test(tc, every_program_sees_kernel_abi_h);
}

int main(void) { return kt_run_tests_on("opencl", &g_ctx, "opencl_abi", "abi", add_tests); }

#else
int main(void) { return 77; } /* built without OpenCL */
#endif
