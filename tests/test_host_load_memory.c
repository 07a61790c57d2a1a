/* Loading never holds the weights twice (model/gpt/gpt_import.h): a Llama-shaped Hugging
 * Face folder of 63 M BF16 weights (126 MB on disk, 252 MB as the cpu model's f32), written
 * here, is read by gpt_load_hf with the process's peak resident memory (getrusage's
 * ru_maxrss, which counts the file's mapped pages) at most 1.1 x the loaded weights + 64 MiB,
 * the bound: the file's pages are given back as each tensor is converted, and the
 * conversion goes in chunks of a few MiB. The same in f16 (eval and decode in fp16: the
 * weights converted at load, 120 MiB, never held in f32). Then every value of the chunked, transposed and
 * stacked tensors (c_attn from q, k and v; c_fc from gate and up over three chunks; the
 * embedding and the untied head over seven) is the file's, at its place in kiln's layout.
 * cpu only: other backends keep the weights in device memory. */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "model/gpt/gpt_hf.h"
#include "testfile.h"
#include "testutil.h"

/* A sanitizer's shadow memory counts in the resident set: the bound is then not measured. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif
#ifndef UNDER_SANITIZER
#define UNDER_SANITIZER 0
#endif

enum { C = 768, L = 8, H = 12, KVH = 4, HD = 64, F = 2048, V = 8192 };

/* The BF16 bits of element i of tensor `seed`: a hash, exponent fixed so that every value
 * is in +-[1/128, 1/64) (exact in bf16 and f32). */
static uint16_t bf16_at(uint64_t seed, uint64_t i) {
    uint64_t z = (seed << 40) + i + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (uint16_t)((z & 0x807f) | 0x3c00);
}

static float value_at(uint64_t seed, uint64_t i) {
    uint32_t bits = (uint32_t)bf16_at(seed, i) << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

typedef struct hf_tensor {
    char name[80];
    int64_t rows, cols; /* cols 0: 1-D */
} hf_tensor;

static int model_tensors(hf_tensor *t) {
    int n = 0;
    t[n++] = (hf_tensor){"model.embed_tokens.weight", V, C};
    t[n++] = (hf_tensor){"lm_head.weight", V, C};
    t[n++] = (hf_tensor){"model.norm.weight", C, 0};
    static const struct { const char *name; int64_t rows, cols; } per[] = {
        {"input_layernorm.weight", C, 0}, {"post_attention_layernorm.weight", C, 0},
        {"self_attn.q_proj.weight", H * HD, C}, {"self_attn.k_proj.weight", KVH * HD, C},
        {"self_attn.v_proj.weight", KVH * HD, C}, {"self_attn.o_proj.weight", C, H * HD},
        {"mlp.gate_proj.weight", F, C}, {"mlp.up_proj.weight", F, C}, {"mlp.down_proj.weight", C, F}};
    for (int l = 0; l < L; l++)
        for (size_t k = 0; k < sizeof per / sizeof per[0]; k++) {
            snprintf(t[n].name, sizeof t[n].name, "model.layers.%d.%s", l, per[k].name);
            t[n].rows = per[k].rows, t[n].cols = per[k].cols;
            n++;
        }
    return n;
}

static int64_t numel(const hf_tensor *t) { return t->rows * (t->cols ? t->cols : 1); }

/* config.json and model.safetensors, the values streamed out 1 MiB at a time. */
static void write_folder(const char *dir) {
    hf_tensor t[3 + 9 * L];
    int n = model_tensors(t);
    char path[512], *header = malloc(1 << 16);
    size_t at = 0;
    uint64_t offset = 0;
    at += (size_t)sprintf(header, "{");
    for (int i = 0; i < n; i++) {
        uint64_t bytes = 2 * (uint64_t)numel(&t[i]);
        char shape[64];
        if (t[i].cols) snprintf(shape, sizeof shape, "[%lld, %lld]", (long long)t[i].rows, (long long)t[i].cols);
        else snprintf(shape, sizeof shape, "[%lld]", (long long)t[i].rows);
        at += (size_t)sprintf(header + at, "%s\"%s\": {\"dtype\": \"BF16\", \"shape\": %s, \"data_offsets\": [%llu, %llu]}",
                              i ? ", " : "", t[i].name, shape, (unsigned long long)offset,
                              (unsigned long long)(offset + bytes));
        offset += bytes;
    }
    at += (size_t)sprintf(header + at, "}");
    while (at % 8) header[at++] = ' ';
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    uint64_t hlen = at;
    fwrite(&hlen, 8, 1, f); /* little-endian on every machine kiln builds for */
    fwrite(header, 1, at, f);
    uint16_t *buf = malloc(1 << 20);
    for (int i = 0; i < n; i++)
        for (int64_t done = 0, total = numel(&t[i]); done < total;) {
            int64_t k = total - done < (1 << 19) ? total - done : (1 << 19);
            for (int64_t j = 0; j < k; j++) buf[j] = t[i].cols ? bf16_at((uint64_t)i, (uint64_t)(done + j)) : 0x3f80;
            ck_assert_uint_eq(fwrite(buf, 2, (size_t)k, f), (size_t)k);
            done += k;
        }
    ck_assert_int_eq(fclose(f), 0);
    free(buf);
    free(header);
    snprintf(path, sizeof path, "%s/config.json", dir);
    char config[1024];
    snprintf(config, sizeof config,
             "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": %d, \"num_hidden_layers\": %d, "
             "\"num_attention_heads\": %d, \"num_key_value_heads\": %d, \"intermediate_size\": %d, \"vocab_size\": %d, "
             "\"max_position_embeddings\": 256, \"tie_word_embeddings\": false, \"rope_theta\": 500000.0}",
             C, L, H, KVH, F, V);
    kt_write_file(path, config, strlen(config));
}

static long max_rss_kib(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

/* kiln's tensor `name` [rows, cols] against the file: element (i, j) is tensor `file`'s
 * element at (transposed ? (j - j0) * C + i : i * cols + j) for the piece holding j. */
static void expect_values(gpt_model *m, const char *name, const int *files, const int64_t *piece_cols, int pieces,
                          int transposed) {
    gpt_param *p = gpt_find_param(m, name);
    ck_assert_ptr_nonnull(p);
    int64_t rows = p->spec.shape[0], cols = p->spec.shape[1];
    float *v = malloc((size_t)(rows * cols) * sizeof *v);
    ck_assert_int_eq(kiln_download_f32(p->t, v, rows * cols), KILN_OK);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0, piece = 0, j0 = 0; j < cols; j++) {
            if (j - j0 == piece_cols[piece]) j0 += piece_cols[piece++];
            if (piece >= pieces) ck_abort_msg("%s: more columns than its pieces", name); /* not ck_assert: it marks each pass */
            uint64_t at = transposed ? (uint64_t)((j - j0) * rows + i) : (uint64_t)(i * cols + j);
            float want = value_at((uint64_t)files[piece], at);
            if (p->t->dtype == KILN_F16) want = kiln_f16_to_f32(kiln_f32_to_f16(want)); /* rounded at load */
            if (v[i * cols + j] != want)
                ck_abort_msg("%s[%lld, %lld] = %g, the file's %g", name, (long long)i, (long long)j, (double)v[i * cols + j],
                             (double)want);
        }
    free(v);
}

START_TEST(bf16_folder_loads_within_the_bound) {
    char dir[] = "/tmp/kiln_load_memory_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    write_folder(dir);
    long before = max_rss_kib();
    gpt_model *m;
    char err[512];
    kiln_dtype dtype = _i ? KILN_F16 : KILN_F32; /* f16: eval and decode's --precision fp16, converted at load */
    ck_assert_msg(gpt_load_hf(kt_ctx(), dir, dtype, &m, NULL, err, sizeof err) == 0, "%s", err);
    long peak = max_rss_kib();
    double weights = 0;
    for (int i = 0; i < m->n_params + m->n_buffers; i++) weights += (double)kiln_nbytes(m->params[i].t);
    double bound = 1.1 * weights + 64.0 * (1 << 20);
    printf("%s weights %.0f MiB, peak RSS %.0f MiB (%.0f MiB before loading), bound %.0f MiB\n",
           _i ? "f16" : "f32", weights / (1 << 20),
           peak / 1024.0, before / 1024.0, bound / (1 << 20));
    ck_assert_msg(UNDER_SANITIZER || peak * 1024.0 <= bound, "peak RSS %ld KiB above the bound %.0f KiB", peak,
                  bound / 1024);
    /* tensor indices in the file: 0 embed, 1 lm_head, then 9 per layer from 3 */
    int qkv[3] = {3 + 9 * 5 + 2, 3 + 9 * 5 + 3, 3 + 9 * 5 + 4}, fc[2] = {3 + 9 * 6 + 6, 3 + 9 * 6 + 7};
    int embd[1] = {0}, head[1] = {1};
    int64_t qkv_cols[3] = {H * HD, KVH * HD, KVH * HD}, fc_cols[2] = {F, F}, whole[1] = {C};
    expect_values(m, "h.5.attn.c_attn.weight", qkv, qkv_cols, 3, 1);
    expect_values(m, "h.6.mlp.c_fc.weight", fc, fc_cols, 2, 1);
    expect_values(m, "wte.weight", embd, whole, 1, 0);
    expect_values(m, "lm_head.weight", head, whole, 1, 0);
    gpt_free(m);
    kt_remove_tree(dir);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, bf16_folder_loads_within_the_bound, 0, 2);
}

int main(int argc, char **argv) { return kt_main(argc, argv, "host_load_memory", add_tests, NULL, 0); }
