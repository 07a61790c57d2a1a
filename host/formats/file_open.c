/* Opening a file for a reader (see file_open.h). */
#define _POSIX_C_SOURCE 200809L /* fileno */

#include "formats/file_open.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/error_printf.h"

FILE *file_open_read(const char *path, const char *role, struct stat *st, char *err, size_t errlen) {
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        error_printf(err, errlen, "%s: cannot open%s%s: %s", path, *role ? " " : "", role, strerror(errno));
        return NULL;
    }
    if (fstat(fileno(fp), st) != 0) {
        error_printf(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
        fclose(fp);
        return NULL;
    }
    return fp;
}

int file_read_all(const char *path, const char *role, char **bytes, size_t *n, char *err, size_t errlen) {
    *bytes = NULL;
    *n = 0;
    struct stat sb;
    FILE *fp = file_open_read(path, role, &sb, err, errlen);
    if (!fp) return -1;
    if (S_ISDIR(sb.st_mode)) {
        error_printf(err, errlen, "%s is a directory; give %s", path, role);
        fclose(fp);
        return -1;
    }
    /* Read in chunks rather than trusting st_size, so pipes and /proc files work too. */
    size_t cap = S_ISREG(sb.st_mode) && sb.st_size > 0 ? (size_t)sb.st_size + 1 : 1 << 16, got = 0;
    char *buf = malloc(cap);
    int rc = -1;
    for (;;) {
        if (!buf) {
            error_printf(err, errlen, "%s: out of memory after %zu bytes", path, got);
            break;
        }
        got += fread(buf + got, 1, cap - got - 1, fp);
        if (ferror(fp)) {
            error_printf(err, errlen, "%s: read error after %zu bytes: %s", path, got, strerror(errno));
            break;
        }
        if (got < cap - 1) { /* end of file */
            buf[got] = '\0';
            *bytes = buf;
            *n = got;
            buf = NULL;
            rc = 0;
            break;
        }
        char *grown = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
        if (!grown) free(buf);
        buf = grown;
        cap *= 2;
    }
    free(buf);
    fclose(fp);
    return rc;
}
