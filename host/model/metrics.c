/* metrics.jsonl writer (see metrics.h). */
#define _POSIX_C_SOURCE 200809L
#include "model/metrics.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/json.h"
#include "formats/text_line.h"
#include "kiln/file.h"

/* Rewrites the file, whole (kiln/file.h), with only the rows whose step is <= keep_step.
 * Lines that are not JSON objects with a step (a torn last line after a crash) are dropped
 * too. */
static int truncate_rows(const char *path, int64_t keep_step, char *err, size_t errlen) {
    FILE *in = fopen(path, "rb");
    if (!in) {
        if (errno == ENOENT) return 0; /* nothing was logged yet */
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    kiln_file *file = kiln_file_begin(path, err, errlen);
    if (!file) {
        fclose(in);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0, len;
    int got;
    while ((got = text_read_line(in, &line, &cap, &len)) > 0) {
        json_value *row;
        int64_t step;
        if (json_parse(line, len, &row, NULL, 0) == 0) {
            if (json_as_int64(json_get(row, "step"), &step) && step <= keep_step) {
                kiln_file_write(file, line, len);
                kiln_file_write(file, "\n", 1);
            }
            json_free(row);
        }
    }
    free(line);
    fclose(in);
    if (got != 0) {
        kiln_file_abort(file);
        snprintf(err, errlen, "%s: cannot rewrite: out of memory", path);
        return -1;
    }
    return kiln_file_commit(file, err, errlen) == KILN_OK ? 0 : -1;
}

FILE *metrics_open(const char *dir, int64_t resume_step, char *err, size_t errlen) {
    char path[4096];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    if (resume_step >= 0 && truncate_rows(path, resume_step, err, errlen)) return NULL;
    FILE *f = fopen(path, resume_step >= 0 ? "ab" : "wb");
    if (!f) snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return f;
}

/* JSON has no NaN or infinity: such a value is written as null. */
static void number(FILE *f, const char *key, double v) {
    if (isfinite(v))
        fprintf(f, ", \"%s\": %.9g", key, v);
    else
        fprintf(f, ", \"%s\": null", key);
}

static void number_list(FILE *f, const char *key, const double *v, int n) {
    fprintf(f, ", \"%s\": [", key);
    for (int i = 0; i < n; i++) {
        if (isfinite(v[i]))
            fprintf(f, "%s%.9g", i ? ", " : "", v[i]);
        else
            fprintf(f, "%snull", i ? ", " : "");
    }
    fputc(']', f);
}

int metrics_write(FILE *f, const metrics_row *r) {
    fprintf(f, "{\"step\": %lld", (long long)r->step);
    number(f, "loss", r->loss);
    if (!isnan(r->val_loss)) number(f, "val_loss", r->val_loss);
    number(f, "lr", r->lr);
    number(f, "grad_norm", r->grad_norm);
    number(f, "tokens_per_s", r->tokens_per_s);
    /* exactly: a scale such as 2^39 has more digits than %.9g keeps */
    if (isfinite(r->loss_scale)) fprintf(f, ", \"loss_scale\": %.17g", r->loss_scale);
    if (r->skipped_steps >= 0) fprintf(f, ", \"skipped_steps\": %lld", (long long)r->skipped_steps);
    if (r->attn_entropy) {
        number_list(f, "attn_entropy", r->attn_entropy, r->n_layers);
        number(f, "attn_entropy_min", r->attn_entropy_min);
    }
    if (r->grad_norm_layers) number_list(f, "grad_norm_layers", r->grad_norm_layers, r->n_layers);
    if (r->mlm_accuracy) number(f, "mlm_accuracy", *r->mlm_accuracy);
    if (r->host_rss_bytes >= 0) fprintf(f, ", \"host_rss_bytes\": %lld", (long long)r->host_rss_bytes);
    if (r->device_bytes >= 0) fprintf(f, ", \"device_bytes\": %lld", (long long)r->device_bytes);
    fputs("}\n", f);
    return fflush(f) || ferror(f) ? -1 : 0;
}

int metrics_sync(FILE *f) { return fflush(f) || fsync(fileno(f)) ? -1 : 0; }

int64_t metrics_process_rss(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    long long size, resident;
    int n = fscanf(f, "%lld %lld", &size, &resident);
    fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    return n == 2 && page > 0 ? (int64_t)resident * page : -1;
}
