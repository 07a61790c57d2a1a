/* Fused attention (FlashAttention-2), forward and backward, without the [Tq, Tk] scores.
 * What each kernel computes is backend.h's kiln_attention_args comment; the layouts:
 * q, y, dy, dq [B, Tq, H, hd] and k, v, dk, dv [B, Tk, KVH, hd] (real_t), lse and delta
 * [B, H, Tq] (f32). Query head h reads kv head h / (H / KVH).
 *
 * Tiles. A work-group holds a tile of br query rows and bc key rows in local memory (`lds`,
 * a __local argument the host sizes: engine/opencl/cl_attention.c chooses br and bc from the
 * device's local memory and the head dim, and pads the rows of a tile to ldp floats so that
 * work-items reading a column of it hit different banks). Every loop over a tile's elements
 * gives neighbouring work-items neighbouring head-dim elements (global loads coalesce) or
 * neighbouring keys of one query row (the query row is a broadcast).
 *
 * Masks keep a prefix of the keys for every query row i: j < attn_limit(i). The limit grows
 * with i, so a query tile needs only the keys below its last row's limit, and a key tile
 * only the query rows from the first that sees its first key.
 *
 * An all-masked row has lse = ATTN_EMPTY and y = 0; no kernel computes with an infinity
 * (the programs may be built with relaxed math): a running maximum starts at ATTN_EMPTY and
 * exp is taken only of differences of finite scores.
 *
 * Dropout keeps p_ij when rng_uniform(((b*H + h)*tq + i)*tk + j) >= dropout (common.cl),
 * the index of p_ij in the unfused path's [B, H, Tq, Tk] probabilities, so both paths drop
 * the same elements. */

#define ATTN_EMPTY (-3.0e38f)  /* lse of a row without keys (KILN_ATTN_LSE_EMPTY) */
#define ATTN_IS_EMPTY(x) ((x) < -1.0e38f)

/* The shape every attention kernel takes, after its operands. */
typedef struct attn_shape {
    long tq, tk, klen; /* klen: the keys of this batch row (lengths[b] or tk) */
    int hd, causal;
} attn_shape;

/* Keys j < attn_limit(s, i) are visible to query row i. */
long attn_limit(const attn_shape *s, long i) {
    long lim = s->causal ? min(s->klen, i + (s->tk - s->tq) + 1) : s->klen;
    return max(lim, 0L);
}

long attn_klen(const __global int *lengths, ulong lengths_off, int has_lengths, long b, long tk) {
    return has_lengths ? min((long)lengths[lengths_off + b], tk) : tk;
}

/* rows x hd elements of a tensor, row r at base + r * stride, into tile (row pitch ldp) */
void attn_load(__local float *tile, int ldp, const __global real_t *src, ulong base, long stride,
               int rows, int hd) {
    for (int e = get_local_id(0); e < rows * hd; e += KILN_WG) {
        int r = e / hd, d = e - r * hd;
        tile[r * ldp + d] = LOAD(src, base + r * stride + d);
    }
}

void attn_zero(__local float *tile, int ldp, int rows, int hd) {
    for (int e = get_local_id(0); e < rows * hd; e += KILN_WG) {
        int r = e / hd;
        tile[r * ldp + e - r * hd] = 0.0f;
    }
}

/* dst[r] += scale * tile[r] for rows x hd elements (dq, dk, dv: gradient accumulators) */
void attn_add(__global real_t *dst, ulong base, long stride, const __local float *tile, int ldp,
              int rows, int hd, float scale) {
    for (int e = get_local_id(0); e < rows * hd; e += KILN_WG) {
        int r = e / hd, d = e - r * hd;
        ulong at = base + r * stride + d;
        STORE(dst, at, LOAD(dst, at) + scale * tile[r * ldp + d]);
    }
}

/* sum_i a[i * sa] * b[i * sb] for i < n: a dot product of two rows (strides 1) or of a row
 * and a column of local tiles. Four partial sums: independent chains that a GPU's (or a
 * CPU's) pipelines overlap, where one running sum would serialize the loop (on PoCL the
 * kernels ran 1.3-2x faster so). Scalars, not float4: oclgrind's uninitialized-value checker
 * (21.10) crashes on vector loads from local memory. */
float attn_dot(const __local float *a, int sa, const __local float *b, int sb, int n) {
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += a[i * sa] * b[i * sb];
        s1 += a[(i + 1) * sa] * b[(i + 1) * sb];
        s2 += a[(i + 2) * sa] * b[(i + 2) * sb];
        s3 += a[(i + 3) * sa] * b[(i + 3) * sb];
    }
    for (; i < n; i++) s0 += a[i * sa] * b[i * sb];
    return (s0 + s1) + (s2 + s3);
}

/* The dropout factor of p_ij: 1 / (1 - dropout) when kept, 0 when dropped, 1 without dropout.
 * index: the element's index in the unfused [B, H, Tq, Tk] probabilities. */
float attn_keep(float dropout, ulong index, ulong seed, ulong stream) {
    if (dropout <= 0.0f) return 1.0f;
    return rng_uniform(index, stream, seed) >= dropout ? 1.0f / (1.0f - dropout) : 0.0f;
}

/* The online softmax's step for one query row over a key tile of `cols` keys, the first
 * `valid` of them visible: the scores sr become the tile's dropped, unnormalized
 * probabilities exp(s - m) * keep, the running max *m and sum *l take the tile in, and *alpha
 * is the factor by which the row's earlier output must be rescaled. */
void attn_online_row(__local float *sr, int cols, int valid, __local float *m, __local float *l,
                     __local float *alpha, float dropout, ulong index, ulong seed, ulong stream) {
    float m_old = *m, mx = m_old;
    for (int c = 0; c < valid; c++) mx = fmax(mx, sr[c]);
    float a = ATTN_IS_EMPTY(m_old) ? 0.0f : exp(m_old - mx);
    float sum = 0.0f;
    for (int c = 0; c < cols; c++) {
        float p = c < valid ? exp(sr[c] - mx) : 0.0f;
        sum += p;
        sr[c] = p == 0.0f ? 0.0f : p * attn_keep(dropout, index + c, seed, stream);
    }
    *l = *l * a + sum;
    *m = mx;
    *alpha = a;
}

/* y_i = sum_j p'_ij v_j and lse_i = log sum_j exp(s_ij), one work-group per (query tile of
 * br rows, head, batch row). Local memory: the query tile and its output accumulator
 * (br x ldp each), one key tile that holds K then V (bc x ldp), the tile's scores
 * (br x (bc + 1)), and each row's max, sum and rescale factor. */
__kernel __attribute__((reqd_work_group_size(KILN_WG, 1, 1)))
void attention_fwd(const __global real_t *q, ulong q_off, const __global real_t *k, ulong k_off,
                   const __global real_t *v, ulong v_off, const __global int *lengths,
                   ulong lengths_off, __global real_t *y, ulong y_off, __global float *lse,
                   ulong lse_off, __local float *lds, long heads, long kv_heads, long tq, long tk,
                   int hd, int br, int bc, int ldp, float scale, int causal, int has_lengths,
                   float dropout, ulong seed, ulong stream) {
    int lid = get_local_id(0), sp = bc + 1;
    long i0 = (long)get_group_id(0) * br, h = get_group_id(1), b = get_group_id(2);
    long kh = h / (heads / kv_heads);
    attn_shape s = {.tq = tq, .tk = tk, .hd = hd, .causal = causal,
                    .klen = attn_klen(lengths, lengths_off, has_lengths, b, tk)};
    int rows = (int)min((long)br, tq - i0);
    __local float *qs = lds, *os = qs + br * ldp, *kv = os + br * ldp, *ss = kv + bc * ldp;
    __local float *mrow = ss + br * sp, *lrow = mrow + br, *arow = lrow + br;
    long q_stride = heads * hd, k_stride = kv_heads * hd;
    ulong q_base = ((b * tq + i0) * heads + h) * hd, k_base = (b * tk * kv_heads + kh) * hd;
    ulong rng_base = ((ulong)(b * heads + h) * tq + i0) * tk;
    attn_load(qs, ldp, q, q_off + q_base, q_stride, rows, hd);
    attn_zero(os, ldp, rows, hd);
    for (int r = lid; r < rows; r += KILN_WG) {
        mrow[r] = ATTN_EMPTY;
        lrow[r] = 0.0f;
    }
    long kend = attn_limit(&s, i0 + rows - 1);
    for (long j0 = 0; j0 < kend; j0 += bc) {
        int cols = (int)min((long)bc, kend - j0);
        barrier(CLK_LOCAL_MEM_FENCE);
        attn_load(kv, ldp, k, k_off + k_base + j0 * k_stride, k_stride, cols, hd);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int e = lid; e < rows * cols; e += KILN_WG) {
            int r = e / cols, c = e - r * cols;
            ss[r * sp + c] = scale * attn_dot(qs + r * ldp, 1, kv + c * ldp, 1, hd);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int r = lid; r < rows; r += KILN_WG) {
            int valid = (int)clamp(attn_limit(&s, i0 + r) - j0, 0L, (long)cols);
            attn_online_row(ss + r * sp, cols, valid, mrow + r, lrow + r, arow + r, dropout,
                            rng_base + r * tk + j0, seed, stream);
        }
        /* V over K: every read of K ended at the barrier above */
        attn_load(kv, ldp, v, v_off + k_base + j0 * k_stride, k_stride, cols, hd);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int e = lid; e < rows * hd; e += KILN_WG) {
            int r = e / hd, d = e - r * hd;
            os[r * ldp + d] = os[r * ldp + d] * arow[r] + attn_dot(ss + r * sp, 1, kv + d, ldp, cols);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = lid; e < rows * hd; e += KILN_WG) {
        int r = e / hd, d = e - r * hd;
        float l = lrow[r];
        STORE(y, y_off + q_base + r * q_stride + d, l > 0.0f ? os[r * ldp + d] / l : 0.0f);
    }
    for (int r = lid; r < rows; r += KILN_WG) {
        float l = lrow[r];
        lse[lse_off + (b * heads + h) * tq + i0 + r] = l > 0.0f ? mrow[r] + log(l) : ATTN_EMPTY;
    }
}

/* dS_ij = p_ij (keep_ij dy_i . v_j - delta_i), p_ij = exp(scale q_i . k_j - lse_i), for a
 * visible key of a row with keys; 0 otherwise. The p'_ij = keep_ij p_ij of dv in *pd. */
float attn_ds(const attn_shape *s, long i, long j, const __local float *qr, const __local float *dyr,
              const __local float *kr, const __local float *vr, float lse_i, float delta_i,
              float scale, float dropout, ulong index, ulong seed, ulong stream, float *pd) {
    *pd = 0.0f;
    if (j >= attn_limit(s, i) || ATTN_IS_EMPTY(lse_i)) return 0.0f;
    float p = exp(scale * attn_dot(qr, 1, kr, 1, s->hd) - lse_i);
    float keep = attn_keep(dropout, index, seed, stream);
    *pd = p * keep;
    return p * (keep * attn_dot(dyr, 1, vr, 1, s->hd) - delta_i);
}

/* delta_i = dy_i . y_i (written for attention_bwd_dkv) and dq_i += scale * sum_j dS_ij k_j,
 * one work-group per (query tile, head, batch row). Local memory: the query, dy and dq tiles
 * (br x ldp each; the dq tile holds y while delta is computed), the key and value tiles
 * (bc x ldp each), dS (br x (bc + 1)), and each row's lse and delta. */
__kernel __attribute__((reqd_work_group_size(KILN_WG, 1, 1)))
void attention_bwd_dq(const __global real_t *q, ulong q_off, const __global real_t *k, ulong k_off,
                      const __global real_t *v, ulong v_off, const __global int *lengths,
                      ulong lengths_off, const __global real_t *y, ulong y_off,
                      const __global real_t *dy, ulong dy_off, const __global float *lse,
                      ulong lse_off, __global float *delta, ulong delta_off, __global real_t *dq,
                      ulong dq_off, __local float *lds, long heads, long kv_heads, long tq,
                      long tk, int hd, int br, int bc, int ldp, float scale, int causal,
                      int has_lengths, float dropout, ulong seed, ulong stream, int has_dq) {
    int lid = get_local_id(0), sp = bc + 1;
    long i0 = (long)get_group_id(0) * br, h = get_group_id(1), b = get_group_id(2);
    long kh = h / (heads / kv_heads);
    attn_shape s = {.tq = tq, .tk = tk, .hd = hd, .causal = causal,
                    .klen = attn_klen(lengths, lengths_off, has_lengths, b, tk)};
    int rows = (int)min((long)br, tq - i0);
    __local float *qs = lds, *dys = qs + br * ldp, *acc = dys + br * ldp, *ks = acc + br * ldp;
    __local float *vs = ks + bc * ldp, *ds = vs + bc * ldp, *lrow = ds + br * sp, *drow = lrow + br;
    long q_stride = heads * hd, k_stride = kv_heads * hd;
    ulong q_base = ((b * tq + i0) * heads + h) * hd, k_base = (b * tk * kv_heads + kh) * hd;
    ulong row0 = (b * heads + h) * tq + i0, rng_base = row0 * tk;
    attn_load(dys, ldp, dy, dy_off + q_base, q_stride, rows, hd);
    attn_load(acc, ldp, y, y_off + q_base, q_stride, rows, hd);
    attn_load(qs, ldp, q, q_off + q_base, q_stride, rows, hd);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int r = lid; r < rows; r += KILN_WG) {
        float dl = attn_dot(dys + r * ldp, 1, acc + r * ldp, 1, hd);
        delta[delta_off + row0 + r] = dl;
        drow[r] = dl;
        lrow[r] = lse[lse_off + row0 + r];
    }
    if (!has_dq) return;
    barrier(CLK_LOCAL_MEM_FENCE);
    attn_zero(acc, ldp, rows, hd);
    long kend = attn_limit(&s, i0 + rows - 1);
    for (long j0 = 0; j0 < kend; j0 += bc) {
        int cols = (int)min((long)bc, kend - j0);
        barrier(CLK_LOCAL_MEM_FENCE);
        attn_load(ks, ldp, k, k_off + k_base + j0 * k_stride, k_stride, cols, hd);
        attn_load(vs, ldp, v, v_off + k_base + j0 * k_stride, k_stride, cols, hd);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int e = lid; e < rows * cols; e += KILN_WG) {
            int r = e / cols, c = e - r * cols;
            float pd;
            ds[r * sp + c] = attn_ds(&s, i0 + r, j0 + c, qs + r * ldp, dys + r * ldp, ks + c * ldp,
                                     vs + c * ldp, lrow[r], drow[r], scale, dropout,
                                     rng_base + r * tk + j0 + c, seed, stream, &pd);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int e = lid; e < rows * hd; e += KILN_WG) {
            int r = e / hd, d = e - r * hd;
            acc[r * ldp + d] += attn_dot(ds + r * sp, 1, ks + d, ldp, cols);
        }
    }
    /* each work-item adds the accumulator elements it wrote itself: no barrier needed */
    attn_add(dq, dq_off + q_base, q_stride, acc, ldp, rows, hd, scale);
}

/* dk_j += scale * sum dS_ij q_i and dv_j += sum p'_ij dy_i over the rows i of every query head
 * of kv head kh, one work-group per (key tile of bc rows, kv head, batch row): each owns its
 * dk and dv rows, so nothing is added atomically. Local memory: the key, value, dk and dv
 * tiles (bc x ldp each), the query and dy tiles (br x ldp each), p' and dS (br x (bc + 1)
 * each), and each row's lse and delta. */
__kernel __attribute__((reqd_work_group_size(KILN_WG, 1, 1)))
void attention_bwd_dkv(const __global real_t *q, ulong q_off, const __global real_t *k,
                       ulong k_off, const __global real_t *v, ulong v_off,
                       const __global int *lengths, ulong lengths_off, const __global real_t *dy,
                       ulong dy_off, const __global float *lse, ulong lse_off,
                       const __global float *delta, ulong delta_off, __global real_t *dk,
                       ulong dk_off, __global real_t *dv, ulong dv_off, __local float *lds,
                       long heads, long kv_heads, long tq, long tk, int hd, int br, int bc,
                       int ldp, float scale, int causal, int has_lengths, float dropout,
                       ulong seed, ulong stream, int has_dk, int has_dv) {
    int lid = get_local_id(0), sp = bc + 1;
    long j0 = (long)get_group_id(0) * bc, kh = get_group_id(1), b = get_group_id(2);
    long group = heads / kv_heads;
    attn_shape s = {.tq = tq, .tk = tk, .hd = hd, .causal = causal,
                    .klen = attn_klen(lengths, lengths_off, has_lengths, b, tk)};
    /* the first query row that sees key j0 */
    long first = causal ? max(0L, j0 - (tk - tq)) : 0;
    if (j0 >= s.klen || first >= tq) return; /* no query sees these keys: their gradients are 0 */
    int cols = (int)min((long)bc, tk - j0);
    __local float *ks = lds, *vs = ks + bc * ldp, *dks = vs + bc * ldp, *dvs = dks + bc * ldp;
    __local float *qs = dvs + bc * ldp, *dys = qs + br * ldp, *ps = dys + br * ldp;
    __local float *ds = ps + br * sp, *lrow = ds + br * sp, *drow = lrow + br;
    long q_stride = heads * hd, k_stride = kv_heads * hd;
    ulong k_base = ((b * tk + j0) * kv_heads + kh) * hd;
    attn_load(ks, ldp, k, k_off + k_base, k_stride, cols, hd);
    attn_load(vs, ldp, v, v_off + k_base, k_stride, cols, hd);
    attn_zero(dks, ldp, cols, hd);
    attn_zero(dvs, ldp, cols, hd);
    for (long h = kh * group; h < (kh + 1) * group; h++) {
        for (long i0 = first - first % br; i0 < tq; i0 += br) { /* from first's tile */
            int rows = (int)min((long)br, tq - i0);
            ulong q_base = ((b * tq + i0) * heads + h) * hd, row0 = (b * heads + h) * tq + i0;
            barrier(CLK_LOCAL_MEM_FENCE);
            attn_load(qs, ldp, q, q_off + q_base, q_stride, rows, hd);
            attn_load(dys, ldp, dy, dy_off + q_base, q_stride, rows, hd);
            for (int r = lid; r < rows; r += KILN_WG) {
                lrow[r] = lse[lse_off + row0 + r];
                drow[r] = delta[delta_off + row0 + r];
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int e = lid; e < rows * cols; e += KILN_WG) {
                int r = e / cols, c = e - r * cols;
                float pd;
                ds[r * sp + c] = attn_ds(&s, i0 + r, j0 + c, qs + r * ldp, dys + r * ldp,
                                         ks + c * ldp, vs + c * ldp, lrow[r], drow[r], scale,
                                         dropout, (row0 + r) * tk + j0 + c, seed, stream, &pd);
                ps[r * sp + c] = pd;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int e = lid; e < cols * hd; e += KILN_WG) {
                int c = e / hd, d = e - c * hd;
                dks[c * ldp + d] += attn_dot(ds + c, sp, qs + d, ldp, rows);
                dvs[c * ldp + d] += attn_dot(ps + c, sp, dys + d, ldp, rows);
            }
        }
    }
    /* each work-item adds the accumulator elements it wrote itself: no barrier needed */
    if (has_dk) attn_add(dk, dk_off + k_base, k_stride, dks, ldp, cols, hd, scale);
    if (has_dv) attn_add(dv, dv_off + k_base, k_stride, dvs, ldp, cols, hd, 1.0f);
}
