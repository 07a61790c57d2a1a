/* LoRA adapters as llama.cpp's LoRA GGUF (gpt_lora_gguf.h). */
#include "model/gpt/gpt_lora_gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/error_printf.h"
#include "formats/gguf.h"
#include "model/gpt/gpt_export.h"
#include "model/gpt/gpt_gguf.h"
#include "model/gpt/gpt_import.h"

/* Each target's base tensor in GGUF (after "blk.N."), in lora_target order. */
static const char *const gguf_names[LORA_TARGET_COUNT] = {
    "attn_qkv.weight", "attn_output.weight", "ffn_up.weight",   "ffn_down.weight",
    "attn_q.weight",   "attn_k.weight",      "attn_v.weight",   "attn_output.weight",
    "ffn_gate.weight", "ffn_up.weight",      "ffn_down.weight"};

const char *gpt_lora_gguf_arch(const gpt_config *cfg, int *permuted, char *err, size_t errlen) {
    char why[96];
    *permuted = 0;
    if (gpt_gguf_writes_gpt2(cfg)) {
        if (!gpt_not_gpt2(cfg, why, sizeof why)) return "gpt2";
        snprintf(err, errlen, "the base has %s, which llama.cpp's gpt2 cannot hold", why);
        return NULL;
    }
    const char *arch = gpt_llama_arch(cfg, err, errlen);
    /* as gpt_export_gguf_llama writes the base: a model of adjacent rope pairs is llama's order already */
    if (arch) *permuted = !strcmp(arch, "llama") && cfg->block.rope_layout == 1;
    return arch;
}

int gpt_lora_module_shape(const gpt_config *cfg, int module, int64_t *in, int64_t *out) {
    lora_family f;
    char err[256];
    if (module < 0 || module >= LORA_TARGET_COUNT || lora_family_of(cfg, &f, err, sizeof err) ||
        !(lora_family_targets(f) >> module & 1u))
        return -1;
    lora_site s = lora_site_of(cfg, (lora_target)module);
    *in = s.in;
    *out = s.cols;
    return 0;
}

/* B's file row of kiln's row o: llama's q/k heads of width hd permuted (gpt_import.h). */
static int64_t b_row(int64_t o, int64_t rows, int64_t permute_hd) {
    import_piece p = {.rows = rows, .unpermute_hd = permute_hd};
    return import_file_row(&p, o);
}

const char *gpt_lora_module_gguf(int module) { return gguf_names[module]; }

int64_t gpt_lora_permute_hd(const gpt_config *cfg, int permuted, int module) {
    block_config b = gpt_block_config(cfg);
    return permuted && (module == LORA_Q_PROJ || module == LORA_K_PROJ) ? block_head_dim(&b) : 0;
}

/* The GGUF name of a pair's tensor: "blk.N.<base>.lora_a" (which 'a' or 'b'). */
static void tensor_name(const gpt_lora_pair *p, char which, char *out, size_t size) {
    snprintf(out, size, "blk.%d.%s.lora_%c", p->layer, gguf_names[p->module], which);
}

/* A pair checked against cfg, and its B in the file's row order (malloc'd). */
static float *file_b(const gpt_config *cfg, int permuted, const gpt_lora_pair *p, char *err, size_t errlen) {
    int64_t in, out;
    if (gpt_lora_module_shape(cfg, p->module, &in, &out) || p->layer < 0 || p->layer >= cfg->n_layer ||
        p->in != in || p->out != out || p->rank <= 0)
        return snprintf(err, errlen, "the adapter's h.%d.%s is not of the base's shape", p->layer,
                        p->module >= 0 && p->module < LORA_TARGET_COUNT ? lora_target_modules[p->module] : "?"),
               NULL;
    float *b = malloc((size_t)(out * p->rank) * sizeof *b);
    if (!b) return snprintf(err, errlen, "out of memory"), NULL;
    int64_t hd = gpt_lora_permute_hd(cfg, permuted, p->module);
    for (int64_t o = 0; o < out; o++) memcpy(b + b_row(o, out, hd) * p->rank, p->b + o * p->rank, (size_t)p->rank * 4);
    return b;
}

static int add_pair(gguf_writer *w, const gpt_lora_pair *p, const float *b) {
    char name[96];
    int64_t ne_a[2] = {p->in, p->rank}, ne_b[2] = {p->rank, p->out};
    tensor_name(p, 'a', name, sizeof name);
    int rc = gguf_writer_tensor(w, name, GGML_TYPE_F32, 2, ne_a, p->a, (uint64_t)(p->in * p->rank) * 4);
    tensor_name(p, 'b', name, sizeof name);
    return rc | gguf_writer_tensor(w, name, GGML_TYPE_F32, 2, ne_b, b, (uint64_t)(p->out * p->rank) * 4);
}

int gpt_lora_gguf_save(const gpt_config *cfg, float alpha, const gpt_lora_pair *pairs, int n,
                       const gpt_lora_meta *meta, int n_meta, const char *path, char *err, size_t errlen) {
    int permuted;
    const char *arch = gpt_lora_gguf_arch(cfg, &permuted, err, errlen);
    if (!arch) return -1;
    if (n <= 0) return snprintf(err, errlen, "the adapter adapts no matrix"), -1;
    gguf_writer *w = gguf_writer_new();
    float **bs = calloc((size_t)n, sizeof *bs);
    int rc = w && bs ? 0 : (snprintf(err, errlen, "out of memory"), -1);
    if (rc == 0) {
        gguf_writer_str(w, "general.architecture", arch);
        gguf_writer_str(w, "general.type", "adapter");
        gguf_writer_str(w, "general.name", "kiln LoRA adapter");
        gguf_writer_str(w, "adapter.type", "lora");
        gguf_writer_f32(w, "adapter.lora.alpha", alpha);
        for (int i = 0; i < n_meta; i++) gguf_writer_str(w, meta[i].key, meta[i].value);
    }
    for (int i = 0; rc == 0 && i < n; i++) {
        if (!(bs[i] = file_b(cfg, permuted, &pairs[i], err, errlen))) rc = -1;
        else if (add_pair(w, &pairs[i], bs[i])) rc = (snprintf(err, errlen, "%s: cannot be written as GGUF", path), -1);
    }
    if (rc == 0) rc = gguf_writer_save(w, path, err, errlen);
    for (int i = 0; bs && i < n; i++) free(bs[i]);
    free(bs);
    gguf_writer_free(w);
    return rc;
}

int gpt_lora_is_gguf(const char *path) {
    FILE *f = fopen(path, "rb");
    char magic[4] = {0};
    size_t n = f ? fread(magic, 1, 4, f) : 0;
    if (f) fclose(f);
    return n == 4 && !memcmp(magic, "GGUF", 4);
}
