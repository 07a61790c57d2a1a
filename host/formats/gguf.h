/* GGUF, the file format of ggml and llama.cpp (ggml's docs/gguf.md, versions 2 and 3):
 * the format of the quantized models users download, and how kiln hands its models to
 * llama.cpp (`kiln export --format gguf`).
 *
 * Layout, little-endian: "GGUF", version (u32), tensor count (u64), key-value count (u64);
 * the key-values (a string key, a u32 value type, the value: a scalar, a string as u64
 * length + bytes, or an array as element type (u32) + count (u64) + elements); the tensor
 * infos (name, n_dims (u32), n_dims u64 dimensions with ne[0] the fastest-varying, a ggml
 * type (u32), an offset (u64) into the data section); padding to the alignment
 * (general.alignment, default 32); the data section, each tensor at its offset, itself a
 * multiple of the alignment.
 *
 * The reader validates everything before it hands out anything: the magic and version,
 * every count and length against the bytes left (a lying count cannot make it allocate or
 * read beyond the file), value types, duplicate keys and tensor names, dimensions and their
 * product, each tensor's type (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K; any
 * other ggml type, Q2_K, Q3_K, the IQ types, Q8_1 and Q8_K among them, is refused by its name,
 * e.g. "q2_K"), a row length that is a whole number of blocks (256 values for the K types),
 * offsets aligned and
 * inside the data section, and tensors that do not overlap. A bad file gives one line
 * naming the file and the problem. */
#ifndef KILN_HOST_FORMATS_GGUF_H
#define KILN_HOST_FORMATS_GGUF_H

#include <stddef.h>
#include <stdint.h>

#define GGUF_MAX_DIMS 4
#define GGUF_DEFAULT_ALIGNMENT 32

/* Value types of the key-values. */
typedef enum gguf_type {
    GGUF_U8 = 0,
    GGUF_I8 = 1,
    GGUF_U16 = 2,
    GGUF_I16 = 3,
    GGUF_U32 = 4,
    GGUF_I32 = 5,
    GGUF_F32 = 6,
    GGUF_BOOL = 7,
    GGUF_STRING = 8,
    GGUF_ARRAY = 9,
    GGUF_U64 = 10,
    GGUF_I64 = 11,
    GGUF_F64 = 12,
    GGUF_TYPE_COUNT
} gguf_type;

/* The ggml tensor types kiln reads and writes (ggml's numbering). */
typedef enum gguf_tensor_type {
    GGML_TYPE_F32 = 0,
    GGML_TYPE_F16 = 1,
    GGML_TYPE_Q4_0 = 2,
    GGML_TYPE_Q4_1 = 3,
    GGML_TYPE_Q5_0 = 6,
    GGML_TYPE_Q5_1 = 7,
    GGML_TYPE_Q8_0 = 8,
    GGML_TYPE_Q4_K = 12, /* the K types: rows of whole 256-value super-blocks */
    GGML_TYPE_Q5_K = 13,
    GGML_TYPE_Q6_K = 14,
    GGML_TYPE_BF16 = 30 /* read (converted at load), never written */
} gguf_tensor_type;

/* "f32", "q4_0", ... for any ggml type number ("type 99" for one ggml does not have). */
const char *gguf_tensor_type_name(int type, char *buf, size_t size);
/* Bytes of a row of n values of a type kiln reads (0 when n is not a whole number of its
 * blocks, or the type is not one kiln reads). */
uint64_t gguf_row_bytes(int type, int64_t n);

typedef struct gguf_kv {
    const char *key;
    gguf_type type;
    /* scalars: the value widened (integers and bools in i or u, floats in f); strings in str */
    int64_t i;
    uint64_t u;
    double f;
    const char *str;
    /* arrays: element type and count; numeric elements as raw little-endian bytes in data,
       strings in strs */
    gguf_type elem_type;
    uint64_t count;
    const void *data;
    const char *const *strs;
} gguf_kv;

typedef struct gguf_tensor {
    const char *name;
    int ndim;
    int64_t ne[GGUF_MAX_DIMS]; /* ne[0]: the fastest-varying dimension (a row's length) */
    int type;                  /* gguf_tensor_type */
    uint64_t offset;           /* into the data section */
    uint64_t nbytes;
    const void *data;          /* inside the file's buffer; not aligned for any type: copy */
} gguf_tensor;

typedef struct gguf_file gguf_file;

/* Maps (formats/file_map.h) and validates a whole file. Returns 0 and *out, or -1 with one
 * line in err. */
int gguf_open(const char *path, gguf_file **out, char *err, size_t errlen);
/* Gives the file's pages in [p, p + n) (a tensor's bytes, or those of it already consumed)
 * back to the kernel once read, so that a loader never holds the weights twice; a later
 * read reads the file again. A no-op for gguf_open_memory's copy. */
void gguf_drop(const gguf_file *f, const void *p, size_t n);
/* The same on bytes in memory (copied; `name` is used in messages). */
int gguf_open_memory(const void *bytes, size_t size, const char *name, gguf_file **out, char *err, size_t errlen);
void gguf_close(gguf_file *f);

uint32_t gguf_version(const gguf_file *f);
size_t gguf_kv_count(const gguf_file *f);
const gguf_kv *gguf_kv_at(const gguf_file *f, size_t i);
const gguf_kv *gguf_find_kv(const gguf_file *f, const char *key);
size_t gguf_tensor_count(const gguf_file *f);
const gguf_tensor *gguf_tensor_at(const gguf_file *f, size_t i);
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name);

/* A key's value as an unsigned integer (any integer type, not negative), a float (F32 or
 * F64) or a string. Return 0, or -1 with "FILE: KEY is missing" or "... is not ..." in err. */
int gguf_get_uint(const gguf_file *f, const char *key, uint64_t *out, char *err, size_t errlen);
int gguf_get_float(const gguf_file *f, const char *key, double *out, char *err, size_t errlen);
int gguf_get_string(const gguf_file *f, const char *key, const char **out, char *err, size_t errlen);

/* ---- Writer ----
 * Key-values and tensors in the order they are added; tensor data is referenced, not
 * copied, and must stay valid until the save returns. The first argument error is kept and
 * makes the save fail with it. */
typedef struct gguf_writer gguf_writer;

gguf_writer *gguf_writer_new(void);
void gguf_writer_free(gguf_writer *w);
int gguf_writer_str(gguf_writer *w, const char *key, const char *value);
int gguf_writer_u32(gguf_writer *w, const char *key, uint32_t value);
int gguf_writer_i32(gguf_writer *w, const char *key, int32_t value);
int gguf_writer_f32(gguf_writer *w, const char *key, float value);
int gguf_writer_bool(gguf_writer *w, const char *key, int value);
/* Arrays: of strings (copied), of i32 and of f32 values (copied). */
int gguf_writer_str_array(gguf_writer *w, const char *key, const char *const *values, size_t count);
int gguf_writer_i32_array(gguf_writer *w, const char *key, const int32_t *values, size_t count);
int gguf_writer_f32_array(gguf_writer *w, const char *key, const float *values, size_t count);
/* A tensor of `type` with ndim dimensions ne[0..ndim) (ne[0] fastest) whose nbytes at data
 * must equal the rows' bytes (gguf_row_bytes(type, ne[0]) x the other dimensions). */
int gguf_writer_tensor(gguf_writer *w, const char *name, int type, int ndim, const int64_t *ne, const void *data,
                       uint64_t nbytes);
/* Writes version 3 atomically (kiln/file.h). Returns 0 or -1 with a message. */
int gguf_writer_save(gguf_writer *w, const char *path, char *err, size_t errlen);
/* The same bytes into a malloc'd buffer. */
int gguf_writer_serialize(gguf_writer *w, unsigned char **out, size_t *size, char *err, size_t errlen);

#endif
