/* Run-time compilation of the embedded kernels.
 *
 * Each op family (cl/<family>.cl) is its own program, built the first time one of its
 * kernels is used, so a process that only runs a GEMM never compiles the softmax. The
 * program text is engine/abi/kernel_abi.h (the values host and kernels share, in front of
 * every program kiln compiles), cl/common.cl, then the family's file; the options come from
 * the device (cl_device.c: OpenCL C version, work-group size, sub-groups, fp64). A family
 * with f16 operands has a second program, the same text with `#define KILN_F16 1` before
 * common.cl. Binaries are cached on disk (cl_cache.c). A kernel that fails to compile is an
 * error whose message carries the first line of the build log; the whole log goes to
 * stderr. Each kernel's parameter count is read once, when it is first looked up, so that
 * cl_run can refuse a call whose host wrapper set a different number of arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl/cl_internal.h"

atomic_int kiln_cl_cache_hits, kiln_cl_cache_writes;

static const char *find_source(const char *name) {
    for (int i = 0; i < kiln_cl_source_count; i++)
        if (!strcmp(kiln_cl_sources[i].name, name)) return kiln_cl_sources[i].text;
    return NULL;
}

static char *build_log(cl_dev *d, cl_program p) {
    size_t size = 0;
    clGetProgramBuildInfo(p, d->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size);
    char *log = malloc(size + 1);
    if (!log) return NULL;
    log[0] = 0;
    clGetProgramBuildInfo(p, d->device, CL_PROGRAM_BUILD_LOG, size, log, NULL);
    log[size] = 0;
    return log;
}

/* The first line of the log that names an error, for the one-line message. */
static void first_error_line(const char *log, char *out, size_t size) {
    const char *line = log, *pick = NULL;
    while (line && *line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (!pick && len && (strstr(line, "error") && (size_t)(strstr(line, "error") - line) < len))
            pick = line;
        line = end ? end + 1 : NULL;
    }
    if (!pick) pick = log;
    size_t len = strcspn(pick, "\n");
    if (len >= size) len = size - 1;
    memcpy(out, pick, len);
    out[len] = 0;
}

/* Loads the cached binary for key; 0 when there is none or the driver rejects it. */
static cl_program from_cache(cl_dev *d, uint64_t key, const char *family) {
    size_t size;
    unsigned char *bin = cl_cache_read(key, family, &size);
    if (!bin) return NULL;
    cl_int err, status;
    const unsigned char *bins[1] = {bin};
    cl_program p = clCreateProgramWithBinary(d->context, 1, &d->device, &size, bins, &status, &err);
    free(bin);
    if (!p) return NULL;
    if (err != CL_SUCCESS || status != CL_SUCCESS ||
        clBuildProgram(p, 1, &d->device, d->build_options, NULL, NULL) != CL_SUCCESS) {
        clReleaseProgram(p);
        return NULL;
    }
    kiln_cl_cache_hits++;
    return p;
}

static void to_cache(cl_dev *d, cl_program p, uint64_t key, const char *family) {
    size_t size = 0;
    if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) != CL_SUCCESS || !size)
        return;
    unsigned char *bin = malloc(size);
    if (!bin) return;
    unsigned char *bins[1] = {bin};
    if (clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS)
        cl_cache_write(key, family, bin, size);
    free(bin);
    (void)d;
}

/* kernel_abi.h, then `source` (its lines numbered from 1 again under `name`). */
static char *with_abi_header(const char *name, const char *source) {
    static const char format[] = "#line 1 \"engine/abi/kernel_abi.h\"\n%s\n#line 1 \"%s\"\n%s";
    size_t size = sizeof format + strlen(kiln_cl_abi_header) + strlen(name) + strlen(source);
    char *text = malloc(size);
    if (text) snprintf(text, size, format, kiln_cl_abi_header, name, source);
    return text;
}

static kiln_status build_text(cl_dev *d, const char *family, const char *text, cl_program *out) {
    uint64_t key = cl_cache_key(d, text);
    cl_program p = from_cache(d, key, family);
    if (p) {
        *out = p;
        return KILN_OK;
    }
    cl_int err;
    p = clCreateProgramWithSource(d->context, 1, &text, NULL, &err);
    if (!p) return cl_fail(err, "clCreateProgramWithSource");
    err = clBuildProgram(p, 1, &d->device, d->build_options, NULL, NULL);
    if (err != CL_SUCCESS) {
        char *log = build_log(d, p);
        char line[300] = "";
        if (log) {
            first_error_line(log, line, sizeof line);
            fprintf(stderr, "kiln: OpenCL build log for cl/%s.cl on %s (options %s):\n%s\n",
                    family, d->name, d->build_options, log);
        }
        free(log);
        clReleaseProgram(p);
        return kiln_set_error(KILN_ERR_DEVICE,
                              "opencl: cl/%s.cl does not compile on %s (%s): %s (full build log "
                              "on stderr)",
                              family, d->name, cl_error_name(err), line);
    }
    to_cache(d, p, key, family);
    *out = p;
    return KILN_OK;
}

kiln_status cl_build_program(cl_dev *d, const char *family, const char *source, cl_program *out) {
    *out = NULL;
    char *text = with_abi_header(family, source);
    if (!text) return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
    kiln_status s = build_text(d, family, text, out);
    free(text);
    return s;
}

static cl_program get_program(cl_dev *d, const char *family, int f16) {
    for (int i = 0; i < d->n_programs; i++)
        if (d->programs[i].f16 == f16 && !strcmp(d->programs[i].family, family))
            return d->programs[i].program;
    const char *common = find_source("common"), *text = find_source(family);
    if (!common || !text)
        return kiln_fail(KILN_ERR_DEVICE, "opencl: no kernel source cl/%s.cl in this build", family);
    if (d->n_programs == CL_MAX_PROGRAMS)
        return kiln_fail(KILN_ERR_DEVICE, "opencl: too many programs (raise CL_MAX_PROGRAMS)");
    /* per-device sizes compiled into a family (the GEMM's tuned blocks) */
    const char *defines = !strcmp(family, "gemm") ? d->gemm.defines : "";
    /* the variant's storage type, read by cl/common.cl, so it goes first */
    const char *variant = f16 ? "#define KILN_F16 1\n" : "";
    size_t size = strlen(variant) + strlen(common) + strlen(defines) + strlen(text) + strlen(family) + 96;
    char *source = malloc(size);
    if (!source) return kiln_fail(KILN_ERR_MEMORY, "out of host memory");
    /* the #line directives make compiler and oclgrind messages name the right file */
    snprintf(source, size, "%s#line 1 \"cl/common.cl\"\n%s\n%s#line 1 \"cl/%s.cl\"\n%s", variant,
             common, defines, family, text);
    /* the cache names files by family; the variant's own name keeps them apart for people
     * (the key, a hash of the source, already does for the cache) */
    char cache_name[64];
    snprintf(cache_name, sizeof cache_name, "%s%s", family, f16 ? "-f16" : "");
    cl_program p;
    kiln_status s = cl_build_program(d, cache_name, source, &p);
    free(source);
    if (s) return NULL;
    d->programs[d->n_programs++] = (cl_program_entry){.family = family, .f16 = f16, .program = p};
    return p;
}

const cl_kernel_entry *cl_find_kernel(cl_dev *d, const char *family, const char *name, int f16) {
    for (int i = 0; i < d->n_kernels; i++) {
        const cl_kernel_entry *e = &d->kernels[i];
        if (e->f16 == f16 && !strcmp(e->name, name) && !strcmp(e->family, family)) return e;
    }
    if (d->n_kernels == CL_MAX_KERNELS)
        return kiln_fail(KILN_ERR_DEVICE, "opencl: too many kernels (raise CL_MAX_KERNELS)");
    if (strlen(name) >= sizeof d->kernels[0].name)
        return kiln_fail(KILN_ERR_DEVICE, "opencl: kernel name %s too long", name);
    cl_program p = get_program(d, family, f16);
    if (!p) return NULL;
    cl_int err;
    cl_kernel k = clCreateKernel(p, name, &err);
    if (!k) {
        kiln_set_error(KILN_ERR_DEVICE, "opencl: kernel %s not found in cl/%s.cl: %s", name, family,
                       cl_error_name(err));
        return NULL;
    }
    cl_uint num_args = 0;
    err = clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof num_args, &num_args, NULL);
    if (err != CL_SUCCESS) {
        clReleaseKernel(k);
        char what[96];
        snprintf(what, sizeof what, "clGetKernelInfo (the parameters of %s)", name);
        cl_fail(err, what);
        return NULL;
    }
    cl_kernel_entry *e = &d->kernels[d->n_kernels++];
    *e = (cl_kernel_entry){.family = family, .f16 = f16, .kernel = k, .num_args = num_args};
    snprintf(e->name, sizeof e->name, "%s", name);
    return e;
}

void cl_release_programs(cl_dev *d) {
    for (int i = 0; i < d->n_kernels; i++) clReleaseKernel(d->kernels[i].kernel);
    for (int i = 0; i < d->n_programs; i++) clReleaseProgram(d->programs[i].program);
    d->n_kernels = d->n_programs = 0;
}
