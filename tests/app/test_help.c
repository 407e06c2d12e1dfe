/*
 * One command line (issue 20, item 7): every verb's --help fits in SSIM_CLI_HELP_COLUMNS columns;
 * a short option letter means one option in every verb (the option tables are walked through the
 * --help each verb prints, the only place they are all listed); the short names a letter had
 * before still parse where they cannot be ambiguous; the locale is the user's for text and C for
 * numbers.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include "tests/common/clitest.h"

#include "src/app/cli.h"

#include <glib/gstdio.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every verb and sub-verb that prints a --help of options. */
static const char *const verbs[][2] = {
    {"simulate", NULL},  {"compare", NULL},    {"sweep", NULL},     {"replay", NULL},
    {"merge", NULL},     {"validate", NULL},   {"calibrate", NULL}, {"profile", "import"},
    {"profile", "show"}, {"profile", "query"},
};

/* The --help of verbs[i]. */
static char *verb_help(gsize i)
{
    const char *argv[4] = {"shiftsim", verbs[i][0], verbs[i][1], "--help"};
    int argc = 4;
    if (verbs[i][1] == NULL) {
        argv[2] = "--help";
        argc = 3;
    }
    int rc = -1;
    char *help = test_cli_stdout(argv, argc, &rc);
    cr_assert_eq(rc, 0, "%s %s --help: exit %d", verbs[i][0], verbs[i][1] ? verbs[i][1] : "", rc);
    cr_assert(strstr(help, "Usage:") && strstr(help, "--help"), "%s: %s", verbs[i][0], help);
    return help;
}

static void expect_within_columns(const char *what, const char *text)
{
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++)
        cr_expect(g_utf8_strlen(lines[i], -1) <= SSIM_CLI_HELP_COLUMNS,
                  "%s: line %u is %ld columns wide:\n%s", what, i + 1, g_utf8_strlen(lines[i], -1),
                  lines[i]);
}

Test(help, every_verb_fits_in_100_columns, .init = cr_redirect_stderr)
{
    for (gsize i = 0; i < G_N_ELEMENTS(verbs); i++) {
        g_autofree char *help = verb_help(i);
        g_autofree char *what =
            g_strdup_printf("%s %s", verbs[i][0], verbs[i][1] ? verbs[i][1] : "");
        expect_within_columns(what, help);
    }
    const char *top[][3] = {{"shiftsim", "--help", NULL}, {"shiftsim", "profile", "--help"}};
    for (gsize i = 0; i < G_N_ELEMENTS(top); i++) {
        int rc = -1;
        g_autofree char *help = test_cli_stdout(top[i], top[i][2] ? 3 : 2, &rc);
        cr_assert_eq(rc, 0);
        cr_assert(strlen(help) > 100, "%s", help);
        expect_within_columns(top[i][1], help);
    }
}

/* What an option means, for the comparison of letters across verbs: its long name, a plural
 * (sweep's --schedules, --placements) being the list of what the singular names, and compare's
 * --policies a list of placements. */
static char *meaning(const char *long_name)
{
    if (strcmp(long_name, "policies") == 0)
        return g_strdup("placement");
    gsize n = strlen(long_name);
    return n > 3 && long_name[n - 1] == 's' ? g_strndup(long_name, n - 1) : g_strdup(long_name);
}

/* Adds the "  -x, --name" lines of `help` (the verb `verb`'s) to `letters` (letter -> meaning)
 * and `where` (letter -> "verb --name"), and a line to `conflicts` for each letter that already
 * meant something else.  Returns how many short options the help lists. */
static guint collect(const char *verb, const char *help, GHashTable *letters, GHashTable *where,
                     GString *conflicts)
{
    guint n = 0;
    g_auto(GStrv) lines = g_strsplit(help, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        const char *l = lines[i];
        if (!(g_str_has_prefix(l, "  -") && l[3] != '-' && g_str_has_prefix(l + 4, ", --")))
            continue;
        char letter[2] = {l[3], '\0'};
        if (letter[0] == 'h' || letter[0] == '?')
            continue;
        const char *name = l + 8;
        gsize len = strcspn(name, "= ");
        g_autofree char *long_name = g_strndup(name, len);
        char *m = meaning(long_name);
        n++;
        const char *before = g_hash_table_lookup(letters, letter);
        if (before == NULL) {
            g_hash_table_insert(letters, g_strdup(letter), m);
            g_hash_table_insert(where, g_strdup(letter),
                                g_strdup_printf("%s --%s", verb, long_name));
            continue;
        }
        if (strcmp(before, m) != 0)
            g_string_append_printf(conflicts, "-%s is %s and %s --%s\n", letter,
                                   (const char *)g_hash_table_lookup(where, letter), verb,
                                   long_name);
        g_free(m);
    }
    return n;
}

Test(help, a_short_letter_means_one_option_in_every_verb, .init = cr_redirect_stderr)
{
    g_autoptr(GHashTable) letters = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    g_autoptr(GHashTable) where = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    g_autoptr(GString) conflicts = g_string_new(NULL);
    guint total = 0;
    for (gsize i = 0; i < G_N_ELEMENTS(verbs); i++) {
        g_autofree char *help = verb_help(i);
        total += collect(verbs[i][0], help, letters, where, conflicts);
    }
    cr_expect_str_empty(conflicts->str, "short letters with two meanings:\n%s", conflicts->str);
    /* The walk saw the tables: the common letters are there with their one meaning. */
    cr_assert_gt(total, 40);
    const char *want[][2] = {{"m", "model"},     {"c", "cluster"},   {"n", "node"},
                             {"p", "placement"}, {"r", "recompute"}, {"t", "timeline"},
                             {"k", "top"},       {"P", "param"},     {"s", "schedule"},
                             {"o", "output"},    {"f", "format"},    {"j", "job"}};
    for (gsize i = 0; i < G_N_ELEMENTS(want); i++)
        cr_expect_str_eq(g_hash_table_lookup(letters, want[i][0]), want[i][1], "-%s", want[i][0]);

    /* The check finds a conflict when there is one. */
    g_autoptr(GHashTable) l2 = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    g_autoptr(GHashTable) w2 = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    g_autoptr(GString) c2 = g_string_new(NULL);
    collect("a", "  -r, --recompute=MODE   x\n  -s, --schedules=LIST  y\n", l2, w2, c2);
    collect("b", "  -r, --runs=FILE        x\n  -s, --schedule=NAME   y\n", l2, w2, c2);
    cr_expect_str_eq(c2->str, "-r is a --recompute and b --runs\n");
}

/* The letters an option had before keep parsing in the verb that gave them (hidden from
 * --help): compare -P is --policies, calibrate and validate -r is --runs. */
Test(help, old_short_names_still_parse, .init = cr_redirect_stderr)
{
    const char *policies[] = {"shiftsim", "compare", "-P", "alpa,nowhere"};
    int rc = -1;
    g_autofree char *out = test_cli_stdout(policies, G_N_ELEMENTS(policies), &rc);
    cr_expect_eq(rc, 2);
    const char *runs[][4] = {{"shiftsim", "calibrate", "-r", "/nonexistent/runs.csv"},
                             {"shiftsim", "validate", "-r", "/nonexistent/runs.csv"}};
    for (gsize i = 0; i < G_N_ELEMENTS(runs); i++) {
        g_autofree char *o = test_cli_stdout(runs[i], 4, &rc);
        cr_expect_eq(rc, 1, "%s -r: a runtime error (the file), not a usage error", runs[i][1]);
    }
    g_autofree char *err = test_stderr();
    cr_expect(strstr(err, "shiftsim compare: --policies: "), "%s", err);
    cr_expect(strstr(err, "/nonexistent/runs.csv"), "%s", err);
    /* And they are not listed. */
    const char *help[] = {"shiftsim", "compare", "--help"};
    g_autofree char *h = test_cli_stdout(help, 3, &rc);
    cr_expect_null(strstr(h, "-P,"), "%s", h);
    cr_expect_null(strstr(h, "-t,"), "%s", h);
}

Test(help, wrapping_keeps_the_description_column)
{
    g_autofree char *w =
        ssim_cli_wrap_help("  -x, --long=ARG    one two three four five six seven\n"
                           "    a paragraph line that is much too long here\n"
                           "  short\n"
                           "  averyveryveryverylongwordthatcannotbreak x",
                           30);
    cr_assert_str_eq(w, "  -x, --long=ARG    one two\n"
                        "                    three four\n"
                        "                    five six\n"
                        "                    seven\n"
                        "    a paragraph line that is\n"
                        "    much too long here\n"
                        "  short\n"
                        "  averyveryveryverylongwordthatcannotbreak\n"
                        "  x");
}

/* Text in the user's locale, numbers in C: a figure printed with printf has a decimal point even
 * where LC_NUMERIC would write a comma.  No such locale need be installed: the check then runs
 * on C.UTF-8 alone (what LC_NUMERIC=C guarantees is then by reading ssim_cli_init_locale). */
Test(help, locale_is_the_users_but_numbers_are_c, .init = cr_redirect_stderr)
{
    static const char *const comma[] = {"de_DE.UTF-8", "fr_FR.UTF-8", "nl_NL.UTF-8",
                                        "de_DE.utf8",  "fr_FR.utf8",  "ru_RU.UTF-8"};
    for (gsize i = 0; i < G_N_ELEMENTS(comma); i++) {
        if (setlocale(LC_ALL, comma[i]) == NULL)
            continue;
        char raw[16];
        snprintf(raw, sizeof raw, "%.2f", 1.5);
        cr_assert_str_eq(raw, "1,50", "%s is not a comma locale", comma[i]);
        setenv("LC_ALL", comma[i], 1);
        ssim_cli_init_locale();
        char fixed[16];
        snprintf(fixed, sizeof fixed, "%.2f", 1.5);
        cr_expect_str_eq(fixed, "1.50");
        cr_expect(strtod("2.5", NULL) == 2.5);
        break;
    }
    const char *utf8 = setlocale(LC_ALL, "C.UTF-8") ? "C.UTF-8" : "C.utf8";
    setenv("LC_ALL", utf8, 1);
    ssim_cli_init_locale();
    cr_expect_str_eq(setlocale(LC_NUMERIC, NULL), "C");
    cr_expect_str_eq(localeconv()->decimal_point, ".");
    if (setlocale(LC_CTYPE, NULL) && strcmp(setlocale(LC_CTYPE, NULL), "C") != 0) {
        const char *argv[] = {"shiftsim", "merge", "--help"};
        int rc = -1;
        g_autofree char *help = test_cli_stdout(argv, 3, &rc);
        cr_expect(strstr(help, "[OPTION\u2026]"), "%s", help);
    }
    setlocale(LC_ALL, "C");
}
