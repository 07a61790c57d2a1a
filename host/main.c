/* kiln: train, evaluate and decode GPT models on Vulkan, OpenCL or the CPU.
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

static void usage(FILE *out) {
    fprintf(out,
            "usage: kiln <command> [options]\n"
            "\n"
            "commands:\n"
            "  train        train a byte-level GPT on a text file\n"
            "  eval         mean cross-entropy of a checkpoint on a text file\n"
            "  decode       continue a prompt with a checkpoint\n"
            "  info         backends and devices of this machine\n"
            "  verify       every kernel checked against the CPU on a device (run it first on a new GPU)\n"
            "  export       a GPT as GGUF (llama.cpp's gpt2), f32, f16, q8_0 or q4_0\n"
            "  quantize     a GPT's matrices to Q8_0 or Q4_0, as GGUF\n"
            "  plot         training runs' metrics overlaid as an SVG\n"
            "  pairs from-mo  translation pairs (TSV) from gettext catalogs\n"
            "  tokenizer    train, import (GPT-2), encode and decode tokenizers\n"
            "  bench        each device's ceilings, kernels and models (kiln bench --help)\n"
            "  bench compare  several `kiln bench --json` results side by side\n"
            "  bench train  training throughput of kiln and PyTorch on the same model\n"
            "  bench gemm   GEMM throughput of the backends and their peers\n"
            "  bench decode  decoding speed, bytes per token and memory per weight format\n"
            "\n"
            "`kiln <command> --help` describes a command's options.\n");
}

static int cmd_bench(int argc, char **argv) {
    const char *what = argc >= 3 ? argv[2] : "";
    if (!strcmp(what, "train")) return cmd_bench_train(argc, argv);
    if (!strcmp(what, "precision")) return cmd_bench_precision(argc, argv);
    if (!strcmp(what, "gemm")) return kiln_bench_gemm_main(argc - 2, argv + 2);
    if (!strcmp(what, "compare")) return kiln_bench_compare_main(argc - 2, argv + 2);
    if (!strcmp(what, "decode")) return kiln_bench_main(argc, argv);
    /* no subcommand: `kiln bench [options]` measures the devices */
    if (!*what || what[0] == '-') return kiln_bench_main(argc, argv);
    if (!strcmp(what, "--help") || !strcmp(what, "-h")) {
        usage(stdout);
        return 0;
    }
    return host_error("kiln bench: expected train, precision, gemm, compare, decode or options (see kiln --help)");
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
    static const struct {
        const char *name;
        int (*run)(int, char **);
    } commands[] = {
        {.name = "train", .run = cmd_train}, {.name = "eval", .run = cmd_eval},
        {.name = "decode", .run = cmd_decode}, {.name = "info", .run = cmd_info},
        {.name = "verify", .run = cmd_verify},
        {.name = "export", .run = cmd_export}, {.name = "quantize", .run = cmd_quantize},
        {.name = "plot", .run = cmd_plot}, {.name = "pairs", .run = cmd_pairs},
        {.name = "tokenizer", .run = cmd_tokenizer},
        {.name = "bench", .run = cmd_bench}, {.name = "dev", .run = cmd_dev},
    };
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(cmd, commands[i].name)) return commands[i].run(argc, argv);
    return host_error("unknown command '%s' (try kiln --help)", cmd);
}
