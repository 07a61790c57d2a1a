/* The encoder-decoder's table (model/model_kind.h). */
#include "model/model_kind.h"
#include "model/seq2seq/seq2seq.h"

const model_kind seq2seq_model_kind = {
    .name = "seq2seq",
    .model_type = SEQ2SEQ_MODEL_TYPE,
};
