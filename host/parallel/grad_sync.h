/* The gradient reduction of data-parallel training: every step, the ranks' gradients are
 * summed (MPI_Iallreduce) so that every rank applies the same update (model/trainer.h,
 * train_parallel).
 *
 * The weights' gradients go in buckets of about `bucket_bytes`, filled in the reverse of
 * the model's parameter order, the order the backward finishes them. As soon as the
 * backward has finished every gradient of a bucket (kiln_backward_notify), the bucket is
 * copied to the host and its reduction started, so that the network works while the
 * device computes the rest of the backward; the ranks start the buckets in the same order,
 * as MPI requires. fp16 gradients travel as f16 (half the bytes), summed by an operation
 * that rounds each sum to f16, as the device's own accumulation does. */
#ifndef KILN_HOST_PARALLEL_GRAD_SYNC_H
#define KILN_HOST_PARALLEL_GRAD_SYNC_H

#include <stddef.h>
#include <stdint.h>

#include "model/trainer.h"

typedef struct grad_sync grad_sync;

/* The reduction of trainer t's gradients (t->leaves, allocated by trainer_init) over the
 * world's ranks; sets t->par. bucket_bytes 0: a quarter of the gradients' bytes, at least
 * 1 MiB and at most 25 MiB (PyTorch DDP's bucket): four buckets or more overlap the
 * backward, and a large model's buckets stay few. Returns NULL with a message. */
grad_sync *grad_sync_new(trainer *t, size_t bucket_bytes, char *err, size_t errlen);
void grad_sync_free(grad_sync *g);

/* What the reductions cost so far. */
typedef struct grad_sync_stats {
    int64_t steps;
    int buckets;
    double bytes_per_step;  /* gradient bytes each rank sends into the reduction per step */
    double device_s;        /* waiting for the device to compute a bucket's gradients before copying it */
    double stage_s;         /* copying buckets to the host and starting their sums, inside the backward */
    double wait_s;          /* after the backward, waiting for the reductions to finish */
    double upload_s;        /* copying the sums back to the device */
} grad_sync_stats;
grad_sync_stats grad_sync_get_stats(const grad_sync *g);

#endif
