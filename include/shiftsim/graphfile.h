/*
 * The op-graph text format (`# shiftsim-graph v1`), documented in docs/replay.md.
 *
 * Parsing reports `file:line: field: what is wrong` through SSIM_CONFIG_ERROR and never aborts.
 */
#pragma once

#include <shiftsim/graph.h>

G_BEGIN_DECLS

/* Parses `text` (of `len` bytes, or -1 if NUL-terminated) named `path` in messages. */
SsimGraph *ssim_graphfile_parse(const char *path, const char *text, gssize len, GError **error);
/* Reads and parses the file at `path`; the graph comes back finalized. */
SsimGraph *ssim_graphfile_load(const char *path, GError **error);
/* Writes a graph in the text format (round-trips through ssim_graphfile_parse). */
GString *ssim_graphfile_write(const SsimGraph *graph);

/* Parses a duration such as "1500", "1.5us", "2ms" (default unit ns) into nanoseconds. */
gboolean ssim_parse_duration(const char *s, SsimTime *out, GError **error);
/* Parses a byte count such as "4096", "16MiB", "1.5GB", "40M": ssim_bytes_read() (types.h). */
gboolean ssim_parse_bytes(const char *s, guint64 *out, GError **error);

G_END_DECLS
