/* Embedding lookup: out[..., :] = table[ids[...], :], with a scatter-add backward.
 *
 * Token ids live on the device, so the op cannot check them without a read back. The
 * kernel checks them: the CPU kernel fails at once with the offending id; a GPU kernel
 * raises the context's error flag, which the engine reports on its next read. */
#include "core/internal.h"

/* dtable[ids[r], :] += dout[r, :] */
static kiln_status embedding_backward(kiln_tape_rec *rec) {
    kiln_tensor *table = rec->in[0], *ids = rec->in[1];
    kiln_tensor *dtable = kiln_grad_acc(table);
    if (!dtable) return kiln_error_status();
    kiln_ctx *ctx = table->ctx;
    kiln_embed_args a = {0};
    a.ids = kiln_ref_of(ids);
    a.dout = kiln_ref_of(rec->out->grad);
    a.dtable = kiln_ref_of(dtable);
    a.err_flag = kiln_ref_of(ctx->err_flag);
    a.rows = kiln_numel(ids);
    a.vocab = table->shape[0];
    a.dim = table->shape[1];
    a.dtype = table->dtype;
    return KILN_CALL(ctx, embed_bwd, &a);
}

kiln_tensor *kiln_embedding(kiln_tensor *table, kiln_tensor *ids) {
    if (!kiln_inputs_ok(2, table, ids)) return NULL;
    char st[64], si[64];
    if (kiln_check_float("embedding", table, "the table")) return NULL;
    if (table->ndim != 2)
        return kiln_fail(KILN_ERR_SHAPE, "embedding: the table must be 2-D [vocab, channels], got %s",
                         kiln_shape_str(table, st, sizeof st));
    if (ids->dtype != KILN_I32)
        return kiln_fail(KILN_ERR_DTYPE, "embedding: ids must be i32 token ids, got %s", kiln_dtype_name(ids->dtype));
    if (ids->ndim >= KILN_MAX_DIMS)
        return kiln_fail(KILN_ERR_SHAPE, "embedding: ids %s have %d dims; at most %d, since the output adds one",
                         kiln_shape_str(ids, si, sizeof si), ids->ndim, KILN_MAX_DIMS - 1);
    if (table->ctx != ids->ctx)
        return kiln_fail(KILN_ERR_ARGUMENT, "embedding: the table and the ids belong to different contexts");
    kiln_ctx *ctx = table->ctx;
    int64_t shape[KILN_MAX_DIMS];
    for (int i = 0; i < ids->ndim; i++) shape[i] = ids->shape[i];
    shape[ids->ndim] = table->shape[1];
    kiln_tensor *out = kiln_op_output(ctx, table->dtype, ids->ndim + 1, shape);
    if (!out) return NULL;
    kiln_embed_args a = {0};
    a.table = kiln_ref_of(table);
    a.ids = kiln_ref_of(ids);
    a.out = kiln_ref_of(out);
    a.err_flag = kiln_ref_of(ctx->err_flag);
    a.rows = kiln_numel(ids);
    a.vocab = table->shape[0];
    a.dim = table->shape[1];
    a.dtype = table->dtype;
    if (KILN_CALL(ctx, embed_fwd, &a)) return NULL;
    kiln_tensor *ins[2] = {table, ids};
    if (kiln_needs_tape(ctx, 1, ins)) { /* only the table is differentiable */
        kiln_tape_rec *rec = kiln_tape_push(ctx, embedding_backward, out, 2, ins);
        if (!rec) return NULL;
    }
    return out;
}
