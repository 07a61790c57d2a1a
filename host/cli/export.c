/* `kiln export --format gguf|hf|kiln` and `kiln quantize`: a GPT (a kiln checkpoint, a GGUF file or a
 * Hugging Face folder) as a GGUF file of llama.cpp's gpt2 architecture (model/gpt/gpt_gguf.h)
 * or of the Llama family's llama, qwen2 or qwen3 (model/gpt/gpt_gguf_llama.h), at f32 or f16,
 * or quantized in ggml's blocks to a pure type (q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k) or one
 * of llama.cpp's mixes (q4_k_m q4_k_s q5_k_m q5_k_s: model/gpt/gpt_quant_mix.h); or as a Hugging Face folder
 * (model/gpt/gpt_hf.h) at f32, f16 or bf16; or as a kiln checkpoint (f32). With --lora ADAPTER: the adapter alone as llama.cpp's
 * LoRA GGUF (model/lora_gguf.h), or with --merge-lora the model with the adapters' B A added
 * to its weights (a quantized base read dequantized, written f16 unless --type asks
 * otherwise). The conversion runs on the host (the CPU backend holds the weights while they
 * are read): no device is needed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/cli.h"
#include "cli/commands.h"
#include "run/device.h"
#include "run/gpt_tokenizer.h"
#include "formats/gguf.h"
#include "model/gpt/gpt_gguf.h"
#include "model/gpt/gpt_checkpoint.h"
#include "model/gpt/gpt_hf.h"
#include "model/checkpoint_tokenizer.h"
#include "run/gpt_load.h"
#include "run/lora_option.h"
#include "model/lora_gguf.h"
#include "model/lora_merge.h"

/* The safetensors dtype of --type for a Hugging Face folder (NULL otherwise). */
static const char *hf_dtype_of(const char *name) {
    return !strcmp(name, "f32") ? "F32" : !strcmp(name, "f16") ? "F16" : !strcmp(name, "bf16") ? "BF16" : NULL;
}

/* Adds the B A of every adapter of specs to m's weights. Returns 0, or 1 (printed). */
static int merge_loras(gpt_model *m, const tokenizer *tok, const char *ckpt, const cli_list *specs) {
    lora_adapter **a;
    char err[1024];
    if (specs->count == 0) return 0;
    if (host_load_loras(m, tok, ckpt, specs, 0, &a)) return 1;
    int rc = lora_merge(m, a, specs->count, err, sizeof err) ? host_error("--merge-lora: %s", err) : 0;
    host_free_loras(a, specs->count);
    return rc;
}

/* The adapter of spec for the base at ckpt written alone as llama.cpp's LoRA GGUF. */
static int export_adapter(const char *ckpt, const char *tok_path, const char *spec, const char *out) {
    char err[1024];
    kiln_ctx *ctx = host_open_device("cpu", -1);
    gpt_model *m = NULL;
    tokenizer *tok = NULL;
    lora_adapter *a = NULL;
    lora_base_info *base = malloc(sizeof *base);
    int rc = 1;
    if (!base) {
        host_error("out of memory");
        goto done;
    }
    if (!ctx || host_load_gpt(ctx, ckpt, tok_path, &m, &tok)) goto done;
    if (lora_base_info_of(m, tok, ckpt, base, err, sizeof err)) {
        host_error("--ckpt %s: %s", ckpt, err);
        goto done;
    }
    if (host_load_lora(m, base, spec, &a)) goto done;
    if (lora_save_gguf(a, &m->cfg, base, out, err, sizeof err)) {
        host_error("%s", err);
        goto done;
    }
    fprintf(stderr, "kiln export: wrote %s (llama.cpp's LoRA adapter: rank %d, alpha %g, %d matrices)\n", out, a->rank,
            (double)(a->scale * (float)a->rank), a->n_params / 2);
    rc = 0;
done:
    lora_free(a);
    free(base);
    tokenizer_free(tok);
    gpt_free(m);
    kiln_close(ctx);
    return rc;
}

/* m as a kiln checkpoint (model/gpt/gpt_checkpoint.h), its tokenizer in the metadata unless
 * it is bytes (as kiln train writes it). */
static int save_checkpoint(const gpt_model *m, const tokenizer *tok, const char *out, char *err, size_t errlen) {
    char *text = gpt_tokenizer_checkpoint_text(tok);
    gpt_meta meta[] = {{.key = "written_by", .value = "kiln export"}, {.key = CKPT_TOKENIZER_KEY, .value = text}};
    int rc = gpt_checkpoint_save(m, out, meta, text ? 2 : 1, err, errlen);
    free(text);
    return rc;
}

/* The model at ckpt (any file kiln reads: run/gpt_load.h), with the adapters of merge merged
 * into it (read with floats then), written as `format` (gguf or hf). */
static int export_model(const char *command, const char *format, const char *ckpt, const char *tok_path,
                        const char *type_name, const cli_list *merge, const char *out) {
    int hf = !strcmp(format, "hf"), kiln = !strcmp(format, "kiln");
    const gpt_quant_type *type = hf || kiln ? NULL : gpt_quant_type_find(type_name);
    const char *dtype = hf ? hf_dtype_of(type_name) : NULL;
    if (!hf && !kiln && !type) return host_error("--type %s is not one of %s", type_name, gpt_quant_type_names(0));
    if (hf && !dtype) return host_error("--type %s: a Hugging Face folder holds f32, f16 or bf16", type_name);
    if (kiln && strcmp(type_name, "f32")) return host_error("--type %s: a kiln checkpoint holds f32", type_name);
    if (!ckpt) return host_error("kiln %s needs --ckpt FILE", command);
    if (!out) return host_error("kiln %s needs --out %s", command, hf ? "FOLDER" : "FILE");
    char err[1024];
    kiln_ctx *ctx = host_open_device("cpu", -1);
    gpt_model *m = NULL;
    tokenizer *tok = NULL;
    int rc = 1;
    if (!ctx || (merge->count || kiln ? host_load_gpt_floats(ctx, ckpt, tok_path, &m, &tok)
                              : host_load_gpt(ctx, ckpt, tok_path, &m, &tok)) || merge_loras(m, tok, ckpt, merge))
        goto done;
    /* the rope scaling's parameters: kiln keeps its factors only, a Hugging Face source says them */
    hf_config source;
    gpt_rope_llama3 scaling;
    char dir[4096];
    gpt_hf_dir(ckpt, dir, sizeof dir);
    int folder = gpt_hf_is_folder(ckpt);
    int scaled = folder && !hf_config_read(dir, &source, err, sizeof err) && !gpt_hf_rope_scaling(&source, &scaling);
    /* the folder's tokenizer.json goes along unless --tokenizer chose another */
    const char *tok_source = folder && !tok_path ? dir : NULL;
    if (kiln ? save_checkpoint(m, tok, out, err, sizeof err)
        : hf ? gpt_export_hf(m, tok, dtype, scaled ? &scaling : NULL, tok_source, out, err, sizeof err)
             : gpt_export_gguf(m, tok, type, out, err, sizeof err)) {
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
    const char *ckpt = NULL, *out = NULL, *format = NULL, *type = NULL, *tok_path = NULL;
    int merge = 0;
    static cli_list lora; /* static: 32 KiB */
    lora.count = 0;
    cli_opt opts[] = {
        {.name = "--ckpt", .kind = CLI_STRING, .target = &ckpt, .meta = "PATH",
         .help = "the GPT: a kiln checkpoint, a GGUF file or a Hugging Face folder"},
        {.name = "--format", .kind = CLI_STRING, .target = &format, .meta = "NAME",
         .help = "gguf (llama.cpp: gpt2, llama, qwen2 or qwen3 as the model is), hf (a Hugging Face folder) or "
                 "kiln (a kiln checkpoint, f32)"},
        {.name = "--type", .kind = CLI_STRING, .target = &type, .meta = "TYPE",
         .help = "gguf: the matrices' f32, f16 (default), a pure type (q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k) "
                 "or llama.cpp's mix (q4_k_m q4_k_s q5_k_m q5_k_s; docs/quantization.md); hf: f32 (default), f16 "
                 "or bf16"},
        {.name = "--tokenizer", .kind = CLI_STRING, .target = &tok_path, .meta = "FILE",
         .help = "the model's tokenizer (default: the checkpoint's own, else bytes)"},
        {.name = "--lora", .kind = CLI_LIST, .target = &lora, .meta = "PATH[:SCALE]",
         .help = "a LoRA adapter for --ckpt (a PEFT folder, its adapter_model.safetensors or llama.cpp's LoRA "
                 "GGUF): written alone as llama.cpp's LoRA GGUF (--format gguf), or merged (--merge-lora: "
                 "several at once), its delta times SCALE (default 1)"},
        {.name = "--merge-lora", .kind = CLI_FLAG, .target = &merge,
         .help = "write the model with the --lora adapters merged into its weights (W + scale B A)"},
        {.name = "--out", .kind = CLI_STRING, .target = &out, .meta = "FILE", .help = "the file to write"},
    };
    const char *summary = "Writes a GPT as a GGUF file that llama.cpp loads (GPT-2, or the Llama family's llama,\n"
                          "qwen2 or qwen3), as a Hugging Face folder (config.json, model.safetensors,\n"
                          "tokenizer.json) or as a kiln checkpoint, with its tokenizer; with --lora, a LoRA adapter as llama.cpp's LoRA\n"
                          "GGUF, or with --merge-lora the model with its adapters merged (a quantized base is\n"
                          "merged through its dequantized values and written f16 unless --type says otherwise).";
    int rc = cli_parse("export", summary, argc, argv, 2, opts, (int)(sizeof opts / sizeof opts[0]));
    if (rc) return rc < 0 ? 1 : 0;
    if (!format) return host_error("kiln export needs --format gguf|hf|kiln");
    if (strcmp(format, "gguf") && strcmp(format, "hf") && strcmp(format, "kiln"))
        return host_error("--format %s: kiln export writes gguf, hf or kiln", format);
    if (merge && !lora.count) return host_error("--merge-lora needs --lora ADAPTER");
    if (lora.count && !merge) {
        if (strcmp(format, "gguf"))
            return host_error("--lora without --merge-lora writes the adapter as llama.cpp's LoRA GGUF: --format gguf");
        if (type && strcmp(type, "f32")) return host_error("--type %s: a LoRA GGUF holds f32 tensors", type);
        if (lora.count > 1) return host_error("--lora: one adapter per LoRA GGUF (--merge-lora merges several)");
        if (!ckpt) return host_error("kiln export --lora needs --ckpt BASE: the model the adapter is for");
        if (!out) return host_error("kiln export needs --out FILE");
        return export_adapter(ckpt, tok_path, lora.items[0], out);
    }
    return export_model("export", format, ckpt, tok_path, type ? type : strcmp(format, "gguf") ? "f32" : "f16", &lora,
                        out);
}

int cmd_quantize(int argc, char **argv) {
    const char *ckpt = NULL, *out = NULL, *format = NULL, *tok_path = NULL;
    cli_opt opts[] = {
        {.name = "--ckpt", .kind = CLI_STRING, .target = &ckpt, .meta = "FILE",
         .help = "the GPT: a kiln checkpoint, a GGUF file or a Hugging Face folder"},
        {.name = "--format", .kind = CLI_STRING, .target = &format, .meta = "TYPE",
         .help = "q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k, or llama.cpp's mix q4_k_m q4_k_s q5_k_m q5_k_s "
                 "(docs/quantization.md)"},
        {.name = "--tokenizer", .kind = CLI_STRING, .target = &tok_path, .meta = "FILE",
         .help = "the model's tokenizer (default: the checkpoint's own, else bytes)"},
        {.name = "--out", .kind = CLI_STRING, .target = &out, .meta = "FILE", .help = "the GGUF file to write"},
    };
    const char *summary =
        "Quantizes a GPT's matrices to ggml's blocks (one type, or llama.cpp's per-tensor mix) and\nwrites them as "
        "GGUF (kiln export --format gguf --type TYPE).";
    int rc = cli_parse("quantize", summary, argc, argv, 2, opts, (int)(sizeof opts / sizeof opts[0]));
    if (rc) return rc < 0 ? 1 : 0;
    if (!format) return host_error("kiln quantize needs --format TYPE (%s)", gpt_quant_type_names(2));
    const gpt_quant_type *type = gpt_quant_type_find(format);
    if (!type || !gpt_quant_type_quantized(type))
        return host_error("--format %s is not one of %s", format, gpt_quant_type_names(2));
    static const cli_list none;
    return export_model("quantize", "gguf", ckpt, tok_path, format, &none, out);
}
