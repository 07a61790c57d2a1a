/* The world over MPI (see world.h). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "parallel/world.h"

static int g_joined, g_rank, g_ranks = 1, g_local_rank;
static pid_t *g_local_pids; /* by rank: the pid of each rank on this machine, else 0 */

int world_has_mpi(void) { return 1; }

/* Whether a launcher started this process: Open MPI's mpirun, then MPICH's (Hydra) and
 * Slurm's srun through PMI. A plain `kiln train` must not call MPI_Init: Open MPI would
 * start a singleton runtime for nothing. */
static int launched(void) {
    const char *names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (getenv(names[i])) return 1;
    return 0;
}

static int mpi_error(int code, const char *what, char *err, size_t errlen) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, text, &len);
    snprintf(err, errlen, "%s: %s", what, text);
    return -1;
}

int world_start(char *err, size_t errlen) {
    if (g_joined || !launched()) return 0;
    int rc = MPI_Init(NULL, NULL);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Init", err, errlen);
    g_joined = 1;
    /* errors come back as codes, reported as one line naming the rank */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_ranks);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &g_local_rank);
    /* the pids of the ranks on this machine, for world_dead_local_rank */
    int here = 0, *world_ranks_here = NULL;
    MPI_Comm_size(local, &here);
    long mine = (long)getpid(), *pids = malloc((size_t)here * sizeof *pids);
    world_ranks_here = malloc((size_t)here * sizeof *world_ranks_here);
    g_local_pids = calloc((size_t)g_ranks, sizeof *g_local_pids);
    if (pids && world_ranks_here && g_local_pids &&
        MPI_Allgather(&mine, 1, MPI_LONG, pids, 1, MPI_LONG, local) == MPI_SUCCESS &&
        MPI_Allgather(&g_rank, 1, MPI_INT, world_ranks_here, 1, MPI_INT, local) == MPI_SUCCESS) {
        for (int i = 0; i < here; i++) g_local_pids[world_ranks_here[i]] = (pid_t)pids[i];
    }
    free(pids);
    free(world_ranks_here);
    MPI_Comm_free(&local);
    return 0;
}

void world_stop(void) {
    if (!g_joined) return;
    /* no rank leaves before all are done: mpirun ends the job when the first rank exits
       with a failure code, and rank 0 may still be writing a checkpoint */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    g_joined = 0;
    free(g_local_pids);
    g_local_pids = NULL;
}

_Noreturn void world_abort(int code) {
    if (g_joined && g_ranks > 1) {
        fflush(stdout);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, code);
    }
    exit(code);
}

int world_dead_local_rank(void) {
    for (int r = 0; g_local_pids && r < g_ranks; r++)
        if (r != g_rank && g_local_pids[r] > 0 && kill(g_local_pids[r], 0) != 0 && errno == ESRCH) return r;
    return -1;
}

int world_rank(void) { return g_rank; }
int world_ranks(void) { return g_ranks; }
int world_local_rank(void) { return g_local_rank; }

int world_sum(double *v, int n, char *err, size_t errlen) {
    if (!g_joined || g_ranks == 1) return 0;
    int rc = MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : mpi_error(rc, "MPI_Allreduce", err, errlen);
}

int world_min_max(const float *v, float *min, float *max, int64_t n, char *err, size_t errlen) {
    /* in chunks: MPI counts are ints */
    for (int64_t at = 0; at < n;) {
        int count = n - at > (1 << 28) ? 1 << 28 : (int)(n - at);
        if (!g_joined || g_ranks == 1) {
            for (int i = 0; i < count; i++) min[at + i] = max[at + i] = v[at + i];
        } else {
            int rc = MPI_Allreduce(v + at, min + at, count, MPI_FLOAT, MPI_MIN, MPI_COMM_WORLD);
            if (rc == MPI_SUCCESS) rc = MPI_Allreduce(v + at, max + at, count, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
            if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Allreduce", err, errlen);
        }
        at += count;
    }
    return 0;
}
