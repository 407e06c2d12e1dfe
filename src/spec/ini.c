/*
 * Versioned INI reading with line numbers (see ini-private.h).
 *
 * The line scan mirrors GKeyFile's grammar closely enough for our files: leading and trailing
 * blanks are ignored, '#' starts a comment line, "[name]" opens a group, and anything else must
 * be "key = value" inside a group.  Locale-suffixed keys (key[de]) are treated as ordinary keys,
 * which the key check then rejects as unknown.
 */
#include "src/spec/ini-private.h"

#include <shiftsim/data.h>

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static char *line_key(const char *group, const char *key)
{
    return key ? g_strdup_printf("%s\x1f%s", group, key) : g_strdup(group);
}

static gboolean scan_lines(SsimIni *ini, const char *text, gsize length, GError **error)
{
    g_autofree char *copy = g_strndup(text, length);
    g_auto(GStrv) lines = g_strsplit(copy, "\n", -1);
    g_autofree char *group = NULL;

    for (guint i = 0; lines[i] != NULL; i++) {
        guint lineno = i + 1;
        if (!ssim_text_check_line(ini->path, lineno, strlen(lines[i]), error))
            return FALSE;
        char *line = g_strstrip(lines[i]);
        if (line[0] == '\0' || line[0] == '#')
            continue;
        if (line[0] == '[') {
            gsize n = strlen(line);
            if (n < 3 || line[n - 1] != ']') {
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                            "%s:%u: malformed group header '%s'", ini->path, lineno, line);
                return FALSE;
            }
            g_free(group);
            /* Kept verbatim (no trimming inside the brackets), as GKeyFile does. */
            group = g_strndup(line + 1, n - 2);
            guint first = GPOINTER_TO_UINT(g_hash_table_lookup(ini->lines, group));
            if (first != 0) {
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                            "%s:%u: [%s]: group repeated (first at line %u)", ini->path, lineno,
                            group, first);
                return FALSE;
            }
            g_hash_table_insert(ini->lines, g_strdup(group), GUINT_TO_POINTER(lineno));
            continue;
        }
        const char *eq = strchr(line, '=');
        if (eq == NULL) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                        "%s:%u: '%s' is neither a [group], a key = value line nor a # comment",
                        ini->path, lineno, line);
            return FALSE;
        }
        g_autofree char *key = g_strndup(line, (gsize)(eq - line));
        g_strstrip(key);
        if (key[0] == '\0') {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                        "%s:%u: a value without a key", ini->path, lineno);
            return FALSE;
        }
        if (group == NULL) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                        "%s:%u: %s: key outside any [group]", ini->path, lineno, key);
            return FALSE;
        }
        char *k = line_key(group, key);
        guint first = GPOINTER_TO_UINT(g_hash_table_lookup(ini->lines, k));
        if (first != 0) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                        "%s:%u: %s: key repeated (first at line %u)", ini->path, lineno, key,
                        first);
            g_free(k);
            return FALSE;
        }
        g_hash_table_insert(ini->lines, k, GUINT_TO_POINTER(lineno));
    }
    return TRUE;
}

gboolean ssim_ini_init(SsimIni *ini, const char *text, gssize length, const char *path,
                       GError **error)
{
    g_return_val_if_fail(ini != NULL && text != NULL, FALSE);
    gsize len = length < 0 ? strlen(text) : (gsize)length;
    gsize bom = ssim_text_bom(text, len); /* a Windows editor's, before the first line */
    text += bom;
    len -= bom;
    ini->path = g_strdup(path ? path : "<string>");
    ini->lines = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    ini->kf = g_key_file_new();
    if (!scan_lines(ini, text, len, error))
        return FALSE;
    GError *local = NULL;
    if (!g_key_file_load_from_data(ini->kf, text, len, G_KEY_FILE_NONE, &local)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE, "%s: %s", ini->path,
                    local->message);
        g_error_free(local);
        return FALSE;
    }
    return TRUE;
}

void ssim_ini_clear(SsimIni *ini)
{
    if (ini == NULL)
        return;
    g_clear_pointer(&ini->kf, g_key_file_free);
    g_clear_pointer(&ini->lines, g_hash_table_unref);
    g_clear_pointer(&ini->path, g_free);
}

guint ssim_ini_line(const SsimIni *ini, const char *group, const char *key)
{
    g_autofree char *k = line_key(group, key);
    return GPOINTER_TO_UINT(g_hash_table_lookup(ini->lines, k));
}

gboolean ssim_ini_has(const SsimIni *ini, const char *group, const char *key)
{
    return ssim_ini_line(ini, group, key) != 0;
}

/* "path:line: " for `key`, falling back to its group's header line, then to no line. */
static char *where(const SsimIni *ini, const char *group, const char *key)
{
    guint line = key ? ssim_ini_line(ini, group, key) : 0;
    if (line == 0)
        line = ssim_ini_line(ini, group, NULL);
    return line ? g_strdup_printf("%s:%u: ", ini->path, line) : g_strdup_printf("%s: ", ini->path);
}

void ssim_ini_error(const SsimIni *ini, GError **error, gint code, const char *group,
                    const char *key, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    g_autofree char *msg = g_strdup_vprintf(format, ap);
    va_end(ap);
    g_autofree char *at = where(ini, group, key);
    if (key)
        g_set_error(error, SSIM_CONFIG_ERROR, code, "%s%s: %s", at, key, msg);
    else
        g_set_error(error, SSIM_CONFIG_ERROR, code, "%s[%s]: %s", at, group, msg);
}

void ssim_ini_prefix_error(const SsimIni *ini, GError **error, const char *group, const char *key)
{
    g_autofree char *at = where(ini, group, key);
    g_prefix_error(error, "%s", at);
}

gboolean ssim_ini_check_keys(const SsimIni *ini, const SsimIniGroup *groups, GError **error)
{
    gsize n_groups = 0;
    g_auto(GStrv) names = g_key_file_get_groups(ini->kf, &n_groups);
    for (gsize g = 0; g < n_groups; g++) {
        const SsimIniGroup *spec = NULL;
        for (const SsimIniGroup *s = groups; s->name != NULL; s++)
            if (strcmp(s->name, names[g]) == 0)
                spec = s;
        if (spec == NULL) {
            g_autoptr(GString) known = g_string_new(NULL);
            for (const SsimIniGroup *s = groups; s->name != NULL; s++)
                g_string_append_printf(known, "%s[%s]", known->len ? ", " : "", s->name);
            ssim_ini_error(ini, error, SSIM_CONFIG_ERROR_VALUE, names[g], NULL,
                           "unknown group (known: %s)", known->str);
            return FALSE;
        }
        gsize n_keys = 0;
        g_auto(GStrv) keys = g_key_file_get_keys(ini->kf, names[g], &n_keys, NULL);
        for (gsize k = 0; k < n_keys; k++) {
            gboolean ok = FALSE;
            for (const char *const *a = spec->keys; *a != NULL && !ok; a++)
                ok = strcmp(*a, keys[k]) == 0;
            if (!ok) {
                g_autofree char *known = g_strjoinv(", ", (char **)spec->keys);
                ssim_ini_error(ini, error, SSIM_CONFIG_ERROR_VALUE, names[g], keys[k],
                               "unknown key in [%s] (known: %s)", names[g], known);
                return FALSE;
            }
        }
    }
    for (const SsimIniGroup *s = groups; s->name != NULL; s++) {
        if (s->required && !g_key_file_has_group(ini->kf, s->name)) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MISSING,
                        "%s: [%s]: required group missing", ini->path, s->name);
            return FALSE;
        }
    }
    return TRUE;
}

gboolean ssim_ini_check_format(const SsimIni *ini, const char *group, guint version, GError **error)
{
    guint found = 0;
    if (!ssim_ini_has(ini, group, NULL)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MISSING,
                    "%s: [%s]: required group missing", ini->path, group);
        return FALSE;
    }
    if (!ssim_ini_has(ini, group, "format")) {
        ssim_ini_error(ini, error, SSIM_CONFIG_ERROR_VERSION, group, "format",
                       "missing; this shiftsim reads `format = %u`", version);
        return FALSE;
    }
    if (!ssim_ini_uint(ini, group, "format", TRUE, 1, &found, error))
        return FALSE;
    if (found != version) {
        ssim_ini_error(ini, error, SSIM_CONFIG_ERROR_VERSION, group, "format",
                       "version %u is not supported (this shiftsim reads format %u)", found,
                       version);
        return FALSE;
    }
    return TRUE;
}

/* The stripped raw value, or NULL (with a "missing" error when required). */
static char *raw_value(const SsimIni *ini, const char *group, const char *key, gboolean required,
                       gboolean *ok, GError **error)
{
    *ok = TRUE;
    if (!ssim_ini_has(ini, group, key)) {
        if (required) {
            ssim_ini_error(ini, error, SSIM_CONFIG_ERROR_MISSING, group, key,
                           "missing (required in [%s])", group);
            *ok = FALSE;
        }
        return NULL;
    }
    char *v = g_key_file_get_value(ini->kf, group, key, NULL);
    return v ? g_strstrip(v) : g_strdup("");
}

gboolean ssim_ini_u64(const SsimIni *ini, const char *group, const char *key, gboolean required,
                      guint64 min, guint64 *out, GError **error)
{
    gboolean ok;
    g_autofree char *v = raw_value(ini, group, key, required, &ok, error);
    if (v == NULL)
        return ok;
    g_autoptr(GString) digits = g_string_new(NULL);
    for (const char *p = v; *p; p++)
        if (*p != '_')
            g_string_append_c(digits, *p);
    guint64 n = 0;
    const char *what = min > 0 ? "a positive integer" : "a non-negative integer";
    if (digits->len == 0 || digits->str[0] == '-' || digits->str[0] == '+' ||
        !g_ascii_string_to_unsigned(digits->str, 10, 0, G_MAXUINT64, &n, NULL)) {
        ssim_ini_error(ini, error, SSIM_CONFIG_ERROR_VALUE, group, key, "must be %s, not '%s'",
                       what, v);
        return FALSE;
    }
    if (n < min) {
        if (min == 1)
            ssim_ini_error(ini, error, SSIM_CONFIG_ERROR_VALUE, group, key,
                           "must be a positive integer, not '%s'", v);
        else
            ssim_ini_error(ini, error, SSIM_CONFIG_ERROR_VALUE, group, key,
                           "must be at least %" G_GUINT64_FORMAT ", not '%s'", min, v);
        return FALSE;
    }
    *out = n;
    return TRUE;
}

gboolean ssim_ini_uint(const SsimIni *ini, const char *group, const char *key, gboolean required,
                       guint min, guint *out, GError **error)
{
    guint64 n = *out;
    if (!ssim_ini_u64(ini, group, key, required, min, &n, error))
        return FALSE;
    if (n > G_MAXUINT32) {
        ssim_ini_error(ini, error, SSIM_CONFIG_ERROR_VALUE, group, key,
                       "%" G_GUINT64_FORMAT " is too large (at most %u)", n, G_MAXUINT32);
        return FALSE;
    }
    *out = (guint)n;
    return TRUE;
}

gboolean ssim_ini_double(const SsimIni *ini, const char *group, const char *key, gboolean required,
                         double lo, gboolean lo_open, double hi, double *out, GError **error)
{
    gboolean ok;
    g_autofree char *v = raw_value(ini, group, key, required, &ok, error);
    if (v == NULL)
        return ok;
    char *end = NULL;
    errno = 0;
    double d = g_ascii_strtod(v, &end);
    if (v[0] == '\0' || end == NULL || *end != '\0' || errno != 0 || !isfinite(d)) {
        ssim_ini_error(ini, error, SSIM_CONFIG_ERROR_VALUE, group, key,
                       "must be a number, not '%s'", v);
        return FALSE;
    }
    if (d < lo || (lo_open && d == lo) || d > hi) {
        ssim_ini_error(ini, error, SSIM_CONFIG_ERROR_VALUE, group, key,
                       "%s is out of range (must be in %s%g, %g])", v, lo_open ? "(" : "[", lo, hi);
        return FALSE;
    }
    *out = d;
    return TRUE;
}

gboolean ssim_ini_bool(const SsimIni *ini, const char *group, const char *key, gboolean required,
                       gboolean *out, GError **error)
{
    gboolean ok;
    g_autofree char *v = raw_value(ini, group, key, required, &ok, error);
    if (v == NULL)
        return ok;
    if (g_ascii_strcasecmp(v, "true") == 0 || strcmp(v, "1") == 0 ||
        g_ascii_strcasecmp(v, "yes") == 0) {
        *out = TRUE;
    } else if (g_ascii_strcasecmp(v, "false") == 0 || strcmp(v, "0") == 0 ||
               g_ascii_strcasecmp(v, "no") == 0) {
        *out = FALSE;
    } else {
        ssim_ini_error(ini, error, SSIM_CONFIG_ERROR_VALUE, group, key,
                       "must be true or false, not '%s'", v);
        return FALSE;
    }
    return TRUE;
}

gboolean ssim_ini_string(const SsimIni *ini, const char *group, const char *key, gboolean required,
                         char **out, GError **error)
{
    if (!ssim_ini_has(ini, group, key)) {
        if (required) {
            ssim_ini_error(ini, error, SSIM_CONFIG_ERROR_MISSING, group, key,
                           "missing (required in [%s])", group);
            return FALSE;
        }
        return TRUE;
    }
    char *v = g_key_file_get_string(ini->kf, group, key, NULL);
    if (v == NULL || g_strstrip(v)[0] == '\0') {
        g_free(v);
        ssim_ini_error(ini, error, SSIM_CONFIG_ERROR_VALUE, group, key, "must not be empty");
        return FALSE;
    }
    g_free(*out);
    *out = v;
    return TRUE;
}

gboolean ssim_ini_enum(const SsimIni *ini, const char *group, const char *key, gboolean required,
                       const char *const *names, guint n, guint *out, GError **error)
{
    gboolean ok;
    g_autofree char *v = raw_value(ini, group, key, required, &ok, error);
    if (v == NULL)
        return ok;
    for (guint i = 0; i < n; i++) {
        if (names[i] != NULL && g_ascii_strcasecmp(names[i], v) == 0) {
            *out = i;
            return TRUE;
        }
    }
    g_autoptr(GString) known = g_string_new(NULL);
    for (guint i = 0; i < n; i++)
        if (names[i] != NULL)
            g_string_append_printf(known, "%s%s", known->len ? " | " : "", names[i]);
    ssim_ini_error(ini, error, SSIM_CONFIG_ERROR_VALUE, group, key, "'%s' is not one of %s", v,
                   known->str);
    return FALSE;
}

char *ssim_ini_resolve(const char *name_or_path, const char *dir, const char *what, GError **error)
{
    g_return_val_if_fail(name_or_path != NULL, NULL);
    gboolean is_path = g_file_test(name_or_path, G_FILE_TEST_IS_REGULAR) ||
                       strchr(name_or_path, '/') != NULL || ssim_path_is(name_or_path, ".ini");
    if (is_path) {
        g_autofree char *file = g_strdup_printf("%s file", what);
        if (!ssim_input_check(name_or_path, file, error))
            return NULL;
        return g_strdup(name_or_path);
    }
    g_autofree char *rel = g_strdup_printf("%s/%s.ini", dir, name_or_path);
    char *found = ssim_data_find(rel);
    if (found == NULL) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MISSING,
                    "%s: unknown %s '%s' (no %s in $SHIFTSIM_DATA, the source tree or the "
                    "installed data)",
                    name_or_path, what, name_or_path, rel);
        return NULL;
    }
    return found;
}
