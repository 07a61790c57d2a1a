/* Host side of cl/attention.cl: the fused attention (FlashAttention-2), forward and the two
 * backward kernels, f32 or f16 operands (lse and delta f32).
 *
 * The tiles follow the device: a work-group keeps br query rows and bc key rows of the head
 * dim in local memory, so the largest tile whose kernel's local memory fits
 * CL_DEVICE_LOCAL_MEM_SIZE is taken, up to ATTN_MAX_TILE rows (a power of two; head dim 64
 * on a 32 KiB device: 32 rows forward, 16 backward; head dim 256: 8 and 4). KILN_CL_ATTN_TILE
 * caps it lower, so that tests cover many tiles with short sequences. A query block shorter
 * than the tile (a decoding step) gets a query tile just large enough. */
#include <stdlib.h>

#include "opencl/cl_internal.h"

#define ATTN_MAX_TILE 64

typedef struct attn_tiles {
    int br, bc, ldp; /* query rows, key rows, floats per tile row */
    size_t bytes;    /* the kernel's __local scratch */
} attn_tiles;

typedef enum { ATTN_FWD, ATTN_BWD_DQ, ATTN_BWD_DKV } attn_kernel;

/* The floats of a kernel's local memory, as cl/attention.cl lays it out. */
static size_t attn_floats(attn_kernel k, size_t br, size_t bc, size_t ldp) {
    switch (k) {
    case ATTN_FWD: return (2 * br + bc) * ldp + br * (bc + 1) + 3 * br;
    case ATTN_BWD_DQ: return (3 * br + 2 * bc) * ldp + br * (bc + 1) + 2 * br;
    case ATTN_BWD_DKV: return (2 * br + 4 * bc) * ldp + 2 * br * (bc + 1) + 2 * br;
    }
    return 0;
}

static int tile_cap(void) {
    const char *env = getenv("KILN_CL_ATTN_TILE");
    int cap = env ? atoi(env) : 0;
    return cap > 0 && cap < ATTN_MAX_TILE ? cap : ATTN_MAX_TILE;
}

/* The largest power-of-two tile that fits; the query tile no larger than the query block
 * needs (forward and dq; dkv loops over whole query blocks in its tiles). bytes 0: none fits
 * (the error set). Rows of a tile are
 * padded to an odd number of floats, so that work-items reading one column of a tile (a
 * head-dim element of consecutive keys) fall in different local-memory banks. */
static attn_tiles attn_pick(const cl_dev *d, const kiln_attention_args *a, attn_kernel k) {
    int hd = (int)a->head_dim, ldp = hd | 1;
    for (int b = tile_cap(); b >= 1; b /= 2) {
        int br = b;
        if (k != ATTN_BWD_DKV)
            while (br > 1 && br / 2 >= a->tq) br /= 2;
        size_t bytes = attn_floats(k, (size_t)br, (size_t)b, (size_t)ldp) * sizeof(float);
        if (bytes <= d->local_mem) return (attn_tiles){.br = br, .bc = b, .ldp = ldp, .bytes = bytes};
    }
    kiln_set_error(KILN_ERR_UNSUPPORTED,
                          "opencl attention: head dim %d needs %zu bytes of local memory for "
                          "one key row, %s has %llu",
                          hd, attn_floats(k, 1, 1, (size_t)ldp) * sizeof(float), d->name,
                          (unsigned long long)d->local_mem);
    return (attn_tiles){.bytes = 0};
}

/* The sizes and options every attention kernel takes after its operands and scratch. */
static void attn_shape_args(cl_call *c, const kiln_attention_args *a, const attn_tiles *t) {
    cl_arg_i64(c, a->heads);
    cl_arg_i64(c, a->kv_heads);
    cl_arg_i64(c, a->tq);
    cl_arg_i64(c, a->tk);
    cl_arg_i32(c, (int)a->head_dim);
    cl_arg_i32(c, t->br);
    cl_arg_i32(c, t->bc);
    cl_arg_i32(c, t->ldp);
    cl_arg_f32(c, a->scale);
    cl_arg_i32(c, a->causal);
    cl_arg_i32(c, cl_has(a->lengths));
    cl_arg_f32(c, a->dropout);
    cl_arg_u64(c, a->seed);
    cl_arg_u64(c, a->stream);
}

/* One work-group per (tile of `rows`, head or kv head, batch row). */
static kiln_status attn_launch(cl_call *c, int64_t rows, int tile, int64_t heads, int64_t batch) {
    size_t wg = c->dev->wg;
    size_t global[3] = {(size_t)((rows + tile - 1) / tile) * wg, (size_t)heads, (size_t)batch};
    size_t local[3] = {wg, 1, 1};
    return cl_run(c, 3, global, local);
}

kiln_status cl_attention_fwd(void *dev, const kiln_attention_args *a) {
    cl_dev *d = dev;
    attn_tiles t = attn_pick(d, a, ATTN_FWD);
    if (!t.bytes) return kiln_error_status();
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(d, "attention", "attention_fwd", a->dtype);
    cl_arg_op(&c, CL_OP(attention_fwd, q), a->q, es);
    cl_arg_op(&c, CL_OP(attention_fwd, k), a->k, es);
    cl_arg_op(&c, CL_OP(attention_fwd, v), a->v, es);
    cl_arg_op(&c, CL_OP(attention_fwd, lengths), a->lengths, 4);
    cl_arg_op(&c, CL_OP(attention_fwd, y), a->y, es);
    cl_arg_op(&c, CL_OP(attention_fwd, lse), a->lse, 4);
    cl_arg_local(&c, t.bytes);
    attn_shape_args(&c, a, &t);
    return attn_launch(&c, a->tq, t.br, a->heads, a->batch);
}

/* delta = dy . y always (attention_bwd_dkv reads it), dq only when asked for. */
kiln_status cl_attention_bwd_dq(void *dev, const kiln_attention_args *a) {
    cl_dev *d = dev;
    attn_tiles t = attn_pick(d, a, ATTN_BWD_DQ);
    if (!t.bytes) return kiln_error_status();
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(d, "attention", "attention_bwd_dq", a->dtype);
    cl_arg_op(&c, CL_OP(attention_bwd_dq, q), a->q, es);
    cl_arg_op(&c, CL_OP(attention_bwd_dq, k), a->k, es);
    cl_arg_op(&c, CL_OP(attention_bwd_dq, v), a->v, es);
    cl_arg_op(&c, CL_OP(attention_bwd_dq, lengths), a->lengths, 4);
    cl_arg_op(&c, CL_OP(attention_bwd_dq, y), a->y, es);
    cl_arg_op(&c, CL_OP(attention_bwd_dq, dy), a->dy, es);
    cl_arg_op(&c, CL_OP(attention_bwd_dq, lse), a->lse, 4);
    cl_arg_op(&c, CL_OP(attention_bwd_dq, delta), a->delta, 4);
    cl_arg_op(&c, CL_OP(attention_bwd_dq, dq), a->dq, es);
    cl_arg_local(&c, t.bytes);
    attn_shape_args(&c, a, &t);
    cl_arg_i32(&c, cl_has(a->dq));
    return attn_launch(&c, a->tq, t.br, a->heads, a->batch);
}

kiln_status cl_attention_bwd_dkv(void *dev, const kiln_attention_args *a) {
    if (!cl_has(a->dk) && !cl_has(a->dv)) return KILN_OK;
    cl_dev *d = dev;
    attn_tiles t = attn_pick(d, a, ATTN_BWD_DKV);
    if (!t.bytes) return kiln_error_status();
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(d, "attention", "attention_bwd_dkv", a->dtype);
    cl_arg_op(&c, CL_OP(attention_bwd_dkv, q), a->q, es);
    cl_arg_op(&c, CL_OP(attention_bwd_dkv, k), a->k, es);
    cl_arg_op(&c, CL_OP(attention_bwd_dkv, v), a->v, es);
    cl_arg_op(&c, CL_OP(attention_bwd_dkv, lengths), a->lengths, 4);
    cl_arg_op(&c, CL_OP(attention_bwd_dkv, dy), a->dy, es);
    cl_arg_op(&c, CL_OP(attention_bwd_dkv, lse), a->lse, 4);
    cl_arg_op(&c, CL_OP(attention_bwd_dkv, delta), a->delta, 4);
    cl_arg_op(&c, CL_OP(attention_bwd_dkv, dk), a->dk, es);
    cl_arg_op(&c, CL_OP(attention_bwd_dkv, dv), a->dv, es);
    cl_arg_local(&c, t.bytes);
    attn_shape_args(&c, a, &t);
    cl_arg_i32(&c, cl_has(a->dk));
    cl_arg_i32(&c, cl_has(a->dv));
    return attn_launch(&c, a->tk, t.bc, a->kv_heads, a->batch);
}
