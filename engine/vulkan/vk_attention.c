/* Fused attention on Vulkan (kiln_attention_args): not yet written. h-fa-vk replaces this
 * file with the launchers of shaders/attention_fwd.comp, attention_bwd_dq.comp and
 * attention_bwd_dkv.comp; until then the op fails cleanly on Vulkan. */
#include "vk_internal.h"

kiln_status vk_attention_fwd(void *dev, const kiln_attention_args *a) {
    (void)dev, (void)a;
    return kiln_set_error(KILN_ERR_UNSUPPORTED, "attention_fwd: the Vulkan kernel is not yet written");
}

kiln_status vk_attention_bwd_dq(void *dev, const kiln_attention_args *a) {
    (void)dev, (void)a;
    return kiln_set_error(KILN_ERR_UNSUPPORTED, "attention_bwd_dq: the Vulkan kernel is not yet written");
}

kiln_status vk_attention_bwd_dkv(void *dev, const kiln_attention_args *a) {
    (void)dev, (void)a;
    return kiln_set_error(KILN_ERR_UNSUPPORTED, "attention_bwd_dkv: the Vulkan kernel is not yet written");
}
