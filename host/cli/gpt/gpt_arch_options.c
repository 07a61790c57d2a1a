/* The decoder-only model's architecture options (gpt_arch_options.h). */
#include "cli/gpt/gpt_arch_options.h"

#include <string.h>

#include "cli/train_options.h"
#include "run/cli.h"

gpt_arch_options gpt_arch_defaults(const char *model) {
    gpt_arch_options a = {.norm_type = "layernorm", .position = "learned", .mlp = "gelu", .bias = "all",
                          .norm_eps = GPT_DEFAULT_LN_EPS, .rope_base = 10000.0f};
    if (model && !strcmp(model, "llama")) {
        /* LLaMA's block: RMSNorm before each sublayer, rotary positions, SwiGLU, no biases */
        a.norm_type = "rmsnorm";
        a.position = "rope";
        a.mlp = "swiglu";
        a.bias = "none";
    }
    return a;
}

int gpt_arch_cli_options(gpt_arch_options *a, cli_opt *opts) {
    const cli_opt own[] = {
        {.name = "--norm-type", .kind = CLI_STRING, .target = &a->norm_type, .meta = "KIND",
         .help = "layernorm (GPT-2) or rmsnorm (Llama): every norm of the model"},
        {.name = "--norm-eps", .kind = CLI_FLOAT, .target = &a->norm_eps, .meta = "X",
         .help = "the norms' epsilon", .min = 1e-12, .max = 1},
        {.name = "--position", .kind = CLI_STRING, .target = &a->position, .meta = "KIND",
         .help = "learned (GPT-2's table) or rope (rotary embeddings of q and k)"},
        {.name = "--rope-base", .kind = CLI_FLOAT, .target = &a->rope_base, .meta = "X",
         .help = "the rope's theta", .min = 1.001, .max = 1e12},
        {.name = "--mlp", .kind = CLI_STRING, .target = &a->mlp, .meta = "KIND",
         .help = "gelu (c_proj(gelu(c_fc x))) or swiglu (c_proj(silu(gate) * up))"},
        {.name = "--kv-heads", .kind = CLI_INT, .target = &a->kv_heads, .meta = "N",
         .help = "key/value heads, dividing --heads (grouped-query attention; default --heads)", .min = 1,
         .max = 1024},
        {.name = "--head-dim", .kind = CLI_INT, .target = &a->head_dim, .meta = "N",
         .help = "each head's width (default --dim / --heads)", .min = 1, .max = 65536},
        {.name = "--bias", .kind = CLI_STRING, .target = &a->bias, .meta = "WHICH",
         .help = "biases on all linears, on q/k/v only (qkv, as Qwen2) or none"},
        {.name = "--qk-norm", .kind = CLI_FLAG, .target = &a->qk_norm,
         .help = "RMSNorm of each head of q and k before the rope (Qwen3)"},
        {.name = "--untied", .kind = CLI_FLAG, .target = &a->untied,
         .help = "an output head of its own (lm_head), not the token embedding"},
        {.name = "--ffn", .kind = CLI_INT, .target = &a->ffn, .meta = "N",
         .help = "the MLP's hidden width (default 4 --dim; swiglu: 8 --dim / 3 rounded up to 32)", .min = 1,
         .max = 1 << 20},
    };
    _Static_assert(sizeof own / sizeof own[0] == GPT_ARCH_OPTIONS, "GPT_ARCH_OPTIONS is wrong");
    memcpy(opts, own, sizeof own);
    return GPT_ARCH_OPTIONS;
}

int gpt_arch_apply(const gpt_arch_options *a, block_options *block, gpt_config *cfg) {
    int norm_type, position, mlp, bias;
    if (train_parse_choice("--norm-type", a->norm_type, block_norm_type_names, BLOCK_NORM_TYPE_COUNT, &norm_type) ||
        train_parse_choice("--position", a->position, gpt_position_names, GPT_POSITION_COUNT, &position) ||
        train_parse_choice("--mlp", a->mlp, block_mlp_names, BLOCK_MLP_COUNT, &mlp) ||
        train_parse_choice("--bias", a->bias, block_bias_names, BLOCK_BIAS_COUNT, &bias))
        return 1;
    block->norm_type = (block_norm_type)norm_type;
    block->mlp = (block_mlp)mlp;
    block->bias = (block_bias)bias;
    block->qk_norm = a->qk_norm;
    block->rope = position == GPT_POSITION_ROPE;
    block->rope_base = a->rope_base;
    block->rope_layout = KILN_ROPE_HALF; /* HF's rotate_half, as every family kiln reads */
    cfg->block = *block;
    cfg->ln_eps = a->norm_eps;
    cfg->position = (gpt_position)position;
    cfg->n_kv_head = a->kv_heads;
    cfg->head_dim = a->head_dim;
    cfg->n_ffn = a->ffn;
    cfg->untied = a->untied;
    char err[256];
    if (block_options_check(block, err, sizeof err)) return host_error("%s", err);
    /* the sizes, with stand-ins for what the data decides later */
    gpt_config probe = *cfg;
    if (probe.n_positions < 1) probe.n_positions = 1;
    if (probe.vocab_size < 1) probe.vocab_size = 1;
    if (gpt_config_check(&probe, err, sizeof err)) return host_error("%s", err);
    return 0;
}

int gpt_arch_check_loaded(const cli_opt *opts, int n, const gpt_config *want, const gpt_config *model,
                          const char *path) {
    const block_options *w = &want->block, *m = &model->block;
    block_config mine = gpt_block_config(want), its = gpt_block_config(model);
    struct { const char *option; int differs; } arch[] = {
        {"--norm-type", w->norm_type != m->norm_type},
        {"--norm-eps", want->ln_eps != model->ln_eps},
        {"--position", want->position != model->position},
        {"--rope-base", w->rope_base != m->rope_base},
        {"--mlp", w->mlp != m->mlp},
        {"--kv-heads", block_kv_heads(&mine) != block_kv_heads(&its)},
        {"--head-dim", block_head_dim(&mine) != block_head_dim(&its)},
        {"--bias", w->bias != m->bias},
        {"--qk-norm", w->qk_norm != m->qk_norm},
        {"--untied", want->untied != model->untied},
        {"--ffn", block_ffn(&mine) != block_ffn(&its)},
    };
    for (size_t i = 0; i < sizeof arch / sizeof arch[0]; i++)
        if (cli_find(opts, n, arch[i].option)->seen && arch[i].differs)
            return host_error("%s differs from the model in %s (a loaded model keeps its architecture)",
                              arch[i].option, path);
    return 0;
}
