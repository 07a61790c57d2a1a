/* kiln_close frees what the caller left alive: persistent tensors, their gradients (which
 * backward makes persistent too) and their structs. A program that closes its context
 * without freeing every weight must not leak host memory: the heap in use after a context
 * made 2000 tensors and was closed is what it was before. The heap is measured by
 * AddressSanitizer's allocator in the sanitizer build (where LeakSanitizer also checks the
 * whole program at exit) and by glibc's mallinfo2 otherwise; a leak of 2000 structs is tens
 * of kilobytes, far above either's noise. */
#include <stdlib.h>

#include "testutil.h"

#if defined(__SANITIZE_ADDRESS__)
#define KT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KT_ASAN 1
#endif
#endif

#ifdef KT_ASAN
#include <sanitizer/allocator_interface.h>
static size_t heap_in_use(void) { return __sanitizer_get_current_allocated_bytes(); }
#elif defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
#include <malloc.h>
static size_t heap_in_use(void) { return mallinfo2().uordblks; }
#else
static size_t heap_in_use(void) { return 0; } /* no measure: LeakSanitizer alone checks */
#endif

enum { N_TENSORS = 1000 };

/* Opens a context, makes N_TENSORS weights with gradients (half of them also freed, in
 * creation order, to exercise removal from the context's list) and closes it. */
static void open_fill_close(void) {
    kiln_ctx *ctx = NULL;
    ck_assert_int_eq(kiln_open(kt_backend(), &ctx), KILN_OK);
    static kiln_tensor *w[N_TENSORS];
    for (int i = 0; i < N_TENSORS; i++) {
        w[i] = kiln_tensor_1d(ctx, KILN_F32, 1 + i % 7);
        ck_assert_msg(w[i] != NULL, "%s", kiln_error_message());
        kiln_set_requires_grad(w[i], 1);
    }
    kiln_tensor *loss = kiln_sum(w[0]);
    for (int i = 1; i < N_TENSORS; i++) loss = kiln_add(loss, kiln_sum(w[i]));
    ck_assert_int_eq(kiln_backward(loss, 1.0f), KILN_OK);
    ck_assert(kiln_grad(w[N_TENSORS - 1]) != NULL);
    kiln_step_reset(ctx);
    for (int i = 0; i < N_TENSORS; i += 2) kiln_tensor_free(w[i]);
    ck_assert_uint_gt(kiln_memory_persistent(ctx), 0);
    kiln_close(ctx); /* the odd ones, their gradients and their structs */
}

START_TEST(close_frees_persistent_tensors) {
    open_fill_close(); /* the first open's lasting allocations (the backend's) */
    size_t before = heap_in_use();
    for (int round = 0; round < 3; round++) open_fill_close();
    size_t after = heap_in_use();
    /* 3 rounds of 500 unfreed tensors and 500 gradients: 3000 structs if they leaked */
    ck_assert_msg(after < before + 3000 * sizeof(kiln_tensor) / 2,
                  "the heap grew by %zu bytes over 3 contexts closed with live tensors", after - before);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, close_frees_persistent_tensors);
}

int main(int argc, char **argv) { return kt_main(argc, argv, "close_frees", add_tests, NULL, 0); }
