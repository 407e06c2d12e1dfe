/*
 * Perfetto traces written by the verbs (src/app/tracefile.h).  The trace streams in blocks
 * (ssim_trace_write) into an output file (include/shiftsim/output.h): a temporary beside the
 * target, registered for the signal handler, synced and renamed over the target once complete;
 * on any failure the temporary is removed, so FILE is either the whole trace or untouched.
 */
#include "src/app/tracefile.h"

#include <shiftsim/output.h>
#include <shiftsim/trace.h>
#include <shiftsim/types.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

gboolean ssim_cli_trace_format_valid(const char *format_name)
{
    return format_name == NULL || strcmp(format_name, "proto") == 0 ||
           strcmp(format_name, "json") == 0;
}

/* The trace's blocks: to the output file, or to stdout for "-". */
static gboolean to_output(gpointer data, const void *bytes, gsize len, GError **error)
{
    return ssim_output_append(data, bytes, len, error);
}

static gboolean to_stdout(gpointer data, const void *bytes, gsize len, GError **error)
{
    (void)data;
    if (fwrite(bytes, 1, len, stdout) == len)
        return TRUE;
    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO, "-: cannot write: %s",
                g_strerror(errno));
    return FALSE;
}

gboolean ssim_cli_write_trace(const char *path, const char *format_name, const SsimGraph *graph,
                              const SsimTimeline *t, guint max_ranks, guint n_threads,
                              GError **error)
{
    SsimTraceFormat format =
        format_name ? (strcmp(format_name, "proto") == 0 ? SSIM_TRACE_PROTO : SSIM_TRACE_JSON)
                    : ssim_trace_format_for(path);
    if (strcmp(path, "-") == 0) {
        SsimTraceSink sink = {to_stdout, NULL};
        if (!ssim_trace_write(graph, t, max_ranks, format, n_threads, &sink, error))
            return FALSE;
        if (fflush(stdout) == 0)
            return TRUE;
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO, "-: cannot write: %s",
                    g_strerror(errno));
        return FALSE;
    }
    g_autoptr(SsimOutput) out = ssim_output_open(path, error);
    if (out == NULL)
        return FALSE;
    SsimTraceSink sink = {to_output, out};
    return ssim_trace_write(graph, t, max_ranks, format, n_threads, &sink, error) &&
           ssim_output_commit(out, error);
}
