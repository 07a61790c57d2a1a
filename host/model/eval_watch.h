/* What an evaluation over many forward passes tells as it goes (kiln eval's progress):
 * every model kind's evaluation takes one, NULL for none. */
#ifndef KILN_HOST_MODEL_EVAL_WATCH_H
#define KILN_HOST_MODEL_EVAL_WATCH_H

#include <stdint.h>

/* Called after each forward pass with the items done (windows, batches) and their total. */
typedef struct eval_watch {
    void (*done)(void *self, int64_t done, int64_t total);
    void *self;
} eval_watch;

/* Tells the watch, if any. */
static inline void eval_watch_tell(const eval_watch *w, int64_t done, int64_t total) {
    if (w && w->done) w->done(w->self, done, total);
}

#endif
