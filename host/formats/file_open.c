/* Opening a file for a reader (see file_open.h). */
#define _POSIX_C_SOURCE 200809L /* fileno */

#include "formats/file_open.h"

#include <errno.h>
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
