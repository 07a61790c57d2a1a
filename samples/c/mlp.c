/* A small program on libkiln's public API: a two-layer MLP learns y = 4x^3 - 3x on [-1, 1]
 * (the Chebyshev polynomial T3: two bends) with autograd and AdamW, on the backend its
 * argument names (cpu, vulkan, opencl, auto; "vulkan:1" picks a device). It prints the
 * loss as it falls and exits non-zero if the loss does not fall to a quarter of its start.
 *
 * Build it against an installed kiln (README.md, "Using the library"):
 *   cc samples/c/mlp.c -o mlp $(pkg-config --cflags --libs kiln)
 *   ./mlp cpu */
#include <stdio.h>

#include <kiln/kiln.h>

enum { POINTS = 64, HIDDEN = 32, STEPS = 300 };

/* Prints the library's own sentence for the failed call and returns 1. */
static int fail(const char *what) {
    fprintf(stderr, "mlp: %s: %s\n", what, kiln_error_message());
    return 1;
}

/* The data: POINTS evenly spaced x in [-1, 1] and their y = 4x^3 - 3x, as [POINTS, 1]. */
static int make_data(kiln_ctx *ctx, kiln_tensor **x, kiln_tensor **y) {
    float xs[POINTS], ys[POINTS];
    for (int i = 0; i < POINTS; i++) {
        xs[i] = -1.0f + 2.0f * (float)i / (POINTS - 1);
        ys[i] = (4.0f * xs[i] * xs[i] - 3.0f) * xs[i];
    }
    *x = kiln_tensor_2d(ctx, KILN_F32, POINTS, 1);
    *y = kiln_tensor_2d(ctx, KILN_F32, POINTS, 1);
    if (!*x || !*y || kiln_upload_f32(*x, xs, POINTS) || kiln_upload_f32(*y, ys, POINTS))
        return fail("uploading the data");
    return 0;
}

/* The weights w1 [1, H], b1 [H], w2 [H, 1], b2 [1]: normal weights (w2's deviation about
 * 1/sqrt(H), so the output starts near the target's scale), zero biases. */
static int make_params(kiln_ctx *ctx, kiln_tensor *p[4]) {
    p[0] = kiln_tensor_2d(ctx, KILN_F32, 1, HIDDEN);
    p[1] = kiln_tensor_1d(ctx, KILN_F32, HIDDEN);
    p[2] = kiln_tensor_2d(ctx, KILN_F32, HIDDEN, 1);
    p[3] = kiln_tensor_1d(ctx, KILN_F32, 1);
    for (int i = 0; i < 4; i++)
        if (!p[i]) return fail("allocating the weights");
    if (kiln_init_normal(p[0], 1, 0, 0.0f, 1.0f) || kiln_fill(p[1], 0.0f) ||
        kiln_init_normal(p[2], 1, 1, 0.0f, 0.18f) || kiln_fill(p[3], 0.0f))
        return fail("initializing the weights");
    for (int i = 0; i < 4; i++) kiln_set_requires_grad(p[i], 1);
    return 0;
}

/* One step: forward, the mean squared error into *loss, backward, AdamW. */
static int train_step(kiln_ctx *ctx, kiln_adam *opt, kiln_tensor *const p[4], kiln_tensor *x,
                      kiln_tensor *y, float *loss) {
    if (kiln_zero_grad(p, 4)) return fail("zeroing the gradients");
    /* an op given NULL returns NULL and keeps the first error: a chain is checked once */
    kiln_tensor *h = kiln_relu(kiln_matmul(x, p[0], p[1], 0, 0));
    kiln_tensor *d = kiln_sub(kiln_matmul(h, p[2], p[3], 0, 0), y);
    kiln_tensor *mse = kiln_mean(kiln_mul(d, d));
    if (!mse) return fail("the forward pass");
    if (kiln_read_scalar(mse, loss) || kiln_backward(mse, 1.0f)) return fail("the backward pass");
    kiln_adam_step_opts step = {.lr = 1e-2f};
    if (kiln_adam_step(opt, &step)) return fail("the optimizer step");
    kiln_step_reset(ctx); /* frees this step's activations and their gradients */
    return 0;
}

/* AdamW for STEPS steps; 0 when the loss fell to a quarter of its start. */
static int fit(kiln_ctx *ctx, kiln_tensor *const p[4], kiln_tensor *x, kiln_tensor *y) {
    kiln_adam_opts opts = kiln_adam_defaults();
    opts.weight_decay = 0.01f;
    opts.decoupled = 1; /* AdamW */
    kiln_adam *opt = kiln_adam_new(ctx, p, 4, &opts);
    if (!opt) return fail("creating the optimizer");
    float first = 0, loss = 0;
    int rc = 0;
    for (int s = 0; s < STEPS && !rc; s++) {
        rc = train_step(ctx, opt, p, x, y, &loss);
        if (s == 0) first = loss;
        if (!rc && (s % 50 == 0 || s == STEPS - 1)) printf("step %3d  loss %.5f\n", s, loss);
    }
    kiln_adam_free(opt);
    if (rc) return rc;
    if (!(loss < 0.25f * first)) {
        fprintf(stderr, "mlp: the loss did not fall (from %.5f to %.5f)\n", first, loss);
        return 1;
    }
    printf("the loss fell from %.5f to %.5f\n", first, loss);
    return 0;
}

static int train(kiln_ctx *ctx) {
    kiln_tensor *x = NULL, *y = NULL, *p[4] = {NULL};
    int rc = make_data(ctx, &x, &y) || make_params(ctx, p) || fit(ctx, p, x, y);
    /* tensors made by kiln_tensor_new are the program's to free, before kiln_close */
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    for (int i = 0; i < 4; i++) kiln_tensor_free(p[i]);
    return rc;
}

int main(int argc, char **argv) {
    const char *backend = argc > 1 ? argv[1] : "cpu";
    kiln_ctx *ctx;
    if (kiln_open(backend, &ctx)) {
        fprintf(stderr, "mlp: cannot open %s: %s\n", backend, kiln_error_message());
        return 1;
    }
    printf("mlp: %s, %s\n", kiln_backend_name(ctx), kiln_device_name(ctx));
    int rc = train(ctx);
    kiln_close(ctx);
    return rc;
}
