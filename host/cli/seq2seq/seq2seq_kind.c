/* The seq2seq kind's table (cli/model_kind.h). */
#include "cli/seq2seq/seq2seq_kind.h"

#include "model/seq2seq/seq2seq_checkpoint.h"

const model_kind seq2seq_kind = {
    .name = "seq2seq",
    .model_type = SEQ2SEQ_MODEL_TYPE,
    .train = &seq2seq_train_kind,
    .eval = seq2seq_eval_command,
    .decode = seq2seq_decode_command,
    .parity = "seq2seq-parity",
    .parity_dump = seq2seq_parity_command,
};
