/*
 * CSV tables read one line at a time, with the column of every field: the reader under the
 * measured-runs file (spec/runs.c) and vTrain's tables (import/vtrain.c).  Internal to
 * libshiftsim (not installed); higher layers include it as "src/core/csvline.h".
 *
 * ssim_csv_for_each_line() cuts a text into lines (LF or CRLF; the CR is dropped; a UTF-8 byte
 * order mark before the first line is skipped, ssim_text_bom()) and hands each
 * to a callback with an SsimCsvLine that knows the file and the line number.  The callback
 * decides what the line is (a version line, a comment, a header, a row) and, for a row, splits it
 * with ssim_csv_line_split(): libcsv in strict mode (CSV_STRICT | CSV_STRICT_FINI), fed one byte
 * at a time so that the splitter knows the column of the byte libcsv is looking at; a field
 * starts right after the delimiter that ended the previous one, so every field has an exact
 * `line:column`.  A line libcsv refuses is reported at its end (the column just past its last
 * byte), wherever the fault is.  Fields cannot span lines (a quoted line break is an unterminated
 * quote on its line).
 *
 * Invariants: after a successful split, fields[0 .. n_fields) hold the line's fields in order,
 * each with the 1-based column of its first byte (of its opening quote when quoted), and `col` is
 * the column just past the line's end (where a missing field would be); every error reads
 * `file:line:column: field: what is wrong` (SSIM_CONFIG_ERROR) and the first one stops the read.
 *
 * Ownership: an SsimCsvLine and its fields belong to ssim_csv_for_each_line(); the callback
 * borrows them until it returns.  This is not the profile reader (cost/profile.c), which feeds
 * its whole CSV part to libcsv at once so that a quoted field may hold a line break.
 */
#pragma once

#include <shiftsim/types.h>

G_BEGIN_DECLS

/* One field of a split line: its unquoted text and the column where it starts. */
typedef struct {
    char *text;
    guint col;
} SsimCsvField;

typedef struct {
    const char *path;  /* for messages */
    guint line;        /* 1-based number of the line being read */
    guint col;         /* while splitting, the column of the byte fed; after, just past the end */
    guint field_start; /* column where the field being read started */
    GArray *fields;    /* SsimCsvField of the last split */
} SsimCsvLine;

/* What ssim_csv_for_each_line() calls for each line: `s[0 .. len)` without its line break.
 * Returning FALSE (with `error` set) stops the read. */
typedef gboolean (*SsimCsvLineFn)(SsimCsvLine *line, const char *s, gsize len, gpointer data,
                                  GError **error);

/* Calls `fn` for each line of `text[0 .. length)` in order, line numbers from 1; FALSE with the
 * callback's error as soon as one returns FALSE. */
gboolean ssim_csv_for_each_line(const char *text, gsize length, const char *path, SsimCsvLineFn fn,
                                gpointer data, GError **error);

/* Splits `s[0 .. len)` into line->fields with libcsv (strict).  FALSE with
 * "file:line:column: csv: libcsv's message" (SSIM_CONFIG_ERROR_PARSE), the column being len + 1
 * whichever byte libcsv refused. */
gboolean ssim_csv_line_split(SsimCsvLine *line, const char *s, gsize len, GError **error);

/* The fields of the last split (borrowed) and their count. */
static inline const SsimCsvField *ssim_csv_line_fields(const SsimCsvLine *line)
{
    return (const SsimCsvField *)(const void *)line->fields->data;
}

static inline guint ssim_csv_line_n_fields(const SsimCsvLine *line)
{
    return line->fields->len;
}

/* Sets "file:line:col: field: message" (SSIM_CONFIG_ERROR_VALUE) and returns FALSE, so that a
 * check reads `return ssim_csv_line_fail(...)`. */
gboolean ssim_csv_line_fail(const SsimCsvLine *line, GError **error, guint col, const char *field,
                            const char *format, ...) G_GNUC_PRINTF(5, 6);

/* Appends `s` as one CSV field: as is, or quoted (with '"' doubled) when it holds a comma, a
 * quote or a line break. */
void ssim_csv_append_text(GString *out, const char *s);

/* Reads a whole file for the line reader; NULL with "path: why" (SSIM_CONFIG_ERROR_IO). */
char *ssim_csv_read_file(const char *path, gsize *length, GError **error);

G_END_DECLS
