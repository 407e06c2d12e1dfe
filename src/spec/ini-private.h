/*
 * Reading shiftsim's versioned INI files (models, clusters) with line numbers in every message.
 *
 * GKeyFile parses the values but knows no line numbers, so ssim_ini_init() also scans the text
 * once and records the line of every [group] header and every key.  That scan is stricter than
 * GKeyFile: a line that is not blank, a '#' comment, a [group] or `key = value` is an error, and
 * so is a repeated key or group (GKeyFile would silently keep the last one).  Every getter reports
 * "path:line: key: message" in SSIM_CONFIG_ERROR, pointing at the key's line (or at the group's
 * header for a missing key), so a user can go straight to the mistake.
 *
 * Integers may use '_' as a digit separator (6_053_381_344).  Comments must be on their own lines;
 * GKeyFile does not strip a trailing "# ..." from a value.
 */
#pragma once

#include <shiftsim/types.h>

typedef struct {
    GKeyFile *kf;
    char *path;
    GHashTable *lines; /* "group" or "group\x1fkey" -> line number (1-based) */
} SsimIni;

/* A group a file may have, the keys it may hold (NULL-terminated) and whether it must exist. */
typedef struct {
    const char *name;
    const char *const *keys;
    gboolean required;
} SsimIniGroup;

gboolean ssim_ini_init(SsimIni *ini, const char *text, gssize length, const char *path,
                       GError **error);
void ssim_ini_clear(SsimIni *ini);

/* The line of `key` in `group` (key NULL: the group header), or 0 when absent. */
guint ssim_ini_line(const SsimIni *ini, const char *group, const char *key);
gboolean ssim_ini_has(const SsimIni *ini, const char *group, const char *key);

/* Sets "path:line: key: <message>" (line of the key, else of the group, else none). */
void ssim_ini_error(const SsimIni *ini, GError **error, gint code, const char *group,
                    const char *key, const char *format, ...) G_GNUC_PRINTF(6, 7);
/* Prefixes an existing error with "path:line: " for `key` (the message already names it). */
void ssim_ini_prefix_error(const SsimIni *ini, GError **error, const char *group, const char *key);

/* Rejects groups and keys not in `groups` (terminated by a {NULL} entry) and missing required
 * groups. */
gboolean ssim_ini_check_keys(const SsimIni *ini, const SsimIniGroup *groups, GError **error);
/* Requires `format = version` in `group` (SSIM_CONFIG_ERROR_VERSION when it differs). */
gboolean ssim_ini_check_format(const SsimIni *ini, const char *group, guint version,
                               GError **error);

/* Getters: when the key is absent, a required key is an error and an optional one leaves `*out`
 * unchanged (the caller presets the default). */
gboolean ssim_ini_uint(const SsimIni *ini, const char *group, const char *key, gboolean required,
                       guint min, guint *out, GError **error);
gboolean ssim_ini_u64(const SsimIni *ini, const char *group, const char *key, gboolean required,
                      guint64 min, guint64 *out, GError **error);
/* A finite double in [lo, hi]; `lo_open` excludes lo itself. */
gboolean ssim_ini_double(const SsimIni *ini, const char *group, const char *key, gboolean required,
                         double lo, gboolean lo_open, double hi, double *out, GError **error);
gboolean ssim_ini_bool(const SsimIni *ini, const char *group, const char *key, gboolean required,
                       gboolean *out, GError **error);
/* A non-empty string; `*out` is replaced (the old value freed) when the key is present. */
gboolean ssim_ini_string(const SsimIni *ini, const char *group, const char *key, gboolean required,
                         char **out, GError **error);
/* One of `names[0..n)`; `*out` receives its index. */
gboolean ssim_ini_enum(const SsimIni *ini, const char *group, const char *key, gboolean required,
                       const char *const *names, guint n, guint *out, GError **error);

/* The text of a bundled or given file: a path as given, or `dir/<name>.ini` through
 * ssim_data_find().  Returns the resolved path (caller frees) or NULL with `error` set. */
char *ssim_ini_resolve(const char *name_or_path, const char *dir, const char *what, GError **error);
