/* The commands' table of the bert kind (cli/kind_commands.h). */
#include "cli/bert/bert_commands.h"

const kind_commands bert_commands = {
    .kind = &bert_model_kind,
    .train = &bert_train_kind,
    .eval = bert_eval_command, .decode = NULL,
    .parity = "bert-parity", .parity_dump = bert_parity_command,
};
