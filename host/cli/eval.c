/* `kiln eval`: a checkpoint evaluated on a file by its kind (cli/kind_commands.h), which its
 * metadata's model_type names: the GPT's loss on text, the encoder-decoder's loss, BLEU and
 * exact matches on pairs, BERT's masked-LM loss and accuracy. */
#include "cli/commands.h"
#include "cli/kind_commands.h"

int cmd_eval(int argc, char **argv) {
    if (cli_help_asked(argc, argv, 2)) return kind_commands_help("eval", argc, argv);
    return kind_commands_of_command(argc, argv)->eval(argc, argv);
}
