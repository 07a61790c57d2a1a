/* Encoding: pre-tokenize, then merge each piece by rank.
 *
 * A piece's symbols are a linked list over its bytes; every adjacent pair that has a merge
 * sits in a binary heap ordered by (rank, position). Popping the heap merges the
 * lowest-ranked pair, leftmost first, and pushes the two pairs the new symbol forms with its
 * neighbours; entries made stale by earlier merges are recognised by their ids and dropped.
 * That is O(m log m) for a piece of m bytes, where OpenAI's encoder.py rescans the piece
 * once per merge. It gives the same result as encoder.py because every merge's operands are
 * bytes or results of earlier merges (the builder checks it): a pair formed by a merge then
 * ranks after that merge, so merging one occurrence at a time in (rank, position) order is
 * encoder.py's "merge every occurrence of the best pair, left to right".
 *
 * A cache per call maps a piece's bytes to its ids: natural text repeats its words. */
#include <stdlib.h>
#include <string.h>

#include "formats/error_printf.h"
#include "formats/utf8.h"
#include "text/pretokenize.h"
#include "text/tokenizer_internal.h"

typedef struct heap_entry {
    int32_t rank, pos, left_id, right_id;
} heap_entry;

typedef struct bpe_work {
    int32_t *id, *prev, *next; /* per symbol; id -1: merged into its left neighbour */
    size_t cap;
    heap_entry *heap;
    size_t heap_n, heap_cap;
} bpe_work;

static int entry_less(const heap_entry *a, const heap_entry *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static int heap_push(bpe_work *w, heap_entry e) {
    if (w->heap_n == w->heap_cap) {
        size_t cap = w->heap_cap ? 2 * w->heap_cap : 64;
        heap_entry *grown = realloc(w->heap, cap * sizeof *grown);
        if (!grown) return -1;
        w->heap = grown, w->heap_cap = cap;
    }
    size_t i = w->heap_n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!entry_less(&e, &w->heap[parent])) break;
        w->heap[i] = w->heap[parent];
        i = parent;
    }
    w->heap[i] = e;
    return 0;
}

static heap_entry heap_pop(bpe_work *w) {
    heap_entry top = w->heap[0], last = w->heap[--w->heap_n];
    size_t i = 0, n = w->heap_n;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && entry_less(&w->heap[child + 1], &w->heap[child])) child++;
        if (!entry_less(&w->heap[child], &last)) break;
        w->heap[i] = w->heap[child];
        i = child;
    }
    if (n) w->heap[i] = last;
    return top;
}

/* Pushes the pair (a, b) of adjacent symbols when it has a merge. */
static int push_pair(const tokenizer *t, bpe_work *w, int32_t a, int32_t b) {
    int32_t rank = tok_pair_rank(t, w->id[a], w->id[b]);
    if (rank < 0) return 0;
    return heap_push(w, (heap_entry){.rank = rank, .pos = a, .left_id = w->id[a], .right_id = w->id[b]});
}

/* The symbols a piece starts from: its bytes' tokens where tokens are bytes; otherwise each
 * character's token, or, for a character without one, its bytes' tokens (byte fallback). */
static int32_t initial_symbols(const tokenizer *t, const uint8_t *s, size_t m, int32_t *id) {
    int32_t n = 0;
    if (t->byte_level || t->version < 2) {
        for (size_t i = 0; i < m; i++) id[n++] = t->byte_id[s[i]];
        return n;
    }
    for (size_t pos = 0; pos < m;) {
        uint32_t cp;
        int len = utf8_decode(s + pos, m - pos, &cp);
        size_t l = len ? (size_t)len : 1;
        int32_t whole = tok_lookup(t, s + pos, l);
        if (whole >= 0) id[n++] = whole;
        else
            for (size_t k = 0; k < l; k++) id[n++] = t->byte_id[s[pos + k]];
        pos += l;
    }
    return n;
}

/* Merges the piece s[0..m) and appends its ids to out (room for m more). Returns the count
 * appended, or -1 when out of memory. */
static int64_t bpe_piece(const tokenizer *t, bpe_work *w, const uint8_t *s, size_t m, int32_t *out) {
    if (m == 1 && (t->byte_level || t->version < 2)) {
        out[0] = t->byte_id[s[0]];
        return 1;
    }
    if (t->ignore_merges) { /* a piece that is a token is that token */
        int32_t whole = tok_lookup(t, s, m);
        if (whole >= 0) {
            out[0] = whole;
            return 1;
        }
    }
    if (m > INT32_MAX) return -1;
    if (m > w->cap) {
        size_t cap = m < 256 ? 256 : m;
        int32_t *id = realloc(w->id, cap * sizeof *id), *prev, *next;
        if (id) w->id = id;
        prev = id ? realloc(w->prev, cap * sizeof *prev) : NULL;
        if (prev) w->prev = prev;
        next = prev ? realloc(w->next, cap * sizeof *next) : NULL;
        if (!next) return -1;
        w->next = next, w->cap = cap;
    }
    int32_t n = initial_symbols(t, s, m, w->id);
    for (int32_t i = 0; i < n; i++) {
        w->prev[i] = i - 1;
        w->next[i] = i + 1 < n ? i + 1 : -1;
    }
    w->heap_n = 0;
    for (int32_t i = 0; i + 1 < n; i++)
        if (push_pair(t, w, i, i + 1)) return -1;
    while (w->heap_n) {
        heap_entry e = heap_pop(w);
        int32_t a = e.pos, b = w->next[a];
        if (w->id[a] != e.left_id || b < 0 || w->id[b] != e.right_id) continue; /* stale */
        w->id[a] = t->merges[e.rank].result;
        w->next[a] = w->next[b];
        if (w->next[b] >= 0) w->prev[w->next[b]] = a;
        w->id[b] = -1;
        if (w->prev[a] >= 0 && push_pair(t, w, w->prev[a], a)) return -1;
        if (w->next[a] >= 0 && push_pair(t, w, a, w->next[a])) return -1;
    }
    int64_t count = 0;
    for (int32_t i = 0; i >= 0; i = w->next[i]) out[count++] = w->id[i];
    return count;
}

/* The per-call cache: a piece's bytes (by position in the text) -> its ids in `ids`. */
enum { CACHE_MAX_PIECE = 64 };
typedef struct cache_slot {
    uint64_t hash; /* 0: empty */
    size_t text_pos, ids_pos;
    uint32_t len, count;
} cache_slot;
typedef struct piece_cache {
    cache_slot *slots;
    size_t cap, used;
    int32_t *ids;
    size_t ids_len, ids_cap;
} piece_cache;

static uint64_t piece_hash(const uint8_t *s, size_t m) {
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < m; i++) h = (h ^ s[i]) * UINT64_C(0x100000001b3);
    return h | 1; /* never 0, the empty mark */
}

static cache_slot *cache_find(piece_cache *c, const uint8_t *text, const uint8_t *s, size_t m, uint64_t h) {
    for (size_t i = (size_t)(h >> 7) & (c->cap - 1);; i = (i + 1) & (c->cap - 1)) {
        cache_slot *slot = &c->slots[i];
        if (!slot->hash || (slot->hash == h && slot->len == m && !memcmp(text + slot->text_pos, s, m))) return slot;
    }
}

/* Remembers ids[0..count) for the piece s[0..m) (at text_pos); a failure only costs speed. */
static void cache_put(piece_cache *c, const uint8_t *text, size_t text_pos, size_t m, uint64_t h,
                      const int32_t *ids, int64_t count) {
    if (2 * (c->used + 1) > c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 4096;
        cache_slot *slots = calloc(cap, sizeof *slots);
        if (!slots) return;
        piece_cache grown = {.slots = slots, .cap = cap};
        for (size_t i = 0; i < c->cap; i++)
            if (c->slots[i].hash) *cache_find(&grown, text, text + c->slots[i].text_pos, c->slots[i].len, c->slots[i].hash) = c->slots[i];
        free(c->slots);
        c->slots = slots, c->cap = cap;
    }
    if (c->ids_len + (size_t)count > c->ids_cap) {
        size_t cap = c->ids_cap ? 2 * c->ids_cap : 16384;
        while (cap < c->ids_len + (size_t)count) cap *= 2;
        int32_t *grown = realloc(c->ids, cap * sizeof *grown);
        if (!grown) return;
        c->ids = grown, c->ids_cap = cap;
    }
    memcpy(c->ids + c->ids_len, ids, (size_t)count * sizeof *ids);
    *cache_find(c, text, text + text_pos, m, h) = (cache_slot){
        .hash = h, .text_pos = text_pos, .ids_pos = c->ids_len, .len = (uint32_t)m, .count = (uint32_t)count};
    c->ids_len += (size_t)count;
    c->used++;
}

static int encode_text(const tokenizer *t, const uint8_t *text, size_t n, const tok_pieces *ps, int use_cache,
                       int32_t **ids, int64_t *n_ids, char *err, size_t errlen);

static int encode(const tokenizer *t, const uint8_t *text, size_t n, int use_cache, int32_t **ids, int64_t *n_ids,
                  char *err, size_t errlen) {
    if (t->pretok != PRETOK_STEPS) return encode_text(t, text, n, NULL, use_cache, ids, n_ids, err, errlen);
    /* version 2: the pipeline's pieces, which lie one after the other in ps.text */
    tok_pieces ps;
    *ids = NULL;
    *n_ids = 0;
    if (tok_pretokenize(t, text, n, &ps)) {
        error_printf(err, errlen, "out of memory (encoding %zu bytes)", n);
        return -1;
    }
    int rc = encode_text(t, ps.text.p, ps.text.len, &ps, use_cache, ids, n_ids, err, errlen);
    tok_pieces_free(&ps);
    return rc;
}

/* The text cut into pieces (ps's, or version 1's pre-tokenizer, or none), each merged by rank. */
static int encode_text(const tokenizer *t, const uint8_t *text, size_t n, const tok_pieces *ps, int use_cache,
                       int32_t **ids, int64_t *n_ids, char *err, size_t errlen) {
    *ids = NULL;
    *n_ids = 0;
    int32_t *out = malloc((n ? n : 1) * sizeof *out); /* never more ids than bytes */
    if (!out) {
        error_printf(err, errlen, "out of memory (encoding %zu bytes)", n);
        return -1;
    }
    int64_t count = 0;
    if (t->n_merges == 0 && t->version < 2) {
        for (size_t i = 0; i < n; i++) out[i] = t->byte_id[text[i]];
        *ids = out;
        *n_ids = (int64_t)n;
        return 0;
    }
    bpe_work w = {0};
    piece_cache cache = {0};
    int rc = 0;
    size_t piece = 0;
    for (size_t pos = 0; pos < n && !rc;) {
        size_t end = ps ? ps->off[piece] + ps->len[piece] : t->pretok == PRETOK_GPT2 ? pretokenize_next(text, n, pos) : n;
        piece++;
        size_t m = end - pos;
        uint64_t h = 0;
        if (m > 1 && m <= CACHE_MAX_PIECE && cache.cap) {
            h = piece_hash(text + pos, m);
            cache_slot *slot = cache_find(&cache, text, text + pos, m, h);
            if (slot->hash) {
                memcpy(out + count, cache.ids + slot->ids_pos, slot->count * sizeof *out);
                count += slot->count;
                pos = end;
                continue;
            }
        }
        int64_t got = bpe_piece(t, &w, text + pos, m, out + count);
        if (got < 0) {
            rc = -1;
            break;
        }
        if (use_cache && m > 1 && m <= CACHE_MAX_PIECE) cache_put(&cache, text, pos, m, h ? h : piece_hash(text + pos, m), out + count, got);
        count += got;
        pos = end;
    }
    free(w.id);
    free(w.prev);
    free(w.next);
    free(w.heap);
    free(cache.slots);
    free(cache.ids);
    if (rc) {
        free(out);
        error_printf(err, errlen, "out of memory (encoding %zu bytes)", n);
        return -1;
    }
    int32_t *shrunk = count ? realloc(out, (size_t)count * sizeof *out) : NULL; /* ids are fewer than bytes */
    *ids = shrunk ? shrunk : out;
    *n_ids = count;
    return 0;
}

int tokenizer_encode(const tokenizer *t, const uint8_t *text, size_t n, int32_t **ids, int64_t *n_ids, char *err,
                     size_t errlen) {
    return encode(t, text, n, 1, ids, n_ids, err, errlen);
}

int tokenizer_encode_uncached(const tokenizer *t, const uint8_t *text, size_t n, int32_t **ids, int64_t *n_ids,
                              char *err, size_t errlen) {
    return encode(t, text, n, 0, ids, n_ids, err, errlen);
}
