/* A check that survives NDEBUG: a fuzzer must abort (and so report) on a broken property. */
#ifndef KILN_FUZZ_CHECK_H
#define KILN_FUZZ_CHECK_H
#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(cond)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                            \
        }                                                                       \
    } while (0)
#endif
