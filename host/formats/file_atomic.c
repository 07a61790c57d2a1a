/* Atomic file replacement (file_atomic.h). */
#define _POSIX_C_SOURCE 200809L
#include "formats/file_atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/error_printf.h"

struct atomic_file {
    char *path, *tmp;
    FILE *fp;
    const char *step; /* the first failing step, or NULL */
    int saved_errno;
};

static void free_file(atomic_file *f) {
    free(f->path);
    free(f->tmp);
    free(f);
}

atomic_file *atomic_file_begin(const char *path, char *err, size_t errlen) {
    atomic_file *f = calloc(1, sizeof *f);
    size_t len = path ? strlen(path) : 0;
    if (!f || !path || !len) {
        free(f);
        error_printf(err, errlen, "%s: %s", path && len ? path : "(no path)", path && len ? "out of memory" : "no file name");
        return NULL;
    }
    f->path = malloc(len + 1);
    f->tmp = malloc(len + 32);
    if (!f->path || !f->tmp) {
        free_file(f);
        error_printf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    memcpy(f->path, path, len + 1);
    snprintf(f->tmp, len + 32, "%s.tmp.%ld", path, (long)getpid());
    if (!(f->fp = fopen(f->tmp, "wb"))) {
        error_printf(err, errlen, "%s: cannot create the temporary file %s: %s", path, f->tmp, strerror(errno));
        free_file(f);
        return NULL;
    }
    return f;
}

void atomic_file_write(atomic_file *f, const void *data, size_t n) {
    if (f->step || n == 0) return;
    if (fwrite(data, 1, n, f->fp) != n) f->step = "write", f->saved_errno = errno;
}

/* fsync of the directory makes the rename itself durable. It runs after the rename, when
 * the new file is already in place, so a failure here (some filesystems do not support it)
 * is not reported as a failed save. */
static void fsync_parent_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    size_t len = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
    char *dir = malloc(len + 1);
    if (!dir) return;
    if (!slash) memcpy(dir, ".", 2);
    else if (slash == path) memcpy(dir, "/", 2);
    else memcpy(dir, path, len), dir[len] = '\0';
    int fd = open(dir, O_RDONLY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

int atomic_file_commit(atomic_file *f, char *err, size_t errlen) {
    if (!f->step && fflush(f->fp) != 0) f->step = "write", f->saved_errno = errno;
    if (!f->step && fsync(fileno(f->fp)) != 0) f->step = "fsync", f->saved_errno = errno;
    if (fclose(f->fp) != 0 && !f->step) f->step = "close", f->saved_errno = errno;
    if (!f->step && rename(f->tmp, f->path) != 0) f->step = "rename", f->saved_errno = errno;
    int rc = 0;
    if (f->step) {
        remove(f->tmp);
        error_printf(err, errlen, "%s: not saved (%s of %s failed: %s); any previous file is unchanged", f->path,
                     f->step, f->tmp, strerror(f->saved_errno));
        rc = -1;
    } else {
        fsync_parent_dir(f->path);
    }
    free_file(f);
    return rc;
}

void atomic_file_abort(atomic_file *f) {
    if (!f) return;
    fclose(f->fp);
    remove(f->tmp);
    free_file(f);
}
