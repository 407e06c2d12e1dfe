/*
 * Atomic plot rendering (plot.h, ssim_plot_render): a stand-in gnuplot on PATH writes whole,
 * truncated or no images, complains on stderr or fails, and the image is replaced only when
 * gnuplot's output is a whole PNG and it said nothing but warnings.  No real gnuplot needed.
 */
#include <criterion/criterion.h>
#include <shiftsim/output.h>
#include <shiftsim/plot.h>

#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

/* A fake gnuplot: reads `set output 'PATH'` from its script and acts as $FAKE_GNUPLOT says. */
static const char fake[] =
    "#!/bin/sh\n"
    "out=$(sed -n \"s/^set output '\\(.*\\)'$/\\1/p\" \"$1\")\n"
    "png() { printf '\\211PNG\\r\\n\\032\\n'; printf 'body'; "
    "printf '\\000\\000\\000\\000IEND\\256B`\\202'; }\n"
    "case \"$FAKE_GNUPLOT\" in\n"
    "whole) png > \"$out\" ;;\n"
    "warn) png > \"$out\"; echo \"\\\"$1\\\" line 3: warning: empty y range\" >&2 ;;\n"
    "truncated) png | head -c 10 > \"$out\" ;;\n"
    "complain) png > \"$out\"; echo \"\\\"$1\\\" line 9: undefined variable: x\" >&2 ;;\n"
    "fail) : > \"$out\"; exit 1 ;;\n"
    "esac\n";

typedef struct {
    char *dir, *bin, *image;
} Fixture;

static void setup(Fixture *f, const char *mode)
{
    f->dir = g_dir_make_tmp("ssim-plot-XXXXXX", NULL);
    f->bin = g_build_filename(f->dir, "bin", NULL);
    cr_assert_eq(g_mkdir(f->bin, 0700), 0);
    g_autofree char *exe = g_build_filename(f->bin, "gnuplot", NULL);
    cr_assert(g_file_set_contents(exe, fake, -1, NULL));
    cr_assert_eq(g_chmod(exe, 0700), 0);
    g_autofree char *path = g_strdup_printf("%s:%s", f->bin, g_getenv("PATH"));
    g_setenv("PATH", path, TRUE);
    g_setenv("FAKE_GNUPLOT", mode, TRUE);
    f->image = g_build_filename(f->dir, "plot.png", NULL);
    cr_assert(g_file_set_contents(f->image, "earlier image", -1, NULL));
}

static void teardown(Fixture *f)
{
    g_autofree char *gp = ssim_plot_sibling(f->image, ".gp");
    g_autofree char *exe = g_build_filename(f->bin, "gnuplot", NULL);
    g_unlink(gp);
    g_unlink(f->image);
    g_unlink(exe);
    g_rmdir(f->bin);
    g_autoptr(GDir) d = g_dir_open(f->dir, 0, NULL);
    const char *left = d ? g_dir_read_name(d) : NULL;
    cr_assert_null(left, "left behind in %s: %s", f->dir, left);
    g_rmdir(f->dir);
    g_free(f->dir);
    g_free(f->bin);
    g_free(f->image);
}

static gboolean render(Fixture *f, SsimPlotStatus *status, GError **error)
{
    g_autoptr(GString) gp = g_string_new("set terminal pngcairo\nset output ");
    ssim_plot_quote(gp, f->image);
    g_string_append(gp, "\nplot x\n");
    return ssim_plot_render(f->image, gp, status, error);
}

static char *image_text(const Fixture *f)
{
    char *text = NULL;
    gsize len = 0;
    cr_assert(g_file_get_contents(f->image, &text, &len, NULL));
    return text;
}

Test(plot_render, a_whole_png_replaces_the_image_and_the_script_names_the_image)
{
    Fixture f;
    setup(&f, "whole");
    SsimPlotStatus status = SSIM_PLOT_NO_GNUPLOT;
    GError *error = NULL;
    cr_assert(render(&f, &status, &error), "%s", error ? error->message : "");
    cr_assert_eq(status, SSIM_PLOT_RENDERED);
    g_autofree char *img = image_text(&f);
    cr_assert(g_str_has_prefix(img, "\x89PNG"));
    /* The .gp beside it re-renders to the image itself, not to the temporary. */
    g_autofree char *gp_path = ssim_plot_sibling(f.image, ".gp");
    g_autofree char *gp = NULL;
    cr_assert(g_file_get_contents(gp_path, &gp, NULL, NULL));
    g_autofree char *want = g_strdup_printf("set output '%s'\n", f.image);
    cr_assert(strstr(gp, want), "%s", gp);
    cr_assert_eq(ssim_output_n_temporaries(), 0);
    teardown(&f);
}

Test(plot_render, warnings_alone_do_not_fail)
{
    Fixture f;
    setup(&f, "warn");
    SsimPlotStatus status;
    GError *error = NULL;
    cr_assert(render(&f, &status, &error), "%s", error ? error->message : "");
    teardown(&f);
}

/* What a full disk does to gnuplot: exit 0, no message, a cut PNG. */
Test(plot_render, a_truncated_png_is_refused_and_the_earlier_image_kept)
{
    Fixture f;
    setup(&f, "truncated");
    SsimPlotStatus status;
    GError *error = NULL;
    cr_assert_not(render(&f, &status, &error));
    cr_assert(strstr(error->message, "incomplete PNG"), "%s", error->message);
    cr_assert(g_str_has_prefix(error->message, f.image), "%s", error->message);
    g_clear_error(&error);
    g_autofree char *img = image_text(&f);
    cr_assert_str_eq(img, "earlier image");
    teardown(&f);
}

Test(plot_render, stderr_errors_and_exit_status_fail_with_gnuplots_words)
{
    const char *modes[] = {"complain", "fail"};
    for (gsize i = 0; i < G_N_ELEMENTS(modes); i++) {
        Fixture f;
        setup(&f, modes[i]);
        SsimPlotStatus status;
        GError *error = NULL;
        cr_assert_not(render(&f, &status, &error), "%s: accepted", modes[i]);
        cr_assert(strstr(error->message, "gnuplot failed"), "%s", error->message);
        if (i == 0)
            cr_assert(strstr(error->message, "undefined variable"), "%s", error->message);
        g_clear_error(&error);
        g_autofree char *img = image_text(&f);
        cr_assert_str_eq(img, "earlier image");
        teardown(&f);
    }
}

Test(plot_render, check_covers_the_image_and_its_siblings)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-plot-XXXXXX", NULL);
    g_autofree char *image = g_build_filename(dir, "p.png", NULL);
    g_autofree char *dat = g_build_filename(dir, "p.dat", NULL);
    cr_assert(ssim_plot_check(image, NULL));
    cr_assert_eq(g_mkdir(dat, 0700), 0);
    GError *error = NULL;
    cr_assert_not(ssim_plot_check(image, &error));
    cr_assert(g_str_has_prefix(error->message, dat), "%s", error->message);
    g_clear_error(&error);
    g_rmdir(dat);
    g_rmdir(dir);
}
