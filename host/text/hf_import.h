/* The state of one tokenizer.json import (hf_import.c reads the model, hf_pipeline.c the
 * components around it); for text/ only. */
#ifndef KILN_HOST_TEXT_HF_IMPORT_H
#define KILN_HOST_TEXT_HF_IMPORT_H

#include "formats/json.h"
#include "text/tokenizer.h"

typedef struct hf_import {
    tokenizer *t;
    char msg[256];          /* the error, without the file's name */
    int decoder_byte_level; /* the decoder has ByteLevel */
    char *template_bos, *template_eos; /* TemplateProcessing's tokens around the text */
} hf_import;

/* Reads normalizer, pre_tokenizer, decoder and post_processor into im->t's steps. */
int hf_read_pipeline(hf_import *im, const json_value *root);

#endif
