/* The first-use device check (cli/device_check.h). */
#define _POSIX_C_SOURCE 200809L
#include "cli/device_check.h"

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kiln/file.h"
#include "kiln/probe.h"
#include "model/verify_suite.h"
#include "run/device.h"
#include "run/precision_option.h"

#ifndef KILN_GIT_COMMIT
#define KILN_GIT_COMMIT "unknown"
#endif

cli_opt host_trust_device_option(int *trust) {
    return (cli_opt){.name = "--trust-device", .kind = CLI_FLAG, .target = trust,
                     .help = "skip the check of the device's kernels on its first use (kiln verify --quick)"};
}

/* What a cached verdict is keyed on: a new driver or a new kiln build checks again. */
static void identity(const kiln_ctx *dev, char *buf, size_t size) {
    snprintf(buf, size, "kiln %s (%s)\n%s\n%s\n%s\n", KILN_VERSION_STRING, KILN_GIT_COMMIT, kiln_backend_name(dev),
             kiln_device_name(dev), kiln_device_driver(dev));
}

/* The verdicts' directory: $KILN_DEVICE_CHECK_DIR (tests keep their verdicts apart with
 * it), else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln; 0 when none is set (no cache: every
 * run checks). */
static int cache_dir(char *dir, size_t size) {
    const char *own = getenv("KILN_DEVICE_CHECK_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (own && *own) snprintf(dir, size, "%s", own);
    else if (xdg && *xdg) snprintf(dir, size, "%s/kiln", xdg);
    else if (home && *home) snprintf(dir, size, "%s/.cache/kiln", home);
    else return 0;
    return 1;
}

/* <dir>/verified-<FNV-1a of the identity>; 0 when there is no cache directory. */
static int cache_path(const char *id, char *path, size_t size) {
    char dir[512];
    if (!cache_dir(dir, sizeof dir)) return 0;
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *p = id; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    return snprintf(path, size, "%s/verified-%016llx", dir, (unsigned long long)h) < (int)size;
}

/* 1 when the cache holds a pass for exactly this identity (the file repeats it, so a hash
 * collision cannot pass a device). */
static int cached_pass(const char *path, const char *id) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    size_t len = strlen(id);
    return n == len + 5 && !strncmp(buf, id, len) && !strcmp(buf + len, "pass\n");
}

/* Records the pass, written whole (kiln/file.h), so a reader never sees half of one.
 * Failure only means the next run checks again. */
static void remember_pass(const char *path, const char *id) {
    char dir[640];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) return;
    *slash = 0;
    /* ~/.cache may not exist yet: make it and kiln/ (mode 0700 as XDG asks) */
    char *parent = strrchr(dir, '/');
    if (parent) {
        *parent = 0;
        if (mkdir(dir, 0700) && errno != EEXIST) return;
        *parent = '/';
    }
    if (mkdir(dir, 0700) && errno != EEXIST) return;
    kiln_file *f = kiln_file_begin(path, NULL, 0);
    if (!f) return;
    fprintf(kiln_file_stream(f), "%spass\n", id);
    (void)kiln_file_commit(f, NULL, 0);
}

/* The quick check: 0 when the device passed, else 1 after the one-line error. */
static int check_device(const char *command, kiln_ctx *dev) {
    kiln_ctx *cpu;
    if (kiln_open("cpu", &cpu) != KILN_OK) return host_engine_error("the CPU reference for the device check");
    verify_selection sel = {.quick = 1};
    verify_totals t;
    /* the cases draw dropout masks from the context's generator: the command's own draws
     * must not depend on whether the check ran (a run is reproducible from its seed) */
    uint64_t seed = kiln_seed(dev), stream = kiln_rng_stream(dev);
    int training = kiln_training(dev);
    kiln_status st = verify_suite_run(dev, cpu, &sel, NULL, NULL, &t);
    kiln_set_seed(dev, seed);
    kiln_set_rng_stream(dev, stream);
    kiln_set_training(dev, training);
    kiln_close(cpu);
    char advice[200];
    snprintf(advice, sizeof advice, "run `kiln verify --backend %s` for every case, use --backend cpu, or "
             "--trust-device to go on anyway", kiln_backend_name(dev));
    if (st != KILN_OK)
        return host_error("kiln %s: %s device %s could not finish the check of its kernels: %s; %s", command,
                          kiln_backend_name(dev), kiln_device_name(dev), kiln_error_message(), advice);
    if (t.failed)
        return host_error("kiln %s: %s device %s computes wrong results: %s (%d of %d quick checks failed); %s",
                          command, kiln_backend_name(dev), kiln_device_name(dev), t.first_failure, t.failed,
                          t.passed + t.failed + t.skipped, advice);
    return 0;
}

/* Whether no device has passed the check here yet: kiln's first GPU run on this machine (or
 * with this cache), when the driver's own caches are likely cold too. */
static int no_device_checked(void) {
    char pattern[600];
    if (!cache_dir(pattern, sizeof pattern - 16)) return 1;
    strcat(pattern, "/verified-*");
    glob_t g;
    int none = glob(pattern, 0, NULL, &g) != 0;
    if (!none) globfree(&g);
    return none;
}

kiln_ctx *host_open_checked_device(const char *command, const char *backend, int device, kiln_dtype dtype,
                                   int trust) {
    /* a cold driver takes about a second to open (PoCL: 0.9 s): said on a terminal, where
     * someone waits; a log gets the check's line below a second later, and a device refused
     * for its precision keeps its error the only line */
    if (!trust && strcmp(backend, "cpu") && isatty(fileno(stderr)) && no_device_checked())
        host_say(command, "opening the %s device (first use)...", strcmp(backend, "auto") ? backend : "best");
    kiln_ctx *dev = host_open_device(backend, device);
    if (dev && host_check_precision(dev, dtype)) {
        kiln_close(dev);
        return NULL;
    }
    if (!dev || trust || !strcmp(kiln_backend_name(dev), "cpu")) return dev;
    char id[1024], path[640];
    identity(dev, id, sizeof id);
    int cacheable = cache_path(id, path, sizeof path);
    if (cacheable && cached_pass(path, id)) return dev;
    /* the check compiles every kernel it runs, on a cold cache for a minute or more: a
     * silent wait that long looks like a hang */
    host_say(command, "checking the %s device's kernels (first use: kiln verify --quick; compiling them on a cold "
                      "cache can take a minute)...", kiln_backend_name(dev));
    if (check_device(command, dev)) {
        kiln_close(dev);
        return NULL;
    }
    if (cacheable) remember_pass(path, id);
    return dev;
}
