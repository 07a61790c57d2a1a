/* `kiln dev`: developer tools, left out of `kiln --help`: each kind's PyTorch parity dump
 * (cli/model_kind.h; the kinds' <kind>_parity.c say what each writes, tests/<kind>_parity.py
 * compare it with PyTorch). */
#include <string.h>

#include "run/cli.h"
#include "cli/commands.h"
#include "cli/model_kind.h"

int cmd_dev(int argc, char **argv) {
    const model_kind *kind = argc >= 3 ? model_kind_find_parity(argv[2]) : NULL;
    if (kind) return kind->parity_dump(argc, argv);
    return host_error("kiln dev: expected a tool name: %s", model_kind_names(1));
}
