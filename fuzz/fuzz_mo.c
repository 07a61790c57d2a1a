/* Fuzzes the GNU .mo reader: mo_parse must either fail with one line naming the file, or
 * return entries that all lie within the input (each string followed by its NUL, its bytes
 * those of the input at the same offset), with the plural and header flags agreeing with the
 * strings; every accepted entry then goes through the pair filters (mo_pairs.h), whose kept
 * pairs are NUL-free, newline-free, tab-free strings with a word in the source. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/mo_catalog.h"
#include "formats/mo_pairs.h"
#include "fuzz_check.h"

/* s (n bytes, then the byte `after`) lies within the catalog's copy, and matches the input
 * there. */
static void check_inside(const mo_catalog *c, const uint8_t *data, const char *s, size_t n, char after) {
    const char *lo = (const char *)c->data;
    FUZZ_CHECK(s >= lo && (size_t)(s - lo) < c->size && n < c->size - (size_t)(s - lo));
    FUZZ_CHECK(s[n] == after && memcmp(s, data + (s - lo), n) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    mo_catalog *c = NULL;
    char err[256];
    if (mo_parse(data, size, "f.mo", &c, err, sizeof err) != 0) {
        FUZZ_CHECK(c == NULL && !strncmp(err, "f.mo: ", 6) && !strchr(err, '\n'));
        return 0;
    }
    FUZZ_CHECK(c->size == size && c->count >= 0);
    mo_encoding enc = mo_catalog_encoding(c);
    for (int64_t i = 0; i < c->count; i++) {
        const mo_entry *e = &c->entries[i];
        check_inside(c, data, e->id, e->id_len, '\0');
        check_inside(c, data, e->str, e->str_len, '\0');
        if (e->ctxt) { /* "msgctxt\004msgid" */
            check_inside(c, data, e->ctxt, e->ctxt_len, '\004');
            FUZZ_CHECK(e->ctxt + e->ctxt_len + 1 == e->id);
        }
        FUZZ_CHECK(e->plural == (memchr(e->id, '\0', e->id_len) != NULL));
        FUZZ_CHECK(e->header == (!e->ctxt && e->id_len == 0));
        if (enc == MO_UNSUPPORTED) continue;
        char *s, *t;
        size_t sn, tn;
        int v = mo_entry_pair(e, enc, &s, &sn, &t, &tn);
        FUZZ_CHECK(v >= 0 && v < MO_PAIR_N_VERDICTS);
        if (v == MO_PAIR_KEPT) {
            FUZZ_CHECK(sn >= 1 && tn >= 1 && strlen(s) == sn && strlen(t) == tn);
            FUZZ_CHECK(!strpbrk(s, "\t\n\r") && !strpbrk(t, "\t\n\r") && mo_text_has_word(s, sn));
        } else {
            FUZZ_CHECK(s == NULL && t == NULL);
        }
        free(s);
        free(t);
    }
    mo_free(c);
    return 0;
}
