/* The on-disk cache of OpenCL program binaries.
 *
 * Compiling the kernels at run time costs from a fraction of a second (GPU drivers) to
 * several seconds (PoCL's LLVM pipeline) per program, every time a process starts. The
 * binaries are cached in $XDG_CACHE_HOME/kiln/opencl (or ~/.cache/kiln/opencl), one file per
 * program, named by a hash of the device, the driver, the compile options and the whole text
 * handed to the compiler (engine/abi/kernel_abi.h, cl/common.cl and the family's file), so a
 * new driver, an edited kernel or an edited header simply misses. Every failure here is
 * silent: a missing or unwritable cache only costs compile time. KILN_CL_CACHE=0 disables
 * it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kiln/file.h"
#include "opencl/cl_internal.h"

uint64_t cl_hash(uint64_t hash, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        hash ^= p[i];
        hash *= 1099511628211ull;
    }
    return hash;
}

uint64_t cl_cache_key(const cl_dev *d, const char *text) {
    uint64_t key = cl_hash(CL_HASH_INIT, d->device_key, strlen(d->device_key));
    key = cl_hash(key, d->build_options, strlen(d->build_options));
    return cl_hash(key, text, strlen(text));
}

/* A cache file: this header, then `size` bytes of binary. The key is repeated inside so a
 * file renamed or truncated by accident is never loaded. */
typedef struct cache_header {
    char magic[8];
    uint64_t key;
    uint64_t size;
} cache_header;
static const char g_magic[8] = {'K', 'I', 'L', 'N', 'C', 'L', 'B', '1'};

static int cache_enabled(void) {
    const char *e = getenv("KILN_CL_CACHE");
    return !(e && !strcmp(e, "0"));
}

/* The cache directory, created when `create`; 0 when there is none. */
static int cache_dir(char *buf, size_t size, int create) {
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n;
    if (xdg && *xdg)
        n = snprintf(buf, size, "%s/kiln", xdg);
    else if (home && *home)
        n = snprintf(buf, size, "%s/.cache/kiln", home);
    else
        return 0;
    if (n < 0 || (size_t)n + 8 >= size) return 0;
    if (create) {
        /* ~/.cache may not exist yet either */
        if (!(xdg && *xdg)) {
            char parent[1024];
            snprintf(parent, sizeof parent, "%s/.cache", home);
            mkdir(parent, 0755);
        }
        if (mkdir(buf, 0755) && errno != EEXIST) return 0;
    }
    strcat(buf, "/opencl");
    if (create && mkdir(buf, 0755) && errno != EEXIST) return 0;
    return 1;
}

static int binary_cache_path(char *buf, size_t size, uint64_t key, const char *family, int create) {
    char dir[1024];
    if (!cache_dir(dir, sizeof dir, create)) return 0;
    int n = snprintf(buf, size, "%s/%s-%016llx.bin", dir, family, (unsigned long long)key);
    return n > 0 && (size_t)n < size;
}

unsigned char *cl_cache_read(uint64_t key, const char *family, size_t *size) {
    char path[1200];
    if (!cache_enabled() || !binary_cache_path(path, sizeof path, key, family, 0)) return NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    cache_header h;
    unsigned char *data = NULL;
    if (fread(&h, sizeof h, 1, f) == 1 && !memcmp(h.magic, g_magic, 8) && h.key == key &&
        h.size > 0 && h.size < ((uint64_t)1 << 31)) {
        data = malloc((size_t)h.size);
        if (data && fread(data, 1, (size_t)h.size, f) != (size_t)h.size) {
            free(data);
            data = NULL;
        }
    }
    fclose(f);
    if (data) *size = (size_t)h.size;
    return data;
}

void cl_cache_write(uint64_t key, const char *family, const unsigned char *data, size_t size) {
    char path[1200];
    if (!cache_enabled() || !size || !binary_cache_path(path, sizeof path, key, family, 1)) return;
    /* written whole under a temporary name of its own (kiln/file.h): readers never see a
     * partial file, and two processes, or two threads of one, compiling the same program
     * at once both succeed */
    kiln_file *f = kiln_file_begin(path, NULL, 0);
    if (!f) return;
    cache_header h = {.key = key, .size = size};
    memcpy(h.magic, g_magic, sizeof h.magic);
    kiln_file_write(f, &h, sizeof h);
    kiln_file_write(f, data, size);
    if (kiln_file_commit(f, NULL, 0) == KILN_OK) kiln_cl_cache_writes++;
}
