/*
 * `shiftsim <verb> [options]`: the verb dispatcher and the helpers verbs share (their shared
 * options are src/app/options.c).
 *
 * Exit status: 0 on success, 1 when an input or the simulation fails, 2 on a usage error.
 */
#include "ssim-config.h"
#include "src/app/verbs.h"

#include "src/app/cli.h"
#include <shiftsim/data.h>
#include <shiftsim/report.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    const char *summary;
    int (*fn)(int argc, char **argv);
} Verb;

static const Verb verbs[] = {
#define SSIM_X(name, summary) {#name, summary, ssim_verb_##name},
    SSIM_VERB_LIST(SSIM_X)
#undef SSIM_X
};

static void print_help(FILE *out)
{
    fprintf(out,
            "Usage: shiftsim <verb> [options]\n\n"
            "shiftsim is a discrete-event simulator of 3D-parallel (data x tensor x pipeline)\n"
            "training on GPU clusters.  Every verb runs on a bundled default when given no\n"
            "arguments.\n\nVerbs:\n");
    for (gsize i = 0; i < G_N_ELEMENTS(verbs); i++)
        fprintf(out, "  %-10s %s\n", verbs[i].name, verbs[i].summary);
    fprintf(out, "\nOptions:\n"
                 "  -h, --help     show this help; `shiftsim <verb> --help` for a verb's options\n"
                 "  --version      print the version\n\n"
                 "Exit status: 0 success, 1 runtime error (bad input file, deadlock, limit), "
                 "2 usage error.\n");
}

int ssim_cli_main(int argc, char **argv)
{
    if (argc < 2) {
        print_help(stderr);
        return SSIM_EXIT_USAGE;
    }
    const char *verb = argv[1];
    if (strcmp(verb, "--help") == 0 || strcmp(verb, "-h") == 0 || strcmp(verb, "help") == 0) {
        print_help(stdout);
        return SSIM_EXIT_OK;
    }
    if (strcmp(verb, "--version") == 0 || strcmp(verb, "version") == 0) {
        printf("shiftsim %s\n", ssim_version());
        return SSIM_EXIT_OK;
    }
    for (gsize i = 0; i < G_N_ELEMENTS(verbs); i++)
        if (strcmp(verb, verbs[i].name) == 0) {
            /* GOption names the program after argv[0]: make --help say "shiftsim VERB". */
            static char prog[64];
            g_snprintf(prog, sizeof prog, "shiftsim %s", verbs[i].name);
            argv[1] = prog;
            return verbs[i].fn(argc - 1, argv + 1);
        }
    fprintf(stderr, "shiftsim: unknown verb '%s' (try 'shiftsim --help')\n", verb);
    return SSIM_EXIT_USAGE;
}

int ssim_cli_usage_error(const char *verb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    fprintf(stderr, "shiftsim %s: %s (try 'shiftsim %s --help')\n", verb, msg, verb);
    return SSIM_EXIT_USAGE;
}

int ssim_cli_runtime_error(const GError *error)
{
    fprintf(stderr, "shiftsim: %s\n", error->message);
    return SSIM_EXIT_RUNTIME;
}

gboolean ssim_cli_parse(GOptionContext *context, int *argc, char ***argv, const char *verb)
{
    g_autoptr(GError) error = NULL;
    if (!g_option_context_parse(context, argc, argv, &error)) {
        ssim_cli_usage_error(verb, "%s", error->message);
        return FALSE;
    }
    return TRUE;
}

gboolean ssim_cli_emit(const char *path, const GString *text, GError **error)
{
    if (path == NULL || strcmp(path, "-") == 0) {
        fwrite(text->str, 1, text->len, stdout);
        fflush(stdout);
        return TRUE;
    }
    return ssim_write_file(path, text, error);
}
