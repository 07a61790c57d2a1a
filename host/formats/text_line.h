/* Reading a text file line by line in C11 (getline is POSIX, not C11). */
#ifndef KILN_HOST_FORMATS_TEXT_LINE_H
#define KILN_HOST_FORMATS_TEXT_LINE_H

#include <stddef.h>
#include <stdio.h>

/* Reads the next line of f (without its '\n') into *line, growing it (*cap bytes; start
 * with NULL and 0, free(*line) at the end). Returns 1 and *len when a line was read (the
 * last line may lack its '\n'), 0 at the end of the file, -1 when out of memory. */
int text_read_line(FILE *f, char **line, size_t *cap, size_t *len);

#endif
