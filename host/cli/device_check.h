/* The check a device gets the first time train, eval or decode meet it: `kiln verify
 * --quick` (model/verify_suite.h), remembered per device, driver and kiln build in the cache
 * directory beside the pipeline caches ($XDG_CACHE_HOME/kiln, else ~/.cache/kiln; or
 * $KILN_DEVICE_CHECK_DIR), so a known device costs nothing. The CPU backend, the reference, is not checked. */
#ifndef KILN_HOST_CLI_DEVICE_CHECK_H
#define KILN_HOST_CLI_DEVICE_CHECK_H

#include "kiln/kiln.h"
#include "run/cli.h"

/* --trust-device, for a command's option table. */
cli_opt host_trust_device_option(int *trust);

/* host_open_device, then host_check_precision for `dtype`, then the first-use check unless
 * `trust`: NULL after one line on stderr when the device cannot be opened, cannot run dtype
 * (refused before any check, so that is the only line), or fails the check (naming the
 * failing case and what to do: --backend cpu, or --trust-device). `command` names the
 * command in that line. */
kiln_ctx *host_open_checked_device(const char *command, const char *backend, int device, kiln_dtype dtype,
                                   int trust);

#endif
