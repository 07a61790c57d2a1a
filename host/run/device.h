/* Opening the device a command runs on, from --backend and --device. */
#ifndef KILN_HOST_RUN_DEVICE_H
#define KILN_HOST_RUN_DEVICE_H

#include "kiln/kiln.h"
#include "run/cli.h"

/* The --backend and --device options every command shares, as entries of its option table
 * (--device N within [-1, 1000]; a command with another range uses HOST_DEVICE_HELP). */
cli_opt host_backend_option(const char **backend);
cli_opt host_device_option(int *device);
#define HOST_DEVICE_HELP "device index of that backend, as listed by kiln info (-1: the best)"

/* Opens `backend` ("cpu", "vulkan", "opencl", "auto") on device `device` (-1: the best one).
 * Returns NULL after printing a one-line error. */
kiln_ctx *host_open_device(const char *backend, int device);

/* Prints "kiln COMMAND: running on BACKEND device NAME" to stderr. Commands call it once
 * their inputs are validated, so that bad input still gives exactly one line on stderr. */
void host_say_device(const char *command, const kiln_ctx *ctx);

/* A status line on stderr, "kiln COMMAND: WHAT" ("kiln COMMAND: rank R of N WHAT" under
 * mpirun), WHAT from the printf format. */
void host_say(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
