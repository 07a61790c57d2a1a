/* The kiln subcommands, one file each in cli/ (the `kiln bench` commands: bench/bench.h).
 * Each takes main's argc/argv (its options start at argv[2]) and returns the process exit
 * code; errors are printed as one line "kiln: error: ...". */
#ifndef KILN_HOST_CLI_COMMANDS_H
#define KILN_HOST_CLI_COMMANDS_H

int cmd_train(int argc, char **argv);
/* `kiln train --model seq2seq` (cmd_train dispatches to it) */
int cmd_train_seq2seq(int argc, char **argv);
/* `kiln train --model bert` (cmd_train dispatches to it) */
int cmd_train_bert(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_decode(int argc, char **argv);
/* `kiln eval` and `kiln decode` of an encoder-decoder checkpoint (dispatched on its model_type) */
int cmd_eval_seq2seq(int argc, char **argv);
int cmd_decode_seq2seq(int argc, char **argv);
/* `kiln eval` of a BERT checkpoint (model_type "bert"): MLM loss and accuracy */
int cmd_eval_bert(int argc, char **argv);
int cmd_info(int argc, char **argv);
/* `kiln export --format gguf` and `kiln quantize` (export.c) */
int cmd_export(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_pairs(int argc, char **argv); /* kiln pairs from-mo */
int cmd_tokenizer(int argc, char **argv);
/* Developer tools (not in --help): the PyTorch parity dump. */
int cmd_dev(int argc, char **argv);
int cmd_dev_seq2seq_parity(int argc, char **argv);
int cmd_dev_bert_parity(int argc, char **argv);

#endif
