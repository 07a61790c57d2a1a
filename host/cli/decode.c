/* `kiln decode`: a checkpoint's kind (cli/model_kind.h) decodes: the GPT continues a prompt,
 * the encoder-decoder translates. A kind that does not decode leaves its checkpoints to the
 * default kind, which refuses them with its loader's message. */
#include "cli/commands.h"
#include "cli/model_kind.h"

int cmd_decode(int argc, char **argv) {
    const model_kind *kind = model_kind_of_command(argc, argv);
    return (kind->decode ? kind->decode : gpt_kind.decode)(argc, argv);
}
