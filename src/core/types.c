/* Shared units and error domains (see include/shiftsim/types.h). */
#include <shiftsim/types.h>

#include <math.h>
#include <string.h>

G_DEFINE_QUARK(ssim - config - error - quark, ssim_config_error)
G_DEFINE_QUARK(ssim - run - error - quark, ssim_run_error)

SsimTime ssim_time_from_seconds(double seconds)
{
    if (isnan(seconds))
        return SSIM_TIME_NEVER;
    if (!(seconds > 0.0))
        return 0;
    double ns = seconds * 1e9;
    if (!(ns < 9.2e18)) /* also +inf */
        return SSIM_TIME_NEVER;
    return (SsimTime)llround(ns);
}

SsimTime ssim_time_scale(SsimTime t, double factor)
{
    double ns = (double)t * factor;
    if (!(ns < 9.2e18)) /* also NaN and +inf */
        return SSIM_TIME_NEVER;
    if (!(ns > 0.0))
        return 0;
    return (SsimTime)llround(ns);
}

gboolean ssim_bytes_parse(const char *text, guint64 *out)
{
    if (text == NULL || !g_ascii_isdigit(text[0]))
        return FALSE; /* no sign, no blank, no "nan" or "inf" */
    char *end = NULL;
    double v = g_ascii_strtod(text, &end);
    if (end == text || !isfinite(v) || v < 0)
        return FALSE;
    static const struct {
        const char *prefix;
        double scale;
    } units[] = {{"", 1},
                 {"k", 1e3},
                 {"K", 1e3},
                 {"M", 1e6},
                 {"G", 1e9},
                 {"T", 1e12},
                 {"Ki", 1024.0},
                 {"ki", 1024.0},
                 {"Mi", 1048576.0},
                 {"Gi", 1073741824.0},
                 {"Ti", 1099511627776.0}};
    for (guint i = 0; i < G_N_ELEMENTS(units); i++) {
        gsize n = strlen(units[i].prefix);
        if (strncmp(end, units[i].prefix, n) != 0)
            continue;
        const char *rest = end + n;
        if (!(rest[0] == '\0' || (rest[0] == 'B' && rest[1] == '\0')))
            continue;
        double bytes = v * units[i].scale;
        if (!(bytes < 18446744073709549568.0)) /* the largest double below 2^64 */
            return FALSE;
        *out = (guint64)bytes;
        return TRUE;
    }
    return FALSE;
}

char *ssim_text_excerpt(const char *text, gsize max)
{
    if (text == NULL)
        return g_strdup("");
    gsize len = strlen(text), keep = MIN(len, max);
    /* Back up to the start of a UTF-8 sequence, so the excerpt stays valid where the text was. */
    while (keep > 0 && keep < len && ((guchar)text[keep] & 0xC0) == 0x80)
        keep--;
    GString *out = g_string_sized_new(keep + 32);
    for (gsize i = 0; i < keep; i++)
        g_string_append_c(out, (guchar)text[i] < 0x20 || text[i] == 0x7f ? '?' : text[i]);
    if (keep < len)
        g_string_append_printf(out, "... (%" G_GSIZE_FORMAT " more bytes)", len - keep);
    return g_string_free(out, FALSE);
}

gboolean ssim_text_check_line(const char *path, guint line, gsize len, GError **error)
{
    if (len <= SSIM_TEXT_LINE_MAX)
        return TRUE;
    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_LIMIT,
                "%s:%u: the line is %" G_GSIZE_FORMAT " bytes long, over the limit of %u bytes "
                "(is this a text file of the right kind?)",
                path, line, len, SSIM_TEXT_LINE_MAX);
    return FALSE;
}

void ssim_error_truncate(GError *error)
{
    if (error == NULL || error->message == NULL || strlen(error->message) <= SSIM_MESSAGE_MAX)
        return;
    gsize len = strlen(error->message), keep = SSIM_MESSAGE_MAX;
    while (keep > 0 && ((guchar)error->message[keep] & 0xC0) == 0x80)
        keep--;
    char *cut = g_strdup_printf("%.*s... (%" G_GSIZE_FORMAT " more bytes)", (int)keep,
                                error->message, len - keep);
    g_free(error->message);
    error->message = cut;
}

double ssim_time_to_seconds(SsimTime t)
{
    return (double)t * 1e-9;
}

int ssim_cmp_u32(const void *a, const void *b)
{
    guint32 x = *(const guint32 *)a, y = *(const guint32 *)b;
    return (x > y) - (x < y);
}
