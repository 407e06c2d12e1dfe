/*
 * Helpers of the tests that drive the command line through ssim_cli_main() as a user's command
 * would (tests/app, tests/cost/test_profiled.c): one definition of each, so that every suite runs
 * the CLI, captures its streams and finds the bad-input corpus the same way.
 */
#ifndef SSIM_TESTS_CLITEST_H
#define SSIM_TESTS_CLITEST_H

#include <glib.h>
#include <stdio.h>

/* A Criterion .init: stdout and stderr redirected (read with cr_get_redirected_stdout/stderr). */
void test_redirect(void);

/* ssim_cli_main() on argv (which it may rewrite), both streams flushed after; its exit status. */
int test_cli(int argc, const char **argv);

/* Everything a redirected stream received from where it stands (caller frees). */
char *test_slurp(FILE *f);

/* Everything the redirected stderr received, stderr flushed first (caller frees). */
char *test_stderr(void);

/* The path of FILE in the bad-input corpus, tests/data/bad (caller frees). */
char *test_bad_path(const char *file);

/* ssim_cli_main() on a copy of args (at most 32) with stdout sent to a temporary file: what it
 * printed there (caller frees), its exit status in *rc.  Works with or without redirection. */
char *test_cli_stdout(const char *const *args, int argc, int *rc);

/* Removes DIR and everything under it (a test's g_dir_make_tmp() folder); links are removed, not
 * followed.  Asserts that nothing is left. */
void test_remove_tree(const char *dir);

#endif
