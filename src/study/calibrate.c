/*
 * Measured runs: the `# shiftsim-runs v1` CSV (reader, writer, vTrain converter), the run set
 * that simulates them, and the error statistics and reports of `shiftsim validate`.
 *
 * Reading.  The version line and `# key = value` metadata lines come first; then the header,
 * which must be SSIM_RUNS_HEADER exactly; then one run a line.  Each data line goes through
 * libcsv in strict mode, fed one byte at a time so the reader knows the column of every field
 * (a field starts right after the delimiter that ended the previous one); fields cannot span
 * lines.  A `#` line between rows is a comment.  The first error stops the read and reads
 * `file:line:column: field: what is wrong`.
 *
 * Invariants: a run in SsimRuns has passed the row checks (positive counts, known recompute, a
 * positive measurement, a source), whoever added it through the reader; the writer prints each
 * number in the shortest decimal that reads back to the same double, so load(write(r)) == r.
 * Predictions never depend on the thread count: each row is simulated alone, on its own copy
 * of its cluster.
 */
#include <shiftsim/calibrate.h>
#include <shiftsim/plot.h>
#include <shiftsim/sim.h>

#include <csv.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct SsimRuns {
    char *path;
    GArray *rows;      /* SsimMeasuredRun */
    GPtrArray *meta_k; /* char* */
    GPtrArray *meta_v; /* char* */
};

static const char *const column_names[SSIM_RUNS_N_COLUMNS] = {
    "model",        "layers",       "hidden",         "heads",        "ffn",      "vocab",
    "seq_len",      "dtype",        "cluster",        "nodes",        "dp",       "tp",
    "pp",           "vstages",      "microbatch",     "global_batch", "schedule", "recompute",
    "seq_parallel", "iteration_ms", "tflops_per_gpu", "source"};

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
    C_MS,
    C_TFLOPS,
    C_SOURCE
};

void ssim_measured_run_init(SsimMeasuredRun *run)
{
    memset(run, 0, sizeof *run);
    run->dtype = SSIM_DTYPE_BF16;
    run->nodes = 1;
    ssim_parallel_init(&run->par);
}

SsimRuns *ssim_runs_new(const char *path)
{
    SsimRuns *r = g_new0(SsimRuns, 1);
    r->path = g_strdup(path ? path : "<runs>");
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
    g_array_free(runs->rows, TRUE);
    g_ptr_array_free(runs->meta_k, TRUE);
    g_ptr_array_free(runs->meta_v, TRUE);
    g_free(runs);
}

void ssim_runs_add(SsimRuns *runs, const SsimMeasuredRun *run)
{
    g_array_append_val(runs->rows, *run);
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

/* ---- reading ---------------------------------------------------------------------------- */

typedef struct {
    char *text;
    guint col;
} Field;

typedef struct {
    const char *path;
    guint line;
    guint col;         /* column of the byte being fed (1-based) */
    guint field_start; /* column where the current field started */
    GArray *fields;    /* Field */
} LineParse;

static void field_clear(gpointer p)
{
    g_free(((Field *)p)->text);
}

static void on_field(void *s, size_t len, void *data)
{
    LineParse *lp = data;
    Field f = {g_strndup(s ? s : "", len), lp->field_start};
    g_array_append_val(lp->fields, f);
    lp->field_start = lp->col + 1;
}

/* Splits one line into fields with libcsv (strict).  FALSE with an error at the column. */
static gboolean split_line(LineParse *lp, const char *s, gsize len, GError **error)
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
    lp->col = (guint)len + 1;
    if (ok && csv_fini(&p, on_field, NULL, lp) != 0)
        ok = FALSE;
    if (!ok)
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE, "%s:%u:%u: csv: %s",
                    lp->path, lp->line, lp->col, csv_strerror(csv_error(&p)));
    csv_free(&p);
    return ok;
}

#define FAIL_AT(col, field, ...)                                                                   \
    do {                                                                                           \
        g_autofree char *why_ = g_strdup_printf(__VA_ARGS__);                                      \
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "%s:%u:%u: %s: %s",         \
                    lp->path, lp->line, (col), (field), why_);                                     \
        return FALSE;                                                                              \
    } while (0)

/* An unsigned integer cell: empty gives `dflt` (or an error when required). */
static gboolean cell_uint(LineParse *lp, const Field *f, int c, gboolean required, guint dflt,
                          guint *out, GError **error)
{
    const char *t = f[c].text;
    if (*t == '\0') {
        if (required)
            FAIL_AT(f[c].col, column_names[c], "missing (must be a positive integer)");
        *out = dflt;
        return TRUE;
    }
    char *end = NULL;
    guint64 v = g_ascii_strtoull(t, &end, 10);
    if (end == t || *end != '\0' || !g_ascii_isdigit(t[0]) || v == 0 || v > G_MAXUINT32)
        FAIL_AT(f[c].col, column_names[c], "'%s' is not a positive integer", t);
    *out = (guint)v;
    return TRUE;
}

/* A non-negative real cell; empty gives 0. */
static gboolean cell_real(LineParse *lp, const Field *f, int c, double *out, GError **error)
{
    const char *t = f[c].text;
    if (*t == '\0') {
        *out = 0;
        return TRUE;
    }
    char *end = NULL;
    double v = g_ascii_strtod(t, &end);
    if (end == t || *end != '\0' || !isfinite(v) || v <= 0)
        FAIL_AT(f[c].col, column_names[c], "'%s' is not a positive number", t);
    *out = v;
    return TRUE;
}

static gboolean cell_text(LineParse *lp, const Field *f, int c, char *out, gsize size,
                          GError **error)
{
    if (strlen(f[c].text) >= size)
        FAIL_AT(f[c].col, column_names[c], "longer than %zu characters", size - 1);
    g_strlcpy(out, f[c].text, size);
    return TRUE;
}

static gboolean parse_row(LineParse *lp, const Field *f, SsimMeasuredRun *run, GError **error)
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
            FAIL_AT(f[C_MODEL].col, "model", "missing (a model name, or the shape columns)");
        for (int c = C_HIDDEN; c <= C_SEQ; c++)
            if (f[c].text[0] != '\0')
                FAIL_AT(f[c].col, column_names[c],
                        "given without layers (a shape needs layers, "
                        "hidden, heads, vocab and seq_len)");
    }
    if (f[C_DTYPE].text[0] != '\0' && !ssim_dtype_from_name(f[C_DTYPE].text, &run->dtype))
        FAIL_AT(f[C_DTYPE].col, "dtype", "'%s' is not bf16, fp16 or fp32", f[C_DTYPE].text);
    if (run->cluster[0] == '\0')
        FAIL_AT(f[C_CLUSTER].col, "cluster", "missing (a cluster name or path)");
    if (run->source[0] == '\0')
        FAIL_AT(f[C_SOURCE].col, "source", "missing (where the measurement comes from)");
    SsimParallel *p = &run->par;
    if (!cell_uint(lp, f, C_NODES, FALSE, 1, &run->nodes, error) ||
        !cell_uint(lp, f, C_DP, TRUE, 0, &p->dp, error) ||
        !cell_uint(lp, f, C_TP, TRUE, 0, &p->tp, error) ||
        !cell_uint(lp, f, C_PP, TRUE, 0, &p->pp, error) ||
        !cell_uint(lp, f, C_V, FALSE, 1, &p->virtual_stages, error) ||
        !cell_uint(lp, f, C_MB, TRUE, 0, &p->microbatch, error) ||
        !cell_uint(lp, f, C_GBS, TRUE, 0, &p->global_batch, error))
        return FALSE;
    static const int text_cols[] = {C_SCHEDULE, C_RECOMPUTE, C_SP};
    static const char *const keys[] = {"schedule", "recompute", "sp"};
    for (guint i = 0; i < G_N_ELEMENTS(text_cols); i++) {
        const Field *x = &f[text_cols[i]];
        g_autoptr(GError) e = NULL;
        if (x->text[0] != '\0' && !ssim_parallel_set(p, keys[i], x->text, &e)) {
            const char *msg = e->message, *colon = strstr(msg, ": ");
            if (colon && g_str_has_prefix(msg, keys[i]) && colon == msg + strlen(keys[i]))
                msg = colon + 2; /* "recompute: ..." -> "..." */
            FAIL_AT(x->col, column_names[text_cols[i]], "%s", msg);
        }
    }
    if (!cell_real(lp, f, C_MS, &run->iteration_ms, error) ||
        !cell_real(lp, f, C_TFLOPS, &run->tflops_per_gpu, error))
        return FALSE;
    if (run->iteration_ms == 0 && run->tflops_per_gpu == 0)
        FAIL_AT(f[C_MS].col, "iteration_ms", "missing (give iteration_ms or tflops_per_gpu)");
    return TRUE;
}

/* Calls `line_fn` for each line of text (without its newline, CR stripped). */
typedef gboolean (*LineFn)(LineParse *lp, const char *s, gsize len, gpointer data, GError **e);

static gboolean for_each_line(const char *text, gsize length, const char *path, LineFn fn,
                              gpointer data, GError **error)
{
    LineParse lp = {.path = path, .fields = g_array_new(FALSE, FALSE, sizeof(Field))};
    g_array_set_clear_func(lp.fields, field_clear);
    gsize i = 0;
    gboolean ok = TRUE;
    while (i < length && ok) {
        gsize j = i;
        while (j < length && text[j] != '\n')
            j++;
        gsize len = j - i;
        if (len > 0 && text[i + len - 1] == '\r')
            len--;
        lp.line++;
        ok = fn(&lp, text + i, len, data, error);
        i = j + 1;
    }
    g_array_free(lp.fields, TRUE);
    return ok;
}

typedef struct {
    SsimRuns *runs;
    gboolean seen_version, seen_header;
} ReadState;

static gboolean runs_line(LineParse *lp, const char *s, gsize len, gpointer data, GError **error)
{
    ReadState *st = data;
    if (!st->seen_version) {
        if (len != strlen(SSIM_RUNS_VERSION_LINE) || memcmp(s, SSIM_RUNS_VERSION_LINE, len) != 0) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VERSION,
                        "%s:%u:1: version: the first line must be '%s'", lp->path, lp->line,
                        SSIM_RUNS_VERSION_LINE);
            return FALSE;
        }
        st->seen_version = TRUE;
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
                ssim_runs_set_meta(st->runs, g_strstrip(l), g_strstrip(eq + 1));
            }
        }
        return TRUE;
    }
    if (!split_line(lp, s, len, error))
        return FALSE;
    const Field *f = (const Field *)lp->fields->data;
    guint nf = lp->fields->len;
    if (!st->seen_header) {
        for (guint c = 0; c < MIN(nf, (guint)SSIM_RUNS_N_COLUMNS); c++)
            if (strcmp(f[c].text, column_names[c]) != 0) {
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                            "%s:%u:%u: header: column %u is '%s', expected '%s' (the header is "
                            "'%s')",
                            lp->path, lp->line, f[c].col, c + 1, f[c].text, column_names[c],
                            SSIM_RUNS_HEADER);
                return FALSE;
            }
        if (nf != SSIM_RUNS_N_COLUMNS) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                        "%s:%u:1: header: %u columns, expected %d ('%s')", lp->path, lp->line, nf,
                        SSIM_RUNS_N_COLUMNS, SSIM_RUNS_HEADER);
            return FALSE;
        }
        st->seen_header = TRUE;
        return TRUE;
    }
    if (nf != SSIM_RUNS_N_COLUMNS) {
        guint col = nf > SSIM_RUNS_N_COLUMNS ? f[SSIM_RUNS_N_COLUMNS].col : lp->col;
        const char *name = nf > SSIM_RUNS_N_COLUMNS ? "columns" : column_names[nf];
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                    "%s:%u:%u: %s: the row has %u fields, expected %d", lp->path, lp->line, col,
                    name, nf, SSIM_RUNS_N_COLUMNS);
        return FALSE;
    }
    SsimMeasuredRun run;
    if (!parse_row(lp, f, &run, error))
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
    if (!for_each_line(text, len, runs->path, runs_line, &st, error))
        return NULL;
    if (!st.seen_version || !st.seen_header) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MISSING,
                    "%s:1:1: %s: missing (a runs file starts '%s', then the header)", runs->path,
                    st.seen_version ? "header" : "version", SSIM_RUNS_VERSION_LINE);
        return NULL;
    }
    return g_steal_pointer(&runs);
}

static char *read_text(const char *path, gsize *len, GError **error)
{
    char *text = NULL;
    GError *local = NULL;
    if (!g_file_get_contents(path, &text, len, &local)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO, "%s: %s", path, local->message);
        g_error_free(local);
        return NULL;
    }
    return text;
}

SsimRuns *ssim_runs_load(const char *path, GError **error)
{
    gsize len = 0;
    g_autofree char *text = read_text(path, &len, error);
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

static void append_text(GString *out, const char *s)
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

static void append_uint(GString *out, guint v, gboolean show)
{
    if (show)
        g_string_append_printf(out, "%u", v);
}

GString *ssim_runs_write(const SsimRuns *runs)
{
    GString *out = g_string_new(SSIM_RUNS_VERSION_LINE "\n");
    for (guint i = 0; i < runs->meta_k->len; i++)
        g_string_append_printf(out, "# %s = %s\n", (char *)runs->meta_k->pdata[i],
                               (char *)runs->meta_v->pdata[i]);
    g_string_append(out, SSIM_RUNS_HEADER "\n");
    for (guint i = 0; i < runs->rows->len; i++) {
        const SsimMeasuredRun *r = &g_array_index(runs->rows, SsimMeasuredRun, i);
        const SsimParallel *p = &r->par;
        append_text(out, r->model);
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
        g_string_append_printf(out, ",%s,", ssim_dtype_name(r->dtype));
        append_text(out, r->cluster);
        g_string_append_printf(out, ",%u,%u,%u,%u,%u,%u,%u,", r->nodes, p->dp, p->tp, p->pp,
                               p->virtual_stages, p->microbatch, p->global_batch);
        append_text(out, p->schedule);
        g_string_append_printf(out, ",%s,%s,", ssim_recompute_name(p->recompute),
                               p->sequence_parallel ? "on" : "off");
        append_real(out, r->iteration_ms);
        g_string_append_c(out, ',');
        append_real(out, r->tflops_per_gpu);
        g_string_append_c(out, ',');
        append_text(out, r->source);
        g_string_append_c(out, '\n');
    }
    return out;
}

/* ---- vTrain converter ------------------------------------------------------------------- */

static const char *const vtrain_header =
    "# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,"
    "tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms)";

typedef struct {
    SsimRuns *runs;
    const char *cluster;
    gboolean seen_header;
} VtrainState;

static gboolean vtrain_line(LineParse *lp, const char *s, gsize len, gpointer data, GError **error)
{
    VtrainState *st = data;
    if (len == 0)
        return TRUE;
    if (!st->seen_header) {
        if (len != strlen(vtrain_header) || memcmp(s, vtrain_header, len) != 0) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                        "%s:%u:1: header: expected vTrain's '%s'", lp->path, lp->line,
                        vtrain_header);
            return FALSE;
        }
        st->seen_header = TRUE;
        return TRUE;
    }
    if (!split_line(lp, s, len, error))
        return FALSE;
    static const char *const names[] = {"GPUs",
                                        "global batch",
                                        "micro batch",
                                        "hidden size",
                                        "attention heads",
                                        "layers",
                                        "sequence length",
                                        "tensor parallelism",
                                        "data parallelism",
                                        "pipeline parallelism",
                                        "iteration time (ms)"};
    const Field *f = (const Field *)lp->fields->data;
    if (lp->fields->len != G_N_ELEMENTS(names))
        FAIL_AT(1, "columns", "the row has %u fields, expected %zu", lp->fields->len,
                G_N_ELEMENTS(names));
    double v[G_N_ELEMENTS(names)];
    for (guint c = 0; c < G_N_ELEMENTS(names); c++) {
        char *end = NULL;
        v[c] = g_ascii_strtod(f[c].text, &end);
        if (end == f[c].text || *end != '\0' || !(v[c] > 0) || !isfinite(v[c]) ||
            (c < 10 && (v[c] != floor(v[c]) || v[c] > G_MAXUINT32)))
            FAIL_AT(f[c].col, names[c], "'%s' is not a positive %s", f[c].text,
                    c < 10 ? "integer" : "number");
    }
    SsimMeasuredRun run;
    ssim_measured_run_init(&run);
    run.line = lp->line;
    run.has_shape = TRUE;
    run.hidden = (guint)v[3];
    run.heads = (guint)v[4];
    run.layers = (guint)v[5];
    run.seq_len = (guint)v[6];
    run.ffn = 4 * run.hidden;
    run.vocab = 51200;
    run.dtype = SSIM_DTYPE_FP16;
    g_snprintf(run.model, sizeof run.model, "gpt-l%u-h%u", run.layers, run.hidden);
    g_strlcpy(run.cluster, st->cluster, sizeof run.cluster);
    run.par.tp = (guint)v[7];
    run.par.dp = (guint)v[8];
    run.par.pp = (guint)v[9];
    run.par.microbatch = (guint)v[2];
    run.par.global_batch = (guint)v[1];
    run.par.recompute = SSIM_RECOMPUTE_FULL;
    run.iteration_ms = v[10];
    if (run.par.dp * run.par.tp * run.par.pp != (guint)v[0])
        FAIL_AT(f[0].col, "GPUs", "%u is not tp x dp x pp = %u", (guint)v[0],
                run.par.dp * run.par.tp * run.par.pp);
    g_snprintf(run.source, sizeof run.source,
               "vTrain measured data (Bang et al., MICRO 2024), "
               "ground_truth_single.csv line %u",
               lp->line);
    ssim_runs_add(st->runs, &run);
    return TRUE;
}

SsimRuns *ssim_runs_from_vtrain_data(const char *text, gssize length, const char *path,
                                     const char *cluster, GError **error)
{
    gsize len = length < 0 ? strlen(text) : (gsize)length;
    g_autoptr(SsimRuns) runs = ssim_runs_new(path);
    ssim_runs_set_meta(runs, "data",
                       "vTrain measured data: 1,440 training iterations on one "
                       "node of 2, 4 or 8 A100 GPUs");
    ssim_runs_set_meta(runs, "source",
                       "Bang et al., vTrain: A Simulation Framework for "
                       "Evaluating Cost-effective and Compute-optimal Large "
                       "Language Model Training, MICRO 2024 (MIT licence)");
    ssim_runs_set_meta(runs, "setup",
                       "Megatron-DeepSpeed, 1F1B, activation checkpointing "
                       "(recompute full), no gradient bucketing, fp16, vocab "
                       "51200 (GPT-2 BPE padded)");
    ssim_runs_set_meta(runs, "converted_by", "ssim_runs_from_vtrain()");
    VtrainState st = {.runs = runs, .cluster = cluster};
    if (!for_each_line(text, len, runs->path, vtrain_line, &st, error))
        return NULL;
    return g_steal_pointer(&runs);
}

SsimRuns *ssim_runs_from_vtrain(const char *path, const char *cluster, GError **error)
{
    gsize len = 0;
    g_autofree char *text = read_text(path, &len, error);
    return text ? ssim_runs_from_vtrain_data(text, (gssize)len, path, cluster, error) : NULL;
}

/* ---- the run set ------------------------------------------------------------------------ */

typedef struct {
    SsimMeasuredRun run;
    SsimModel *model;
    SsimCluster *cluster;
    double measured_ms;
} SetRow;

struct SsimRunSet {
    GArray *rows;                /* SetRow */
    guint64 max_ops, max_events; /* SsimSimConfig's limits (0: the defaults) */
};

static void set_row_clear(gpointer p)
{
    SetRow *r = p;
    ssim_model_free(r->model);
    ssim_cluster_free(r->cluster);
}

static SsimModel *model_of_run(const SsimMeasuredRun *r, const char *path, GError **error)
{
    if (!r->has_shape)
        return ssim_model_load(r->model, error);
    g_autofree char *ini = g_strdup_printf(
        "[model]\nformat = 1\nname = %s\nlayers = %u\nhidden = %u\nheads = %u\nffn = %u\n"
        "vocab = %u\nseq_len = %u\nblock = sequential\nposition = learned\nactivation = gelu\n"
        "norm = layernorm\ntied_embeddings = true\nattention_bias = true\nmlp_bias = true\n"
        "attention_dropout = true\n"
        "dtype = %s\n",
        r->model, r->layers, r->hidden, r->heads, r->ffn, r->vocab, r->seq_len,
        ssim_dtype_name(r->dtype));
    return ssim_model_load_data(ini, -1, path, error);
}

SsimRunSet *ssim_run_set_new(const SsimRuns *runs, const char *cluster_override, GError **error)
{
    g_autoptr(GHashTable) clusters =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)ssim_cluster_free);
    SsimRunSet *set = g_new0(SsimRunSet, 1);
    set->rows = g_array_new(FALSE, TRUE, sizeof(SetRow));
    g_array_set_clear_func(set->rows, set_row_clear);
    for (guint i = 0; i < ssim_runs_n(runs); i++) {
        const SsimMeasuredRun *r = ssim_runs_get(runs, i);
        SetRow row = {.run = *r};
        const char *cname = cluster_override ? cluster_override : r->cluster;
        SsimCluster *base = g_hash_table_lookup(clusters, cname);
        if (base == NULL) {
            base = ssim_cluster_load(cname, error);
            if (base == NULL) {
                g_prefix_error(error, "%s:%u: cluster: ", runs->path, r->line);
                ssim_run_set_free(set);
                return NULL;
            }
            g_hash_table_insert(clusters, g_strdup(cname), base);
        }
        row.model = model_of_run(r, runs->path, error);
        if (row.model == NULL) {
            g_prefix_error(error, "%s:%u: model: ", runs->path, r->line);
            ssim_run_set_free(set);
            return NULL;
        }
        if (!ssim_cluster_check_nodes(base, r->nodes, error)) {
            g_prefix_error(error, "%s:%u: nodes: ", runs->path, r->line);
            ssim_model_free(row.model); /* not in the set yet */
            ssim_run_set_free(set);
            return NULL;
        }
        row.cluster = ssim_cluster_copy(base);
        ssim_cluster_set_nodes(row.cluster, r->nodes);
        /* A run on part of each node (vTrain's 2- and 4-GPU runs) sees a node of that many
         * GPUs: the same links, fewer members. */
        guint world = ssim_parallel_world(&r->par);
        if (world % r->nodes == 0 && world / r->nodes < row.cluster->gpus_per_node) {
            row.cluster->gpus_per_node = world / r->nodes;
            row.cluster->gpus_per_nic = MIN(row.cluster->gpus_per_nic, row.cluster->gpus_per_node);
        }
        row.measured_ms = r->iteration_ms;
        if (!(row.measured_ms > 0)) {
            double hw = ssim_model_hardware_flops(row.model, r->par.global_batch, r->par.recompute);
            row.measured_ms = hw / (r->tflops_per_gpu * 1e12 * ssim_parallel_world(&r->par)) * 1e3;
        }
        g_array_append_val(set->rows, row);
    }
    return set;
}

void ssim_run_set_free(SsimRunSet *set)
{
    if (set == NULL)
        return;
    g_array_free(set->rows, TRUE);
    g_free(set);
}

void ssim_run_set_set_limits(SsimRunSet *set, guint64 max_ops, guint64 max_events)
{
    set->max_ops = max_ops;
    set->max_events = max_events;
}

guint ssim_run_set_n(const SsimRunSet *set)
{
    return set->rows->len;
}

static const SetRow *set_row(const SsimRunSet *set, guint i)
{
    return &g_array_index(set->rows, SetRow, i);
}

const SsimMeasuredRun *ssim_run_set_run(const SsimRunSet *set, guint i)
{
    return &set_row(set, i)->run;
}

const SsimCluster *ssim_run_set_cluster(const SsimRunSet *set, guint i)
{
    return set_row(set, i)->cluster;
}

const SsimModel *ssim_run_set_model(const SsimRunSet *set, guint i)
{
    return set_row(set, i)->model;
}

double ssim_run_set_measured_ms(const SsimRunSet *set, guint i)
{
    return set_row(set, i)->measured_ms;
}

char *ssim_run_set_group_key(const SsimRunSet *set, guint i)
{
    const SsimMeasuredRun *r = ssim_run_set_run(set, i);
    return g_strdup_printf("%s/%u", r->model, ssim_parallel_world(&r->par));
}

guint *ssim_run_set_groups(const SsimRunSet *set, const guint *idx, guint n)
{
    g_autoptr(GHashTable) ids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    guint *groups = g_new(guint, MAX(n, 1u));
    for (guint j = 0; j < n; j++) {
        char *key = ssim_run_set_group_key(set, idx ? idx[j] : j);
        gpointer v = g_hash_table_lookup(ids, key);
        if (v == NULL) {
            v = GUINT_TO_POINTER(g_hash_table_size(ids) + 1);
            g_hash_table_insert(ids, key, v);
        } else {
            g_free(key);
        }
        groups[j] = GPOINTER_TO_UINT(v) - 1;
    }
    return groups;
}

typedef struct {
    const SsimRunSet *set;
    const guint *idx;
    guint n, stride, offset;
    const SsimCalibValues *values;
    double *pred;
    char **errors;
} PredictJob;

static gpointer predict_worker(gpointer data)
{
    PredictJob *job = data;
    for (guint j = job->offset; j < job->n; j += job->stride) {
        guint i = job->idx ? job->idx[j] : j;
        const SetRow *row = set_row(job->set, i);
        g_autoptr(SsimCluster) cluster = ssim_cluster_copy(row->cluster);
        if (job->values)
            ssim_calib_values_apply(job->values, cluster);
        SsimSimConfig config = {.model = row->model,
                                .cluster = cluster,
                                .par = &row->run.par,
                                .ignore_memory = TRUE,
                                .max_ops = job->set->max_ops,
                                .max_events = job->set->max_events};
        SsimResult result;
        g_autoptr(GError) error = NULL;
        if (ssim_simulate(&config, &result, NULL, NULL, &error)) {
            job->pred[j] = ssim_time_to_seconds(result.step_time) * 1e3;
        } else {
            job->pred[j] = NAN;
            if (job->errors)
                job->errors[j] = g_error_matches(error, SSIM_RUN_ERROR, SSIM_RUN_ERROR_LIMIT)
                                     ? g_strconcat(SSIM_RUN_SET_LIMIT_PREFIX, error->message, NULL)
                                     : g_strdup(error->message);
        }
    }
    return NULL;
}

void ssim_run_set_predict(const SsimRunSet *set, const guint *idx, guint n,
                          const SsimCalibValues *values, guint threads, double *pred, char **errors)
{
    if (idx == NULL)
        n = set->rows->len;
    if (threads == 0)
        threads = g_get_num_processors();
    threads = CLAMP(threads, 1u, MAX(n, 1u));
    PredictJob *jobs = g_new0(PredictJob, threads);
    GThread **th = g_new0(GThread *, threads);
    for (guint t = 0; t < threads; t++) {
        jobs[t] = (PredictJob){set, idx, n, threads, t, values, pred, errors};
        if (t > 0)
            th[t] = g_thread_new("ssim-predict", predict_worker, &jobs[t]);
    }
    predict_worker(&jobs[0]);
    for (guint t = 1; t < threads; t++)
        g_thread_join(th[t]);
    g_free(th);
    g_free(jobs);
}

void ssim_run_set_errors_free(char **errors, guint n)
{
    if (errors == NULL)
        return;
    for (guint j = 0; j < n; j++)
        g_free(errors[j]);
    g_free(errors);
}

/* ---- statistics ------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int sign(double x)
{
    return x > 0 ? 1 : x < 0 ? -1 : 0;
}

void ssim_error_stats(const double *pred, const double *meas, const guint *groups, guint n,
                      SsimErrorStats *out)
{
    memset(out, 0, sizeof *out);
    out->mape = out->median = out->max = out->bias = out->msle = out->tau = NAN;
    double *abs_err = g_new(double, MAX(n, 1u));
    double sum = 0, bias = 0, msle = 0, mx = 0;
    guint k = 0;
    for (guint i = 0; i < n; i++) {
        if (!isfinite(pred[i]) || !(pred[i] > 0) || !(meas[i] > 0)) {
            out->failed++;
            continue;
        }
        double e = (pred[i] - meas[i]) / meas[i];
        double l = log(pred[i]) - log(meas[i]);
        abs_err[k++] = fabs(e);
        sum += fabs(e);
        bias += e;
        msle += l * l;
        mx = MAX(mx, fabs(e));
    }
    out->n = k;
    if (k > 0) {
        qsort(abs_err, k, sizeof(double), cmp_double);
        out->mape = sum / k;
        out->bias = bias / k;
        out->msle = msle / k;
        out->max = mx;
        out->median = k % 2 ? abs_err[k / 2] : (abs_err[k / 2 - 1] + abs_err[k / 2]) / 2;
    }
    g_free(abs_err);
    if (groups == NULL)
        return;
    gint64 concordant = 0, discordant = 0, pairs = 0;
    for (guint i = 0; i < n; i++) {
        if (!isfinite(pred[i]))
            continue;
        for (guint j = i + 1; j < n; j++) {
            if (groups[j] != groups[i] || !isfinite(pred[j]))
                continue;
            pairs++;
            int s = sign(pred[i] - pred[j]) * sign(meas[i] - meas[j]);
            concordant += s > 0;
            discordant += s < 0;
        }
    }
    out->pairs = (guint)pairs;
    if (pairs > 0)
        out->tau = (double)(concordant - discordant) / (double)pairs;
}

/* ---- reports ---------------------------------------------------------------------------- */

void ssim_error_stats_append(GString *out, const SsimErrorStats *s, const char *indent)
{
    g_string_append_printf(out, "%sruns           %u simulated, %u failed\n", indent, s->n,
                           s->failed);
    g_string_append_printf(out, "%sMAPE           %.2f %%\n", indent, 100 * s->mape);
    g_string_append_printf(out, "%smedian error   %.2f %%\n", indent, 100 * s->median);
    g_string_append_printf(out, "%smax error      %.2f %%\n", indent, 100 * s->max);
    g_string_append_printf(out, "%sbias           %+.2f %%  (mean signed error)\n", indent,
                           100 * s->bias);
    if (s->pairs > 0)
        g_string_append_printf(out, "%sKendall tau    %.3f  (%u pairs within model/GPU groups)\n",
                               indent, s->tau, s->pairs);
    else
        g_string_append_printf(out, "%sKendall tau    n/a  (no two runs share model and GPUs)\n",
                               indent);
}

static double row_error(double pred, double meas)
{
    return isfinite(pred) ? (pred - meas) / meas : NAN;
}

GString *ssim_validation_format(const SsimRunSet *set, const double *pred, char *const *errors,
                                const SsimErrorStats *stats, SsimFormat format)
{
    GString *out = g_string_new(NULL);
    guint n = ssim_run_set_n(set);
    if (format == SSIM_FORMAT_CSV) {
        g_string_append(out, "line,model,gpus,dp,tp,pp,vstages,microbatch,global_batch,schedule,"
                             "recompute,measured_ms,predicted_ms,error,source\n");
        for (guint i = 0; i < n; i++) {
            const SsimMeasuredRun *r = ssim_run_set_run(set, i);
            const SsimParallel *p = &r->par;
            g_string_append_printf(out, "%u,", r->line);
            append_text(out, r->model);
            g_string_append_printf(out, ",%u,%u,%u,%u,%u,%u,%u,%s,%s,%.4f,", ssim_parallel_world(p),
                                   p->dp, p->tp, p->pp, p->virtual_stages, p->microbatch,
                                   p->global_batch, p->schedule, ssim_recompute_name(p->recompute),
                                   ssim_run_set_measured_ms(set, i));
            if (isfinite(pred[i]))
                g_string_append_printf(out, "%.4f,%.5f,", pred[i],
                                       row_error(pred[i], ssim_run_set_measured_ms(set, i)));
            else
                g_string_append(out, ",,");
            append_text(out, r->source);
            g_string_append_c(out, '\n');
        }
        return out;
    }
    if (format == SSIM_FORMAT_JSON) {
        g_autoptr(JsonBuilder) b = json_builder_new();
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "runs");
        json_builder_begin_array(b);
        for (guint i = 0; i < n; i++) {
            const SsimMeasuredRun *r = ssim_run_set_run(set, i);
            double m = ssim_run_set_measured_ms(set, i);
            json_builder_begin_object(b);
            json_builder_set_member_name(b, "line");
            json_builder_add_int_value(b, r->line);
            json_builder_set_member_name(b, "model");
            json_builder_add_string_value(b, r->model);
            json_builder_set_member_name(b, "gpus");
            json_builder_add_int_value(b, ssim_parallel_world(&r->par));
            json_builder_set_member_name(b, "split");
            g_autofree char *spec = ssim_parallel_to_string(&r->par);
            json_builder_add_string_value(b, spec);
            json_builder_set_member_name(b, "measured_ms");
            json_builder_add_double_value(b, m);
            json_builder_set_member_name(b, "predicted_ms");
            if (isfinite(pred[i]))
                json_builder_add_double_value(b, pred[i]);
            else
                json_builder_add_null_value(b);
            json_builder_set_member_name(b, "error");
            if (isfinite(pred[i]))
                json_builder_add_double_value(b, row_error(pred[i], m));
            else
                json_builder_add_null_value(b);
            if (errors && errors[i]) {
                json_builder_set_member_name(b, "failure");
                json_builder_add_string_value(b, errors[i]);
            }
            json_builder_set_member_name(b, "source");
            json_builder_add_string_value(b, r->source);
            json_builder_end_object(b);
        }
        json_builder_end_array(b);
        json_builder_set_member_name(b, "summary");
        json_builder_begin_object(b);
        const struct {
            const char *k;
            double v;
        } figs[] = {{"mape", stats->mape},     {"median_error", stats->median},
                    {"max_error", stats->max}, {"bias", stats->bias},
                    {"msle", stats->msle},     {"kendall_tau", stats->tau}};
        json_builder_set_member_name(b, "runs");
        json_builder_add_int_value(b, stats->n);
        json_builder_set_member_name(b, "failed");
        json_builder_add_int_value(b, stats->failed);
        for (guint k = 0; k < G_N_ELEMENTS(figs); k++) {
            json_builder_set_member_name(b, figs[k].k);
            if (isfinite(figs[k].v))
                json_builder_add_double_value(b, figs[k].v);
            else
                json_builder_add_null_value(b);
        }
        json_builder_set_member_name(b, "tau_pairs");
        json_builder_add_int_value(b, stats->pairs);
        json_builder_end_object(b);
        json_builder_end_object(b);
        ssim_json_append(out, b, TRUE);
        return out;
    }
    g_string_append_printf(out, "%6s  %-16s %5s %9s %4s %4s %9s %12s %12s %8s\n", "line", "model",
                           "gpus", "dp/tp/pp", "mb", "gbs", "recompute", "measured ms",
                           "predicted ms", "error");
    for (guint i = 0; i < n; i++) {
        const SsimMeasuredRun *r = ssim_run_set_run(set, i);
        const SsimParallel *p = &r->par;
        double m = ssim_run_set_measured_ms(set, i);
        g_autofree char *split = g_strdup_printf("%u/%u/%u", p->dp, p->tp, p->pp);
        g_string_append_printf(out, "%6u  %-16.16s %5u %9s %4u %4u %9s %12.2f ", r->line, r->model,
                               ssim_parallel_world(p), split, p->microbatch, p->global_batch,
                               ssim_recompute_name(p->recompute), m);
        if (isfinite(pred[i]))
            g_string_append_printf(out, "%12.2f %+7.1f%%\n", pred[i], 100 * row_error(pred[i], m));
        else
            g_string_append_printf(out, "%12s  failed: %s\n", "-",
                                   errors && errors[i] ? errors[i] : "?");
    }
    g_string_append_c(out, '\n');
    ssim_error_stats_append(out, stats, "");
    return out;
}

gboolean ssim_validation_plot(const SsimRunSet *set, const double *pred, const char *image,
                              const char *title, gboolean *rendered, GError **error)
{
    g_autoptr(GString) dat = g_string_new("# measured_ms predicted_ms line\n");
    double lo = G_MAXDOUBLE, hi = 0;
    for (guint i = 0; i < ssim_run_set_n(set); i++) {
        if (!isfinite(pred[i]))
            continue;
        double m = ssim_run_set_measured_ms(set, i);
        char a[G_ASCII_DTOSTR_BUF_SIZE], b[G_ASCII_DTOSTR_BUF_SIZE];
        g_string_append_printf(dat, "%s %s %u\n", g_ascii_formatd(a, sizeof a, "%.6g", m),
                               g_ascii_formatd(b, sizeof b, "%.6g", pred[i]),
                               ssim_run_set_run(set, i)->line);
        lo = MIN(lo, MIN(m, pred[i]));
        hi = MAX(hi, MAX(m, pred[i]));
    }
    if (hi == 0)
        lo = 1, hi = 10;
    g_autofree char *dat_path = ssim_plot_sibling(image, ".dat");
    if (!ssim_write_file(dat_path, dat, error))
        return FALSE;
    g_autoptr(GString) gp = g_string_new("# shiftsim validate: predicted vs measured; render: "
                                         "gnuplot THIS_FILE\n");
    gboolean svg = g_str_has_suffix(image, ".svg");
    g_string_append_printf(gp, "set terminal %s size 800,800\nset output ",
                           svg ? "svg dynamic" : "pngcairo noenhanced");
    ssim_plot_quote(gp, image);
    g_string_append(gp, "\nset title ");
    ssim_plot_quote(gp, title ? title : "shiftsim: predicted vs measured iteration time");
    char a[G_ASCII_DTOSTR_BUF_SIZE], b[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append_printf(gp,
                           "\nset logscale xy\nset xlabel 'measured (ms)'\n"
                           "set ylabel 'predicted (ms)'\nset xrange [%s:%s]\nset yrange [%s:%s]\n"
                           "set grid\nset key top left\nset size square\nplot ",
                           g_ascii_formatd(a, sizeof a, "%.6g", lo / 1.2),
                           g_ascii_formatd(b, sizeof b, "%.6g", hi * 1.2), a, b);
    ssim_plot_quote(gp, dat_path);
    g_string_append(gp, " using 1:2 with points pt 7 ps 0.5 title 'runs', \\\n"
                        "     x with lines lw 2 title 'y = x', \\\n"
                        "     1.1*x with lines dt 2 lc rgb 'gray' title '+/-10%', \\\n"
                        "     x/1.1 with lines dt 2 lc rgb 'gray' notitle\n");
    SsimPlotStatus status;
    if (!ssim_plot_render(image, gp, &status, error))
        return FALSE;
    if (rendered)
        *rendered = status == SSIM_PLOT_RENDERED;
    return TRUE;
}
