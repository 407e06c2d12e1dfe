/*
 * Tests of the line-at-a-time CSV reader (core/csvline): field texts and columns, line numbers,
 * CRLF and a last line without a newline, where libcsv's errors are reported, the quoting of the
 * writer helper read back by the splitter.
 *
 * Oracle: columns counted by hand on short lines (written out next to each case).
 */
#include <criterion/criterion.h>
#include "src/core/csvline.h"

#include <string.h>

/* Records every line as "line:" followed by " col=text" for each field, then '|'. */
static gboolean record_line(SsimCsvLine *line, const char *s, gsize len, gpointer data,
                            GError **error)
{
    GString *out = data;
    if (!ssim_csv_line_split(line, s, len, error))
        return FALSE;
    g_string_append_printf(out, "%u:", line->line);
    const SsimCsvField *f = ssim_csv_line_fields(line);
    for (guint i = 0; i < ssim_csv_line_n_fields(line); i++)
        g_string_append_printf(out, " %u=%s", f[i].col, f[i].text);
    g_string_append_printf(out, " end=%u|", line->col);
    return TRUE;
}

/* Every line of `text` through record_line(); NULL with `error` at the first failure. */
static char *read_all(const char *text, GError **error)
{
    g_autoptr(GString) out = g_string_new(NULL);
    if (!ssim_csv_for_each_line(text, strlen(text), "t.csv", record_line, out, error))
        return NULL;
    return g_strdup(out->str);
}

Test(csvline, fields_and_columns)
{
    g_autoptr(GError) error = NULL;
    /* a,"b,c",,dd: 'a' at 1, the quote of "b,c" at 3, the empty field after the comma at 8
     * starts at 9, "dd" at 10; the line is 11 bytes long. */
    g_autofree char *got = read_all("a,\"b,c\",,dd", &error);
    cr_assert_not_null(got, "%s", error ? error->message : "");
    cr_assert_str_eq(got, "1: 1=a 3=b,c 9= 10=dd end=12|");
}

Test(csvline, lines_crlf_and_last_line)
{
    g_autoptr(GError) error = NULL;
    /* CRLF endings lose their CR, an empty line has no field, the last line needs no newline. */
    g_autofree char *got = read_all("h\r\n\r\nx,\"y\"\"z\"\nlast", &error);
    cr_assert_not_null(got, "%s", error ? error->message : "");
    cr_assert_str_eq(got, "1: 1=h end=2|2: end=1|3: 1=x 3=y\"z end=9|4: 1=last end=5|");
}

Test(csvline, libcsv_errors_name_line_and_column)
{
    g_autoptr(GError) error = NULL;
    /* x,"a"b,c: libcsv refuses the text after the closing quote (byte 6 of line 2); the error
     * is reported at the end of the line, column 9. */
    cr_assert_null(read_all("ok\nx,\"a\"b,c\n", &error));
    cr_assert(g_error_matches(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE));
    cr_assert(g_str_has_prefix(error->message, "t.csv:2:9: csv: "), "%s", error->message);
    g_clear_error(&error);
    /* x,"ab: the quote is still open at the end of the line, column 6. */
    cr_assert_null(read_all("x,\"ab\n", &error));
    cr_assert(g_str_has_prefix(error->message, "t.csv:1:6: csv: "), "%s", error->message);
}

static gboolean fail_on_second(SsimCsvLine *line, const char *s, gsize len, gpointer data,
                               GError **error)
{
    (void)s;
    (void)len;
    (*(guint *)data)++;
    if (line->line == 2)
        return ssim_csv_line_fail(line, error, 7, "tp", "'%s' is %s", "x", "bad");
    return TRUE;
}

Test(csvline, fail_stops_the_read)
{
    g_autoptr(GError) error = NULL;
    guint calls = 0;
    cr_assert_not(ssim_csv_for_each_line("a\nb\nc\n", 6, "r.csv", fail_on_second, &calls, &error));
    cr_assert_eq(calls, 2);
    cr_assert(g_error_matches(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE));
    cr_assert_str_eq(error->message, "r.csv:2:7: tp: 'x' is bad");
}

Test(csvline, append_text_reads_back)
{
    const char *texts[] = {"plain", "a,b", "say \"hi\"", ""};
    g_autoptr(GString) line = g_string_new(NULL);
    for (guint i = 0; i < G_N_ELEMENTS(texts); i++) {
        if (i > 0)
            g_string_append_c(line, ',');
        ssim_csv_append_text(line, texts[i]);
    }
    cr_assert_str_eq(line->str, "plain,\"a,b\",\"say \"\"hi\"\"\",");
    g_autoptr(GError) error = NULL;
    g_autofree char *got = read_all(line->str, &error);
    cr_assert_not_null(got, "%s", error ? error->message : "");
    cr_assert_str_eq(got, "1: 1=plain 7=a,b 13=say \"hi\" 26= end=26|");
}

Test(csvline, read_file_names_the_path)
{
    g_autoptr(GError) error = NULL;
    gsize len = 0;
    cr_assert_null(ssim_csv_read_file(SSIM_TEST_DATA "/no-such-file.csv", &len, &error));
    cr_assert(g_error_matches(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO));
    cr_assert(g_str_has_prefix(error->message, SSIM_TEST_DATA "/no-such-file.csv: "), "%s",
              error->message);
}
