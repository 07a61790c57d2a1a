/* A file a reader hands out pieces of, mapped rather than read (mmap, read-only): a model's
 * weights are then read straight from the page cache into their destination, and the pages
 * of what has been consumed are given back (file_map_drop), so that loading a model never
 * holds its weights twice. A file that cannot be mapped (a pipe, an empty file) is read
 * into memory instead, and dropping is then a no-op. */
#ifndef KILN_HOST_FORMATS_FILE_MAP_H
#define KILN_HOST_FORMATS_FILE_MAP_H

#include <stddef.h>

typedef struct file_map {
    unsigned char *bytes;
    size_t size;
    int mapped; /* 1: munmap on close; 0: malloc'd */
} file_map;

/* Maps the regular file at path (a directory is refused naming `role`). Returns 0, or -1
 * with one line in err. */
int file_map_open(const char *path, const char *role, file_map *m, char *err, size_t errlen);
/* Takes over a malloc'd buffer (the readers' in-memory entry points). */
void file_map_adopt(file_map *m, unsigned char *bytes, size_t size);
void file_map_close(file_map *m);
/* Gives the whole pages inside [p, p + n) back to the kernel (madvise MADV_DONTNEED: a later
 * read faults them in again from the file). A no-op for a buffer that is not mapped and
 * for a range outside the map. */
void file_map_drop(const file_map *m, const void *p, size_t n);

#endif
