/* What the GPT's own files share and callers do not need: the trunk with a caller's block
 * pass (for the stability probes: entropy, Admin's profiling) and the token-id check. */
#ifndef KILN_HOST_MODEL_GPT_INTERNAL_H
#define KILN_HOST_MODEL_GPT_INTERNAL_H

#include "model/gpt/gpt.h"

/* The residual stream after the last block, [B, T, C], for token ids at positions
 * [pass->pos0, pass->pos0 + T); attention over cache when it is not NULL. host_ids: the same
 * ids on the host when the caller has them (decoding), else NULL; a quantized embedding,
 * looked up on the host, then needs no read back from the device. */
kiln_tensor *gpt_trunk(gpt_model *m, kiln_tensor *ids, const int32_t *host_ids, gpt_kv_cache *cache,
                       block_pass *pass);

/* ids must be i32 [B, T] with positions pos0 + T within the context: else the engine's
 * last error is set and an error status returned. */
kiln_status gpt_check_token_ids(const gpt_model *m, const kiln_tensor *ids, int64_t pos0);

#endif
