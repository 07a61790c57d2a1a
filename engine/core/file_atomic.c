/* Replacing a file whole (kiln/file.h): the one place in kiln that renames a file. */
#define _POSIX_C_SOURCE 200809L /* fsync, fileno, link, getpid */
#include "kiln/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h" /* KILN_PRINTF */

struct kiln_file {
    char *path, *tmp;
    char *previous, *previous_tmp; /* the keep-previous mode; NULL otherwise */
    FILE *fp;
    /* the first failing step, the file it failed on and its errno (0: a stream error
     * whose errno is lost), or NULL */
    const char *step, *step_file;
    int saved_errno;
};

/* printf into the caller's err, when there is one */
static void say(char *err, size_t errlen, const char *fmt, ...) KILN_PRINTF(3, 4);

static void say(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static void free_file(kiln_file *f) {
    free(f->path);
    free(f->tmp);
    free(f->previous);
    free(f->previous_tmp);
    free(f);
}

/* "<path>.tmp.<pid>.<n>", malloc'd: a name of its own for every write of every thread. */
static char *temporary_name(const char *path) {
    static atomic_uint serial;
    size_t cap = strlen(path) + 48;
    char *tmp = malloc(cap);
    if (tmp) snprintf(tmp, cap, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&serial, 1));
    return tmp;
}

static char *copy(const char *s) {
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c) memcpy(c, s, n);
    return c;
}

static kiln_status begin(const char *path, const char *previous, kiln_file **out, char *err, size_t errlen) {
    *out = NULL;
    if (!path || !path[0] || (previous && !previous[0])) {
        say(err, errlen, "%s: no file name", path && path[0] ? path : "(no path)");
        return KILN_ERR_ARGUMENT;
    }
    kiln_file *f = calloc(1, sizeof *f);
    if (f && (!(f->path = copy(path)) || !(f->tmp = temporary_name(path)) ||
              (previous && (!(f->previous = copy(previous)) || !(f->previous_tmp = temporary_name(previous)))))) {
        free_file(f);
        f = NULL;
    }
    if (!f) {
        say(err, errlen, "%s: out of memory", path);
        return KILN_ERR_MEMORY;
    }
    if (!(f->fp = fopen(f->tmp, "wb"))) {
        /* the path the caller gave, not the temporary name: that is kiln's, not the user's */
        say(err, errlen, "%s: cannot create the temporary file in its folder: %s", path, strerror(errno));
        free_file(f);
        return KILN_ERR_IO;
    }
    *out = f;
    return KILN_OK;
}

kiln_file *kiln_file_begin_keeping(const char *path, const char *previous, char *err, size_t errlen) {
    kiln_file *f;
    begin(path, previous, &f, err, errlen);
    return f;
}

kiln_file *kiln_file_begin(const char *path, char *err, size_t errlen) {
    return kiln_file_begin_keeping(path, NULL, err, errlen);
}

static void fail(kiln_file *f, const char *step, const char *file, int saved_errno) {
    if (f->step) return;
    f->step = step;
    f->step_file = file;
    f->saved_errno = saved_errno;
}

void kiln_file_write(kiln_file *f, const void *data, size_t n) {
    if (f->step || n == 0) return;
    if (fwrite(data, 1, n, f->fp) != n) fail(f, "write", f->tmp, errno);
}

FILE *kiln_file_stream(kiln_file *f) { return f->fp; }

/* fsync of the folder makes the renames themselves durable. It runs after the rename,
 * when the new file is already in place, so a failure here (some filesystems do not
 * support it) is not reported as a failed save. */
static void fsync_folder(const char *path) {
    const char *slash = strrchr(path, '/');
    char *dir = slash && slash != path ? copy(path) : NULL;
    if (dir) dir[slash - path] = '\0';
    int fd = open(dir ? dir : slash ? "/" : ".", O_RDONLY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

/* The keep-previous mode: the file about to be replaced stays at hand as f->previous, put
 * in place by a rename too, so that name never holds a part of a file. */
static void keep_previous(kiln_file *f) {
    (void)unlink(f->previous_tmp);
    if (link(f->path, f->previous_tmp) != 0) {
        if (errno != ENOENT) fail(f, "link", f->previous_tmp, errno); /* ENOENT: nothing to keep yet */
        return;
    }
    if (rename(f->previous_tmp, f->previous) != 0) {
        fail(f, "rename", f->previous_tmp, errno);
        (void)unlink(f->previous_tmp);
    }
}

kiln_status kiln_file_commit(kiln_file *f, char *err, size_t errlen) {
    if (fflush(f->fp) != 0) fail(f, "write", f->tmp, errno);
    if (ferror(f->fp)) fail(f, "write", f->tmp, 0);
    if (!f->step && fsync(fileno(f->fp)) != 0) fail(f, "fsync", f->tmp, errno);
    if (fclose(f->fp) != 0) fail(f, "close", f->tmp, errno);
    if (!f->step && f->previous) keep_previous(f);
    if (!f->step && rename(f->tmp, f->path) != 0) fail(f, "rename", f->tmp, errno);
    kiln_status st = KILN_OK;
    if (f->step) {
        (void)remove(f->tmp);
        say(err, errlen, "%s: not saved (%s of %s failed: %s); any previous file is unchanged", f->path, f->step,
            f->step_file, f->saved_errno ? strerror(f->saved_errno) : "a write error");
        st = KILN_ERR_IO;
    } else {
        fsync_folder(f->path);
    }
    free_file(f);
    return st;
}

void kiln_file_abort(kiln_file *f) {
    if (!f) return;
    fclose(f->fp);
    (void)remove(f->tmp);
    free_file(f);
}

kiln_status kiln_file_write_all(const char *path, const void *data, size_t n, char *err, size_t errlen) {
    kiln_file *f;
    kiln_status st = begin(path, NULL, &f, err, errlen);
    if (st != KILN_OK) return st;
    kiln_file_write(f, data, n);
    return kiln_file_commit(f, err, errlen);
}
