/* Opening the device a command runs on, from --backend and --device. */
#ifndef KILN_HOST_CLI_DEVICE_H
#define KILN_HOST_CLI_DEVICE_H

#include "kiln/kiln.h"

/* The --backend and --device options every command shares. */
#define HOST_BACKEND_HELP "cpu, vulkan, opencl or auto (the best GPU backend, else cpu)"
#define HOST_DEVICE_HELP "device index of that backend, as listed by kiln info (-1: the best)"

/* Opens `backend` ("cpu", "vulkan", "opencl", "auto") on device `device` (-1: the best one).
 * Returns NULL after printing a one-line error. */
kiln_ctx *host_open_device(const char *backend, int device);

/* Prints "kiln COMMAND: running on BACKEND device NAME" to stderr. Commands call it once
 * their inputs are validated, so that bad input still gives exactly one line on stderr. */
void host_say_device(const char *command, const kiln_ctx *ctx);

#endif
