/* A small backtracking regular-expression matcher for the pre-tokenizer patterns of
 * tokenizer.json files and llama.cpp's vocabularies (Llama 3's, Qwen2's, GPT-2's), built on
 * kiln's own Unicode tables (text/unicode_class.h) so that no regex library is needed on
 * any platform kiln builds for (docs/tokenizers.md says why).
 *
 * It matches UTF-8 text by code points, leftmost-first like Perl, Oniguruma and PCRE:
 *   alternation a|b; groups (...) (?:...) (?i:...) (ASCII letters match either case inside);
 *   lookahead (?=...) (?!...); anchors ^ $;
 *   literals (UTF-8) and escapes \r \n \t \f \v \0 \xHH \x{H..} \\ and escaped punctuation;
 *   classes . \s \S \p{L} \p{N} \P{L} \P{N} (also \p{Letter} and \p{Number}), and sets [...]
 *   [^...] of literals, ranges and those classes;
 *   quantifiers * + ? {n} {n,} {n,m} on a single character, set or class, each greedy,
 *   lazy (?) or possessive (+).
 * Anything else (a quantified group, a backreference, \d, \w, \b, other properties) is
 * refused by name when the pattern is compiled. A byte that is not valid UTF-8 is one
 * character of no class (as GPT-2's pre-tokenizer treats it). \s is Unicode's White_Space. */
#ifndef KILN_HOST_TEXT_REGEX_H
#define KILN_HOST_TEXT_REGEX_H

#include <stddef.h>
#include <stdint.h>

typedef struct regex regex;

/* Compiles pattern[0..len). NULL with a one-line message in err ("... at offset N"). */
regex *regex_compile(const char *pattern, size_t len, char *err, size_t errlen);
void regex_free(regex *re);

/* Finds the leftmost match in s[0..n) that starts at or after `from`. Returns 1 and stores
 * [*start, *end) (which may be empty), 0 when there is none, -1 when out of memory. */
int regex_search(regex *re, const uint8_t *s, size_t n, size_t from, size_t *start, size_t *end);

#endif
