/* BERT's table (model/model_kind.h). */
#include "model/model_kind.h"
#include "model/bert/bert.h"

const model_kind bert_model_kind = {
    .name = "bert",
    .model_type = BERT_MODEL_TYPE,
};
