/* The commands' table of the seq2seq kind (cli/kind_commands.h). */
#include "cli/seq2seq/seq2seq_commands.h"

const kind_commands seq2seq_commands = {
    .kind = &seq2seq_model_kind,
    .train = &seq2seq_train_kind,
    .eval = seq2seq_eval_command, .decode = seq2seq_decode_command,
    .parity = "seq2seq-parity", .parity_dump = seq2seq_parity_command,
};
