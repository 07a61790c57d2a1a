/* The GPT's table (model/model_kind.h): the default kind, decoder-only; GPT-2's files carry
 * no model_type. */
#include "model/model_kind.h"

const model_kind gpt_model_kind = {
    .name = "gpt",
    .model_type = NULL,
    .verify_checks = verify_model_checks,
};
