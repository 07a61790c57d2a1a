/* Tokenizers: byte-level (ids 0..255 are the bytes), byte-level BPE trained by kiln,
 * GPT-2's own BPE imported from Hugging Face's vocab.json and merges.txt, and (version 2 of
 * the file) the Llama family's BPE tokenizers from a tokenizer.json or a GGUF file, run with
 * their normalizers, pre-tokenizers and decoders (docs/tokenizers.md, "Hugging Face
 * tokenizers"). What follows describes version 1; version 2 adds tokens given by their bytes.
 *
 * A tokenizer is a vocabulary of N ids, each one either a byte, the result of a merge of two
 * earlier tokens (its bytes are theirs, concatenated), or a special token ([PAD], [BOS],
 * ..., <|endoftext|>) that encoding never produces from text and decoding writes as its name.
 * Encoding pre-tokenizes the text with GPT-2's pattern
 *     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * (text/pretokenize.h) and applies the merges to each piece by rank, exactly as OpenAI's
 * encoder.py does, so an imported GPT-2 gives GPT-2's ids. Bytes that are not valid UTF-8
 * are what encoder.py sees after Python's 'surrogateescape' decoding: each is a character of
 * none of the classes \s, \p{L}, \p{N}, and its token keeps the original byte. Decoding is
 * the exact inverse for every id but the specials.
 *
 * The file format (text, one record a line; docs/tokenizers.md):
 *     kiln-tokenizer 1
 *     vocab N                       ids 0..N-1, each defined exactly once below
 *     pretokenizer gpt2|none        none: the whole text is one piece
 *     bytes ID0 ID1 ... ID255       the id of each byte value, 256 distinct ids
 *     special ID NAME ROLES         NAME: printable ASCII, no spaces; ROLES: "-" or a comma
 *                                   list of pad, bos, eos, cls, sep, mask (each role once)
 *     merge LEFT RIGHT ID           in rank order (the first line is merged first); LEFT and
 *                                   RIGHT are bytes or results of earlier merges
 * Every error names the line: "NAME:LINE: ...". */
#ifndef KILN_HOST_TEXT_TOKENIZER_H
#define KILN_HOST_TEXT_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tokenizer tokenizer;

typedef enum tokenizer_special_kind {
    TOK_PAD,
    TOK_BOS,
    TOK_EOS,
    TOK_CLS,
    TOK_SEP,
    TOK_MASK,
    TOK_SPECIAL_COUNT
} tokenizer_special_kind;

/* The first line of the file format. */
#define TOKENIZER_MAGIC "kiln-tokenizer 1"
/* Version 2: Hugging Face's tokenizers (token records, option and step records). */
#define TOKENIZER_MAGIC_V2 "kiln-tokenizer 2"
/* Larger vocabularies are refused (a corrupt "vocab" line must not allocate gigabytes). */
#define TOKENIZER_MAX_VOCAB (1 << 22)
/* A trained BPE needs the 256 bytes and the six specials. */
#define TOKENIZER_MIN_TRAINED_VOCAB 262

/* Byte-level: ids 0..255 are the bytes; with_specials appends the six specials at 256..261
 * ([PAD] [BOS] [EOS] [CLS] [SEP] [MASK]). NULL when out of memory. */
tokenizer *tokenizer_bytes(int with_specials);
/* Reads the file format; errors "FILE:LINE: ..." (or "FILE: ..." when it cannot be read). */
int tokenizer_load(const char *path, tokenizer **out, char *err, size_t errlen);
/* The same from memory (a checkpoint's metadata); `name` stands for the file in errors. */
int tokenizer_parse(const char *text, size_t n, const char *name, tokenizer **out, char *err, size_t errlen);
/* The file format as malloc'd text (n bytes, NUL-terminated too); NULL when out of memory. */
char *tokenizer_serialize(const tokenizer *t, size_t *n);
/* Writes the file format atomically (kiln/file.h). */
int tokenizer_save(const tokenizer *t, const char *path, char *err, size_t errlen);
void tokenizer_free(tokenizer *t);

int32_t tokenizer_vocab_size(const tokenizer *t);
/* The id that plays role k, or -1. */
int32_t tokenizer_special(const tokenizer *t, tokenizer_special_kind k);
/* 1 when id is a special token. */
int tokenizer_is_special(const tokenizer *t, int32_t id);
int32_t tokenizer_merge_count(const tokenizer *t);
/* The merge of rank `rank` (0: merged first): the ids it joins. Returns 0, or -1 outside
 * the merges. (Its result is the token whose bytes are theirs: tokenizer_token_bytes.) */
int tokenizer_merge_at(const tokenizer *t, int32_t rank, int32_t *left, int32_t *right);

/* Plain text in: special-token strings in the text are NOT matched (data stays data).
 * *ids is malloc'd (never NULL on success, even for n == 0). */
int tokenizer_encode(const tokenizer *t, const uint8_t *text, size_t n, int32_t **ids, int64_t *n_ids, char *err,
                     size_t errlen);
/* The same ids without the per-call cache of pieces already seen: every piece goes through
 * the merge heap (the benchmark's "no cache" figure; the tests check both agree). */
int tokenizer_encode_uncached(const tokenizer *t, const uint8_t *text, size_t n, int32_t **ids, int64_t *n_ids,
                              char *err, size_t errlen);
/* ids -> bytes, the exact inverse for non-special ids; specials decode to their names
 * ("[MASK]", "<|endoftext|>"); an id outside the vocab is an error. *bytes is malloc'd. */
int tokenizer_decode(const tokenizer *t, const int32_t *ids, int64_t n, uint8_t **bytes, size_t *n_bytes, char *err,
                     size_t errlen);
/* The same for ids that continue a text: at_start 0 when something came before them (a
 * version 2 tokenizer's decoder may strip the text's first space, as Llama 2's does). */
int tokenizer_decode_at(const tokenizer *t, const int32_t *ids, int64_t n, int at_start, uint8_t **bytes,
                        size_t *n_bytes, char *err, size_t errlen);
/* 1 when a prompt starts with the BOS token (the tokenizer's configuration says so). */
int tokenizer_add_bos(const tokenizer *t);
/* The end-of-generation ids (EOS, then the end-of-turn and end-of-message tokens), at most
 * max of them; returns the count. */
int tokenizer_eog_ids(const tokenizer *t, int32_t *ids, int max);

/* One token's bytes (for streaming decode output), or NULL (and *len 0) outside the vocab. */
const uint8_t *tokenizer_token_bytes(const tokenizer *t, int32_t id, size_t *len);

/* GPT-2's tokenizer from Hugging Face's vocab.json and merges.txt (gpt2_import.c). The
 * merges file may start with a "#version" line and may have CRLF line ends. A vocab.json
 * entry that is neither one byte nor the result of a merge is a special token;
 * "<|endoftext|>" is BOS and EOS. Errors name the file (and the line of merges.txt). */
int tokenizer_import_gpt2(const char *vocab_path, const char *merges_path, tokenizer **out, char *err,
                          size_t errlen);
/* The same from memory (the fuzzer); the names stand for the files in errors. */
int tokenizer_import_gpt2_memory(const char *vocab, size_t vocab_len, const char *vocab_name, const char *merges,
                                 size_t merges_len, const char *merges_name, tokenizer **out, char *err,
                                 size_t errlen);

/* A Hugging Face tokenizer.json (a BPE model with the normalizers, pre-tokenizers and
 * decoders of the Llama family: docs/tokenizers.md) as a version 2 tokenizer (hf_import.c);
 * tokenizer_config.json beside it, when there is one, names the special tokens' roles.
 * A component kiln does not run is refused by name; errors start with the path. */
int tokenizer_import_hf(const char *tokenizer_json_path, tokenizer **out, char *err, size_t errlen);
/* The same from memory (config_json may be NULL); `name` stands for the file in errors. */
int tokenizer_import_hf_memory(const char *json, size_t len, const char *name, const char *config_json,
                               size_t config_len, tokenizer **out, char *err, size_t errlen);

/* GGUF's tokenizer.ggml.* keys (llama.cpp's: model gpt2 or llama, pre, tokens, token_type,
 * merges, scores, the special ids, add_bos_token; gguf_tokenizer_*.c, docs/tokenizers.md).
 * Errors name the key; the caller adds the file's name. */
struct gguf_file;
struct gguf_writer;
int tokenizer_from_gguf(const struct gguf_file *g, tokenizer **out, char *err, size_t errlen);
/* The same keys into a writer; -1 with a message when the tokenizer has no GGUF spelling (a
 * pre-tokenizer llama.cpp has no name for). */
int tokenizer_to_gguf(const tokenizer *t, struct gguf_writer *w, char *err, size_t errlen);

/* Learns a byte-level BPE of `vocab_size` ids from text (bpe_train.c): ids 0..255 are the
 * bytes, 256..261 the six specials, then one merge per id, each the most frequent pair of
 * adjacent tokens within GPT-2's pre-tokenized pieces. Ties go to the pair with the
 * smallest left id, then the smallest right id, so the same text gives the same file.
 * Training stops early (a smaller vocabulary) when no pair occurs twice any more.
 * vocab_size < TOKENIZER_MIN_TRAINED_VOCAB is refused with one line. */
int tokenizer_train(const uint8_t *text, size_t n, int32_t vocab_size, tokenizer **out, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
