/* Line reading (see text_line.h). */
#include "formats/text_line.h"

#include <stdlib.h>

int text_read_line(FILE *f, char **line, size_t *cap, size_t *len) {
    size_t n = 0;
    int c;
    while ((c = fgetc(f)) != EOF && c != '\n') {
        if (n + 1 >= *cap) {
            size_t grown_cap = *cap ? 2 * *cap : 256;
            char *grown = realloc(*line, grown_cap);
            if (!grown) return -1;
            *line = grown;
            *cap = grown_cap;
        }
        (*line)[n++] = (char)c;
    }
    *len = n;
    return c == EOF && n == 0 ? 0 : 1;
}
