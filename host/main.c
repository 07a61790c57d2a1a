/* kiln: train, evaluate and decode GPT, seq2seq and BERT models on Vulkan, OpenCL or the CPU.
 *
 * main dispatches to one file per subcommand (the bench suite's are in bench/); each parses
 * its own options (run/cli.h) and prints errors as one line "kiln: error: ..." with a
 * non-zero exit code. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "cli/commands.h"
#include "run/cli.h"

/* The commands: main dispatches through these tables and `kiln --help` lists them from the
 * same tables, so a command cannot be added without its line in the help (the test
 * host_help checks every name here against `kiln --help`). A NULL summary hides a command. */
typedef struct {
    const char *name;
    int (*run)(int, char **);
    const char *summary;
    int skip; /* argv entries dropped before the call: gemm and compare parse from their word on */
} command;

static int cmd_bench(int argc, char **argv);

static const command commands[] = {
    {.name = "train", .run = cmd_train,
     .summary = "train a GPT (GPT-2 or the Llama family), seq2seq or BERT model"},
    {.name = "eval", .run = cmd_eval,
     .summary = "a checkpoint's mean cross-entropy on a text file (seq2seq: BLEU on pairs)"},
    {.name = "decode", .run = cmd_decode,
     .summary = "continue a prompt (GPT) or translate (seq2seq) with a checkpoint"},
    {.name = "info", .run = cmd_info, .summary = "backends and devices of this machine"},
    {.name = "verify", .run = cmd_verify,
     .summary = "every kernel checked against the CPU on a device (run it first on a new GPU)"},
    {.name = "export", .run = cmd_export,
     .summary = "a GPT as GGUF (f32, f16, q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k or a q4_k/q5_k mix), HF or "
                "kiln; a LoRA adapter as llama.cpp's LoRA GGUF, or merged"},
    {.name = "quantize", .run = cmd_quantize,
     .summary = "a GPT's matrices to q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k or a mix, as GGUF"},
    {.name = "plot", .run = cmd_plot, .summary = "training runs' metrics overlaid as an SVG"},
    {.name = "pairs", .run = cmd_pairs,
     .summary = "pairs from-mo: translation pairs (TSV) from gettext catalogs"},
    {.name = "tokenizer", .run = cmd_tokenizer,
     .summary = "train, import (GPT-2, tokenizer.json), encode and decode tokenizers"},
    {.name = "bench", .run = cmd_bench,
     .summary = "each device's ceilings, kernels and models (kiln bench --help)"},
    {.name = "dev", .run = cmd_dev}, /* developer tools: the kinds' PyTorch parity dumps */
};

static const command bench_commands[] = {
    {.name = "compare", .run = kiln_bench_compare_main,
     .summary = "several `kiln bench --json` results side by side", .skip = 2},
    {.name = "train", .run = cmd_bench_train,
     .summary = "training throughput of kiln and PyTorch on the same model"},
    {.name = "precision", .run = cmd_bench_precision,
     .summary = "fp16 against fp32 training: memory and step time"},
    {.name = "attention", .run = cmd_bench_attention,
     .summary = "fused against unfused attention: peak memory and step time over T"},
    {.name = "gemm", .run = kiln_bench_gemm_main,
     .summary = "GEMM throughput of the backends and their peers", .skip = 2},
    {.name = "decode", .run = kiln_bench_main,
     .summary = "decoding speed, bytes per token and memory per weight format"},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void usage(FILE *out) {
    fprintf(out, "usage: kiln <command> [options]\n       kiln --version\n\ncommands:\n");
    for (size_t i = 0; i < COUNT(commands); i++)
        if (commands[i].summary) fprintf(out, "  %-16s %s\n", commands[i].name, commands[i].summary);
    for (size_t i = 0; i < COUNT(bench_commands); i++)
        fprintf(out, "  bench %-10s %s\n", bench_commands[i].name, bench_commands[i].summary);
    fprintf(out, "  %-16s %s\n", "version", "kiln's version and the git commit it was built from");
    fprintf(out, "\n`kiln <command> --help` describes a command's options.\n");
}

/* one line: the project's version (CMake) and the commit configured from, or "unknown" */
static int version(void) {
    printf("kiln %s (commit %s)\n", KILN_VERSION_STRING, KILN_GIT_COMMIT);
    return 0;
}

static int cmd_bench(int argc, char **argv) {
    const char *what = argc >= 3 ? argv[2] : "";
    for (size_t i = 0; i < COUNT(bench_commands); i++)
        if (!strcmp(what, bench_commands[i].name))
            return bench_commands[i].run(argc - bench_commands[i].skip, argv + bench_commands[i].skip);
    /* no subcommand: `kiln bench [options]` measures the devices (and --help anywhere
     * after an unknown word shows its help, which names the subcommands) */
    if (!*what || what[0] == '-' || cli_help_asked(argc, argv, 2)) return kiln_bench_main(argc, argv);
    return host_error("kiln bench: expected train, precision, attention, gemm, compare, decode or options (see kiln --help)");
}

int main(int argc, char **argv) {
    /* A file-size limit (ulimit -f) kills a process that crosses it with SIGXFSZ, leaving
     * a partial file behind; ignored, the write fails with EFBIG instead, and the writers
     * report it, remove their temporary file and keep the previous checkpoint. */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) return version();
    for (size_t i = 0; i < COUNT(commands); i++)
        if (!strcmp(cmd, commands[i].name)) return commands[i].run(argc, argv);
    if (cli_help_asked(argc, argv, 1)) { /* `kiln --verbose --help`: no command, the list */
        usage(stdout);
        return 0;
    }
    return host_error("unknown command '%s' (try kiln --help)", cmd);
}
