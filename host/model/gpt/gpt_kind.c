/* The GPT's table (model/model_kind.h): the default kind, decoder-only; GPT-2's files carry
 * no model_type. "llama" is a preset of its options (cli/gpt/gpt_train.c), not a kind: the
 * Llama family's block is this model's block with other options. */
#include "model/model_kind.h"

static const char *const gpt_presets[] = {"llama", NULL};

const model_kind gpt_model_kind = {
    .name = "gpt",
    .model_type = NULL,
    .verify_checks = verify_model_checks,
    .presets = gpt_presets,
};
