/* `--lora PATH[:SCALE]` of decode, eval and export: each adapter (a PEFT folder, its
 * adapter_model.safetensors, or llama.cpp's LoRA GGUF: model/lora_gguf.h) read for the base
 * the command loaded, checked against it (architecture, shapes, tokenizer: refused; another
 * file of the same model: one warning line on stderr), its delta times SCALE (default 1). */
#ifndef KILN_HOST_RUN_LORA_OPTION_H
#define KILN_HOST_RUN_LORA_OPTION_H

#include "model/lora.h"
#include "run/cli.h"

/* The option's help text, the same in every command. */
#define HOST_LORA_HELP                                                                                             \
    "a LoRA adapter for --ckpt (a PEFT folder, its adapter_model.safetensors or llama.cpp's LoRA GGUF), its "      \
    "delta times SCALE (default 1); repeat it to apply several"

/* Splits one value into the adapter's path and its scale: the text after the last ':' is the
 * scale unless the whole value names a file or folder. Returns 0, or 1 with one line printed
 * (a SCALE that is not a finite number). */
int host_lora_spec(const char *value, char *path, size_t size, float *scale);

/* Reads the adapter of one value for m, described by base (lora_base_info_of), the warning
 * printed. Returns 0 with *out, or 1 with one line printed. */
int host_load_lora(gpt_model *m, lora_base_info *base, const char *value, lora_adapter **out);

/* Reads every adapter of specs for m (read from base_path with tokenizer tok) and, when
 * attach, attaches them in order. Returns 0 with *out (count specs->count; NULL when none),
 * or 1 with one line printed and nothing left allocated. */
int host_load_loras(gpt_model *m, const tokenizer *tok, const char *base_path, const cli_list *specs, int attach,
                    lora_adapter ***out);
void host_free_loras(lora_adapter **a, int n);

#endif
