/* `kiln info`: the backends compiled into this kiln and the devices each one sees. */
#include <stdio.h>

#include "cli/commands.h"
#include "kiln/kiln.h"
#include "parallel/world.h"
#include "run/cli.h"

int cmd_info(int argc, char **argv) {
    const char *summary =
        "Lists the backends compiled into this kiln and, for each, its devices and their\n"
        "features. Pass a device to other commands as --backend NAME --device N.";
    int rc = cli_parse("info", summary, argc, argv, 2, NULL, 0);
    if (rc) return rc < 0 ? 1 : 0;
    const char *const *names = kiln_backends_compiled();
    printf("kiln %s\nbackends compiled in:", KILN_VERSION_STRING);
    for (int i = 0; names[i]; i++) printf(" %s", names[i]);
    printf("\ndata-parallel training: %s\n",
           world_has_mpi() ? "MPI (mpirun -np N kiln train ...)" : "no (built without MPI)");
    for (int i = 0; names[i]; i++) {
        printf("\n[%s]\n", names[i]);
        fflush(stdout);
        /* A backend whose driver is missing is reported, not fatal: info is how a person
         * finds out what works on this machine. */
        if (kiln_list_devices(names[i], stdout) != KILN_OK)
            printf("  unavailable: %s\n", kiln_error_message());
    }
    fprintf(stderr, "kiln info: running on the host (no device opened)\n");
    return 0;
}
