/* Kernel launches: argument lists, enqueueing, and the optional profiler.
 *
 * A host wrapper reads
 *     cl_call c = cl_begin(d, "softmax", "softmax_fwd");
 *     cl_arg_op(&c, CL_OP(softmax_fwd, x), a->x, 4); cl_arg_i64(&c, a->tk); ...
 *     return cl_run_rows(&c, rows);
 * Errors (a kernel that does not compile, a bad argument) stick in the cl_call and are
 * returned by cl_run, so wrappers need no check after each argument.
 *
 * A kernel's parameter list is written in cl/<family>.cl; its buffer operands are declared
 * in order in core/kernel_slots.def (checked against the .cl at configure time), and the
 * host wrapper passes each as cl_arg_op(&c, CL_OP(kernel, operand), ...), which refuses an
 * operand at another parameter than the generated index. cl_run also checks that the
 * wrapper set as many arguments as the kernel takes (CL_KERNEL_NUM_ARGS, read once per
 * kernel) and refuses the call with one error naming the kernel and both counts, rather
 * than enqueueing a kernel with unset or shifted arguments.
 *
 * KILN_CL_PROFILE=1 creates the queue with profiling, keeps an event per kernel, and at
 * close prints each kernel's count and total device time to stderr. KILN_CL_TRACE=1 prints
 * every kernel as it is enqueued (to place oclgrind's messages, which follow each kernel). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl/cl_internal.h"

static cl_call begin(cl_dev *d, const char *family, const char *name, int f16) {
    cl_call c = {.dev = d, .family = family, .name = name, .err = CL_SUCCESS, .status = KILN_OK};
    const cl_kernel_entry *k = cl_find_kernel(d, family, name, f16);
    if (!k) {
        c.status = kiln_error_status() ? kiln_error_status() : KILN_ERR_DEVICE;
        return c;
    }
    c.kernel = k->kernel;
    c.num_args = k->num_args;
    return c;
}

cl_call cl_begin(cl_dev *d, const char *family, const char *name) { return begin(d, family, name, 0); }

cl_call cl_begin_dt(cl_dev *d, const char *family, const char *name, kiln_dtype dtype) {
    if (dtype != KILN_F32 && dtype != KILN_F16) {
        kiln_status s = kiln_set_error(KILN_ERR_DTYPE,
                                       "opencl %s: operands must be f32 or f16, not %s", name,
                                       kiln_dtype_name(dtype));
        return (cl_call){.dev = d, .family = family, .name = name, .err = CL_SUCCESS, .status = s};
    }
    return begin(d, family, name, dtype == KILN_F16);
}

static void set_arg(cl_call *c, size_t size, const void *value) {
    if (c->status || c->err) return;
    /* one past the kernel's last parameter is only counted: cl_run reports the surplus */
    if (c->n < c->num_args) c->err = clSetKernelArg(c->kernel, c->n, size, value);
    c->n++;
}

void cl_arg_ref(cl_call *c, kiln_ref r, size_t elem_size) {
    if (c->status || c->err || !elem_size) return; /* 0: a bad dtype, already an error */
    cl_mem mem = c->dev->dummy;
    cl_ulong off = 0;
    if (r.buf) {
        mem = r.buf->block->mem;
        off = (cl_ulong)((r.buf->off + r.off) / elem_size);
    }
    set_arg(c, sizeof mem, &mem);
    set_arg(c, sizeof off, &off);
}

void cl_arg_op(cl_call *c, cl_operand op, kiln_ref r, size_t elem_size) {
    if (!c->status && !c->err && c->n != op.param)
        c->status = kiln_set_error(KILN_ERR_ARGUMENT,
                                   "opencl: kernel %s in cl/%s.cl takes operand %s at parameter %u but its "
                                   "host wrapper passes it as argument %u (core/kernel_slots.def)",
                                   c->name, c->family, op.name, op.param, c->n);
    cl_arg_ref(c, r, elem_size);
}

void cl_arg_mem(cl_call *c, cl_mem mem, size_t elem_off) {
    cl_ulong off = elem_off;
    set_arg(c, sizeof mem, &mem);
    set_arg(c, sizeof off, &off);
}

/* each scalar as the OpenCL C type of its parameter (float, uint, int, long, ulong) */
void cl_arg_f32(cl_call *c, float v) { set_arg(c, sizeof(cl_float), &(cl_float){v}); }
void cl_arg_u32(cl_call *c, uint32_t v) { set_arg(c, sizeof(cl_uint), &(cl_uint){v}); }
void cl_arg_i32(cl_call *c, int v) { set_arg(c, sizeof(cl_int), &(cl_int){v}); }
void cl_arg_i64(cl_call *c, int64_t v) { set_arg(c, sizeof(cl_long), &(cl_long){v}); }
void cl_arg_u64(cl_call *c, uint64_t v) { set_arg(c, sizeof(cl_ulong), &(cl_ulong){v}); }
void cl_arg_local(cl_call *c, size_t bytes) { set_arg(c, bytes, NULL); }

void cl_track(cl_dev *d, cl_event ev, const char *name) {
    if (d->n_prof_pending == d->cap_prof_pending) {
        int cap = d->cap_prof_pending ? 2 * d->cap_prof_pending : 256;
        cl_prof_pending *grown = realloc(d->prof_pending, (size_t)cap * sizeof *grown);
        if (!grown) {
            clReleaseEvent(ev); /* profiling is best effort */
            return;
        }
        d->prof_pending = grown;
        d->cap_prof_pending = cap;
    }
    d->prof_pending[d->n_prof_pending++] = (cl_prof_pending){.event = ev, .name = name};
    /* long runs without a sync: fold finished events in now and then */
    if (d->n_prof_pending >= 4096) cl_prof_collect(d);
}

kiln_status cl_run(cl_call *c, int dims, const size_t *global, const size_t *local) {
    if (c->status) return c->status;
    if (c->err != CL_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "clSetKernelArg %u of %s", c->n - 1, c->name);
        return cl_fail(c->err, what);
    }
    if (c->n != c->num_args)
        return kiln_set_error(KILN_ERR_DEVICE,
                              "opencl: kernel %s in cl/%s.cl takes %u arguments but its host "
                              "wrapper set %u: the two parameter lists disagree",
                              c->name, c->family, c->num_args, c->n);
    size_t g[3];
    for (int i = 0; i < dims; i++) {
        g[i] = global[i];
        if (local && local[i]) g[i] = (g[i] + local[i] - 1) / local[i] * local[i];
        if (g[i] == 0) return KILN_OK; /* nothing to do */
    }
    cl_dev *d = c->dev;
    if (d->trace)
        fprintf(stderr, "kiln opencl: %s [%zu, %zu, %zu]\n", c->name, g[0], dims > 1 ? g[1] : 1,
                dims > 2 ? g[2] : 1);
    cl_event ev = NULL;
    cl_int err = clEnqueueNDRangeKernel(d->queue, c->kernel, (cl_uint)dims, NULL, g, local, 0, NULL,
                                        d->profile ? &ev : NULL);
    if (err != CL_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "enqueueing kernel %s", c->name);
        return cl_fail(err, what);
    }
    if (ev) cl_track(d, ev, c->name);
    return KILN_OK;
}

kiln_status cl_run_1d(cl_call *c, size_t n) {
    size_t local = c->dev->wg_elem;
    return cl_run(c, 1, &n, &local);
}

kiln_status cl_run_rows(cl_call *c, size_t rows) {
    size_t local = c->dev->wg, global = rows * local;
    return cl_run(c, 1, &global, &local);
}

kiln_status cl_run_column_tiles(cl_call *c, int64_t cols) {
    size_t wg = c->dev->wg, tile = wg < KILN_ABI_CL_COLUMN_TILE ? wg : KILN_ABI_CL_COLUMN_TILE;
    return cl_run_rows(c, ((size_t)cols + tile - 1) / tile);
}

size_t cl_groups_for(const cl_dev *d, size_t n) {
    size_t groups = (n + d->wg - 1) / d->wg;
    /* enough groups to fill the device a few times over; more only adds partial sums */
    size_t cap = (size_t)(d->compute_units ? d->compute_units : 1) * (d->is_gpu ? 8 : 4);
    if (cap > 1024) cap = 1024;
    if (groups > cap) groups = cap;
    return groups ? groups : 1;
}

void cl_prof_collect(cl_dev *d) {
    int kept = 0;
    for (int i = 0; i < d->n_prof_pending; i++) {
        cl_prof_pending *p = &d->prof_pending[i];
        cl_ulong t0 = 0, t1 = 0;
        cl_int status = CL_COMPLETE;
        clGetEventInfo(p->event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
        if (status > CL_COMPLETE) { /* still queued or running */
            d->prof_pending[kept++] = *p;
            continue;
        }
        if (status == CL_COMPLETE &&
            clGetEventProfilingInfo(p->event, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL) == CL_SUCCESS &&
            clGetEventProfilingInfo(p->event, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) == CL_SUCCESS) {
            int j = 0;
            while (j < d->n_prof_totals && strcmp(d->prof_totals[j].name, p->name)) j++;
            if (j == d->n_prof_totals) {
                if (d->n_prof_totals == d->cap_prof_totals) {
                    int cap = d->cap_prof_totals ? 2 * d->cap_prof_totals : 32;
                    cl_prof_total *grown = realloc(d->prof_totals, (size_t)cap * sizeof *grown);
                    if (!grown) {
                        clReleaseEvent(p->event);
                        continue;
                    }
                    d->prof_totals = grown;
                    d->cap_prof_totals = cap;
                }
                d->prof_totals[j] = (cl_prof_total){.name = p->name, .min_ms = 1e30};
                d->n_prof_totals++;
            }
            double ms = (double)(t1 - t0) * 1e-6;
            d->prof_totals[j].count++;
            d->prof_totals[j].ms += ms;
            if (ms < d->prof_totals[j].min_ms) d->prof_totals[j].min_ms = ms;
        }
        clReleaseEvent(p->event);
    }
    d->n_prof_pending = kept;
}

static int by_total_ms_descending(const void *a, const void *b) {
    double x = ((const cl_prof_total *)a)->ms, y = ((const cl_prof_total *)b)->ms;
    return x < y ? 1 : x > y ? -1 : 0;
}

void cl_prof_report(cl_dev *d) {
    if (!d->profile || !d->n_prof_totals) return;
    qsort(d->prof_totals, (size_t)d->n_prof_totals, sizeof *d->prof_totals,
          by_total_ms_descending);
    double total = 0;
    for (int i = 0; i < d->n_prof_totals; i++) total += d->prof_totals[i].ms;
    fprintf(stderr, "kiln opencl profile on %s (device time per kernel):\n", d->name);
    fprintf(stderr, "  %-24s %8s %12s %10s %10s %6s\n", "kernel", "calls", "total ms", "avg us",
            "min us", "%");
    for (int i = 0; i < d->n_prof_totals; i++) {
        cl_prof_total *t = &d->prof_totals[i];
        fprintf(stderr, "  %-24s %8ld %12.3f %10.1f %10.1f %6.1f\n", t->name, t->count, t->ms,
                1e3 * t->ms / (double)t->count, 1e3 * t->min_ms, total > 0 ? 100 * t->ms / total : 0);
    }
}
