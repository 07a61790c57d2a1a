/* OpenCL platforms and devices: `opencl:N` numbers the devices of every platform in the
 * order the ICD loader reports them. Listing, choosing the best device, opening it (context,
 * in-order queue, capabilities, compile options), closing, and the backend table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl/cl_gemm.h"
#include "opencl/cl_probe.h"

const char *cl_error_name(cl_int err) {
    switch (err) {
#define E(x) \
    case x: return #x;
        E(CL_SUCCESS) E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE) E(CL_COMPILER_NOT_AVAILABLE)
        E(CL_MEM_OBJECT_ALLOCATION_FAILURE) E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY)
        E(CL_PROFILING_INFO_NOT_AVAILABLE) E(CL_MEM_COPY_OVERLAP) E(CL_BUILD_PROGRAM_FAILURE)
        E(CL_MAP_FAILURE) E(CL_MISALIGNED_SUB_BUFFER_OFFSET) E(CL_INVALID_VALUE)
        E(CL_INVALID_DEVICE_TYPE) E(CL_INVALID_PLATFORM) E(CL_INVALID_DEVICE) E(CL_INVALID_CONTEXT)
        E(CL_INVALID_QUEUE_PROPERTIES) E(CL_INVALID_COMMAND_QUEUE) E(CL_INVALID_HOST_PTR)
        E(CL_INVALID_MEM_OBJECT) E(CL_INVALID_BINARY) E(CL_INVALID_BUILD_OPTIONS)
        E(CL_INVALID_PROGRAM) E(CL_INVALID_PROGRAM_EXECUTABLE) E(CL_INVALID_KERNEL_NAME)
        E(CL_INVALID_KERNEL_DEFINITION) E(CL_INVALID_KERNEL) E(CL_INVALID_ARG_INDEX)
        E(CL_INVALID_ARG_VALUE) E(CL_INVALID_ARG_SIZE) E(CL_INVALID_KERNEL_ARGS)
        E(CL_INVALID_WORK_DIMENSION) E(CL_INVALID_WORK_GROUP_SIZE) E(CL_INVALID_WORK_ITEM_SIZE)
        E(CL_INVALID_GLOBAL_OFFSET) E(CL_INVALID_EVENT_WAIT_LIST) E(CL_INVALID_EVENT)
        E(CL_INVALID_OPERATION) E(CL_INVALID_BUFFER_SIZE) E(CL_INVALID_GLOBAL_WORK_SIZE)
        E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
#undef E
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    }
    return "unknown OpenCL error";
}

kiln_status cl_fail(cl_int err, const char *what) {
    kiln_status s = (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_HOST_MEMORY)
                        ? KILN_ERR_MEMORY
                        : KILN_ERR_DEVICE;
    return kiln_set_error(s, "opencl: %s failed: %s (%d)", what, cl_error_name(err), (int)err);
}

/* ---- enumeration ---- */

typedef struct cl_found {
    cl_platform_id platform;
    cl_device_id device;
} cl_found;

/* Every device of every platform, in loader order. KILN_ERR_NO_BACKEND when there is no
 * platform at all (no ICD installed, or OCL_ICD_VENDORS pointing nowhere). */
static kiln_status enumerate(cl_found **out, int *count) {
    *out = NULL;
    *count = 0;
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err != CL_SUCCESS || np == 0)
        return kiln_set_error(KILN_ERR_NO_BACKEND,
                              "opencl: no OpenCL platform found (install an ICD such as "
                              "pocl-opencl-icd or a GPU driver, and check OCL_ICD_VENDORS)");
    cl_platform_id *plats = calloc(np, sizeof *plats);
    if (!plats) return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
    clGetPlatformIDs(np, plats, NULL);
    cl_found *found = NULL;
    int n = 0;
    for (cl_uint p = 0; p < np; p++) {
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || !nd) continue;
        cl_device_id *devs = calloc(nd, sizeof *devs);
        cl_found *grown = realloc(found, (size_t)(n + (int)nd) * sizeof *grown);
        if (!devs || !grown) {
            free(devs);
            free(grown ? grown : found);
            free(plats);
            return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
        }
        found = grown;
        clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, devs, NULL);
        for (cl_uint i = 0; i < nd; i++)
            found[n++] = (cl_found){.platform = plats[p], .device = devs[i]};
        free(devs);
    }
    free(plats);
    if (n == 0) {
        free(found);
        return kiln_set_error(KILN_ERR_NO_DEVICE, "opencl: the OpenCL platforms report no devices");
    }
    *out = found;
    *count = n;
    return KILN_OK;
}

static void dev_string(cl_device_id d, cl_device_info what, char *buf, size_t size) {
    buf[0] = 0;
    if (clGetDeviceInfo(d, what, size, buf, NULL) != CL_SUCCESS) buf[0] = 0;
    buf[size - 1] = 0;
}

static void plat_string(cl_platform_id p, cl_platform_info what, char *buf, size_t size) {
    buf[0] = 0;
    if (clGetPlatformInfo(p, what, size, buf, NULL) != CL_SUCCESS) buf[0] = 0;
    buf[size - 1] = 0;
}

static cl_ulong dev_ulong(cl_device_id d, cl_device_info what) {
    cl_ulong v = 0;
    clGetDeviceInfo(d, what, sizeof v, &v, NULL);
    return v;
}

static cl_uint dev_uint(cl_device_id d, cl_device_info what) {
    cl_uint v = 0;
    clGetDeviceInfo(d, what, sizeof v, &v, NULL);
    return v;
}

static int has_extension(cl_device_id d, const char *ext) {
    size_t size = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, 0, NULL, &size) != CL_SUCCESS || !size) return 0;
    char *all = malloc(size + 1);
    if (!all) return 0;
    clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, size, all, NULL);
    all[size] = 0;
    size_t len = strlen(ext);
    int found = 0;
    for (char *p = strstr(all, ext); p && !found; p = strstr(p + 1, ext))
        found = (p == all || p[-1] == ' ') && (p[len] == ' ' || p[len] == 0);
    free(all);
    return found;
}

/* "OpenCL 2.1 vendor" -> 21 */
static int parse_version(const char *s, const char *prefix) {
    int major = 0, minor = 0;
    size_t n = strlen(prefix);
    if (strncmp(s, prefix, n) || sscanf(s + n, "%d.%d", &major, &minor) != 2) return 0;
    return major * 10 + minor;
}

static int device_version(cl_device_id d) {
    char v[128];
    dev_string(d, CL_DEVICE_VERSION, v, sizeof v);
    return parse_version(v, "OpenCL ");
}

/* An OpenCL C 3.0 optional feature, from CL_DEVICE_OPENCL_C_FEATURES. */
static int has_c_feature(cl_device_id d, const char *feature) {
    size_t size = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_OPENCL_C_FEATURES, 0, NULL, &size) != CL_SUCCESS || !size) return 0;
    cl_name_version *all = malloc(size);
    if (!all) return 0;
    int found = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_OPENCL_C_FEATURES, size, all, NULL) == CL_SUCCESS)
        for (size_t i = 0; i < size / sizeof *all && !found; i++) found = !strcmp(all[i].name, feature);
    free(all);
    return found;
}

/* The -cl-std under which the device compiles sub-group functions, or NULL when it has none:
 * OpenCL 3.0 devices with the __opencl_c_subgroups feature, 2.x devices with
 * cl_khr_subgroups (a 3.0 device need not accept -cl-std=CL2.0, hence the split). */
static const char *subgroup_std(cl_device_id d) {
    int v = device_version(d);
    if (v >= 30) return has_c_feature(d, "__opencl_c_subgroups") ? "CL3.0" : NULL;
    if (v >= 20 && has_extension(d, "cl_khr_subgroups")) return "CL2.0";
    return NULL;
}

static cl_device_type dev_type(cl_device_id d) {
    cl_device_type t = 0;
    clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof t, &t, NULL);
    return t;
}

static const char *device_type_name(cl_device_type t) {
    if (t & CL_DEVICE_TYPE_GPU) return "GPU";
    if (t & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
    if (t & CL_DEVICE_TYPE_CPU) return "CPU";
    return "other";
}

/* GPU over accelerator over CPU, then the larger compute units x clock. */
static double device_score(cl_device_id d) {
    cl_device_type t = dev_type(d);
    double cls = (t & CL_DEVICE_TYPE_GPU) ? 2 : (t & CL_DEVICE_TYPE_ACCELERATOR) ? 1 : 0;
    double speed = (double)dev_uint(d, CL_DEVICE_MAX_COMPUTE_UNITS) *
                   (double)(dev_uint(d, CL_DEVICE_MAX_CLOCK_FREQUENCY) + 1);
    return cls * 1e12 + speed;
}

static int best_device(const cl_found *f, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (device_score(f[i].device) > device_score(f[best].device)) best = i;
    return best;
}

kiln_status kiln_opencl_list(void *out_file) {
    FILE *out = out_file;
    cl_found *f;
    int n;
    kiln_status s = enumerate(&f, &n);
    if (s) return s;
    int best = best_device(f, n);
    for (int i = 0; i < n; i++) {
        cl_device_id d = f[i].device;
        char name[128], plat[128], ver[128];
        dev_string(d, CL_DEVICE_NAME, name, sizeof name);
        dev_string(d, CL_DEVICE_VERSION, ver, sizeof ver);
        plat_string(f[i].platform, CL_PLATFORM_NAME, plat, sizeof plat);
        fprintf(out,
                "opencl:%d  %s%s\n"
                "          platform %s; %s; %s\n"
                "          %u compute units at %u MHz, %.2f GiB memory (%.2f GiB per buffer), "
                "%llu KiB local memory\n"
                "          subgroups %s, cl_khr_fp16 %s (f16 storage works either way)\n",
                i, name, i == best ? "  [default]" : "", plat, device_type_name(dev_type(d)), ver,
                dev_uint(d, CL_DEVICE_MAX_COMPUTE_UNITS), dev_uint(d, CL_DEVICE_MAX_CLOCK_FREQUENCY),
                (double)dev_ulong(d, CL_DEVICE_GLOBAL_MEM_SIZE) / (1 << 30),
                (double)dev_ulong(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE) / (1 << 30),
                (unsigned long long)(dev_ulong(d, CL_DEVICE_LOCAL_MEM_SIZE) >> 10),
                subgroup_std(d) ? "yes" : "no", has_extension(d, "cl_khr_fp16") ? "yes" : "no");
    }
    free(f);
    return KILN_OK;
}

/* ---- opening ---- */

static size_t pow2_floor(size_t v) {
    size_t p = 1;
    while (p * 2 <= v) p *= 2;
    return p;
}

static void describe_device(cl_dev *d) {
    cl_device_id id = d->device;
    cl_device_type t = dev_type(id);
    d->is_gpu = (t & CL_DEVICE_TYPE_GPU) != 0;
    d->is_cpu = (t & CL_DEVICE_TYPE_CPU) != 0;
    cl_bool unified = CL_FALSE;
    clGetDeviceInfo(id, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL);
    d->host_unified = unified == CL_TRUE;
    d->has_fp16 = has_extension(id, "cl_khr_fp16");
    d->has_fp64 = has_extension(id, "cl_khr_fp64");
    const char *sg_std = subgroup_std(id);
    d->has_subgroups = sg_std != NULL;
    d->compute_units = dev_uint(id, CL_DEVICE_MAX_COMPUTE_UNITS);
    d->clock_mhz = dev_uint(id, CL_DEVICE_MAX_CLOCK_FREQUENCY);
    clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof d->max_wg, &d->max_wg, NULL);
    d->local_mem = dev_ulong(id, CL_DEVICE_LOCAL_MEM_SIZE);
    d->global_mem = dev_ulong(id, CL_DEVICE_GLOBAL_MEM_SIZE);
    d->max_alloc = dev_ulong(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE);

    /* Row kernels and reductions: 256 work-items on a GPU; 16 on a CPU device, where a
     * work-group is a loop on one core and each level of a tree reduction is a barrier
     * region (PoCL: softmax, layernorm and cross-entropy rows ran 3-4x faster at 16 than at
     * 64). Elementwise kernels: 256 / 64, enough for PoCL to vectorize across work-items.
     * KILN_CL_WG overrides the first, for tuning. */
    size_t want = d->is_gpu ? 256 : 16;
    const char *wg = getenv("KILN_CL_WG");
    if (wg && atoi(wg) > 0) want = (size_t)atoi(wg);
    if (want > d->max_wg) want = d->max_wg;
    d->wg = pow2_floor(want ? want : 1);
    want = d->is_gpu ? 256 : 64;
    d->wg_elem = pow2_floor(want < d->max_wg ? want : d->max_wg);

    char name[128], plat[128], dver[128], drv[128], pver[128];
    dev_string(id, CL_DEVICE_NAME, name, sizeof name);
    dev_string(id, CL_DEVICE_VERSION, dver, sizeof dver);
    dev_string(id, CL_DRIVER_VERSION, drv, sizeof drv);
    plat_string(d->platform, CL_PLATFORM_NAME, plat, sizeof plat);
    plat_string(d->platform, CL_PLATFORM_VERSION, pver, sizeof pver);
    snprintf(d->name, sizeof d->name, "%s (%s)", name, plat);
    snprintf(d->device_key, sizeof d->device_key, "%s|%s|%s|%s|%s", name, dver, drv, plat, pver);

    const char *std = sg_std ? sg_std : "CL1.2";
    snprintf(d->build_options, sizeof d->build_options,
             "-cl-std=%s -DKILN_WG=%zu -DKILN_SUBGROUPS=%d -DKILN_FP64=%d -DKILN_CPU_DEVICE=%d",
             std, d->wg, d->has_subgroups, d->has_fp64, d->is_cpu && !d->is_gpu);
}

static void cl_close(void *dev) {
    cl_dev *d = dev;
    if (!d) return;
    if (d->queue) clFinish(d->queue);
    cl_reap_staging(d, 1);
    free(d->pending);
    if (d->staging) clReleaseMemObject(d->staging);
    cl_prof_collect(d);
    cl_prof_report(d);
    cl_release_programs(d);
    cl_mem_release_all(d);
    if (d->queue) clReleaseCommandQueue(d->queue);
    if (d->context) clReleaseContext(d->context);
    free(d->prof_pending);
    free(d->prof_totals);
    free(d);
}

static const char *cl_device_name(void *dev) { return ((cl_dev *)dev)->name; }
static int cl_device_is_cpu(void *dev) { return !((cl_dev *)dev)->is_gpu; }

static const kiln_backend g_opencl = {
    .name = "opencl",
    .close = cl_close,
    .device_name = cl_device_name,
    .device_is_cpu = cl_device_is_cpu,
    .alloc = cl_alloc,
    .free = cl_free,
    .upload = cl_upload,
    .download = cl_download,
    .sync = cl_sync,
    .max_buffer_bytes = 0, /* set per device at open */
    .offset_alignment = CL_ALIGN,
    .memory_info = cl_memory_info,
    /* the kernels: .<slot> = cl_<slot> for each slot of core/kernel_slots.def */
#define KILN_SLOT(family, slot, args, output, output_dtype) .slot = cl_##slot,
#include "core/kernel_slots.def"
    /* every OpenCL device stores f16: vload_half / vstore_half are core OpenCL since 1.0,
     * with or without cl_khr_fp16 (PoCL has none), and the kernels compute in f32 */
    .supports_f16 = NULL,
    .gemm_variants = cl_gemm_variants,
    .set_gemm_variant = cl_set_gemm_variant,
    .timer_begin = cl_timer_begin,
    .timer_end = cl_timer_end,
    .driver_info = cl_driver_info,
    .probe_fma = cl_probe_fma,
    .probe_copy = cl_probe_copy,
    .probe_dispatch = cl_probe_dispatch,
};

/* The table is shared by every opened device; max_buffer_bytes is a per-device limit, so
 * each open copies the table with its own limit. */
typedef struct cl_dev_with_table {
    cl_dev dev;
    kiln_backend table;
} cl_dev_with_table;

kiln_status kiln_opencl_open(int index, const kiln_backend **table, void **dev) {
    cl_found *f;
    int n;
    kiln_status s = enumerate(&f, &n);
    if (s) return s;
    if (index >= n) {
        char range[48] = "opencl:0";
        if (n > 1) snprintf(range, sizeof range, "opencl:0 to opencl:%d", n - 1);
        kiln_set_error(KILN_ERR_NO_DEVICE,
                       "opencl:%d does not exist: this machine has %d OpenCL device%s (%s); "
                       "`kiln info` lists them",
                       index, n, n == 1 ? "" : "s", range);
        free(f);
        return KILN_ERR_NO_DEVICE;
    }
    if (index < 0) index = best_device(f, n);
    cl_dev_with_table *dt = calloc(1, sizeof *dt);
    if (!dt) {
        free(f);
        return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
    }
    cl_dev *d = &dt->dev;
    d->platform = f[index].platform;
    d->device = f[index].device;
    free(f);
    describe_device(d);

    cl_int err;
    d->context = clCreateContext(NULL, 1, &d->device, NULL, NULL, &err);
    if (!d->context) {
        s = cl_fail(err, "clCreateContext");
        goto fail;
    }
    const char *prof = getenv("KILN_CL_PROFILE");
    d->profile = prof && *prof && strcmp(prof, "0");
    const char *trace = getenv("KILN_CL_TRACE");
    d->trace = trace && *trace && strcmp(trace, "0");
    /* profiling always: kiln_timer_begin/end need it, and it costs nothing measurable
     * unless events are asked for (cl_probe.c); KILN_CL_PROFILE asks for one per kernel */
    d->queue = clCreateCommandQueue(d->context, d->device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (!d->queue) {
        s = cl_fail(err, "clCreateCommandQueue");
        goto fail;
    }
    const char *force = getenv("KILN_CL_GEMM");
    d->gemm_force = d->gemm_env = force && *force ? force : NULL;
    cl_gemm_configure(d);
    s = cl_mem_init(d);
    if (s) goto fail;

    dt->table = g_opencl;
    dt->table.max_buffer_bytes = (size_t)d->max_alloc;
    *table = &dt->table;
    *dev = d;
    return KILN_OK;
fail:
    cl_close(d);
    return s;
}
