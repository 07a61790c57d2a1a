/* Opening the device a command runs on (see device.h). */
#include "run/device.h"

#include <stdarg.h>
#include <stdio.h>

#include "parallel/world.h"
#include "run/cli.h"

cli_opt host_backend_option(const char **backend) {
    return (cli_opt){.name = "--backend", .kind = CLI_STRING, .target = backend, .meta = "NAME",
                     .help = "cpu, vulkan, opencl or auto (the best GPU backend, else cpu)"};
}

cli_opt host_device_option(int *device) {
    return (cli_opt){.name = "--device", .kind = CLI_INT, .target = device, .meta = "N",
                     .help = HOST_DEVICE_HELP, .min = -1, .max = 1000};
}

kiln_ctx *host_open_device(const char *backend, int device) {
    char name[64];
    if (device >= 0)
        snprintf(name, sizeof name, "%s:%d", backend, device);
    else
        snprintf(name, sizeof name, "%s", backend);
    kiln_ctx *ctx = NULL;
    if (kiln_open(name, &ctx) != KILN_OK) {
        host_engine_error(NULL);
        return NULL;
    }
    return ctx;
}

void host_say(const char *command, const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    /* one write: the ranks under mpirun share the terminal */
    if (world_ranks() > 1)
        fprintf(stderr, "kiln %s: rank %d of %d %s\n", command, world_rank(), world_ranks(), what);
    else
        fprintf(stderr, "kiln %s: %s\n", command, what);
}

void host_say_device(const char *command, const kiln_ctx *ctx) {
    host_say(command, "running on %s device %s", kiln_backend_name(ctx), kiln_device_name(ctx));
}
