/* The gpt kind's entries in its commands' table (cli/kind_commands.h): the GPT (decoder-only; GPT-2's architecture, and its options) at the command line. */
#ifndef KILN_HOST_CLI_GPT_COMMANDS_H
#define KILN_HOST_CLI_GPT_COMMANDS_H

#include "cli/kind_commands.h"

extern const train_kind gpt_train_kind; /* gpt_train.c */
int gpt_eval_command(int argc, char **argv);     /* kiln eval */
int gpt_decode_command(int argc, char **argv);   /* kiln decode */
int gpt_parity_command(int argc, char **argv);   /* kiln dev parity */

#endif
