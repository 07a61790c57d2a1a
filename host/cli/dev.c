/* `kiln dev`: developer tools, left out of `kiln --help`: each kind's PyTorch parity dump
 * (cli/kind_commands.h; the kinds' <kind>_parity.c say what each writes, tests/<kind>_parity.py
 * compare it with PyTorch). */
#include <stdio.h>
#include <string.h>

#include "run/cli.h"
#include "cli/commands.h"
#include "cli/kind_commands.h"

int cmd_dev(int argc, char **argv) {
    const kind_commands *kind = argc >= 3 ? kind_commands_find_parity(argv[2]) : NULL;
    if (kind) return kind->parity_dump(argc, argv);
    if (cli_help_asked(argc, argv, 2)) {
        printf("usage: kiln dev TOOL [options]\n\nDeveloper tools: %s (kiln dev TOOL --help).\n",
               kind_commands_parity_names());
        return 0;
    }
    return host_error("kiln dev: expected a tool name: %s", kind_commands_parity_names());
}
