/* The bert kind's table (cli/model_kind.h). */
#include "cli/bert/bert_kind.h"

#include "model/bert/bert_checkpoint.h"

const model_kind bert_kind = {
    .name = "bert",
    .model_type = BERT_MODEL_TYPE,
    .train = &bert_train_kind,
    .eval = bert_eval_command,
    .decode = NULL,
    .parity = "bert-parity",
    .parity_dump = bert_parity_command,
};
