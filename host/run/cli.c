/* Option parsing for the kiln subcommands (see cli.h). */
#include "run/cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "formats/text_number.h"
#include "kiln/kiln.h"

static char g_error_prefix[64];
static int g_errors_muted;

void host_error_prefix(const char *prefix) { snprintf(g_error_prefix, sizeof g_error_prefix, "%s", prefix); }
void host_errors_mute(int mute) { g_errors_muted = mute; }

int host_error(const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* One line, always: scripts (and the bad-input tests) read the error as one line. */
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    if (!g_errors_muted) fprintf(stderr, "kiln: error: %s%s\n", g_error_prefix, msg);
    return 1;
}

int host_engine_error(const char *what) {
    const char *msg = kiln_error_message();
    if (!msg || !*msg) msg = "unknown engine error";
    return what ? host_error("%s: %s", what, msg) : host_error("%s", msg);
}

/* host_error for the parser, which returns -1 on failure. */
static int opt_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int opt_error(const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    host_error("%s", msg);
    return -1;
}

const cli_opt *cli_find(const cli_opt *opts, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(opts[i].name, name)) return &opts[i];
    return NULL;
}

/* "kiln: error: --heads 0 is out of range (1 to 1024)". */
static int range_error(const cli_opt *o, const char *value) {
    if (o->kind == CLI_INT)
        return opt_error("%s %s is out of range (%lld to %lld)", o->name, value, (long long)o->min,
                         (long long)o->max);
    return opt_error("%s %s is out of range (%g to %g)", o->name, value, o->min, o->max);
}

static int set_value(cli_opt *o, const char *value) {
    switch (o->kind) {
    case CLI_INT: {
        int64_t v;
        if (text_to_int64(value, &v))
            return opt_error("%s expects a whole number, got '%s'", o->name, value);
        if ((double)v < o->min || (double)v > o->max) return range_error(o, value);
        *(int *)o->target = (int)v;
        return 0;
    }
    case CLI_U64:
        if (text_to_uint64(value, (uint64_t *)o->target))
            return opt_error("%s expects a non-negative whole number, got '%s'", o->name, value);
        return 0;
    case CLI_FLOAT: {
        double v;
        if (text_to_double(value, &v))
            return opt_error("%s expects a number, got '%s'", o->name, value);
        if (v < o->min || v > o->max) return range_error(o, value);
        *(float *)o->target = (float)v;
        return 0;
    }
    case CLI_LIST:
    case CLI_POSITIONAL: {
        cli_list *l = o->target;
        if (!*value) return opt_error("%s expects a value, got an empty string", o->name);
        if (l->count >= CLI_LIST_MAX) return opt_error("%s: at most %d values", o->name, CLI_LIST_MAX);
        l->items[l->count++] = value;
        return 0;
    }
    case CLI_STRING:
        if (!*value) return opt_error("%s expects a value, got an empty string", o->name);
        *(const char **)o->target = value;
        return 0;
    case CLI_FLAG:
        *(int *)o->target = 1;
        return 0;
    }
    return -1;
}

int cli_help_asked(int argc, char **argv, int first) {
    for (int i = first; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
    return 0;
}

int cli_parse(const char *command, const char *summary, int argc, char **argv, int first,
              cli_opt *opts, int n) {
    /* before parsing: the help shows the defaults, and an error earlier in the line does not
     * hide it */
    if (cli_help_asked(argc, argv, first)) {
        cli_usage(command, summary, opts, n);
        return 1;
    }
    for (int i = first; i < argc; i++) {
        const char *arg = argv[i];
        /* a short option ("-o") is one the table spells that way */
        int short_option = 0;
        for (int k = 0; k < n; k++)
            if (opts[k].kind != CLI_POSITIONAL && arg[0] == '-' && arg[1] != '-' && !strcmp(opts[k].name, arg))
                short_option = 1;
        if (strncmp(arg, "--", 2) != 0 && !short_option) {
            cli_opt *positional = NULL;
            for (int k = 0; k < n && !positional; k++)
                if (opts[k].kind == CLI_POSITIONAL) positional = &opts[k];
            if (!positional)
                return opt_error("kiln %s: unexpected argument '%s' (options start with --; see "
                                  "kiln %s --help)", command, arg, command);
            if (set_value(positional, arg)) return -1;
            positional->seen = 1;
            continue;
        }
        const char *eq = strchr(arg, '=');
        size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
        cli_opt *o = NULL;
        for (int k = 0; k < n && !o; k++)
            if (opts[k].kind != CLI_POSITIONAL && strlen(opts[k].name) == name_len &&
                !strncmp(opts[k].name, arg, name_len))
                o = &opts[k];
        if (!o)
            return opt_error("kiln %s: unknown option '%.*s' (see kiln %s --help)", command,
                              (int)name_len, arg, command);
        const char *value = NULL;
        if (o->kind == CLI_FLAG) {
            if (eq) return opt_error("%s takes no value", o->name);
        } else if (eq) {
            value = eq + 1;
        } else {
            if (i + 1 >= argc) return opt_error("%s expects a value", o->name);
            value = argv[++i];
        }
        if (o->seen && o->kind != CLI_FLAG && o->kind != CLI_LIST)
            return opt_error("%s is given twice", o->name);
        if (set_value(o, value)) return -1;
        o->seen = 1;
    }
    return 0;
}

void cli_usage(const char *command, const char *summary, const cli_opt *opts, int n) {
    const char *positional = NULL;
    for (int i = 0; i < n; i++)
        if (opts[i].kind == CLI_POSITIONAL) positional = opts[i].name;
    printf("usage: kiln %s%s%s%s [options]\n\n%s\n\noptions:\n", command, positional ? " " : "",
           positional ? positional : "", positional ? "..." : "", summary);
    for (int i = 0; i < n; i++) {
        const cli_opt *o = &opts[i];
        if (o->kind == CLI_POSITIONAL) continue;
        char left[64], def[96] = "";
        snprintf(left, sizeof left, "%s%s%s", o->name, o->meta ? " " : "", o->meta ? o->meta : "");
        switch (o->kind) {
        case CLI_INT: snprintf(def, sizeof def, " (default %d)", *(int *)o->target); break;
        case CLI_U64:
            snprintf(def, sizeof def, " (default %llu)", (unsigned long long)*(uint64_t *)o->target);
            break;
        case CLI_FLOAT: snprintf(def, sizeof def, " (default %g)", (double)*(float *)o->target); break;
        case CLI_LIST: snprintf(def, sizeof def, " (repeatable)"); break;
        case CLI_POSITIONAL: break;
        case CLI_STRING:
            if (*(const char **)o->target)
                snprintf(def, sizeof def, " (default %s)", *(const char **)o->target);
            break;
        case CLI_FLAG: break;
        }
        printf("  %-22s %s%s\n", left, o->help, def);
    }
    printf("  %-22s %s\n", "--help", "print this help");
}
