/*
 * The line-at-a-time CSV reader of src/core/csvline.h: a line splitter over libcsv that knows
 * each field's column, and the line iterator the table readers are built on.
 *
 * libcsv reports fields through a callback and keeps no positions, so the splitter feeds it one
 * byte at a time and records, before each byte, the column of that byte: when the callback fires,
 * the field just ended on the byte being fed (a delimiter, or the end of the line at csv_fini()),
 * and the next field starts on the column after it.
 *
 * Invariant: a line's fields are rebuilt from nothing by every split (the array is emptied
 * first), so a callback never sees a field of an earlier line.
 */
#include "src/core/csvline.h"

#include <shiftsim/data.h>

#include <csv.h>
#include <string.h>

static void field_clear(gpointer p)
{
    g_free(((SsimCsvField *)p)->text);
}

static void on_field(void *s, size_t len, void *data)
{
    SsimCsvLine *lp = data;
    SsimCsvField f = {g_strndup(s ? s : "", len), lp->field_start};
    g_array_append_val(lp->fields, f);
    lp->field_start = lp->col + 1;
}

gboolean ssim_csv_line_split(SsimCsvLine *lp, const char *s, gsize len, GError **error)
{
    struct csv_parser p;
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI) != 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO, "%s:%u: cannot start libcsv",
                    lp->path, lp->line);
        return FALSE;
    }
    g_array_set_size(lp->fields, 0);
    lp->field_start = 1;
    gboolean ok = TRUE;
    for (gsize i = 0; i < len && ok; i++) {
        lp->col = (guint)i + 1;
        if (csv_parse(&p, s + i, 1, on_field, NULL, lp) != 1)
            ok = FALSE;
    }
    /* Also where an error is reported: the end of the line, even when libcsv refused a byte
     * before it (what the runs reader has always printed). */
    lp->col = (guint)len + 1;
    if (ok && csv_fini(&p, on_field, NULL, lp) != 0)
        ok = FALSE;
    if (!ok)
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE, "%s:%u:%u: csv: %s",
                    lp->path, lp->line, lp->col, csv_strerror(csv_error(&p)));
    csv_free(&p);
    if (ok && lp->fields->len > SSIM_TEXT_FIELDS_MAX) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_LIMIT,
                    "%s:%u: %u fields, over the limit of %u", lp->path, lp->line, lp->fields->len,
                    SSIM_TEXT_FIELDS_MAX);
        return FALSE;
    }
    return ok;
}

gboolean ssim_csv_for_each_line(const char *text, gsize length, const char *path, SsimCsvLineFn fn,
                                gpointer data, GError **error)
{
    SsimCsvLine lp = {.path = path, .fields = g_array_new(FALSE, FALSE, sizeof(SsimCsvField))};
    g_array_set_clear_func(lp.fields, field_clear);
    gsize i = ssim_text_bom(text, length);
    gboolean ok = TRUE;
    while (i < length && ok) {
        gsize j = i;
        while (j < length && text[j] != '\n')
            j++;
        gsize len = j - i;
        if (len > 0 && text[i + len - 1] == '\r')
            len--;
        lp.line++;
        ok = ssim_text_check_line(path, lp.line, len, error) && fn(&lp, text + i, len, data, error);
        i = j + 1;
    }
    g_array_free(lp.fields, TRUE);
    return ok;
}

gboolean ssim_csv_line_fail(const SsimCsvLine *lp, GError **error, guint col, const char *field,
                            const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    g_autofree char *why = g_strdup_vprintf(format, ap);
    va_end(ap);
    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "%s:%u:%u: %s: %s", lp->path,
                lp->line, col, field, why);
    return FALSE;
}

void ssim_csv_append_text(GString *out, const char *s)
{
    if (strpbrk(s, ",\"\n\r") == NULL) {
        g_string_append(out, s);
        return;
    }
    g_string_append_c(out, '"');
    for (const char *p = s; *p; p++) {
        if (*p == '"')
            g_string_append_c(out, '"');
        g_string_append_c(out, *p);
    }
    g_string_append_c(out, '"');
}

char *ssim_csv_read_file(const char *path, gsize *length, GError **error)
{
    return ssim_read_file(path, length, error);
}
