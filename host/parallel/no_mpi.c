/* A build without MPI: one rank (world.h), and no gradient reduction to do. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/grad_sync.h"
#include "parallel/world.h"

int world_has_mpi(void) { return 0; }

/* The ranks a launcher says this process has among, from its environment: Open MPI's,
 * then the PMI variables of MPICH and Slurm. */
static int launched_ranks(void) {
    const char *names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (v && atoi(v) > 0) return atoi(v);
    }
    return 1;
}

int world_start(char *err, size_t errlen) {
    int ranks = launched_ranks();
    if (ranks > 1) {
        snprintf(err, errlen,
                 "this kiln was built without MPI, so it cannot train as one of %d ranks under mpirun "
                 "(install libopenmpi-dev and rebuild; the configure step says whether it found MPI)",
                 ranks);
        return -1;
    }
    return 0;
}

void world_stop(void) {}
_Noreturn void world_abort(int code) { exit(code); }
int world_rank(void) { return 0; }
int world_ranks(void) { return 1; }
int world_local_rank(void) { return 0; }

int world_dead_local_rank(void) { return -1; }

int world_sum(double *v, int n, char *err, size_t errlen) {
    (void)v, (void)n, (void)err, (void)errlen;
    return 0;
}

int world_min_max(const float *v, float *min, float *max, int64_t n, char *err, size_t errlen) {
    (void)err, (void)errlen;
    memcpy(min, v, (size_t)n * sizeof *v);
    memcpy(max, v, (size_t)n * sizeof *v);
    return 0;
}

grad_sync *grad_sync_new(trainer *t, size_t bucket_bytes, char *err, size_t errlen) {
    (void)t, (void)bucket_bytes;
    snprintf(err, errlen, "this kiln was built without MPI");
    return NULL;
}

void grad_sync_free(grad_sync *g) { (void)g; }

grad_sync_stats grad_sync_get_stats(const grad_sync *g) {
    (void)g;
    return (grad_sync_stats){0};
}
