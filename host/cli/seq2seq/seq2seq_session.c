/* Encoder-decoder checkpoints at the command line (seq2seq_session.h). */
#include "cli/seq2seq/seq2seq_session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/attention_option.h"
#include "run/cli.h"
#include "run/device.h"
#include "cli/device_check.h"
#include "run/precision_option.h"
#include "model/checkpoint_tokenizer.h"
#include "model/seq2seq/seq2seq_checkpoint.h"

s2s_open_options s2s_open_defaults(void) {
    return (s2s_open_options){.backend = "auto", .precision = "fp32", .attention = "auto", .device = -1};
}

int s2s_open_cli_options(s2s_open_options *o, cli_opt *opts) {
    const cli_opt own[S2S_OPEN_OPTIONS] = {
        {.name = "--precision", .kind = CLI_STRING, .target = &o->precision, .meta = "P", .help = "fp32 or fp16"},
        host_attention_option(&o->attention),
        {.name = "--tokenizer", .kind = CLI_STRING, .target = &o->tok_path, .meta = "FILE",
         .help = "both sides' tokenizer (default: the checkpoint's own)"},
        host_backend_option(&o->backend),
        host_device_option(&o->device),
        host_trust_device_option(&o->trust),
    };
    memcpy(opts, own, sizeof own);
    return S2S_OPEN_OPTIONS;
}

/* --attention: at least one sequence of the model's max_len through the encoder's
 * self-attention and the decoder's self- and cross-attention. */
static int s2s_session_attention(s2s_session *s, const char *command, host_attention mode, kiln_dtype dtype) {
    const seq2seq_config *c = &s->m->cfg;
    uint64_t sublayer = (uint64_t)c->n_head * (uint64_t)c->max_len * (uint64_t)c->max_len;
    char context[32];
    snprintf(context, sizeof context, "max_len %d", c->max_len);
    int fused = host_attention_forward(command, mode, &c->block, s->ctx,
                                       sublayer * (uint64_t)(c->enc_layers + 2 * c->dec_layers), dtype, context);
    if (fused < 0) return 1;
    s->m->enc_block.attention_fused = s->m->dec_block.attention_fused = fused;
    return 0;
}

int s2s_session_open(s2s_session *s, const char *command, const char *ckpt, const s2s_open_options *o) {
    memset(s, 0, sizeof *s);
    const char *tok_path = o->tok_path;
    char err[1024];
    kiln_dtype dtype;
    host_attention mode;
    if (host_parse_precision(o->precision, &dtype) || host_parse_attention(o->attention, &mode)) return 1;
    if (tok_path) {
        if (tokenizer_load(tok_path, &s->src, err, sizeof err)) return host_error("%s", err);
        s->tgt = s->src;
    } else if (checkpoint_tokenizer_pair(ckpt, &s->src, &s->tgt, err, sizeof err)) {
        return host_error("%s", err);
    }
    if (!(s->ctx = host_open_checked_device(command, o->backend, o->device, dtype, o->trust))) return 1;
    if (seq2seq_checkpoint_load(s->ctx, ckpt, &s->m, err, sizeof err)) return host_error("%s", err);
    if (tokenizer_vocab_size(s->src) != s->m->cfg.src_vocab || tokenizer_vocab_size(s->tgt) != s->m->cfg.tgt_vocab)
        return host_error("%s: its tokenizers' vocabularies (%d, %d) disagree with the model's (%d, %d)", ckpt,
                          tokenizer_vocab_size(s->src), tokenizer_vocab_size(s->tgt), s->m->cfg.src_vocab,
                          s->m->cfg.tgt_vocab);
    if (tokenizer_special(s->tgt, TOK_BOS) < 0 || tokenizer_special(s->tgt, TOK_EOS) < 0 ||
        tokenizer_special(s->src, TOK_EOS) < 0)
        return host_error("%s: its tokenizer has no [BOS] or [EOS]", ckpt);
    if (seq2seq_set_precision(s->m, dtype, 0)) return host_engine_error("--precision fp16");
    return s2s_session_attention(s, command, mode, dtype);
}

void s2s_session_close(s2s_session *s) {
    seq2seq_free(s->m);
    if (s->tgt != s->src) tokenizer_free(s->tgt);
    tokenizer_free(s->src);
    kiln_close(s->ctx);
    memset(s, 0, sizeof *s);
}

seq2seq_search_opts s2s_search_opts(const s2s_session *s, int beam, float length_penalty, int max_new) {
    int room = s->m->cfg.max_len - 1;
    return (seq2seq_search_opts){.beam = beam, .length_penalty = length_penalty,
                                 .max_len = max_new > 0 && max_new < room ? max_new : room,
                                 .bos = tokenizer_special(s->tgt, TOK_BOS), .eos = tokenizer_special(s->tgt, TOK_EOS)};
}

/* Target ids as text on one line: line breaks and tabs become spaces. */
static int ids_to_line(s2s_session *s, const int32_t *ids, int n, char **out, size_t *out_len) {
    char err[1024];
    uint8_t *bytes;
    size_t nb;
    if (tokenizer_decode(s->tgt, ids, n, &bytes, &nb, err, sizeof err)) return host_error("%s", err);
    for (size_t i = 0; i < nb; i++)
        if (bytes[i] == '\n' || bytes[i] == '\r' || bytes[i] == '\t') bytes[i] = ' ';
    *out = (char *)bytes;
    *out_len = nb;
    return 0;
}

/* Source ids of text, cut to the model's positions (counted in s->truncated). */
static int source_ids(s2s_session *s, const char *text, size_t n, int32_t **ids, int *n_ids) {
    char err[1024];
    int64_t k;
    if (tokenizer_encode(s->src, (const uint8_t *)text, n, ids, &k, err, sizeof err)) return host_error("%s", err);
    int room = s->m->cfg.max_len - 1;
    if (k > room) {
        k = room;
        s->truncated++;
    }
    *n_ids = (int)k;
    return 0;
}

int s2s_translate_texts(s2s_session *s, const char *const *texts, const size_t *lens, int n,
                        const seq2seq_search_opts *o, char **out, size_t *out_len) {
    if (o->beam > 1) {
        for (int i = 0; i < n; i++) {
            if (s2s_translate_text(s, texts[i], lens[i], o, &out[i], &out_len[i])) {
                for (int k = 0; k < i; k++) free(out[k]);
                return 1;
            }
        }
        return 0;
    }
    int32_t **ids = calloc((size_t)n, sizeof *ids), *outs = malloc((size_t)n * (size_t)o->max_len * sizeof *outs);
    int *n_ids = calloc((size_t)n, sizeof *n_ids), *out_lens = calloc((size_t)n, sizeof *out_lens);
    int rc = !ids || !outs || !n_ids || !out_lens ? host_error("out of host memory") : 0;
    for (int i = 0; i < n && !rc; i++) rc = source_ids(s, texts[i], lens[i], &ids[i], &n_ids[i]);
    if (!rc && seq2seq_translate_batch(s->m, (const int32_t *const *)ids, n_ids, n, o, outs, o->max_len, out_lens))
        rc = host_engine_error("translating");
    int done = 0;
    for (; done < n && !rc; done++) rc = ids_to_line(s, outs + (int64_t)done * o->max_len, out_lens[done], &out[done], &out_len[done]);
    if (rc)
        for (int k = 0; k < done - 1; k++) free(out[k]);
    for (int i = 0; ids && i < n; i++) free(ids[i]);
    free(ids);
    free(outs);
    free(n_ids);
    free(out_lens);
    return rc;
}

int s2s_translate_text(s2s_session *s, const char *text, size_t n, const seq2seq_search_opts *o, char **out,
                       size_t *out_len) {
    int32_t *ids = NULL, *result = malloc((size_t)o->max_len * sizeof *result);
    int n_ids;
    if (!result) return host_error("out of host memory");
    if (source_ids(s, text, n, &ids, &n_ids)) {
        free(result);
        return 1;
    }
    int len = seq2seq_translate(s->m, ids, n_ids, o, result, o->max_len, NULL);
    free(ids);
    int rc = len < 0 ? host_engine_error("translating") : ids_to_line(s, result, len, out, out_len);
    free(result);
    return rc;
}
