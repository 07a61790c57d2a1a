/* Strict text-to-number conversions: the whole string must be the number, so "10x", " 10",
 * "+10", "nan" and "" are refused. Shared by the command line's option values and the
 * readers of numbers stored as text (checkpoint and optimizer-state metadata). */
#ifndef KILN_HOST_FORMATS_TEXT_NUMBER_H
#define KILN_HOST_FORMATS_TEXT_NUMBER_H

#include <stdint.h>

/* Each returns 0 and the value in *out, or -1 (and leaves *out alone). */
int text_to_int64(const char *s, int64_t *out);
/* No sign: "-1" is refused, not wrapped around. */
int text_to_uint64(const char *s, uint64_t *out);
/* A finite number in strtod's syntax (hex floats too), never "inf" or "nan". */
int text_to_double(const char *s, double *out);

#endif
