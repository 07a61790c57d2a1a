/* The seq2seq kind's entries in its commands' table (cli/kind_commands.h): the encoder-decoder Transformer at the command line. */
#ifndef KILN_HOST_CLI_SEQ2SEQ_COMMANDS_H
#define KILN_HOST_CLI_SEQ2SEQ_COMMANDS_H

#include "cli/kind_commands.h"

extern const train_kind seq2seq_train_kind; /* seq2seq_train.c */
int seq2seq_eval_command(int argc, char **argv);     /* kiln eval */
int seq2seq_decode_command(int argc, char **argv);   /* kiln decode */
int seq2seq_parity_command(int argc, char **argv);   /* kiln dev seq2seq-parity */

#endif
