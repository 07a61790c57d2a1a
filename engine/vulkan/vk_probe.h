/* The Vulkan backend's device-measurement slots (vk_probe.c; see kiln/probe.h). */
#ifndef KILN_VK_PROBE_H
#define KILN_VK_PROBE_H

#include "core/backend.h"

kiln_status vk_timer_begin(void *dev, void **timer);
kiln_status vk_timer_end(void *dev, void *timer, double *device_s);
void vk_driver_info(void *dev, char *buf, size_t size);
kiln_status vk_probe_fma(void *dev, kiln_probe_fma_args *a);
kiln_status vk_probe_copy(void *dev, const kiln_probe_copy_args *a);
kiln_status vk_probe_dispatch(void *dev, const kiln_probe_dispatch_args *a);

#endif
