/* LoRA adapters (host/model/lora.h) on tiny GPTs of both families, on every backend:
 *   - the forward against an independent reference: the adapter merged into the base's
 *     weights on the host (W' = W + scale A^T B^T in kiln's [in, out] layout), which puts
 *     q/k/v and gate/up at their column ranges by construction;
 *   - the adapters' gradients: against central finite differences in float on cpu, against
 *     the CPU's on Vulkan and OpenCL; SwiGLU's training path (c_fc requiring grad) gives the
 *     same as the frozen one;
 *   - the base frozen: no base tensor requires grad;
 *   - PEFT's suffix matching of targets and the refused ranks;
 *   - PEFT's files: names, shapes, config keys, and a round trip. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/json.h"
#include "formats/safetensors.h"
#include "model/gpt/gpt.h"
#include "model/lora.h"
#include "testutil.h"

enum { C = 8, V = 11, T = 5, B = 2 };

/* A tiny GPT-2 (learned positions, LayerNorm, GELU) or Llama (RMSNorm, rope, SwiGLU, 4 query
 * heads over 2 key/value heads of 2, F = 12, no biases), with weights large enough that
 * every part matters. */
static gpt_config tiny_config(int llama, int layers) {
    gpt_config c = {.n_layer = layers, .n_head = llama ? 4 : 2, .n_embd = C, .n_positions = 8, .vocab_size = V,
                    .ln_eps = 1e-5f};
    if (llama) {
        c.block.norm_type = BLOCK_NORM_TYPE_RMSNORM;
        c.block.mlp = BLOCK_MLP_SWIGLU;
        c.block.bias = BLOCK_BIAS_NONE;
        c.block.rope = 1;
        c.block.rope_layout = KILN_ROPE_HALF;
        c.position = GPT_POSITION_ROPE;
        c.n_kv_head = 2;
        c.n_ffn = 12;
    }
    char err[256];
    ck_assert_msg(!gpt_config_check(&c, err, sizeof err), "%s", err);
    return c;
}

static gpt_model *tiny_model(kiln_ctx *ctx, const gpt_config *cfg) {
    gpt_model *m = gpt_new(ctx, cfg);
    ck_assert_msg(m != NULL, "%s", kiln_error_message());
    ck_assert_int_eq(gpt_init(m, 3), KILN_OK);
    /* GPT-2's 0.02 init would leave the attention uniform: scale the matrices up */
    for (int i = 0; i < m->n_params; i++)
        if (m->params[i].spec.ndim == 2)
            ck_assert_int_eq(kiln_init_normal(m->params[i].t, 17, (uint64_t)i, 0.0f, 0.4f), KILN_OK);
    return m;
}

/* An adapter with B drawn too (PEFT's zeros would hide A's gradient and the delta). */
static lora_adapter *tiny_adapter(gpt_model *m, const char *targets, int rank) {
    char err[256];
    lora_options o = {.rank = rank, .alpha = 3.0f};
    ck_assert_msg(!lora_targets_parse(&m->cfg, targets, &o.targets, err, sizeof err), "%s", err);
    lora_adapter *a = lora_new(m, &o, 5, err, sizeof err);
    ck_assert_msg(a != NULL, "%s", err);
    for (int i = 0; i < a->n_params; i++)
        if (a->params[i].spec.slot % 2)
            ck_assert_int_eq(kiln_init_normal(a->params[i].t, 23, (uint64_t)i, 0.0f, 0.5f), KILN_OK);
    return a;
}

static void ids_of(int32_t *x, int32_t *y) {
    for (int i = 0; i < B * T; i++) {
        x[i] = (int32_t)((i * 7 + 3) % V);
        y[i] = (int32_t)((i * 5 + 1) % V);
    }
}

static kiln_tensor *ids_tensor(kiln_ctx *ctx, const int32_t *v) {
    int64_t shape[2] = {B, T};
    return kt_tensor_i32(ctx, 2, shape, v);
}

static float *host_copy(const kiln_tensor *t) {
    ck_assert_msg(t != NULL, "%s", kiln_error_message());
    float *h = malloc((size_t)kiln_numel(t) * sizeof *h);
    ck_assert_int_eq(kiln_download_f32(t, h, kiln_numel(t)), KILN_OK);
    return h;
}

/* The logits of m on the fixed ids, in evaluation mode. */
static float *logits_of(gpt_model *m) {
    int32_t x[B * T], y[B * T];
    ids_of(x, y);
    kiln_set_grad_enabled(m->ctx, 0);
    kiln_set_training(m->ctx, 0);
    kiln_tensor *ids = ids_tensor(m->ctx, x);
    float *h = host_copy(gpt_forward(m, ids, 0.0f));
    kiln_tensor_free(ids);
    kiln_step_reset(m->ctx);
    return h;
}

/* Adds scale A^T B^T of every target into a copy of the base's weights (kiln's [in, out],
 * the target's columns). */
static void merge_on_host(gpt_model *m, const lora_adapter *a) {
    for (int i = 0; i < a->n_params; i += 2) {
        const param_spec *s = &a->params[i].spec;
        lora_site site = a->site[s->slot / 2];
        block_slot slot = block_linear_slot(site.linear);
        kiln_tensor *W = m->blocks[s->layer].w[slot];
        float *w = host_copy(W), *A = host_copy(a->params[i].t), *Bm = host_copy(a->params[i + 1].t);
        int64_t out = W->shape[1];
        for (int64_t r = 0; r < site.in; r++)
            for (int64_t c = 0; c < site.cols; c++) {
                double d = 0;
                for (int k = 0; k < a->rank; k++) d += (double)A[k * site.in + r] * Bm[c * a->rank + k];
                w[r * out + site.col0 + c] += (float)(a->scale * d);
            }
        ck_assert_int_eq(kiln_upload_f32(W, w, kiln_numel(W)), KILN_OK);
        free(w);
        free(A);
        free(Bm);
    }
}

static void expect_merged_forward(int llama, const char *targets) {
    kiln_ctx *ctx = kt_ctx();
    gpt_config cfg = tiny_config(llama, 2);
    gpt_model *m = tiny_model(ctx, &cfg);
    float *base = logits_of(m);
    lora_adapter *a = tiny_adapter(m, targets, 2);
    char err[256];
    ck_assert_msg(!lora_attach(m, a, err, sizeof err), "%s", err);
    float *adapted = logits_of(m);
    lora_detach_all(m);
    float *detached = logits_of(m);
    merge_on_host(m, a);
    float *merged = logits_of(m);
    int64_t n = (int64_t)B * T * V;
    ck_assert_msg(kt_max_abs_diff(base, detached, n) == 0.0, "detaching leaves the base as it was");
    ck_assert_msg(kt_max_abs_diff(base, adapted, n) > 1e-3, "the adapter changes the logits");
    double e = kt_normalized_error(merged, adapted, n);
    ck_assert_msg(e < 1e-10, "%s %s: adapter vs merged weights: normalized error %g", llama ? "llama" : "gpt2",
                  targets ? targets : "all", e);
    free(base), free(adapted), free(detached), free(merged);
    lora_free(a);
    gpt_free(m);
}

START_TEST(forward_equals_the_merged_weights) {
    expect_merged_forward(0, NULL);
    expect_merged_forward(0, "c_proj");
    expect_merged_forward(1, NULL);
    expect_merged_forward(1, "q_proj,v_proj,up_proj");
    expect_merged_forward(1, "k_proj,gate_proj,o_proj");
}
END_TEST

/* What the loss of the fixed batch needs. */
typedef struct batch_loss {
    gpt_model *m;
    kiln_tensor *ids, *targets;
} batch_loss;

static kiln_tensor *loss_of(void *user) {
    batch_loss *u = user;
    return gpt_loss(u->m, u->ids, u->targets, 0.0f, NULL);
}

/* The loss and the adapter's gradients (host copies) of m on the fixed batch. */
static float *loss_and_grads(gpt_model *m, lora_adapter *a, int64_t *n_out) {
    kiln_tensor **w = malloc((size_t)a->n_params * sizeof *w);
    for (int i = 0; i < a->n_params; i++) w[i] = a->params[i].t;
    int32_t x[B * T], y[B * T];
    ids_of(x, y);
    batch_loss u = {m, ids_tensor(m->ctx, x), ids_tensor(m->ctx, y)};
    float *out = kt_loss_and_grads(m->ctx, w, a->n_params, loss_of, &u, n_out);
    kiln_tensor_free(u.ids);
    kiln_tensor_free(u.targets);
    free(w);
    return out;
}

/* The loss alone, no tape. */
static double loss_value(gpt_model *m) {
    int32_t x[B * T], y[B * T];
    ids_of(x, y);
    kiln_set_grad_enabled(m->ctx, 0);
    kiln_tensor *ids = ids_tensor(m->ctx, x), *targets = ids_tensor(m->ctx, y);
    float v = NAN;
    ck_assert_int_eq(kiln_read_scalar(gpt_loss(m, ids, targets, 0.0f, NULL), &v), KILN_OK);
    kiln_tensor_free(ids);
    kiln_tensor_free(targets);
    kiln_step_reset(m->ctx);
    return v;
}

/* A model with its base frozen and an adapter attached. */
static void adapted_model(kiln_ctx *ctx, int llama, const char *targets, gpt_model **m, lora_adapter **a) {
    gpt_config cfg = tiny_config(llama, 2);
    *m = tiny_model(ctx, &cfg);
    lora_freeze_base(*m);
    *a = tiny_adapter(*m, targets, 2);
    char err[256];
    ck_assert_msg(!lora_attach(*m, *a, err, sizeof err), "%s", err);
}

/* Central differences of the loss in every adapter element, in float. */
static void expect_finite_differences(int llama, const char *targets) {
    gpt_model *m;
    lora_adapter *a;
    adapted_model(kt_cpu(), llama, targets, &m, &a);
    int64_t n;
    float *g = loss_and_grads(m, a, &n);
    float *fd = malloc((size_t)n * sizeof *fd);
    int64_t at = 1;
    const float eps = 1e-2f;
    for (int i = 0; i < a->n_params; i++) {
        kiln_tensor *t = a->params[i].t;
        float *h = host_copy(t);
        for (int64_t k = 0; k < kiln_numel(t); k++, at++) {
            float keep = h[k];
            h[k] = keep + eps;
            kiln_upload_f32(t, h, kiln_numel(t));
            double up = loss_value(m);
            h[k] = keep - eps;
            kiln_upload_f32(t, h, kiln_numel(t));
            double down = loss_value(m);
            h[k] = keep;
            kiln_upload_f32(t, h, kiln_numel(t));
            fd[at] = (float)((up - down) / (2.0 * eps));
        }
        free(h);
    }
    ck_assert_int_eq(at, n);
    double e = kt_normalized_error(fd + 1, g + 1, n - 1);
    ck_assert_msg(e < 1e-4, "%s %s: adapter gradients vs finite differences: normalized error %g",
                  llama ? "llama" : "gpt2", targets ? targets : "all", e);
    free(g);
    free(fd);
    lora_free(a);
    gpt_free(m);
}

/* The backend's loss and gradients against the CPU's. */
static void expect_cpu_gradients(int llama, const char *targets) {
    gpt_model *m, *mc;
    lora_adapter *a, *ac;
    adapted_model(kt_ctx(), llama, targets, &m, &a);
    adapted_model(kt_cpu(), llama, targets, &mc, &ac);
    int64_t n, nc;
    float *g = loss_and_grads(m, a, &n), *gc = loss_and_grads(mc, ac, &nc);
    ck_assert_int_eq(n, nc);
    double e = kt_normalized_error(gc, g, n);
    ck_assert_msg(e < 1e-8, "%s: loss and adapter gradients vs the CPU: normalized error %g", kt_backend(), e);
    free(g), free(gc);
    lora_free(a), lora_free(ac);
    gpt_free(m), gpt_free(mc);
}

START_TEST(gradients_match) {
    const char *sets[][2] = {{NULL, NULL}, {"c_attn,mlp.c_proj", "q_proj,v_proj,gate_proj"}, {"c_fc", "k_proj,up_proj,down_proj"}};
    for (int s = 0; s < 3; s++)
        for (int llama = 0; llama < 2; llama++) {
            if (!strcmp(kt_backend(), "cpu"))
                expect_finite_differences(llama, sets[s][llama]);
            else
                expect_cpu_gradients(llama, sets[s][llama]);
        }
}
END_TEST

/* SwiGLU's two paths: c_fc requiring grad (two products on its column blocks) and frozen
 * (one product through linear()) give the adapters the same loss and gradients. */
START_TEST(swiglu_paths_agree) {
    gpt_model *m;
    lora_adapter *a;
    adapted_model(kt_ctx(), 1, "gate_proj,up_proj", &m, &a);
    int64_t n, n2;
    float *frozen = loss_and_grads(m, a, &n);
    for (int l = 0; l < m->cfg.n_layer; l++) kiln_set_requires_grad(m->blocks[l].w[BLOCK_FC_W], 1);
    float *trained = loss_and_grads(m, a, &n2);
    ck_assert_int_eq(n, n2);
    double e = kt_normalized_error(frozen, trained, n);
    ck_assert_msg(e < 1e-10, "SwiGLU's training path: normalized error %g", e);
    free(frozen), free(trained);
    lora_free(a);
    gpt_free(m);
}
END_TEST

START_TEST(the_base_is_frozen) {
    gpt_model *m;
    lora_adapter *a;
    adapted_model(kt_ctx(), 0, NULL, &m, &a);
    for (int i = 0; i < m->n_params + m->n_buffers; i++)
        ck_assert_msg(!kiln_requires_grad(m->params[i].t), "%s requires grad", m->params[i].spec.name);
    for (int i = 0; i < a->n_params; i++) ck_assert(kiln_requires_grad(a->params[i].t));
    lora_free(a);
    gpt_free(m);
}
END_TEST

START_TEST(targets_match_by_suffix) {
    char err[256];
    unsigned mask;
    gpt_config g = tiny_config(0, 1), l = tiny_config(1, 1);
    ck_assert_int_eq(lora_targets_parse(&g, "c_proj", &mask, err, sizeof err), 0);
    ck_assert_uint_eq(mask, (1u << LORA_ATTN_C_PROJ) | (1u << LORA_MLP_C_PROJ));
    ck_assert_int_eq(lora_targets_parse(&g, "attn.c_proj,c_fc", &mask, err, sizeof err), 0);
    ck_assert_uint_eq(mask, (1u << LORA_ATTN_C_PROJ) | (1u << LORA_MLP_C_FC));
    ck_assert_int_eq(lora_targets_parse(&g, NULL, &mask, err, sizeof err), 0);
    ck_assert_uint_eq(mask, 0xfu);
    ck_assert_int_eq(lora_targets_parse(&l, "q_proj,mlp.down_proj", &mask, err, sizeof err), 0);
    ck_assert_uint_eq(mask, (1u << LORA_Q_PROJ) | (1u << LORA_DOWN_PROJ));
    /* a suffix must end at a dot: "proj" is not a module name */
    ck_assert_int_eq(lora_targets_parse(&l, "proj", &mask, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "\"proj\" matches no module"));
    ck_assert_int_eq(lora_targets_parse(&g, "q_proj", &mask, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "\"q_proj\""));
}
END_TEST

START_TEST(ranks_out_of_range_are_refused) {
    gpt_config cfg = tiny_config(1, 1);
    gpt_model *m = tiny_model(kt_ctx(), &cfg);
    char err[256];
    lora_options o = {.rank = 0, .alpha = 8};
    ck_assert_ptr_null(lora_new(m, &o, 1, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "must be positive"));
    /* k_proj is [4, 8]: rank 5 exceeds its smaller side */
    o.rank = 5;
    ck_assert_ptr_null(lora_new(m, &o, 1, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "self_attn.k_proj"));
    o.rank = 4;
    lora_adapter *a = lora_new(m, &o, 1, err, sizeof err);
    ck_assert_msg(a != NULL, "%s", err);
    lora_free(a);
    gpt_free(m);
}
END_TEST

/* PEFT's init: A within +-1/sqrt(in), B zero, scale alpha / r. */
START_TEST(init_is_peft_s) {
    gpt_config cfg = tiny_config(0, 1);
    gpt_model *m = tiny_model(kt_ctx(), &cfg);
    char err[256];
    lora_options o = {.rank = 4, .alpha = 8};
    lora_adapter *a = lora_new(m, &o, 1, err, sizeof err);
    ck_assert_msg(a != NULL, "%s", err);
    ck_assert_float_eq(a->scale, 2.0f);
    for (int i = 0; i < a->n_params; i++) {
        float *h = host_copy(a->params[i].t);
        float bound = 1.0f / sqrtf((float)a->params[i].t->shape[1]), most = 0;
        for (int64_t k = 0; k < kiln_numel(a->params[i].t); k++) most = fmaxf(most, fabsf(h[k]));
        if (i % 2)
            ck_assert_float_eq(most, 0.0f);
        else
            ck_assert(most <= bound && most > 0.5f * bound);
        free(h);
    }
    lora_free(a);
    gpt_free(m);
}
END_TEST

/* The files PEFT reads: names, shapes, config keys; then read back into the same numbers. */
START_TEST(peft_files_round_trip) {
    gpt_config cfg = tiny_config(1, 2);
    gpt_model *m = tiny_model(kt_ctx(), &cfg);
    lora_adapter *a = tiny_adapter(m, "q_proj,down_proj", 2);
    char dir[] = "/tmp/kiln_lora_XXXXXX", err[512], path[256];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    lora_base_info base;
    ck_assert_msg(!lora_base_info_of(m, NULL, NULL, &base, err, sizeof err), "%s", err);
    ck_assert_str_eq(base.arch, "llama");
    model_meta extra[] = {{"step", "7"}};
    ck_assert_msg(!lora_save_peft(a, &base, dir, extra, 1, err, sizeof err), "%s", err);
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", dir);
    st_file *f;
    ck_assert_msg(!st_open(path, &f, err, sizeof err), "%s", err);
    ck_assert_int_eq(st_count(f), 8);
    const st_tensor *t = st_find(f, "base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight");
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(t->shape[0], 2);
    ck_assert_int_eq(t->shape[1], C);
    t = st_find(f, "base_model.model.model.layers.0.mlp.down_proj.lora_B.weight");
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(t->shape[0], C);
    ck_assert_int_eq(t->shape[1], 2);
    ck_assert_str_eq(t->dtype_name, "F32");
    ck_assert_str_eq(st_meta(f, "step"), "7");
    ck_assert_str_eq(st_meta(f, "kiln.base.architecture"), "llama");
    st_close(f);
    snprintf(path, sizeof path, "%s/adapter_config.json", dir);
    FILE *cf = fopen(path, "rb");
    char text[2048];
    size_t len = fread(text, 1, sizeof text, cf);
    fclose(cf);
    json_value *root;
    ck_assert_msg(!json_parse(text, len, &root, err, sizeof err), "%s", err);
    int64_t r;
    double alpha;
    ck_assert(json_as_int64(json_get(root, "r"), &r) && r == 2);
    ck_assert(json_as_double(json_get(root, "lora_alpha"), &alpha) && alpha == 3.0);
    ck_assert_str_eq(json_as_string(json_get(root, "peft_type")), "LORA");
    ck_assert_str_eq(json_as_string(json_get(root, "task_type")), "CAUSAL_LM");
    ck_assert_str_eq(json_as_string(json_get(root, "bias")), "none");
    int fifo;
    ck_assert(json_as_bool(json_get(root, "fan_in_fan_out"), &fifo) && !fifo);
    ck_assert_int_eq(json_count(json_get(root, "target_modules")), 2);
    ck_assert_str_eq(json_as_string(json_at(json_get(root, "target_modules"), 0)), "self_attn.q_proj");
    json_free(root);
    /* read back: the same logits; another base's shapes are refused */
    char err2[512];
    ck_assert_msg(!lora_attach(m, a, err, sizeof err), "%s", err);
    float *want = logits_of(m);
    lora_detach_all(m);
    lora_adapter *b;
    ck_assert_msg(!lora_load(m, &base, dir, 1.0f, &b, err, sizeof err), "%s", err);
    ck_assert_str_eq(base.warning, "");
    ck_assert_msg(!lora_attach(m, b, err, sizeof err), "%s", err);
    float *got = logits_of(m);
    ck_assert(kt_max_abs_diff(want, got, (int64_t)B * T * V) == 0.0);
    lora_base_info other = base;
    snprintf(other.shapes, sizeof other.shapes, "n_layer=3");
    lora_adapter *c;
    ck_assert_int_eq(lora_load(m, &other, dir, 1.0f, &c, err2, sizeof err2), -1);
    ck_assert_ptr_nonnull(strstr(err2, "another base"));
    snprintf(other.shapes, sizeof other.shapes, "%s", base.shapes);
    snprintf(other.hash, sizeof other.hash, "0123");
    ck_assert_msg(!lora_load(m, &other, dir, 1.0f, &c, err2, sizeof err2), "%s", err2);
    ck_assert_ptr_nonnull(strstr(other.warning, "another file"));
    lora_free(c);
    free(want), free(got);
    lora_free(b);
    lora_free(a);
    gpt_free(m);
    unlink(path);
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", dir);
    unlink(path);
    rmdir(dir);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_add_test(tc, forward_equals_the_merged_weights);
    tcase_add_test(tc, gradients_match);
    tcase_add_test(tc, swiglu_paths_agree);
    tcase_add_test(tc, the_base_is_frozen);
    tcase_add_test(tc, targets_match_by_suffix);
    tcase_add_test(tc, ranks_out_of_range_are_refused);
    tcase_add_test(tc, init_is_peft_s);
    tcase_add_test(tc, peft_files_round_trip);
}

int main(int argc, char **argv) { return kt_main(argc, argv, "host_lora", add_tests, NULL, 0); }
