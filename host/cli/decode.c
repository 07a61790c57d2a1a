/* `kiln decode`: a checkpoint's kind (cli/kind_commands.h) decodes: the GPT continues a prompt,
 * the encoder-decoder translates. A kind that does not decode leaves its checkpoints to the
 * default kind, which refuses them with its loader's message. */
#include "cli/commands.h"
#include "cli/kind_commands.h"

int cmd_decode(int argc, char **argv) {
    if (cli_help_asked(argc, argv, 2)) return kind_commands_help("decode", argc, argv);
    const kind_commands *kind = kind_commands_of_command(argc, argv);
    return (kind->decode ? kind->decode : kind_commands_default()->decode)(argc, argv);
}
