/* A device's memory (kiln_device_memory, kiln/context.h): the backend's figures, lowered by
 * KILN_MEMORY_LIMIT; and the host's RAM and cgroup limit, which the CPU backend (and a
 * CPU-type device) reports. */
#define _DEFAULT_SOURCE /* sysconf(_SC_PHYS_PAGES) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"

uint64_t kiln_host_ram(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

/* The number in a cgroup file ("max": none), or UINT64_MAX. */
static uint64_t read_limit(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return UINT64_MAX;
    char text[64] = {0};
    uint64_t v = UINT64_MAX;
    if (fgets(text, sizeof text, f) && text[0] >= '0' && text[0] <= '9') v = strtoull(text, NULL, 10);
    fclose(f);
    return v ? v : UINT64_MAX;
}

/* The lowest `file` in the cgroup at `path` under the hierarchy mounted at `root` and in its
 * ancestors (a limit set on a parent holds for its children); a container that mounts its
 * own cgroup as the root is covered by the root's file. */
static uint64_t limit_along(const char *root, const char *path, const char *file) {
    char dir[1024], full[1200];
    snprintf(dir, sizeof dir, "%s", path);
    uint64_t best = UINT64_MAX;
    for (;;) {
        size_t len = strlen(dir);
        while (len > 0 && dir[len - 1] == '/') dir[--len] = 0;
        snprintf(full, sizeof full, "%s%s/%s", root, dir, file);
        uint64_t v = read_limit(full);
        if (v < best) best = v;
        char *slash = strrchr(dir, '/');
        if (!len || !slash) break;
        *slash = 0;
    }
    return best;
}

uint64_t kiln_host_cgroup_limit(void) {
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return UINT64_MAX;
    char line[1024];
    uint64_t best = UINT64_MAX;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *controllers = strchr(line, ':');
        char *path = controllers ? strchr(controllers + 1, ':') : NULL;
        if (!path) continue;
        *path++ = 0;
        controllers++;
        uint64_t v = UINT64_MAX;
        if (!*controllers) /* v2: "0::/path" */
            v = limit_along("/sys/fs/cgroup", path, "memory.max");
        else if (strstr(controllers, "memory"))
            v = limit_along("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes");
        if (v < best) best = v;
    }
    fclose(f);
    return best;
}

kiln_status kiln_device_memory(const kiln_ctx *ctx, kiln_memory_info *out) {
    if (!ctx || !out) return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_device_memory: NULL argument");
    *out = (kiln_memory_info){0};
    if (!ctx->be->memory_info)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: the backend cannot tell its device's memory", ctx->be->name);
    kiln_status s = ctx->be->memory_info(ctx->dev, out);
    if (s) return s;
    const char *cap = getenv("KILN_MEMORY_LIMIT");
    if (cap && *cap) {
        char *end;
        unsigned long long v = cap[0] >= '0' && cap[0] <= '9' ? strtoull(cap, &end, 10) : 0;
        if (!v || *end)
            return kiln_set_error(KILN_ERR_ARGUMENT, "KILN_MEMORY_LIMIT=%s: give a positive whole number of bytes", cap);
        if (v < out->usable) out->usable = v;
    }
    return KILN_OK;
}
