/*
 * Output files (include/shiftsim/output.h): checked destinations, temporary file, checked
 * writes, fsync, rename; a registry of live temporaries for the signal handler.
 *
 * Invariants: a temporary file exists only while its SsimOutput is open and uncommitted, and is
 * in the registry for that whole time (unless the registry was full, when only a signal can leave
 * it behind); the target is touched by exactly one system call, the final rename(2), and only
 * after every byte was written and synced; nothing but a regular file (or nothing) is ever
 * replaced.
 *
 * The registry is a fixed array of slots, so the signal handler walks plain memory: a slot is
 * filled (path first, then the flag, with a release store) and emptied under a mutex by the
 * threads that write outputs, and read without a lock by the handler, which at worst unlinks a
 * path whose file is already gone.
 */
#include <shiftsim/output.h>
#include <shiftsim/types.h>

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the registry of live temporary files ------------------------------------------------ */

#define SLOTS 64

static char slot_path[SLOTS][PATH_MAX];
static volatile sig_atomic_t slot_used[SLOTS];
static GMutex slot_lock;

/* Registers `path`; returns its slot, or -1 when every slot is taken (or the path is too long). */
static int registry_add(const char *path)
{
    if (strlen(path) >= PATH_MAX)
        return -1;
    int found = -1;
    g_mutex_lock(&slot_lock);
    for (int i = 0; i < SLOTS && found < 0; i++)
        if (!slot_used[i]) {
            g_strlcpy(slot_path[i], path, PATH_MAX);
            __atomic_store_n(&slot_used[i], 1, __ATOMIC_RELEASE);
            found = i;
        }
    g_mutex_unlock(&slot_lock);
    return found;
}

static void registry_remove(int slot)
{
    if (slot < 0)
        return;
    g_mutex_lock(&slot_lock);
    __atomic_store_n(&slot_used[slot], 0, __ATOMIC_RELEASE);
    g_mutex_unlock(&slot_lock);
}

void ssim_output_remove_temporaries(void)
{
    for (int i = 0; i < SLOTS; i++)
        if (__atomic_load_n(&slot_used[i], __ATOMIC_ACQUIRE))
            (void)unlink(slot_path[i]);
}

guint ssim_output_n_temporaries(void)
{
    guint n = 0;
    g_mutex_lock(&slot_lock);
    for (int i = 0; i < SLOTS; i++)
        n += slot_used[i] != 0;
    g_mutex_unlock(&slot_lock);
    return n;
}

/* ---- checks ------------------------------------------------------------------------------ */

static gboolean fail(GError **error, const char *path, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static gboolean fail(GError **error, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *why = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO, "%s: %s", path, why);
    return FALSE;
}

/* What a file of mode `m` is, for messages ("a directory", "a FIFO"...). */
static const char *kind_of(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISSOCK(m))
        return "a socket";
    if (S_ISLNK(m))
        return "a symbolic link";
    return "not a regular file";
}

/* The target must be absent or a regular file (a symbolic link is not followed). */
static gboolean check_target(const char *path, GError **error)
{
    GStatBuf st;
    if (g_lstat(path, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return TRUE; /* the directory's turn: make_temp() says what is wrong with it */
        return fail(error, path, "cannot write: %s", g_strerror(errno));
    }
    if (S_ISREG(st.st_mode))
        return TRUE;
    if (S_ISLNK(st.st_mode))
        return fail(error, path,
                    "is a symbolic link; shiftsim replaces an output file as a whole (a "
                    "rename), which would replace the link, not its target: give the target's "
                    "path");
    return fail(error, path,
                "is %s, not a regular file; shiftsim writes an output as a new file and renames "
                "it over the old one, which would replace it (use '-' for stdout)",
                kind_of(st.st_mode));
}

/* The directory an output goes to ("." for a bare name); newly allocated. */
static char *dir_of(const char *path)
{
    return g_path_get_dirname(path);
}

/* A temporary-file template beside `path`: DIR/.NAME.XXXXXX, the name cut to fit NAME_MAX. */
static char *temp_template(const char *path)
{
    g_autofree char *dir = dir_of(path);
    g_autofree char *base = g_path_get_basename(path);
    if (strlen(base) > 200)
        base[200] = '\0';
    g_autofree char *name = g_strdup_printf(".%s.XXXXXX", base);
    return g_build_filename(dir, name, NULL);
}

/* Creates the temporary file for `path` (registered); returns its descriptor or -1. */
static int make_temp(const char *path, char **temp, int *slot, GError **error)
{
    g_autofree char *dir = dir_of(path);
    GStatBuf st;
    if (g_stat(dir, &st) != 0) {
        if (errno == ENOENT)
            fail(error, path, "cannot write: directory %s does not exist", dir);
        else
            fail(error, path, "cannot write: directory %s: %s", dir, g_strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        fail(error, path, "cannot write: %s is not a directory", dir);
        return -1;
    }
    char *tmpl = temp_template(path);
    /* Block the registry's gap: a signal between creating the file and registering it. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int fd = g_mkstemp_full(tmpl, O_RDWR | O_CLOEXEC, 0666);
    int saved = errno;
    *slot = fd >= 0 ? registry_add(tmpl) : -1;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (fd < 0) {
        fail(error, path, "cannot write in %s: %s", dir, g_strerror(saved));
        g_free(tmpl);
        return -1;
    }
    *temp = tmpl;
    return fd;
}

gboolean ssim_output_check(const char *path, GError **error)
{
    if (path == NULL || strcmp(path, "-") == 0)
        return TRUE;
    if (path[0] == '\0')
        return fail(error, "(empty path)", "an output path must not be empty");
    if (!check_target(path, error))
        return FALSE;
    /* Create and remove a temporary file: the directory exists, is one, and takes new files. */
    char *temp = NULL;
    int slot = -1;
    int fd = make_temp(path, &temp, &slot, error);
    if (fd < 0)
        return FALSE;
    close(fd);
    g_unlink(temp);
    registry_remove(slot);
    g_free(temp);
    return TRUE;
}

/* ---- writing ----------------------------------------------------------------------------- */

struct SsimOutput {
    char *path;
    char *temp;              /* NULL once committed or removed */
    int fd;                  /* -1 once closed */
    int slot;                /* registry slot, -1 when none */
    guint64 written, handed; /* bytes appended, and handed to the disk so far */
};

/* Bytes between two requests to start writing a temporary to disk (see ssim_output_append). */
#define WRITEBACK_BYTES ((guint64)8 << 20)

SsimOutput *ssim_output_open(const char *path, GError **error)
{
    g_return_val_if_fail(path != NULL && strcmp(path, "-") != 0, NULL);
    if (path[0] == '\0') {
        fail(error, "(empty path)", "an output path must not be empty");
        return NULL;
    }
    if (!check_target(path, error))
        return NULL;
    SsimOutput *out = g_new0(SsimOutput, 1);
    out->fd = make_temp(path, &out->temp, &out->slot, error);
    if (out->fd < 0) {
        g_free(out);
        return NULL;
    }
    out->path = g_strdup(path);
    return out;
}

const char *ssim_output_temp_path(const SsimOutput *out)
{
    return out->temp;
}

const char *ssim_output_path(const SsimOutput *out)
{
    return out->path;
}

/* Removes the temporary file (if any) and forgets it. */
static void discard(SsimOutput *out)
{
    if (out->fd >= 0) {
        close(out->fd);
        out->fd = -1;
    }
    if (out->temp != NULL) {
        g_unlink(out->temp);
        g_clear_pointer(&out->temp, g_free);
    }
    registry_remove(out->slot);
    out->slot = -1;
}

gboolean ssim_output_append(SsimOutput *out, const void *data, gsize len, GError **error)
{
    g_return_val_if_fail(out->fd >= 0, FALSE);
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(out->fd, p, MIN(len, (gsize)1 << 30));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int saved = n < 0 ? errno : ENOSPC;
            discard(out);
            return fail(error, out->path, "cannot write: %s", g_strerror(saved));
        }
        p += n;
        len -= (gsize)n;
        out->written += (guint64)n;
    }
#ifdef SYNC_FILE_RANGE_WRITE
    /* Start the disk writes of what is written while the rest is produced, so that the fsync
     * of the commit waits for the last few megabytes only (22 ms -> 1-3 ms for a 51 MB trace).
     * A hint: its failure is not one. */
    if (out->written - out->handed >= WRITEBACK_BYTES) {
        (void)sync_file_range(out->fd, (off_t)out->handed, (off_t)(out->written - out->handed),
                              SYNC_FILE_RANGE_WRITE);
        out->handed = out->written;
    }
#endif
    return TRUE;
}

gboolean ssim_output_close(SsimOutput *out, GError **error)
{
    if (out->fd < 0)
        return TRUE;
    int fd = out->fd;
    out->fd = -1;
    if (close(fd) != 0 && errno != EINTR) {
        int saved = errno;
        discard(out);
        return fail(error, out->path, "cannot write: %s", g_strerror(saved));
    }
    return TRUE;
}

gboolean ssim_output_commit(SsimOutput *out, GError **error)
{
    g_return_val_if_fail(out->temp != NULL, FALSE);
    /* A program that wrote the file by name (gnuplot) left no descriptor: reopen to sync. */
    if (out->fd < 0)
        out->fd = g_open(out->temp, O_RDONLY | O_CLOEXEC, 0);
    if (out->fd < 0 || fsync(out->fd) != 0) {
        int saved = errno;
        discard(out);
        return fail(error, out->path, "cannot write: %s", g_strerror(saved));
    }
    if (!ssim_output_close(out, error))
        return FALSE;
    /* The target may have changed since the check (another program): never replace a non-file. */
    if (!check_target(out->path, error)) {
        discard(out);
        return FALSE;
    }
    if (g_rename(out->temp, out->path) != 0) {
        int saved = errno;
        discard(out);
        return fail(error, out->path, "cannot write: %s", g_strerror(saved));
    }
    g_clear_pointer(&out->temp, g_free);
    registry_remove(out->slot);
    out->slot = -1;
    /* Make the rename itself durable; a directory that cannot be synced changes nothing. */
    g_autofree char *dir = dir_of(out->path);
    int dfd = g_open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    return TRUE;
}

void ssim_output_free(SsimOutput *out)
{
    if (out == NULL)
        return;
    discard(out);
    g_free(out->path);
    g_free(out);
}

gboolean ssim_output_write(const char *path, const void *data, gsize len, GError **error)
{
    g_autoptr(SsimOutput) out = ssim_output_open(path, error);
    return out != NULL && ssim_output_append(out, data, len, error) &&
           ssim_output_commit(out, error);
}
