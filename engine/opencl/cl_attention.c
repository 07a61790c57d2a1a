/* Fused attention on OpenCL (kiln_attention_args): not yet written. h-fa-cl replaces this
 * file with the launchers of cl/attention.cl's attention_fwd, attention_bwd_dq and
 * attention_bwd_dkv; until then the op fails cleanly on OpenCL. */
#include "opencl/cl_internal.h"

kiln_status cl_attention_fwd(void *dev, const kiln_attention_args *a) {
    (void)dev, (void)a;
    return kiln_set_error(KILN_ERR_UNSUPPORTED, "attention_fwd: the OpenCL kernel is not yet written");
}

kiln_status cl_attention_bwd_dq(void *dev, const kiln_attention_args *a) {
    (void)dev, (void)a;
    return kiln_set_error(KILN_ERR_UNSUPPORTED, "attention_bwd_dq: the OpenCL kernel is not yet written");
}

kiln_status cl_attention_bwd_dkv(void *dev, const kiln_attention_args *a) {
    (void)dev, (void)a;
    return kiln_set_error(KILN_ERR_UNSUPPORTED, "attention_bwd_dkv: the OpenCL kernel is not yet written");
}
