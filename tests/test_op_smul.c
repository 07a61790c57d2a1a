/* y = s * x: a forward and gradient by hand, and (through kt_main_group) the verify cases
 * on every backend, f16 included. */
#include "testutil.h"

START_TEST(smul_by_hand) {
    kiln_ctx *ctx = kt_ctx();
    const float x0[4] = {-2.0f, 0.0f, 0.5f, 3.0f}, y0[4] = {5.0f, 0.0f, -1.25f, -7.5f};
    const float dx0[4] = {-2.5f, -2.5f, -2.5f, -2.5f};
    int64_t shape[1] = {4};
    kiln_tensor *x = kt_tensor(ctx, KILN_F32, 1, shape, x0);
    kiln_set_requires_grad(x, 1);
    kiln_tensor *y = kiln_smul(x, -2.5f);
    kt_expect_values(y, y0, 4, 1e-6);
    ck_assert_int_eq(kiln_backward(kiln_sum(y), 1.0f), KILN_OK);
    kt_expect_values(kiln_grad(x), dx0, 4, 1e-6);
    kiln_step_reset(ctx);
    kiln_tensor_free(x);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, smul_by_hand);
}

int main(int argc, char **argv) { return kt_main_group(argc, argv, "smul", add_tests); }
