/* The bert kind's entries in its commands' table (cli/kind_commands.h): BERT's masked language model at the command line. */
#ifndef KILN_HOST_CLI_BERT_COMMANDS_H
#define KILN_HOST_CLI_BERT_COMMANDS_H

#include "cli/kind_commands.h"

extern const train_kind bert_train_kind; /* bert_train.c */
int bert_eval_command(int argc, char **argv);     /* kiln eval */
int bert_parity_command(int argc, char **argv);   /* kiln dev bert-parity */

#endif
