/* Helpers of the command-line tests (tests/common/clitest.h). */
#include "tests/common/clitest.h"

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include "src/app/cli.h"

#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void test_redirect(void)
{
    cr_redirect_stdout();
    cr_redirect_stderr();
}

int test_cli(int argc, const char **argv)
{
    int rc = ssim_cli_main(argc, (char **)argv);
    fflush(stdout);
    fflush(stderr);
    return rc;
}

char *test_slurp(FILE *f)
{
    GString *s = g_string_new(NULL);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        g_string_append_len(s, buf, (gssize)n);
    return g_string_free(s, FALSE);
}

char *test_stderr(void)
{
    fflush(stderr);
    return test_slurp(cr_get_redirected_stderr());
}

char *test_bad_path(const char *file)
{
    return g_build_filename(SSIM_TEST_DATA, "bad", file, NULL);
}

char *test_cli_stdout(const char *const *args, int argc, int *rc)
{
    const char *argv[32];
    cr_assert(argc <= (int)G_N_ELEMENTS(argv));
    memcpy(argv, args, (size_t)argc * sizeof *argv);
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    g_autofree char *path = NULL;
    int fd = g_file_open_tmp("ssim-stdout-XXXXXX", &path, NULL);
    cr_assert(saved >= 0 && fd >= 0);
    dup2(fd, STDOUT_FILENO);
    *rc = ssim_cli_main(argc, (char **)argv);
    fflush(stdout);
    fflush(stderr);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    close(fd);
    char *text = NULL;
    cr_assert(g_file_get_contents(path, &text, NULL, NULL));
    g_unlink(path);
    return text;
}

static gboolean remove_tree(const char *path)
{
    GStatBuf st;
    if (g_lstat(path, &st) != 0)
        return FALSE;
    if (S_ISDIR(st.st_mode)) {
        GDir *d = g_dir_open(path, 0, NULL);
        if (d == NULL)
            return FALSE;
        const char *name;
        while ((name = g_dir_read_name(d)) != NULL) {
            g_autofree char *child = g_build_filename(path, name, NULL);
            remove_tree(child);
        }
        g_dir_close(d);
        return g_rmdir(path) == 0;
    }
    return g_unlink(path) == 0;
}

void test_remove_tree(const char *dir)
{
    cr_assert(dir != NULL && remove_tree(dir), "could not remove %s", dir ? dir : "(null)");
}
