/* The matcher of text/regex.h. The pattern is parsed into a tree (sequences, alternations,
 * lookaheads, single-character sets with a repeat range), then each node is linked to its
 * continuation, the node that follows it when it has matched, so the tree becomes a graph
 * the matcher walks by recursion: an alternation tries each branch followed by the rest of
 * the pattern, a repeat takes the most characters it may (greedy) and gives them back one at
 * a time while the rest fails. The recursion is as deep as the pattern, never as the text:
 * a repeat keeps the positions it may back off to on a stack of the search, not on C's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/error_printf.h"
#include "formats/utf8.h"
#include "text/regex.h"
#include "text/unicode_class.h"

enum { RX_CHAR, RX_SEQ, RX_ALT, RX_LOOK, RX_END, RX_SUCCEED };
enum { REP_GREEDY, REP_LAZY, REP_POSSESSIVE };
enum { ITEM_RANGE, ITEM_CLASS };
enum { RX_MAX_REPEAT = 100000, RX_MAX_NODES = 4096 };

/* One member of a set: the code points lo..hi, or a class (negated when neg). */
typedef struct rx_item {
    uint8_t kind, neg;
    uclass cls;
    uint32_t lo, hi;
} rx_item;

typedef struct rx_node rx_node;
struct rx_node {
    int type;
    rx_node *next;   /* continuation, set by link() */
    /* RX_CHAR */
    rx_item *items;
    int n_items, negate, fold; /* fold: ASCII letters match either case */
    int min, max, mode;
    /* RX_SEQ, RX_ALT: the parts (after link(), an alternation's branch entries) */
    rx_node **kids;
    int n_kids;
    /* RX_LOOK */
    int look_neg;
    rx_node *sub;
};

struct regex {
    rx_node **nodes; /* every node, for regex_free */
    int n_nodes, cap_nodes;
    rx_node *entry;
    rx_node end, succeed;
    size_t *stack; /* the repeats' back-off positions during a search */
    size_t stack_cap;
};

typedef struct rx_parser {
    regex *re;
    const uint8_t *p;
    size_t n, at;
    char *err;
    size_t errlen;
    int failed;
} rx_parser;

static void *fail(rx_parser *ps, const char *what) {
    if (!ps->failed) error_printf(ps->err, ps->errlen, "regex: %s at offset %zu", what, ps->at);
    ps->failed = 1;
    return NULL;
}

static rx_node *new_node(rx_parser *ps, int type) {
    regex *re = ps->re;
    if (re->n_nodes == RX_MAX_NODES) return fail(ps, "the pattern is too long");
    if (re->n_nodes == re->cap_nodes) {
        int cap = re->cap_nodes ? 2 * re->cap_nodes : 32;
        rx_node **grown = realloc(re->nodes, (size_t)cap * sizeof *grown);
        if (!grown) return fail(ps, "out of memory");
        re->nodes = grown, re->cap_nodes = cap;
    }
    rx_node *nd = calloc(1, sizeof *nd);
    if (!nd) return fail(ps, "out of memory");
    nd->type = type;
    nd->min = nd->max = 1;
    re->nodes[re->n_nodes++] = nd;
    return nd;
}

static int add_kid(rx_parser *ps, rx_node *parent, rx_node *kid) {
    rx_node **grown = realloc(parent->kids, (size_t)(parent->n_kids + 1) * sizeof *grown);
    if (!grown) return fail(ps, "out of memory"), -1;
    parent->kids = grown;
    parent->kids[parent->n_kids++] = kid;
    return 0;
}

static int add_item(rx_parser *ps, rx_node *nd, rx_item item) {
    rx_item *grown = realloc(nd->items, (size_t)(nd->n_items + 1) * sizeof *grown);
    if (!grown) return fail(ps, "out of memory"), -1;
    nd->items = grown;
    nd->items[nd->n_items++] = item;
    return 0;
}

static int peek(const rx_parser *ps) { return ps->at < ps->n ? ps->p[ps->at] : -1; }

/* A literal code point of the pattern (UTF-8). */
static int literal_cp(rx_parser *ps, uint32_t *cp) {
    int len = utf8_decode(ps->p + ps->at, ps->n - ps->at, cp);
    if (len == 0) return fail(ps, "the pattern is not valid UTF-8"), -1;
    ps->at += (size_t)len;
    return 0;
}

static int hex_value(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* \xHH or \x{H...}, after the "\x". */
static int hex_escape(rx_parser *ps, uint32_t *cp) {
    int braced = peek(ps) == '{', digits = 0;
    uint32_t v = 0;
    if (braced) ps->at++;
    while (digits < (braced ? 6 : 2) && hex_value(peek(ps)) >= 0) v = v * 16 + (uint32_t)hex_value(ps->p[ps->at++]), digits++;
    if (!digits || (braced && peek(ps) != '}') || v > 0x10FFFF) return fail(ps, "bad \\x escape"), -1;
    if (braced) ps->at++;
    *cp = v;
    return 0;
}

/* \p{L} \p{N} \P{..} after the "\p" or "\P". */
static int property(rx_parser *ps, int neg, rx_item *item) {
    static const struct { const char *name; uclass cls; } names[] = {
        {"L", UCLASS_LETTER}, {"Letter", UCLASS_LETTER}, {"N", UCLASS_NUMBER}, {"Number", UCLASS_NUMBER}};
    if (peek(ps) != '{') return fail(ps, "\\p needs {NAME}"), -1;
    size_t start = ++ps->at;
    while (ps->at < ps->n && ps->p[ps->at] != '}') ps->at++;
    if (ps->at == ps->n) return fail(ps, "\\p{ is not closed"), -1;
    size_t len = ps->at - start;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i].name) == len && !memcmp(names[i].name, ps->p + start, len)) {
            ps->at++;
            *item = (rx_item){.kind = ITEM_CLASS, .neg = (uint8_t)neg, .cls = names[i].cls};
            return 0;
        }
    char what[96];
    snprintf(what, sizeof what, "the property \\p{%.*s} is not supported (only L and N)", (int)(len > 40 ? 40 : len),
             (const char *)ps->p + start);
    return fail(ps, what), -1;
}

/* An escape after its backslash: a class (is_class 1, *item) or a code point (*cp). */
static int escape(rx_parser *ps, int *is_class, rx_item *item, uint32_t *cp) {
    int c = peek(ps);
    if (c < 0) return fail(ps, "the pattern ends with a backslash"), -1;
    ps->at++;
    *is_class = 0;
    switch (c) {
    case 's': case 'S':
        *is_class = 1;
        *item = (rx_item){.kind = ITEM_CLASS, .neg = c == 'S', .cls = UCLASS_SPACE};
        return 0;
    case 'p': case 'P':
        *is_class = 1;
        return property(ps, c == 'P', item);
    case 'r': *cp = '\r'; return 0;
    case 'n': *cp = '\n'; return 0;
    case 't': *cp = '\t'; return 0;
    case 'f': *cp = '\f'; return 0;
    case 'v': *cp = '\v'; return 0;
    case '0': *cp = 0; return 0;
    case 'x': return hex_escape(ps, cp);
    default:
        if (c < 0x80 && !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) {
            *cp = (uint32_t)c; /* escaped punctuation stands for itself */
            return 0;
        }
        ps->at--;
        char what[64];
        snprintf(what, sizeof what, "the escape \\%c is not supported", c < 0x80 ? c : '?');
        return fail(ps, what), -1;
    }
}

/* One member of [...] (a class, a code point or a range lo-hi). */
static int set_member(rx_parser *ps, rx_node *nd) {
    uint32_t lo;
    int is_class = 0;
    rx_item item;
    if (peek(ps) == '[') return fail(ps, "a nested set is not supported"), -1;
    if (peek(ps) == '\\') {
        ps->at++;
        if (escape(ps, &is_class, &item, &lo)) return -1;
        if (is_class) return add_item(ps, nd, item);
    } else if (literal_cp(ps, &lo)) {
        return -1;
    }
    uint32_t hi = lo;
    if (peek(ps) == '-' && ps->at + 1 < ps->n && ps->p[ps->at + 1] != ']') {
        ps->at++;
        if (peek(ps) == '\\') {
            ps->at++;
            if (escape(ps, &is_class, &item, &hi)) return -1;
            if (is_class) return fail(ps, "a range ends in a class"), -1;
        } else if (literal_cp(ps, &hi)) {
            return -1;
        }
        if (hi < lo) return fail(ps, "a range is out of order"), -1;
    }
    return add_item(ps, nd, (rx_item){.kind = ITEM_RANGE, .lo = lo, .hi = hi});
}

static rx_node *parse_set(rx_parser *ps, int fold) {
    rx_node *nd = new_node(ps, RX_CHAR);
    if (!nd) return NULL;
    nd->fold = fold;
    ps->at++; /* [ */
    if (peek(ps) == '^') nd->negate = 1, ps->at++;
    int first = 1;
    while (peek(ps) != ']' || first) {
        if (peek(ps) < 0) return fail(ps, "a set [ is not closed");
        if (set_member(ps, nd)) return NULL;
        first = 0;
    }
    ps->at++;
    return nd;
}

/* A character node for one code point. */
static rx_node *literal_node(rx_parser *ps, uint32_t cp, int fold) {
    rx_node *nd = new_node(ps, RX_CHAR);
    if (!nd || add_item(ps, nd, (rx_item){.kind = ITEM_RANGE, .lo = cp, .hi = cp})) return NULL;
    nd->fold = fold;
    return nd;
}

static rx_node *parse_alt(rx_parser *ps, int fold, int depth);

static rx_node *parse_group(rx_parser *ps, int fold, int depth) {
    ps->at++; /* ( */
    rx_node *look = NULL;
    if (peek(ps) == '?') {
        int c = ps->at + 1 < ps->n ? ps->p[ps->at + 1] : -1;
        if (c == ':') {
            ps->at += 2;
        } else if (c == 'i' && ps->at + 2 < ps->n && ps->p[ps->at + 2] == ':') {
            ps->at += 3, fold = 1;
        } else if (c == '=' || c == '!') {
            ps->at += 2;
            if (!(look = new_node(ps, RX_LOOK))) return NULL;
            look->look_neg = c == '!';
        } else {
            return fail(ps, "this kind of group (? is not supported");
        }
    }
    rx_node *body = parse_alt(ps, fold, depth + 1);
    if (!body) return NULL;
    if (peek(ps) != ')') return fail(ps, "a group ( is not closed");
    ps->at++;
    if (!look) return body;
    look->sub = body;
    return look;
}

static rx_node *parse_atom(rx_parser *ps, int fold, int depth) {
    int c = peek(ps);
    uint32_t cp;
    switch (c) {
    case '(': return parse_group(ps, fold, depth);
    case '[': return parse_set(ps, fold);
    case '.': {
        ps->at++;
        rx_node *nd = literal_node(ps, '\n', 0);
        if (nd) nd->negate = 1;
        return nd;
    }
    case '\\': {
        ps->at++;
        int is_class;
        rx_item item;
        if (escape(ps, &is_class, &item, &cp)) return NULL;
        if (!is_class) return literal_node(ps, cp, fold);
        rx_node *nd = new_node(ps, RX_CHAR);
        return nd && !add_item(ps, nd, item) ? nd : NULL;
    }
    case '*': case '+': case '?': return fail(ps, "a quantifier follows nothing");
    case '^': case '$': return fail(ps, "anchors (^ $) are not supported");
    case ')': return fail(ps, "an unmatched )");
    default:
        if (literal_cp(ps, &cp)) return NULL;
        return literal_node(ps, cp, fold);
    }
}

/* A decimal count of a {n,m} repeat; -1 when there is none. */
static long repeat_count(rx_parser *ps) {
    long v = -1;
    while (peek(ps) >= '0' && peek(ps) <= '9') {
        v = (v < 0 ? 0 : v) * 10 + (ps->p[ps->at++] - '0');
        if (v > RX_MAX_REPEAT) v = RX_MAX_REPEAT + 1;
    }
    return v;
}

/* A {n}, {n,} or {n,m} at ps->at; 0 (and ps->at unchanged) when the brace is a literal. */
static int parse_braces(rx_parser *ps, long *min, long *max) {
    size_t save = ps->at++;
    *min = repeat_count(ps);
    *max = *min;
    if (peek(ps) == ',') {
        ps->at++;
        long upper = repeat_count(ps);
        *max = upper < 0 ? RX_MAX_REPEAT : upper;
    }
    if (*min < 0 || peek(ps) != '}') {
        ps->at = save;
        return 0;
    }
    ps->at++;
    return 1;
}

/* The quantifier after an atom, when there is one. */
static int parse_quantifier(rx_parser *ps, rx_node *atom) {
    long min, max;
    int c = peek(ps);
    if (c == '*') min = 0, max = RX_MAX_REPEAT, ps->at++;
    else if (c == '+') min = 1, max = RX_MAX_REPEAT, ps->at++;
    else if (c == '?') min = 0, max = 1, ps->at++;
    else if (c != '{' || !parse_braces(ps, &min, &max)) return 0;
    if (min > RX_MAX_REPEAT || max > RX_MAX_REPEAT || max < min) return fail(ps, "a bad repeat count"), -1;
    if (atom->type != RX_CHAR || atom->min != 1 || atom->max != 1)
        return fail(ps, "a quantifier after a group or a quantifier is not supported"), -1;
    atom->min = (int)min, atom->max = (int)max;
    if (peek(ps) == '?') atom->mode = REP_LAZY, ps->at++;
    else if (peek(ps) == '+') atom->mode = REP_POSSESSIVE, ps->at++;
    return 0;
}

static rx_node *parse_seq(rx_parser *ps, int fold, int depth) {
    rx_node *seq = new_node(ps, RX_SEQ);
    if (!seq) return NULL;
    while (peek(ps) >= 0 && peek(ps) != '|' && peek(ps) != ')') {
        rx_node *atom = parse_atom(ps, fold, depth);
        if (!atom || parse_quantifier(ps, atom) || add_kid(ps, seq, atom)) return NULL;
    }
    return seq;
}

static rx_node *parse_alt(rx_parser *ps, int fold, int depth) {
    if (depth > 32) return fail(ps, "groups are nested too deeply");
    rx_node *first = parse_seq(ps, fold, depth);
    if (!first || peek(ps) != '|') return first;
    rx_node *alt = new_node(ps, RX_ALT);
    if (!alt || add_kid(ps, alt, first)) return NULL;
    while (peek(ps) == '|') {
        ps->at++;
        rx_node *branch = parse_seq(ps, fold, depth);
        if (!branch || add_kid(ps, alt, branch)) return NULL;
    }
    return alt;
}

/* Sets each node's continuation; returns the node where matching nd starts. */
static rx_node *link(regex *re, rx_node *nd, rx_node *next) {
    switch (nd->type) {
    case RX_SEQ:
        for (int i = nd->n_kids - 1; i >= 0; i--) next = link(re, nd->kids[i], next);
        return next;
    case RX_ALT:
        for (int i = 0; i < nd->n_kids; i++) nd->kids[i] = link(re, nd->kids[i], next);
        break;
    case RX_LOOK:
        nd->sub = link(re, nd->sub, &re->succeed);
        break;
    default:
        break;
    }
    nd->next = next;
    return nd;
}

regex *regex_compile(const char *pattern, size_t len, char *err, size_t errlen) {
    regex *re = calloc(1, sizeof *re);
    if (!re) {
        error_printf(err, errlen, "regex: out of memory");
        return NULL;
    }
    re->end.type = RX_END;
    re->succeed.type = RX_SUCCEED;
    rx_parser ps = {.re = re, .p = (const uint8_t *)pattern, .n = len, .err = err, .errlen = errlen};
    rx_node *root = parse_alt(&ps, 0, 0);
    if (root && peek(&ps) == ')') root = fail(&ps, "an unmatched )");
    if (!root) {
        regex_free(re);
        return NULL;
    }
    re->entry = link(re, root, &re->end);
    return re;
}

void regex_free(regex *re) {
    if (!re) return;
    for (int i = 0; i < re->n_nodes; i++) {
        free(re->nodes[i]->items);
        free(re->nodes[i]->kids);
        free(re->nodes[i]);
    }
    free(re->nodes);
    free(re->stack);
    free(re);
}

/* ---- matching ---- */

typedef struct rx_run {
    regex *re;
    const uint8_t *s;
    size_t n, sp;
    int oom;
} rx_run;

static int item_has(const rx_item *it, uint32_t cp, uclass cls) {
    if (it->kind == ITEM_RANGE) return cp >= it->lo && cp <= it->hi;
    return (cls == it->cls) != it->neg;
}

/* The length of the character at s[pos] when nd's set matches it, else 0. */
static size_t char_match(const rx_node *nd, const uint8_t *s, size_t n, size_t pos) {
    uint32_t cp;
    int len = utf8_decode(s + pos, n - pos, &cp);
    uclass cls = UCLASS_OTHER;
    if (len == 0) {
        cp = 0xDC00u + s[pos]; /* an invalid byte: Python's surrogateescape, of no class */
        len = 1;
    } else {
        cls = unicode_class(cp);
    }
    int hit = 0;
    for (int i = 0; i < nd->n_items && !hit; i++) {
        hit = item_has(&nd->items[i], cp, cls);
        if (!hit && nd->fold && ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z'))
            hit = item_has(&nd->items[i], cp ^ 0x20, cls);
    }
    return hit != nd->negate ? (size_t)len : 0;
}

static int push_pos(rx_run *r, size_t pos) {
    regex *re = r->re;
    if (r->sp == re->stack_cap) {
        size_t cap = re->stack_cap ? 2 * re->stack_cap : 256;
        size_t *grown = realloc(re->stack, cap * sizeof *grown);
        if (!grown) return r->oom = 1, -1;
        re->stack = grown, re->stack_cap = cap;
    }
    re->stack[r->sp++] = pos;
    return 0;
}

static int match(rx_run *r, const rx_node *nd, size_t pos, size_t *end);

/* A repeated character node: collects the positions it may stop at, then tries the rest
 * of the pattern from them in the order its mode says. */
static int match_repeat(rx_run *r, const rx_node *nd, size_t pos, size_t *end) {
    size_t base = r->sp;
    if (push_pos(r, pos)) return 0;
    int count = 0;
    size_t len;
    while (count < nd->max && pos < r->n && (len = char_match(nd, r->s, r->n, pos)) > 0) {
        pos += len, count++;
        if (push_pos(r, pos)) return 0;
    }
    int hit = 0;
    if (count >= nd->min) {
        if (nd->mode == REP_POSSESSIVE)
            hit = match(r, nd->next, r->re->stack[base + (size_t)count], end);
        else if (nd->mode == REP_LAZY)
            for (int k = nd->min; k <= count && !hit && !r->oom; k++) hit = match(r, nd->next, r->re->stack[base + (size_t)k], end);
        else
            for (int k = count; k >= nd->min && !hit && !r->oom; k--) hit = match(r, nd->next, r->re->stack[base + (size_t)k], end);
    }
    r->sp = base;
    return hit;
}

static int match(rx_run *r, const rx_node *nd, size_t pos, size_t *end) {
    switch (nd->type) {
    case RX_END:
        *end = pos;
        return 1;
    case RX_SUCCEED:
        return 1;
    case RX_ALT:
        for (int i = 0; i < nd->n_kids; i++)
            if (match(r, nd->kids[i], pos, end)) return 1;
        return 0;
    case RX_LOOK: {
        size_t ignored;
        if (match(r, nd->sub, pos, &ignored) == nd->look_neg) return 0;
        return match(r, nd->next, pos, end);
    }
    default: /* RX_CHAR */
        if (nd->min == 1 && nd->max == 1) {
            size_t len = pos < r->n ? char_match(nd, r->s, r->n, pos) : 0;
            return len && match(r, nd->next, pos + len, end);
        }
        return match_repeat(r, nd, pos, end);
    }
}

int regex_search(regex *re, const uint8_t *s, size_t n, size_t from, size_t *start, size_t *end) {
    rx_run r = {.re = re, .s = s, .n = n};
    for (size_t pos = from; pos <= n;) {
        if (match(&r, re->entry, pos, end)) {
            *start = pos;
            return 1;
        }
        if (r.oom) return -1;
        if (pos == n) break;
        uint32_t cp;
        int len = utf8_decode(s + pos, n - pos, &cp);
        pos += len ? (size_t)len : 1;
    }
    return 0;
}
