/*
 * The command line: exit statuses (0 ok, 1 runtime error, 2 usage error) and what goes to
 * stdout and stderr, driving ssim_cli_main() in the test process.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include "src/app/cli.h"
#include <stdio.h>

static int cli(int argc, const char **argv)
{
    int rc = ssim_cli_main(argc, (char **)argv);
    fflush(stdout);
    fflush(stderr);
    return rc;
}

static void redirect(void)
{
    cr_redirect_stdout();
    cr_redirect_stderr();
}

Test(cli, version, .init = redirect)
{
    const char *argv[] = {"shiftsim", "--version"};
    cr_assert_eq(cli(2, argv), 0);
    cr_assert_stdout_eq_str("shiftsim 0.1.0\n");
}

Test(cli, no_verb_is_a_usage_error, .init = redirect)
{
    const char *argv[] = {"shiftsim"};
    cr_assert_eq(cli(1, argv), 2);
}

Test(cli, unknown_verb, .init = redirect)
{
    const char *argv[] = {"shiftsim", "frobnicate"};
    cr_assert_eq(cli(2, argv), 2);
    cr_assert_stderr_eq_str("shiftsim: unknown verb 'frobnicate' (try 'shiftsim --help')\n");
}

Test(cli, replay_default_example, .init = redirect)
{
    const char *argv[] = {"shiftsim", "replay", "--format", "csv"};
    cr_assert_eq(cli(4, argv), 0);
}

Test(cli, replay_bad_option_is_usage_error, .init = redirect)
{
    const char *argv[] = {"shiftsim", "replay", "--format", "xml"};
    cr_assert_eq(cli(4, argv), 2);
    cr_assert_stderr_eq_str("shiftsim replay: --format: 'xml' is not table, csv or json (try "
                            "'shiftsim replay --help')\n");
}

Test(cli, replay_missing_file_is_runtime_error, .init = redirect)
{
    const char *argv[] = {"shiftsim", "replay", "/nonexistent.graph"};
    cr_assert_eq(cli(3, argv), 1);
}

Test(cli, replay_deadlock_is_runtime_error, .init = redirect)
{
    g_autofree char *path = g_build_filename(SSIM_TEST_DATA, "graphs", "deadlock.graph", NULL);
    const char *argv[] = {"shiftsim", "replay", path};
    cr_assert_eq(cli(3, argv), 1);
}

Test(cli, replay_until_cuts_a_run_short, .init = redirect)
{
    const char *argv[] = {"shiftsim", "replay", "--until", "1us"};
    cr_assert_eq(cli(4, argv), 1);
}
