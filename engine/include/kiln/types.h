/* Basic types shared by every kiln header: status codes, dtypes, limits. */
#ifndef KILN_TYPES_H
#define KILN_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_MAX_DIMS 4

typedef enum kiln_status {
    KILN_OK = 0,
    KILN_ERR_ARGUMENT,    /* a bad argument: NULL, negative size, unknown option */
    KILN_ERR_SHAPE,       /* shapes do not fit together */
    KILN_ERR_DTYPE,       /* a dtype the op does not take */
    KILN_ERR_RANGE,       /* an index out of range (token id, axis, slice) */
    KILN_ERR_NO_BACKEND,  /* unknown backend name, or its driver is missing */
    KILN_ERR_NO_DEVICE,   /* the backend exists but the named device does not */
    KILN_ERR_UNSUPPORTED, /* the device lacks a feature the op needs */
    KILN_ERR_MEMORY,      /* host or device out of memory */
    KILN_ERR_DEVICE,      /* the driver failed (device lost, compile error, ...) */
    KILN_ERR_IO,          /* a file could not be read or written */
    KILN_ERR_FORMAT,      /* a file is malformed */
    KILN_ERR_STATE        /* a call made in the wrong order (backward twice, ...) */
} kiln_status;

typedef enum kiln_dtype {
    KILN_F32 = 0,
    KILN_F16 = 1,
    KILN_I32 = 2
} kiln_dtype;

/* Size in bytes of one element. */
size_t kiln_dtype_size(kiln_dtype dtype);
/* "f32", "f16", "i32". */
const char *kiln_dtype_name(kiln_dtype dtype);
/* A short name for a status code, e.g. "shape mismatch". */
const char *kiln_status_name(kiln_status status);

/* The message of the most recent error on this thread ("" if none). Every failing kiln call
 * sets it; it stays until the next failure or kiln_clear_error(). */
const char *kiln_error_message(void);
kiln_status kiln_error_status(void);
void kiln_clear_error(void);
/* Sets this thread's error as a failing kiln call does and returns `status`: for code built
 * on the engine (the host's models) whose own refusals read back through
 * kiln_error_message() like the engine's. */
kiln_status kiln_set_error(kiln_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif
#endif
