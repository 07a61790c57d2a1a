/* The Vulkan backend's table and its opener. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"
#include "vk_probe.h"

/* Destroys every Vulkan object of the device (waiting for its work first) and drops its
 * reference on the instance. The host-side struct stays: buffers the engine still holds
 * are then freed as plain memory, and every other call fails cleanly. */
void vk_teardown(vk_dev *d) {
    vk_track_device(d, 0);
    if (d->device) {
        vk_commands_destroy(d); /* waits for the device and releases deferred frees */
        vk_profile_report(d);
        vk_pipelines_destroy(d);
        vk_memory_destroy(d);
        vk_device_destroy(d);
    }
    if (d->instance) vk_instance_release();
    d->instance = VK_NULL_HANDLE;
}

/* Frees what the backend allocated on the host for a device whose Vulkan objects are
 * being abandoned (no Vulkan call): block and buffer records, batch lists, pipelines. */
static void free_host_records(vk_dev *d) {
    for (int k = 0; k < VK_POOLS; k++) {
        while (d->pools[k].blocks) {
            vk_block *b = d->pools[k].blocks;
            d->pools[k].blocks = b->next;
            free(b->free_ranges);
            free(b);
        }
    }
    d->dummy_block = NULL;
    for (int i = 0; i < VK_RING; i++) {
        vk_batch *b = &d->ring[i];
        for (int j = 0; j < b->n_frees; j++) free(b->frees[j]);
        free(b->frees);
        free(b->query_names);
        free(b->dpools);
        free(b->views);
        memset(b, 0, sizeof *b);
    }
    free(d->pipelines);
    d->pipelines = NULL;
    d->n_pipelines = d->cap_pipelines = 0;
}

void vk_abandon(vk_dev *d) {
    vk_track_device(d, 0);
    if (!d->device) return;
    /* the pipeline cache is worth keeping; but only the driver is called for it, never a
     * layer whose own exit handlers may already have run */
    if (!vk_layers_requested()) vk_pipeline_cache_save(d);
    vk_profile_report(d);
    free_host_records(d);
    d->device = VK_NULL_HANDLE;
    d->instance = VK_NULL_HANDLE;
}

static void vk_close(void *dev) {
    vk_dev *d = vk_of(dev);
    if (!d) return;
    vk_teardown(d);
    free(d->times);
    free(d);
}

static const char *vk_device_name(void *dev) { return vk_of(dev)->name; }
static int vk_device_is_cpu(void *dev) { return vk_of(dev)->dclass == VK_CLASS_CPU; }
/* f16 kernels need 16-bit storage (vk_require_f16); off in minimum-limits mode */
static int vk_supports_f16(void *dev) { return vk_of(dev)->caps.storage16 != 0; }

static const kiln_backend g_vulkan = {
    .name = "vulkan",
    .close = vk_close,
    .device_name = vk_device_name,
    .device_is_cpu = vk_device_is_cpu,
    .alloc = vk_alloc,
    .free = vk_free,
    .upload = vk_upload,
    .download = vk_download,
    .sync = vk_sync,
    .max_buffer_bytes = 0, /* set per device in vk_memory_init */
    .offset_alignment = 256,
    .memory_info = vk_memory_info,
    /* the kernels: .<slot> = vk_<slot> for each slot of core/kernel_slots.def */
#define KILN_SLOT(family, slot, args, output, output_dtype) .slot = vk_##slot,
#include "core/kernel_slots.def"
    .qmatmul_rounds_x = vk_qmatmul_rounds_x,
    .timer_begin = vk_timer_begin,
    .timer_end = vk_timer_end,
    .driver_info = vk_driver_info,
    .probe_fma = vk_probe_fma,
    .probe_copy = vk_probe_copy,
    .probe_dispatch = vk_probe_dispatch,
    .supports_f16 = vk_supports_f16,
    .gemm_variants = vk_gemm_variants,
    .set_gemm_variant = vk_set_gemm_variant,
};

kiln_status kiln_vulkan_open(int index, const kiln_backend **table, void **dev) {
    /* every embedded module's bindings checked against its push block once, up front; one that disagrees fails
     * its launches (vk_shaders.c) */
    vk_shaders_reflect();
    VkInstance inst;
    vk_physical *devs;
    uint32_t n;
    kiln_status s = vk_instance_open(&inst, &devs, &n);
    if (s) return s;
    int pick = index < 0 ? vk_pick_best(devs, n) : index;
    if (index >= 0 && (uint32_t)index >= n) {
        if (n == 1)
            s = kiln_set_error(KILN_ERR_NO_DEVICE, "vulkan:%d does not exist: the only Vulkan device is vulkan:0 (%s); see `kiln info`",
                               index, devs[0].props.deviceName);
        else
            s = kiln_set_error(KILN_ERR_NO_DEVICE, "vulkan:%d does not exist: there are %u Vulkan devices, vulkan:0 to vulkan:%u; see `kiln info`",
                               index, n, n - 1);
    } else if (pick < 0) {
        s = kiln_set_error(KILN_ERR_NO_DEVICE, "vulkan: no usable device: %s %s", devs[0].props.deviceName,
                           devs[0].unusable);
    } else if (devs[pick].unusable) {
        s = kiln_set_error(KILN_ERR_NO_DEVICE, "vulkan:%d (%s) %s", pick, devs[pick].props.deviceName, devs[pick].unusable);
    }
    if (s) {
        free(devs);
        vk_instance_release();
        return s;
    }
    vk_dev *d = calloc(1, sizeof *d);
    if (!d) {
        free(devs);
        vk_instance_release();
        return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
    }
    d->table = g_vulkan;
    s = vk_device_create(d, inst, &devs[pick]);
    free(devs);
    if (!s) s = vk_memory_init(d);
    if (!s) s = vk_commands_init(d);
    if (!s) s = vk_pipelines_init(d);
    if (s) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", kiln_error_message());
        vk_close(d);
        return kiln_set_error(s, "%s", msg);
    }
    const char *prof = getenv("KILN_VK_PROFILE");
    d->profile = prof && *prof && strcmp(prof, "0") != 0;
    if (d->profile && !d->caps.timestamp_bits) {
        fprintf(stderr, "kiln: KILN_VK_PROFILE: %s has no timestamps on its compute queue\n", d->name);
        d->profile = 0;
    }
    vk_track_device(d, 1);
    *table = &d->table;
    *dev = d;
    return KILN_OK;
}
