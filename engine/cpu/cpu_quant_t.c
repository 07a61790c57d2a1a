/* CPU transposed product with a quantized matrix (qmatmul_t, kiln_qmatmul_args):
 * y[m, k] = dy[m, n] W[n, k], the gradient of x through kiln_matmul_q.
 *
 * A task owns a tile of QT_COLS output columns (whole blocks: 8 of 32 values, or one
 * super-block of 256) and a run of activation rows. It walks W's rows in panels of QT_PANEL:
 * it dequantizes the panel's blocks of its tile once (kiln_dequantize_row, the reference
 * decoding) into the GEMM's packed B layout, a few hundred KiB at most and never the whole
 * matrix, and multiplies it with dy's matching columns using the GEMM's register-blocked
 * micro-kernel (cpu_gemm.h), the first panel overwriting y, the later ones adding to it. So
 * the product runs at the GEMM's speed, plus one decoding of W per run of rows. The tasks
 * write disjoint parts of y: no reduction between threads. */
#include <stdlib.h>

#include "cpu/cpu_f16.h"
#include "cpu/cpu_gemm.h"
#include "kiln/quant.h"

#define QT_COLS 256  /* columns per tile */
#define QT_PANEL 128 /* rows of W per panel: 128 KiB of f32 with QT_COLS */
#define QT_MIN_ROWS 48 /* activation rows a task takes at least, to amortize its decoding */

typedef struct qt_scratch {
    float *b;   /* QT_PANEL x QT_COLS, in NR-column panels (cpu_gemm.h's b panel) */
    float *a;   /* QT_PANEL x MR, dy's rows (cpu_gemm.h's a panel) */
    float *row; /* QT_COLS values of one row of W */
} qt_scratch;

/* Rows [r0, r0 + kc) of W, columns [c0, c0 + cols), into NR-column panels: panel jp holds
 * b[p * NR + j] = W(r0 + p, c0 + jp * NR + j), zero past the tile. */
static void pack_w_panel(const kiln_qmatmul_args *a, int64_t r0, int64_t kc, int64_t c0, int cols, int nr,
                         qt_scratch *s) {
    const kiln_qformat format = (kiln_qformat)a->format;
    const unsigned char *w = CPU_PTR(a->w, unsigned char);
    const size_t row_stride = (size_t)a->row_words * 4, block_bytes = kiln_qformat_block_bytes(format);
    const int64_t bv = (int64_t)kiln_qformat_block_values(format);
    const int panels = (cols + nr - 1) / nr;
    for (int64_t p = 0; p < kc; p++) {
        const unsigned char *blocks = w + (size_t)(r0 + p) * row_stride + (size_t)(c0 / bv) * block_bytes;
        kiln_dequantize_row(format, blocks, cols, s->row); /* whole blocks: cannot fail */
        for (int jp = 0; jp < panels; jp++) {
            float *dst = s->b + (size_t)jp * (size_t)(QT_PANEL * nr) + (size_t)p * (size_t)nr;
            for (int j = 0; j < nr; j++) dst[j] = jp * nr + j < cols ? s->row[jp * nr + j] : 0.0f;
        }
    }
}

/* dy rows [i0, i0 + mv), columns [r0, r0 + kc), into an MR-row panel a[p * MR + i]. */
static void pack_dy_panel(const float *dy, int64_t n, int64_t i0, int mv, int64_t r0, int64_t kc, int mr, float *dst) {
    for (int64_t p = 0; p < kc; p++)
        for (int i = 0; i < mr; i++) dst[p * mr + i] = i < mv ? dy[(i0 + i) * n + r0 + p] : 0.0f;
}

/* y's rows [i0, i1) and columns [c0, c0 + cols). */
static void qt_task(const kiln_qmatmul_args *a, const cpu_gemm_kernel *kn, int64_t i0, int64_t i1, int64_t c0,
                    int cols, qt_scratch *s) {
    const float *dy = CPU_PTR(a->x, float);
    float *y = CPU_PTR(a->y, float);
    const int64_t n = a->n, k = a->k;
    const int mr = kn->mr, nr = kn->nr, panels = (cols + nr - 1) / nr;
    for (int64_t r0 = 0; r0 < n; r0 += QT_PANEL) {
        const int64_t kc = n - r0 < QT_PANEL ? n - r0 : QT_PANEL;
        pack_w_panel(a, r0, kc, c0, cols, nr, s);
        const cpu_gemm_epilogue e = {.alpha = 1.0f, .beta = 0.0f, .first = r0 == 0};
        for (int64_t i = i0; i < i1; i += mr) {
            const int mv = (int)(i1 - i < mr ? i1 - i : mr);
            pack_dy_panel(dy, n, i, mv, r0, kc, mr, s->a);
            for (int jp = 0; jp < panels; jp++) {
                const int nv = cols - jp * nr < nr ? cols - jp * nr : nr;
                kn->run(kc, s->a, s->b + (size_t)jp * (size_t)(QT_PANEL * nr), y + i * k + c0 + jp * nr, k, mv, nv, &e);
            }
        }
    }
}

static kiln_status qmatmul_t_f32(const kiln_qmatmul_args *a) {
    const cpu_gemm_kernel *kn = cpu_gemm_active_kernel();
    const int64_t m = a->m, k = a->k, col_tiles = (k + QT_COLS - 1) / QT_COLS;
    if (m == 0) return KILN_OK;
    /* enough tasks for every thread, each with enough rows to pay for its decoding */
    const int64_t threads = cpu_max_threads(), want = (2 * threads + col_tiles - 1) / col_tiles;
    int64_t chunks = (m + QT_MIN_ROWS - 1) / QT_MIN_ROWS;
    if (chunks > want) chunks = want;
    if (chunks < 1) chunks = 1;
    const int64_t rows_per = (m + chunks - 1) / chunks, tasks = col_tiles * chunks;
    const size_t floats = (size_t)QT_PANEL * (size_t)(QT_COLS + kn->nr) + (size_t)QT_PANEL * (size_t)kn->mr + QT_COLS;
    int failed = 0;
#pragma omp parallel if (tasks > 1 && cpu_use_threads(m * a->n * k, 1 << 18)) reduction(| : failed)
    {
        float *mem = malloc(floats * sizeof *mem);
        qt_scratch s = {mem, mem ? mem + (size_t)QT_PANEL * (size_t)(QT_COLS + kn->nr) : NULL,
                        mem ? mem + (size_t)QT_PANEL * (size_t)(QT_COLS + kn->nr + kn->mr) : NULL};
        failed |= !mem;
#pragma omp for schedule(dynamic, 1)
        for (int64_t t = 0; t < tasks; t++) {
            if (!mem) continue;
            const int64_t c0 = (t % col_tiles) * QT_COLS, i0 = (t / col_tiles) * rows_per;
            const int64_t i1 = i0 + rows_per < m ? i0 + rows_per : m;
            if (i0 < i1) qt_task(a, kn, i0, i1, c0, (int)(k - c0 < QT_COLS ? k - c0 : QT_COLS), &s);
        }
        free(mem);
    }
    return failed ? kiln_set_error(KILN_ERR_MEMORY, "cpu qmatmul_t: out of host memory") : KILN_OK;
}

kiln_status cpu_qmatmul_t(void *dev, const kiln_qmatmul_args *a) {
    (void)dev;
    if (a->format < 0 || a->format >= KILN_QFORMAT_COUNT || a->format == KILN_Q8_K) /* Q8_K: activations only */
        return kiln_set_error(KILN_ERR_ARGUMENT, "cpu qmatmul_t: unknown weight format %d", a->format);
    if (a->dtype == KILN_F32) return qmatmul_t_f32(a);
    /* f16 gradients: the f32 kernel on widened copies (cpu_f16.h) */
    kiln_qmatmul_args w = *a;
    w.dtype = KILN_F32;
    cpu_widen s;
    cpu_widen_init(&s, a->dtype, "qmatmul_t");
    cpu_widen_operand(&s, &w.x, a->m * a->n, CPU_IN);
    cpu_widen_operand(&s, &w.y, a->m * a->k, CPU_OUT);
    return cpu_widen_finish(&s, s.status ? s.status : qmatmul_t_f32(&w));
}
