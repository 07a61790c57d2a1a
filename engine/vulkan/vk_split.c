/* Tensors larger than one binding: the backend-table slots of the flat kernels, which run
 * their kernel once when every operand fits one binding (the usual case) and otherwise
 * piece by piece, each piece a contiguous run of elements whose every operand fits.
 *
 * Why: a storage-buffer binding addresses at most maxStorageBufferRange bytes (128 MiB on
 * lavapipe and at Vulkan's minimum), while one tensor may be larger: GPT-2 small's f32 token
 * table is 154 MB, and so are its gradient and both Adam moments. Each piece is an ordinary
 * dispatch on sub-views (kiln_ref offsets), so the kernels themselves are unchanged; the
 * hazard tracker orders pieces that touch the same bytes.
 *
 * The embedding (vk_embedding.c), the GEMM (vk_gemm_split.c), the cross-entropy (vk_cross_entropy.c,
 * GPT-2's logits at context 1024 are 206 MB) and the softmax (vk_softmax.c, attention
 * scores) split along their own axes. vk_dispatch refuses any other operand larger than a
 * binding with a one-line error. KILN_VK_MAX_BINDING lowers the
 * limit for the tests (vk_instance.c). */
#include "vk_internal.h"

int64_t vk_piece_elems(const vk_dev *d, uint32_t widest, int64_t granule) {
    int64_t n = (int64_t)(d->max_operand_bytes / widest);
    n = n / granule * granule;
    return n > granule ? n : granule;
}

kiln_status vk_rows_per_piece(const vk_dev *d, int64_t count, int64_t row_bytes, int64_t *rows) {
    *rows = count;
    if (row_bytes == 0 || count * row_bytes <= (int64_t)d->max_operand_bytes) return KILN_OK;
    *rows = (int64_t)d->max_operand_bytes / row_bytes;
    if (*rows == 0)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "vulkan: one row of %lld bytes exceeds one binding of %s",
                              (long long)row_bytes, d->name);
    return KILN_OK;
}

/* Runs part(d, args, start, count) over [0, n) in pieces of at most `piece` elements. */
typedef kiln_status (*part_fn)(vk_dev *d, const void *args, int64_t start, int64_t count);

static kiln_status in_pieces(vk_dev *d, const void *args, int64_t n, int64_t piece, part_fn part) {
    kiln_status s = KILN_OK;
    for (int64_t start = 0; !s && start < n; start += piece) s = part(d, args, start, n - start < piece ? n - start : piece);
    return s;
}

/* f16 kernels write whole 32-bit words: pieces start on an even element, so no two pieces
 * write the same word. */
#define EVEN 2

/* The table slot vk_<kernel> of a flat kernel: <kernel>_part over its n elements, in
 * pieces that fit one binding (4 bytes per element at most). */
#define FLAT_SLOT(kernel, args_t)                                                    \
    kiln_status vk_##kernel(void *dev, const args_t *a) {                      \
        vk_dev *d = vk_of(dev);                                                      \
        return in_pieces(d, a, a->n, vk_piece_elems(d, 4, EVEN), kernel##_part);     \
    }

static kiln_status fill_part(vk_dev *d, const void *args, int64_t start, int64_t count) {
    kiln_fill_args a = *(const kiln_fill_args *)args;
    a.dst = vk_ref_at(a.dst, start * kiln_dtype_size(a.dtype));
    a.n = count;
    return vk_fill_piece(d, &a);
}

static kiln_status cast_part(vk_dev *d, const void *args, int64_t start, int64_t count) {
    kiln_cast_args a = *(const kiln_cast_args *)args;
    a.src = vk_ref_at(a.src, start * kiln_dtype_size(a.src_dtype));
    a.dst = vk_ref_at(a.dst, start * kiln_dtype_size(a.dst_dtype));
    a.n = count;
    return vk_cast_piece(d, &a);
}

static kiln_status axpby_part(vk_dev *d, const void *args, int64_t start, int64_t count) {
    kiln_axpby_args a = *(const kiln_axpby_args *)args;
    size_t es = kiln_dtype_size(a.dtype);
    a.x = vk_ref_at(a.x, start * es);
    a.y = vk_ref_at(a.y, start * es);
    a.n = count; /* num and den are scalars every piece reads */
    return vk_axpby_piece(d, &a);
}

/* b broadcasts with period nb: a piece that starts on a multiple of nb reads b from its
 * start; without broadcast (nb == n) b moves with a. */
static kiln_status binary_part(vk_dev *d, const void *args, int64_t start, int64_t count) {
    kiln_binary_args a = *(const kiln_binary_args *)args;
    size_t es = kiln_dtype_size(a.dtype);
    int broadcast = a.nb < a.n;
    a.a = vk_ref_at(a.a, start * es);
    a.out = vk_ref_at(a.out, start * es);
    if (!broadcast) a.b = vk_ref_at(a.b, start * es);
    a.n = count;
    if (!broadcast) a.nb = count;
    return vk_binary_piece(d, &a);
}

kiln_status vk_binary(void *dev, const kiln_binary_args *a) {
    vk_dev *d = vk_of(dev);
    int64_t piece = vk_piece_elems(d, 4, EVEN);
    if (a->nb < a->n && a->nb > 0) {
        /* whole periods of b per piece; a b too large for that is left to vk_dispatch */
        if (a->nb > piece) return vk_binary_piece(d, a);
        piece = piece / a->nb * a->nb;
    }
    return in_pieces(d, a, a->n, piece, binary_part);
}

static kiln_status act_part(vk_dev *d, const void *args, int64_t start, int64_t count, int backward) {
    kiln_act_args a = *(const kiln_act_args *)args;
    size_t es = kiln_dtype_size(a.dtype);
    a.x = vk_ref_at(a.x, start * es);
    a.y = vk_ref_at(a.y, start * es);
    a.dy = vk_ref_at(a.dy, start * es);
    a.dx = vk_ref_at(a.dx, start * es);
    a.n = count;
    return backward ? vk_act_bwd_piece(d, &a) : vk_act_fwd_piece(d, &a);
}
static kiln_status act_fwd_part(vk_dev *d, const void *args, int64_t start, int64_t count) {
    return act_part(d, args, start, count, 0);
}
static kiln_status act_bwd_part(vk_dev *d, const void *args, int64_t start, int64_t count) {
    return act_part(d, args, start, count, 1);
}

/* A sum overwrites out with its first piece and adds the others; a sum of squares always
 * adds (kiln_reduce_args). */
static kiln_status reduce_part(vk_dev *d, const void *args, int64_t start, int64_t count) {
    const kiln_reduce_args *a = args;
    kiln_ref x = vk_ref_at(a->x, start * kiln_dtype_size(a->dtype));
    if (a->square) return vk_reduce_sum(d, x, a->dtype, a->out, count, 1, 1.0f, 1);
    return vk_reduce_sum(d, x, a->dtype, a->out, count, 0, a->alpha, start > 0);
}

kiln_status vk_reduce(void *dev, const kiln_reduce_args *a) {
    vk_dev *d = vk_of(dev);
    if (a->n == 0) return reduce_part(d, a, 0, 0); /* still writes the empty sum */
    return in_pieces(d, a, a->n, vk_piece_elems(d, 4, EVEN), reduce_part);
}

static kiln_status check_finite_part(vk_dev *d, const void *args, int64_t start, int64_t count) {
    kiln_finite_args a = *(const kiln_finite_args *)args;
    a.x = vk_ref_at(a.x, start * kiln_dtype_size(a.dtype));
    a.n = count; /* the flag is only ever set, so pieces compose */
    return vk_check_finite_piece(d, &a);
}

static kiln_status adam_part(vk_dev *d, const void *args, int64_t start, int64_t count) {
    kiln_adam_args a = *(const kiln_adam_args *)args;
    a.param = vk_ref_at(a.param, start * 4);
    a.grad = vk_ref_at(a.grad, start * kiln_dtype_size(a.grad_dtype));
    a.m = vk_ref_at(a.m, start * 4);
    a.v = vk_ref_at(a.v, start * 4);
    a.half_copy = vk_ref_at(a.half_copy, start * 2);
    a.n = count; /* coef and skip are scalars every piece reads */
    return vk_adam_piece(d, &a);
}

FLAT_SLOT(fill, kiln_fill_args)
FLAT_SLOT(cast, kiln_cast_args)
FLAT_SLOT(axpby, kiln_axpby_args)
FLAT_SLOT(act_fwd, kiln_act_args)
FLAT_SLOT(act_bwd, kiln_act_args)
FLAT_SLOT(check_finite, kiln_finite_args)
FLAT_SLOT(adam, kiln_adam_args)
