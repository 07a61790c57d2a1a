/* `kiln eval` with an encoder-decoder checkpoint on held-out source<TAB>target pairs:
 *   loss X    mean cross-entropy per target token (EOS included), teacher-forced
 *   bleu Y    corpus BLEU of the translations (greedy in batches of 32, or --beam K) as sacreBLEU computes it
 *             by default: 13a tokenization, 4-grams, brevity penalty (text/bleu.h)
 *   exact Z   the fraction of translations identical to their reference
 * BLEU's details (n-gram precisions, brevity penalty, lengths) go to stderr. Pairs longer
 * than the model's positions count in BLEU (their sources cut) but not in the loss. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/seq2seq/seq2seq_beam.h"
#include "run/cli.h"
#include "run/count_progress.h"
#include "cli/seq2seq/seq2seq_commands.h"
#include "run/device.h"
#include "cli/seq2seq/seq2seq_session.h"
#include "formats/pairs.h"
#include "model/seq2seq/seq2seq_data.h"
#include "text/bleu.h"

int seq2seq_eval_command(int argc, char **argv) {
    s2s_open_options so = s2s_open_defaults();
    const char *ckpt = NULL, *data = NULL;
    int beam = 1, max_new = 0, batch_tokens = 4096;
    float length_penalty = SEQ2SEQ_LENGTH_PENALTY;
    const cli_opt own[] = {
        {.name = "--ckpt", .kind = CLI_STRING, .target = &ckpt, .meta = "FILE", .help = "an encoder-decoder checkpoint"},
        {.name = "--data", .kind = CLI_STRING, .target = &data, .meta = "FILE",
         .help = "held-out source<TAB>target pairs"},
        {.name = "--beam", .kind = CLI_INT, .target = &beam, .meta = "K", .help = "beam width for BLEU (1: greedy)",
         .min = 1, .max = 64},
        {.name = "--length-penalty", .kind = CLI_FLOAT, .target = &length_penalty, .meta = "A",
         .help = "GNMT's alpha for the beam", .min = 0, .max = 10},
        {.name = "--max-new", .kind = CLI_INT, .target = &max_new, .meta = "N",
         .help = "output tokens at most (0: the model's positions)", .min = 0, .max = 1 << 20},
        {.name = "--batch-tokens", .kind = CLI_INT, .target = &batch_tokens, .meta = "N",
         .help = "padded tokens per batch of the loss", .min = 2, .max = 1 << 26},
    };
    cli_opt opts[sizeof own / sizeof own[0] + S2S_OPEN_OPTIONS];
    memcpy(opts, own, sizeof own);
    int n = (int)(sizeof own / sizeof own[0]);
    n += s2s_open_cli_options(&so, opts + n);
    int rc = cli_parse("eval", "Loss, BLEU and exact matches of an encoder-decoder checkpoint on held-out pairs.",
                       argc, argv, 2, opts, n);
    if (rc) return rc < 0 ? 1 : 0;
    if (!ckpt || !data) return host_error("kiln eval needs --ckpt FILE and --data FILE");
    char err[1024];
    text_pairs *p = NULL;
    if (pairs_load(data, &p, err, sizeof err)) return host_error("%s", err);
    s2s_session s;
    seq2seq_data *d = NULL;
    rc = s2s_session_open(&s, "eval", ckpt, &so);
    double loss = 0;
    if (rc == 0 && seq2seq_data_build(p, 0, p->count, s.src, s.tgt, s.m->cfg.max_len, batch_tokens, &d, err,
                                      sizeof err))
        rc = host_error("%s: %s", data, err);
    if (rc == 0) { /* the loss pass: a forward per batch, minutes on a large test set */
        host_say_device("eval", s.ctx);
        count_progress bar;
        count_progress_init(&bar, stderr, "eval", "batches scored", d->n_batches);
        eval_watch watch = {.done = count_progress_done, .self = &bar};
        if (seq2seq_data_loss_watched(s.m, d, &watch, &loss, err, sizeof err)) rc = host_error("%s: %s", data, err);
        count_progress_finish(&bar);
    }
    bleu_stats stats = {0};
    int64_t exact = 0;
    if (rc == 0) {
        seq2seq_search_opts o = s2s_search_opts(&s, beam, length_penalty, max_new);
        enum { GROUP = 32 };
        count_progress bar; /* a beam over thousands of pairs takes minutes */
        count_progress_init(&bar, stderr, "eval", "pairs translated", p->count);
        for (int64_t at = 0; at < p->count && rc == 0; at += GROUP) {
            int n_group = (int)(p->count - at < GROUP ? p->count - at : GROUP);
            char *hyp[GROUP];
            size_t len[GROUP];
            if ((rc = s2s_translate_texts(&s, (const char *const *)p->src + at, p->src_len + at, n_group, &o, hyp, len)))
                break;
            for (int k = 0; k < n_group; k++) {
                int64_t i = at + k;
                if (!rc && bleu_add(&stats, hyp[k], len[k], p->tgt[i], p->tgt_len[i])) rc = host_error("out of host memory");
                exact += len[k] == p->tgt_len[i] && !memcmp(hyp[k], p->tgt[i], len[k]);
                free(hyp[k]);
            }
            count_progress_update(&bar, at + n_group);
        }
        count_progress_finish(&bar);
    }
    if (rc == 0) {
        bleu_result b = bleu_score(&stats);
        fprintf(stderr, "kiln eval: %lld pairs; BLEU %.2f = BP %.3f (ratio %.3f, hyp %lld, ref %lld), "
                "precisions %.1f/%.1f/%.1f/%.1f; beam %d\n", (long long)p->count, b.score, b.bp, b.ratio,
                (long long)b.sys_len, (long long)b.ref_len, b.precisions[0], b.precisions[1], b.precisions[2],
                b.precisions[3], beam);
        if (d->dropped) fprintf(stderr, "kiln eval: %lld pairs are longer than the model's positions and left out of the loss\n", (long long)d->dropped);
        printf("loss %.6f\nbleu %.2f\nexact %.4f\n", loss, b.score, (double)exact / (double)p->count);
    }
    seq2seq_data_free(d);
    s2s_session_close(&s);
    pairs_free(p);
    return rc;
}
