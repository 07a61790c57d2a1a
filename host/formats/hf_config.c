/* config.json of a Hugging Face model folder (hf_config.h). */
#include "formats/hf_config.h"

#include <stdlib.h>
#include <string.h>

#include "formats/error_printf.h"
#include "formats/file_open.h"
#include "formats/json.h"

const char *const hf_arch_class[HF_ARCH_COUNT] = {"LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM",
                                                  "GPT2LMHeadModel"};
const char *const hf_arch_type[HF_ARCH_COUNT] = {"llama", "qwen2", "qwen3", "gpt2"};

/* config.json is a few kilobytes; a larger file is not a config */
#define HF_CONFIG_MAX (1 << 20)

/* An integer key: where it goes and its default per class (REQUIRED: the file must say;
 * SAME_AS_HEADS and FROM_WIDTH: filled in after the others are read). */
enum { REQUIRED = -1, SAME_AS_HEADS = -2, FROM_WIDTH = -3, ABSENT = -4 };
typedef struct int_key {
    const char *name, *alias; /* alias: an older name of the key (GPT-2's n_ctx) */
    size_t slot;              /* offsetof in hf_config */
    int64_t def[HF_ARCH_COUNT];
} int_key;

#define SLOT(f) offsetof(hf_config, f)
static const int_key int_keys[] = {
    {"num_hidden_layers", NULL, SLOT(n_layer), {REQUIRED, REQUIRED, REQUIRED, ABSENT}},
    {"num_attention_heads", NULL, SLOT(n_head), {REQUIRED, REQUIRED, REQUIRED, ABSENT}},
    {"num_key_value_heads", NULL, SLOT(n_kv_head), {SAME_AS_HEADS, SAME_AS_HEADS, SAME_AS_HEADS, ABSENT}},
    {"hidden_size", NULL, SLOT(n_embd), {REQUIRED, REQUIRED, REQUIRED, ABSENT}},
    {"head_dim", NULL, SLOT(head_dim), {FROM_WIDTH, FROM_WIDTH, 128, ABSENT}},
    {"intermediate_size", NULL, SLOT(n_ffn), {REQUIRED, REQUIRED, REQUIRED, ABSENT}},
    {"max_position_embeddings", NULL, SLOT(n_positions), {2048, 32768, 32768, ABSENT}},
    {"vocab_size", NULL, SLOT(vocab_size), {REQUIRED, REQUIRED, REQUIRED, REQUIRED}},
    {"n_layer", NULL, SLOT(n_layer), {ABSENT, ABSENT, ABSENT, REQUIRED}},
    {"n_head", NULL, SLOT(n_head), {ABSENT, ABSENT, ABSENT, REQUIRED}},
    {"n_embd", NULL, SLOT(n_embd), {ABSENT, ABSENT, ABSENT, REQUIRED}},
    {"n_inner", NULL, SLOT(n_ffn), {ABSENT, ABSENT, ABSENT, FROM_WIDTH}},
    {"n_positions", "n_ctx", SLOT(n_positions), {ABSENT, ABSENT, ABSENT, 1024}},
};
#define N_INT_KEYS (sizeof int_keys / sizeof int_keys[0])

static int64_t *int_slot(hf_config *c, size_t slot) { return (int64_t *)(void *)((char *)c + slot); }

/* A whole number in [min, 2^31) under key (null: the default). Returns 1 when set, 0 when
 * absent or null, -1 on an error. */
static int take_whole(const json_value *root, const char *key, int64_t min, int64_t *out, const char *name,
                      char *err, size_t errlen) {
    const json_value *v = json_get(root, key);
    if (!v || v->type == JSON_NULL) return 0;
    if (!json_as_int64(v, out) || *out < min || *out > INT32_MAX) {
        error_printf(err, errlen, "%s: \"%s\" must be a whole number from %lld to %d", name, key, (long long)min,
                     INT32_MAX);
        return -1;
    }
    return 1;
}

/* A size: at least 1. */
static int take_int(const json_value *root, const char *key, int64_t *out, const char *name, char *err,
                    size_t errlen) {
    return take_whole(root, key, 1, out, name, err, errlen);
}

static int read_ints(const json_value *root, const char *name, hf_config *c, char *err, size_t errlen) {
    for (size_t i = 0; i < N_INT_KEYS; i++) {
        const int_key *k = &int_keys[i];
        int64_t def = k->def[c->arch], *dst = int_slot(c, k->slot);
        if (def == ABSENT) continue;
        int got = take_int(root, k->name, dst, name, err, errlen);
        if (got == 0 && k->alias) got = take_int(root, k->alias, dst, name, err, errlen);
        if (got < 0) return -1;
        if (got) continue;
        if (def == REQUIRED) {
            error_printf(err, errlen, "%s: no \"%s\" (%s needs it)", name, k->name, hf_arch_class[c->arch]);
            return -1;
        }
        *dst = def; /* SAME_AS_HEADS and FROM_WIDTH stay negative until fill_derived */
    }
    return 0;
}

/* The sizes a config may leave out. GPT-2's inner width defaults to 4 n_embd, which can
 * exceed what a size may be although n_embd does not: refused like a size given too large. */
static int fill_derived(hf_config *c, const char *name, char *err, size_t errlen) {
    if (c->n_kv_head == SAME_AS_HEADS) c->n_kv_head = c->n_head;
    if (c->head_dim == FROM_WIDTH) c->head_dim = c->n_embd / c->n_head;
    if (c->n_ffn == FROM_WIDTH) c->n_ffn = 4 * c->n_embd;
    if (c->arch == HF_ARCH_GPT2) c->n_kv_head = c->n_head, c->head_dim = c->n_embd / c->n_head;
    if (c->n_ffn <= INT32_MAX) return 0;
    error_printf(err, errlen, "%s: the MLP's width 4 x %lld (no \"n_inner\") is above %d", name,
                 (long long)c->n_embd, INT32_MAX);
    return -1;
}

/* A number under key, default def when absent. */
static int take_double(const json_value *root, const char *key, double def, double *out, const char *name,
                       char *err, size_t errlen) {
    const json_value *v = json_get(root, key);
    *out = def;
    if (!v || v->type == JSON_NULL) return 0;
    if (!json_as_double(v, out) || !(*out > 0) || *out > 1e30) {
        error_printf(err, errlen, "%s: \"%s\" must be a positive number", name, key);
        return -1;
    }
    return 0;
}

static int take_bool(const json_value *root, const char *key, int def, int *out, const char *name, char *err,
                     size_t errlen) {
    const json_value *v = json_get(root, key);
    *out = def;
    if (!v || v->type == JSON_NULL) return 0;
    if (!json_as_bool(v, out)) {
        error_printf(err, errlen, "%s: \"%s\" must be true or false", name, key);
        return -1;
    }
    return 0;
}

/* The class: architectures[0]. */
static int read_class(const json_value *root, const char *name, hf_config *c, char *err, size_t errlen) {
    const json_value *a = json_get(root, "architectures");
    const char *cls = json_as_string(json_at(a, 0));
    if (!cls) {
        error_printf(err, errlen, "%s: no \"architectures\" list naming the model's class", name);
        return -1;
    }
    for (int i = 0; i < HF_ARCH_COUNT; i++)
        if (!strcmp(cls, hf_arch_class[i])) {
            c->arch = (hf_arch)i;
            return 0;
        }
    error_printf(err, errlen, "%s: the class \"%.80s\" is not one kiln reads (LlamaForCausalLM, Qwen2ForCausalLM, "
                 "Qwen3ForCausalLM, GPT2LMHeadModel)", name, cls);
    return -1;
}

/* rope_scaling: null, or llama3's; any other type is refused by name. */
static int read_rope_scaling(const json_value *root, const char *name, hf_config *c, char *err, size_t errlen) {
    const json_value *s = json_get(root, "rope_scaling");
    if (!s || s->type == JSON_NULL) return 0;
    const char *type = json_as_string(json_get(s, "rope_type"));
    if (!type) type = json_as_string(json_get(s, "type"));
    if (type && !strcmp(type, "default")) return 0;
    if (!type || strcmp(type, "llama3")) {
        error_printf(err, errlen, "%s: rope_scaling of type \"%.40s\" is not supported (kiln reads llama3's)", name,
                     type ? type : "(none)");
        return -1;
    }
    c->scaled = 1;
    if (take_double(s, "factor", 8, &c->rope_factor, name, err, errlen) ||
        take_double(s, "low_freq_factor", 1, &c->rope_low_freq_factor, name, err, errlen) ||
        take_double(s, "high_freq_factor", 4, &c->rope_high_freq_factor, name, err, errlen) ||
        take_int(s, "original_max_position_embeddings", &c->rope_original_max_positions, name, err, errlen) < 0)
        return -1;
    if (!c->rope_original_max_positions) c->rope_original_max_positions = 8192;
    if (c->rope_high_freq_factor <= c->rope_low_freq_factor) {
        error_printf(err, errlen, "%s: rope_scaling's high_freq_factor must exceed its low_freq_factor", name);
        return -1;
    }
    return 0;
}

/* What kiln's decoder computes: SiLU (GPT-2: its tanh GELU), no sliding window, no MLP
 * bias. */
static int check_variant(const json_value *root, const char *name, const hf_config *c, char *err, size_t errlen) {
    int gpt2 = c->arch == HF_ARCH_GPT2, flag = 0;
    const char *act = json_as_string(json_get(root, gpt2 ? "activation_function" : "hidden_act"));
    if (act && (gpt2 ? strcmp(act, "gelu_new") && strcmp(act, "gelu_pytorch_tanh") && strcmp(act, "gelu_fast")
                     : strcmp(act, "silu"))) {
        error_printf(err, errlen, "%s: %s \"%.40s\" is not supported (%s)", name,
                     gpt2 ? "activation_function" : "hidden_act", act, gpt2 ? "GPT-2's tanh GELU, gelu_new" : "silu");
        return -1;
    }
    static const char *const refused[] = {"use_sliding_window", "mlp_bias", "scale_attn_by_inverse_layer_idx"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        if (take_bool(root, refused[i], 0, &flag, name, err, errlen)) return -1;
        if (flag) {
            error_printf(err, errlen, "%s: %s = true is not supported", name, refused[i]);
            return -1;
        }
    }
    return 0;
}

/* eos_token_id: a whole number or a list of them (null: none). */
static int read_eos(const json_value *root, const char *name, hf_config *c, char *err, size_t errlen) {
    const json_value *v = json_get(root, "eos_token_id");
    if (!v || v->type == JSON_NULL) return 0;
    size_t n = v->type == JSON_ARRAY ? json_count(v) : 1;
    if (n > HF_MAX_EOS) {
        error_printf(err, errlen, "%s: more than %d eos_token_id values", name, HF_MAX_EOS);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const json_value *e = v->type == JSON_ARRAY ? json_at(v, i) : v;
        if (!json_as_int64(e, &c->eos_ids[i]) || c->eos_ids[i] < 0 || c->eos_ids[i] > INT32_MAX) {
            error_printf(err, errlen, "%s: eos_token_id must be a token id or a list of them", name);
            return -1;
        }
    }
    c->n_eos = (int)n;
    return 0;
}

static int parse_object(const char *text, size_t len, const char *name, json_value **root, char *err,
                        size_t errlen) {
    char jerr[160];
    if (json_parse(text, len, root, jerr, sizeof jerr)) {
        error_printf(err, errlen, "%s: %s", name, jerr);
        return -1;
    }
    if ((*root)->type == JSON_OBJECT) return 0;
    error_printf(err, errlen, "%s: not a JSON object", name);
    json_free(*root);
    *root = NULL;
    return -1;
}

static int read_config(const json_value *root, const char *name, hf_config *c, char *err, size_t errlen) {
    int gpt2;
    if (read_class(root, name, c, err, errlen) || read_ints(root, name, c, err, errlen) ||
        fill_derived(c, name, err, errlen))
        return -1;
    gpt2 = c->arch == HF_ARCH_GPT2;
    if (take_double(root, gpt2 ? "layer_norm_epsilon" : "rms_norm_eps", gpt2 ? 1e-5 : 1e-6, &c->norm_eps, name, err,
                    errlen) ||
        take_bool(root, "tie_word_embeddings", gpt2, &c->tied, name, err, errlen) ||
        take_bool(root, "attention_bias", c->arch == HF_ARCH_QWEN2, &c->attention_bias, name, err, errlen) ||
        check_variant(root, name, c, err, errlen) || read_eos(root, name, c, err, errlen))
        return -1;
    if (c->arch == HF_ARCH_QWEN2) c->attention_bias = 1; /* Qwen2's q, k, v always have biases */
    c->o_bias = c->arch == HF_ARCH_LLAMA && c->attention_bias;
    if (!gpt2 && (take_double(root, "rope_theta", 10000, &c->rope_theta, name, err, errlen) ||
                  read_rope_scaling(root, name, c, err, errlen)))
        return -1;
    int64_t bos;
    int got = take_whole(root, "bos_token_id", 0, &bos, name, err, errlen);
    if (got < 0) return -1;
    c->bos_id = got ? bos : -1;
    return 0;
}

int hf_config_parse(const char *text, size_t len, const char *name, hf_config *out, char *err, size_t errlen) {
    json_value *root;
    memset(out, 0, sizeof *out);
    if (parse_object(text, len, name, &root, err, errlen)) return -1;
    int rc = read_config(root, name, out, err, errlen);
    json_free(root);
    if (rc) error_one_line(err, errlen); /* a class or type quoted from the file */
    return rc;
}

int hf_config_parse_generation(const char *text, size_t len, const char *name, hf_config *out, char *err,
                               size_t errlen) {
    json_value *root;
    if (parse_object(text, len, name, &root, err, errlen)) return -1;
    int rc = read_eos(root, name, out, err, errlen);
    json_free(root);
    if (rc) error_one_line(err, errlen);
    return rc;
}

/* A small JSON file of the folder; 1 when absent (optional files). */
static int read_small(const char *dir, const char *file, int optional, char **text, size_t *len, char *path,
                      size_t path_size, char *err, size_t errlen) {
    snprintf(path, path_size, "%s/%s", dir, file);
    FILE *probe = optional ? fopen(path, "rb") : NULL;
    if (optional && !probe) return 1;
    if (probe) fclose(probe);
    if (file_read_all(path, file, text, len, err, errlen)) return -1;
    if (*len <= HF_CONFIG_MAX) return 0;
    error_printf(err, errlen, "%s: larger than %d bytes; not a config", path, HF_CONFIG_MAX);
    free(*text);
    return -1;
}

int hf_config_read(const char *dir, hf_config *out, char *err, size_t errlen) {
    char path[4096], *text;
    size_t len;
    if (read_small(dir, "config.json", 0, &text, &len, path, sizeof path, err, errlen)) return -1;
    int rc = hf_config_parse(text, len, path, out, err, errlen);
    free(text);
    if (rc) return -1;
    int found = read_small(dir, "generation_config.json", 1, &text, &len, path, sizeof path, err, errlen);
    if (found < 0) return -1;
    if (found > 0) return 0;
    rc = hf_config_parse_generation(text, len, path, out, err, errlen);
    free(text);
    return rc;
}
