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
#include <shiftsim/output.h>
#include <shiftsim/plot.h>
#include <shiftsim/report.h>

#include <errno.h>
#include <signal.h>
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

/*
 * SIGINT, SIGTERM, SIGHUP: remove the temporary files of outputs being written (output.h), then
 * die of the signal as if there were no handler, so the parent sees the real cause.  The handler
 * does only async-signal-safe things: unlink(2), signal(2), raise(3).
 */
static void on_fatal_signal(int sig)
{
    ssim_output_remove_temporaries();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_signal_handlers(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (gsize i = 0; i < G_N_ELEMENTS(sigs); i++) {
        struct sigaction old, sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sigemptyset(&sa.sa_mask);
        /* A signal the caller ignores (nohup) stays ignored. */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(sigs[i], &sa, NULL);
    }
}

int ssim_cli_main(int argc, char **argv)
{
    install_signal_handlers();
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
    g_autofree char *full = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_autofree char *msg = ssim_text_excerpt(full, SSIM_MESSAGE_MAX);
    fprintf(stderr, "shiftsim %s: %s (try 'shiftsim %s --help')\n", verb, msg, verb);
    return SSIM_EXIT_USAGE;
}

int ssim_cli_runtime_error(const GError *error)
{
    /* One clear message: never a whole hostile input quoted back (ssim_error_truncate). */
    g_autoptr(GError) shown = g_error_copy(error);
    ssim_error_truncate(shown);
    fprintf(stderr, "shiftsim: %s\n", shown->message);
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
        /* stdout may be a full disk or a closed descriptor: an output that did not arrive is an
         * error, not a success. */
        errno = 0;
        if (fwrite(text->str, 1, text->len, stdout) != text->len || fflush(stdout) != 0) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO, "stdout: cannot write: %s",
                        g_strerror(errno ? errno : EIO));
            clearerr(stdout);
            return FALSE;
        }
        return TRUE;
    }
    return ssim_write_file(path, text, error);
}

int ssim_cli_check_output(const char *path)
{
    g_autoptr(GError) error = NULL;
    if (!ssim_output_check(path, &error))
        return ssim_cli_runtime_error(error);
    return SSIM_EXIT_OK;
}

int ssim_cli_check_plot(const char *image)
{
    g_autoptr(GError) error = NULL;
    if (image != NULL && !ssim_plot_check(image, &error))
        return ssim_cli_runtime_error(error);
    return SSIM_EXIT_OK;
}
