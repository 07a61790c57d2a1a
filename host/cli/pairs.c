/* `kiln pairs from-mo --out DIR FILE.mo...`: translation pairs for a seq2seq model from GNU
 * gettext catalogs (e.g. /usr/share/locale/de/LC_MESSAGES/ catalogs: English msgid -> German
 * msgstr), written as DIR/train.tsv, DIR/valid.tsv and DIR/test.tsv (formats/pairs.h).
 *
 * - Which entries become pairs, and how they are cleaned: formats/mo_pairs.h (header,
 *   plural, untranslated, multi-line, control-character, non-UTF-8 and placeholder-only
 *   entries are dropped; GTK mnemonics removed). A catalog in a charset other than UTF-8,
 *   ASCII or ISO-8859-1 gives no pairs (counted as "other charset").
 * - Duplicates: the first pair with a given source wins, in the order of the catalogs sorted
 *   by path (byte order), then of their entries; so the result does not depend on the order
 *   the shell lists the files in.
 * - The split: FNV-1a 64 of the source's bytes, mod 100: below 90 train, below 95 valid,
 *   else test. It depends on the source only, so a sentence never crosses splits and adding
 *   catalogs never moves a pair from one split to another.
 * - Each file is written whole (kiln/file.h): a reader sees the old file or the new one.
 *   DIR is created when missing.
 * The counts (catalogs, entries, each reason to drop one, pairs per split) go to stdout, one
 * "name value" per line. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "formats/mo_catalog.h"
#include "formats/mo_pairs.h"
#include "kiln/file.h"
#include "run/cli.h"

enum { SPLIT_TRAIN, SPLIT_VALID, SPLIT_TEST, N_SPLITS };
static const char *split_names[N_SPLITS] = {"train", "valid", "test"};

static uint64_t fnv1a64(const char *s, size_t n) {
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

static int split_of(const char *src, size_t n) {
    uint64_t bucket = fnv1a64(src, n) % 100;
    return bucket < 90 ? SPLIT_TRAIN : bucket < 95 ? SPLIT_VALID : SPLIT_TEST;
}

/* The pairs kept so far, and an open-addressing set of their sources (indices + 1; 0 is
 * free) for the duplicate check. */
typedef struct pair_set {
    char **src, **tgt;
    size_t *src_len, *tgt_len;
    size_t count, cap;
    size_t *slots, n_slots;
} pair_set;

static void pair_set_free(pair_set *p) {
    for (size_t i = 0; i < p->count; i++) {
        free(p->src[i]);
        free(p->tgt[i]);
    }
    free(p->src);
    free(p->tgt);
    free(p->src_len);
    free(p->tgt_len);
    free(p->slots);
}

/* The slot of src: where it is, or the free slot where it would go. */
static size_t find_slot(const pair_set *p, const char *src, size_t n) {
    size_t i = (size_t)(fnv1a64(src, n) & (p->n_slots - 1));
    while (p->slots[i]) {
        size_t k = p->slots[i] - 1;
        if (p->src_len[k] == n && memcmp(p->src[k], src, n) == 0) break;
        i = (i + 1) & (p->n_slots - 1);
    }
    return i;
}

/* Grows the arrays and the set (kept at most half full) for one more pair. */
static int pair_set_reserve(pair_set *p) {
    if (p->count == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 1024;
        char **src = realloc(p->src, cap * sizeof *src);
        if (src) p->src = src;
        char **tgt = realloc(p->tgt, cap * sizeof *tgt);
        if (tgt) p->tgt = tgt;
        size_t *sl = realloc(p->src_len, cap * sizeof *sl);
        if (sl) p->src_len = sl;
        size_t *tl = realloc(p->tgt_len, cap * sizeof *tl);
        if (tl) p->tgt_len = tl;
        if (!src || !tgt || !sl || !tl) return -1;
        p->cap = cap;
    }
    if (2 * (p->count + 1) > p->n_slots) {
        size_t n_slots = p->n_slots ? 2 * p->n_slots : 2048;
        size_t *slots = calloc(n_slots, sizeof *slots), *old = p->slots;
        if (!slots) return -1;
        p->slots = slots;
        p->n_slots = n_slots;
        for (size_t k = 0; k < p->count; k++) slots[find_slot(p, p->src[k], p->src_len[k])] = k + 1;
        free(old);
    }
    return 0;
}

static int by_path(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Writes the pairs of one split to DIR/NAME.tsv, whole (kiln/file.h). */
static int write_split(const pair_set *p, const int *split, int which, const char *dir, char *path, size_t path_cap) {
    int k = snprintf(path, path_cap, "%s/%s.tsv", dir, split_names[which]);
    if (k < 0 || (size_t)k >= path_cap) return host_error("%s: the path is too long", dir);
    char err[4400];
    kiln_file *f = kiln_file_begin(path, err, sizeof err);
    if (!f) return host_error("%s", err);
    for (size_t i = 0; i < p->count; i++) {
        if (split[i] != which) continue;
        kiln_file_write(f, p->src[i], p->src_len[i]);
        kiln_file_write(f, "\t", 1);
        kiln_file_write(f, p->tgt[i], p->tgt_len[i]);
        kiln_file_write(f, "\n", 1);
    }
    return kiln_file_commit(f, err, sizeof err) == KILN_OK ? 0 : host_error("%s", err);
}

/* What reading the catalogs found: the counts printed at the end. */
typedef struct mo_counts {
    int64_t entries, dropped[MO_PAIR_N_VERDICTS], other_charset, duplicates, sysdep;
} mo_counts;

/* The entries of catalog c into p (the first pair with a given source wins), counted in *n;
 * 0, or 1 with one line printed (out of memory). */
static int add_catalog(const mo_catalog *c, pair_set *p, mo_counts *n) {
    n->entries += c->count;
    n->sysdep += c->sysdep_count;
    mo_encoding enc = mo_catalog_encoding(c);
    for (int64_t i = 0; i < c->count; i++) {
        if (enc == MO_UNSUPPORTED) {
            n->other_charset++;
            continue;
        }
        char *src, *tgt;
        size_t sn, tn;
        int verdict = mo_entry_pair(&c->entries[i], enc, &src, &sn, &tgt, &tn);
        if (verdict < 0 || (verdict == MO_PAIR_KEPT && pair_set_reserve(p) != 0)) {
            free(src);
            free(tgt);
            return host_error("out of memory after %zu pairs", p->count);
        }
        if (verdict != MO_PAIR_KEPT) {
            n->dropped[verdict]++;
            continue;
        }
        size_t slot = find_slot(p, src, sn);
        if (p->slots[slot]) {
            n->duplicates++;
            free(src);
            free(tgt);
            continue;
        }
        p->src[p->count] = src, p->src_len[p->count] = sn, p->tgt[p->count] = tgt, p->tgt_len[p->count] = tn;
        p->slots[slot] = ++p->count;
    }
    return 0;
}

/* The catalogs, in the order of their paths (byte order), into p; 0, or 1 with one line
 * printed. */
static int read_catalogs(const cli_list *files, pair_set *p, mo_counts *n) {
    const char *sorted[CLI_LIST_MAX];
    memcpy(sorted, files->items, (size_t)files->count * sizeof *sorted);
    qsort(sorted, (size_t)files->count, sizeof *sorted, by_path);
    char err[512];
    int rc = 0;
    for (int f = 0; f < files->count && !rc; f++) {
        mo_catalog *c;
        if (mo_load(sorted[f], &c, err, sizeof err) != 0) return host_error("%s", err);
        rc = add_catalog(c, p, n);
        mo_free(c);
    }
    if (!rc && p->count == 0)
        rc = host_error("no pairs: every entry of the %d catalog%s was dropped", files->count,
                        files->count > 1 ? "s" : "");
    return rc;
}

/* --out DIR, created when missing; 0, or 1 with one line printed. */
static int make_out_dir(const char *out) {
    struct stat st;
    if (stat(out, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) return host_error("--out %s exists and is not a directory", out);
    } else if (mkdir(out, 0777) != 0) {
        return host_error("--out %s: cannot create the directory: %s", out, strerror(errno));
    }
    return 0;
}

/* The counts, one "name value" per line, and each split's size and path. */
static void print_counts(int catalogs, const mo_counts *n, size_t kept, const int64_t *per_split,
                         char paths[N_SPLITS][4096]) {
    printf("catalogs %d\nentries %lld\n", catalogs, (long long)n->entries);
    for (int v = MO_PAIR_KEPT + 1; v < MO_PAIR_N_VERDICTS; v++)
        printf("dropped %s %lld\n", mo_pair_verdict_name((mo_pair_verdict)v), (long long)n->dropped[v]);
    printf("dropped other charset %lld\ndropped duplicate source %lld\n", (long long)n->other_charset,
           (long long)n->duplicates);
    printf("not read: system-dependent strings %lld\nkept %zu\n", (long long)n->sysdep, kept);
    for (int s = 0; s < N_SPLITS; s++) {
        printf("%s %lld %s\n", split_names[s], (long long)per_split[s], paths[s]);
        if (!per_split[s])
            fprintf(stderr, "kiln pairs: warning: %s is empty (too few pairs for a 90/5/5 split)\n", paths[s]);
    }
}

static int from_mo(int argc, char **argv) {
    cli_list files = {0};
    const char *out = NULL;
    cli_opt opts[] = {
        {.name = "FILE.mo", .kind = CLI_POSITIONAL, .target = &files},
        {.name = "--out", .kind = CLI_STRING, .target = &out, .meta = "DIR",
         .help = "where train.tsv, valid.tsv and test.tsv are written (created when missing)"},
    };
    const char *summary =
        "Translation pairs (msgid -> msgstr) from GNU gettext catalogs, deduplicated by source and\n"
        "split 90/5/5 by a hash of the source into DIR/train.tsv, valid.tsv and test.tsv.\n"
        "Example: kiln pairs from-mo --out data/de /usr/share/locale/de/LC_MESSAGES/*.mo";
    int rc = cli_parse("pairs from-mo", summary, argc, argv, 3, opts, (int)(sizeof opts / sizeof opts[0]));
    if (rc) return rc < 0 ? 1 : 0;
    if (!out) return host_error("kiln pairs from-mo needs --out DIR");
    if (!files.count) return host_error("kiln pairs from-mo needs at least one .mo file");
    if (make_out_dir(out)) return 1;
    mo_counts n = {0};
    pair_set p = {0};
    rc = read_catalogs(&files, &p, &n);
    int *split = rc ? NULL : malloc(p.count * sizeof *split);
    if (!rc && !split) rc = host_error("out of memory");
    int64_t per_split[N_SPLITS] = {0};
    for (size_t i = 0; !rc && i < p.count; i++) per_split[split[i] = split_of(p.src[i], p.src_len[i])]++;
    char paths[N_SPLITS][4096];
    for (int s = 0; s < N_SPLITS && !rc; s++) rc = write_split(&p, split, s, out, paths[s], sizeof paths[s]);
    if (!rc) print_counts(files.count, &n, p.count, per_split, paths);
    free(split);
    pair_set_free(&p);
    return rc;
}

int cmd_pairs(int argc, char **argv) {
    const char *what = argc >= 3 ? argv[2] : "";
    if (!strcmp(what, "from-mo")) return from_mo(argc, argv);
    if (cli_help_asked(argc, argv, 2)) {
        printf("usage: kiln pairs from-mo --out DIR FILE.mo...\n\n"
               "Translation pairs for seq2seq training (kiln pairs from-mo --help for the details).\n");
        return 0;
    }
    return host_error("kiln pairs: expected from-mo (kiln pairs from-mo --out DIR FILE.mo...)");
}
