/* The processes of a data-parallel run: which rank this process is, how many there are,
 * and the few collective operations the command-line program needs besides the gradient
 * reduction (parallel/grad_sync.h). One world per process, as MPI has.
 *
 * kiln joins MPI only when mpirun (or another launcher of Open MPI or MPICH) started it:
 * run plainly, a program built with MPI behaves as one without it (one rank, no MPI call).
 * Built without MPI, world_start refuses to run as one rank of several, since each would
 * otherwise train alone and write the same files. */
#ifndef KILN_HOST_PARALLEL_WORLD_H
#define KILN_HOST_PARALLEL_WORLD_H

#include <stddef.h>
#include <stdint.h>

/* Whether this build has MPI (CMake found it). */
int world_has_mpi(void);

/* Joins the launcher's world (MPI_Init) when there is one; idempotent. Returns 0, or -1
 * with a message (launched as several ranks by a build without MPI). */
int world_start(char *err, size_t errlen);
/* Leaves it (MPI_Finalize) at the end of a command that succeeded or failed on every rank
 * alike; idempotent, and nothing without MPI. */
void world_stop(void);
/* Ends every rank of the job at once (MPI_Abort), after this rank printed why: the way out
 * of an error the other ranks cannot know about, which would leave them waiting. Without
 * MPI (or one rank) it just exits. */
_Noreturn void world_abort(int code);

int world_rank(void);       /* 0 for a single process */
int world_ranks(void);      /* 1 for a single process */
int world_local_rank(void); /* among the ranks on this machine */

/* The rank of another process of the job on this machine that has died (killed, crashed),
 * or -1. Async-signal-safe (kill(pid, 0) on the pids the ranks exchanged when they
 * joined): a rank that mpirun signals because the job is ending can say which rank went. */
int world_dead_local_rank(void);

/* Sums v[0..n) over the ranks, in place (every rank gets the same sums). Returns 0, or -1
 * with a message. */
int world_sum(double *v, int n, char *err, size_t errlen);
/* The element-wise minimum and maximum of v[0..n) over the ranks. */
int world_min_max(const float *v, float *min, float *max, int64_t n, char *err, size_t errlen);

#endif
