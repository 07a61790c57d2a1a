/* The fuzz targets whose input holds several parts separated by "\n#--\n". */
#ifndef KILN_FUZZ_PARTS_H
#define KILN_FUZZ_PARTS_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FUZZ_SEPARATOR "\n#--\n"

/* The part after `data` up to the next separator (or the end); *rest is after it. */
static inline size_t fuzz_part(const uint8_t *data, size_t size, const uint8_t **rest, size_t *rest_size) {
    size_t sep = strlen(FUZZ_SEPARATOR);
    for (size_t i = 0; i + sep <= size; i++)
        if (!memcmp(data + i, FUZZ_SEPARATOR, sep)) {
            *rest = data + i + sep;
            *rest_size = size - i - sep;
            return i;
        }
    *rest = data + size;
    *rest_size = 0;
    return size;
}
#endif
