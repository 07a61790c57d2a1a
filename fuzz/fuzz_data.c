/* Fuzzes the training-data layer: the first bytes choose batch, block, window length, seed
 * and step; the rest is the text. Sampling and windows must either fail with a message or
 * return windows that lie inside the chosen split with y shifted by one. */
#include <stdint.h>
#include <string.h>

#include "formats/data.h"
#include "fuzz_check.h"

/* Does row x (n tokens) followed by y's last token appear at some start of the split? */
static int64_t find_start(const int32_t *t, int64_t len, const int32_t *x, const int32_t *y,
                          int64_t n) {
    for (int64_t s = 0; s + n < len; s++)
        if (memcmp(t + s, x, (size_t)n * sizeof *x) == 0 && t[s + n] == y[n - 1]) return s;
    return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 12) return 0;
    int64_t batch = 1 + data[0] % 4, block = 1 + data[1] % 64, wlen = 1 + data[2] % 16;
    uint64_t seed = 0, step = data[11];
    memcpy(&seed, data + 3, 8);
    data += 12, size -= 12;

    data_set *ds = NULL;
    char err[256];
    if (data_from_bytes(data, size, &ds, err, sizeof err) != 0) {
        FUZZ_CHECK(size == 0 && ds == NULL && err[0]);
        return 0;
    }
    FUZZ_CHECK(ds->n_tokens == (int64_t)size && ds->n_train + ds->n_tokens / 10 == ds->n_tokens);
    int32_t *x = malloc((size_t)(batch * block) * sizeof *x);
    int32_t *y = malloc((size_t)(batch * block) * sizeof *y);
    for (int split = DATA_TRAIN; split <= DATA_VAL; split++) {
        const int32_t *t;
        int64_t len;
        FUZZ_CHECK(data_split(ds, split, &t, &len) == 0);
        err[0] = '\0';
        int rc = data_sample_batch(ds, split, batch, block, seed, step, x, y, err, sizeof err);
        FUZZ_CHECK(rc == (len >= block + 1 ? 0 : -1));
        if (rc != 0) FUZZ_CHECK(strstr(err, "needs at least") != NULL);
        for (int64_t b = 0; rc == 0 && b < batch; b++) {
            const int32_t *xb = x + b * block, *yb = y + b * block;
            FUZZ_CHECK(memcmp(xb + 1, yb, (size_t)(block - 1) * sizeof *x) == 0);
            FUZZ_CHECK(find_start(t, len, xb, yb, block) >= 0);
        }
        int64_t nw = data_windows(ds, split, wlen);
        FUZZ_CHECK(nw == (len >= 1 ? (len - 1) / wlen : 0));
        int32_t wx[16], wy[16];
        for (int64_t i = 0; i < nw; i++) {
            FUZZ_CHECK(data_window(ds, split, wlen, i, wx, wy, err, sizeof err) == 0);
            FUZZ_CHECK(memcmp(wx, t + i * wlen, (size_t)wlen * sizeof *wx) == 0);
            FUZZ_CHECK(wy[wlen - 1] == t[i * wlen + wlen]);
        }
        FUZZ_CHECK(data_window(ds, split, wlen, nw, wx, wy, err, sizeof err) == -1);
    }
    free(x);
    free(y);
    data_free(ds);
    return 0;
}
