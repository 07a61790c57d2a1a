/* `kiln bench train --lora`: full fine-tuning against LoRA on one device, from an F16 and a
 * Q4_0 base: the device memory each needs at its peak and the time of a step, and on the
 * cpu backend the same LoRA step in PyTorch (samples/lora_torch.py) in the same run.
 *
 * The models are random-init at two named shapes, built in memory (no file is written):
 *   gpt2-small    GPT-2 small: 12 layers, 12 heads, width 768, 1024 positions, vocabulary
 *                 50257 (124M weights)
 *   qwen2.5-0.5b  Qwen2.5-0.5B's shape: 24 layers, 14 heads (2 key/value heads of 64), width
 *                 896, SwiGLU of 4864, q/k/v biases, RMSNorm, rotary positions (theta 1e6),
 *                 vocabulary 151936, tied head (494M weights); LoRA only: full fine-tuning
 *                 at this size holds ~8 GB (weights, gradients and Adam moments, f32)
 * and each runs, in a context of its own (so its memory counters are its own), as
 *   full fp32          every weight trained, f32, AdamW over all of them
 *   full fp16          mixed precision from the F16 base: f16 working copies, f32 masters
 *   LoRA, f16 -> f32   the F16 base held in f32 (what fp32 training does with an F16 file)
 *   LoRA, f16 base     --precision fp16: the base stays f16, no master copy
 *   LoRA, q4_0 base    the base in Q4_0 blocks (gpt_quantize: the blocks `kiln quantize`
 *                      writes), f32 activations; the gradient flows through the blocks
 * with PEFT's adapters (rank, alpha) on every linear of the blocks. A few steps at sequence
 * 256, batch 1, on random tokens (the speed does not depend on the text), after warm-up
 * steps. Memory is the most the context held: its persistent tensors (base, adapters or
 * trained weights, gradients, Adam moments; the largest value seen after any step) plus the
 * step arena's peak (activations, their gradients, temporaries: kiln_memory_arena_peak). A
 * quantized base's token-embedding blocks for the lookup are kept on the host, not counted.
 *
 * PyTorch's row is its LoRA step on the same shape with an f32 base (its CPU has no Q4_0,
 * and f32 is its fast path), so the ratio is taken against kiln's "LoRA, f16 -> f32" row:
 * the same arithmetic. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/bench_gpt.h"
#include "kiln/rng.h"
#include "model/gpt/gpt_quantize.h"
#include "model/lora.h"
#include "run/device.h"
#include "run/progress.h"

typedef struct lora_shape {
    const char *name;
    int full; /* 0: LoRA only */
    gpt_config cfg;
} lora_shape;

static gpt_config gpt2_small(void) {
    return (gpt_config){.n_layer = 12, .n_head = 12, .n_embd = 768, .n_positions = 1024, .vocab_size = 50257,
                        .ln_eps = 1e-5f, .block = block_options_default()};
}

static gpt_config qwen25_05b(void) {
    gpt_config c = {.n_layer = 24, .n_head = 14, .n_embd = 896, .n_positions = 32768, .vocab_size = 151936,
                    .ln_eps = 1e-6f, .block = block_options_default(), .n_kv_head = 2, .head_dim = 64,
                    .n_ffn = 4864, .position = GPT_POSITION_ROPE};
    c.block.norm_type = BLOCK_NORM_TYPE_RMSNORM;
    c.block.mlp = BLOCK_MLP_SWIGLU;
    c.block.bias = BLOCK_BIAS_QKV;
    c.block.rope = 1;
    c.block.rope_base = 1e6f;
    c.block.rope_layout = 1; /* HF's rotate_half */
    return c;
}

/* One way of training a shape. */
typedef struct lora_run {
    const char *label;
    int lora;           /* 0: full fine-tuning */
    kiln_dtype precision;
    const char *quant;  /* the base's quantized type, or NULL */
    int torch_peer;     /* PyTorch's LoRA step is this row's arithmetic */
} lora_run;

static const lora_run runs[] = {
    {"full fp32", 0, KILN_F32, NULL, 0},
    {"full fp16 (f32 masters)", 0, KILN_F16, NULL, 0},
    {"LoRA, f16 -> f32", 1, KILN_F32, NULL, 1},
    {"LoRA, f16 base, fp16", 1, KILN_F16, NULL, 0},
    {"LoRA, q4_0 base", 1, KILN_F32, "q4_0", 0},
};
enum { N_RUNS = sizeof runs / sizeof runs[0] };

typedef struct lora_bench {
    const char *shapes, *backend, *python, *script;
    int device, layers, steps, warmup_steps, rank, no_torch, threads;
    float alpha;
    train_hparams hp; /* block, batch, lr, ... */
} lora_bench;

/* What one run measured, or why it could not. */
typedef struct run_result {
    int64_t trained;
    size_t persistent, arena;
    double step_s, loss;
    char na[256]; /* non-empty: not measured, and why */
} run_result;

/* Random token ids below the shape's vocabulary, enough windows that batches do not repeat. */
static int random_tokens(const gpt_config *c, uint64_t seed, data_set **out) {
    enum { N_TOKENS = 1 << 16 };
    char err[1024];
    int32_t *ids = malloc(N_TOKENS * sizeof *ids);
    if (!ids) return host_error("out of host memory");
    for (int i = 0; i < N_TOKENS; i++) ids[i] = (int32_t)(kiln_rng_u32(seed, 7, (uint64_t)i) % (uint32_t)c->vocab_size);
    int rc = data_from_tokens(ids, N_TOKENS, c->vocab_size, out, err, sizeof err) ? host_error("%s", err) : 0;
    free(ids);
    return rc;
}

/* The run's model (and adapter) and trainer on ctx. 0, or -1 with the reason in why. */
static int build(const lora_bench *o, const gpt_config *cfg, const lora_run *r, kiln_ctx *ctx, const data_set *ds,
                 gpt_model **m, lora_adapter **a, trainer *t, char *why, size_t whylen) {
    train_hparams hp = o->hp;
    hp.precision = r->precision;
    if (!(*m = gpt_new(ctx, cfg)) || gpt_init(*m, hp.seed))
        return snprintf(why, whylen, "cannot create the model: %s", kiln_error_message()), -1;
    if (!r->lora) return trainer_init(t, *m, ds, &hp, why, whylen);
    if (r->quant && gpt_quantize(*m, gpt_quant_type_find(r->quant), why, whylen)) return -1;
    if (!r->quant && r->precision == KILN_F16 && gpt_set_precision(*m, KILN_F16, 0))
        return snprintf(why, whylen, "%s", kiln_error_message()), -1;
    lora_options lo = {.rank = o->rank, .alpha = o->alpha};
    if (!(*a = lora_new(*m, &lo, hp.seed, why, whylen)) || lora_attach(*m, *a, why, whylen)) return -1;
    return trainer_init_lora(t, *m, *a, ds, &hp, why, whylen);
}

/* Builds and times one run in a context of its own. Returns 0 (the result, or its n/a), or 1
 * after printing an error that ends the benchmark. */
static int measure(const lora_bench *o, const gpt_config *cfg, const lora_run *r, const data_set *ds,
                   run_result *res) {
    char err[1024];
    gpt_model *m = NULL;
    lora_adapter *a = NULL;
    trainer t = {0};
    double *step_s = calloc((size_t)o->steps, sizeof *step_s);
    kiln_ctx *ctx = host_open_device(o->backend, o->device);
    memset(res, 0, sizeof *res);
    int rc = 1;
    if (!step_s || !ctx) goto done;
    if (build(o, cfg, r, ctx, ds, &m, &a, &t, res->na, sizeof res->na)) {
        rc = 0; /* a device without the memory or a buffer large enough: n/a, not an error */
        goto done;
    }
    res->trained = a ? lora_param_count(a) : gpt_param_count(m);
    for (int s = 0; s < o->warmup_steps + o->steps; s++) {
        train_step_stats st;
        double t0 = progress_now();
        if (trainer_step(&t, &st, err, sizeof err)) {
            snprintf(res->na, sizeof res->na, "%.200s", err);
            rc = 0;
            goto done;
        }
        if (s >= o->warmup_steps) step_s[s - o->warmup_steps] = progress_now() - t0;
        size_t held = kiln_memory_persistent(ctx);
        if (held > res->persistent) res->persistent = held;
        res->loss = st.loss;
    }
    res->arena = kiln_memory_arena_peak(ctx);
    res->step_s = bench_median(step_s, o->steps);
    rc = 0;
done:
    trainer_free(&t);
    lora_free(a);
    gpt_free(m);
    kiln_close(ctx);
    free(step_s);
    return rc;
}

/* PyTorch's LoRA step on the same shape: its median step in seconds. */
static int torch_step(const lora_bench *o, const lora_shape *s, const gpt_config *cfg, double *step_s, char *about,
                      size_t size) {
    char script[4096], cmd[8192];
    if (bench_torch_script(o->script, "lora_torch.py", "KILN_LORA_TORCH_SCRIPT", script, sizeof script)) return 1;
    snprintf(cmd, sizeof cmd,
             "'%s' '%s' --bench --shape %s --layers %d --lora-rank %d --lora-alpha %g --block %d --batch %d "
             "--steps %d --warmup-steps %d --lr %g --weight-decay %g --beta1 %g --beta2 %g --clip %g --threads %d",
             o->python, script, s->name, cfg->n_layer, o->rank, (double)o->alpha, o->hp.block, o->hp.batch,
             o->steps, o->warmup_steps, (double)o->hp.lr, (double)o->hp.weight_decay, (double)o->hp.beta1,
             (double)o->hp.beta2, (double)o->hp.clip, o->threads);
    const char *key = "step_ms";
    double ms = 0;
    if (bench_torch_peer(cmd, script, &key, &ms, 1, about, size)) return 1;
    *step_s = ms / 1e3;
    return 0;
}

static void print_row(const char *label, const run_result *r, double tokens) {
    if (r->na[0]) {
        printf("  %-26s n/a: %s\n", label, r->na);
        return;
    }
    printf("  %-26s %9.2fM %10.1f %10.1f %10.1f %10.1f %9.1f %8.4f\n", label, (double)r->trained / 1e6,
           (double)r->persistent / 1048576.0, (double)r->arena / 1048576.0,
           (double)(r->persistent + r->arena) / 1048576.0, 1e3 * r->step_s, tokens / r->step_s, r->loss);
    fflush(stdout);
}

/* Every run of one shape, then PyTorch's row and the ratio on the cpu backend. */
static int bench_shape(const lora_bench *o, const lora_shape *s) {
    gpt_config cfg = s->cfg;
    char err[1024];
    if (o->layers) cfg.n_layer = o->layers;
    cfg.n_positions = cfg.n_positions > o->hp.block ? cfg.n_positions : o->hp.block;
    if (gpt_config_check(&cfg, err, sizeof err)) return host_error("%s: %s", s->name, err);
    data_set *ds = NULL;
    if (random_tokens(&cfg, o->hp.seed, &ds)) return 1;
    printf("\n%s: %d layers, width %d, vocabulary %d\n", s->name, cfg.n_layer, cfg.n_embd, cfg.vocab_size);
    printf("  %-26s %10s %10s %10s %10s %10s %9s %8s\n", "run", "trained", "held MiB", "step MiB", "peak MiB",
           "ms/step", "tokens/s", "loss");
    double tokens = (double)o->hp.batch * o->hp.block, kiln_lora = 0;
    int rc = 0;
    for (int i = 0; i < N_RUNS && !rc; i++) {
        run_result res;
        if (!runs[i].lora && !s->full) {
            printf("  %-26s n/a: LoRA only at this size (full fine-tuning holds 16 bytes a weight: f32 weights, "
                   "gradients, Adam m and v)\n", runs[i].label);
            continue;
        }
        if ((rc = measure(o, &cfg, &runs[i], ds, &res))) break;
        print_row(runs[i].label, &res, tokens);
        if (runs[i].torch_peer && !res.na[0]) kiln_lora = res.step_s;
    }
    if (!rc && !o->no_torch && !strcmp(o->backend, "cpu") && kiln_lora > 0) {
        double torch_s = 0;
        char about[256];
        if ((rc = torch_step(o, s, &cfg, &torch_s, about, sizeof about)) == 0) {
            printf("  %-26s %10s %10s %10s %10s %10.1f %9.1f\n", "PyTorch LoRA, f32 base", "", "", "", "",
                   1e3 * torch_s, tokens / torch_s);
            printf("  (%s)\n  kiln / PyTorch, LoRA step on the cpu (f32 base both): %.2f x the tokens/s\n", about,
                   torch_s / kiln_lora);
        }
    }
    data_free(ds);
    return rc;
}

int cmd_bench_lora(int argc, char **argv) {
    lora_bench o = {.shapes = "gpt2-small,qwen2.5-0.5b", .backend = "cpu", .python = "/usr/bin/python3",
                    .device = -1, .steps = 2,
                    .warmup_steps = 1, .rank = 8, .alpha = 16, .hp = train_nanogpt_hparams()};
    o.hp.block = 256;
    o.hp.batch = 1;
    o.hp.steps = 1000; /* the lr schedule's length: the timed steps fall in its warmup */
    int lora_flag = 0;
    cli_opt opts[] = {
        {.name = "--lora", .kind = CLI_FLAG, .target = &lora_flag, .help = "this benchmark (kiln bench train --lora)"},
        {.name = "--shapes", .kind = CLI_STRING, .target = &o.shapes, .meta = "LIST",
         .help = "gpt2-small, qwen2.5-0.5b, comma separated"},
        {.name = "--layers", .kind = CLI_INT, .target = &o.layers, .meta = "N",
         .help = "blocks of each shape (0: the shape's own; fewer for a quick run)", .min = 0, .max = 1024},
        {.name = "--block", .kind = CLI_INT, .target = &o.hp.block, .meta = "N", .help = "sequence length",
         .min = 1, .max = 1 << 16},
        {.name = "--batch", .kind = CLI_INT, .target = &o.hp.batch, .meta = "N", .help = "sequences per step",
         .min = 1, .max = 1 << 16},
        {.name = "--lora-rank", .kind = CLI_INT, .target = &o.rank, .meta = "R", .help = "adapter rank",
         .min = 1, .max = 1 << 16},
        {.name = "--lora-alpha", .kind = CLI_FLOAT, .target = &o.alpha, .meta = "A", .help = "adapter alpha",
         .min = 1e-6, .max = 1e6},
        {.name = "--steps", .kind = CLI_INT, .target = &o.steps, .meta = "N", .help = "timed steps of each run",
         .min = 1, .max = 1 << 20},
        {.name = "--warmup-steps", .kind = CLI_INT, .target = &o.warmup_steps, .meta = "N",
         .help = "untimed steps of each run first", .min = 0, .max = 1 << 20},
        {.name = "--threads", .kind = CLI_INT, .target = &o.threads, .meta = "N",
         .help = "PyTorch threads (0: one per CPU, as kiln's OpenMP)", .min = 0, .max = 4096},
        host_backend_option(&o.backend),
        host_device_option(&o.device),
        {.name = "--python", .kind = CLI_STRING, .target = &o.python, .meta = "PATH", .help = "the Python with torch"},
        {.name = "--torch-script", .kind = CLI_STRING, .target = &o.script, .meta = "PATH",
         .help = "the PyTorch side (default: $KILN_LORA_TORCH_SCRIPT, else lora_torch.py in kiln's share/kiln/)"},
        {.name = "--no-torch", .kind = CLI_FLAG, .target = &o.no_torch, .help = "measure kiln only"},
    };
    const char *summary =
        "Full fine-tuning against LoRA on one device, from an F16 and a Q4_0 base: each run's\n"
        "peak device memory and step time, on random-init GPT-2 small and a Qwen2.5-0.5B-shaped\n"
        "model (LoRA only) built in memory; on the cpu backend also PyTorch's LoRA step\n"
        "(samples/lora_torch.py) on the same shape, and the ratio.";
    int rc = cli_parse("bench train --lora", summary, argc, argv, 3, opts, (int)(sizeof opts / sizeof opts[0]));
    if (rc) return rc < 0 ? 1 : 0;
    const lora_shape shapes[] = {{"gpt2-small", 1, gpt2_small()}, {"qwen2.5-0.5b", 0, qwen25_05b()}};
    int chosen[2] = {0};
    char list[256];
    snprintf(list, sizeof list, "%s", o.shapes);
    for (char *save = NULL, *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        int k = !strcmp(name, shapes[0].name) ? 0 : !strcmp(name, shapes[1].name) ? 1 : -1;
        if (k < 0) return host_error("--shapes: unknown shape \"%s\" (gpt2-small, qwen2.5-0.5b)", name);
        chosen[k] = 1;
    }
    kiln_ctx *probe = host_open_device(o.backend, o.device);
    if (!probe) return 1;
    host_say_device("bench train --lora", probe);
    printf("device: %s, %s\n", kiln_backend_name(probe), kiln_device_name(probe));
    kiln_close(probe);
    printf("LoRA rank %d, alpha %g on every linear of the blocks; sequence %d, batch %d; %d timed step(s) of each run "
           "after %d warm-up; random-init bases built in memory, random tokens\n",
           o.rank, (double)o.alpha, o.hp.block, o.hp.batch, o.steps, o.warmup_steps);
    for (int k = 0; k < 2; k++)
        if (chosen[k] && bench_shape(&o, &shapes[k])) return 1;
    return 0;
}
