/* Running one verification case (kiln/verify.h): inputs, forward and backward on the device
 * and the reference, and the comparison of every output. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "kiln/verify.h"

/* ---- inputs ---- */

static int64_t input_numel(const kiln_verify_input *in) {
    int64_t n = 1;
    for (int d = 0; d < in->ndim; d++) n *= in->shape[d];
    return n;
}

static float round_f16(float v) { return kiln_f16_to_f32(kiln_f32_to_f16(v)); }

/* The values of input `which`, drawn from a seed of the case's name: every run of a case,
 * on every device, sees the same inputs. */
static float *input_values(const kiln_verify_case *c, int which) {
    const kiln_verify_input *in = &c->in[which];
    int64_t n = input_numel(in);
    float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v) return NULL;
    uint64_t seed = 0x5eed;
    for (const char *p = c->name; *p; p++) seed = seed * 131 + (unsigned char)*p;
    for (int64_t i = 0; i < n; i++) {
        switch (in->init) {
        case KILN_INIT_NORMAL:
            v[i] = in->lo + (in->hi ? in->hi : 1.0f) * kiln_rng_normal(seed, (uint64_t)which, (uint64_t)i);
            break;
        case KILN_INIT_UNIFORM:
            v[i] = in->lo + (in->hi - in->lo) * kiln_rng_uniform(seed, (uint64_t)which, (uint64_t)i);
            break;
        case KILN_INIT_AWAY0: {
            float x = kiln_rng_normal(seed, (uint64_t)which, (uint64_t)i);
            v[i] = x + (x >= 0 ? 0.1f : -0.1f);
            break;
        }
        case KILN_INIT_INT: {
            int64_t span = (int64_t)in->hi - (int64_t)in->lo + 1;
            v[i] = (float)((int64_t)in->lo + (int64_t)(kiln_rng_u32(seed, (uint64_t)which, (uint64_t)i) % (uint64_t)span));
            break;
        }
        }
    }
    return v;
}

/* How one side of a comparison builds the inputs: as declared, or (f16 runs) with every
 * floating input rounded to f16 and built as f16 (the device) or as f32 (the reference). */
typedef enum side_precision { AS_DECLARED = 0, F16_UNDER_TEST, F16_REFERENCE } side_precision;

typedef struct case_inputs {
    int n;
    kiln_tensor *t[KILN_VERIFY_MAX_INPUTS];
    float *values[KILN_VERIFY_MAX_INPUTS];
} case_inputs;

static void free_inputs(case_inputs *ci) {
    for (int i = 0; i < ci->n; i++) {
        kiln_tensor_free(ci->t[i]);
        free(ci->values[i]);
    }
    ci->n = 0;
}

static kiln_status upload_values(kiln_tensor *t, const float *values) {
    int64_t n = kiln_numel(t);
    if (t->dtype != KILN_I32) return kiln_upload_f32(t, values, n);
    int32_t *iv = malloc((size_t)(n > 0 ? n : 1) * sizeof *iv);
    if (!iv) return kiln_set_error(KILN_ERR_MEMORY, "verify: out of host memory");
    for (int64_t i = 0; i < n; i++) iv[i] = (int32_t)values[i];
    kiln_status st = kiln_upload(t, iv, (size_t)n * sizeof *iv);
    free(iv);
    return st;
}

static kiln_status make_inputs(kiln_ctx *ctx, const kiln_verify_case *c, case_inputs *ci, side_precision prec) {
    memset(ci, 0, sizeof *ci);
    for (int i = 0; i < c->n_in; i++) {
        const kiln_verify_input *in = &c->in[i];
        kiln_dtype dtype = in->dtype;
        float *v = input_values(c, i);
        if (!v) {
            free_inputs(ci);
            return kiln_set_error(KILN_ERR_MEMORY, "verify: out of host memory");
        }
        if (prec != AS_DECLARED && dtype != KILN_I32) {
            for (int64_t e = 0; e < input_numel(in); e++) v[e] = round_f16(v[e]);
            dtype = prec == F16_UNDER_TEST ? KILN_F16 : KILN_F32;
        }
        ci->values[i] = v;
        ci->t[i] = kiln_tensor_new(ctx, dtype, in->ndim, in->shape);
        ci->n = i + 1;
        if (!ci->t[i] || upload_values(ci->t[i], v) != KILN_OK) {
            kiln_status st = kiln_error_status();
            free_inputs(ci);
            return st;
        }
        if (in->grad) kiln_set_requires_grad(ci->t[i], 1);
    }
    return KILN_OK;
}

/* A tensor's values as f32 on the host (i32 converted), or NULL with the error set. */
static float *download_values(const kiln_tensor *t) {
    int64_t n = kiln_numel(t);
    float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v) {
        kiln_set_error(KILN_ERR_MEMORY, "verify: out of host memory");
        return NULL;
    }
    kiln_status st;
    if (t->dtype == KILN_I32) {
        int32_t *iv = malloc((size_t)(n > 0 ? n : 1) * sizeof *iv);
        st = iv ? kiln_download(t, iv, (size_t)n * sizeof *iv) : kiln_set_error(KILN_ERR_MEMORY, "verify: out of host memory");
        for (int64_t i = 0; st == KILN_OK && i < n; i++) v[i] = (float)iv[i];
        free(iv);
    } else {
        st = kiln_download_f32(t, v, n);
    }
    if (st != KILN_OK) {
        free(v);
        return NULL;
    }
    return v;
}

/* ---- forward and backward ---- */

/* A fixed random weighting of the output: loss = sum(out * w), so every output element
 * contributes to the gradient with a different weight. Rounded to f16 values in f16 runs,
 * so that an f16 output's weight tensor holds exactly the reference's weights. */
static float *output_weights(int64_t n, int f16_values) {
    float *w = malloc((size_t)(n > 0 ? n : 1) * sizeof *w);
    for (int64_t i = 0; w && i < n; i++) {
        w[i] = kiln_rng_normal(0xfeed, 7, (uint64_t)i);
        if (f16_values) w[i] = round_f16(w[i]);
    }
    return w;
}

/* Builds the output into *out and, when asked, runs backward from sum(out * w); w has the
 * output's dtype (ops take one dtype), with f16 values in f16 runs, and is made on first
 * use. Returns the status of the first failure (the build's own error is kept). */
static kiln_status forward(kiln_ctx *ctx, const kiln_verify_case *c, kiln_verify_build_fn build, case_inputs *ci,
                           float **w, int backward, side_precision prec, kiln_tensor **out) {
    kiln_set_grad_enabled(ctx, backward);
    *out = build(ci->t, c->param);
    kiln_status st = *out ? KILN_OK : kiln_error_status();
    if (st == KILN_OK && backward) {
        int64_t n = kiln_numel(*out);
        if (!*w) *w = output_weights(n, prec != AS_DECLARED);
        kiln_tensor *wt = *w ? kiln_tensor_temp(ctx, (*out)->dtype, (*out)->ndim, (*out)->shape) : NULL;
        if (!*w) st = kiln_set_error(KILN_ERR_MEMORY, "verify: out of host memory");
        else if (!wt || kiln_upload_f32(wt, *w, n) != KILN_OK) st = kiln_error_status();
        else st = kiln_backward(kiln_sum(kiln_mul(*out, wt)), 1.0f);
    }
    kiln_set_grad_enabled(ctx, 1);
    if (st == KILN_OK && !*out) st = KILN_ERR_STATE;
    return st;
}

static double weighted_sum(const kiln_tensor *out, const float *w) {
    float *v = download_values(out);
    if (!v) return NAN;
    double s = 0;
    for (int64_t i = 0; i < kiln_numel(out); i++) s += (double)v[i] * w[i];
    free(v);
    return s;
}

/* ---- comparisons ---- */

double kiln_verify_normalized_error(const float *a, const float *b, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(a[i]) || isnan(b[i]) || isinf(a[i]) != isinf(b[i])) return INFINITY;
        double d = (double)a[i] - b[i];
        num += d * d;
        den += (double)a[i] * a[i];
    }
    return num / (den > 1e-30 ? den : 1e-30);
}

int kiln_verify_compare(kiln_verify_result *r, const char *what, const float *a, const float *b, int64_t n,
                        double tol) {
    double err = kiln_verify_normalized_error(a, b, n);
    r->comparisons++;
    double ratio = err / tol, worst_ratio = r->comparisons > 1 ? r->error / r->tolerance : -1;
    if (ratio > worst_ratio || isnan(ratio)) {
        double max_abs = 0, scale = 0;
        int64_t worst = 0;
        for (int64_t i = 0; i < n; i++) {
            double d = fabs((double)a[i] - b[i]);
            if (isnan(d)) d = INFINITY;
            if (d > max_abs) max_abs = d, worst = i;
            if (fabs(a[i]) > scale) scale = fabs(a[i]);
        }
        snprintf(r->what, sizeof r->what, "%s", what);
        r->error = err, r->tolerance = tol, r->max_abs = max_abs, r->worst_index = worst;
        r->max_rel = max_abs / (scale > 1e-30 ? scale : 1e-30);
    }
    if (err <= tol) return 1;
    if (r->verdict != KILN_VERIFY_FAIL) {
        r->verdict = KILN_VERIFY_FAIL;
        snprintf(r->message, sizeof r->message, "%s vs %s: normalized error %.3g > %.3g", what,
                 r->against, err, tol);
    }
    return 0;
}

/* Central finite differences on the CPU, on up to 48 elements of each input. */
static kiln_status gradcheck(kiln_ctx *cpu, const kiln_verify_case *c, kiln_verify_result *r) {
    case_inputs ci;
    float *w = NULL;
    kiln_tensor *out;
    kiln_status st = make_inputs(cpu, c, &ci, AS_DECLARED);
    if (st != KILN_OK) return st;
    snprintf(r->against, sizeof r->against, "finite differences");
    st = forward(cpu, c, c->build, &ci, &w, 1, AS_DECLARED, &out);
    if (st != KILN_OK) {
        r->verdict = KILN_VERIFY_FAIL;
        snprintf(r->message, sizeof r->message, "build failed: %s", kiln_error_message());
        st = KILN_OK;
    }
    double eps = c->fd_eps > 0 ? c->fd_eps : 1e-2;
    double tol = c->bwd_tol > 0 ? c->bwd_tol : 1e-4;
    for (int i = 0; st == KILN_OK && r->verdict == KILN_VERIFY_PASS && i < c->n_in; i++) {
        if (!c->in[i].grad) continue;
        char what[24];
        snprintf(what, sizeof what, "gradient %d", i);
        if (!ci.t[i]->grad) {
            r->verdict = KILN_VERIFY_FAIL;
            snprintf(r->message, sizeof r->message, "input %d received no gradient", i);
            break;
        }
        float *analytic = download_values(ci.t[i]->grad);
        int64_t n = kiln_numel(ci.t[i]), step = n <= 48 ? 1 : n / 48, count = 0;
        float *fd = malloc((size_t)(n / step + 1) * sizeof *fd), *an = malloc((size_t)(n / step + 1) * sizeof *an);
        if (!analytic || !fd || !an) st = analytic ? kiln_set_error(KILN_ERR_MEMORY, "verify: out of host memory")
                                                   : kiln_error_status();
        float *v = ci.values[i];
        for (int64_t e = (n <= 48 ? 0 : 3 % step); st == KILN_OK && e < n; e += step) {
            float orig = v[e];
            kiln_tensor *o;
            v[e] = orig + (float)eps;
            st = kiln_upload_f32(ci.t[i], v, n);
            if (st == KILN_OK) st = forward(cpu, c, c->build, &ci, &w, 0, AS_DECLARED, &o);
            double plus = st == KILN_OK ? weighted_sum(o, w) : 0;
            v[e] = orig - (float)eps;
            if (st == KILN_OK) st = kiln_upload_f32(ci.t[i], v, n);
            if (st == KILN_OK) st = forward(cpu, c, c->build, &ci, &w, 0, AS_DECLARED, &o);
            double minus = st == KILN_OK ? weighted_sum(o, w) : 0;
            v[e] = orig;
            if (st == KILN_OK) st = kiln_upload_f32(ci.t[i], v, n);
            /* the perturbation actually applied, after f32 rounding */
            double h = (double)(orig + (float)eps) - (double)(orig - (float)eps);
            fd[count] = (float)((plus - minus) / h);
            an[count] = analytic[e];
            count++;
        }
        if (st == KILN_OK) kiln_verify_compare(r, what, fd, an, count, tol);
        free(fd), free(an), free(analytic);
    }
    free(w);
    kiln_step_reset(cpu);
    free_inputs(&ci);
    return st;
}

/* The forward output and every gradient of the case on `dev` (inputs per `prec`) against
 * `ref` (inputs per `ref_prec`), where the case's reference build runs when it has one. */
static kiln_status compare_runs(kiln_ctx *dev, kiln_ctx *ref, const kiln_verify_case *c, side_precision prec,
                                side_precision ref_prec, double ftol, double btol, kiln_verify_result *r) {
    kiln_verify_build_fn ref_build = c->reference ? c->reference : c->build;
    case_inputs in_ref, in_dev;
    float *w = NULL, *a = NULL, *b = NULL;
    kiln_tensor *out_ref, *out_dev;
    int backward = !c->no_grad;
    snprintf(r->against, sizeof r->against, "cpu");
    kiln_status st = make_inputs(ref, c, &in_ref, ref_prec);
    if (st != KILN_OK) return st;
    st = make_inputs(dev, c, &in_dev, prec);
    if (st != KILN_OK) {
        free_inputs(&in_ref);
        return st;
    }
    st = forward(ref, c, ref_build, &in_ref, &w, backward, ref_prec, &out_ref);
    if (st == KILN_OK) {
        kiln_status built = forward(dev, c, c->build, &in_dev, &w, backward, prec, &out_dev);
        if (built == KILN_ERR_UNSUPPORTED && !kiln_supports_dtype(dev, KILN_F16)) {
            /* the case makes f16 tensors itself (a cast): it does not apply here */
            r->verdict = KILN_VERIFY_SKIP;
            snprintf(r->message, sizeof r->message, "%s", kiln_error_message());
        } else if (built == KILN_ERR_DEVICE || built == KILN_ERR_MEMORY) {
            st = built;
        } else if (built != KILN_OK) {
            r->verdict = KILN_VERIFY_FAIL;
            snprintf(r->message, sizeof r->message, "failed on %s: %s",
                     kiln_backend_name(dev), kiln_error_message());
        }
    }
    if (st == KILN_OK && r->verdict == KILN_VERIFY_PASS) {
        a = download_values(out_ref);
        b = a ? download_values(out_dev) : NULL;
        if (!b) st = kiln_error_status();
        else kiln_verify_compare(r, "forward", a, b, kiln_numel(out_ref), ftol);
        free(a), free(b);
    }
    for (int i = 0; st == KILN_OK && r->verdict == KILN_VERIFY_PASS && backward && i < c->n_in; i++) {
        if (!c->in[i].grad) continue;
        kiln_tensor *gd = in_dev.t[i]->grad, *gr = in_ref.t[i]->grad;
        if (!gd || !gr || gd->dtype != in_dev.t[i]->dtype) {
            r->verdict = KILN_VERIFY_FAIL;
            if (!gd || !gr)
                snprintf(r->message, sizeof r->message, "input %d received no gradient on %s", i,
                         kiln_backend_name(gd ? ref : dev));
            else
                snprintf(r->message, sizeof r->message, "the gradient of %s input %d is %s",
                         kiln_dtype_name(in_dev.t[i]->dtype), i, kiln_dtype_name(gd->dtype));
            break;
        }
        char what[24];
        snprintf(what, sizeof what, "gradient %d", i);
        a = download_values(gr);
        b = a ? download_values(gd) : NULL;
        if (!b) st = kiln_error_status();
        else kiln_verify_compare(r, what, a, b, kiln_numel(gr), btol);
        free(a), free(b);
    }
    free(w);
    kiln_step_reset(ref);
    kiln_step_reset(dev);
    free_inputs(&in_ref);
    free_inputs(&in_dev);
    return st;
}

int kiln_verify_has_f16_form(const kiln_verify_case *c) {
    int floating = 0;
    for (int i = 0; i < c->n_in; i++) floating |= c->in[i].dtype != KILN_I32;
    return floating && !c->no_f16;
}

static int is_cpu(const kiln_ctx *ctx) { return !strcmp(kiln_backend_name(ctx), "cpu"); }

/* r becomes other where other failed or came closer to its tolerance, so the reported
 * comparison's what, against and figures stay one comparison's; the counts add up. */
static void keep_worse(kiln_verify_result *r, const kiln_verify_result *other) {
    int comparisons = r->comparisons + other->comparisons;
    int worse = other->verdict == KILN_VERIFY_FAIL ||
                (other->comparisons && (!r->comparisons || other->error / other->tolerance > r->error / r->tolerance));
    if (worse) *r = *other;
    r->comparisons = comparisons;
}

kiln_status kiln_verify_run(kiln_ctx *dev, kiln_ctx *ref, const kiln_verify_case *c, kiln_verify_precision p,
                            kiln_verify_result *r) {
    if (!dev || !c || !r || (!ref && !is_cpu(dev)) || (ref && !is_cpu(ref)))
        return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_verify_run: needs a device, a case, a result and a CPU reference");
    memset(r, 0, sizeof *r);
    r->verdict = KILN_VERIFY_PASS;
    int has_f16 = 0;
    for (int i = 0; i < c->n_in; i++) has_f16 |= c->in[i].dtype == KILN_F16;
    if (p == KILN_VERIFY_F16 && !kiln_verify_has_f16_form(c)) {
        r->verdict = KILN_VERIFY_SKIP;
        snprintf(r->message, sizeof r->message, "%s", c->no_f16 ? "the case has no f16 form" : "no floating inputs");
        return KILN_OK;
    }
    if ((p == KILN_VERIFY_F16 || has_f16) && !kiln_supports_dtype(dev, KILN_F16)) {
        r->verdict = KILN_VERIFY_SKIP;
        snprintf(r->message, sizeof r->message, "%s (%s) cannot store f16", kiln_backend_name(dev), kiln_device_name(dev));
        return KILN_OK;
    }
    if (!ref) ref = dev;
    if (p == KILN_VERIFY_F16) {
        double tol = c->f16_tol > 0 ? c->f16_tol : KILN_VERIFY_F16_TOL;
        return compare_runs(dev, ref, c, F16_UNDER_TEST, F16_REFERENCE, tol, tol, r);
    }
    double ftol = c->fwd_tol > 0 ? c->fwd_tol : 1e-10, btol = c->bwd_tol > 0 ? c->bwd_tol : 1e-8;
    if (!is_cpu(dev)) return compare_runs(dev, ref, c, AS_DECLARED, AS_DECLARED, ftol, btol, r);
    /* the CPU's gradients meet finite differences, and the case's reference build when it
     * has one (without, nothing can check the CPU's forward) */
    kiln_status st = c->no_grad ? KILN_OK : gradcheck(dev, c, r);
    if (st != KILN_OK || !c->reference || r->verdict == KILN_VERIFY_FAIL) return st;
    kiln_verify_result vs_ref = {.verdict = KILN_VERIFY_PASS};
    st = compare_runs(dev, ref, c, AS_DECLARED, AS_DECLARED, ftol, btol, &vs_ref);
    if (st == KILN_OK) keep_worse(r, &vs_ref);
    return st;
}

/* Appends text to buf (size bytes, kept NUL-terminated; what does not fit is dropped). */
static void append(char *buf, size_t size, size_t *used, const char *text) {
    while (*text && *used + 1 < size) buf[(*used)++] = *text++;
    buf[*used] = 0;
}

void kiln_verify_shapes(const kiln_verify_case *c, char *buf, size_t size) {
    size_t used = 0;
    if (!size) return;
    buf[0] = 0;
    for (int i = 0; i < c->n_in; i++) {
        const kiln_verify_input *in = &c->in[i];
        char dim[24];
        if (i) append(buf, size, &used, " ");
        if (in->dtype != KILN_F32) append(buf, size, &used, kiln_dtype_name(in->dtype));
        append(buf, size, &used, "[");
        for (int d = 0; d < in->ndim; d++) {
            snprintf(dim, sizeof dim, d ? ",%lld" : "%lld", (long long)in->shape[d]);
            append(buf, size, &used, dim);
        }
        append(buf, size, &used, "]");
    }
}
