/* Reading and writing safetensors files (the format of Hugging Face's `safetensors`).
 *
 * Layout: an 8-byte little-endian header length N, N bytes of a JSON object
 *   {"__metadata__": {"key": "value", ...},
 *    "name": {"dtype": "F32", "shape": [d0, d1, ...], "data_offsets": [begin, end]}, ...}
 * padded with spaces, then the data section. Offsets are relative to the data section.
 *
 * The reader validates everything before it hands out a single tensor: the header length
 * against the file size and ST_MAX_HEADER, the JSON, every dtype, shape and offset pair,
 * that the byte ranges tile the data section exactly (as the reference implementation
 * requires: sorted by offset they start at 0, touch without gaps or overlaps and end at
 * the end of the file), duplicate names and the metadata types. A bad file gives a
 * one-line error naming the file and the problem, never a crash.
 *
 * The writer produces files that the Python/Rust `safetensors` library reads: metadata
 * first, tensors in the order they were added, the header padded with spaces to a
 * multiple of 8 bytes, and the file replaced atomically. */
#ifndef KILN_HOST_FORMATS_SAFETENSORS_H
#define KILN_HOST_FORMATS_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ST_MAX_DIMS 8
/* A header larger than this is refused (the reference implementation uses 100 MB too). */
#define ST_MAX_HEADER ((uint64_t)100 << 20)

typedef enum st_dtype {
    ST_BOOL = 0,
    ST_U8,
    ST_I8,
    ST_F8_E5M2,
    ST_F8_E4M3,
    ST_I16,
    ST_U16,
    ST_F16,
    ST_BF16,
    ST_I32,
    ST_U32,
    ST_F32,
    ST_F64,
    ST_I64,
    ST_U64,
    ST_DTYPE_COUNT
} st_dtype;

/* "F32" -> ST_F32 etc.; returns -1 for an unknown name. Names are case-sensitive, as in
 * the format. */
int st_dtype_from_name(const char *name);
/* ST_F32 -> "F32"; NULL for an invalid value. */
const char *st_dtype_name(st_dtype dtype);
/* Bytes per element (0 for an invalid value). */
size_t st_dtype_size(st_dtype dtype);

typedef struct st_tensor {
    const char *name;
    st_dtype dtype;
    const char *dtype_name; /* "F32", ... */
    int ndim;               /* 0 is a scalar (one element) */
    int64_t shape[ST_MAX_DIMS];
    int64_t numel;
    size_t nbytes;          /* numel * st_dtype_size(dtype) */
    uint64_t offset;        /* begin of its bytes within the data section */
    /* The bytes, inside the file's buffer (valid until st_close). NOT necessarily aligned
     * for the element type: copy (memcpy, st_read_f32, st_read_i64) rather than cast. */
    const void *data;
} st_tensor;

typedef struct st_file st_file;

/* Maps (formats/file_map.h) and validates the whole file. Returns 0 and *out, or -1 with *out = NULL and a
 * message like "ckpt.safetensors: tensor \"wte.weight\": shape [50257, 768] of F32 needs
 * 154389504 bytes but data_offsets [0, 100] span 100" in err. */
int st_open(const char *path, st_file **out, char *err, size_t errlen);
/* Gives the file's pages in [p, p + n) (a tensor's bytes, or those of it already consumed)
 * back to the kernel once read: st_open maps the file (formats/file_map.h), and a loader
 * that drops what it has converted never holds the weights twice. A later read of those
 * bytes reads the file again. A no-op for st_open_memory's copy. */
void st_drop(const st_file *f, const void *p, size_t n);
/* The same on bytes already in memory (copied; `name` is used in messages only). */
int st_open_memory(const void *bytes, size_t size, const char *name, st_file **out, char *err,
                   size_t errlen);
void st_close(st_file *f);

/* Tensors in header order (the order the writer added them). */
size_t st_count(const st_file *f);
const st_tensor *st_tensor_at(const st_file *f, size_t i);
/* By exact name, or NULL. */
const st_tensor *st_find(const st_file *f, const char *name);

/* Copies the tensor into dst as f32, converting from F32, F16, BF16 or F64. count must
 * equal t->numel. Returns 0, or -1 when the dtype is not a float type or count differs. */
int st_read_f32(const st_tensor *t, float *dst, size_t count);
/* Copies the tensor into dst as int64, converting from any integer type or BOOL. count
 * must equal t->numel; U64 values above INT64_MAX are refused. Returns 0 or -1. */
int st_read_i64(const st_tensor *t, int64_t *dst, size_t count);

/* The "__metadata__" entries (string -> string). st_meta returns NULL when absent. */
const char *st_meta(const st_file *f, const char *key);
size_t st_meta_count(const st_file *f);
/* Entry i: returns 0 and sets *key and *value, or -1 when i is out of range. */
int st_meta_at(const st_file *f, size_t i, const char **key, const char **value);

/* ---- Writer ----
 * Usage: w = st_writer_new(); st_writer_add(w, ...) for each tensor; st_writer_meta(...);
 * st_writer_save(w, path, err, errlen); st_writer_free(w).
 * add/meta check their arguments (known dtype, 0 <= ndim <= ST_MAX_DIMS, non-negative
 * shape, nbytes == numel * itemsize, a non-empty valid UTF-8 name that is not
 * "__metadata__" and not already added) and return 0 or -1; the first such error is kept
 * and st_writer_save then fails with it, so a caller may check only the save. */
typedef struct st_writer st_writer;

st_writer *st_writer_new(void);
/* COPIES the nbytes at data (the caller may free them right after). */
int st_writer_add(st_writer *w, const char *name, const char *dtype, int ndim,
                  const int64_t *shape, const void *data, size_t nbytes);
/* REFERENCES data without copying: it must stay valid until st_writer_save returns (for
 * large checkpoints, to avoid a second copy of every weight). */
int st_writer_add_ref(st_writer *w, const char *name, const char *dtype, int ndim,
                      const int64_t *shape, const void *data, size_t nbytes);
/* Adds or replaces a metadata entry (both strings are copied). */
int st_writer_meta(st_writer *w, const char *key, const char *value);
/* The first add/meta error, or NULL. */
const char *st_writer_error(const st_writer *w);
/* Writes the file atomically (kiln/file.h): to a temporary file in the same directory, then
 * fflush, fsync, fclose, rename over path, fsync of the directory. On any failure the
 * temporary file is removed, an existing file at path is left untouched, and -1 is returned
 * with a message naming the path and the failing step. */
int st_writer_save(st_writer *w, const char *path, char *err, size_t errlen);
/* The same in kiln/file.h's keep-previous mode: the file it replaces is kept as `previous`
 * (NULL: as st_writer_save). */
int st_writer_save_keeping(st_writer *w, const char *path, const char *previous, char *err, size_t errlen);
/* The same bytes into a new malloc'd buffer (*out, *size; free() it), for tests, fuzzers
 * and callers that send a checkpoint elsewhere. Returns 0 or -1 with a message. */
int st_writer_serialize(st_writer *w, unsigned char **out, size_t *size, char *err,
                        size_t errlen);
void st_writer_free(st_writer *w);

#ifdef __cplusplus
}
#endif
#endif
