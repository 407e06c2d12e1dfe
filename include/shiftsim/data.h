/*
 * Where bundled data (models/, traces/) is found: $SHIFTSIM_DATA, then the source tree the
 * binary was built from, then the installed data directory.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Returns the full path of bundled file `rel` (e.g. "traces/examples/two-streams.graph"), newly
 * allocated, or NULL when no data directory holds it. A `rel` that exists as given is returned
 * unchanged (copied). */
char *ssim_data_find(const char *rel);

/* Reads the whole file at `path` (newly allocated, NUL-terminated; its length in `len`), or
 * NULL with SSIM_CONFIG_ERROR_IO "PATH: cannot read: why". */
char *ssim_read_file(const char *path, gsize *len, GError **error);

const char *ssim_version(void);

G_END_DECLS
