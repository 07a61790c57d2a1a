/* Error reporting: one message per thread, set by the failing call. */
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

static _Thread_local char g_message[512];
static _Thread_local kiln_status g_status;

static kiln_status set_error_v(kiln_status status, const char *fmt, va_list ap) {
    vsnprintf(g_message, sizeof g_message, fmt, ap);
    g_status = status;
    return status;
}

kiln_status kiln_set_error(kiln_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set_error_v(status, fmt, ap);
    va_end(ap);
    return status;
}

void *kiln_fail(kiln_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set_error_v(status, fmt, ap);
    va_end(ap);
    return NULL;
}

const char *kiln_error_message(void) { return g_message; }
kiln_status kiln_error_status(void) { return g_status; }

void kiln_clear_error(void) {
    g_message[0] = 0;
    g_status = KILN_OK;
}

const char *kiln_status_name(kiln_status status) {
    switch (status) {
    case KILN_OK: return "ok";
    case KILN_ERR_ARGUMENT: return "bad argument";
    case KILN_ERR_SHAPE: return "shape mismatch";
    case KILN_ERR_DTYPE: return "wrong dtype";
    case KILN_ERR_RANGE: return "index out of range";
    case KILN_ERR_NO_BACKEND: return "backend unavailable";
    case KILN_ERR_NO_DEVICE: return "no such device";
    case KILN_ERR_UNSUPPORTED: return "unsupported";
    case KILN_ERR_MEMORY: return "out of memory";
    case KILN_ERR_DEVICE: return "device error";
    case KILN_ERR_IO: return "I/O error";
    case KILN_ERR_FORMAT: return "malformed file";
    case KILN_ERR_STATE: return "wrong state";
    }
    return "unknown error";
}
