/* Training data: loading, the train/validation split, reproducible random batches and
 * evaluation windows. See data.h. */
#define _POSIX_C_SOURCE 200809L

#include "formats/data.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/error_printf.h"
#include "formats/file_open.h"
#include "kiln/rng.h"


static const char *split_name(int split) {
    return split == DATA_TRAIN ? "training" : split == DATA_VAL ? "validation" : "unknown";
}

/* Takes ownership of tokens. */
static int make_set(int32_t *tokens, int64_t n, int32_t vocab, data_set **out, char *err,
                    size_t errlen) {
    data_set *ds = malloc(sizeof *ds);
    if (!ds) {
        free(tokens);
        error_printf(err, errlen, "out of memory");
        return -1;
    }
    ds->tokens = tokens;
    ds->n_tokens = n;
    ds->n_train = n - n / 10;
    ds->vocab_size = vocab;
    *out = ds;
    return 0;
}

int data_from_bytes(const uint8_t *bytes, size_t n, data_set **out, char *err, size_t errlen) {
    if (!out) return -1;
    *out = NULL;
    if (n == 0) {
        error_printf(err, errlen, "the data is empty");
        return -1;
    }
    if (!bytes) {
        error_printf(err, errlen, "data_from_bytes: NULL bytes");
        return -1;
    }
    if ((uint64_t)n > (uint64_t)INT64_MAX || n > SIZE_MAX / sizeof(int32_t)) {
        error_printf(err, errlen, "the data (%zu bytes) is too large", n);
        return -1;
    }
    int32_t *tokens = malloc(n * sizeof *tokens);
    if (!tokens) {
        error_printf(err, errlen, "out of memory for %zu tokens", n);
        return -1;
    }
    for (size_t i = 0; i < n; i++) tokens[i] = bytes[i];
    return make_set(tokens, (int64_t)n, 256, out, err, errlen);
}

int data_from_tokens(const int32_t *tokens, int64_t n, int32_t vocab_size, data_set **out,
                     char *err, size_t errlen) {
    if (!out) return -1;
    *out = NULL;
    if (n <= 0 || !tokens) {
        error_printf(err, errlen, "no tokens");
        return -1;
    }
    if (vocab_size <= 0) {
        error_printf(err, errlen, "vocabulary size %" PRId32 " must be positive", vocab_size);
        return -1;
    }
    if ((uint64_t)n > SIZE_MAX / sizeof(int32_t)) {
        error_printf(err, errlen, "%" PRId64 " tokens are too many for this machine", n);
        return -1;
    }
    for (int64_t i = 0; i < n; i++) {
        if (tokens[i] < 0 || tokens[i] >= vocab_size) {
            error_printf(err, errlen, "token %" PRId64 " has id %" PRId32 ", outside the vocabulary "
                         "[0, %" PRId32 ")", i, tokens[i], vocab_size);
            return -1;
        }
    }
    int32_t *copy = malloc((size_t)n * sizeof *copy);
    if (!copy) {
        error_printf(err, errlen, "out of memory for %" PRId64 " tokens", n);
        return -1;
    }
    memcpy(copy, tokens, (size_t)n * sizeof *copy);
    return make_set(copy, n, vocab_size, out, err, errlen);
}

int data_load_bytes(const char *path, data_set **out, char *err, size_t errlen) {
    return data_load_bytes_as(path, "the training data", out, err, errlen);
}

int data_load_bytes_as(const char *path, const char *role, data_set **out, char *err, size_t errlen) {
    if (!out) return -1;
    *out = NULL;
    if (!path) {
        error_printf(err, errlen, "data_load_bytes: NULL path");
        return -1;
    }
    struct stat sb;
    FILE *fp = file_open_read(path, role, &sb, err, errlen);
    if (!fp) return -1;
    if (S_ISDIR(sb.st_mode)) {
        error_printf(err, errlen, "%s is a directory; give a text file as %s", path, role);
        fclose(fp);
        return -1;
    }
    /* Read in chunks rather than trusting st_size, so pipes and /proc files work too. */
    size_t cap = S_ISREG(sb.st_mode) && sb.st_size > 0 ? (size_t)sb.st_size : 1 << 16, n = 0;
    uint8_t *bytes = malloc(cap);
    int rc = -1;
    for (;;) {
        if (!bytes) {
            error_printf(err, errlen, "%s: out of memory after %zu bytes", path, n);
            break;
        }
        n += fread(bytes + n, 1, cap - n, fp);
        if (ferror(fp)) {
            error_printf(err, errlen, "%s: read error after %zu bytes", path, n);
            break;
        }
        if (n < cap) { /* EOF */
            if (n == 0) error_printf(err, errlen, "%s: %s file is empty", path, role);
            else rc = data_from_bytes(bytes, n, out, err, errlen);
            break;
        }
        /* Full: probe for EOF before growing. */
        int c = fgetc(fp);
        if (c == EOF) {
            rc = data_from_bytes(bytes, n, out, err, errlen);
            break;
        }
        uint8_t *nb = cap <= SIZE_MAX / 2 ? realloc(bytes, cap * 2) : NULL;
        if (!nb) free(bytes);
        bytes = nb;
        cap *= 2;
        if (bytes) bytes[n++] = (uint8_t)c;
    }
    free(bytes);
    fclose(fp);
    return rc;
}

void data_free(data_set *ds) {
    if (!ds) return;
    free(ds->tokens);
    free(ds);
}

int data_split(const data_set *ds, int split, const int32_t **tokens, int64_t *n) {
    if (!ds || !tokens || !n) return -1;
    if (split == DATA_TRAIN) {
        *tokens = ds->tokens;
        *n = ds->n_train;
    } else if (split == DATA_VAL) {
        *tokens = ds->tokens + ds->n_train;
        *n = ds->n_tokens - ds->n_train;
    } else {
        return -1;
    }
    return 0;
}

int data_check_block(const data_set *ds, int split, int64_t block, char *err, size_t errlen) {
    const int32_t *t;
    int64_t n;
    if (data_split(ds, split, &t, &n) != 0) {
        error_printf(err, errlen, "unknown data split %d (use DATA_TRAIN or DATA_VAL)", split);
        return -1;
    }
    if (block < 1) {
        error_printf(err, errlen, "block length %" PRId64 " must be at least 1", block);
        return -1;
    }
    if (n < block || n - block < 1) {
        error_printf(err, errlen, "the %s split has %" PRId64 " tokens but a block of %" PRId64
                     " needs at least %" PRId64 " (use a smaller block or more data)",
                     split_name(split), n, block, block + 1);
        return -1;
    }
    return 0;
}

int data_sample_batch(const data_set *ds, int split, int64_t batch, int64_t block, uint64_t seed,
                      uint64_t step, int32_t *x, int32_t *y, char *err, size_t errlen) {
    if (data_check_block(ds, split, block, err, errlen) != 0) return -1;
    if (batch < 1) {
        error_printf(err, errlen, "batch size %" PRId64 " must be at least 1", batch);
        return -1;
    }
    if (!x || !y) {
        error_printf(err, errlen, "data_sample_batch: NULL output");
        return -1;
    }
    const int32_t *t = NULL;
    int64_t n = 0;
    data_split(ds, split, &t, &n);
    /* n - block starts leave room for block inputs plus the one-token-shifted targets. A
     * 64-bit draw keeps the modulo bias below 2^-24 for any realistic data size. */
    uint64_t starts = (uint64_t)(n - block), key = seed ^ DATA_RNG_SALT;
    for (int64_t b = 0; b < batch; b++) {
        uint64_t hi = kiln_rng_u32(key, step, 2 * (uint64_t)b);
        uint64_t lo = kiln_rng_u32(key, step, 2 * (uint64_t)b + 1);
        int64_t s = (int64_t)(((hi << 32) | lo) % starts);
        memcpy(x + b * block, t + s, (size_t)block * sizeof *x);
        memcpy(y + b * block, t + s + 1, (size_t)block * sizeof *y);
    }
    return 0;
}

int64_t data_windows(const data_set *ds, int split, int64_t n) {
    const int32_t *t;
    int64_t len;
    if (n < 1 || data_split(ds, split, &t, &len) != 0) return -1;
    return len >= 1 ? (len - 1) / n : 0;
}

int data_window(const data_set *ds, int split, int64_t n, int64_t i, int32_t *x, int32_t *y,
                char *err, size_t errlen) {
    int64_t count = data_windows(ds, split, n);
    if (count < 0) {
        error_printf(err, errlen, "data_window: bad split %d or window length %" PRId64, split, n);
        return -1;
    }
    if (i < 0 || i >= count) {
        error_printf(err, errlen, "window %" PRId64 " is out of range: the %s split has %" PRId64
                     " full windows of %" PRId64, i, split_name(split), count, n);
        return -1;
    }
    if (!x || !y) {
        error_printf(err, errlen, "data_window: NULL output");
        return -1;
    }
    const int32_t *t = NULL;
    int64_t len = 0;
    data_split(ds, split, &t, &len);
    memcpy(x, t + i * n, (size_t)n * sizeof *x);
    memcpy(y, t + i * n + 1, (size_t)n * sizeof *y);
    return 0;
}
