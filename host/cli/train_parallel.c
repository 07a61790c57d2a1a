/* Data-parallel training for the train commands (train_parallel.h). */
#include "cli/train_parallel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/text_number.h"

int train_parallel_join(void) {
    char err[512];
    if (world_start(err, sizeof err)) {
        /* several plain processes: one line is enough, from the one that would be rank 0 */
        const char *rank = getenv("OMPI_COMM_WORLD_RANK");
        if (!rank) rank = getenv("PMI_RANK");
        return rank && strcmp(rank, "0") ? 1 : host_error("%s", err);
    }
    if (world_ranks() > 1) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "rank %d: ", world_rank());
        host_error_prefix(prefix);
        host_errors_mute(world_rank() != 0);
    }
    return 0;
}

int train_parallel_leads(void) { return world_rank() == 0; }

/* Entry `index` of the comma-separated --devices into backend and *device (-1: the best). */
static int devices_entry(const char *list, int index, char *backend, size_t len, int *device) {
    const char *at = list;
    for (int i = 0; i < index; i++) {
        at = strchr(at, ',');
        if (!at) return host_error("--devices lists fewer devices than the %d ranks", world_ranks());
        at++;
    }
    size_t n = strcspn(at, ",");
    const char *colon = memchr(at, ':', n);
    size_t name = colon ? (size_t)(colon - at) : n;
    if (name == 0 || name >= len) return host_error("--devices: entry %d is not BACKEND[:N]", index + 1);
    memcpy(backend, at, name);
    backend[name] = 0;
    *device = -1;
    if (colon) {
        char number[16];
        uint64_t value;
        size_t digits = n - name - 1;
        if (digits == 0 || digits >= sizeof number) return host_error("--devices: entry %d is not BACKEND[:N]", index + 1);
        memcpy(number, colon + 1, digits);
        number[digits] = 0;
        if (text_to_uint64(number, &value) || value > 1000)
            return host_error("--devices: entry %d is not BACKEND[:N] with N a device index", index + 1);
        *device = (int)value;
    }
    return 0;
}

int train_parallel_options_done(int parsed, train_options *o, const cli_opt *opts, int n) {
    static char backend[32]; /* the process's one training run keeps its backend's name here */
    int rc = parsed;
    if (rc == 0 && o->devices) {
        char scratch[sizeof backend];
        int device;
        /* every rank checks every entry: rank 0 reports a bad one, once */
        for (int r = 0; r < world_ranks() && rc == 0; r++)
            rc = devices_entry(o->devices, r, scratch, sizeof scratch, &device);
        if (rc == 0 && cli_find(opts, n, "--device")->seen)
            rc = host_error("--devices and --device exclude each other");
        if (rc == 0) rc = devices_entry(o->devices, world_rank(), backend, sizeof backend, &o->device);
        if (rc == 0) o->backend = backend;
    } else if (rc == 0 && world_ranks() > 1 && !cli_find(opts, n, "--device")->seen && strcmp(o->backend, "cpu")) {
        o->device = world_local_rank();
    }
    host_errors_mute(0);
    if (rc) train_parallel_stop_together(); /* bad options are every rank's alike */
    return rc;
}

/* The largest difference between the ranks' values of any weight (0: all the same). */
static int weights_spread(trainer *t, double *spread, char *err, size_t errlen) {
    *spread = 0;
    for (int i = 0; i < t->model.n_params; i++) {
        kiln_tensor *w = t->params[i];
        int64_t count = kiln_numel(w);
        float *v = malloc((size_t)count * sizeof *v), *lo = malloc((size_t)count * sizeof *lo),
              *hi = malloc((size_t)count * sizeof *hi);
        int rc = 0;
        if (!v || !lo || !hi) {
            snprintf(err, errlen, "out of host memory");
            rc = -1;
        } else if (kiln_download_f32(w, v, count)) {
            snprintf(err, errlen, "reading the weights: %s", kiln_error_message());
            rc = -1;
        } else if (world_min_max(v, lo, hi, count, err, errlen) == 0) {
            for (int64_t k = 0; k < count; k++)
                if (!(hi[k] - lo[k] <= *spread)) *spread = isnan(hi[k] - lo[k]) ? INFINITY : hi[k] - lo[k];
        } else {
            rc = -1;
        }
        free(v), free(lo), free(hi);
        if (rc) return rc;
    }
    return 0;
}

int train_parallel_start(trainer *t, const train_options *o, grad_sync **sync) {
    char err[1024];
    double spread;
    *sync = NULL;
    if (world_ranks() == 1) return 0;
    if (weights_spread(t, &spread, err, sizeof err)) return host_error("%s", err);
    if (spread != 0)
        return host_error("the ranks start from different weights (they differ by up to %g): every rank must "
                          "read the same --init or --out files",
                          spread);
    if (!(*sync = grad_sync_new(t, (size_t)((double)o->bucket_mb * 1048576.0), err, sizeof err)))
        return host_error("%s", err);
    return 0;
}

static int g_stopping_together;
void train_parallel_stop_together(void) { g_stopping_together = 1; }

int train_parallel_end(int rc, grad_sync *sync, trainer *t) {
    if (rc != 0) {
        if (world_ranks() > 1 && !g_stopping_together) world_abort(rc);
        world_stop();
        return rc;
    }
    if (sync) {
        char err[1024];
        double spread;
        if (weights_spread(t, &spread, err, sizeof err)) world_abort(host_error("%s", err));
        grad_sync_stats s = grad_sync_get_stats(sync);
        if (train_parallel_leads() && s.steps > 0) {
            double per = 1e3 / (double)s.steps, step_ms = t->step_seconds * per;
            double comm_ms = (s.stage_s + s.wait_s + s.upload_s) * per;
            fprintf(stderr,
                    "kiln train: data parallel over %d ranks: %.3f MB of gradients per step in %d bucket%s; per step "
                    "%.2f ms, of which %.2f ms copying buckets out and starting their sums, %.2f ms waiting for "
                    "the sums (and for slower ranks), %.2f ms copying them back: %.1f%% of the step\n",
                    world_ranks(), s.bytes_per_step / 1e6, s.buckets, s.buckets == 1 ? "" : "s", step_ms,
                    s.stage_s * per, s.wait_s * per, s.upload_s * per, step_ms > 0 ? 100.0 * comm_ms / step_ms : 0.0);
            fprintf(stderr, "kiln train: the ranks' weights %s (largest difference %g)\n",
                    spread == 0 ? "are identical" : "differ", spread);
        }
    }
    grad_sync_free(sync); /* its MPI operation goes before MPI does */
    world_stop();
    return rc;
}
