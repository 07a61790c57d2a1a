/* Embedding lookup: out[r, :] = table[ids[r], :]; backward dtable[ids[r], :] += dout[r, :].
 * table, out, dout and dtable are f32, or f16 in the f16 variant; ids are i32.
 * An id outside [0, vocab) sets err_flag[0] = 1 (the engine reports KILN_ERR_RANGE on its
 * next read); its output row is zero-filled and its gradient dropped, never out of bounds. */

/* grid (dim, rows) */
__kernel void embed_fwd(const __global real_t *table, ulong table_off, const __global int *ids,
                        ulong ids_off, __global real_t *out, ulong out_off, __global int *err,
                        ulong err_off, long vocab, long dim, int has_err) {
    long j = get_global_id(0), r = get_global_id(1);
    if (j >= dim) return;
    int id = ids[ids_off + r];
    int ok = id >= 0 && id < vocab;
    if (!ok && j == 0 && has_err) atomic_xchg(err + err_off, 1); /* several rows may be bad */
    /* a move of the element's bits: an f16 row is copied, not converted and back */
    __global RAW_T *o = (__global RAW_T *)out + out_off + r * dim + j;
    *o = ok ? ((const __global RAW_T *)table)[table_off + (long)id * dim + j] : 0;
}

/* One work-item per column, walking the rows in order: rows sharing an id add into the same
 * gradient row, and this order makes the sum race-free and deterministic without atomics.
 * The f32 variant's; f16 gradients go through embed_bwd_widened. */
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

#if KILN_F16
/* The backward with an f16 table: rows sharing an id must add up in f32 and round once
 * (rounding after each row would lose bits with every repeat). Work-item j owns column
 * c0 + j of the table and column j of `wide`, an f32 [vocab, width] scratch, and walks the
 * rows three times: copy the touched table entries into wide, add the rows in order (the
 * order embed_bwd uses), round the sums back. Only touched entries of wide are read; a
 * repeated id just copies or stores the same value again. The host splits the columns in
 * blocks of `width` so the scratch stays small. grid (width) */
__kernel void embed_bwd_widened(const __global int *ids, ulong ids_off, const __global half *dout,
                                ulong dout_off, __global half *dtable, ulong dtable_off,
                                __global float *wide, ulong wide_off, long rows, long vocab,
                                long dim, long c0, long width) {
    long j = get_global_id(0);
    if (j >= width || c0 + j >= dim) return;
    const __global int *id = ids + ids_off;
    __global float *w = wide + wide_off + j;
    for (long r = 0; r < rows; r++)
        if (id[r] >= 0 && id[r] < vocab) w[id[r] * width] = half_load(dtable, dtable_off + id[r] * dim + c0 + j);
    for (long r = 0; r < rows; r++)
        if (id[r] >= 0 && id[r] < vocab) w[id[r] * width] += half_load(dout, dout_off + r * dim + c0 + j);
    for (long r = 0; r < rows; r++)
        if (id[r] >= 0 && id[r] < vocab) half_store(dtable, dtable_off + id[r] * dim + c0 + j, w[id[r] * width]);
}
#endif
