/* --attention and the unfused path's memory rule (see attention_option.h). */
#include "run/attention_option.h"

#include <stdio.h>

#include "run/device.h"

static const char *const k_names[] = {"auto", "fused", "unfused"};

cli_opt host_attention_option(const char **value) {
    return (cli_opt){.name = "--attention", .kind = CLI_STRING, .target = value, .meta = "MODE",
                     .help = "auto, fused (one op: memory linear in the context) or unfused (the scores "
                             "materialized); auto is fused unless the model needs the scores (RealFormer, "
                             "GAU); a run-time choice, never stored in the checkpoint"};
}

int host_parse_attention(const char *text, host_attention *out) {
    int v = block_choice(k_names, 3, text);
    if (v < 0) {
        host_error("--attention %s is not one of auto, fused, unfused", text);
        return -1;
    }
    *out = (host_attention)v;
    return 0;
}

const char *host_attention_needs_scores(const block_options *o) {
    if (o->residual_attention) return "--residual-attention (RealFormer) passes each layer's scores on to the next";
    if (o->layer == BLOCK_LAYER_GAU) return "--layer-type gau builds its [T, T] attention matrix";
    return NULL;
}

/* [Tq, Tk] tensors per attention sublayer alive at the peak of a pass, as measured on the CPU
 * backend (the arena's growth between --block 1024 and 2048): a forward keeps the scores
 * and the probabilities; a training step's peak, in the backward, also holds their gradients
 * and the softmax backward's temporary (5), and dropout adds the dropped probabilities and
 * their gradient (7). */
uint64_t host_attention_scores_bytes(const attention_scores *s) {
    uint64_t per_sublayer = s->training ? 5 : 2;
    if (s->dropout) per_sublayer += s->training ? 2 : 1;
    return s->elements * per_sublayer * kiln_dtype_size(s->dtype);
}

int host_attention_fits(kiln_ctx *ctx, const attention_scores *s, uint64_t held, uint64_t *need, uint64_t *usable) {
    kiln_memory_info mi;
    if (kiln_device_memory(ctx, &mi)) return -1;
    uint64_t n = held + host_attention_scores_bytes(s);
    if (need) *need = n;
    if (usable) *usable = mi.usable;
    return n <= mi.usable;
}

const char *host_bytes_text(uint64_t bytes, char *buf, size_t size) {
    double b = (double)bytes;
    if (b >= (double)(1u << 30))
        snprintf(buf, size, "%.2f GiB", b / (double)(1u << 30));
    else if (b >= (double)(1u << 20))
        snprintf(buf, size, "%.1f MiB", b / (double)(1u << 20));
    else if (b >= 1024.0)
        snprintf(buf, size, "%.1f KiB", b / 1024.0);
    else
        snprintf(buf, size, "%llu bytes", (unsigned long long)bytes);
    return buf;
}

/* The unfused path's memory check: 0, or -1 with the one line that refuses the run. */
static int check_unfused_memory(kiln_ctx *ctx, const attention_scores *s, const char *context) {
    uint64_t need, usable;
    int fits = host_attention_fits(ctx, s, kiln_memory_persistent(ctx), &need, &usable);
    if (fits < 0) {
        host_engine_error("device memory");
        return -1;
    }
    if (fits) return 0;
    char need_text[32], scores_text[32], usable_text[32];
    host_error("unfused attention at %s needs at least %s (%s of scores and probabilities) but %s device %s has %s "
               "usable; use --attention fused or a shorter context",
               context, host_bytes_text(need, need_text, sizeof need_text),
               host_bytes_text(host_attention_scores_bytes(s), scores_text, sizeof scores_text), kiln_backend_name(ctx),
               kiln_device_name(ctx), host_bytes_text(usable, usable_text, sizeof usable_text));
    return -1;
}

int host_attention_choose(const char *command, host_attention mode, const block_options *o, kiln_ctx *ctx,
                          const attention_scores *s, const char *context) {
    const char *why = host_attention_needs_scores(o);
    if (mode == HOST_ATTENTION_FUSED && why) {
        host_error("--attention fused: %s, which the fused op never forms; use --attention auto or unfused", why);
        return -1;
    }
    int fused = mode == HOST_ATTENTION_FUSED || (mode == HOST_ATTENTION_AUTO && !why);
    if (fused) return 1;
    if (mode == HOST_ATTENTION_AUTO) host_say(command, "attention unfused: %s", why);
    return check_unfused_memory(ctx, s, context) ? -1 : 0;
}

int host_attention_forward(const char *command, host_attention mode, const block_options *o, kiln_ctx *ctx,
                           uint64_t elements, kiln_dtype dtype, const char *context) {
    attention_scores s = {.elements = elements, .dtype = dtype};
    return host_attention_choose(command, mode, o, ctx, &s, context);
}
