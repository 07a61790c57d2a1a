/* What `kiln decode` and `kiln eval` do with an encoder-decoder checkpoint: open it with its
 * tokenizers on a device, and translate text (cli/seq2seq/seq2seq_decode.c, seq2seq_eval.c). */
#ifndef KILN_HOST_CLI_SEQ2SEQ_SESSION_H
#define KILN_HOST_CLI_SEQ2SEQ_SESSION_H

#include <stddef.h>

#include "model/seq2seq/seq2seq.h"
#include "run/cli.h"
#include "text/tokenizer.h"

typedef struct s2s_session {
    kiln_ctx *ctx;
    seq2seq_model *m;
    tokenizer *src, *tgt; /* the same object when shared */
    int truncated;        /* sources cut to the model's positions so far */
} s2s_session;

/* Opens the device (checked on its first use unless `trust`: cli/device_check.h; `command`
 * names the command in errors), the model (in `precision`) and its tokenizers: the
 * checkpoint's, or tok_path (when not NULL) for both sides. Returns 0, or 1 with the error
 * printed. */
/* How eval and decode open the checkpoint: the options they share. */
typedef struct s2s_open_options {
    const char *tok_path, *backend, *precision, *attention;
    int device, trust;
} s2s_open_options;

/* The defaults: the checkpoint's tokenizers, --backend auto, fp32, --attention auto. */
s2s_open_options s2s_open_defaults(void);

/* Writes those options (--precision, --attention, --tokenizer, --backend, --device,
 * --trust-device) to opts, which has room for S2S_OPEN_OPTIONS; returns their number. */
enum { S2S_OPEN_OPTIONS = 6 };
int s2s_open_cli_options(s2s_open_options *o, cli_opt *opts);

int s2s_session_open(s2s_session *s, const char *command, const char *ckpt, const s2s_open_options *o);
void s2s_session_close(s2s_session *s);

/* Translates text[0..n): *out (malloc'd, *out_len bytes) is the target text, with line
 * breaks and tabs turned into spaces so that one input line gives one output line. A
 * source longer than the model's positions is cut (counted in s->truncated). Returns 0,
 * or 1 with the error printed. */
int s2s_translate_text(s2s_session *s, const char *text, size_t n, const seq2seq_search_opts *o, char **out,
                       size_t *out_len);

/* Translates n texts: greedy ones as one batch (seq2seq_translate_batch), beam searches
 * one by one. out[i] (malloc'd, out_len[i] bytes) as s2s_translate_text's. Returns 0, or 1
 * with the error printed (and nothing left allocated). */
int s2s_translate_texts(s2s_session *s, const char *const *texts, const size_t *lens, int n,
                        const seq2seq_search_opts *o, char **out, size_t *out_len);

/* Search options for this session's model: BOS and EOS of its target tokenizer, at most
 * max_new output tokens (0: as many as the model has positions). */
seq2seq_search_opts s2s_search_opts(const s2s_session *s, int beam, float length_penalty, int max_new);

#endif
