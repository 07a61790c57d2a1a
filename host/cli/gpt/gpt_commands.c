/* The commands' table of the gpt kind (cli/kind_commands.h). */
#include "cli/gpt/gpt_commands.h"

const kind_commands gpt_commands = {
    .kind = &gpt_model_kind,
    .train = &gpt_train_kind,
    .eval = gpt_eval_command, .decode = gpt_decode_command,
    .parity = "parity", .parity_dump = gpt_parity_command,
};
