/* Fuzzes hf_config_parse and hf_config_parse_generation (host/formats/hf_config.c): any input
 * is a config or a one-line refusal naming the file, never a crash; an accepted config has a
 * known class, sizes in [1, 2^31) (the head width derived from them at least 0), a positive
 * norm epsilon, a rope base for the rotary classes and llama3 scaling with ordered factors,
 * at most HF_MAX_EOS end ids, none negative. */
#include <stdint.h>
#include <string.h>

#include "formats/hf_config.h"
#include "fuzz_check.h"

static void check_refusal(const char *err) {
    FUZZ_CHECK(!strncmp(err, "<fuzz>", 6));
    FUZZ_CHECK(!strchr(err, '\n'));
}

static void check_config(const hf_config *c) {
    FUZZ_CHECK(c->arch >= 0 && c->arch < HF_ARCH_COUNT);
    const int64_t sizes[] = {c->n_layer, c->n_head, c->n_kv_head, c->n_embd, c->n_ffn, c->n_positions, c->vocab_size};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) FUZZ_CHECK(sizes[i] >= 1 && sizes[i] <= INT32_MAX);
    FUZZ_CHECK(c->head_dim >= 0 && c->head_dim <= INT32_MAX);
    FUZZ_CHECK(c->norm_eps > 0);
    FUZZ_CHECK(c->arch == HF_ARCH_GPT2 ? c->rope_theta == 0 : c->rope_theta > 0);
    FUZZ_CHECK(!c->scaled || (c->rope_factor > 0 && c->rope_high_freq_factor > c->rope_low_freq_factor &&
                              c->rope_original_max_positions >= 1));
    FUZZ_CHECK(c->n_eos >= 0 && c->n_eos <= HF_MAX_EOS);
    for (int i = 0; i < c->n_eos; i++) FUZZ_CHECK(c->eos_ids[i] >= 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hf_config c;
    char err[512] = "";
    if (hf_config_parse((const char *)data, size, "<fuzz>", &c, err, sizeof err)) {
        check_refusal(err);
    } else {
        check_config(&c);
        /* the same text as a generation_config.json: its eos ids or a refusal */
        err[0] = '\0';
        if (hf_config_parse_generation((const char *)data, size, "<fuzz>", &c, err, sizeof err)) check_refusal(err);
        check_config(&c);
    }
    return 0;
}
