/*
 * Output files: the one place that opens, checks, writes, syncs and renames what shiftsim writes
 * (CSV, JSON, traces, INI, profiles, plots and their .dat and .gp files).
 *
 * Guarantees, for every path written through this module:
 *   - Only a regular file (or a path that does not exist yet) is ever replaced.  A directory, a
 *     device (/dev/null), a FIFO, a socket or a symbolic link is refused with a message that says
 *     what it is: replacing it by a regular file (as a rename does) would destroy it, and writing
 *     through it would not be atomic.  "-" is not a path: callers write it to stdout themselves.
 *   - ssim_output_check() tells, before any work, whether a path can be written: its directory
 *     exists and a file can be created in it (a temporary file is created and removed, which
 *     catches read-only file systems and permissions, root's included).  Verbs call it for every
 *     output right after parsing their options, so a sweep into a missing directory fails in
 *     milliseconds, not after the sweep.
 *   - Contents go to a temporary file beside the target (".NAME.XXXXXX", same directory, so the
 *     rename cannot cross file systems), every write and the close are checked (a full disk is
 *     an error, never a truncated file), the data is fsync'ed, and only then is the temporary
 *     renamed over the target.  A failure at any step removes the temporary and leaves an earlier
 *     file of that name untouched.
 *   - Live temporary files are kept in a registry that ssim_output_remove_temporaries() empties
 *     from a signal handler (async-signal-safe), so an interrupted run leaves no stray
 *     temporary behind (src/app/cli.c installs the handler for SIGINT, SIGTERM and SIGHUP).
 *
 * Errors are SSIM_CONFIG_ERROR_IO, "PATH: why".
 *
 * Ownership: SsimOutput is the caller's, freed with ssim_output_free() (g_autoptr), which removes
 * the temporary file unless ssim_output_commit() renamed it.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* TRUE when `path` can be written (see above); NULL and "-" (stdout) always can. */
gboolean ssim_output_check(const char *path, GError **error);

/* An output file being written: a temporary beside `path` until committed. */
typedef struct SsimOutput SsimOutput;

/* Checks `path` (ssim_output_check) and creates its temporary file (mode 0666 less the umask). */
SsimOutput *ssim_output_open(const char *path, GError **error);
/* The temporary file's path, for a program that writes it itself (gnuplot); borrowed. */
const char *ssim_output_temp_path(const SsimOutput *out);
/* The final path; borrowed. */
const char *ssim_output_path(const SsimOutput *out);
/* Appends `len` bytes to the temporary (every byte written or an error, e.g. a full disk). */
gboolean ssim_output_append(SsimOutput *out, const void *data, gsize len, GError **error);
/* Closes the temporary's descriptor (checked), so another program can write the file by name;
 * ssim_output_commit() then syncs what that program wrote. */
gboolean ssim_output_close(SsimOutput *out, GError **error);
/* Syncs and closes the temporary, checks that `path` is still a regular file or absent, and
 * renames the temporary over it.  After a failure the temporary is gone. */
gboolean ssim_output_commit(SsimOutput *out, GError **error);
/* Removes the temporary when it was not committed, and frees `out`. */
void ssim_output_free(SsimOutput *out);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SsimOutput, ssim_output_free)

/* Writes `len` bytes to `path` atomically (open, append, commit). */
gboolean ssim_output_write(const char *path, const void *data, gsize len, GError **error);

/*
 * Unlinks every live temporary file.  Async-signal-safe: it only reads the registry and calls
 * unlink(2), so a SIGINT or SIGTERM handler may call it before re-raising the signal.
 */
void ssim_output_remove_temporaries(void);
/* How many temporary files are live (tests). */
guint ssim_output_n_temporaries(void);

G_END_DECLS
