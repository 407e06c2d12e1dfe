/*
 * The measured-runs table of include/shiftsim/runs.h: the `# shiftsim-runs v2` CSV (and v1, which
 * is read unchanged), its reader and its writer.
 *
 * Versions.  v2 adds two configuration columns after `seq_parallel`: `zero` (the ZeRO stage) and
 * `cross_node_tp` (tensor-parallel groups may span nodes).  A v1 file has neither and reads as
 * if both cells were empty (stage 0, off).  v2 may carry the optional columns `stage_layers` and
 * `options` after cross_node_tp; the header says which (it is matched name by name).  The reader
 * keeps a logical column list and, per variant, the file position of each; the writer always
 * writes v2, with the optional columns only when some row needs them.
 *
 * Reading.  The version line and `# key = value` metadata lines come first; then the header,
 * which must be the version's header exactly; then one run a line.  Each data line goes through
 * libcsv in strict mode, fed one byte at a time so the reader knows the column of every field
 * (a field starts right after the delimiter that ended the previous one; src/core/csvline.h);
 * fields cannot span lines.  A `#` line between rows is a comment.  The first error stops the
 * read and reads `file:line:column: field: what is wrong`.
 *
 * Invariants: a run in SsimRuns has passed the row checks (positive counts, known recompute, a
 * supported ZeRO stage, a positive measurement, a source), whoever added it through the reader;
 * the writer prints each number in the shortest decimal that reads back to the same double, so
 * load(write(r)) == r.
 */
#include <shiftsim/runs.h>

#include "src/core/csvline.h"

#include <math.h>
#include <string.h>

struct SsimRuns {
    char *path;
    GStringChunk *paths; /* the rows' paths, interned: one pointer per file */
    GArray *rows;        /* SsimMeasuredRun */
    GPtrArray *meta_k;   /* char* */
    GPtrArray *meta_v;   /* char* */
};

/* The logical columns; a version places them (v1 has no zero, cross_node_tp). */
enum {
    C_MODEL,
    C_LAYERS,
    C_HIDDEN,
    C_HEADS,
    C_FFN,
    C_VOCAB,
    C_SEQ,
    C_DTYPE,
    C_CLUSTER,
    C_NODES,
    C_DP,
    C_TP,
    C_PP,
    C_V,
    C_MB,
    C_GBS,
    C_SCHEDULE,
    C_RECOMPUTE,
    C_SP,
    C_ZERO,
    C_XTP,
    C_MS,
    C_TFLOPS,
    C_SOURCE,
    C_STAGES,
    C_OPTIONS,
    C_N
};

static const char *const column_names[C_N] = {"model",
                                              "layers",
                                              "hidden",
                                              "heads",
                                              "ffn",
                                              "vocab",
                                              "seq_len",
                                              "dtype",
                                              "cluster",
                                              "nodes",
                                              "dp",
                                              "tp",
                                              "pp",
                                              "vstages",
                                              "microbatch",
                                              "global_batch",
                                              "schedule",
                                              "recompute",
                                              "seq_parallel",
                                              "zero",
                                              "cross_node_tp",
                                              "iteration_ms",
                                              "tflops_per_gpu",
                                              "source",
                                              "stage_layers",
                                              "options"};

/* A version of the format: its first line and its columns in file order. */
typedef struct {
    const char *version_line;
    const char *header;
    guint n_columns;
    gint8 position[C_N]; /* file column of each logical column; -1: not in this version */
} RunsVersion;

static const RunsVersion versions[] = {
    {SSIM_RUNS_VERSION_LINE_V1,
     SSIM_RUNS_HEADER_V1,
     SSIM_RUNS_N_COLUMNS_V1,
     {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12,
      13, 14, 15, 16, 17, 18, -1, -1, 19, 20, 21, -1, -1}},
    {SSIM_RUNS_VERSION_LINE, SSIM_RUNS_HEADER, SSIM_RUNS_N_COLUMNS, {0,  1,  2,  3,  4,  5,  6,
                                                                     7,  8,  9,  10, 11, 12, 13,
                                                                     14, 15, 16, 17, 18, 19, 20,
                                                                     21, 22, 23, -1, -1}},
    /* v2 with the optional columns (chosen by the header's names). */
    {SSIM_RUNS_VERSION_LINE,
     SSIM_RUNS_HEADER_STAGES,
     SSIM_RUNS_N_COLUMNS_STAGES,
     {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12,
      13, 14, 15, 16, 17, 18, 19, 20, 22, 23, 24, 21, -1}},
    {SSIM_RUNS_VERSION_LINE,
     SSIM_RUNS_HEADER_OPTIONS,
     SSIM_RUNS_N_COLUMNS + 1,
     {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12,
      13, 14, 15, 16, 17, 18, 19, 20, 22, 23, 24, -1, 21}},
    {SSIM_RUNS_VERSION_LINE,
     SSIM_RUNS_HEADER_STAGES_OPTIONS,
     SSIM_RUNS_N_COLUMNS + 2,
     {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12,
      13, 14, 15, 16, 17, 18, 19, 20, 23, 24, 25, 21, 22}},
};

void ssim_measured_run_init(SsimMeasuredRun *run)
{
    memset(run, 0, sizeof *run);
    run->dtype = SSIM_DTYPE_BF16;
    run->position = SSIM_POSITION_LEARNED;
    run->nodes = 1;
    ssim_parallel_init(&run->par);
}

SsimRuns *ssim_runs_new(const char *path)
{
    SsimRuns *r = g_new0(SsimRuns, 1);
    r->path = g_strdup(path ? path : "<runs>");
    r->paths = g_string_chunk_new(256);
    r->rows = g_array_new(FALSE, FALSE, sizeof(SsimMeasuredRun));
    r->meta_k = g_ptr_array_new_with_free_func(g_free);
    r->meta_v = g_ptr_array_new_with_free_func(g_free);
    return r;
}

void ssim_runs_free(SsimRuns *runs)
{
    if (runs == NULL)
        return;
    g_free(runs->path);
    g_string_chunk_free(runs->paths);
    g_array_free(runs->rows, TRUE);
    g_ptr_array_free(runs->meta_k, TRUE);
    g_ptr_array_free(runs->meta_v, TRUE);
    g_free(runs);
}

void ssim_runs_add(SsimRuns *runs, const SsimMeasuredRun *run)
{
    SsimMeasuredRun copy = *run;
    copy.path = g_string_chunk_insert_const(runs->paths, run->path ? run->path : runs->path);
    g_array_append_val(runs->rows, copy);
}

guint ssim_runs_n(const SsimRuns *runs)
{
    return runs->rows->len;
}

const SsimMeasuredRun *ssim_runs_get(const SsimRuns *runs, guint i)
{
    g_return_val_if_fail(i < runs->rows->len, NULL);
    return &g_array_index(runs->rows, SsimMeasuredRun, i);
}

const char *ssim_runs_path(const SsimRuns *runs)
{
    return runs->path;
}

void ssim_runs_set_meta(SsimRuns *runs, const char *key, const char *value)
{
    for (guint i = 0; i < runs->meta_k->len; i++)
        if (strcmp(runs->meta_k->pdata[i], key) == 0) {
            g_free(runs->meta_v->pdata[i]);
            runs->meta_v->pdata[i] = g_strdup(value);
            return;
        }
    g_ptr_array_add(runs->meta_k, g_strdup(key));
    g_ptr_array_add(runs->meta_v, g_strdup(value));
}

const char *ssim_runs_get_meta(const SsimRuns *runs, const char *key)
{
    for (guint i = 0; i < runs->meta_k->len; i++)
        if (strcmp(runs->meta_k->pdata[i], key) == 0)
            return runs->meta_v->pdata[i];
    return NULL;
}

gboolean ssim_runs_check_only(const SsimRuns *runs)
{
    return g_strcmp0(ssim_runs_get_meta(runs, "use"), "check") == 0;
}

/* ---- reading ---------------------------------------------------------------------------- */

/* An unsigned integer cell: empty gives `dflt` (or an error when required). */
static gboolean cell_uint(const SsimCsvLine *lp, const SsimCsvField *f, int c, gboolean required,
                          guint dflt, guint *out, GError **error)
{
    const char *t = f[c].text;
    if (*t == '\0') {
        if (required)
            return ssim_csv_line_fail(lp, error, f[c].col, column_names[c],
                                      "missing (must be a positive integer)");
        *out = dflt;
        return TRUE;
    }
    char *end = NULL;
    guint64 v = g_ascii_strtoull(t, &end, 10);
    if (end == t || *end != '\0' || !g_ascii_isdigit(t[0]) || v == 0 || v > G_MAXUINT32)
        return ssim_csv_line_fail(lp, error, f[c].col, column_names[c],
                                  "'%s' is not a positive integer", t);
    *out = (guint)v;
    return TRUE;
}

/* A non-negative real cell; empty gives 0. */
static gboolean cell_real(const SsimCsvLine *lp, const SsimCsvField *f, int c, double *out,
                          GError **error)
{
    const char *t = f[c].text;
    if (*t == '\0') {
        *out = 0;
        return TRUE;
    }
    char *end = NULL;
    double v = g_ascii_strtod(t, &end);
    if (end == t || *end != '\0' || !isfinite(v) || v <= 0)
        return ssim_csv_line_fail(lp, error, f[c].col, column_names[c],
                                  "'%s' is not a positive number", t);
    *out = v;
    return TRUE;
}

static gboolean cell_text(const SsimCsvLine *lp, const SsimCsvField *f, int c, char *out,
                          gsize size, GError **error)
{
    if (strlen(f[c].text) >= size)
        return ssim_csv_line_fail(lp, error, f[c].col, column_names[c],
                                  "longer than %zu characters", size - 1);
    g_strlcpy(out, f[c].text, size);
    return TRUE;
}

/* The settings without a column of their own (ssim_parallel_parse_fields()); a field that has
 * one must be given there. */
#define OWN_COLUMN_FIELDS                                                                          \
    (SSIM_PARALLEL_DP | SSIM_PARALLEL_TP | SSIM_PARALLEL_PP | SSIM_PARALLEL_VSTAGES |              \
     SSIM_PARALLEL_MICROBATCH | SSIM_PARALLEL_GLOBAL_BATCH | SSIM_PARALLEL_SCHEDULE |              \
     SSIM_PARALLEL_RECOMPUTE | SSIM_PARALLEL_SEQ_PARALLEL | SSIM_PARALLEL_ZERO |                   \
     SSIM_PARALLEL_CROSS_NODE_TP | SSIM_PARALLEL_STAGE_LAYERS)

/* The options that shape a row's GPT rather than its run: position= (learned, rotary, alibi)
 * and embedding_norm= (on, off), for a row given by shape.  Sets `*taken` when `item` is one. */
static gboolean parse_model_option(const SsimCsvLine *lp, const SsimCsvField *x,
                                   SsimMeasuredRun *run, const char *item, gboolean *taken,
                                   GError **error)
{
    const char *eq = strchr(item, '=');
    g_autofree char *name = g_strndup(item, eq ? (gsize)(eq - item) : strlen(item));
    g_autofree char *key = g_strdelimit(g_ascii_strdown(g_strstrip(name), -1), "-", '_');
    const gboolean position = strcmp(key, "position") == 0;
    *taken = position || strcmp(key, "embedding_norm") == 0;
    if (!*taken)
        return TRUE;
    if (!run->has_shape)
        return ssim_csv_line_fail(lp, error, x->col, "options",
                                  "%s: only a row given by shape takes it (a named model has "
                                  "its own)",
                                  key);
    g_autofree char *value = g_strstrip(g_strdup(eq ? eq + 1 : ""));
    if (position && !ssim_position_from_name(value, &run->position))
        return ssim_csv_line_fail(lp, error, x->col, "options",
                                  "position: '%s' is not learned, rotary or alibi", value);
    g_autoptr(GError) e = NULL;
    if (!position && !ssim_switch_read(key, value, &run->embedding_norm, &e))
        return ssim_csv_line_fail(lp, error, x->col, "options", "%s", e->message);
    return TRUE;
}

static gboolean parse_options(const SsimCsvLine *lp, const SsimCsvField *x, SsimMeasuredRun *run,
                              GError **error)
{
    if (x->text[0] == '\0')
        return TRUE;
    SsimParallel *p = &run->par, q = *p;
    g_auto(GStrv) items = g_strsplit(x->text, ",", -1);
    g_autoptr(GString) rest = g_string_new(NULL);
    for (guint i = 0; items[i]; i++) {
        gboolean taken = FALSE;
        if (!parse_model_option(lp, x, run, items[i], &taken, error))
            return FALSE;
        if (!taken)
            g_string_append_printf(rest, "%s%s", rest->len ? "," : "", items[i]);
    }
    guint64 given = 0;
    g_autoptr(GError) e = NULL;
    if (rest->len > 0 && !ssim_parallel_parse_fields(&q, rest->str, &given, &e))
        return ssim_csv_line_fail(lp, error, x->col, "options", "%s", e->message);
    if (given & OWN_COLUMN_FIELDS)
        return ssim_csv_line_fail(
            lp, error, x->col, "options",
            "'%s' sets a field that has a column of its own (options take "
            "bucket, tp_comm, order, placement, step_costs, tp_overlap, "
            "attention, transformer_impl, rmsnorm, recompute_layers, fp8, tp_comm_overlap, "
            "cross_entropy, launch_blocking, cp, defer_embedding_wgrad, first_stage_layers, "
            "last_stage_layers, embedding_in_split, loss_in_split, overlap_param_gather, "
            "fsdp_root; and "
            "position, "
            "embedding_norm for a row given by shape)",
            x->text);
    *p = q;
    return TRUE;
}

static gboolean parse_row(const SsimCsvLine *lp, const SsimCsvField *f, SsimMeasuredRun *run,
                          GError **error)
{
    ssim_measured_run_init(run);
    run->line = lp->line;
    if (!cell_text(lp, f, C_MODEL, run->model, sizeof run->model, error) ||
        !cell_text(lp, f, C_CLUSTER, run->cluster, sizeof run->cluster, error) ||
        !cell_text(lp, f, C_SOURCE, run->source, sizeof run->source, error))
        return FALSE;
    run->has_shape = f[C_LAYERS].text[0] != '\0';
    if (run->has_shape) {
        if (!cell_uint(lp, f, C_LAYERS, TRUE, 0, &run->layers, error) ||
            !cell_uint(lp, f, C_HIDDEN, TRUE, 0, &run->hidden, error) ||
            !cell_uint(lp, f, C_HEADS, TRUE, 0, &run->heads, error) ||
            !cell_uint(lp, f, C_FFN, FALSE, 4 * run->hidden, &run->ffn, error) ||
            !cell_uint(lp, f, C_VOCAB, TRUE, 0, &run->vocab, error) ||
            !cell_uint(lp, f, C_SEQ, TRUE, 0, &run->seq_len, error))
            return FALSE;
        if (run->model[0] == '\0')
            g_snprintf(run->model, sizeof run->model, "gpt-l%u-h%u", run->layers, run->hidden);
    } else {
        if (run->model[0] == '\0')
            return ssim_csv_line_fail(lp, error, f[C_MODEL].col, "model",
                                      "missing (a model name, or the shape columns)");
        for (int c = C_HIDDEN; c <= C_SEQ; c++)
            if (f[c].text[0] != '\0')
                return ssim_csv_line_fail(lp, error, f[c].col, column_names[c],
                                          "given without layers (a shape needs layers, "
                                          "hidden, heads, vocab and seq_len)");
    }
    run->has_dtype = f[C_DTYPE].text[0] != '\0';
    if (run->has_dtype && !ssim_dtype_from_name(f[C_DTYPE].text, &run->dtype))
        return ssim_csv_line_fail(lp, error, f[C_DTYPE].col, "dtype",
                                  "'%s' is not bf16, fp16 or fp32", f[C_DTYPE].text);
    if (run->cluster[0] == '\0')
        return ssim_csv_line_fail(lp, error, f[C_CLUSTER].col, "cluster",
                                  "missing (a cluster name or path)");
    if (run->source[0] == '\0')
        return ssim_csv_line_fail(lp, error, f[C_SOURCE].col, "source",
                                  "missing (where the measurement comes from)");
    SsimParallel *p = &run->par;
    if (!cell_uint(lp, f, C_NODES, FALSE, 1, &run->nodes, error) ||
        !cell_uint(lp, f, C_DP, TRUE, 0, &p->dp, error) ||
        !cell_uint(lp, f, C_TP, TRUE, 0, &p->tp, error) ||
        !cell_uint(lp, f, C_PP, TRUE, 0, &p->pp, error) ||
        !cell_uint(lp, f, C_V, FALSE, 1, &p->virtual_stages, error) ||
        !cell_uint(lp, f, C_MB, TRUE, 0, &p->microbatch, error) ||
        !cell_uint(lp, f, C_GBS, TRUE, 0, &p->global_batch, error))
        return FALSE;
    static const int text_cols[] = {C_SCHEDULE, C_RECOMPUTE, C_SP, C_ZERO, C_XTP, C_STAGES};
    static const char *const keys[] = {"schedule", "recompute",     "sp",
                                       "zero",     "cross_node_tp", "stage_layers"};
    for (guint i = 0; i < G_N_ELEMENTS(text_cols); i++) {
        const SsimCsvField *x = &f[text_cols[i]];
        g_autoptr(GError) e = NULL;
        if (x->text[0] != '\0' && !ssim_parallel_set(p, keys[i], x->text, &e)) {
            const char *msg = e->message, *colon = strstr(msg, ": ");
            if (colon && g_str_has_prefix(msg, keys[i]) && colon == msg + strlen(keys[i]))
                msg = colon + 2; /* "recompute: ..." -> "..." */
            return ssim_csv_line_fail(lp, error, x->col, column_names[text_cols[i]], "%s", msg);
        }
    }
    if (!parse_options(lp, &f[C_OPTIONS], run, error))
        return FALSE;
    if (!cell_real(lp, f, C_MS, &run->iteration_ms, error) ||
        !cell_real(lp, f, C_TFLOPS, &run->tflops_per_gpu, error))
        return FALSE;
    if (run->iteration_ms == 0 && run->tflops_per_gpu == 0)
        return ssim_csv_line_fail(lp, error, f[C_MS].col, "iteration_ms",
                                  "missing (give iteration_ms or tflops_per_gpu)");
    return TRUE;
}

typedef struct {
    SsimRuns *runs;
    const RunsVersion *version; /* NULL until the first line is read */
    gboolean seen_header;
} ReadState;

static gboolean runs_line(SsimCsvLine *lp, const char *s, gsize len, gpointer data, GError **error)
{
    ReadState *st = data;
    if (st->version == NULL) {
        for (guint v = 0; v < G_N_ELEMENTS(versions) && st->version == NULL; v++)
            if (len == strlen(versions[v].version_line) &&
                memcmp(s, versions[v].version_line, len) == 0)
                st->version = &versions[v];
        if (st->version == NULL) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VERSION,
                        "%s:%u:1: version: the first line must be '%s' (or '%s')", lp->path,
                        lp->line, SSIM_RUNS_VERSION_LINE, SSIM_RUNS_VERSION_LINE_V1);
            return FALSE;
        }
        return TRUE;
    }
    if (len == 0)
        return TRUE;
    if (s[0] == '#') {
        if (!st->seen_header) {
            g_autofree char *l = g_strndup(s + 1, len - 1);
            char *eq = strchr(l, '=');
            if (eq) {
                *eq = '\0';
                const char *key = g_strstrip(l), *value = g_strstrip(eq + 1);
                if (strcmp(key, "use") == 0 && strcmp(value, "fit") != 0 &&
                    strcmp(value, "check") != 0) {
                    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                                "%s:%u:1: use: '%s' is not fit or check", lp->path, lp->line,
                                value);
                    return FALSE;
                }
                ssim_runs_set_meta(st->runs, key, value);
            }
        }
        return TRUE;
    }
    if (!ssim_csv_line_split(lp, s, len, error))
        return FALSE;
    const SsimCsvField *f = ssim_csv_line_fields(lp);
    guint nf = ssim_csv_line_n_fields(lp);
    /* A version whose optional columns are there: the variant whose header this is, name by
     * name (else the first with as many columns, whose names the check below reports). */
    if (!st->seen_header) {
        const RunsVersion *by_count = NULL, *by_names = NULL;
        for (guint v = 0; v < G_N_ELEMENTS(versions); v++) {
            const RunsVersion *cand = &versions[v];
            if (cand->n_columns != nf || strcmp(cand->version_line, st->version->version_line) != 0)
                continue;
            by_count = by_count ? by_count : cand;
            gboolean same = TRUE;
            for (int c = 0; c < C_N && same; c++)
                same = cand->position[c] < 0 ||
                       strcmp(f[cand->position[c]].text, column_names[c]) == 0;
            by_names = by_names ? by_names : (same ? cand : NULL);
        }
        st->version = by_names ? by_names : by_count ? by_count : st->version;
    }
    const RunsVersion *ver = st->version;
    /* The file's columns in order: the logical column at each position. */
    int at[C_N];
    for (int c = 0; c < C_N; c++)
        if (ver->position[c] >= 0)
            at[ver->position[c]] = c;
    if (!st->seen_header) {
        for (guint c = 0; c < MIN(nf, ver->n_columns); c++)
            if (strcmp(f[c].text, column_names[at[c]]) != 0) {
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                            "%s:%u:%u: header: column %u is '%s', expected '%s' (the header is "
                            "'%s')",
                            lp->path, lp->line, f[c].col, c + 1, f[c].text, column_names[at[c]],
                            ver->header);
                return FALSE;
            }
        if (nf != ver->n_columns) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                        "%s:%u:1: header: %u columns, expected %u ('%s')", lp->path, lp->line, nf,
                        ver->n_columns, ver->header);
            return FALSE;
        }
        st->seen_header = TRUE;
        return TRUE;
    }
    if (nf != ver->n_columns) {
        guint col = nf > ver->n_columns ? f[ver->n_columns].col : lp->col;
        const char *name = nf > ver->n_columns ? "columns" : column_names[at[nf]];
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                    "%s:%u:%u: %s: the row has %u fields, expected %u", lp->path, lp->line, col,
                    name, nf, ver->n_columns);
        return FALSE;
    }
    /* The row by logical column; a column this version lacks reads as an empty cell. */
    SsimCsvField cells[C_N];
    static char empty[] = "";
    for (int c = 0; c < C_N; c++)
        cells[c] = ver->position[c] >= 0 ? f[ver->position[c]] : (SsimCsvField){empty, lp->col};
    SsimMeasuredRun run;
    if (!parse_row(lp, cells, &run, error))
        return FALSE;
    ssim_runs_add(st->runs, &run);
    return TRUE;
}

SsimRuns *ssim_runs_load_data(const char *text, gssize length, const char *path, GError **error)
{
    g_return_val_if_fail(text != NULL, NULL);
    gsize len = length < 0 ? strlen(text) : (gsize)length;
    g_autoptr(SsimRuns) runs = ssim_runs_new(path);
    ReadState st = {.runs = runs};
    if (!ssim_csv_for_each_line(text, len, runs->path, runs_line, &st, error))
        return NULL;
    if (st.version == NULL || !st.seen_header) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MISSING,
                    "%s:1:1: %s: missing (a runs file starts '%s', then the header)", runs->path,
                    st.version ? "header" : "version", SSIM_RUNS_VERSION_LINE);
        return NULL;
    }
    return g_steal_pointer(&runs);
}

SsimRuns *ssim_runs_load(const char *path, GError **error)
{
    gsize len = 0;
    g_autofree char *text = ssim_csv_read_file(path, &len, error);
    return text ? ssim_runs_load_data(text, (gssize)len, path, error) : NULL;
}

/* ---- writing ---------------------------------------------------------------------------- */

/* The shortest %g form that reads back to v. */
static void append_real(GString *out, double v)
{
    if (v == 0)
        return;
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    for (int prec = 1; prec <= 17; prec++) {
        char fmt[8];
        g_snprintf(fmt, sizeof fmt, "%%.%dg", prec);
        g_ascii_formatd(buf, sizeof buf, fmt, v);
        if (g_ascii_strtod(buf, NULL) == v)
            break;
    }
    g_string_append(out, buf);
}

static void append_uint(GString *out, guint v, gboolean show)
{
    if (show)
        g_string_append_printf(out, "%u", v);
}

/* A row's settings without a column (parse_options()'s), in ssim_parallel_to_string()'s words,
 * those that differ from a default configuration (sequence parallelism implies its tp_comm),
 * then its GPT's position and embedding norm where they differ from learned and off; "" when
 * none does.  Caller frees. */
static char *row_options(const SsimMeasuredRun *r)
{
    const SsimParallel *p = &r->par;
    static const char *const keys[] = {"bucket",
                                       "tp_comm",
                                       "order",
                                       "placement",
                                       "step_costs",
                                       "tp_overlap",
                                       "attention",
                                       "transformer_impl",
                                       "fp8",
                                       "tp_comm_overlap",
                                       "cross_entropy",
                                       "launch_blocking",
                                       "rmsnorm",
                                       "recompute_layers",
                                       "cp",
                                       "defer_embedding_wgrad",
                                       "first_stage_layers",
                                       "last_stage_layers",
                                       "embedding_in_split",
                                       "loss_in_split",
                                       "overlap_param_gather",
                                       "fsdp_root",
                                       NULL};
    SsimParallel d;
    ssim_parallel_init(&d);
    if (p->sequence_parallel)
        d.tp_comm = SSIM_TP_COMM_RS_AG;
    g_autofree char *mine = ssim_parallel_to_string(p), *dflt = ssim_parallel_to_string(&d);
    g_auto(GStrv) items = g_strsplit(mine, ",", -1), base = g_strsplit(dflt, ",", -1);
    GString *o = g_string_new(NULL);
    for (guint i = 0; items[i]; i++) {
        g_autofree char *key = g_strndup(items[i], strcspn(items[i], "="));
        if (g_strv_contains(keys, key) && !g_strv_contains((const char *const *)base, items[i]))
            g_string_append_printf(o, "%s%s", o->len ? "," : "", items[i]);
    }
    if (r->has_shape && r->position != SSIM_POSITION_LEARNED)
        g_string_append_printf(o, "%sposition=%s", o->len ? "," : "",
                               ssim_position_name(r->position));
    if (r->has_shape && r->embedding_norm)
        g_string_append_printf(o, "%sembedding_norm=on", o->len ? "," : "");
    return g_string_free(o, FALSE);
}

GString *ssim_runs_write(const SsimRuns *runs)
{
    GString *out = g_string_new(SSIM_RUNS_VERSION_LINE "\n");
    for (guint i = 0; i < runs->meta_k->len; i++)
        g_string_append_printf(out, "# %s = %s\n", (char *)runs->meta_k->pdata[i],
                               (char *)runs->meta_v->pdata[i]);
    gboolean stages = FALSE, options = FALSE;
    g_autoptr(GPtrArray) opts = g_ptr_array_new_with_free_func(g_free); /* each row's */
    for (guint i = 0; i < runs->rows->len; i++) {
        const SsimMeasuredRun *r = &g_array_index(runs->rows, SsimMeasuredRun, i);
        const SsimParallel *p = &r->par;
        char *o = row_options(r);
        g_ptr_array_add(opts, o);
        stages |= ssim_parallel_uneven(p) || p->balance_layers;
        options |= o[0] != '\0';
    }
    g_string_append(out, stages && options ? SSIM_RUNS_HEADER_STAGES_OPTIONS "\n"
                         : stages          ? SSIM_RUNS_HEADER_STAGES "\n"
                         : options         ? SSIM_RUNS_HEADER_OPTIONS "\n"
                                           : SSIM_RUNS_HEADER "\n");
    for (guint i = 0; i < runs->rows->len; i++) {
        const SsimMeasuredRun *r = &g_array_index(runs->rows, SsimMeasuredRun, i);
        const SsimParallel *p = &r->par;
        ssim_csv_append_text(out, r->model);
        g_string_append_c(out, ',');
        append_uint(out, r->layers, r->has_shape);
        g_string_append_c(out, ',');
        append_uint(out, r->hidden, r->has_shape);
        g_string_append_c(out, ',');
        append_uint(out, r->heads, r->has_shape);
        g_string_append_c(out, ',');
        append_uint(out, r->ffn, r->has_shape);
        g_string_append_c(out, ',');
        append_uint(out, r->vocab, r->has_shape);
        g_string_append_c(out, ',');
        append_uint(out, r->seq_len, r->has_shape);
        g_string_append_printf(out, ",%s,",
                               r->has_shape || r->has_dtype ? ssim_dtype_name(r->dtype) : "");
        ssim_csv_append_text(out, r->cluster);
        g_string_append_printf(out, ",%u,%u,%u,%u,%u,%u,%u,", r->nodes, p->dp, p->tp, p->pp,
                               p->virtual_stages, p->microbatch, p->global_batch);
        ssim_csv_append_text(out, p->schedule);
        g_string_append_printf(out, ",%s,%s,%u,%s,", ssim_recompute_name(p->recompute),
                               p->sequence_parallel ? "on" : "off", p->zero_stage,
                               p->allow_cross_node_tp ? "on" : "off");
        if (stages) {
            ssim_parallel_append_stage_layers(out, p);
            g_string_append_c(out, ',');
        }
        if (options) {
            ssim_csv_append_text(out, opts->pdata[i]);
            g_string_append_c(out, ',');
        }
        append_real(out, r->iteration_ms);
        g_string_append_c(out, ',');
        append_real(out, r->tflops_per_gpu);
        g_string_append_c(out, ',');
        ssim_csv_append_text(out, r->source);
        g_string_append_c(out, '\n');
    }
    return out;
}
