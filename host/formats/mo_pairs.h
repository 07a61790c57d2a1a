/* Translation pairs from .mo catalog entries (mo_catalog.h): which entries make a
 * (source, target) pair for a TSV file (pairs.h), and how they are cleaned. Used by
 * `kiln pairs from-mo`.
 *
 * An entry is dropped, for the first reason that applies, when
 *   - it is the header, or a plural entry (its forms do not align with one source);
 *   - its translation is empty (untranslated), also after the newlines below are trimmed;
 *   - a side holds a newline other than at its start or end: gettext messages often start
 *     or end with "\n" for the terminal's sake (and msgfmt -c makes both sides agree on it),
 *     so those are trimmed; a newline inside is the layout of a multi-line help text, and
 *     such entries are dropped rather than joined into one long line;
 *   - a side holds a tab or another control character (a TSV line cannot carry them);
 *   - a side is not valid UTF-8 (after converting an ISO-8859-1 catalog);
 *   - the source has no word: nothing but printf/gettext placeholders ("%s", "%1$d",
 *     "%<PRIu64>", "%%", "{0}", "{name}"), digits, punctuation, symbols and whitespace
 *     ("%s: %s", "(%d)", "  ", "--", "100%"). A word is an ASCII letter, or a character
 *     from U+00C0 up that is not a punctuation, symbol or arrow block (U+2000-2BFF,
 *     U+3000-303F) and not U+00D7 or U+00F7.
 * Nothing else is trimmed or changed, but for GTK's keyboard mnemonics: when the source and
 * the target each hold exactly one '_' directly before a letter or digit ("_Open",
 * "Ö_ffnen"), and the source's word around it (letters, digits, '_') does not appear
 * unchanged in the target (as identifiers do: "archive_library"), that '_' is removed from
 * both ("_Convert" / "_Umwandeln" -> "Convert" / "Umwandeln"). Qt's '&' mnemonics are left
 * alone: in these catalogs '&' is far more often an ampersand or an entity ("&lt;"). */
#ifndef KILN_HOST_FORMATS_MO_PAIRS_H
#define KILN_HOST_FORMATS_MO_PAIRS_H

#include <stddef.h>

#include "formats/mo_catalog.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mo_pair_verdict {
    MO_PAIR_KEPT = 0,
    MO_PAIR_HEADER,
    MO_PAIR_PLURAL,
    MO_PAIR_UNTRANSLATED,
    MO_PAIR_MULTILINE,
    MO_PAIR_CONTROL,
    MO_PAIR_NOT_UTF8,
    MO_PAIR_NO_WORDS,
    MO_PAIR_N_VERDICTS
} mo_pair_verdict;

/* "kept", "header", "plural", "untranslated", "multi-line", "tab or control character",
 * "not UTF-8", "placeholders or punctuation only". */
const char *mo_pair_verdict_name(mo_pair_verdict v);

/* How a catalog's strings are encoded, from its header's charset: MO_UTF8 for utf-8,
 * us-ascii, ascii, none or the template's "charset" (every entry is checked to be UTF-8
 * anyway), MO_LATIN1 for iso-8859-1 / latin1 (converted), MO_UNSUPPORTED otherwise. */
typedef enum mo_encoding { MO_UTF8, MO_LATIN1, MO_UNSUPPORTED } mo_encoding;
mo_encoding mo_catalog_encoding(const mo_catalog *c);

/* The verdict on entry e (strings encoded as `enc`, not MO_UNSUPPORTED). For MO_PAIR_KEPT,
 * *src and *tgt are the cleaned UTF-8 strings (malloc'd, NUL-terminated, lengths in
 * *src_len and *tgt_len) for the caller to free; otherwise they are NULL. Returns the
 * verdict, or -1 when out of memory. */
int mo_entry_pair(const mo_entry *e, mo_encoding enc, char **src, size_t *src_len, char **tgt, size_t *tgt_len);

/* Whether text (n bytes) has a word in the sense above: exposed for the tests. */
int mo_text_has_word(const char *text, size_t n);

#ifdef __cplusplus
}
#endif
#endif
