/*
 * The Gantt options of the verbs: simulate, replay and compare take --plot-window START:END (ms),
 * draw only that part of the step (every box of the data inside it, the axis set to it), and
 * refuse a malformed window as a usage error before any work.  gnuplot is kept off PATH: the
 * .dat and .gp are what is checked.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include "src/app/verbs.h"

#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

static char *saved_path;

static void quiet_no_gnuplot(void)
{
    cr_redirect_stdout();
    cr_redirect_stderr();
    saved_path = g_strdup(g_getenv("PATH"));
    g_setenv("PATH", "/nonexistent", TRUE);
}

static void restore(void)
{
    g_setenv("PATH", saved_path, TRUE);
    g_free(saved_path);
}

static char *slurp(const char *dir, const char *name)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);
    char *text = NULL;
    cr_assert(g_file_get_contents(path, &text, NULL, NULL), "%s", name);
    g_unlink(path);
    return text;
}

/* Every box of a Gantt .dat ("start end row" lines) lies in [lo, hi]; returns how many. */
static guint boxes_within(const char *dat, double lo, double hi)
{
    guint n = 0;
    g_auto(GStrv) lines = g_strsplit(dat, "\n", -1);
    for (guint i = 0; lines[i]; i++) {
        if (lines[i][0] == '#' || lines[i][0] == '\0')
            continue;
        char *end;
        double a = g_ascii_strtod(lines[i], &end);
        double z = g_ascii_strtod(end, NULL);
        cr_assert(a >= lo && z <= hi && a < z, "box %s outside [%g, %g]", lines[i], lo, hi);
        n++;
    }
    return n;
}

Test(plot_verbs, simulate_draws_the_window_it_is_given, .init = quiet_no_gnuplot, .fini = restore)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-plotverb-XXXXXX", NULL);
    g_autofree char *png = g_build_filename(dir, "s.png", NULL);
    const char *argv[] = {"simulate", "--nodes", "2", "--tp",          "4",     "--pp",
                          "2",        "--plot",  png, "--plot-window", "20:60", "--plot-ranks",
                          "1"};
    cr_assert_eq(ssim_verb_simulate(G_N_ELEMENTS(argv), (char **)argv), 0);
    g_autofree char *dat = slurp(dir, "s.dat"), *gp = slurp(dir, "s.gp");
    cr_assert_gt(boxes_within(dat, 20, 60), 10, "%s", dat);
    cr_assert(strstr(dat, "# start_ms end_ms row"), "%s", dat);
    cr_assert(strstr(gp, "set xrange [20.000000:60.000000]\n"), "%s", gp);
    cr_assert(strstr(gp, "[window 20 to 60 ms]'"), "%s", gp);
    /* One rank: its streams only. */
    cr_assert(strstr(gp, "set ytics ('r0 compute'"), "%s", gp);
    cr_assert_null(strstr(gp, "'r1 "), "%s", gp);
    cr_assert_eq(g_rmdir(dir), 0, "files left in %s", dir);
}

Test(plot_verbs, a_malformed_window_is_a_usage_error, .init = quiet_no_gnuplot, .fini = restore)
{
    const char *sim[] = {"simulate", "--plot-window", "60:20"};
    cr_assert_eq(ssim_verb_simulate(G_N_ELEMENTS(sim), (char **)sim), 2);
    const char *cmp[] = {"compare", "--plot-window", "abc"};
    cr_assert_eq(ssim_verb_compare(G_N_ELEMENTS(cmp), (char **)cmp), 2);
    const char *rep[] = {"replay", "--plot-window", "5"};
    cr_assert_eq(ssim_verb_replay(G_N_ELEMENTS(rep), (char **)rep), 2);
    const char *neg[] = {"simulate", "--plot-ranks", "-1"};
    cr_assert_eq(ssim_verb_simulate(G_N_ELEMENTS(neg), (char **)neg), 2);
}

Test(plot_verbs, compare_draws_every_policy_in_the_window, .init = quiet_no_gnuplot,
     .fini = restore)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-plotverb-XXXXXX", NULL);
    g_autofree char *png = g_build_filename(dir, "c.png", NULL);
    const char *argv[] = {"compare",       "-P",  "alpa,commshift", "--plot", png,
                          "--plot-window", "150:"};
    cr_assert_eq(ssim_verb_compare(G_N_ELEMENTS(argv), (char **)argv), 0);
    g_autofree char *bars_dat = slurp(dir, "c.dat"), *bars_gp = slurp(dir, "c.gp");
    cr_assert(strstr(bars_gp, "exposed communication per class"), "%s", bars_gp);
    const char *policies[] = {"alpa", "commshift"};
    for (gsize i = 0; i < G_N_ELEMENTS(policies); i++) {
        g_autofree char *dn = g_strdup_printf("c-%s.dat", policies[i]);
        g_autofree char *gn = g_strdup_printf("c-%s.gp", policies[i]);
        g_autofree char *dat = slurp(dir, dn), *gp = slurp(dir, gn);
        /* From 150 ms to the end of that policy's step. */
        cr_assert_gt(boxes_within(dat, 150, 1e9), 0, "%s", dat);
        cr_assert(strstr(gp, "set xrange [150.000000:"), "%s", gp);
        cr_assert(strstr(gp, "[window 150 to "), "%s", gp);
    }
    cr_assert_eq(g_rmdir(dir), 0, "files left in %s", dir);
}
