/* Host side of the GEMM (kiln_gemm_args). The variants, chosen by device class:
 *
 *  - GPUs (and anything without the CPU paths): gemm_tiled.comp, shared-memory tiles with a
 *    register block per invocation, reading the operands in place.
 *  - CPU devices (lavapipe, SwiftShader), for all but tiny problems: op(A) and op(B) are
 *    first packed by gemm_pack.comp into zero-padded panels of RGBA32F texels (resolving
 *    transposes, strides and f16 on the way): a CPU driver runs each invocation as one
 *    SIMD lane and does every buffer load one lane at a time, while a texel fetch brings
 *    four floats per lane for about the price of one such load, so the packing pass
 *    (O(MK + KN)) pays for itself many times over. Then
 *      - gemm_shuffle.comp where a subgroup is 8 lanes with subgroupShuffle (lavapipe):
 *        each lane fetches its own columns of B and one row of A, and shuffles broadcast
 *        A to the other lanes (32 x 64 or 16 x 64 blocks per subgroup, by host CPU);
 *      - gemm_packed.comp elsewhere (and in the minimum-limits mode): 16 x 24 blocks per
 *        invocation, every operand value fetched by every lane.
 *    docs/benchmarks.md ("GEMM, Vulkan") has the measurements behind these choices.
 *  - f16 inputs on devices with VK_KHR_cooperative_matrix: vk_gemm_coopmat.c.
 *  - On every device, products of at most KILN_ABI_GEMV_ROWS rows of C (a decoded token's):
 *    gemv.comp (vk_gemm_gemv.c), which streams B once where it lies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu_features.h"
#include "push.h"
#include "vk_internal.h"

typedef struct { GEMM_TILED_PUSH } gemm_tiled_push;
typedef struct { GEMM_PACK_PUSH } gemm_pack_push;
typedef struct { GEMM_PACKED_PUSH } gemm_packed_push;

#define PACKED_MIN_WORK ((int64_t)1 << 18) /* m * n * k * batch below which packing does not pay */

/* Elements of one stored operand: rows x cols with leading dimension ld. */
static int64_t extent(int64_t rows, int64_t cols, int64_t ld) { return (rows - 1) * ld + cols; }

/* ---- the shared-memory tiled kernel ---- */

typedef struct tiled_config {
    uint32_t wx, wy, tm, tn, bk;
} tiled_config;

/* 16 x 16 invocations of 4 x 4 blocks (64 x 64 tiles), fewer invocations and taller blocks
 * where the device allows only 128 per workgroup. 2 * BK * 64 floats of shared memory:
 * 8 KiB, within the 16 KiB every device has. */
static tiled_config pick_tiled(const vk_dev *d) {
    tiled_config c = {.wx = 16, .wy = 16, .tm = 4, .tn = 4, .bk = 16};
    if (d->caps.max_wg_invocations < 256) c.wy = 8, c.tm = 8;
    return c;
}

static kiln_status vk_gemm_tiled(vk_dev *d, const kiln_gemm_args *a, uint32_t ea, uint32_t eb) {
    tiled_config cfg = pick_tiled(d);
    gemm_tiled_push p = {.m = vk_u32(a->m),
                         .n = vk_u32(a->n),
                         .k = vk_u32(a->k),
                         .lda = vk_u32(a->lda),
                         .ldb = vk_u32(a->ldb),
                         .ldc = vk_u32(a->ldc),
                         .stride_a = vk_u32(a->stride_a),
                         .stride_b = vk_u32(a->stride_b),
                         .stride_c = vk_u32(a->stride_c),
                         .alpha = a->alpha,
                         .beta = a->beta};
    /* gemm_tiled.comp's specialization constants, by constant_id */
    vk_launch l = {.shader = VK_SHADER_gemm_tiled,
                   .n_ops = VK_OPS(p),
                   .push = &p,
                   .push_bytes = sizeof p,
                   .spec = {cfg.wx, cfg.wy, cfg.tm, cfg.tn, cfg.bk, a->trans_a != 0, a->trans_b != 0, ea == 2, eb == 2},
                   .n_spec = 9};
    int64_t a_one = a->k > 0 ? (a->trans_a ? extent(a->k, a->m, a->lda) : extent(a->m, a->k, a->lda)) : 0;
    int64_t b_one = a->k > 0 ? (a->trans_b ? extent(a->n, a->k, a->ldb) : extent(a->k, a->n, a->ldb)) : 0;
    int64_t c_one = extent(a->m, a->n, a->ldc);
    l.groups[0] = vk_div_up((uint64_t)a->n, cfg.wx * cfg.tn);
    l.groups[1] = vk_div_up((uint64_t)a->m, cfg.wy * cfg.tm);
    int64_t max_z = d->caps.max_wg_count[2];
    for (int64_t b0 = 0; b0 < a->batch; b0 += max_z) {
        int64_t nb = a->batch - b0 < max_z ? a->batch - b0 : max_z;
        kiln_ref ra = a->a, rb = a->b, rc = a->c;
        ra.off += (size_t)(b0 * a->stride_a) * ea;
        rb.off += (size_t)(b0 * a->stride_b) * eb;
        rc.off += (size_t)(b0 * a->stride_c) * 4;
        l.ops[VK_OP(gemm_tiled, a)] = vk_in(ra, (nb - 1) * a->stride_a + a_one, ea);
        l.ops[VK_OP(gemm_tiled, b)] = vk_in(rb, (nb - 1) * a->stride_b + b_one, eb);
        l.ops[VK_OP(gemm_tiled, c)] = vk_out(rc, (nb - 1) * a->stride_c + c_one, 4);
        l.ops[VK_OP(gemm_tiled, bias)] = vk_in(a->bias, a->n, 4);
        l.groups[2] = (uint32_t)nb;
        p.batch = (u32)nb;
        kiln_status s = vk_dispatch(d, &l);
        if (s) return s;
    }
    return KILN_OK;
}

/* ---- the kernels for CPU devices ---- */

/* gemm_shuffle.comp for 8-lane subgroups (the lavapipe case), in two block shapes (rows x
 * columns per subgroup, and k per loop iteration): 32 x 64 with 12 k (gemm_shuffle) and
 * 16 x 64 with 8 k (gemm_shuffle16, shaders/variants.txt); engine/abi/kernel_abi.h has
 * them. k is padded to whole texels. */
#define SHUFFLE_CB (KILN_ABI_VK_SHUFFLE_LANES * KILN_ABI_VK_SHUFFLE_LANE_COLS)
#define SHUFFLE_KSTEP 4

/* Packs op(X) of every batch (or once when shared) into `dst`, `panel` rows or columns per
 * panel. is_b: X is B and its panels are n-major with texels along n (gemm_packed.comp);
 * otherwise X is A, or B given as its transpose op(B)^T (trans flipped), with texels along
 * k (both operands of gemm_shuffle.comp). */
static kiln_status vk_gemm_pack(vk_dev *d, kiln_ref src, uint32_t elem, int is_b, int trans, int64_t rows, int64_t k,
                                int64_t ld, int64_t stride, int64_t batch, uint32_t panel, int64_t padded, int64_t kp,
                                kiln_ref dst) {
    int64_t nb = stride ? batch : 1;
    int64_t one = trans != is_b ? extent(k, rows, ld) : extent(rows, k, ld); /* stored extent */
    gemm_pack_push p = {.rows = vk_u32(rows),
                        .k = vk_u32(k),
                        .ld = vk_u32(ld),
                        .stride = vk_u32(stride),
                        .panels = vk_u32(padded / panel),
                        .kp = vk_u32(kp)};
    /* f32 or f16 in whole texels (RGBA32F, or RGBA16F which the fetch widens exactly):
     * gemm_pack_texel.comp reads it as texels (the whole last texel must lie in the
     * buffer's block, or the view would end short of it). Its grid: KILN_ABI_VK_PACK_TEXEL_STEPS
     * k steps per invocation by panels, or a texel's 4 rows per invocation by k steps
     * (transposing). */
    uint64_t at = src.buf->offset + src.off, texel_bytes = 4u * elem;
    int64_t texels = ((nb - 1) * stride + one + 3) / 4;
    uint32_t wg = vk_flat_wg(d);
    const uint64_t steps = KILN_ABI_VK_PACK_TEXEL_STEPS;
    uint64_t gx =
        trans ? vk_div_up((uint64_t)(padded / 4), wg) : vk_div_up((uint64_t)(kp / 4 + steps - 1) / steps * panel, wg);
    uint64_t gy = trans ? (uint64_t)(kp / 4) : (uint64_t)(padded / panel);
    if (!is_b && (elem == 4 || d->caps.texel_f16) && at % texel_bytes == 0 && ld % 4 == 0 && stride % 4 == 0 &&
        panel % 4 == 0 && texels <= (int64_t)d->caps.max_texel_elements &&
        at + (uint64_t)texels * texel_bytes <= src.buf->block->size && gx <= d->caps.max_wg_count[0] &&
        gy <= d->caps.max_wg_count[1] && (uint64_t)nb <= d->caps.max_wg_count[2]) {
        vk_launch l = {
            .shader = VK_SHADER_gemm_pack_texel, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p, .n_spec = 3};
        l.spec[0] = wg;
        l.spec[1] = panel;
        l.spec[2] = (uint32_t)(trans != 0);
        l.ops[VK_OP(gemm_pack_texel, src)] = elem == 4 ? vk_texels(src, texels) : vk_texels_f16(src, texels);
        l.ops[VK_OP(gemm_pack_texel, dst)] = vk_out(dst, nb * padded * kp / 4, 16);
        l.groups[0] = (uint32_t)gx;
        l.groups[1] = (uint32_t)gy;
        l.groups[2] = vk_u32(nb);
        return vk_dispatch(d, &l);
    }
    vk_launch l = {.shader = VK_SHADER_gemm_pack, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p, .n_spec = 6};
    l.spec[0] = vk_flat_wg(d);
    l.spec[1] = panel;
    l.spec[2] = (uint32_t)is_b;
    l.spec[3] = (uint32_t)(trans != 0);
    l.spec[4] = (uint32_t)(elem == 2);
    /* whole aligned float4 rows of the source: see VEC4 in gemm_pack.comp */
    int64_t contiguous = is_b ? rows : k; /* N for B, K for A */
    l.spec[5] = (uint32_t)(elem == 4 && !trans && at % 16 == 0 && ld % 4 == 0 && stride % 4 == 0 && contiguous % 4 == 0);
    l.ops[VK_OP(gemm_pack, src)] = vk_in(src, (nb - 1) * stride + one, elem);
    l.ops[VK_OP(gemm_pack, dst)] = vk_out(dst, nb * padded * kp / 4, 16);
    l.groups[0] = vk_div_up((uint64_t)(kp * panel / 4), l.spec[0]);
    l.groups[1] = vk_u32(padded / panel);
    l.groups[2] = vk_u32(nb);
    if (l.groups[1] > d->caps.max_wg_count[1] || l.groups[2] > d->caps.max_wg_count[2] ||
        l.groups[0] > d->caps.max_wg_count[0])
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "vulkan gemm: operand too large to pack");
    return vk_dispatch(d, &l);
}

/* The variants (KILN_VK_GEMM=tiled|packed|shuffle|shuffle16|gemv forces one where it applies, for
 * tests and measurements). */
typedef enum { GEMM_TILED = 0, GEMM_PACKED, GEMM_SHUFFLE, GEMM_SHUFFLE16, GEMM_GEMV } gemm_variant;
#define N_GEMM_VARIANTS 5

/* The two gemm_shuffle shapes: the shader build and its rows per block. */
typedef struct shuffle_shape {
    vk_shader_id shader;
    int64_t rows;
} shuffle_shape;
static const shuffle_shape SHUFFLE_SHAPES[N_GEMM_VARIANTS] = {
    [GEMM_SHUFFLE] = {.shader = VK_SHADER_gemm_shuffle, .rows = KILN_ABI_VK_SHUFFLE_ROWS},
    [GEMM_SHUFFLE16] = {.shader = VK_SHADER_gemm_shuffle16, .rows = KILN_ABI_VK_SHUFFLE16_ROWS},
};

/* Whether packed operands of these shapes fit the device: texel-buffer size, 32-bit
 * texel indices, and the packing grid. r and c are the panel widths of A and B. */
static int packed_fits(const vk_dev *d, const kiln_gemm_args *a, int64_t r, int64_t c, int64_t kstep) {
    int64_t kp = kiln_round_up(a->k, kstep);
    int64_t ba = a->stride_a ? a->batch : 1, bb = a->stride_b ? a->batch : 1;
    int64_t pa = kiln_round_up(a->m, r) * kp * ba, pb = kiln_round_up(a->n, c) * kp * bb;
    int64_t limit = (int64_t)d->caps.max_texel_elements * 4;
    if ((int64_t)d->max_operand_bytes / 4 < limit) limit = (int64_t)d->max_operand_bytes / 4;
    const uint32_t *g = d->caps.max_wg_count;
    int grid_ok = kiln_round_up(a->m, r) / r <= g[1] && kiln_round_up(a->n, c) / c <= g[1] && ba <= g[2] &&
                  bb <= g[2] && kp * r / 4 / 64 < g[0] && kp * c / 4 / 64 < g[0];
    return pa <= limit && pb <= limit && grid_ok;
}

static int variant_applies(const vk_dev *d, const kiln_gemm_args *a, gemm_variant v) {
    switch (v) {
    case GEMM_TILED:
        return 1;
    case GEMM_GEMV:
        return vk_gemv_applies(d, a);
    case GEMM_PACKED:
        return a->k > 0 &&
               packed_fits(d, a, KILN_ABI_VK_PACKED_ROWS, KILN_ABI_VK_PACKED_COLS, KILN_ABI_VK_PACKED_KSTEP);
    case GEMM_SHUFFLE:
    case GEMM_SHUFFLE16:
        /* the workgroup is one subgroup of exactly KILN_ABI_VK_SHUFFLE_LANES lanes */
        return a->k > 0 && d->caps.subgroup_shuffle && d->caps.subgroup_size == KILN_ABI_VK_SHUFFLE_LANES &&
               d->caps.max_wg_invocations >= KILN_ABI_VK_SHUFFLE_LANES &&
               packed_fits(d, a, SHUFFLE_SHAPES[v].rows, SHUFFLE_CB, SHUFFLE_KSTEP);
    }
    return 0;
}

/* Which gemm_shuffle shape suits the CPU that runs the device's shaders (a CPU device is
 * this host). Measured at 1024^3 (docs/benchmarks.md, "GEMM, Vulkan"): on an AMD Zen 4
 * the 16-row shape does 40-45 GFLOP per CPU-second against 36-39 for the 32-row one, whose
 * ~45 KiB loop body likely overflows Zen's micro-op cache where the 16-row one's fits;
 * on an Intel Xeon (AVX-512) the 32-row shape was the best of seven measured. */
static gemm_variant host_shuffle_variant(void) {
    return kiln_cpu()->amd ? GEMM_SHUFFLE16 : GEMM_SHUFFLE;
}

int vk_gemm_fits(const vk_dev *d, const kiln_gemm_args *a) {
    int64_t bytes[3], limit = (int64_t)d->max_operand_bytes;
    vk_gemm_spans(a, bytes);
    if (bytes[0] > limit || bytes[1] > limit || bytes[2] > limit) return 0;
    if (vk_gemv_applies(d, a)) return 1;
    if (d->dclass != VK_CLASS_CPU || a->k == 0 || a->m * a->n * a->k * a->batch < PACKED_MIN_WORK) return 1;
    /* the packed kernels' panels must fit too, or the product would fall to the tiled one,
     * ten times slower on a CPU device */
    return variant_applies(d, a, host_shuffle_variant()) || variant_applies(d, a, GEMM_PACKED);
}

static const char *const VARIANT_NAMES[N_GEMM_VARIANTS] = {"tiled", "packed", "shuffle", "shuffle16", "gemv"};

/* The variants this device can run at all (shapes aside): the shuffle kernels need
 * subgroups of exactly their width. */
int vk_gemm_variants(void *dev, const char **names, int cap) {
    const vk_dev *d = vk_of(dev);
    int n = 0, shuffle = d->caps.subgroup_shuffle && d->caps.subgroup_size == KILN_ABI_VK_SHUFFLE_LANES &&
                         d->caps.max_wg_invocations >= KILN_ABI_VK_SHUFFLE_LANES;
    for (int v = 0; v < N_GEMM_VARIANTS && n < cap; v++)
        if (shuffle || (v != GEMM_SHUFFLE && v != GEMM_SHUFFLE16)) names[n++] = VARIANT_NAMES[v];
    return n;
}

kiln_status vk_set_gemm_variant(void *dev, const char *name) {
    vk_dev *d = vk_of(dev);
    d->gemm_force[0] = 0;
    if (!name || !*name) return KILN_OK;
    for (int v = 0; v < N_GEMM_VARIANTS; v++)
        if (!strcmp(name, VARIANT_NAMES[v])) {
            snprintf(d->gemm_force, sizeof d->gemm_force, "%s", name);
            return KILN_OK;
        }
    return kiln_set_error(KILN_ERR_ARGUMENT, "vulkan: no GEMM variant %s (tiled, packed, shuffle, shuffle16, gemv)",
                          name);
}

static gemm_variant pick_variant(const vk_dev *d, const kiln_gemm_args *a) {
    /* forced by kiln_set_gemm_variant, else by KILN_VK_GEMM; a variant that cannot run
     * this product leaves the choice to the rules below */
    const char *force = d->gemm_force[0] ? d->gemm_force : getenv("KILN_VK_GEMM");
    if (force && *force) {
        for (int v = 0; v < N_GEMM_VARIANTS; v++)
            if (!strcmp(force, VARIANT_NAMES[v]) && variant_applies(d, a, (gemm_variant)v)) return (gemm_variant)v;
    }
    /* a few rows of C: B streamed once (the packing or staging of all of B would cost more
     * than the product) */
    if (variant_applies(d, a, GEMM_GEMV)) return GEMM_GEMV;
    if (d->dclass != VK_CLASS_CPU) return GEMM_TILED;
    /* gemm_shuffle beats the tiled kernel on lavapipe from 16^3 up (0.16 ms against 0.21,
     * 3.2x at 64^3, 10-20x on thin products like 1 x 1024 x 1024); gemm_packed needs
     * more work to pay for its packing */
    gemm_variant shuffle = host_shuffle_variant();
    if (variant_applies(d, a, shuffle)) return shuffle;
    if (a->m * a->n * a->k * a->batch >= PACKED_MIN_WORK && variant_applies(d, a, GEMM_PACKED)) return GEMM_PACKED;
    return GEMM_TILED;
}

/* Packs both operands (A with r-row panels; B n-major with c-column panels, or, when
 * b_like_a, as op(B)^T like A), runs `shader` (specialization constants spec[0..n_spec))
 * over the r x c blocks, `per_group` blocks per workgroup, and releases the panels. */
static kiln_status gemm_on_panels(vk_dev *d, const kiln_gemm_args *a, uint32_t ea, uint32_t eb, vk_shader_id shader,
                                  int64_t r, int64_t c, int64_t kstep, int b_like_a, uint32_t per_group,
                                  const uint32_t *spec, int n_spec) {
    int64_t kp = kiln_round_up(a->k, kstep), mp = kiln_round_up(a->m, r), np = kiln_round_up(a->n, c);
    int64_t ba = a->stride_a ? a->batch : 1, bb = a->stride_b ? a->batch : 1;
    kiln_ref pa = {.buf = NULL}, pb = {.buf = NULL};
    kiln_status s = vk_scratch(d, (size_t)(ba * mp * kp) * 4, &pa);
    if (!s) s = vk_scratch(d, (size_t)(bb * np * kp) * 4, &pb);
    if (!s)
        s = vk_gemm_pack(d, a->a, ea, 0, a->trans_a, a->m, a->k, a->lda, a->stride_a, a->batch, (uint32_t)r, mp, kp,
                         pa);
    if (!s && b_like_a) /* op(B)^T[n][k] = op(B)[k][n]: stored k-major unless B is transposed */
        s = vk_gemm_pack(d, a->b, eb, 0, !a->trans_b, a->n, a->k, a->ldb, a->stride_b, a->batch, (uint32_t)c, np, kp,
                         pb);
    else if (!s)
        s = vk_gemm_pack(d, a->b, eb, 1, a->trans_b, a->n, a->k, a->ldb, a->stride_b, a->batch, (uint32_t)c, np, kp,
                         pb);
    if (!s) {
        gemm_packed_push p = {.m = vk_u32(a->m),
                              .n = vk_u32(a->n),
                              .mp = vk_u32(mp),
                              .np = vk_u32(np),
                              .kp = vk_u32(kp),
                              .ldc = vk_u32(a->ldc),
                              .stride_a = vk_u32(a->stride_a ? mp * kp / 4 : 0),
                              .stride_b = vk_u32(a->stride_b ? np * kp / 4 : 0),
                              .stride_c = vk_u32(a->stride_c),
                              .alpha = a->alpha,
                              .beta = a->beta,
                              .batch = vk_u32(a->batch)};
        vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p, .n_spec = n_spec};
        for (int i = 0; i < n_spec; i++) l.spec[i] = spec[i];
        /* gemm_packed's operands; gemm_shuffle binds the same four (its c as c4) */
        l.ops[VK_OP(gemm_packed, pa)] = vk_texels(pa, ba * mp * kp / 4);
        l.ops[VK_OP(gemm_packed, pb)] = vk_texels(pb, bb * np * kp / 4);
        l.ops[VK_OP(gemm_packed, c)] = vk_out(a->c, (a->batch - 1) * a->stride_c + extent(a->m, a->n, a->ldc), 4);
        l.ops[VK_OP(gemm_packed, bias)] = vk_in(a->bias, a->n, 4);
        uint64_t blocks = (uint64_t)(mp / r) * (uint64_t)(np / c) * (uint64_t)a->batch;
        vk_grid_1d(d, (blocks + per_group - 1) / per_group, l.groups);
        s = vk_dispatch(d, &l);
    }
    if (pa.buf) vk_buf_release(d, pa.buf);
    if (pb.buf) vk_buf_release(d, pb.buf);
    return s;
}

/* One block per workgroup (= one subgroup). The epilogue is specialized: every load or
 * store in it costs a loop over the lanes, even where a branch skips it (gemm_shuffle.comp). */
static kiln_status vk_gemm_shuffle(vk_dev *d, const kiln_gemm_args *a, uint32_t ea, uint32_t eb, gemm_variant v) {
    uint64_t c_at = a->c.buf->offset + a->c.off;
    int vec4_c = a->n % SHUFFLE_CB == 0 && c_at % 16 == 0 && a->ldc % 4 == 0 && a->stride_c % 4 == 0;
    uint32_t spec[3] = {a->beta != 0.0f, vk_has(a->bias), (uint32_t)vec4_c};
    const shuffle_shape *shape = &SHUFFLE_SHAPES[v];
    return gemm_on_panels(d, a, ea, eb, shape->shader, shape->rows, SHUFFLE_CB, SHUFFLE_KSTEP, 1, 1, spec, 3);
}

/* One SIMD vector (lavapipe's 8 lanes) per workgroup: many small workgroups balance the
 * driver's threads, and the driver compiles the kernel much faster for one vector than for
 * 16 or more invocations. */
static kiln_status vk_gemm_packed(vk_dev *d, const kiln_gemm_args *a, uint32_t ea, uint32_t eb) {
    uint32_t per_group = 8; /* specialization constant 0: the workgroup size */
    return gemm_on_panels(d, a, ea, eb, VK_SHADER_gemm_packed, KILN_ABI_VK_PACKED_ROWS, KILN_ABI_VK_PACKED_COLS,
                          KILN_ABI_VK_PACKED_KSTEP, 0, per_group, &per_group, 1);
}

kiln_status vk_gemm_piece(void *dev, const kiln_gemm_args *a) {
    vk_dev *d = vk_of(dev);
    if (a->c_dtype != KILN_F32) return kiln_set_error(KILN_ERR_DTYPE, "vulkan gemm: output must be f32");
    if ((a->a_dtype != KILN_F32 && a->a_dtype != KILN_F16) || (a->b_dtype != KILN_F32 && a->b_dtype != KILN_F16))
        return kiln_set_error(KILN_ERR_DTYPE, "vulkan gemm: inputs must be f32 or f16, got %s and %s",
                              kiln_dtype_name(a->a_dtype), kiln_dtype_name(a->b_dtype));
    if (a->m <= 0 || a->n <= 0 || a->batch <= 0) return KILN_OK;
    uint32_t ea = a->a_dtype == KILN_F16 ? 2 : 4, eb = a->b_dtype == KILN_F16 ? 2 : 4;
    gemm_variant v = pick_variant(d, a);
    if (v == GEMM_GEMV) return vk_gemm_gemv(d, a, ea, eb);
    if (vk_gemm_coopmat_applies(d, a)) return vk_gemm_coopmat(d, a);
    switch (v) {
    case GEMM_SHUFFLE:
    case GEMM_SHUFFLE16:
        return vk_gemm_shuffle(d, a, ea, eb, v);
    case GEMM_PACKED:
        return vk_gemm_packed(d, a, ea, eb);
    case GEMM_TILED:
    case GEMM_GEMV: /* taken above */
        break;
    }
    return vk_gemm_tiled(d, a, ea, eb);
}
