/*
 * Output files (output.h): only regular files are replaced, the directory is checked before the
 * work, every write is checked (a file-size limit stands in for a full disk), the mode follows
 * the umask, and no temporary file outlives its output, even on a signal.
 */
#include <criterion/criterion.h>
#include <shiftsim/output.h>
#include <shiftsim/types.h>

#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static guint n_entries(const char *dir)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    cr_assert_not_null(d);
    guint n = 0;
    while (g_dir_read_name(d))
        n++;
    return n;
}

static char *read_text(const char *path)
{
    char *text = NULL;
    cr_assert(g_file_get_contents(path, &text, NULL, NULL), "%s: unreadable", path);
    return text;
}

Test(output, writes_atomically_with_the_umask_mode_and_leaves_no_temporary)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-out-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "a.csv", NULL);
    GError *error = NULL;
    mode_t old = umask(022);
    cr_assert(ssim_output_write(path, "one\n", 4, &error), "%s", error ? error->message : "");
    cr_assert(ssim_output_write(path, "two\n", 4, &error), "%s", error ? error->message : "");
    umask(old);
    g_autofree char *text = read_text(path);
    cr_assert_str_eq(text, "two\n");
    GStatBuf st;
    cr_assert_eq(g_stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0644);
    cr_assert_eq(n_entries(dir), 1);
    cr_assert_eq(ssim_output_n_temporaries(), 0);
    g_unlink(path);
    g_rmdir(dir);
}

/* Each kind of non-regular destination is refused, named, and left as it was. */
Test(output, refuses_devices_fifos_symlinks_and_directories)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-out-XXXXXX", NULL);
    g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
    g_autofree char *target = g_build_filename(dir, "target.csv", NULL);
    g_autofree char *link = g_build_filename(dir, "link.csv", NULL);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    cr_assert(g_file_set_contents(target, "kept\n", -1, NULL));
    cr_assert_eq(symlink("target.csv", link), 0);
    const struct {
        const char *path, *what;
    } cases[] = {{"/dev/null", "character device"},
                 {fifo, "FIFO"},
                 {link, "symbolic link"},
                 {dir, "directory"}};
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        GError *error = NULL;
        cr_assert_not(ssim_output_check(cases[i].path, &error), "%s accepted", cases[i].path);
        cr_assert(g_str_has_prefix(error->message, cases[i].path), "%s", error->message);
        cr_assert(strstr(error->message, cases[i].what), "%s", error->message);
        g_clear_error(&error);
        cr_assert_not(ssim_output_write(cases[i].path, "x", 1, &error));
        cr_assert(strstr(error->message, cases[i].what), "%s", error->message);
        g_clear_error(&error);
    }
    GStatBuf st;
    cr_assert_eq(g_lstat("/dev/null", &st), 0);
    cr_assert(S_ISCHR(st.st_mode));
    cr_assert_eq(g_lstat(fifo, &st), 0);
    cr_assert(S_ISFIFO(st.st_mode));
    cr_assert_eq(g_lstat(link, &st), 0);
    cr_assert(S_ISLNK(st.st_mode));
    g_autofree char *kept = read_text(target);
    cr_assert_str_eq(kept, "kept\n");
    cr_assert_eq(n_entries(dir), 3);
    g_unlink(link);
    g_unlink(target);
    g_unlink(fifo);
    g_rmdir(dir);
}

Test(output, check_names_a_missing_directory_and_passes_stdout)
{
    GError *error = NULL;
    cr_assert(ssim_output_check(NULL, NULL));
    cr_assert(ssim_output_check("-", NULL));
    cr_assert_not(ssim_output_check("", &error));
    g_clear_error(&error);
    g_autofree char *dir = g_dir_make_tmp("ssim-out-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "missing", "x.csv", NULL);
    cr_assert_not(ssim_output_check(path, &error));
    cr_assert(g_error_matches(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO));
    cr_assert(strstr(error->message, "does not exist"), "%s", error->message);
    g_clear_error(&error);
    /* A file where the directory should be. */
    g_autofree char *file = g_build_filename(dir, "file", NULL);
    cr_assert(g_file_set_contents(file, "", -1, NULL));
    g_autofree char *under = g_build_filename(file, "x.csv", NULL);
    cr_assert_not(ssim_output_check(under, &error));
    cr_assert(strstr(error->message, "not a directory"), "%s", error->message);
    g_clear_error(&error);
    cr_assert_eq(n_entries(dir), 1); /* the check's own temporary is gone */
    g_unlink(file);
    g_rmdir(dir);
}

/* A write that cannot complete (here: past RLIMIT_FSIZE, as a full disk would be) is an error,
 * and the earlier file stays whole.  In a child, since the limit is per process. */
Test(output, a_failed_write_keeps_the_earlier_file)
{
    /* valgrind runs the child itself and does not pass it the file-size limit. */
    const char *preload = g_getenv("LD_PRELOAD");
    if (preload != NULL && strstr(preload, "vgpreload") != NULL)
        return;
    g_autofree char *dir = g_dir_make_tmp("ssim-out-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "big.csv", NULL);
    cr_assert(g_file_set_contents(path, "earlier\n", -1, NULL));
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit lim = {4096, 4096};
        setrlimit(RLIMIT_FSIZE, &lim);
        static char big[65536];
        memset(big, 'x', sizeof big);
        GError *error = NULL;
        gboolean ok = ssim_output_write(path, big, sizeof big, &error);
        _exit(!ok && strstr(error->message, "cannot write") ? 0 : 1);
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the short write was not reported");
    g_autofree char *text = read_text(path);
    cr_assert_str_eq(text, "earlier\n");
    cr_assert_eq(n_entries(dir), 1);
    g_unlink(path);
    g_rmdir(dir);
}

/* An output far larger than the writeback step (8 MiB: the disk writes start while it is being
 * written) arrives whole and in order, from appends of every size. */
Test(output, a_large_output_arrives_whole)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-out-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "trace.json", NULL);
    gsize total = (gsize)19 << 20, at = 0;
    g_autofree guint8 *want = g_malloc(total);
    for (gsize i = 0; i < total; i++)
        want[i] = (guint8)(i * 2654435761u >> 13);
    GError *error = NULL;
    g_autoptr(SsimOutput) out = ssim_output_open(path, &error);
    cr_assert_not_null(out, "%s", error ? error->message : "");
    for (gsize piece = 1; at < total; piece = piece * 3 + 7) {
        gsize n = MIN(piece % (3u << 20), total - at);
        cr_assert(ssim_output_append(out, want + at, n, &error));
        at += n;
    }
    cr_assert(ssim_output_commit(out, &error), "%s", error ? error->message : "");
    gchar *got = NULL;
    gsize len = 0;
    cr_assert(g_file_get_contents(path, &got, &len, NULL));
    cr_assert(len == total && memcmp(got, want, total) == 0);
    g_free(got);
    cr_assert_eq(n_entries(dir), 1);
    g_unlink(path);
    g_rmdir(dir);
}

/* An open output has one registered temporary; freeing without a commit removes it, and so does
 * the signal handler's call. */
Test(output, temporaries_are_registered_and_removed)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-out-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "x.json", NULL);
    SsimOutput *a = ssim_output_open(path, NULL);
    cr_assert_not_null(a);
    cr_assert(ssim_output_append(a, "{}", 2, NULL));
    cr_assert_eq(ssim_output_n_temporaries(), 1);
    cr_assert(g_file_test(ssim_output_temp_path(a), G_FILE_TEST_IS_REGULAR));
    g_autofree char *base = g_path_get_basename(ssim_output_temp_path(a));
    cr_assert(g_str_has_prefix(base, ".x.json."), "%s", base);
    ssim_output_free(a);
    cr_assert_eq(ssim_output_n_temporaries(), 0);
    cr_assert_eq(n_entries(dir), 0);

    SsimOutput *b = ssim_output_open(path, NULL);
    cr_assert_not_null(b);
    ssim_output_remove_temporaries(); /* what the SIGINT/SIGTERM handler does */
    cr_assert_eq(n_entries(dir), 0);
    ssim_output_free(b);
    cr_assert_eq(ssim_output_n_temporaries(), 0);
    g_rmdir(dir);
}

/* The target turned into a directory between the check and the rename: nothing is replaced. */
Test(output, commit_rechecks_the_target)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-out-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "late", NULL);
    g_autoptr(SsimOutput) out = ssim_output_open(path, NULL);
    cr_assert_not_null(out);
    cr_assert(ssim_output_append(out, "x", 1, NULL));
    cr_assert_eq(g_mkdir(path, 0700), 0);
    GError *error = NULL;
    cr_assert_not(ssim_output_commit(out, &error));
    cr_assert(strstr(error->message, "directory"), "%s", error->message);
    g_clear_error(&error);
    cr_assert(g_file_test(path, G_FILE_TEST_IS_DIR));
    cr_assert_eq(n_entries(dir), 1);
    g_rmdir(path);
    g_rmdir(dir);
}
