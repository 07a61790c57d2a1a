/* Opening a file that a reader is handed, with the one-line errors every reader gives. */
#ifndef KILN_HOST_FORMATS_FILE_OPEN_H
#define KILN_HOST_FORMATS_FILE_OPEN_H

#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>

/* fopen(path, "rb"), then fstat into *st. Returns the stream, or NULL with
 * "PATH: cannot open ROLE: REASON" ("PATH: cannot open: REASON" when role is "") or
 * "PATH: cannot stat: REASON" in err. What the file may be (regular, not a directory) is the
 * caller's to check: each reader says so in its own words. */
FILE *file_open_read(const char *path, const char *role, struct stat *st, char *err, size_t errlen);

/* Reads a whole file (a regular file or a pipe; a directory is refused) into *bytes
 * (malloc'd, with a NUL after the n bytes, which *n does not count). Returns 0, or -1 with
 * one line in err ("PATH: cannot open ROLE: ...", "PATH is a directory; give ROLE", "PATH:
 * read error ..."). */
int file_read_all(const char *path, const char *role, char **bytes, size_t *n, char *err, size_t errlen);

#endif
