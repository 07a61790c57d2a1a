/* llama.cpp's LoRA GGUF (model/gpt/gpt_lora_gguf.h) and the merge (gpt_lora_merge.h), by the
 * rules of llama.cpp's loader (src/llama-adapter.cpp, llama_adapter_lora_init_impl) written
 * out here: the keys, "<base>.lora_a" ne [n_in, r] and ".lora_b" ne [r, n_out], llama's q/k
 * rows of B in convert_hf_to_gguf.py's permuted order (head h's row a * hd/2 + b at
 * h * hd + 2 b + a); the read-back equal to what was written; refusals in one line; and
 * W' = W + scale B A at each module's columns. llama.cpp itself runs the files in
 * tests/llama/check_lora.py. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/gguf.h"
#include "model/gpt/gpt_lora_gguf.h"
#include "model/lora_gguf.h"
#include "model/lora_merge.h"
#include "testutil.h"

enum { C = 32, NH = 2, KV = 1, HD = 16, F = 64, NL = 2, R = 4 };

/* A tiny llama: 2 heads of 16 over 1 KV head, F 64. */
static gpt_config llama(void) {
    gpt_config c = {.n_layer = NL, .n_head = NH, .n_embd = C, .n_positions = 16, .vocab_size = 40, .ln_eps = 1e-5f,
                    .block = block_options_default(), .n_kv_head = KV, .head_dim = HD, .n_ffn = F,
                    .position = GPT_POSITION_ROPE};
    c.block.norm_type = BLOCK_NORM_TYPE_RMSNORM;
    c.block.mlp = BLOCK_MLP_SWIGLU;
    c.block.bias = BLOCK_BIAS_NONE;
    c.block.rope = 1;
    c.block.rope_layout = 1;
    char err[256];
    ck_assert_msg(gpt_config_check(&c, err, sizeof err) == 0, "%s", err);
    return c;
}

static gpt_config gpt2(void) {
    gpt_config c = {.n_layer = NL, .n_head = NH, .n_embd = C, .n_positions = 16, .vocab_size = 40, .ln_eps = 1e-5f,
                    .block = block_options_default()};
    char err[256];
    ck_assert_msg(gpt_config_check(&c, err, sizeof err) == 0, "%s", err);
    return c;
}

/* A pair of (layer, module) with values that name their place. */
static gpt_lora_pair pair(const gpt_config *c, int layer, int module) {
    gpt_lora_pair p = {.layer = layer, .module = module, .rank = R};
    ck_assert_int_eq(gpt_lora_module_shape(c, module, &p.in, &p.out), 0);
    p.a = malloc((size_t)(R * p.in) * sizeof *p.a);
    p.b = malloc((size_t)(p.out * R) * sizeof *p.b);
    for (int64_t i = 0; i < R * p.in; i++) p.a[i] = (float)(layer * 1000 + module * 100) + 0.001f * (float)i;
    for (int64_t i = 0; i < p.out * R; i++) p.b[i] = -(float)(layer * 1000 + module * 100) - 0.01f * (float)i;
    return p;
}

static void tmp_path(char *out, size_t size, const char *what) {
    snprintf(out, size, "/tmp/kiln_lora_gguf_%ld_%s.gguf", (long)getpid(), what);
}

static const char *kv_str(const gguf_file *f, const char *key) {
    const gguf_kv *kv = gguf_find_kv(f, key);
    return kv && kv->type == GGUF_STRING ? kv->str : "";
}

START_TEST(llama_adapter_in_llama_cpp_layout) {
    gpt_config c = llama();
    gpt_lora_pair p[3] = {pair(&c, 0, 4 /* q_proj */), pair(&c, 1, 5 /* k_proj */), pair(&c, 1, 10 /* down_proj */)};
    gpt_lora_meta meta[1] = {{"kiln.base.architecture", "llama"}};
    char path[128], err[512];
    tmp_path(path, sizeof path, "llama");
    ck_assert_msg(gpt_lora_gguf_save(&c, 16.0f, p, 3, meta, 1, path, err, sizeof err) == 0, "%s", err);
    gguf_file *f;
    ck_assert_msg(gguf_open(path, &f, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(kv_str(f, "general.type"), "adapter");
    ck_assert_str_eq(kv_str(f, "adapter.type"), "lora");
    ck_assert_str_eq(kv_str(f, "general.architecture"), "llama");
    const gguf_kv *alpha = gguf_find_kv(f, "adapter.lora.alpha");
    ck_assert_ptr_nonnull(alpha);
    ck_assert_int_eq(alpha->type, GGUF_F32);
    ck_assert_double_eq(alpha->f, 16.0);
    const gguf_tensor *a = gguf_find_tensor(f, "blk.0.attn_q.weight.lora_a");
    const gguf_tensor *b = gguf_find_tensor(f, "blk.0.attn_q.weight.lora_b");
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(a->type, GGML_TYPE_F32);
    ck_assert(a->ne[0] == C && a->ne[1] == R && b->ne[0] == R && b->ne[1] == NH * HD);
    ck_assert_ptr_nonnull(gguf_find_tensor(f, "blk.1.attn_k.weight.lora_b"));
    ck_assert_ptr_nonnull(gguf_find_tensor(f, "blk.1.ffn_down.weight.lora_a"));
    /* A byte for byte; B's row h * hd + a * hd/2 + j at h * hd + 2 j + a */
    ck_assert_int_eq(memcmp(a->data, p[0].a, (size_t)(R * C) * 4), 0);
    float *fb = malloc((size_t)b->nbytes);
    memcpy(fb, b->data, (size_t)b->nbytes);
    for (int h = 0; h < NH; h++)
        for (int half = 0; half < 2; half++)
            for (int j = 0; j < HD / 2; j++)
                for (int r = 0; r < R; r++)
                    ck_assert_float_eq(fb[(h * HD + 2 * j + half) * R + r], p[0].b[(h * HD + half * HD / 2 + j) * R + r]);
    free(fb);
    gguf_close(f);
    gpt_lora_gguf g;
    ck_assert_msg(gpt_lora_gguf_load(&c, path, &g, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(g.n, 3);
    ck_assert_int_eq(g.rank, R);
    ck_assert_float_eq(g.alpha, 16.0f);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(g.pairs[i].layer, p[i].layer);
        ck_assert_int_eq(g.pairs[i].module, p[i].module);
        ck_assert_int_eq(memcmp(g.pairs[i].a, p[i].a, (size_t)(R * p[i].in) * 4), 0);
        ck_assert_int_eq(memcmp(g.pairs[i].b, p[i].b, (size_t)(R * p[i].out) * 4), 0);
    }
    ck_assert_int_eq(g.n_meta, 1);
    ck_assert_str_eq(g.meta[0].value, "llama");
    gpt_lora_gguf_free(&g);
    /* another base: its shapes, its architecture */
    gpt_config wide = c;
    wide.n_ffn = 2 * F;
    ck_assert_int_eq(gpt_lora_gguf_load(&wide, path, &g, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "blk.1.ffn_down.weight' has incorrect shape") != NULL, "%s", err);
    gpt_config other = gpt2();
    ck_assert_int_eq(gpt_lora_gguf_load(&other, path, &g, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "an adapter for llama.cpp's llama, but the base is gpt2") != NULL, "%s", err);
    remove(path);
    for (int i = 0; i < 3; i++) free(p[i].a), free(p[i].b);
}
END_TEST

START_TEST(gpt2_conv1d_adapter_is_not_transposed) {
    gpt_config c = gpt2();
    gpt_lora_pair p = pair(&c, 1, 0 /* attn.c_attn */);
    char path[128], err[512];
    tmp_path(path, sizeof path, "gpt2");
    ck_assert_msg(gpt_lora_gguf_save(&c, 8.0f, &p, 1, NULL, 0, path, err, sizeof err) == 0, "%s", err);
    gguf_file *f;
    ck_assert_msg(gguf_open(path, &f, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(kv_str(f, "general.architecture"), "gpt2");
    const gguf_tensor *a = gguf_find_tensor(f, "blk.1.attn_qkv.weight.lora_a");
    const gguf_tensor *b = gguf_find_tensor(f, "blk.1.attn_qkv.weight.lora_b");
    /* attn_qkv is ne [C, 3C]: A [C, r], B [r, 3C], PEFT's order as it is */
    ck_assert(a && b && a->ne[0] == C && a->ne[1] == R && b->ne[0] == R && b->ne[1] == 3 * C);
    ck_assert_int_eq(memcmp(b->data, p.b, (size_t)(R * 3 * C) * 4), 0);
    gguf_close(f);
    /* a Llama module on GPT-2 has no place */
    gpt_lora_pair q = pair(&c, 0, 1);
    q.module = 4;
    ck_assert_int_eq(gpt_lora_gguf_save(&c, 8.0f, &q, 1, NULL, 0, path, err, sizeof err), -1);
    free(q.a), free(q.b);
    free(p.a), free(p.b);
    remove(path);
}
END_TEST

START_TEST(a_model_file_is_not_an_adapter) {
    gguf_writer *w = gguf_writer_new();
    gguf_writer_str(w, "general.architecture", "gpt2");
    char path[128], err[512];
    tmp_path(path, sizeof path, "model");
    ck_assert_int_eq(gguf_writer_save(w, path, err, sizeof err), 0);
    gguf_writer_free(w);
    gpt_config c = gpt2();
    gpt_lora_gguf g;
    ck_assert_int_eq(gpt_lora_gguf_load(&c, path, &g, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "is not a LoRA adapter: its general.type is missing") != NULL, "%s", err);
    ck_assert_ptr_null(strchr(err, '\n'));
    remove(path);
}
END_TEST

/* W' - W = scale B A at k_proj's columns (after q's) of c_attn, nothing else moved; and the
 * adapter's pairs through the GGUF back into an adapter unchanged. */
START_TEST(merge_adds_scaled_ba_at_the_module_columns) {
    gpt_config c = llama();
    gpt_model *m = gpt_new(kt_cpu(), &c);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(gpt_init(m, 5), KILN_OK);
    char err[256];
    lora_options o = {.rank = R, .alpha = 2.0f, .targets = 1u << LORA_K_PROJ};
    lora_adapter *a = lora_alloc(m, &o, err, sizeof err);
    ck_assert_msg(a != NULL, "%s", err);
    ck_assert_int_eq(a->n_params, 2 * NL);
    kiln_tensor *A = a->params[2].t, *B = a->params[3].t; /* layer 1 */
    float *va = malloc((size_t)(R * C) * 4), *vb = malloc((size_t)(KV * HD * R) * 4);
    for (int64_t i = 0; i < R * C; i++) va[i] = sinf((float)i);
    for (int64_t i = 0; i < KV * HD * R; i++) vb[i] = cosf((float)i);
    kiln_upload_f32(A, va, R * C);
    kiln_upload_f32(B, vb, KV * HD * R);
    kiln_tensor *w = m->blocks[1].w[BLOCK_QKV_W];
    int64_t n = kiln_numel(w), width = w->shape[1];
    float *before = malloc((size_t)n * 4), *after = malloc((size_t)n * 4);
    kiln_download_f32(w, before, n);
    ck_assert_msg(lora_merge(m, &a, 1, err, sizeof err) == 0, "%s", err);
    kiln_download_f32(w, after, n);
    for (int64_t i = 0; i < C; i++)
        for (int64_t col = 0; col < width; col++) {
            double d = 0;
            if (col >= NH * HD && col < NH * HD + KV * HD)
                for (int r = 0; r < R; r++) d += 0.5 * vb[(col - NH * HD) * R + r] * va[r * C + i];
            ck_assert_double_eq_tol(after[i * width + col] - before[i * width + col], d, 1e-5);
        }
    char path[128];
    tmp_path(path, sizeof path, "adapter");
    ck_assert_msg(lora_save_gguf(a, &c, NULL, path, err, sizeof err) == 0, "%s", err);
    lora_adapter *back;
    ck_assert_msg(lora_load(m, NULL, path, 3.0f, &back, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(back->rank, R);
    ck_assert_uint_eq(back->targets, 1u << LORA_K_PROJ);
    ck_assert_float_eq_tol(back->scale, 3.0f * 0.5f, 1e-6f);
    float *got = malloc((size_t)(KV * HD * R) * 4);
    kiln_download_f32(back->params[3].t, got, KV * HD * R);
    ck_assert_int_eq(memcmp(got, vb, (size_t)(KV * HD * R) * 4), 0);
    remove(path);
    free(got), free(before), free(after), free(va), free(vb);
    lora_free(back);
    lora_free(a);
    gpt_free(m);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, llama_adapter_in_llama_cpp_layout);
    tcase_add_test(tc, gpt2_conv1d_adapter_is_not_transposed);
    tcase_add_test(tc, a_model_file_is_not_an_adapter);
    tcase_add_test(tc, merge_adds_scaled_ba_at_the_module_columns);
}

int main(void) { return kt_run_tcase("host_lora_gguf", "lora_gguf", 60, add_tests); }
