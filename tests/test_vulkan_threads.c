/* The Vulkan backend's threading contract (engine/vulkan/vk_internal.h): devices may be
 * opened, used and closed on several threads at once, one device per thread, all sharing
 * the process's one instance (its reference count and open-device list are guarded). Each
 * thread here opens its own context again and again, runs a small op on it, checks the
 * result and closes it, so that instance creation, sharing and destruction interleave. */
#include <pthread.h>
#include <stdio.h>

#include "testutil.h"

#ifdef KILN_HAVE_VULKAN
enum { THREADS = 4, ROUNDS = 3 };

typedef struct worker {
    int id;
    char error[256]; /* empty when every round passed */
} worker;

static void *work(void *arg) {
    worker *w = arg;
    for (int round = 0; round < ROUNDS && !w->error[0]; round++) {
        kiln_ctx *ctx;
        if (kiln_open("vulkan", &ctx) != KILN_OK) {
            snprintf(w->error, sizeof w->error, "thread %d, round %d: open: %s", w->id, round, kiln_error_message());
            break;
        }
        float want = (float)(w->id * 10 + round), got = -1.0f;
        kiln_tensor *t = kiln_tensor_2d(ctx, KILN_F32, 3, 5);
        kiln_tensor *sum = t && kiln_fill(t, want) == KILN_OK ? kiln_sum(t) : NULL;
        if (!sum || kiln_read_scalar(sum, &got) != KILN_OK)
            snprintf(w->error, sizeof w->error, "thread %d, round %d: %s", w->id, round, kiln_error_message());
        else if (got != 15.0f * want)
            snprintf(w->error, sizeof w->error, "thread %d, round %d: sum %g, want %g", w->id, round, got,
                     15.0f * want);
        kiln_step_reset(ctx);
        kiln_tensor_free(t);
        kiln_close(ctx);
    }
    return NULL;
}

START_TEST(devices_open_and_close_on_several_threads) {
    pthread_t threads[THREADS];
    worker workers[THREADS] = {{0}};
    for (int i = 0; i < THREADS; i++) {
        workers[i].id = i;
        ck_assert_int_eq(pthread_create(&threads[i], NULL, work, &workers[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) ck_assert_int_eq(pthread_join(threads[i], NULL), 0);
    for (int i = 0; i < THREADS; i++) ck_assert_msg(!workers[i].error[0], "%s", workers[i].error);
}
END_TEST

static void add_tests(TCase *tc) { tcase_add_test(tc, devices_open_and_close_on_several_threads); }

int main(void) {
    int skip = kt_require_backend("vulkan");
    return skip ? skip : kt_run_tests("vulkan_threads", "vulkan", add_tests);
}

#else
int main(void) { return 77; } /* built without Vulkan */
#endif
