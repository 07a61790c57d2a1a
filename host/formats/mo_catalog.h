/* GNU gettext message catalogs (.mo files): the (msgctxt, msgid, msgstr) entries that
 * msgfmt compiled, as translation pairs for the samples.
 *
 * The format (gettext manual, "The Format of GNU MO Files"): a header of 32-bit words in the
 * writer's byte order (the magic 0x950412de tells which): magic, revision, N, O, T, S, H;
 * then at O and T two tables of N (length, offset) pairs, the original strings and their
 * translations, each string NUL-terminated after its length; a hash table of S words at H.
 * Revision: major 0 or 1 (high 16 bits), minor 0 or 1; minor 1 adds five words
 * describing "system-dependent" strings (messages with <PRIu64>-style segments), which are
 * stored apart from the two tables: they are bounds-checked and counted, not expanded.
 *
 * An original string is "msgctxt\004msgid" when the entry has a context, and
 * "msgid\0msgid_plural" for a plural entry (whose translation is the forms, NUL-separated).
 * The entry with an empty msgid is the header ("Content-Type: text/plain; charset=UTF-8\n"
 * ...). msgfmt leaves fuzzy entries out unless run with --use-fuzzy, and a .mo keeps no
 * flags; a fuzzy header shows as one still carrying the PO template's placeholders
 * (charset=CHARSET, "PO-Revision-Date: YEAR-MO-DA"), which header_fuzzy reports.
 *
 * Every offset and length is checked against the file's size before use: a file that lies
 * is refused with one line ("x.mo: string 3 of the translations (offset 9000, length 12)
 * lies outside the file's 4096 bytes"), never read out of bounds. */
#ifndef KILN_HOST_FORMATS_MO_CATALOG_H
#define KILN_HOST_FORMATS_MO_CATALOG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MO_MAGIC UINT32_C(0x950412de)

/* One entry; the strings point into the catalog's copy of the file and are NUL-terminated
 * right after their length (plural ids and translations hold inner NULs). */
typedef struct mo_entry {
    const char *ctxt; /* msgctxt, NULL when the entry has none */
    size_t ctxt_len;
    const char *id;   /* msgid; for a plural, "msgid\0msgid_plural" */
    size_t id_len;
    const char *str;  /* msgstr; for a plural, the forms separated by NULs */
    size_t str_len;
    int plural;       /* the msgid holds a NUL */
    int header;       /* the msgid is empty (and there is no context) */
} mo_entry;

typedef struct mo_catalog {
    mo_entry *entries; /* in the file's order (msgfmt sorts them by original string) */
    int64_t count;
    int big_endian;
    uint32_t revision;        /* major << 16 | minor */
    int64_t sysdep_count;     /* system-dependent strings, not in entries */
    int has_header;
    int header_fuzzy;         /* the header still holds the PO template's placeholders */
    char charset[40];         /* the header's Content-Type charset ("" when none), lowercase */
    unsigned char *data;      /* the copy the entries point into */
    size_t size;
} mo_catalog;

/* Parses n bytes (copied); name is the file's name in messages. Returns 0, or -1 with one
 * line in err and *out NULL. */
int mo_parse(const void *buf, size_t n, const char *name, mo_catalog **out, char *err, size_t errlen);
/* Reads a file and parses it ("PATH: cannot open ...", "PATH: not a GNU .mo file ..."). */
int mo_load(const char *path, mo_catalog **out, char *err, size_t errlen);
void mo_free(mo_catalog *c);

#ifdef __cplusplus
}
#endif
#endif
