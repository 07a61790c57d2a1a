/* The error messages of the file readers and writers (json, safetensors, data): each
 * function that can fail takes a caller's buffer `err` of `errlen` bytes and writes one line
 * into it. */
#ifndef KILN_HOST_FORMATS_ERROR_PRINTF_H
#define KILN_HOST_FORMATS_ERROR_PRINTF_H

#include <stddef.h>

/* printf into err; nothing when err is NULL or errlen is 0 (a caller that does not want
 * the message). */
void error_printf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Replaces every control character of err (a name or value quoted from a file: "Qw\n3...")
 * by '?', so that the message stays one line of printable text. */
void error_one_line(char *err, size_t errlen);

#endif
