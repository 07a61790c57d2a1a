/* Mapping a file for a reader (file_map.h). */
#define _POSIX_C_SOURCE 200809L /* fileno */
#define _DEFAULT_SOURCE         /* madvise */

#include "formats/file_map.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/error_printf.h"
#include "formats/file_open.h"

int file_map_open(const char *path, const char *role, file_map *m, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    struct stat sb;
    FILE *fp = file_open_read(path, role, &sb, err, errlen);
    if (!fp) return -1;
    if (S_ISDIR(sb.st_mode)) {
        error_printf(err, errlen, "%s is a directory; give %s", path, *role ? role : "a file");
        fclose(fp);
        return -1;
    }
    if (S_ISREG(sb.st_mode) && sb.st_size > 0 && (uint64_t)sb.st_size <= SIZE_MAX) {
        void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fileno(fp), 0);
        if (p != MAP_FAILED) {
            fclose(fp); /* the mapping keeps the file */
            m->bytes = p;
            m->size = (size_t)sb.st_size;
            m->mapped = 1;
            return 0;
        }
    }
    fclose(fp);
    char *bytes;
    size_t n;
    if (file_read_all(path, role, &bytes, &n, err, errlen)) return -1;
    file_map_adopt(m, (unsigned char *)bytes, n);
    return 0;
}

void file_map_adopt(file_map *m, unsigned char *bytes, size_t size) {
    m->bytes = bytes;
    m->size = size;
    m->mapped = 0;
}

void file_map_close(file_map *m) {
    if (!m->bytes) return;
    if (m->mapped) munmap(m->bytes, m->size);
    else free(m->bytes);
    memset(m, 0, sizeof *m);
}

void file_map_drop(const file_map *m, const void *p, size_t n) {
    const unsigned char *b = p;
    if (!m->mapped || b < m->bytes || n > m->size || (size_t)(b - m->bytes) > m->size - n) return;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)b + page - 1) / page * page, hi = ((uintptr_t)b + n) / page * page;
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
}
