/* Finding a file kiln ships beside the program (the PyTorch side of `kiln bench train`):
 * in the install tree, or in the source tree a build was made from, found at run time from
 * where the running program is, never from a path written into it at build time. */
#ifndef KILN_HOST_RUN_SHARE_FILE_H
#define KILN_HOST_RUN_SHARE_FILE_H

#include <stddef.h>

/* The path of the shipped file `name`, into out[size]: the environment variable `env_var`
 * when set and not empty, else the first that exists of
 *   <program's folder>/../share/kiln/<name>     an installed kiln (bin/kiln)
 *   <program's folder>/../../samples/<name>     a build tree's host/kiln (build/host/kiln)
 * else the first of those, for the error that names what is missing. Returns 0, or 1 when
 * the program's own path cannot be read or the path does not fit (out is then ""). */
int host_share_file(const char *name, const char *env_var, char *out, size_t size);

#endif
