/*
 * Perfetto traces written by the verbs (src/app/tracefile.h).  The trace streams in blocks
 * (ssim_trace_write) to a temporary file beside the target, created 0666 & ~umask as any result
 * file, synced and renamed over the target once complete; on any failure the temporary is
 * removed, so FILE is either the whole trace or untouched.
 */
#include "src/app/tracefile.h"

#include <shiftsim/trace.h>
#include <shiftsim/types.h>

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

gboolean ssim_cli_trace_format_valid(const char *format_name)
{
    return format_name == NULL || strcmp(format_name, "proto") == 0 ||
           strcmp(format_name, "json") == 0;
}

/*
 * A trace file written as it is produced: blocks go to a temporary file beside the target, which
 * is renamed over it once complete (so a failed write leaves no partial trace); "-" is stdout.
 */
typedef struct {
    char *path, *temp;
    FILE *f;
    guint64 written, synced; /* bytes written, and handed to the disk so far (temporary only) */
} TraceFile;

/* Bytes between two requests to start writing the file to disk. */
#define WRITEBACK_BYTES (8u << 20)

static gboolean trace_file_write(gpointer data, const void *bytes, gsize len, GError **error)
{
    TraceFile *tf = data;
    if (fwrite(bytes, 1, len, tf->f) != len) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO, "%s: cannot write: %s",
                    tf->path, g_strerror(errno));
        return FALSE;
    }
    tf->written += len;
#ifdef SYNC_FILE_RANGE_WRITE
    /* Start the disk writes of what is written while the rest is encoded, so that the fsync
     * before the rename waits for the last few megabytes only.  A hint: its failure is not one. */
    if (tf->temp && tf->written - tf->synced >= WRITEBACK_BYTES && fflush(tf->f) == 0) {
        (void)sync_file_range(fileno(tf->f), (off_t)tf->synced, (off_t)(tf->written - tf->synced),
                              SYNC_FILE_RANGE_WRITE);
        tf->synced = tf->written;
    }
#endif
    return TRUE;
}

gboolean ssim_cli_write_trace(const char *path, const char *format_name, const SsimGraph *graph,
                              const SsimTimeline *t, guint max_ranks, guint n_threads,
                              GError **error)
{
    SsimTraceFormat format =
        format_name ? (strcmp(format_name, "proto") == 0 ? SSIM_TRACE_PROTO : SSIM_TRACE_JSON)
                    : ssim_trace_format_for(path);
    TraceFile tf = {.path = g_strdup(path)};
    gboolean to_stdout = strcmp(path, "-") == 0;
    if (to_stdout) {
        tf.f = stdout;
    } else {
        g_autofree char *dir = g_path_get_dirname(path), *base = g_path_get_basename(path);
        g_autofree char *tmpl = g_strdup_printf(".%s.XXXXXX", base);
        tf.temp = g_build_filename(dir, tmpl, NULL);
        int fd = g_mkstemp(tf.temp);
        mode_t mask = umask(0);
        umask(mask);
        if (fd >= 0)
            fchmod(fd, 0666 & ~mask); /* mkstemp's 0600 would be a surprise on a result file */
        if (fd < 0 || !(tf.f = fdopen(fd, "wb"))) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO, "%s: cannot write: %s",
                        path, g_strerror(errno));
            if (fd >= 0)
                close(fd);
            g_free(tf.path), g_free(tf.temp);
            return FALSE;
        }
    }
    SsimTraceSink sink = {trace_file_write, &tf};
    gboolean ok = ssim_trace_write(graph, t, max_ranks, format, n_threads, &sink, error);
    if (to_stdout) {
        ok = ok && fflush(stdout) == 0;
    } else {
        gboolean closed = fflush(tf.f) == 0 && fsync(fileno(tf.f)) == 0;
        closed = fclose(tf.f) == 0 && closed;
        if (ok && !closed)
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO, "%s: cannot write: %s",
                        path, g_strerror(errno));
        ok = ok && closed;
        if (ok && g_rename(tf.temp, path) != 0) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO, "%s: cannot write: %s",
                        path, g_strerror(errno));
            ok = FALSE;
        }
        if (!ok)
            g_unlink(tf.temp);
    }
    g_free(tf.path);
    g_free(tf.temp);
    return ok;
}
