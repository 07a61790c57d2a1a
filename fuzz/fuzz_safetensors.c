/* Fuzzes the safetensors reader: any bytes are read or refused with a message naming the
 * file. An accepted file is read through every accessor and conversion, written back with
 * the writer, and must read back with the same tensors, bytes and metadata. */
#include <stdint.h>
#include <string.h>

#include "formats/safetensors.h"
#include "fuzz_check.h"

static void rewrite_and_compare(const st_file *f) {
    st_writer *w = st_writer_new();
    for (size_t i = 0; i < st_count(f); i++) {
        const st_tensor *t = st_tensor_at(f, i);
        FUZZ_CHECK(st_writer_add_ref(w, t->name, t->dtype_name, t->ndim, t->shape, t->data,
                                     t->nbytes) == 0);
    }
    for (size_t i = 0; i < st_meta_count(f); i++) {
        const char *k, *v;
        FUZZ_CHECK(st_meta_at(f, i, &k, &v) == 0);
        FUZZ_CHECK(st_writer_meta(w, k, v) == 0);
    }
    unsigned char *bytes;
    size_t size;
    char err[512];
    FUZZ_CHECK(st_writer_serialize(w, &bytes, &size, err, sizeof err) == 0);
    st_writer_free(w);
    st_file *g;
    if (st_open_memory(bytes, size, "rewritten", &g, err, sizeof err) != 0) {
        fprintf(stderr, "rewritten file refused: %s\n", err);
        abort();
    }
    FUZZ_CHECK(st_count(g) == st_count(f) && st_meta_count(g) == st_meta_count(f));
    for (size_t i = 0; i < st_count(f); i++) {
        const st_tensor *a = st_tensor_at(f, i), *b = st_tensor_at(g, i);
        FUZZ_CHECK(strcmp(a->name, b->name) == 0 && a->dtype == b->dtype && a->ndim == b->ndim);
        FUZZ_CHECK(memcmp(a->shape, b->shape, sizeof a->shape[0] * (size_t)a->ndim) == 0);
        FUZZ_CHECK(a->nbytes == b->nbytes && memcmp(a->data, b->data, a->nbytes) == 0);
    }
    for (size_t i = 0; i < st_meta_count(f); i++) {
        const char *k, *v;
        st_meta_at(f, i, &k, &v);
        FUZZ_CHECK(st_meta(g, k) && strcmp(st_meta(g, k), v) == 0);
    }
    st_close(g);
    free(bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    st_file *f = NULL;
    char err[512];
    err[0] = '\0';
    if (st_open_memory(data, size, "fuzz", &f, err, sizeof err) != 0) {
        FUZZ_CHECK(f == NULL && strncmp(err, "fuzz: ", 6) == 0);
        return 0;
    }
    for (size_t i = 0; i < st_count(f); i++) {
        const st_tensor *t = st_tensor_at(f, i);
        FUZZ_CHECK(t->nbytes == (size_t)t->numel * st_dtype_size(t->dtype));
        FUZZ_CHECK(t->nbytes <= size);
        FUZZ_CHECK(st_find(f, t->name) == t); /* names are unique */
        /* numel <= size because every element takes at least one byte of the input */
        size_t n = (size_t)t->numel;
        float *fv = malloc((n ? n : 1) * sizeof *fv);
        int64_t *iv = malloc((n ? n : 1) * sizeof *iv);
        int as_float = st_read_f32(t, fv, n) == 0, as_int = st_read_i64(t, iv, n) == 0;
        FUZZ_CHECK(!(as_float && as_int));
        if (t->dtype == ST_F32 || t->dtype == ST_F16 || t->dtype == ST_BF16 || t->dtype == ST_F64)
            FUZZ_CHECK(as_float);
        if (n > 0) FUZZ_CHECK(st_read_f32(t, fv, n - 1) == -1);
        free(fv);
        free(iv);
    }
    for (size_t i = 0; i < st_meta_count(f); i++) {
        const char *k, *v;
        FUZZ_CHECK(st_meta_at(f, i, &k, &v) == 0 && st_meta(f, k) == v);
    }
    rewrite_and_compare(f);
    st_close(f);
    return 0;
}
