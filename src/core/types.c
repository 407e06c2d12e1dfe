/*
 * Shared units and error domains (see include/shiftsim/types.h), and the one byte-size grammar
 * every size in shiftsim is read with (options, split keys, graph files, shiftsim-bench lists).
 */
#include <shiftsim/types.h>

#include <math.h>
#include <stdarg.h>
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

/*
 * The one byte-size grammar (types.h, docs/units.md), read exactly: the digits before and after
 * the point are one integer mantissa with `frac` decimals, so "1.5GiB" and "0.1GB" are computed
 * in integers and never through a double's rounding.
 */
static const struct {
    const char *prefix;
    guint64 scale;
} byte_units[] = {{"Ki", G_GUINT64_CONSTANT(1) << 10},
                  {"ki", G_GUINT64_CONSTANT(1) << 10},
                  {"Mi", G_GUINT64_CONSTANT(1) << 20},
                  {"Gi", G_GUINT64_CONSTANT(1) << 30},
                  {"Ti", G_GUINT64_CONSTANT(1) << 40},
                  {"Pi", G_GUINT64_CONSTANT(1) << 50},
                  {"Ei", G_GUINT64_CONSTANT(1) << 60},
                  {"k", G_GUINT64_CONSTANT(1000)},
                  {"K", G_GUINT64_CONSTANT(1000)},
                  {"M", G_GUINT64_CONSTANT(1000000)},
                  {"G", G_GUINT64_CONSTANT(1000000000)},
                  {"T", G_GUINT64_CONSTANT(1000000000000)},
                  {"P", G_GUINT64_CONSTANT(1000000000000000)},
                  {"E", G_GUINT64_CONSTANT(1000000000000000000)},
                  {"", 1}};

static gboolean bytes_error(GError **error, const char *text, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

static gboolean bytes_error(GError **error, const char *text, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *why = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_autofree char *shown = ssim_text_excerpt(text, 64);
    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                "'%s' is not a byte size: %s (%s)", shown, why, SSIM_BYTES_GRAMMAR);
    return FALSE;
}

static guint64 gcd_u64(guint64 a, guint64 b)
{
    while (b != 0) {
        guint64 t = a % b;
        a = b;
        b = t;
    }
    return a;
}

gboolean ssim_bytes_read(const char *text, guint64 *out, GError **error)
{
    if (text == NULL || text[0] == '\0')
        return bytes_error(error, "", "it is empty");
    if (text[0] == '-')
        return bytes_error(error, text, "a size cannot be negative");
    if (!g_ascii_isdigit(text[0]))
        return bytes_error(error, text, "it does not start with a digit");
    guint64 mantissa = 0, pow10 = 1;
    const char *p = text;
    gboolean point = FALSE, big = FALSE;
    for (; g_ascii_isdigit(*p) || (*p == '.' && !point); p++) {
        if (*p == '.') {
            point = TRUE;
            continue;
        }
        guint digit = (guint)(*p - '0');
        if (point && digit == 0 && strspn(p, "0") == strspn(p, "0123456789"))
            continue; /* trailing zeros of the fraction change nothing */
        if (mantissa > (G_MAXUINT64 - digit) / 10 || (point && pow10 > G_MAXUINT64 / 10))
            big = TRUE;
        else {
            mantissa = mantissa * 10 + digit;
            pow10 *= point ? 10 : 1;
        }
    }
    if (point && p[-1] == '.')
        return bytes_error(error, text, "a point must have digits after it");
    guint i = 0;
    gsize n = 0;
    for (; i < G_N_ELEMENTS(byte_units); i++) {
        n = strlen(byte_units[i].prefix);
        const char *rest = p + n;
        if (strncmp(p, byte_units[i].prefix, n) == 0 &&
            (rest[0] == '\0' || (rest[0] == 'B' && rest[1] == '\0')))
            break;
    }
    if (i == G_N_ELEMENTS(byte_units))
        return bytes_error(error, text, "unknown unit '%s'", p);
    if (big)
        return bytes_error(error, text, "past the largest size, 2^64 - 1 bytes");
    /* mantissa / pow10 * scale, exact: divide out what the two share first. */
    guint64 scale = byte_units[i].scale, g = gcd_u64(scale, pow10);
    scale /= g;
    pow10 /= g;
    if (mantissa % pow10 != 0)
        return bytes_error(error, text, "not a whole number of bytes");
    guint64 bytes;
    if (__builtin_mul_overflow(mantissa / pow10, scale, &bytes))
        return bytes_error(error, text, "past the largest size, 2^64 - 1 bytes");
    *out = bytes;
    return TRUE;
}

gboolean ssim_bytes_parse(const char *text, guint64 *out)
{
    return ssim_bytes_read(text, out, NULL);
}

gboolean ssim_switch_read(const char *key, const char *value, gboolean *out, GError **error)
{
    const char *on[] = {"on", "true", "yes", "1"}, *off[] = {"off", "false", "no", "0"};
    for (guint i = 0; i < G_N_ELEMENTS(on); i++) {
        if (value && g_ascii_strcasecmp(value, on[i]) == 0) {
            *out = TRUE;
            return TRUE;
        }
        if (value && g_ascii_strcasecmp(value, off[i]) == 0) {
            *out = FALSE;
            return TRUE;
        }
    }
    g_autofree char *shown = ssim_text_excerpt(value, 64);
    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "%s: '%s' is not on or off", key,
                shown);
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

gsize ssim_text_bom(const char *text, gsize len)
{
    return len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
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
