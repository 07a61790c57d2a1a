/* The OpenCL backend's device-measurement slots (cl_probe.c; see kiln/probe.h). */
#ifndef KILN_CL_PROBE_H
#define KILN_CL_PROBE_H

#include "core/backend.h"

kiln_status cl_timer_begin(void *dev, void **timer);
kiln_status cl_timer_end(void *dev, void *timer, double *device_s);
void cl_driver_info(void *dev, char *buf, size_t size);
kiln_status cl_probe_fma(void *dev, kiln_probe_fma_args *a);
kiln_status cl_probe_copy(void *dev, const kiln_probe_copy_args *a);
kiln_status cl_probe_dispatch(void *dev, const kiln_probe_dispatch_args *a);

#endif
