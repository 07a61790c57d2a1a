/* Learning a byte-level BPE from text.
 *
 * The text is cut into GPT-2's pieces (text/pretokenize.h) and each distinct piece counted
 * once with its frequency; merges never cross pieces. Every adjacent pair of symbols has a
 * count (the sum of its pieces' frequencies) and the list of pieces it occurs in, and a
 * max-heap orders the pairs by count. Each step merges the best pair in the pieces that
 * hold it, left to right without overlap (as encoding will), and updates only the counts
 * of those pieces, so a step costs the size of the pieces it touches, not a recount.
 *
 * Ties: among pairs of equal count, the one with the smallest left id wins, then the
 * smallest right id (ids are bytes 0..255 and merges in the order they were made), so the
 * same text always gives the same merges. Training stops at vocab_size ids, or earlier when
 * no pair occurs twice (a merge seen once only memorises the text). */
#include <stdlib.h>
#include <string.h>

#include "formats/error_printf.h"
#include "text/pretokenize.h"
#include "text/tokenizer_internal.h"

typedef struct word {
    size_t start; /* in syms */
    int32_t len;  /* symbols now */
    int64_t freq;
} word;

typedef struct pair_info {
    int32_t left, right;
    int64_t count;
    int32_t *words; /* may repeat, and may name words that no longer hold the pair */
    int32_t n_words, cap_words;
    int64_t stamp; /* the step that last touched it */
} pair_info;

typedef struct heap_item {
    int64_t count;
    int32_t left, right;
} heap_item;

/* The state of one learning run: the counted pieces (words), their symbols, every pair seen
 * with its count and pieces, and the heap of pairs by count. (Not model/trainer.h's trainer,
 * which trains a model.) */
typedef struct bpe_learner {
    word *words;
    int32_t n_words, cap_words;
    int32_t *syms;
    size_t n_syms, cap_syms;
    pair_info *pairs;
    int32_t n_pairs, cap_pairs;
    int32_t *pair_slots; /* pair index + 1; 0: empty */
    size_t pair_cap;
    heap_item *heap;
    size_t heap_n, heap_cap;
    int32_t *touched; /* the pairs whose count the current step changed */
    size_t n_touched, cap_touched;
} bpe_learner;

static uint64_t mix(uint64_t x) {
    x ^= x >> 31;
    x *= UINT64_C(0x9E3779B97F4A7C15);
    return x ^ (x >> 29);
}

/* The index of pair (l, r), created when `create`; -1 when absent or out of memory. */
static int32_t pair_index(bpe_learner *bl, int32_t l, int32_t r, int create) {
    if (create && 2 * (size_t)(bl->n_pairs + 1) > bl->pair_cap) {
        size_t cap = bl->pair_cap ? 2 * bl->pair_cap : 1 << 16;
        int32_t *slots = calloc(cap, sizeof *slots);
        if (!slots) return -1;
        for (int32_t i = 0; i < bl->n_pairs; i++) {
            uint64_t key = (uint64_t)(uint32_t)bl->pairs[i].left << 32 | (uint32_t)bl->pairs[i].right;
            size_t s = (size_t)mix(key) & (cap - 1);
            while (slots[s]) s = (s + 1) & (cap - 1);
            slots[s] = i + 1;
        }
        free(bl->pair_slots);
        bl->pair_slots = slots, bl->pair_cap = cap;
    }
    if (!bl->pair_cap) return -1;
    uint64_t key = (uint64_t)(uint32_t)l << 32 | (uint32_t)r;
    size_t s = (size_t)mix(key) & (bl->pair_cap - 1);
    for (; bl->pair_slots[s]; s = (s + 1) & (bl->pair_cap - 1)) {
        pair_info *p = &bl->pairs[bl->pair_slots[s] - 1];
        if (p->left == l && p->right == r) return bl->pair_slots[s] - 1;
    }
    if (!create) return -1;
    if (bl->n_pairs == bl->cap_pairs) {
        int32_t cap = bl->cap_pairs ? 2 * bl->cap_pairs : 4096;
        pair_info *grown = realloc(bl->pairs, (size_t)cap * sizeof *grown);
        if (!grown) return -1;
        bl->pairs = grown, bl->cap_pairs = cap;
    }
    bl->pairs[bl->n_pairs] = (pair_info){.left = l, .right = r, .stamp = -1};
    bl->pair_slots[s] = bl->n_pairs + 1;
    return bl->n_pairs++;
}

/* Adds delta (the word's frequency, or minus it) to pair (l, r); a new occurrence also
 * lists the word. */
static int add_pair(bpe_learner *bl, int32_t l, int32_t r, int64_t delta, int32_t w, int64_t step) {
    int32_t i = pair_index(bl, l, r, 1);
    if (i < 0) return -1;
    pair_info *p = &bl->pairs[i];
    p->count += delta;
    if (p->stamp != step) {
        p->stamp = step;
        if (bl->n_touched == bl->cap_touched) {
            size_t cap = bl->cap_touched ? 2 * bl->cap_touched : 4096;
            int32_t *grown = realloc(bl->touched, cap * sizeof *grown);
            if (!grown) return -1;
            bl->touched = grown, bl->cap_touched = cap;
        }
        bl->touched[bl->n_touched++] = i;
    }
    if (delta > 0) {
        if (p->n_words == p->cap_words) {
            int32_t cap = p->cap_words ? 2 * p->cap_words : 4;
            int32_t *grown = realloc(p->words, (size_t)cap * sizeof *grown);
            if (!grown) return -1;
            p->words = grown, p->cap_words = cap;
        }
        p->words[p->n_words++] = w;
    }
    return 0;
}

/* The better of two heap items: more frequent, then smaller left, then smaller right. */
static int item_better(const heap_item *a, const heap_item *b) {
    if (a->count != b->count) return a->count > b->count;
    if (a->left != b->left) return a->left < b->left;
    return a->right < b->right;
}

static int heap_push(bpe_learner *bl, heap_item it) {
    if (bl->heap_n == bl->heap_cap) {
        size_t cap = bl->heap_cap ? 2 * bl->heap_cap : 4096;
        heap_item *grown = realloc(bl->heap, cap * sizeof *grown);
        if (!grown) return -1;
        bl->heap = grown, bl->heap_cap = cap;
    }
    size_t i = bl->heap_n++;
    while (i > 0 && item_better(&it, &bl->heap[(i - 1) / 2])) {
        bl->heap[i] = bl->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    bl->heap[i] = it;
    return 0;
}

static heap_item heap_pop(bpe_learner *bl) {
    heap_item top = bl->heap[0], last = bl->heap[--bl->heap_n];
    size_t i = 0, n = bl->heap_n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && item_better(&bl->heap[c + 1], &bl->heap[c])) c++;
        if (!item_better(&bl->heap[c], &last)) break;
        bl->heap[i] = bl->heap[c];
        i = c;
    }
    if (n) bl->heap[i] = last;
    return top;
}

/* Counts the distinct pieces of the text into words (and their bytes into syms). */
static int count_words(bpe_learner *bl, const uint8_t *text, size_t n) {
    size_t cap = 1 << 16, used = 0;
    int32_t *slots = calloc(cap, sizeof *slots); /* word index + 1 */
    size_t *text_pos = NULL;                      /* where each word's piece first occurs */
    if (!slots) return -1;
    int rc = 0;
    for (size_t pos = 0; pos < n && !rc;) {
        size_t end = pretokenize_next(text, n, pos), m = end - pos;
        if (m > INT32_MAX) {
            rc = -1;
            break;
        }
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        for (size_t i = pos; i < end; i++) h = (h ^ text[i]) * UINT64_C(0x100000001b3);
        size_t s = (size_t)h & (cap - 1);
        for (; slots[s]; s = (s + 1) & (cap - 1)) {
            word *w = &bl->words[slots[s] - 1];
            if ((size_t)w->len == m && !memcmp(text + text_pos[slots[s] - 1], text + pos, m)) break;
        }
        if (slots[s]) {
            bl->words[slots[s] - 1].freq++;
            pos = end;
            continue;
        }
        if (bl->n_words == bl->cap_words) {
            int32_t wc = bl->cap_words ? 2 * bl->cap_words : 4096;
            word *grown = realloc(bl->words, (size_t)wc * sizeof *grown);
            size_t *grown_pos = grown ? realloc(text_pos, (size_t)wc * sizeof *grown_pos) : NULL;
            if (grown) bl->words = grown;
            if (!grown_pos) {
                rc = -1;
                break;
            }
            text_pos = grown_pos, bl->cap_words = wc;
        }
        if (bl->n_syms + m > bl->cap_syms) {
            size_t sc = bl->cap_syms ? 2 * bl->cap_syms : 1 << 16;
            while (sc < bl->n_syms + m) sc *= 2;
            int32_t *grown = realloc(bl->syms, sc * sizeof *grown);
            if (!grown) {
                rc = -1;
                break;
            }
            bl->syms = grown, bl->cap_syms = sc;
        }
        for (size_t i = 0; i < m; i++) bl->syms[bl->n_syms + i] = text[pos + i];
        text_pos[bl->n_words] = pos;
        bl->words[bl->n_words] = (word){.start = bl->n_syms, .len = (int32_t)m, .freq = 1};
        bl->n_syms += m;
        slots[s] = ++bl->n_words;
        pos = end;
        if (2 * ++used > cap) { /* rehash into twice the slots */
            size_t ncap = 2 * cap;
            int32_t *ns = calloc(ncap, sizeof *ns);
            if (!ns) {
                rc = -1;
                break;
            }
            for (size_t i = 0; i < cap; i++) {
                if (!slots[i]) continue;
                const word *w = &bl->words[slots[i] - 1];
                uint64_t hh = UINT64_C(0xcbf29ce484222325);
                for (int32_t k = 0; k < w->len; k++) hh = (hh ^ text[text_pos[slots[i] - 1] + (size_t)k]) * UINT64_C(0x100000001b3);
                size_t t = (size_t)hh & (ncap - 1);
                while (ns[t]) t = (t + 1) & (ncap - 1);
                ns[t] = slots[i];
            }
            free(slots);
            slots = ns, cap = ncap;
        }
    }
    free(slots);
    free(text_pos);
    return rc;
}

/* Adds (sign +1) or removes (-1) the pairs of word w. */
static int word_pairs(bpe_learner *bl, int32_t w, int sign, int64_t step) {
    const word *wd = &bl->words[w];
    const int32_t *s = bl->syms + wd->start;
    for (int32_t i = 0; i + 1 < wd->len; i++)
        if (add_pair(bl, s[i], s[i + 1], sign * wd->freq, w, step)) return -1;
    return 0;
}

/* Merges (l, r) into id in word w, left to right without overlap; returns the count of merges. */
static int merge_word(bpe_learner *bl, int32_t w, int32_t l, int32_t r, int32_t id) {
    word *wd = &bl->words[w];
    int32_t *s = bl->syms + wd->start, out = 0, merged = 0;
    for (int32_t i = 0; i < wd->len; i++) {
        if (i + 1 < wd->len && s[i] == l && s[i + 1] == r) {
            s[out++] = id;
            i++;
            merged++;
        } else {
            s[out++] = s[i];
        }
    }
    wd->len = out;
    return merged;
}

static void bpe_learner_free(bpe_learner *bl) {
    for (int32_t i = 0; i < bl->n_pairs; i++) free(bl->pairs[i].words);
    free(bl->pairs);
    free(bl->pair_slots);
    free(bl->words);
    free(bl->syms);
    free(bl->heap);
    free(bl->touched);
}

/* A heap item for every pair the step changed that still occurs; older items of those
 * pairs become stale (their count differs) and are dropped when popped. */
static int push_touched(bpe_learner *bl) {
    for (size_t k = 0; k < bl->n_touched; k++) {
        const pair_info *p = &bl->pairs[bl->touched[k]];
        if (p->count > 0 && heap_push(bl, (heap_item){.count = p->count, .left = p->left, .right = p->right}))
            return -1;
    }
    bl->n_touched = 0;
    return 0;
}

int tokenizer_train(const uint8_t *text, size_t n, int32_t vocab_size, tokenizer **out, char *err, size_t errlen) {
    *out = NULL;
    if (vocab_size < TOKENIZER_MIN_TRAINED_VOCAB || vocab_size > TOKENIZER_MAX_VOCAB) {
        if (vocab_size < TOKENIZER_MIN_TRAINED_VOCAB)
            error_printf(err, errlen, "a vocabulary of %ld is too small: the 256 bytes and the 6 special tokens need %d",
                         (long)vocab_size, TOKENIZER_MIN_TRAINED_VOCAB);
        else
            error_printf(err, errlen, "a vocabulary of %ld is too large (at most %d)", (long)vocab_size,
                         TOKENIZER_MAX_VOCAB);
        return -1;
    }
    bpe_learner bl = {0};
    tokenizer_merge *merges = NULL;
    int32_t n_merges = 0, max_merges = vocab_size - TOKENIZER_MIN_TRAINED_VOCAB;
    int rc = count_words(&bl, text, n);
    for (int32_t w = 0; !rc && w < bl.n_words; w++) rc = word_pairs(&bl, w, +1, 0);
    if (!rc) rc = push_touched(&bl);
    if (!rc && !(merges = malloc((size_t)(max_merges ? max_merges : 1) * sizeof *merges))) rc = -1;
    while (!rc && n_merges < max_merges && bl.heap_n) {
        heap_item best = heap_pop(&bl);
        int32_t bi = pair_index(&bl, best.left, best.right, 0);
        if (bl.pairs[bi].count != best.count) continue; /* stale: a fresher item holds its count */
        if (best.count < 2) break;
        int64_t step = (int64_t)n_merges + 1;
        int32_t id = TOKENIZER_MIN_TRAINED_VOCAB + n_merges;
        merges[n_merges++] = (tokenizer_merge){.left = best.left, .right = best.right, .result = id};
        /* take the pair's word list: adding pairs below may grow the pairs array under it */
        int32_t *list = bl.pairs[bi].words, n_list = bl.pairs[bi].n_words;
        bl.pairs[bi].words = NULL, bl.pairs[bi].n_words = bl.pairs[bi].cap_words = 0;
        for (int32_t k = 0; k < n_list && !rc; k++) {
            int32_t w = list[k];
            const word *wd = &bl.words[w];
            const int32_t *s = bl.syms + wd->start;
            int holds = 0;
            for (int32_t i = 0; i + 1 < wd->len && !holds; i++) holds = s[i] == best.left && s[i + 1] == best.right;
            if (!holds) continue; /* merged already (a repeat in the list), or stale */
            rc = word_pairs(&bl, w, -1, step);
            if (!rc) merge_word(&bl, w, best.left, best.right, id);
            if (!rc) rc = word_pairs(&bl, w, +1, step);
        }
        free(list);
        if (!rc) rc = push_touched(&bl);
    }
    /* the tokenizer: bytes, the specials, the merges */
    tokenizer *t = NULL;
    char msg[200] = "";
    if (!rc) t = tokenizer_bytes(1);
    if (t) { /* grow the byte-level tokenizer's vocabulary to hold the merges */
        tokenizer *grown = tok_new(TOKENIZER_MIN_TRAINED_VOCAB + n_merges, PRETOK_GPT2);
        int bad = !grown || tok_set_bytes(grown, t->byte_id, msg, sizeof msg);
        for (int32_t i = 0; !bad && i < t->n_specials; i++) {
            int32_t sid = t->specials[i].id;
            bad = tok_add_special(grown, sid, (const char *)t->blob + t->offset[sid], t->length[sid], t->specials[i].roles,
                                  msg, sizeof msg);
        }
        for (int32_t i = 0; !bad && i < n_merges; i++)
            bad = tok_add_merge(grown, merges[i].left, merges[i].right, merges[i].result, msg, sizeof msg);
        if (!bad) bad = tok_finish(grown, msg, sizeof msg);
        tokenizer_free(t);
        t = bad ? (tokenizer_free(grown), NULL) : grown;
    }
    free(merges);
    bpe_learner_free(&bl);
    if (!t) {
        error_printf(err, errlen, "training the tokenizer: %s", msg[0] ? msg : "out of memory");
        return -1;
    }
    *out = t;
    return 0;
}
