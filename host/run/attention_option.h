/* --attention auto|fused|unfused of train, eval and decode, and the memory rule of the
 * unfused path (docs/design.md, "Fused attention").
 *
 * The choice is the run's, never the model's: it is not stored in a checkpoint, and eval and
 * decode take it from their own flag (the one exception to their reading every model option
 * from the checkpoint). Both paths compute the same function (kiln_attention, kiln/ops.h); the
 * fused one never holds a [T, T] score tensor, so its memory grows linearly in the context.
 *   auto     fused, unless the model needs the scores themselves (RealFormer passes each
 *            layer's scores on, a GAU layer builds its [T, T] matrix): then unfused, said in
 *            one line
 *   fused    an error with such a model
 *   unfused  the separate ops, as kiln ran before the fused op
 * Before the first step, a run whose unfused scores cannot fit the device's usable memory
 * (kiln_device_memory, kiln/context.h; KILN_MEMORY_LIMIT lowers it) is refused in one line
 * saying how much it would need; `kiln bench attention` reports "does not fit" by the same
 * rule. */
#ifndef KILN_HOST_RUN_ATTENTION_OPTION_H
#define KILN_HOST_RUN_ATTENTION_OPTION_H

#include <stdint.h>

#include "kiln/kiln.h"
#include "model/block.h"
#include "run/cli.h"

typedef enum host_attention { HOST_ATTENTION_AUTO, HOST_ATTENTION_FUSED, HOST_ATTENTION_UNFUSED } host_attention;

/* The --attention entry of an option table (its value: "auto" until given). */
cli_opt host_attention_option(const char **value);

/* "auto", "fused", "unfused" -> *out; anything else prints one line listing them and
 * returns -1. */
int host_parse_attention(const char *text, host_attention *out);

/* Why a model needs its attention scores materialized ("--residual-attention (RealFormer)
 * passes each layer's scores on"), or NULL when the fused op can run it. */
const char *host_attention_needs_scores(const block_options *o);

/* The [Tq, Tk] tensors of one pass through a model on the unfused path. */
typedef struct attention_scores {
    uint64_t elements; /* B H Tq Tk summed over the pass's attention sublayers (self and cross) */
    kiln_dtype dtype;  /* the scores' storage (the run's precision) */
    int training;      /* the backward keeps their gradients too */
    int dropout;       /* dropout on the probabilities keeps its output too */
} attention_scores;

/* The bytes those tensors hold at once: each sublayer keeps its scores and probabilities (and
 * the dropped probabilities) until the step ends, and training adds their gradients and the
 * softmax backward's temporary. A lower bound on what the unfused pass needs beyond the model
 * (it counts no other activation). */
uint64_t host_attention_scores_bytes(const attention_scores *s);

/* 1 when the unfused path of `s` fits the device of ctx with the `held` bytes it holds already
 * (the model, its optimizer), else 0; *need and *usable get the figures (either may be NULL).
 * -1 with the engine's error when the device's memory cannot be read (a bad
 * KILN_MEMORY_LIMIT). */
int host_attention_fits(kiln_ctx *ctx, const attention_scores *s, uint64_t held, uint64_t *need, uint64_t *usable);

/* The path a run takes: resolves `mode` against the model's block options (auto says "kiln
 * COMMAND: attention unfused: WHY" on stderr when it falls back), then, for the unfused path,
 * the memory check of `s` with what the context holds now (kiln_memory_persistent). `context`
 * names the run's size in messages ("--block 8192"). Returns 1 (fused), 0 (unfused) or -1
 * with one line printed: fused asked for a model that needs the scores, or unfused scores
 * that cannot fit. */
int host_attention_choose(const char *command, host_attention mode, const block_options *o, kiln_ctx *ctx,
                          const attention_scores *s, const char *context);

/* host_attention_choose for a pass without backward (eval, decode): `elements` scores of
 * `dtype`, no dropout. */
int host_attention_forward(const char *command, host_attention mode, const block_options *o, kiln_ctx *ctx,
                           uint64_t elements, kiln_dtype dtype, const char *context);

/* "1.50 GiB", "640.0 MiB", "3.2 KiB", "512 bytes" into buf: the messages' and the benchmark's sizes. */
const char *host_bytes_text(uint64_t bytes, char *buf, size_t size);

#endif
