/* --lora PATH[:SCALE] (lora_option.h). */
#include "run/lora_option.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/text_number.h"
#include "model/gpt/gpt_lora_gguf.h"
#include "model/lora_gguf.h"

int host_lora_spec(const char *value, char *path, size_t size, float *scale) {
    struct stat st;
    const char *colon = strrchr(value, ':');
    *scale = 1.0f;
    if (!colon || stat(value, &st) == 0) {
        snprintf(path, size, "%s", value);
        return 0;
    }
    double s;
    if (text_to_double(colon + 1, &s) || !isfinite(s))
        return host_error("--lora %s: SCALE \"%s\" is not a number (PATH[:SCALE])", value, colon + 1);
    snprintf(path, size, "%.*s", (int)(colon - value), value);
    *scale = (float)s;
    return 0;
}

int host_load_lora(gpt_model *m, lora_base_info *base, const char *value, lora_adapter **out) {
    char path[4096], err[1024];
    float scale;
    if (host_lora_spec(value, path, sizeof path, &scale)) return 1;
    if (lora_load(m, base, path, scale, out, err, sizeof err)) return host_error("--lora %s: %s", value, err);
    if (base->warning[0]) fprintf(stderr, "kiln: warning: %s\n", base->warning);
    return 0;
}

int host_load_loras(gpt_model *m, const tokenizer *tok, const char *base_path, const cli_list *specs, int attach,
                    lora_adapter ***out) {
    char err[1024];
    *out = NULL;
    if (specs->count == 0) return 0;
    lora_base_info *base = malloc(sizeof *base);
    lora_adapter **a = calloc((size_t)specs->count, sizeof *a);
    int rc = base && a ? 0 : host_error("out of memory");
    if (rc == 0 && lora_base_info_of(m, tok, base_path, base, err, sizeof err)) rc = host_error("--ckpt %s: %s", base_path, err);
    for (int i = 0; rc == 0 && i < specs->count; i++) {
        rc = host_load_lora(m, base, specs->items[i], &a[i]);
        if (rc == 0 && attach && lora_attach(m, a[i], err, sizeof err)) rc = host_error("--lora %s: %s", specs->items[i], err);
    }
    free(base);
    if (rc) {
        lora_detach_all(m);
        host_free_loras(a, specs->count);
        return 1;
    }
    *out = a;
    return 0;
}

void host_free_loras(lora_adapter **a, int n) {
    for (int i = 0; a && i < n; i++) lora_free(a[i]);
    free(a);
}
