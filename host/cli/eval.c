/* `kiln eval`: a checkpoint evaluated on a file by its kind (cli/model_kind.h), which its
 * metadata's model_type names: the GPT's loss on text, the encoder-decoder's loss, BLEU and
 * exact matches on pairs, BERT's masked-LM loss and accuracy. */
#include "cli/commands.h"
#include "cli/model_kind.h"

int cmd_eval(int argc, char **argv) { return model_kind_of_command(argc, argv)->eval(argc, argv); }
