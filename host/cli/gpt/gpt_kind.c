/* The gpt kind's table (cli/model_kind.h). */
#include "cli/gpt/gpt_kind.h"

const model_kind gpt_kind = {
    .name = "gpt",
    .model_type = NULL,
    .train = &gpt_train_kind,
    .eval = gpt_eval_command,
    .decode = gpt_decode_command,
    .parity = "parity",
    .parity_dump = gpt_parity_command,
};
