/* `kiln decode`: generates tokens from a prompt, streaming their text to stdout as they come.
 * The prompt is text (--prompt; the tokenizer's BOS in front when its configuration says
 * so) or ids (--prompt-ids 1,2,3); --print-ids prints the generated ids instead of their
 * text: decimal, one space between, a newline at the end (with --echo the prompt's first).
 * Decoding stops after an end-of-generation id of the tokenizer (tokenizer_eog_ids), unless
 * --ignore-eog.
 *
 * With the KV cache (the default) the prompt runs once and every new token costs one
 * position; --no-cache recomputes the whole window for every token (the reference the cache
 * is tested against). When the context is full, both keep its last half and go on, so the
 * two stay token-for-token identical. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/attention_option.h"
#include "run/cli.h"
#include "cli/gpt/gpt_commands.h"
#include "run/device.h"
#include "cli/device_check.h"
#include "run/precision_option.h"
#include "run/gpt_load.h"
#include "run/gpt_tokenizer.h"
#include "run/lora_option.h"
#include "run/progress.h"
#include "model/gpt/gpt_checkpoint.h"
#include "model/sample.h"

typedef struct decoder {
    gpt_model *m;
    gpt_kv_cache *cache; /* NULL with --no-cache */
    int cache_start;     /* the cache holds tokens[cache_start, cache_start + cache->len) */
    int32_t *tokens;     /* the prompt, then the generated tokens */
    int len;
    int start;           /* the model sees tokens[start, len) */
} decoder;

/* The logits [V] of the token after tokens[start, len), into host memory. */
static int next_logits(decoder *d, float *logits) {
    gpt_model *m = d->m;
    int context = m->cfg.n_positions;
    if (d->len - d->start > context) {
        int keep = context / 2 > 0 ? context / 2 : 1;
        d->start = d->len - keep;
    }
    kiln_tensor *out;
    if (d->cache) {
        if (d->cache_start != d->start) { /* the window moved: refill the cache from it */
            d->cache->len = 0;
            d->cache_start = d->start;
        }
        int have = d->cache->len, want = d->len - d->start;
        out = gpt_forward_cached(m, d->cache, d->tokens + d->start + have, want - have);
    } else {
        int64_t shape[2] = {1, d->len - d->start};
        kiln_tensor *ids = kiln_tensor_temp(m->ctx, KILN_I32, 2, shape);
        if (ids && kiln_upload(ids, d->tokens + d->start, (size_t)shape[1] * sizeof(int32_t)))
            ids = NULL;
        out = ids ? kiln_slice(gpt_forward(m, ids, 0.0f), 1, shape[1] - 1, 1) : NULL;
    }
    int rc = out && kiln_download_f32(out, logits, m->cfg.vocab_size) == KILN_OK ? 0 : -1;
    kiln_step_reset(m->ctx);
    return rc;
}

/* What the command line asks for. */
typedef struct decode_options {
    const char *ckpt, *prompt, *prompt_ids, *tok_path, *backend, *precision, *attention;
    int device, max_new, greedy, no_cache, echo, trust, print_ids, ignore_eog;
    sample_opts so;
    kiln_dtype dtype;
    host_attention attention_mode;
    cli_list lora; /* --lora PATH[:SCALE], in order */
} decode_options;

/* Parses the options. Returns 0, 1 after --help, or -1 (printed). */
static int parse_options(int argc, char **argv, decode_options *o) {
    *o = (decode_options){.backend = "auto", .precision = "fp32", .attention = "auto", .device = -1, .max_new = 200,
                          .so = {.temperature = 1.0f, .top_p = 1.0f, .seed = 1}};
    cli_opt opts[] = {
        {.name = "--ckpt", .kind = CLI_STRING, .target = &o->ckpt, .meta = "FILE",
         .help = "the GPT: a kiln checkpoint, a GGUF file or a Hugging Face folder"},
        {.name = "--prompt", .kind = CLI_STRING, .target = &o->prompt, .meta = "TEXT",
         .help = "the text to continue"},
        {.name = "--prompt-ids", .kind = CLI_STRING, .target = &o->prompt_ids, .meta = "IDS",
         .help = "the token ids to continue, comma-separated (instead of --prompt)"},
        {.name = "--print-ids", .kind = CLI_FLAG, .target = &o->print_ids,
         .help = "print the generated token ids (decimal, one space between) instead of text"},
        {.name = "--ignore-eog", .kind = CLI_FLAG, .target = &o->ignore_eog,
         .help = "go on after an end-of-generation token (the tokenizer's EOS, EOT, ...)"},
        {.name = "--tokenizer", .kind = CLI_STRING, .target = &o->tok_path, .meta = "FILE",
         .help = "the model's tokenizer (default: the checkpoint's own, else bytes)"},
        {.name = "--lora", .kind = CLI_LIST, .target = &o->lora, .meta = "PATH[:SCALE]", .help = HOST_LORA_HELP},
        {.name = "--max-new", .kind = CLI_INT, .target = &o->max_new, .meta = "N",
         .help = "tokens to generate", .min = 0, .max = 1 << 30},
        {.name = "--greedy", .kind = CLI_FLAG, .target = &o->greedy, .help = "always take the most likely token"},
        {.name = "--temperature", .kind = CLI_FLOAT, .target = &o->so.temperature, .meta = "T",
         .help = "divides the logits (0: greedy)", .min = 0, .max = 100},
        {.name = "--top-k", .kind = CLI_INT, .target = &o->so.top_k, .meta = "K",
         .help = "sample among the K most likely tokens (0: all)", .min = 0, .max = 1 << 30},
        {.name = "--top-p", .kind = CLI_FLOAT, .target = &o->so.top_p, .meta = "P",
         .help = "sample among the most likely tokens whose probability reaches P (1: all)",
         .min = 0, .max = 1},
        {.name = "--seed", .kind = CLI_U64, .target = &o->so.seed, .meta = "N",
         .help = "seed of the sampling RNG"},
        {.name = "--no-cache", .kind = CLI_FLAG, .target = &o->no_cache,
         .help = "recompute the whole window per token (no KV cache)"},
        {.name = "--echo", .kind = CLI_FLAG, .target = &o->echo,
         .help = "print the prompt before the generated text"},
        host_precision_option(&o->precision),
        host_attention_option(&o->attention),
        host_backend_option(&o->backend),
        host_device_option(&o->device),
        host_trust_device_option(&o->trust),
    };
    int n = (int)(sizeof opts / sizeof opts[0]);
    const char *summary =
        "Continues a prompt with a GPT (its tokenizer: --tokenizer, the checkpoint's, or bytes); the text\n"
        "streams to stdout. A seq2seq checkpoint translates instead, with its own options (--input,\n"
        "--input-file, --beam, --length-penalty): `kiln decode --help` lists every kind's options,\n"
        "`kiln decode --ckpt FILE --help` those of FILE's kind.\n"
        "--lora applies LoRA adapters to the GPT as it runs (kiln train --lora-rank writes them).";
    int rc = cli_parse("decode", summary, argc, argv, 2, opts, n);
    if (rc) return rc < 0 ? -1 : 1;
    if (!o->ckpt) return -host_error("kiln decode needs --ckpt FILE");
    if (!o->prompt == !o->prompt_ids) return -host_error("kiln decode needs --prompt TEXT or --prompt-ids IDS (one of them)");
    o->so.greedy = o->greedy;
    if (o->so.top_p <= 0.0f) return -host_error("--top-p must be above 0 (1 turns it off)");
    return host_parse_precision(o->precision, &o->dtype) || host_parse_attention(o->attention, &o->attention_mode) ? -1 : 0;
}

/* A decoding run: the model on its device, its tokenizer, the sampler. */
typedef struct decode_run {
    kiln_ctx *ctx;
    decoder d;
    tokenizer *tok;
    sampler *smp;
    float *logits;
    lora_adapter **adapters; /* --lora's, attached to d.m */
} decode_run;

/* The device and the model in the precision asked for. */
static int open_model(decode_run *r, const decode_options *o) {
    r->ctx = host_open_checked_device("decode", o->backend, o->device, o->dtype, o->trust);
    if (!r->ctx) return 1;
    if (host_load_gpt_as(r->ctx, o->ckpt, o->tok_path, o->dtype, &r->d.m, &r->tok)) return 1;
    /* fp16: f16 weights, activations and KV cache (the f32 weights are released) */
    if (gpt_set_precision(r->d.m, o->dtype, 0)) return host_engine_error("--precision fp16");
    return host_load_loras(r->d.m, r->tok, o->ckpt, &o->lora, 1, &r->adapters);
}

/* --prompt-ids "1,2,3": each id in the model's vocabulary. *ids is malloc'd. */
static int parse_prompt_ids(const char *s, int32_t vocab, int32_t **ids, int64_t *n_ids) {
    size_t cap = 1;
    for (const char *p = s; *p; p++) cap += *p == ',';
    *ids = malloc(cap * sizeof **ids);
    if (!*ids) return host_error("out of host memory");
    *n_ids = 0;
    for (const char *p = s;; p++) {
        char *end;
        long long v = -1;
        if (*p >= '0' && *p <= '9') v = strtoll(p, &end, 10);
        if (v < 0 || (*end != ',' && *end != '\0'))
            return host_error("--prompt-ids: \"%s\" is not a comma-separated list of ids (at id %lld)", s,
                              (long long)*n_ids + 1);
        if (v >= vocab)
            return host_error("--prompt-ids: the id %lld (id %lld of the list) is outside the model's vocabulary "
                              "(0..%ld)", v, (long long)*n_ids + 1, (long)vocab - 1);
        (*ids)[(*n_ids)++] = (int32_t)v;
        if (!*end) return 0;
        p = end;
    }
}

/* The prompt's ids: --prompt-ids, or --prompt encoded (BOS in front when the tokenizer's
 * configuration asks for it). *ids is malloc'd. */
static int prompt_ids(decode_run *r, const decode_options *o, int32_t **ids, int64_t *n_ids) {
    char err[1024];
    *ids = NULL;
    if (o->prompt_ids) return parse_prompt_ids(o->prompt_ids, r->d.m->cfg.vocab_size, ids, n_ids);
    if (tokenizer_encode(r->tok, (const uint8_t *)o->prompt, strlen(o->prompt), ids, n_ids, err, sizeof err))
        return host_error("--prompt: %s", err);
    if (!tokenizer_add_bos(r->tok)) return 0;
    int32_t *with = realloc(*ids, ((size_t)*n_ids + 1) * sizeof *with);
    if (!with) return host_error("out of host memory");
    memmove(with + 1, with, (size_t)*n_ids * sizeof *with);
    with[0] = tokenizer_special(r->tok, TOK_BOS);
    *ids = with;
    ++*n_ids;
    return 0;
}

/* The prompt as tokens at the start of the decoder's, and room for what follows. */
static int start_prompt(decode_run *r, const decode_options *o) {
    const gpt_config *cfg = &r->d.m->cfg;
    int32_t *ids = NULL;
    int64_t n_ids = 0;
    if (prompt_ids(r, o, &ids, &n_ids)) {
        free(ids);
        return 1;
    }
    int rc = 0;
    if (n_ids > cfg->n_positions) {
        rc = host_error("the prompt is %lld tokens but the model's context is %d (n_positions): "
                        "shorten the prompt", (long long)n_ids, cfg->n_positions);
    } else {
        r->d.tokens = malloc(((size_t)n_ids + (size_t)o->max_new + 1) * sizeof *r->d.tokens);
        r->logits = malloc((size_t)cfg->vocab_size * sizeof *r->logits);
        r->smp = sampler_new(cfg->vocab_size, &o->so);
        if (!r->d.tokens || !r->logits || !r->smp) {
            rc = host_error("out of host memory");
        } else {
            memcpy(r->d.tokens, ids, (size_t)n_ids * sizeof *r->d.tokens);
            r->d.len = (int)n_ids;
        }
    }
    free(ids);
    return rc;
}

/* --attention: the longest window a forward sees is the prompt and what is generated, up to
 * n_positions (the prompt's rows over it without the cache, all of them at once). */
static int choose_attention(decode_run *r, const decode_options *o) {
    gpt_model *m = r->d.m;
    int64_t window = (int64_t)r->d.len + o->max_new;
    uint64_t t = (uint64_t)(window < m->cfg.n_positions ? window : m->cfg.n_positions);
    char context[64];
    snprintf(context, sizeof context, "a window of %llu tokens", (unsigned long long)t);
    int fused = host_attention_forward("decode", o->attention_mode, &m->block.o, r->ctx,
                                       (uint64_t)m->cfg.n_head * t * t * (uint64_t)m->cfg.n_layer, o->dtype, context);
    if (fused < 0) return 1;
    m->block.attention_fused = fused;
    return 0;
}

/* Writes ids[0..n) to stdout: as ids (a space before each but the very first), or as their
 * text (at_start: nothing came before them). */
static int put_tokens(decode_run *r, const decode_options *o, const int32_t *ids, int64_t n, int at_start) {
    char err[1024];
    if (o->print_ids) {
        for (int64_t i = 0; i < n; i++) printf(at_start && i == 0 ? "%ld" : " %ld", (long)ids[i]);
        return 0;
    }
    uint8_t *bytes;
    size_t nb;
    if (tokenizer_decode_at(r->tok, ids, n, at_start, &bytes, &nb, err, sizeof err)) return host_error("%s", err);
    fwrite(bytes, 1, nb, stdout);
    free(bytes);
    return 0;
}

/* The prompt when --echo asks for it: its text as given, or its ids (or their text). */
static int echo_prompt(decode_run *r, const decode_options *o) {
    if (!o->echo) return 0;
    if (o->prompt && !o->print_ids) {
        fwrite(o->prompt, 1, strlen(o->prompt), stdout);
        return 0;
    }
    return put_tokens(r, o, r->d.tokens, r->d.len, 1);
}

static int is_eog(const int32_t *eog, int n_eog, int32_t id) {
    for (int i = 0; i < n_eog; i++)
        if (eog[i] == id) return 1;
    return 0;
}

/* max_new tokens (fewer after an end of generation), each written to stdout as it comes,
 * then the speed on stderr. */
static int generate(decode_run *r, const decode_options *o) {
    decoder *d = &r->d;
    int32_t eog[16];
    int n_eog = o->ignore_eog ? 0 : tokenizer_eog_ids(r->tok, eog, 16), made = 0, prompt_len = d->len;
    if (!o->no_cache && !(d->cache = gpt_kv_new(d->m))) return host_engine_error("cannot allocate the KV cache");
    kiln_set_grad_enabled(r->ctx, 0);
    kiln_set_training(r->ctx, 0);
    if (echo_prompt(r, o)) return 1;
    int printed = o->echo && (prompt_len > 0 || (o->prompt && *o->prompt));
    double t0 = progress_now();
    for (; made < o->max_new; made++) {
        if (next_logits(d, r->logits)) {
            fflush(stdout);
            return host_engine_error("decoding");
        }
        int32_t next = sampler_next(r->smp, r->logits, (uint64_t)d->len);
        d->tokens[d->len++] = next;
        /* text continues the prompt (the decoder strips a first space only at the start) */
        if (put_tokens(r, o, &next, 1, o->print_ids ? !printed : d->len == 1)) return 1;
        printed = 1;
        fflush(stdout);
        if (is_eog(eog, n_eog, next)) {
            made++;
            break;
        }
    }
    if (o->print_ids) printf("\n");
    if (fflush(stdout) || ferror(stdout)) return host_error("stdout: cannot write");
    double dt = progress_now() - t0;
    fprintf(stderr, "\nkiln decode: %d tokens in %.2f s (%.1f tokens/s)%s%s\n", made, dt, dt > 0 ? made / dt : 0.0,
            d->cache ? "" : " without the KV cache", made < o->max_new ? ", stopped at an end-of-generation token" : "");
    return 0;
}

int gpt_decode_command(int argc, char **argv) {
    decode_options o;
    int parsed = parse_options(argc, argv, &o);
    if (parsed) return parsed < 0 ? 1 : 0;
    decode_run r = {0};
    int rc = open_model(&r, &o) || start_prompt(&r, &o) || choose_attention(&r, &o);
    if (rc == 0) {
        host_say_device("decode", r.ctx);
        rc = generate(&r, &o);
    }
    sampler_free(r.smp);
    free(r.logits);
    tokenizer_free(r.tok);
    free(r.d.tokens);
    gpt_kv_free(r.d.cache);
    host_free_loras(r.adapters, o.lora.count);
    gpt_free(r.d.m);
    kiln_close(r.ctx);
    return rc;
}
