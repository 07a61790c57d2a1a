/* Embedding lookup: out[r, :] = table[ids[r], :]; backward dtable[ids[r], :] += dout[r, :].
 * An id outside [0, vocab) sets err_flag[0] = 1 (the engine reports KILN_ERR_RANGE on its
 * next read); its output row is zero-filled and its gradient dropped, never out of bounds. */

/* grid (dim, rows) */
__kernel void embed_fwd(const __global float *table, ulong table_off, const __global int *ids,
                        ulong ids_off, __global float *out, ulong out_off, __global int *err,
                        ulong err_off, long vocab, long dim, int has_err) {
    long j = get_global_id(0), r = get_global_id(1);
    if (j >= dim) return;
    int id = ids[ids_off + r];
    int ok = id >= 0 && id < vocab;
    if (!ok && j == 0 && has_err) atomic_xchg(err + err_off, 1); /* several rows may be bad */
    out[out_off + r * dim + j] = ok ? table[table_off + (long)id * dim + j] : 0.0f;
}

/* One work-item per column, walking the rows in order: rows sharing an id add into the same
 * gradient row, and this order makes the sum race-free and deterministic without atomics. */
__kernel void embed_bwd(const __global int *ids, ulong ids_off, const __global float *dout,
                        ulong dout_off, __global float *dtable, ulong dtable_off, long rows,
                        long vocab, long dim) {
    long j = get_global_id(0);
    if (j >= dim) return;
    for (long r = 0; r < rows; r++) {
        int id = ids[ids_off + r];
        if (id >= 0 && id < vocab) dtable[dtable_off + (long)id * dim + j] += dout[dout_off + r * dim + j];
    }
}
