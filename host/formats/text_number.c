/* Strict text-to-number conversions (see text_number.h). */
#include "formats/text_number.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

int text_to_int64(const char *s, int64_t *out) {
    /* no leading spaces or '+': the value is exactly the number */
    if (!s || (*s != '-' && (*s < '0' || *s > '9'))) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || end == s) return -1;
    *out = (int64_t)v;
    return 0;
}

int text_to_uint64(const char *s, uint64_t *out) {
    /* strtoull accepts "-1" (as a huge value) and leading spaces: refuse both */
    if (!s || *s < '0' || *s > '9') return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return -1;
    *out = (uint64_t)v;
    return 0;
}

int text_to_double(const char *s, double *out) {
    if (!s || !*s || *s == ' ' || (*s >= '\t' && *s <= '\r')) return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    /* strtod also takes "nan", "inf" and hex floats; a value must be finite */
    if (errno || *end || end == s || !isfinite(v)) return -1;
    *out = v;
    return 0;
}
