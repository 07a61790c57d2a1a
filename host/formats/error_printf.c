/* One-line error messages into a caller's buffer (see error_printf.h). */
#include "formats/error_printf.h"

#include <stdarg.h>
#include <stdio.h>

void error_printf(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

void error_one_line(char *err, size_t errlen) {
    for (size_t i = 0; err && i < errlen && err[i]; i++)
        if ((unsigned char)err[i] < 0x20 || err[i] == 0x7f) err[i] = '?';
}
