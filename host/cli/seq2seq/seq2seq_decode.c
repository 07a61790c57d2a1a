/* `kiln decode` with an encoder-decoder checkpoint: translates --input TEXT, or every line
 * of --input-file FILE, writing one output line per input line, in order. Greedy by
 * default, --batch lines at a time as one batch; --beam K searches K hypotheses ranked with GNMT's length penalty
 * (--length-penalty alpha). The encoder runs once per input and every decoder layer's
 * cross-attention keys and values are computed once (model/seq2seq/seq2seq_search.c). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/seq2seq/seq2seq_beam.h"
#include "run/cli.h"
#include "run/count_progress.h"
#include "cli/seq2seq/seq2seq_commands.h"
#include "run/device.h"
#include "run/progress.h"
#include "cli/seq2seq/seq2seq_session.h"
#include "formats/file_open.h"

/* Lines translated together (greedy decoding runs them as one batch). */
enum { DECODE_BATCH_MAX = 256 };

/* Translates lines[0..n) and prints one line each, in order: greedy ones as one batch. An
 * empty line has nothing to translate and stays empty. */
static int translate_lines(s2s_session *s, const seq2seq_search_opts *o, const char **lines, const size_t *lens, int n) {
    const char *texts[DECODE_BATCH_MAX];
    size_t text_lens[DECODE_BATCH_MAX], out_len[DECODE_BATCH_MAX];
    char *out[DECODE_BATCH_MAX];
    int k = 0;
    for (int i = 0; i < n; i++)
        if (lens[i]) {
            texts[k] = lines[i];
            text_lens[k++] = lens[i];
        }
    if (k && s2s_translate_texts(s, texts, text_lens, k, o, out, out_len)) return 1;
    for (int i = 0, j = 0; i < n; i++) {
        if (lens[i]) {
            fwrite(out[j], 1, out_len[j], stdout);
            free(out[j++]);
        }
        fputc('\n', stdout);
    }
    fflush(stdout);
    return 0;
}

/* The lines the loop below reads: one per newline, and a last one without. */
static int64_t count_lines(const char *text, size_t len) {
    int64_t n = 0;
    for (const char *p = text; (p = memchr(p, '\n', len - (size_t)(p - text))); p++) n++;
    return n + (len && text[len - 1] != '\n');
}

int seq2seq_decode_command(int argc, char **argv) {
    s2s_open_options so = s2s_open_defaults();
    const char *ckpt = NULL, *input = NULL, *input_file = NULL, *prompt = NULL;
    int beam = 1, max_new = 0, batch = 32;
    float length_penalty = SEQ2SEQ_LENGTH_PENALTY;
    const cli_opt own[] = {
        {.name = "--ckpt", .kind = CLI_STRING, .target = &ckpt, .meta = "FILE",
         .help = "an encoder-decoder checkpoint (kiln train --model seq2seq)"},
        {.name = "--input", .kind = CLI_STRING, .target = &input, .meta = "TEXT", .help = "the text to translate"},
        {.name = "--input-file", .kind = CLI_STRING, .target = &input_file, .meta = "FILE",
         .help = "translate every line of FILE, one output line each"},
        {.name = "--prompt", .kind = CLI_STRING, .target = &prompt, .meta = "TEXT",
         .help = "a GPT's option, refused here with a hint"},
        {.name = "--beam", .kind = CLI_INT, .target = &beam, .meta = "K", .help = "beam width (1: greedy)", .min = 1,
         .max = 64},
        {.name = "--length-penalty", .kind = CLI_FLOAT, .target = &length_penalty, .meta = "A",
         .help = "GNMT's alpha: hypotheses rank by log P / ((5 + length) / 6)^A", .min = 0, .max = 10},
        {.name = "--batch", .kind = CLI_INT, .target = &batch, .meta = "N",
         .help = "lines of --input-file decoded together (greedy)", .min = 1, .max = DECODE_BATCH_MAX},
        {.name = "--max-new", .kind = CLI_INT, .target = &max_new, .meta = "N",
         .help = "output tokens at most (0: the model's positions)", .min = 0, .max = 1 << 20},
    };
    cli_opt opts[sizeof own / sizeof own[0] + S2S_OPEN_OPTIONS];
    memcpy(opts, own, sizeof own);
    int n = (int)(sizeof own / sizeof own[0]);
    n += s2s_open_cli_options(&so, opts + n);
    int rc = cli_parse("decode", "Translates text with an encoder-decoder checkpoint, one output line per input line.",
                       argc, argv, 2, opts, n);
    if (rc) return rc < 0 ? 1 : 0;
    if (!ckpt) return host_error("kiln decode needs --ckpt FILE");
    if (prompt)
        return host_error("%s is an encoder-decoder (seq2seq) checkpoint: it translates --input TEXT or --input-file "
                          "FILE; --prompt continues a GPT's text", ckpt);
    if (!input == !input_file) return host_error("an encoder-decoder checkpoint needs --input TEXT or --input-file FILE");
    char *text = NULL;
    size_t text_len = 0;
    char err[1024];
    if (input_file && file_read_all(input_file, "--input-file", &text, &text_len, err, sizeof err)) return host_error("%s", err);
    s2s_session s;
    rc = s2s_session_open(&s, "decode", ckpt, &so);
    if (rc == 0) {
        host_say_device("decode", s.ctx);
        seq2seq_search_opts o = s2s_search_opts(&s, beam, length_penalty, max_new);
        double t0 = progress_now();
        int lines = 0;
        if (input) {
            size_t len = strlen(input);
            rc = translate_lines(&s, &o, &input, &len, 1);
            lines = 1;
        } else {
            const char *group[DECODE_BATCH_MAX];
            size_t group_len[DECODE_BATCH_MAX];
            int in_group = 0;
            /* translations printed to a terminal are their own progress: a bar would break
             * into their lines */
            int show = !isatty(fileno(stdout));
            count_progress bar;
            count_progress_init(&bar, stderr, "decode", "lines", count_lines(text, text_len));
            for (size_t at = 0; at < text_len && rc == 0; lines++) {
                const char *nl = memchr(text + at, '\n', text_len - at);
                size_t end = nl ? (size_t)(nl - text) : text_len, len = end - at;
                if (len && text[at + len - 1] == '\r') len--;
                group[in_group] = text + at;
                group_len[in_group++] = len;
                if (in_group == batch) {
                    rc = translate_lines(&s, &o, group, group_len, in_group);
                    in_group = 0;
                    if (show) count_progress_update(&bar, lines + 1);
                }
                at = end + 1;
            }
            if (rc == 0 && in_group) rc = translate_lines(&s, &o, group, group_len, in_group);
            if (rc == 0 && show) count_progress_update(&bar, lines);
            count_progress_finish(&bar);
        }
        if (rc == 0)
            fprintf(stderr, "kiln decode: %d line%s in %.2f s (beam %d)%s\n", lines, lines == 1 ? "" : "s",
                    progress_now() - t0, beam, s.truncated ? "; some sources were cut to the model's positions" : "");
    }
    s2s_session_close(&s);
    free(text);
    return rc;
}
