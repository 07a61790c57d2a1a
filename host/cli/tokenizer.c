/* `kiln tokenizer`: train a byte-level BPE, import GPT-2's tokenizer or a Hugging Face
 * tokenizer.json, and inspect tokenizers (encode, decode, bench).
 *
 *   kiln tokenizer train  --data FILE --vocab N --out FILE
 *   kiln tokenizer import --vocab vocab.json --merges merges.txt --out FILE
 *   kiln tokenizer import --hf tokenizer.json --out FILE
 *   kiln tokenizer encode --tokenizer FILE [--input FILE]      ids on stdout, one line
 *   kiln tokenizer decode --tokenizer FILE [--input FILE]      bytes on stdout
 *   kiln tokenizer bench  --data FILE [--tokenizer FILE ...]   encoding MB/s, training time
 * Without --tokenizer, encode and decode use the byte-level tokenizer (a name ending in .json
 * is a tokenizer.json, imported as it is read); without --input they read stdin. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "run/cli.h"
#include "run/progress.h"
#include "text/tokenizer.h"

/* The whole of a file ("-" or NULL: stdin), malloc'd; NULL after an error line. */
static uint8_t *read_input(const char *path, size_t *n) {
    FILE *f = path && strcmp(path, "-") ? fopen(path, "rb") : stdin;
    const char *name = f == stdin ? "stdin" : path;
    if (!f) {
        host_error("%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap) break;
        uint8_t *grown = realloc(buf, cap * 2);
        if (!grown) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = grown, cap *= 2;
    }
    int bad = ferror(f);
    if (f != stdin) fclose(f);
    if (!buf || bad) {
        free(buf);
        host_error("%s: %s", name, buf ? "cannot read" : "out of memory");
        return NULL;
    }
    *n = len;
    return buf;
}

/* The tokenizer named by --tokenizer, or the byte-level one. */
static tokenizer *open_tokenizer(const char *path) {
    char err[512];
    tokenizer *t = NULL;
    if (!path) {
        t = tokenizer_bytes(0);
        if (!t) host_error("out of memory");
        return t;
    }
    size_t len = strlen(path);
    int json = len >= 5 && !strcmp(path + len - 5, ".json"); /* a tokenizer.json, imported as it is read */
    if ((json ? tokenizer_import_hf(path, &t, err, sizeof err) : tokenizer_load(path, &t, err, sizeof err)))
        host_error("%s", err);
    return t;
}

static int save(const tokenizer *t, const char *out) {
    char err[512];
    if (tokenizer_save(t, out, err, sizeof err)) return host_error("%s", err);
    fprintf(stderr, "kiln tokenizer: %s (%ld ids, %ld merges)\n", out, (long)tokenizer_vocab_size(t),
            (long)tokenizer_merge_count(t));
    return 0;
}

static int cmd_train_tokenizer(int argc, char **argv) {
    const char *data = NULL, *out = NULL;
    int vocab = 0;
    cli_opt opts[] = {
        {.name = "--data", .kind = CLI_STRING, .target = &data, .meta = "FILE", .help = "the text to learn from"},
        {.name = "--vocab", .kind = CLI_INT, .target = &vocab, .meta = "N",
         .help = "ids in all: 256 bytes + 6 specials + the merges (at least 262)", .min = 0, .max = TOKENIZER_MAX_VOCAB},
        {.name = "--out", .kind = CLI_STRING, .target = &out, .meta = "FILE", .help = "the tokenizer file to write"},
    };
    int rc = cli_parse("tokenizer train", "Learns a byte-level BPE (GPT-2's pre-tokenization) from a text file.", argc,
                       argv, 3, opts, 3);
    if (rc) return rc < 0 ? 1 : 0;
    if (!data || !out || !opts[1].seen) return host_error("kiln tokenizer train needs --data FILE --vocab N --out FILE");
    if (vocab < TOKENIZER_MIN_TRAINED_VOCAB)
        return host_error("--vocab %d is too small: the 256 bytes and the 6 special tokens need %d", vocab,
                          TOKENIZER_MIN_TRAINED_VOCAB);
    size_t n;
    uint8_t *text = read_input(data, &n);
    if (!text) return 1;
    char err[512];
    tokenizer *t;
    double start = progress_now();
    if (tokenizer_train(text, n, vocab, &t, err, sizeof err)) {
        free(text);
        return host_error("%s: %s", data, err);
    }
    fprintf(stderr, "kiln tokenizer: learned %ld merges from %zu bytes in %.2f s\n", (long)tokenizer_merge_count(t), n,
            progress_now() - start);
    free(text);
    rc = save(t, out);
    tokenizer_free(t);
    return rc;
}

static int cmd_import(int argc, char **argv) {
    const char *vocab = NULL, *merges = NULL, *hf = NULL, *out = NULL;
    cli_opt opts[] = {
        {.name = "--hf", .kind = CLI_STRING, .target = &hf, .meta = "tokenizer.json",
         .help = "a Hugging Face tokenizer.json (its tokenizer_config.json beside it names the roles)"},
        {.name = "--vocab", .kind = CLI_STRING, .target = &vocab, .meta = "vocab.json", .help = "Hugging Face's GPT-2 vocab.json"},
        {.name = "--merges", .kind = CLI_STRING, .target = &merges, .meta = "merges.txt", .help = "Hugging Face's GPT-2 merges.txt"},
        {.name = "--out", .kind = CLI_STRING, .target = &out, .meta = "FILE", .help = "the tokenizer file to write"},
    };
    int rc = cli_parse("tokenizer import",
                       "Imports a Hugging Face tokenizer.json (--hf), or GPT-2's tokenizer as vocab.json and merges.txt.",
                       argc, argv, 3, opts, 4);
    if (rc) return rc < 0 ? 1 : 0;
    if (!out || (hf ? vocab || merges : !vocab || !merges))
        return host_error("kiln tokenizer import needs --hf tokenizer.json --out FILE, or --vocab vocab.json --merges "
                          "merges.txt --out FILE");
    char err[512];
    tokenizer *t;
    if (hf ? tokenizer_import_hf(hf, &t, err, sizeof err) : tokenizer_import_gpt2(vocab, merges, &t, err, sizeof err))
        return host_error("%s", err);
    rc = save(t, out);
    tokenizer_free(t);
    return rc;
}

static int cmd_encode(int argc, char **argv) {
    const char *path = NULL, *input = NULL;
    cli_opt opts[] = {
        {.name = "--tokenizer", .kind = CLI_STRING, .target = &path, .meta = "FILE", .help = "a tokenizer file (default: bytes)"},
        {.name = "--input", .kind = CLI_STRING, .target = &input, .meta = "FILE", .help = "the text (default: stdin)"},
    };
    int rc = cli_parse("tokenizer encode", "Prints the ids of a text, space-separated on one line.", argc, argv, 3, opts, 2);
    if (rc) return rc < 0 ? 1 : 0;
    tokenizer *t = open_tokenizer(path);
    size_t n;
    uint8_t *text = t ? read_input(input, &n) : NULL;
    if (!text) {
        tokenizer_free(t);
        return 1;
    }
    int32_t *ids;
    int64_t n_ids;
    char err[512];
    rc = tokenizer_encode(t, text, n, &ids, &n_ids, err, sizeof err) ? host_error("%s", err) : 0;
    for (int64_t i = 0; !rc && i < n_ids; i++) printf(i ? " %ld" : "%ld", (long)ids[i]);
    if (!rc) printf("\n");
    if (!rc) free(ids);
    free(text);
    tokenizer_free(t);
    if (!rc && (fflush(stdout) || ferror(stdout))) rc = host_error("stdout: cannot write");
    return rc;
}

static int cmd_decode_ids(int argc, char **argv) {
    const char *path = NULL, *input = NULL;
    cli_opt opts[] = {
        {.name = "--tokenizer", .kind = CLI_STRING, .target = &path, .meta = "FILE", .help = "a tokenizer file (default: bytes)"},
        {.name = "--input", .kind = CLI_STRING, .target = &input, .meta = "FILE",
         .help = "ids separated by white space (default: stdin)"},
    };
    int rc = cli_parse("tokenizer decode", "Writes the bytes of a list of ids to stdout.", argc, argv, 3, opts, 2);
    if (rc) return rc < 0 ? 1 : 0;
    tokenizer *t = open_tokenizer(path);
    size_t n;
    uint8_t *text = t ? read_input(input, &n) : NULL;
    int32_t *ids = text ? malloc((n / 2 + 1) * sizeof *ids) : NULL; /* an id and a space take 2 bytes or more */
    if (!ids) {
        if (text) host_error("out of memory");
        free(text);
        tokenizer_free(t);
        return 1;
    }
    int64_t n_ids = 0;
    for (size_t i = 0; i < n && !rc;) {
        if (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r') {
            i++;
            continue;
        }
        size_t start = i;
        long long v = 0;
        while (i < n && text[i] >= '0' && text[i] <= '9' && v <= INT32_MAX) v = v * 10 + (text[i++] - '0');
        if (i == start || v > INT32_MAX || (i < n && text[i] != ' ' && text[i] != '\n' && text[i] != '\t' && text[i] != '\r'))
            rc = host_error("%s: byte %zu: expected ids (whole numbers) separated by white space",
                            input ? input : "stdin", start);
        else
            ids[n_ids++] = (int32_t)v;
    }
    uint8_t *bytes = NULL;
    size_t n_bytes = 0;
    char err[512];
    if (!rc && tokenizer_decode(t, ids, n_ids, &bytes, &n_bytes, err, sizeof err)) rc = host_error("%s", err);
    if (!rc && (fwrite(bytes, 1, n_bytes, stdout) != n_bytes || fflush(stdout))) rc = host_error("stdout: cannot write");
    free(bytes);
    free(ids);
    free(text);
    tokenizer_free(t);
    return rc;
}

/* Encoding throughput: the best of `reps` runs, in MB/s (10^6 bytes). */
static double encode_mb_per_s(const tokenizer *t, const uint8_t *text, size_t n, int reps, int cached, int64_t *n_ids) {
    double best = 0;
    for (int r = 0; r < reps; r++) {
        int32_t *ids;
        double start = progress_now();
        if ((cached ? tokenizer_encode : tokenizer_encode_uncached)(t, text, n, &ids, n_ids, NULL, 0)) return -1;
        double s = progress_now() - start;
        free(ids);
        if (s > 0 && n / s / 1e6 > best) best = n / s / 1e6;
    }
    return best;
}

/* A peer's MB/s from its last output line "MB/s X" (tests/gpt2_reference.py --bench), or -1. */
static double peer_mb_per_s(const char *command) {
    FILE *p = popen(command, "r");
    if (!p) return -1;
    char line[256];
    double v = -1;
    while (fgets(line, sizeof line, p)) sscanf(line, "MB/s %lf", &v);
    return pclose(p) == 0 ? v : -1;
}

static int cmd_bench_tokenizer(int argc, char **argv) {
    const char *data = NULL, *gpt2 = NULL, *peer = NULL;
    int vocab = 8192, repeat = 10;
    cli_opt opts[] = {
        {.name = "--data", .kind = CLI_STRING, .target = &data, .meta = "FILE", .help = "the text to train on and encode"},
        {.name = "--gpt2", .kind = CLI_STRING, .target = &gpt2, .meta = "FILE",
         .help = "GPT-2's tokenizer (kiln tokenizer import) to encode with too"},
        {.name = "--vocab", .kind = CLI_INT, .target = &vocab, .meta = "N", .help = "the trained BPE's vocabulary",
         .min = TOKENIZER_MIN_TRAINED_VOCAB, .max = TOKENIZER_MAX_VOCAB},
        {.name = "--repeat", .kind = CLI_INT, .target = &repeat, .meta = "N",
         .help = "the larger text: the data this many times", .min = 1, .max = 1000},
        {.name = "--peer", .kind = CLI_STRING, .target = &peer, .meta = "COMMAND",
         .help = "a command printing \"MB/s X\" for GPT-2 on --data (e.g. the Python reference), for a ratio"},
    };
    int rc = cli_parse("tokenizer bench", "Training time and encoding MB/s of a trained BPE and GPT-2's tokenizer.",
                       argc, argv, 3, opts, 5);
    if (rc) return rc < 0 ? 1 : 0;
    if (!data) return host_error("kiln tokenizer bench needs --data FILE");
    size_t n;
    uint8_t *text = read_input(data, &n);
    if (!text) return 1;
    uint8_t *big = malloc(n * (size_t)repeat + 1);
    tokenizer *trained = NULL, *g = NULL;
    char err[512];
    if (!big) {
        free(text);
        return host_error("out of memory");
    }
    for (int r = 0; r < repeat; r++) memcpy(big + (size_t)r * n, text, n);
    double start = progress_now();
    if (tokenizer_train(text, n, vocab, &trained, err, sizeof err)) {
        rc = host_error("%s: %s", data, err);
        goto done;
    }
    printf("train      %s (%.2f MB) -> %ld ids: %.2f s\n", data, n / 1e6, (long)tokenizer_vocab_size(trained),
           progress_now() - start);
    if (gpt2 && (g = open_tokenizer(gpt2)) == NULL) {
        rc = 1;
        goto done;
    }
    const struct {
        const char *name;
        const tokenizer *t;
    } cases[] = {{"trained", trained}, {"gpt2", g}};
    double gpt2_small = -1;
    for (int c = 0; c < 2; c++) {
        if (!cases[c].t) continue;
        int64_t ids_small, ids_big, ids_raw;
        double small = encode_mb_per_s(cases[c].t, text, n, 5, 1, &ids_small);
        double large = encode_mb_per_s(cases[c].t, big, n * (size_t)repeat, 2, 1, &ids_big);
        double raw = encode_mb_per_s(cases[c].t, text, n, 3, 0, &ids_raw);
        printf("encode     %-8s %.2f MB: %7.2f MB/s (%.2f bytes/token)   %.2f MB: %7.2f MB/s   no cache: %7.2f MB/s\n",
               cases[c].name, n / 1e6, small, (double)n / (double)ids_small, n * (double)repeat / 1e6, large, raw);
        if (c == 1) gpt2_small = small;
    }
    if (peer && gpt2_small > 0) {
        double p = peer_mb_per_s(peer);
        if (p > 0)
            printf("peer       %.2f MB/s: kiln is %.1fx (%s)\n", p, gpt2_small / p, peer);
        else
            printf("peer       did not report (%s)\n", peer);
    }
done:
    tokenizer_free(trained);
    tokenizer_free(g);
    free(text);
    free(big);
    return rc;
}

int cmd_tokenizer(int argc, char **argv) {
    const char *what = argc >= 3 ? argv[2] : "";
    static const struct {
        const char *name;
        int (*run)(int, char **);
    } subs[] = {{"train", cmd_train_tokenizer}, {"import", cmd_import}, {"encode", cmd_encode},
                {"decode", cmd_decode_ids}, {"bench", cmd_bench_tokenizer}};
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        if (!strcmp(what, subs[i].name)) return subs[i].run(argc, argv);
    if (cli_help_asked(argc, argv, 2)) {
        printf("usage: kiln tokenizer train|import|encode|decode|bench [options]\n"
               "  train   learn a byte-level BPE from a text file\n"
               "  import  GPT-2's tokenizer from Hugging Face's vocab.json and merges.txt\n"
               "  encode  a text's ids;  decode  ids back to bytes\n"
               "  bench   training time and encoding MB/s\n"
               "`kiln tokenizer <sub> --help` lists its options.\n");
        return 0;
    }
    return host_error("kiln tokenizer: expected train, import, encode, decode or bench (see kiln tokenizer --help)");
}
