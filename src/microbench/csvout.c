/*
 * Profile and raw CSV writers (see csvout.h).  Everything is appended to a GString; the driver
 * writes the string out after each row, so a run cut short still leaves every finished row.
 */
#include "src/microbench/csvout.h"

#include <math.h>
#include <string.h>

void ssim_bench_csv_field(GString *out, const char *text)
{
    if (text == NULL || *text == '\0')
        return;
    gsize len = strlen(text);
    gboolean quote = strpbrk(text, ",\"\r\n") != NULL || g_ascii_isspace(text[0]) ||
                     g_ascii_isspace(text[len - 1]);
    if (!quote) {
        g_string_append(out, text);
        return;
    }
    g_string_append_c(out, '"');
    for (const char *p = text; *p != '\0'; p++) {
        if (*p == '"')
            g_string_append_c(out, '"');
        g_string_append_c(out, *p);
    }
    g_string_append_c(out, '"');
}

void ssim_bench_csv_time(GString *out, double us)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    if (!(us > 0.0) || !isfinite(us)) {
        g_return_if_fail(!isnan(us) && !isinf(us));
        us = 0.0;
    }
    g_ascii_formatd(buf, sizeof buf, "%.3f", us);
    g_string_append(out, buf);
}

void ssim_bench_csv_metadata(GString *out, const char *key, const char *value)
{
    g_return_if_fail(key != NULL && *key != '\0');
    for (const char *p = key; *p != '\0'; p++)
        g_return_if_fail(g_ascii_islower(*p) || g_ascii_isdigit(*p) || *p == '_');
    g_string_append_printf(out, "# %s = ", key);
    for (const char *p = value != NULL ? value : ""; *p != '\0'; p++)
        g_string_append_c(out, *p == '\n' || *p == '\r' ? ' ' : *p);
    g_string_append_c(out, '\n');
}

static void begin(GString *out, const char *version, const char *header,
                  const char *const *metadata)
{
    g_string_append_printf(out, "%s\n", version);
    for (guint i = 0; metadata != NULL && metadata[i] != NULL && metadata[i + 1] != NULL; i += 2)
        ssim_bench_csv_metadata(out, metadata[i], metadata[i + 1]);
    g_string_append_printf(out, "%s\n", header);
}

void ssim_bench_csv_begin(GString *out, const char *const *metadata)
{
    begin(out, SSIM_PROFILE_VERSION_LINE, SSIM_PROFILE_HEADER, metadata);
}

void ssim_bench_csv_raw_begin(GString *out, const char *const *metadata)
{
    begin(out, SSIM_BENCH_RAW_VERSION_LINE, SSIM_BENCH_RAW_HEADER, metadata);
}

/* The eleven columns that identify a case, each followed by a comma. */
static void case_columns(GString *out, const SsimBenchRow *row)
{
    ssim_bench_csv_field(out, row->kind);
    g_string_append_c(out, ',');
    ssim_bench_csv_field(out, row->op);
    g_string_append_c(out, ',');
    ssim_bench_csv_field(out, row->dtype);
    g_string_append_printf(out,
                           ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT
                           ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%u,%u,",
                           (guint64)row->m, (guint64)row->n, (guint64)row->k, (guint64)row->batch,
                           (guint64)row->bytes, row->ranks, row->ranks_per_node);
    ssim_bench_csv_field(out, row->algo);
    g_string_append_c(out, ',');
}

void ssim_bench_csv_row(GString *out, const SsimBenchRow *row, const SsimBenchStats *stats)
{
    g_return_if_fail(row != NULL && stats != NULL);
    case_columns(out, row);
    ssim_bench_csv_time(out, stats->mean);
    g_string_append_c(out, ',');
    ssim_bench_csv_time(out, stats->median);
    g_string_append_c(out, ',');
    ssim_bench_csv_time(out, stats->min);
    g_string_append_c(out, ',');
    ssim_bench_csv_time(out, stats->stddev);
    g_string_append_printf(out, ",%u\n", stats->samples);
}

void ssim_bench_csv_raw_rows(GString *out, const SsimBenchRow *row, const double *samples_us,
                             guint n)
{
    g_return_if_fail(row != NULL && (n == 0 || samples_us != NULL));
    for (guint i = 0; i < n; i++) {
        case_columns(out, row);
        g_string_append_printf(out, "%u,", i);
        ssim_bench_csv_time(out, samples_us[i]);
        g_string_append_c(out, '\n');
    }
}

char *ssim_bench_version_mmp(int version)
{
    if (version <= 0)
        return g_strdup("unknown");
    return g_strdup_printf("%d.%d.%d", version / 10000, version / 100 % 100, version % 100);
}

char *ssim_bench_version_cuda(int version)
{
    if (version <= 0)
        return g_strdup("unknown");
    return g_strdup_printf("%d.%d", version / 1000, version % 1000 / 10);
}

char *ssim_bench_driver_from_proc(const char *text)
{
    if (text == NULL)
        return NULL;
    const char *p = strstr(text, "Kernel Module");
    if (p == NULL)
        return NULL;
    p += strlen("Kernel Module");
    /* Some builds say "Kernel Module for x86_64  570.86.15"; take the first token that starts
     * with a digit and holds a dot. */
    while (*p != '\0' && *p != '\n') {
        while (*p == ' ' || *p == '\t')
            p++;
        const char *end = p;
        while (*end != '\0' && *end != ' ' && *end != '\t' && *end != '\n')
            end++;
        if (end > p && g_ascii_isdigit(*p) && memchr(p, '.', (gsize)(end - p)) != NULL)
            return g_strndup(p, (gsize)(end - p));
        p = end;
    }
    return NULL;
}
