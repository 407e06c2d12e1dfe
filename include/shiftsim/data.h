/*
 * Where bundled data (models/, traces/) is found: $SHIFTSIM_DATA, then the source tree the
 * binary was built from, then the installed data directory; and the one way input files are
 * read, which refuses what is not a regular file with its own message.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Returns the full path of bundled file `rel` (e.g. "traces/examples/two-streams.graph"), newly
 * allocated, or NULL when no data directory holds it. A `rel` that exists as given is returned
 * unchanged (copied). */
char *ssim_data_find(const char *rel);

/*
 * Whether `path` is a regular file to read as `what` ("model file", "file"): a missing path is
 * "PATH: cannot read: no such WHAT", a directory, device, FIFO or socket "PATH: is a directory, not
 * a WHAT" (reading a FIFO would wait for a writer, a device could be endless).
 * SSIM_CONFIG_ERROR_IO.
 */
gboolean ssim_input_check(const char *path, const char *what, GError **error);

/* The largest input file read whole by default (ssim_read_file): 2 GiB. */
#define SSIM_INPUT_MAX_BYTES (G_GUINT64_CONSTANT(2) << 30)

/* Reads the whole regular file at `path` (ssim_input_check; newly allocated, NUL-terminated; its
 * length in `len`), or NULL with SSIM_CONFIG_ERROR_IO "PATH: cannot read: why", or
 * SSIM_CONFIG_ERROR_LIMIT when it is larger than `max_bytes`. */
char *ssim_read_file_limited(const char *path, guint64 max_bytes, gsize *len, GError **error);
/* ssim_read_file_limited() with SSIM_INPUT_MAX_BYTES. */
char *ssim_read_file(const char *path, gsize *len, GError **error);

/* TRUE when `path` ends with `ext` (".ini", ".json"), or with it and ".gz" (a gzipped input,
 * which ssim_read_file inflates). */
gboolean ssim_path_is(const char *path, const char *ext);

/* The file name of `path` without its directory, then without a ".gz" and then `ext`: the name
 * a model or cluster file stands for when it names none ("dgx-a100.ini.gz" -> "dgx-a100"). */
char *ssim_path_stem(const char *path, const char *ext);

const char *ssim_version(void);

G_END_DECLS
