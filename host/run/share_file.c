/* Finding a file kiln ships, relative to the running program (share_file.h). */
#define _POSIX_C_SOURCE 200809L
#include "run/share_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The folder of the running program, from /proc/self/exe (links resolved by the kernel). */
static int program_dir(char *out, size_t size) {
    ssize_t n = readlink("/proc/self/exe", out, size - 1);
    if (n <= 0 || (size_t)n >= size - 1) return 1;
    out[n] = 0;
    char *slash = strrchr(out, '/');
    if (!slash) return 1;
    *slash = 0;
    return 0;
}

int host_share_file(const char *name, const char *env_var, char *out, size_t size) {
    out[0] = 0;
    const char *set = env_var ? getenv(env_var) : NULL;
    if (set && set[0]) {
        if ((size_t)snprintf(out, size, "%s", set) >= size) return out[0] = 0, 1;
        return 0;
    }
    char dir[4096];
    if (program_dir(dir, sizeof dir)) return 1;
    /* the install tree first: an installed kiln never reads a source tree */
    static const char *const places[] = {"%s/../share/kiln/%s", "%s/../../samples/%s"};
    const int count = (int)(sizeof places / sizeof places[0]);
    for (int i = 0; i < count; i++) {
        if ((size_t)snprintf(out, size, places[i], dir, name) >= size) return out[0] = 0, 1;
        if (access(out, R_OK) == 0) return 0;
    }
    /* none exists: name the install tree's place, where a user would put it */
    snprintf(out, size, places[0], dir, name);
    return 0;
}
