/*
 * `shiftsim <verb> [options]`: the verb dispatcher and the helpers verbs share (their shared
 * options are src/app/options.c).  Every verb's --help goes through ssim_cli_parse(), which prints
 * GLib's help wrapped within SSIM_CLI_HELP_COLUMNS columns.
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
#include <shiftsim/vtrain.h>

#include <errno.h>
#include <locale.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    const char *summary;
    int (*fn)(int argc, char **argv);
} Verb;

/* Set when ssim_cli_parse() printed a verb's --help: the run is then a success, whatever the verb
 * returns for the parse that did not happen (GLib's own --help would exit(0) in the library). */
static gboolean help_printed;

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
            help_printed = FALSE;
            int rc = verbs[i].fn(argc - 1, argv + 1);
            return help_printed ? SSIM_EXIT_OK : rc;
        }
    fprintf(stderr, "shiftsim: unknown verb '%s' (try 'shiftsim --help')\n", verb);
    return SSIM_EXIT_USAGE;
}

void ssim_cli_init_locale(void)
{
    setlocale(LC_ALL, "");
    setlocale(LC_NUMERIC, "C");
}

/* Appends `n` characters of `line` from `from` as UTF-8. */
static void append_chars(GString *out, const gunichar *line, glong from, glong n)
{
    for (glong i = from; i < from + n; i++)
        g_string_append_unichar(out, line[i]);
}

/* The column an option line's description starts at (after the option and a run of at least two
 * blanks), or the line's own indent for any other line. */
static glong continuation_indent(const gunichar *line, glong len)
{
    glong indent = 0;
    while (indent < len && line[indent] == ' ')
        indent++;
    if (indent + 1 >= len || line[indent] != '-')
        return indent;
    for (glong i = indent; i + 2 < len; i++)
        if (line[i] == ' ' && line[i + 1] == ' ') {
            glong j = i;
            while (j < len && line[j] == ' ')
                j++;
            return j < len ? j : indent;
        }
    return indent;
}

static void wrap_line(GString *out, const gunichar *line, glong len, guint columns)
{
    glong indent = continuation_indent(line, len), start = 0, lead = 0;
    /* `lead` blanks of indent precede line[start ..] on the line being written. */
    while (lead + (len - start) > (glong)columns) {
        glong room = (glong)columns - lead, cut = -1;
        for (glong i = start + room; i > start; i--)
            if (line[i] == ' ') {
                cut = i;
                break;
            }
        if (cut <= start || (lead == 0 && cut <= indent)) {
            /* One word wider than the room: whole on its line, the rest below. */
            cut = -1;
            for (glong i = start + room; i < len && cut < 0; i++)
                if (line[i] == ' ')
                    cut = i;
            if (cut < 0)
                break;
        }
        glong end = cut;
        while (end > start && line[end - 1] == ' ')
            end--;
        g_string_append_printf(out, "%*s", (int)lead, "");
        append_chars(out, line, start, end - start);
        g_string_append_c(out, '\n');
        start = cut;
        while (start < len && line[start] == ' ')
            start++;
        lead = indent;
    }
    g_string_append_printf(out, "%*s", (int)lead, "");
    append_chars(out, line, start, len - start);
}

char *ssim_cli_wrap_help(const char *text, guint columns)
{
    GString *out = g_string_sized_new(strlen(text) + 256);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        glong len = 0;
        g_autofree gunichar *line = g_utf8_to_ucs4_fast(lines[i], -1, &len);
        wrap_line(out, line, len, columns);
        if (lines[i + 1] != NULL)
            g_string_append_c(out, '\n');
    }
    return g_string_free(out, FALSE);
}

/* Whether argv asks for help (before a "--" that ends the options). */
static gboolean wants_help(int argc, char **argv)
{
    static const char *const asks[] = {"-h", "--help", "-?", "--help-all"};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return FALSE;
        for (gsize j = 0; j < G_N_ELEMENTS(asks); j++)
            if (strcmp(argv[i], asks[j]) == 0)
                return TRUE;
    }
    return FALSE;
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

void ssim_cli_resolve_input(const char *verb, char **path, const char *suffix)
{
    /* Absolute, here, "" (which would name a data directory itself) or with a "." or ".."
     * (pointing from here, or out of the data): as given. */
    if (*path == NULL || **path == '\0' || g_path_is_absolute(*path) ||
        g_file_test(*path, G_FILE_TEST_EXISTS))
        return;
    g_auto(GStrv) parts = g_strsplit(*path, G_DIR_SEPARATOR_S, -1);
    for (guint i = 0; parts[i]; i++)
        if (strcmp(parts[i], ".") == 0 || strcmp(parts[i], "..") == 0)
            return;
    /* The set itself (a trace set's file) first, then the path as given (its directory). */
    g_autofree char *found = NULL;
    if (suffix) {
        g_autofree char *probe = g_strconcat(*path, suffix, NULL);
        if (g_file_test(probe, G_FILE_TEST_EXISTS))
            return;
        if ((found = ssim_data_find(probe)) != NULL)
            found[strlen(found) - strlen(suffix)] = '\0';
    }
    if (found == NULL)
        found = ssim_data_find(*path);
    if (found == NULL)
        return;
    fprintf(stderr, "shiftsim %s: note: %s: not in the current directory; reading the bundled %s\n",
            verb, *path, found);
    g_free(*path);
    *path = g_steal_pointer(&found);
}

int ssim_cli_runtime_error(const GError *error)
{
    /* One clear message: never a whole hostile input quoted back (ssim_error_truncate). */
    g_autoptr(GError) shown = g_error_copy(error);
    ssim_error_truncate(shown);
    fprintf(stderr, "shiftsim: %s\n", shown->message);
    return SSIM_EXIT_RUNTIME;
}

void ssim_cli_warn_extrapolation(const char *verb, const SsimParallel *par, const SsimModel *model,
                                 const SsimCluster *cluster)
{
    g_autofree char *why = ssim_parallel_extrapolation(par, model, cluster->nodes, cluster);
    if (why != NULL)
        fprintf(stderr,
                "shiftsim %s: warning: %s was calibrated on other shapes (%s): this prediction "
                "extrapolates its fit\n",
                verb, cluster->name, why);
}

gboolean ssim_cli_parse(GOptionContext *context, int *argc, char ***argv, const char *verb)
{
    if (wants_help(*argc, *argv)) {
        /* As GLib's own --help does, print and exit with success, but within the columns. */
        g_set_prgname((*argv)[0]); /* "shiftsim VERB" in the usage line */
        g_autofree char *help = g_option_context_get_help(context, TRUE, NULL);
        g_autofree char *wrapped = ssim_cli_wrap_help(help, SSIM_CLI_HELP_COLUMNS);
        /* In the terminal's charset: "[OPTION…]" in UTF-8, "[OPTION?]" in plain C. */
        const char *charset = NULL;
        g_autofree char *local =
            g_get_charset(&charset)
                ? NULL
                : g_convert_with_fallback(wrapped, -1, charset, "UTF-8", "?", NULL, NULL, NULL);
        fputs(local ? local : wrapped, stdout);
        fflush(stdout);
        help_printed = TRUE; /* the verb stops as on an error; ssim_cli_main() returns success */
        return FALSE;
    }
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

int ssim_cli_group_keys(const char *verb, const char *option, char *const *specs,
                        const char *prefix, SsimGrouping *out, guint *n)
{
    *n = 0;
    for (guint i = 0; specs && specs[i]; i++) {
        g_auto(GStrv) items = g_strsplit(specs[i], ",", -1);
        for (guint k = 0; items[k]; k++) {
            const char *item = g_strstrip(items[k]);
            SsimGrouping g;
            if (!g_str_has_prefix(item, prefix) ||
                !ssim_grouping_from_name(item + strlen(prefix), &g)) {
                g_autofree char *list = ssim_group_by_names_list(prefix);
                return ssim_cli_usage_error(
                    verb, "%s: '%s' is not %s, or up to %d different ones joined by '+'", option,
                    item, list, SSIM_GROUPING_MAX);
            }
            gboolean seen = FALSE;
            for (guint j = 0; j < *n; j++)
                seen = seen || ssim_grouping_equal(&out[j], &g);
            if (seen)
                continue;
            if (*n == SSIM_CLI_GROUPINGS_MAX)
                return ssim_cli_usage_error(verb, "%s: more than %d groupings", option,
                                            SSIM_CLI_GROUPINGS_MAX);
            out[(*n)++] = g;
        }
    }
    return SSIM_EXIT_OK;
}

int ssim_cli_load_runs(const char *verb, const char *const *paths, gboolean fit, gboolean force,
                       SsimRuns **runs)
{
    *runs = NULL;
    for (guint f = 0; paths[f]; f++)
        for (guint g = 0; g < f; g++)
            if (strcmp(paths[f], paths[g]) == 0)
                return ssim_cli_usage_error(verb, "--runs: %s is given twice", paths[f]);
    g_autoptr(SsimRuns) all = ssim_runs_new(paths[0]);
    g_autoptr(GString) sources = g_string_new(NULL); /* the files' sources, each once */
    for (guint f = 0; paths[f]; f++) {
        g_autoptr(GError) error = NULL;
        gboolean vtrain = FALSE;
        g_autofree char *path = g_strdup(paths[f]);
        ssim_cli_resolve_input(verb, &path, NULL);
        g_autoptr(SsimRuns) one = ssim_runs_load_any(path, SSIM_VTRAIN_CLUSTER, &vtrain, &error);
        if (one == NULL)
            return ssim_cli_runtime_error(error);
        if (ssim_runs_n(one) == 0) {
            fprintf(stderr, "shiftsim %s: %s: no runs (a header and no row)\n", verb, path);
            return SSIM_EXIT_RUNTIME;
        }
        if (vtrain)
            fprintf(stderr,
                    "shiftsim %s: %s: vTrain's table of measured runs, read as 'shiftsim "
                    "calibrate --convert-vtrain' converts it (cluster %s, %s)\n",
                    verb, path, SSIM_VTRAIN_CLUSTER,
                    ssim_runs_check_only(one) ? "use = check" : "use = fit");
        if (fit && !force && ssim_runs_check_only(one)) {
            fprintf(stderr,
                    "shiftsim: %s: use: the file is marked '# use = check': its rows are kept to "
                    "check predictions, and a fit to them would make that check meaningless "
                    "(--force fits them anyway)\n",
                    path);
            return SSIM_EXIT_RUNTIME;
        }
        for (guint i = 0; i < ssim_runs_n(one); i++)
            ssim_runs_add(all, ssim_runs_get(one, i));
        const char *src = ssim_runs_get_meta(one, "source");
        if (src && !strstr(sources->str, src))
            g_string_append_printf(sources, "%s%s", sources->len ? "; " : "", src);
    }
    if (sources->len)
        ssim_runs_set_meta(all, "source", sources->str);
    *runs = g_steal_pointer(&all);
    return SSIM_EXIT_OK;
}

int ssim_cli_row_matches(const char *verb, char *const *specs, SsimRowMatch *out, guint *n,
                         char **text)
{
    *n = 0;
    *text = NULL;
    GString *t = g_string_new(NULL);
    for (guint i = 0; specs && specs[i]; i++) {
        g_auto(GStrv) items = g_strsplit(specs[i], ",", -1);
        for (guint k = 0; items[k]; k++) {
            g_autoptr(GError) error = NULL;
            if (*n == SSIM_CLI_MATCHES_MAX) {
                g_string_free(t, TRUE);
                return ssim_cli_usage_error(verb, "--only: more than %d conditions",
                                            SSIM_CLI_MATCHES_MAX);
            }
            if (!ssim_row_match_parse(g_strstrip(items[k]), &out[*n], &error)) {
                g_string_free(t, TRUE);
                return ssim_cli_usage_error(verb, "--only: %s", error->message);
            }
            g_string_append_printf(t, "%s%s", t->len ? "," : "", items[k]);
            (*n)++;
        }
    }
    *text = g_string_free(t, *n == 0);
    return SSIM_EXIT_OK;
}

int ssim_cli_select_runs(const char *verb, SsimRuns **runs, const char *cluster,
                         const SsimRowMatch *m, guint n, const char *text, const char *label)
{
    if (n == 0)
        return SSIM_EXIT_OK;
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimRunSet) set = ssim_run_set_new(*runs, cluster, &error);
    if (set == NULL)
        return ssim_cli_runtime_error(error);
    g_autoptr(SsimRuns) kept = ssim_runs_new(ssim_runs_path(*runs));
    const char *src = ssim_runs_get_meta(*runs, "source");
    if (src)
        ssim_runs_set_meta(kept, "source", src);
    for (guint i = 0; i < ssim_run_set_n(set); i++)
        if (ssim_run_set_matches(set, i, m, n))
            ssim_runs_add(kept, ssim_run_set_run(set, i));
    if (ssim_runs_n(kept) == 0) {
        fprintf(stderr, "shiftsim %s: --only %s: no row of %s meets it\n", verb, text, label);
        return SSIM_EXIT_RUNTIME;
    }
    ssim_runs_free(*runs);
    *runs = g_steal_pointer(&kept);
    return SSIM_EXIT_OK;
}
