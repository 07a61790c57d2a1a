/* The kiln subcommands, one file each in cli/ (the `kiln bench` commands: bench/bench.h).
 * train, eval, decode and dev run any model kind through its table (cli/kind_commands.h).
 * Each takes main's argc/argv (its options start at argv[2]) and returns the process exit
 * code; errors are printed as one line "kiln: error: ...". */
#ifndef KILN_HOST_CLI_COMMANDS_H
#define KILN_HOST_CLI_COMMANDS_H

int cmd_train(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_decode(int argc, char **argv);
int cmd_info(int argc, char **argv);
/* `kiln export --format gguf` and `kiln quantize` (export.c) */
int cmd_export(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_pairs(int argc, char **argv); /* kiln pairs from-mo */
int cmd_tokenizer(int argc, char **argv);
/* Developer tools (not in --help): the kinds' PyTorch parity dumps. */
int cmd_dev(int argc, char **argv);

#endif
