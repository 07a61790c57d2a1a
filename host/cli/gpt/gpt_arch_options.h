/* The decoder-only model's architecture options at `kiln train`: the Llama family's block
 * (model/block.h) and sizes (model/gpt/gpt.h) as flags, and `--model llama`, a preset of
 * their defaults (rmsnorm, rope, swiglu, no biases; the toolkit's --norm pre is already the
 * default). GPT-2's model when none is given. */
#ifndef KILN_HOST_CLI_GPT_ARCH_OPTIONS_H
#define KILN_HOST_CLI_GPT_ARCH_OPTIONS_H

#include "model/gpt/gpt.h"
#include "run/cli.h"

typedef struct gpt_arch_options {
    const char *norm_type, *position, *mlp, *bias; /* as typed */
    float norm_eps, rope_base;
    int kv_heads, head_dim, qk_norm, untied, ffn;
} gpt_arch_options;

enum { GPT_ARCH_OPTIONS = 11 };

/* GPT-2's defaults, or the preset's when model names one ("llama"). */
gpt_arch_options gpt_arch_defaults(const char *model);

/* Writes the options (GPT_ARCH_OPTIONS of them) to opts; returns their number. */
int gpt_arch_cli_options(gpt_arch_options *a, cli_opt *opts);

/* After parsing: the choices into *block (which holds the toolkit's options, checked again
 * with these) and the sizes into *cfg. Returns 0, or 1 with the error printed. */
int gpt_arch_apply(const gpt_arch_options *a, block_options *block, gpt_config *cfg);

/* A loaded model (--init, --resume) keeps its architecture: 1 with the error printed when an
 * option given on the command line says otherwise (want: what the options made). */
int gpt_arch_check_loaded(const cli_opt *opts, int n, const gpt_config *want, const gpt_config *model,
                          const char *path);

#endif
