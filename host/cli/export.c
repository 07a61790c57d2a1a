/* `kiln export --format gguf` and `kiln quantize`: a GPT checkpoint as a GGUF file of
 * llama.cpp's gpt2 architecture (model/gpt/gpt_gguf.h), at f32 or f16, or quantized to Q8_0,
 * Q4_0 or Q4_1 in ggml's blocks. The conversion runs on the host (the CPU backend holds the
 * weights while they are read): no device is needed. */
#include <stdio.h>
#include <string.h>

#include "run/cli.h"
#include "cli/commands.h"
#include "run/device.h"
#include "run/gpt_tokenizer.h"
#include "formats/gguf.h"
#include "model/gpt/gpt_checkpoint.h"
#include "model/gpt/gpt_gguf.h"

/* The ggml type named by the user: f32, f16, q8_0, q4_0, q4_1 (-1 otherwise). */
static int type_of(const char *name) {
    static const struct {
        const char *name;
        int type;
    } types[] = {{"f32", GGML_TYPE_F32}, {"f16", GGML_TYPE_F16}, {"q8_0", GGML_TYPE_Q8_0}, {"q4_0", GGML_TYPE_Q4_0},
                 {"q4_1", GGML_TYPE_Q4_1}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(name, types[i].name)) return types[i].type;
    return -1;
}

static int export_gguf(const char *command, const char *ckpt, const char *tok_path, const char *type_name,
                       const char *out) {
    int type = type_of(type_name);
    if (type < 0) return host_error("--type %s is not one of f32, f16, q8_0, q4_0, q4_1", type_name);
    if (!ckpt) return host_error("kiln %s needs --ckpt FILE", command);
    if (!out) return host_error("kiln %s needs --out FILE", command);
    char err[1024];
    kiln_ctx *ctx = host_open_device("cpu", -1);
    gpt_model *m = NULL;
    tokenizer *tok = NULL;
    int rc = 1;
    if (!ctx) goto done;
    if (gpt_checkpoint_load(ctx, ckpt, &m, err, sizeof err)) {
        host_error("%s", err);
        goto done;
    }
    if (gpt_tokenizer_choose(tok_path, ckpt, m->cfg.vocab_size, &tok)) goto done;
    if (gpt_export_gguf(m, tok, type, out, err, sizeof err)) {
        host_error("%s", err);
        goto done;
    }
    fprintf(stderr, "kiln %s: wrote %s (%s, %d layers, dim %d, %d tokens)\n", command, out, type_name, m->cfg.n_layer,
            m->cfg.n_embd, m->cfg.vocab_size);
    rc = 0;
done:
    tokenizer_free(tok);
    gpt_free(m);
    kiln_close(ctx);
    return rc;
}

int cmd_export(int argc, char **argv) {
    const char *ckpt = NULL, *out = NULL, *format = NULL, *type = "f16", *tok_path = NULL;
    cli_opt opts[] = {
        {.name = "--ckpt", .kind = CLI_STRING, .target = &ckpt, .meta = "FILE",
         .help = "the GPT checkpoint (safetensors, GPT-2 layout)"},
        {.name = "--format", .kind = CLI_STRING, .target = &format, .meta = "NAME", .help = "gguf"},
        {.name = "--type", .kind = CLI_STRING, .target = &type, .meta = "TYPE",
         .help = "the matrices' type: f32, f16, q8_0, q4_0 or q4_1 (docs/quantization.md says which tensors each changes)"},
        {.name = "--tokenizer", .kind = CLI_STRING, .target = &tok_path, .meta = "FILE",
         .help = "the model's tokenizer (default: the checkpoint's own, else bytes)"},
        {.name = "--out", .kind = CLI_STRING, .target = &out, .meta = "FILE", .help = "the file to write"},
    };
    const char *summary = "Writes a GPT checkpoint as a GGUF file that llama.cpp loads as GPT-2 (with its tokenizer).";
    int rc = cli_parse("export", summary, argc, argv, 2, opts, (int)(sizeof opts / sizeof opts[0]));
    if (rc) return rc < 0 ? 1 : 0;
    if (!format) return host_error("kiln export needs --format gguf");
    if (strcmp(format, "gguf")) return host_error("--format %s: kiln export writes gguf", format);
    return export_gguf("export", ckpt, tok_path, type, out);
}

int cmd_quantize(int argc, char **argv) {
    const char *ckpt = NULL, *out = NULL, *format = NULL, *tok_path = NULL;
    cli_opt opts[] = {
        {.name = "--ckpt", .kind = CLI_STRING, .target = &ckpt, .meta = "FILE",
         .help = "the GPT checkpoint (safetensors, GPT-2 layout)"},
        {.name = "--format", .kind = CLI_STRING, .target = &format, .meta = "TYPE", .help = "q8_0, q4_0 or q4_1"},
        {.name = "--tokenizer", .kind = CLI_STRING, .target = &tok_path, .meta = "FILE",
         .help = "the model's tokenizer (default: the checkpoint's own, else bytes)"},
        {.name = "--out", .kind = CLI_STRING, .target = &out, .meta = "FILE", .help = "the GGUF file to write"},
    };
    const char *summary =
        "Quantizes a GPT checkpoint's matrices to ggml's Q8_0, Q4_0 or Q4_1 blocks and writes them as\nGGUF "
        "(kiln export --format gguf --type TYPE).";
    int rc = cli_parse("quantize", summary, argc, argv, 2, opts, (int)(sizeof opts / sizeof opts[0]));
    if (rc) return rc < 0 ? 1 : 0;
    if (!format) return host_error("kiln quantize needs --format q8_0|q4_0|q4_1");
    if (strcmp(format, "q8_0") && strcmp(format, "q4_0") && strcmp(format, "q4_1"))
        return host_error("--format %s is not q8_0, q4_0 or q4_1", format);
    return export_gguf("quantize", ckpt, tok_path, format, out);
}
