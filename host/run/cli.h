/* Command-line options for the kiln subcommands: a table of options per command, strict
 * parsing (a number is a whole number or it is an error: "--lr abc", "--steps 10x" and
 * "--steps -1" are refused with a message naming the option), generated --help text, and
 * the one-line error format every command uses. Numbers are read by formats/text_number.h. */
#ifndef KILN_HOST_RUN_CLI_H
#define KILN_HOST_RUN_CLI_H

typedef enum cli_kind {
    CLI_INT,    /* int, within [min, max] */
    CLI_U64,    /* uint64_t (seeds) */
    CLI_FLOAT,  /* float, finite, within [min, max] */
    CLI_STRING, /* const char * (points into argv) */
    CLI_FLAG,   /* int set to 1; takes no value */
    CLI_LIST,   /* repeatable: each value is appended to a cli_list */
    CLI_POSITIONAL /* the command's positional arguments, appended to a cli_list; its name
                      (e.g. "RUN") is for the usage text only */
} cli_kind;

/* The values of a CLI_LIST or CLI_POSITIONAL entry, in the order given (pointing into argv).
 * 4096: `kiln pairs from-mo` takes a locale's catalogs, hundreds on a desktop machine. */
#define CLI_LIST_MAX 4096
typedef struct cli_list {
    const char *items[CLI_LIST_MAX];
    int count;
} cli_list;

typedef struct cli_opt {
    const char *name; /* "--layers" */
    cli_kind kind;
    void *target;     /* int *, uint64_t *, float *, const char ** or int * */
    const char *meta; /* "N", "FILE", ... for the usage line */
    const char *help;
    double min, max;  /* accepted range of CLI_INT / CLI_FLOAT (inclusive) */
    int seen;         /* set by cli_parse when the option was given */
} cli_opt;

/* Parses argv[first..argc) against opts[0..n). Returns 0 on success, 1 when --help or -h
 * is anywhere in the line (cli_help_asked; usage printed to stdout, nothing parsed), -1 on an error (already printed as one
 * line "kiln: error: ..."). Every option may be given as "--name value" or
 * "--name=value". Positional arguments are errors unless the table has a CLI_POSITIONAL
 * entry; a CLI_LIST option may be repeated, any other option given twice is an error. */
int cli_parse(const char *command, const char *summary, int argc, char **argv, int first,
              cli_opt *opts, int n);

/* 1 when argv[first..argc) holds --help or -h anywhere (after unknown options, in place of
 * a missing value): a command then prints its help whatever else the line holds. */
int cli_help_asked(int argc, char **argv, int first);

/* Prints "usage: kiln COMMAND [options]", the summary and one line per option with its
 * current value as the default. */
void cli_usage(const char *command, const char *summary, const cli_opt *opts, int n);

/* The option named `name` in opts (NULL when absent): for `seen` checks. */
const cli_opt *cli_find(const cli_opt *opts, int n, const char *name);

/* Prints "kiln: error: <message>" and a newline to stderr; returns 1 (the exit code). */
int host_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same with the engine's last error message as the text after `what: `. */
int host_engine_error(const char *what);
/* For data-parallel ranks (cli/train_parallel.h): text put before every message ("rank 1:
 * "), and muting, for the errors every rank meets alike (bad options), which rank 0 alone
 * reports. */
void host_error_prefix(const char *prefix);
void host_errors_mute(int mute);

#endif
