/* The bucketed gradient allreduce over MPI (see grad_sync.h). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/grad_sync.h"
#include "parallel/world.h"

typedef struct bucket {
    int first, count;   /* its leaves: order[first .. first + count) */
    int ready;          /* how many of them the backward has finished this step */
    size_t bytes;
    kiln_dtype dtype;   /* every leaf of a bucket has the same */
    unsigned char *host;
    MPI_Request request;
    int posted;
} bucket;

struct grad_sync {
    train_parallel par;
    trainer *t;
    int n;                /* leaves */
    int *order;           /* leaves in bucket order: the reverse of the parameter order */
    int *bucket_of;       /* leaf -> its bucket */
    size_t *offset;       /* leaf -> its bytes' place in its bucket */
    bucket *buckets;
    int n_buckets, next;  /* next: the first bucket not yet started this step */
    int notified;         /* leaves called ready this step */
    MPI_Op half_sum;
    grad_sync_stats stats;
};

/* f16 sums, each rounded to f16: MPI has no half type. */
static void half_sum(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++) b[i] = kiln_f32_to_f16(kiln_f16_to_f32(a[i]) + kiln_f16_to_f32(b[i]));
}

static kiln_status mpi_failed(int code, const char *what) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, text, &len);
    return kiln_set_error(KILN_ERR_STATE, "%s: %s", what, text);
}

/* Copies bucket b's gradients to the host and starts their sum over the ranks. */
static kiln_status start_bucket(grad_sync *g, bucket *b) {
    /* the copy waits for the queued backward work that computes the bucket: timed apart,
       it is computation, not the reduction's cost */
    double t0 = kiln_clock_wall();
    kiln_status s = kiln_sync(g->t->model.ctx);
    if (s) return s;
    double t1 = kiln_clock_wall();
    for (int k = b->first; k < b->first + b->count; k++) {
        kiln_tensor *grad = kiln_grad(g->t->leaves[g->order[k]]);
        size_t bytes = (size_t)kiln_numel(grad) * kiln_dtype_size(grad->dtype);
        s = kiln_download(grad, b->host + g->offset[g->order[k]], bytes);
        if (s) return s;
    }
    int half = b->dtype == KILN_F16;
    int count = (int)(b->bytes / kiln_dtype_size(b->dtype));
    int rc = MPI_Iallreduce(MPI_IN_PLACE, b->host, count, half ? MPI_UINT16_T : MPI_FLOAT,
                            half ? g->half_sum : MPI_SUM, MPI_COMM_WORLD, &b->request);
    if (rc != MPI_SUCCESS) return mpi_failed(rc, "MPI_Iallreduce");
    b->posted = 1;
    g->stats.device_s += t1 - t0;
    g->stats.stage_s += kiln_clock_wall() - t1;
    return KILN_OK;
}

static int begin(void *self, char *err, size_t errlen) {
    (void)err, (void)errlen;
    grad_sync *g = self;
    for (int i = 0; i < g->n_buckets; i++) g->buckets[i].ready = 0, g->buckets[i].posted = 0;
    g->next = 0;
    g->notified = 0;
    return 0;
}

/* Starts the buckets that are complete, in order: every rank must start the same
 * reductions in the same order, whatever order its backward finishes them in. */
static kiln_status grad_ready(void *self, int leaf) {
    grad_sync *g = self;
    g->notified++;
    g->buckets[g->bucket_of[leaf]].ready++;
    for (; g->next < g->n_buckets && g->buckets[g->next].ready == g->buckets[g->next].count; g->next++) {
        kiln_status s = start_bucket(g, &g->buckets[g->next]);
        if (s) return s;
    }
    /* Open MPI moves a non-blocking collective forward only inside MPI calls */
    int flag;
    for (int i = 0; i < g->next; i++)
        if (g->buckets[i].posted) MPI_Test(&g->buckets[i].request, &flag, MPI_STATUS_IGNORE);
    return KILN_OK;
}

static int finish(void *self, double *loss, char *err, size_t errlen) {
    grad_sync *g = self;
    if (g->notified != g->n || g->next != g->n_buckets) {
        snprintf(err, errlen, "gradient reduction: %d of %d gradients were finished by the backward", g->notified,
                 g->n);
        return -1;
    }
    double t0 = kiln_clock_wall();
    for (int i = 0; i < g->n_buckets; i++) {
        int rc = MPI_Wait(&g->buckets[i].request, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            mpi_failed(rc, "MPI_Iallreduce");
            snprintf(err, errlen, "gradient reduction: %s", kiln_error_message());
            return -1;
        }
    }
    double t1 = kiln_clock_wall();
    for (int k = 0; k < g->n; k++) {
        int leaf = g->order[k];
        kiln_tensor *grad = kiln_grad(g->t->leaves[leaf]);
        size_t bytes = (size_t)kiln_numel(grad) * kiln_dtype_size(grad->dtype);
        if (kiln_upload(grad, g->buckets[g->bucket_of[leaf]].host + g->offset[leaf], bytes)) {
            snprintf(err, errlen, "gradient reduction: %s", kiln_error_message());
            return -1;
        }
    }
    g->stats.wait_s += t1 - t0;
    g->stats.upload_s += kiln_clock_wall() - t1;
    g->stats.steps++;
    return world_sum(loss, 1, err, errlen);
}

/* Cuts the leaves, in reverse parameter order, into buckets of at least bucket_bytes that
 * hold one dtype each. */
static int make_buckets(grad_sync *g, size_t bucket_bytes) {
    g->buckets = calloc((size_t)(g->n > 0 ? g->n : 1), sizeof *g->buckets);
    if (!g->buckets) return -1;
    if (bucket_bytes == 0) {
        size_t all = 0, mib = 1 << 20;
        for (int i = 0; i < g->n; i++) {
            kiln_tensor *grad = kiln_grad(g->t->leaves[i]);
            all += (size_t)kiln_numel(grad) * kiln_dtype_size(grad->dtype);
        }
        bucket_bytes = all / 4 < mib ? mib : all / 4 > 25 * mib ? 25 * mib : all / 4;
    }
    bucket *b = NULL;
    for (int k = 0; k < g->n; k++) {
        int leaf = g->n - 1 - k;
        g->order[k] = leaf;
        kiln_tensor *grad = kiln_grad(g->t->leaves[leaf]);
        size_t bytes = (size_t)kiln_numel(grad) * kiln_dtype_size(grad->dtype);
        if (!b || b->bytes >= bucket_bytes || b->dtype != grad->dtype) {
            b = &g->buckets[g->n_buckets++];
            b->first = k;
            b->dtype = grad->dtype;
        }
        g->bucket_of[leaf] = (int)(b - g->buckets);
        g->offset[leaf] = b->bytes;
        b->count++;
        b->bytes += bytes;
        g->stats.bytes_per_step += (double)bytes;
    }
    for (int i = 0; i < g->n_buckets; i++)
        if (!(g->buckets[i].host = malloc(g->buckets[i].bytes))) return -1;
    g->stats.buckets = g->n_buckets;
    return 0;
}

grad_sync *grad_sync_new(trainer *t, size_t bucket_bytes, char *err, size_t errlen) {
    grad_sync *g = calloc(1, sizeof *g);
    int n = t->model.n_params;
    if (!g) goto no_memory;
    g->t = t;
    g->n = n;
    g->half_sum = MPI_OP_NULL;
    g->order = malloc((size_t)(n > 0 ? n : 1) * sizeof *g->order);
    g->bucket_of = malloc((size_t)(n > 0 ? n : 1) * sizeof *g->bucket_of);
    g->offset = malloc((size_t)(n > 0 ? n : 1) * sizeof *g->offset);
    if (!g->order || !g->bucket_of || !g->offset) goto no_memory;
    for (int i = 0; i < n; i++)
        if (!kiln_grad(t->leaves[i])) {
            snprintf(err, errlen, "gradient reduction: weight %d has no gradient (trainer_init allocates them)", i);
            grad_sync_free(g);
            return NULL;
        }
    if (make_buckets(g, bucket_bytes)) goto no_memory;
    if (MPI_Op_create(half_sum, 1, &g->half_sum) != MPI_SUCCESS) {
        snprintf(err, errlen, "gradient reduction: MPI_Op_create failed");
        grad_sync_free(g);
        return NULL;
    }
    g->par = (train_parallel){.self = g, .rank = world_rank(), .ranks = world_ranks(), .begin = begin,
                              .grad_ready = grad_ready, .finish = finish};
    t->par = &g->par;
    return g;
no_memory:
    snprintf(err, errlen, "out of host memory");
    grad_sync_free(g);
    return NULL;
}

void grad_sync_free(grad_sync *g) {
    if (!g) return;
    if (g->t && g->t->par == &g->par) g->t->par = NULL;
    for (int i = 0; g->buckets && i < g->n_buckets; i++) free(g->buckets[i].host);
    if (g->half_sum != MPI_OP_NULL) MPI_Op_free(&g->half_sum);
    free(g->buckets);
    free(g->order);
    free(g->bucket_of);
    free(g->offset);
    free(g);
}

grad_sync_stats grad_sync_get_stats(const grad_sync *g) { return g->stats; }
