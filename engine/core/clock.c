/* The two clocks the engine's measurements read: wall time (monotonic) and the process's CPU
 * time. One place, so every timer (probes, the FMA ceiling, tests) counts the same way. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, getrusage */
#include <sys/resource.h>
#include <time.h>

#include "core/internal.h"

double kiln_clock_wall(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

double kiln_clock_cpu(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}
