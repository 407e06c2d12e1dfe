/*
 * JSON bounds before parsing (src/core/jsonbound.h).  One pass, no recursion and no
 * allocation: depth counts the '[' and '{' open outside strings; inside a string a backslash
 * skips the next byte.  Unbalanced or malformed text is not this scan's business (the parser
 * reports it with its own position); only the bounds are.
 */
#include "src/core/jsonbound.h"

#include <shiftsim/data.h>
#include <shiftsim/types.h>

#include <string.h>

gboolean ssim_json_check_bounds(const char *text, gssize len, guint64 max_bytes, const char *path,
                                GError **error)
{
    gsize n = len < 0 ? strlen(text) : (gsize)len;
    if ((guint64)n > max_bytes) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_LIMIT,
                    "%s: %.1f MiB of JSON is over the limit of %.1f MiB for this input", path,
                    (double)n / 1048576.0, (double)max_bytes / 1048576.0);
        return FALSE;
    }
    guint depth = 0, line = 1;
    gboolean in_string = FALSE;
    for (gsize i = 0; i < n; i++) {
        char c = text[i];
        if (c == '\n')
            line++;
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = FALSE;
            continue;
        }
        if (c == '"') {
            in_string = TRUE;
        } else if (c == '[' || c == '{') {
            if (++depth > SSIM_JSON_MAX_DEPTH) {
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_LIMIT,
                            "%s:%u: JSON nested deeper than %u levels (byte %" G_GSIZE_FORMAT
                            "); no trace this reader knows nests so deep",
                            path, line, SSIM_JSON_MAX_DEPTH, i);
                return FALSE;
            }
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return TRUE;
}

JsonParser *ssim_json_parse(const char *text, gssize len, guint64 max_bytes, const char *path,
                            GError **error)
{
    if (!ssim_json_check_bounds(text, len, max_bytes, path, error))
        return NULL;
    JsonParser *parser = json_parser_new();
    GError *local = NULL;
    if (!json_parser_load_from_data(parser, text, len, &local)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE, "%s: not JSON: %s", path,
                    local->message);
        g_error_free(local);
        g_object_unref(parser);
        return NULL;
    }
    return parser;
}

JsonParser *ssim_json_parse_file(const char *path, guint64 max_bytes, GError **error)
{
    gsize len = 0;
    g_autofree char *text = ssim_read_file_limited(path, max_bytes, &len, error);
    return text ? ssim_json_parse(text, (gssize)len, max_bytes, path, error) : NULL;
}
