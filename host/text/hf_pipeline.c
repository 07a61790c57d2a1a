/* tokenizer.json's normalizer, pre_tokenizer, decoder and post_processor, read into a
 * version 2 tokenizer's steps (text/tok_steps.c runs them). Each component takes its
 * options with the library's defaults; a component kiln does not run is refused by name:
 * "tokenizer.json: pre_tokenizer type Whitespace is not supported". */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "formats/error_printf.h"
#include "text/hf_import.h"
#include "text/tokenizer_internal.h"

#define HF_ERROR(im, ...) (error_printf((im)->msg, sizeof (im)->msg, __VA_ARGS__), -1)

static char *copy_string(const json_value *v, size_t *len) {
    const char *s = json_as_string(v);
    *len = json_string_len(v);
    char *c = s ? malloc(*len + 1) : NULL;
    if (c) memcpy(c, s, *len + 1);
    return c;
}

/* A string member; absent: dflt (NULL: required). */
static int string_member(hf_import *im, const json_value *obj, const char *what, const char *key, const char *dflt,
                         char **out, size_t *len) {
    const json_value *v = json_get(obj, key);
    if (!v && dflt) {
        *len = strlen(dflt);
        *out = malloc(*len + 1);
        if (*out) memcpy(*out, dflt, *len + 1);
    } else {
        *out = v ? copy_string(v, len) : NULL;
        if (!*out && v && json_as_string(v)) return HF_ERROR(im, "out of memory");
        if (!*out) return HF_ERROR(im, "%s: \"%s\" must be a string", what, key);
    }
    return *out ? 0 : HF_ERROR(im, "out of memory");
}

static int bool_member(hf_import *im, const json_value *obj, const char *what, const char *key, int dflt, int *out) {
    const json_value *v = json_get(obj, key);
    *out = dflt;
    if (!v || v->type == JSON_NULL) return 0;
    return json_as_bool(v, out) ? 0 : HF_ERROR(im, "%s: \"%s\" must be true or false", what, key);
}

/* "pattern": {"String": ...} or {"Regex": ...}, into step->a and regex_source. */
static int pattern_member(hf_import *im, const json_value *obj, const char *what, tok_step *st) {
    const json_value *p = json_get(obj, "pattern");
    const json_value *s = json_get(p, "String"), *r = json_get(p, "Regex");
    if (!(s || r) || !json_as_string(s ? s : r)) return HF_ERROR(im, "%s: \"pattern\" must be {\"String\": ...} or {\"Regex\": ...}", what);
    st->regex_source = r != NULL;
    if (!(st->a = copy_string(s ? s : r, &st->a_len))) return HF_ERROR(im, "out of memory");
    return 0;
}

/* Appends the step to a stage (tok_add_step compiles its pattern). */
static int add_step(hf_import *im, int stage, const char *what, tok_step *st) {
    char msg[200];
    if (tok_add_step(im->t, stage, st, msg, sizeof msg)) return HF_ERROR(im, "%s: %s", what, msg);
    return 0;
}

static int type_is(const char *type, const char *name) { return type && !strcmp(type, name); }

/* The members of a Sequence (key: "normalizers", ...), each read by `one`. */
static int sequence(hf_import *im, const json_value *obj, const char *what, const char *key,
                    int (*one)(hf_import *, const json_value *, int)) {
    const json_value *list = json_get(obj, key);
    if (!list || list->type != JSON_ARRAY) return HF_ERROR(im, "%s: a Sequence needs the array \"%s\"", what, key);
    for (size_t i = 0; i < json_count(list); i++)
        if (one(im, json_at(list, i), 1)) return -1;
    return 0;
}

static int unsupported(hf_import *im, const char *what, const char *type) {
    if (!type) return HF_ERROR(im, "%s: every component needs a \"type\"", what);
    return HF_ERROR(im, "%s type %.60s is not supported", what, type);
}

static int normalizer(hf_import *im, const json_value *v, int nested) {
    const char *what = "normalizer", *type = json_as_string(json_get(v, "type"));
    tok_step st = {0};
    if (!nested && (!v || v->type == JSON_NULL)) return 0;
    if (type_is(type, "Sequence")) return sequence(im, v, what, "normalizers", normalizer);
    if (type_is(type, "NFC")) {
        st.kind = STEP_NFC;
    } else if (type_is(type, "Prepend")) {
        st.kind = STEP_PREPEND;
        if (string_member(im, v, what, "prepend", NULL, &st.a, &st.a_len)) return -1;
    } else if (type_is(type, "Replace")) {
        st.kind = STEP_REPLACE;
        if (pattern_member(im, v, what, &st) || string_member(im, v, what, "content", NULL, &st.b, &st.b_len)) {
            tok_step_clear(&st);
            return -1;
        }
    } else {
        return unsupported(im, what, type);
    }
    return add_step(im, TOK_STAGE_NORMALIZER, what, &st);
}

static int behaviour(hf_import *im, const json_value *v, tok_step *st) {
    static const char *const names[] = {"Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"};
    const char *b = json_as_string(json_get(v, "behavior"));
    for (int k = 0; b && k < 5; k++)
        if (!strcmp(b, names[k])) {
            st->behaviour = (tok_split_behaviour)k;
            return 0;
        }
    return HF_ERROR(im, "pre_tokenizer Split: \"behavior\" must be Isolated, Removed, MergedWithPrevious, "
                        "MergedWithNext or Contiguous");
}

static int metaspace(hf_import *im, const json_value *v, tok_step *st) {
    const char *what = "pre_tokenizer Metaspace";
    const char *scheme = json_as_string(json_get(v, "prepend_scheme"));
    int prefix;
    st->kind = STEP_METASPACE;
    if (string_member(im, v, what, "replacement", "\xE2\x96\x81", &st->a, &st->a_len) ||
        bool_member(im, v, what, "split", 1, &st->split) || bool_member(im, v, what, "add_prefix_space", 1, &prefix))
        return -1;
    st->prepend = prefix ? PREPEND_ALWAYS : PREPEND_NEVER;
    if (type_is(scheme, "always")) st->prepend = PREPEND_ALWAYS;
    else if (type_is(scheme, "first")) st->prepend = PREPEND_FIRST;
    else if (type_is(scheme, "never")) st->prepend = PREPEND_NEVER;
    else if (scheme) return HF_ERROR(im, "%s: \"prepend_scheme\" must be always, first or never", what);
    return 0;
}

static int pretokenizer(hf_import *im, const json_value *v, int nested) {
    const char *what = "pre_tokenizer", *type = json_as_string(json_get(v, "type"));
    tok_step st = {0};
    int rc = 0;
    if (!nested && (!v || v->type == JSON_NULL)) return 0;
    if (type_is(type, "Sequence")) return sequence(im, v, what, "pretokenizers", pretokenizer);
    if (im->t->n_steps[TOK_STAGE_PRETOKENIZER] && im->t->byte_level)
        return HF_ERROR(im, "pre_tokenizer: a %.40s after ByteLevel is not supported", type ? type : "component");
    if (type_is(type, "Split")) {
        st.kind = STEP_SPLIT;
        rc = pattern_member(im, v, what, &st) || behaviour(im, v, &st) ||
             bool_member(im, v, "pre_tokenizer Split", "invert", 0, &st.invert);
    } else if (type_is(type, "ByteLevel")) {
        st.kind = STEP_BYTELEVEL;
        im->t->byte_level = 1;
        rc = bool_member(im, v, "pre_tokenizer ByteLevel", "add_prefix_space", 1, &st.prefix_space) ||
             bool_member(im, v, "pre_tokenizer ByteLevel", "use_regex", 1, &st.use_regex);
    } else if (type_is(type, "Digits")) {
        st.kind = STEP_DIGITS;
        rc = bool_member(im, v, "pre_tokenizer Digits", "individual_digits", 0, &st.individual);
    } else if (type_is(type, "Metaspace")) {
        rc = metaspace(im, v, &st);
    } else {
        return unsupported(im, what, type);
    }
    if (rc) {
        tok_step_clear(&st);
        return -1;
    }
    return add_step(im, TOK_STAGE_PRETOKENIZER, what, &st);
}

static int int_member(hf_import *im, const json_value *obj, const char *what, const char *key, int *out) {
    int64_t v;
    if (!json_as_int64(json_get(obj, key), &v) || v < 0 || v > 1000) return HF_ERROR(im, "%s: \"%s\" must be 0..1000", what, key);
    *out = (int)v;
    return 0;
}

static int decoder(hf_import *im, const json_value *v, int nested) {
    const char *what = "decoder", *type = json_as_string(json_get(v, "type"));
    tok_step st = {0};
    int rc = 0;
    if (!nested && (!v || v->type == JSON_NULL)) return 0;
    if (type_is(type, "Sequence")) return sequence(im, v, what, "decoders", decoder);
    if (type_is(type, "ByteLevel")) {
        st.kind = STEP_BYTELEVEL;
        im->decoder_byte_level = 1;
    } else if (type_is(type, "ByteFallback")) {
        st.kind = STEP_BYTEFALLBACK;
    } else if (type_is(type, "Fuse")) {
        st.kind = STEP_FUSE;
    } else if (type_is(type, "Strip")) {
        st.kind = STEP_STRIP;
        rc = string_member(im, v, "decoder Strip", "content", NULL, &st.a, &st.a_len) ||
             int_member(im, v, "decoder Strip", "start", &st.start) || int_member(im, v, "decoder Strip", "stop", &st.stop);
    } else if (type_is(type, "Replace")) {
        st.kind = STEP_REPLACE;
        rc = pattern_member(im, v, what, &st) || string_member(im, v, "decoder Replace", "content", NULL, &st.b, &st.b_len);
    } else {
        return unsupported(im, what, type);
    }
    if (rc) {
        tok_step_clear(&st);
        return -1;
    }
    return add_step(im, TOK_STAGE_DECODER, what, &st);
}

/* TemplateProcessing's "single": the special tokens before the sequence are added in front
 * of every text (BOS), those after it behind (EOS). */
static int template_single(hf_import *im, const json_value *v) {
    const json_value *single = json_get(v, "single");
    int seen_a = 0;
    for (size_t i = 0; i < json_count(single); i++) {
        const json_value *item = json_at(single, i);
        const char *special = json_as_string(json_get(json_get(item, "SpecialToken"), "id"));
        if (json_get(item, "Sequence")) {
            seen_a = 1;
        } else if (special) {
            char **slot = seen_a ? &im->template_eos : &im->template_bos;
            free(*slot);
            *slot = strdup(special);
            if (!*slot) return HF_ERROR(im, "out of memory");
        } else {
            return HF_ERROR(im, "post_processor TemplateProcessing: \"single\" holds an item that is neither "
                                "SpecialToken nor Sequence");
        }
    }
    return 0;
}

static int post_processor(hf_import *im, const json_value *v, int nested) {
    const char *what = "post_processor", *type = json_as_string(json_get(v, "type"));
    if (!nested && (!v || v->type == JSON_NULL)) return 0;
    if (type_is(type, "Sequence")) return sequence(im, v, what, "processors", post_processor);
    if (type_is(type, "ByteLevel")) return 0; /* it only moves offsets */
    if (type_is(type, "TemplateProcessing")) return template_single(im, v);
    return unsupported(im, what, type);
}

int hf_read_pipeline(hf_import *im, const json_value *root) {
    return normalizer(im, json_get(root, "normalizer"), 0) || pretokenizer(im, json_get(root, "pre_tokenizer"), 0) ||
                   decoder(im, json_get(root, "decoder"), 0) || post_processor(im, json_get(root, "post_processor"), 0)
               ? -1
               : 0;
}
