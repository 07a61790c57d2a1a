/* config.json of Hugging Face folders (formats/hf_config.h): the configs of real models
 * (SmolLM2-135M, Llama-3.2-1B, Qwen2.5-0.5B, Qwen3-0.6B, GPT-2: the fuzzer's seeds) read to
 * the sizes their model cards give; each class's defaults (transformers' config classes) for
 * what a file leaves out; generation_config.json's eos ids winning over config.json's; and
 * bad configs refused in one line naming the file and the key: an unknown class, a missing
 * size, a rope_scaling other than llama3's, an activation other than silu, Qwen2's sliding
 * window, sizes out of range. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/hf_config.h"
#include "testutil.h"
#include "testutil_host.h"

static int parse_seed(const char *file, hf_config *c, char *err, size_t errlen) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/hf_config/%s", KILN_FUZZ_CORPUS, file);
    FILE *f = fopen(dir, "rb");
    ck_assert_ptr_nonnull(f);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text, f);
    fclose(f);
    return hf_config_parse(text, n, file, c, err, errlen);
}

START_TEST(real_configs) {
    hf_config c;
    char err[256];
    ck_assert_msg(parse_seed("smollm2_135m.json", &c, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(c.arch, HF_ARCH_LLAMA);
    ck_assert(c.n_layer == 30 && c.n_embd == 576 && c.n_head == 9 && c.n_kv_head == 3 && c.n_ffn == 1536);
    ck_assert(c.head_dim == 64 && c.vocab_size == 49152 && c.tied && !c.attention_bias && !c.scaled);
    ck_assert(c.rope_theta == 100000 && c.norm_eps == 1e-5 && c.n_positions == 8192);
    ck_assert(c.bos_id == 0 && c.n_eos == 1 && c.eos_ids[0] == 0);

    ck_assert_msg(parse_seed("llama32_1b.json", &c, err, sizeof err) == 0, "%s", err);
    ck_assert(c.scaled && c.rope_factor == 32 && c.rope_low_freq_factor == 1 && c.rope_high_freq_factor == 4);
    ck_assert(c.rope_original_max_positions == 8192 && c.rope_theta == 500000 && c.head_dim == 64);
    ck_assert(c.n_eos == 3 && c.eos_ids[0] == 128001 && c.eos_ids[2] == 128009);

    ck_assert_msg(parse_seed("qwen25_05b.json", &c, err, sizeof err) == 0, "%s", err);
    ck_assert(c.arch == HF_ARCH_QWEN2 && c.attention_bias && !c.o_bias && c.n_kv_head == 2 && c.head_dim == 64);
    ck_assert(c.rope_theta == 1e6 && c.norm_eps == 1e-6);

    ck_assert_msg(parse_seed("qwen3_06b.json", &c, err, sizeof err) == 0, "%s", err);
    ck_assert(c.arch == HF_ARCH_QWEN3 && c.head_dim == 128 && c.n_embd == 1024 && c.n_head == 16 && !c.attention_bias);

    ck_assert_msg(parse_seed("gpt2.json", &c, err, sizeof err) == 0, "%s", err);
    ck_assert(c.arch == HF_ARCH_GPT2 && c.n_layer == 12 && c.n_ffn == 3072 && c.n_positions == 1024 && c.tied);
    ck_assert(c.rope_theta == 0 && c.norm_eps == 1e-5 && c.head_dim == 64 && c.n_kv_head == 12);
}
END_TEST

static const char minimal[] = "{\"architectures\": [\"%s\"], \"hidden_size\": 64, \"num_hidden_layers\": 2, "
                              "\"num_attention_heads\": 4, \"intermediate_size\": 160, \"vocab_size\": 300%s}";

static int parse_minimal(const char *cls, const char *extra, hf_config *c, char *err, size_t errlen) {
    char text[1024];
    int n = snprintf(text, sizeof text, minimal, cls, extra);
    return hf_config_parse(text, (size_t)n, "dir/config.json", c, err, errlen);
}

/* What each class's config defaults to when the file leaves it out. */
START_TEST(class_defaults) {
    hf_config c;
    char err[256];
    ck_assert_msg(parse_minimal("LlamaForCausalLM", "", &c, err, sizeof err) == 0, "%s", err);
    ck_assert(c.n_kv_head == 4 && c.head_dim == 16 && c.n_positions == 2048 && c.norm_eps == 1e-6);
    ck_assert(c.rope_theta == 10000 && !c.tied && !c.attention_bias && c.bos_id == -1 && c.n_eos == 0);
    ck_assert_msg(parse_minimal("Qwen2ForCausalLM", "", &c, err, sizeof err) == 0, "%s", err);
    ck_assert(c.attention_bias && c.n_positions == 32768 && c.head_dim == 16);
    ck_assert_msg(parse_minimal("Qwen3ForCausalLM", ", \"head_dim\": 32", &c, err, sizeof err) == 0, "%s", err);
    ck_assert(c.head_dim == 32 && !c.attention_bias);
    ck_assert_msg(parse_minimal("Qwen3ForCausalLM", "", &c, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(c.head_dim, 128);
    ck_assert_msg(parse_minimal("LlamaForCausalLM", ", \"attention_bias\": true, \"num_key_value_heads\": null",
                                &c, err, sizeof err) == 0, "%s", err);
    ck_assert(c.attention_bias && c.o_bias && c.n_kv_head == 4);
}
END_TEST

START_TEST(generation_config_eos_wins) {
    hf_config c;
    char err[256];
    ck_assert_msg(parse_minimal("LlamaForCausalLM", ", \"eos_token_id\": 2", &c, err, sizeof err) == 0, "%s", err);
    ck_assert(c.n_eos == 1 && c.eos_ids[0] == 2);
    const char gen[] = "{\"eos_token_id\": [7, 9], \"do_sample\": true}";
    ck_assert_msg(hf_config_parse_generation(gen, sizeof gen - 1, "g", &c, err, sizeof err) == 0, "%s", err);
    ck_assert(c.n_eos == 2 && c.eos_ids[0] == 7 && c.eos_ids[1] == 9);
    const char none[] = "{\"temperature\": 0.6}";
    ck_assert(hf_config_parse_generation(none, sizeof none - 1, "g", &c, err, sizeof err) == 0 && c.n_eos == 2);
}
END_TEST

/* Each bad config: the message names the file and what is wrong. */
START_TEST(bad_configs) {
    static const struct {
        const char *cls, *extra, *says;
    } bad[] = {
        {"MistralForCausalLM", "", "the class \"MistralForCausalLM\" is not one kiln reads"},
        {"Qw\\n3ForCausalLM", "", "the class \"Qw?3ForCausalLM\" is not one kiln reads"}, /* the fuzzer's find */
        {"LlamaForCausalLM", ", \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4}", "\"yarn\" is not supported"},
        {"LlamaForCausalLM", ", \"hidden_act\": \"gelu\"", "hidden_act \"gelu\" is not supported"},
        {"Qwen2ForCausalLM", ", \"use_sliding_window\": true", "use_sliding_window = true is not supported"},
        {"LlamaForCausalLM", ", \"mlp_bias\": true", "mlp_bias = true"},
        {"LlamaForCausalLM", ", \"num_key_value_heads\": 0", "\"num_key_value_heads\" must be a whole number"},
        {"LlamaForCausalLM", ", \"rms_norm_eps\": -1", "\"rms_norm_eps\" must be a positive number"},
        {"LlamaForCausalLM", ", \"tie_word_embeddings\": 3", "\"tie_word_embeddings\" must be true or false"},
        {"LlamaForCausalLM", ", \"eos_token_id\": [1, -2]", "eos_token_id must be"},
        {"LlamaForCausalLM", ", \"rope_scaling\": {\"rope_type\": \"llama3\", \"low_freq_factor\": 4, \"high_freq_factor\": 1}",
         "high_freq_factor must exceed"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hf_config c;
        char err[256] = "";
        ck_assert_int_eq(parse_minimal(bad[i].cls, bad[i].extra, &c, err, sizeof err), -1);
        ck_assert_msg(strstr(err, "dir/config.json: ") == err && strstr(err, bad[i].says) && !strchr(err, '\n'),
                      "case %zu: %s", i, err);
    }
    hf_config c;
    char err[256];
    const char missing[] = "{\"architectures\": [\"Qwen3ForCausalLM\"], \"hidden_size\": 64}";
    ck_assert_int_eq(hf_config_parse(missing, sizeof missing - 1, "m", &c, err, sizeof err), -1);
    ck_assert_msg(!strcmp(err, "m: no \"num_hidden_layers\" (Qwen3ForCausalLM needs it)"), "%s", err);
    /* the fuzzer's find: GPT-2's inner width 4 n_embd above a size's limit, n_embd within it */
    const char wide[] = "{\"architectures\": [\"GPT2LMHeadModel\"], \"n_embd\": 1300000000, \"n_head\": 12, "
                        "\"n_layer\": 12, \"n_positions\": 1024, \"vocab_size\": 5025}";
    ck_assert_int_eq(hf_config_parse(wide, sizeof wide - 1, "w", &c, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "w: the MLP's width 4 x 1300000000") == err, "%s", err);
    const char noclass[] = "{\"model_type\": \"llama\"}";
    ck_assert_int_eq(hf_config_parse(noclass, sizeof noclass - 1, "m", &c, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "no \"architectures\""), "%s", err);
    ck_assert_int_eq(hf_config_parse("[1]", 3, "m", &c, err, sizeof err), -1);
    ck_assert_str_eq(err, "m: not a JSON object");
}
END_TEST

static int replay(const char *path, const char *name) {
    (void)name;
    FILE *f = fopen(path, "rb");
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text, f);
    fclose(f);
    hf_config c;
    char err[512] = "";
    int rc = hf_config_parse(text, n, "seed", &c, err, sizeof err);
    ck_assert(rc == 0 || (strstr(err, "seed: ") == err && !strchr(err, '\n')));
    return rc == 0;
}

START_TEST(fuzz_seeds) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/hf_config", KILN_FUZZ_CORPUS);
    kt_replay_seeds(dir, replay, 7, 5);
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, real_configs);
    tcase_add_test(tc, class_defaults);
    tcase_add_test(tc, generation_config_eos_wins);
    tcase_add_test(tc, bad_configs);
    tcase_add_test(tc, fuzz_seeds);
}

int main(void) { return kt_run_tcase("host_hf_config", "hf_config", 60, add_tests); }
