/*
 * What is written of a sweep (include/shiftsim/sweep.h): the CSV, the ranked summary, the merge
 * of shard CSVs and the plots.
 *
 * The CSV is text only the spec and the rows determine: its two metadata lines name the spec but
 * not the shard, so every shard of one sweep carries the same lines and a merge can check that
 * its inputs belong together.  Fields are written with fixed printf precisions (as the simulate
 * CSV does) and the detail message is quoted RFC 4180 style with newlines folded to spaces, so
 * one row is exactly one line, which the merge relies on.
 */
#include "src/study/sweep-private.h"

#include "src/core/csvline.h"

#include <shiftsim/data.h>
#include <shiftsim/report.h>

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#define CSV_FORMAT "# shiftsim-sweep v1"
#define CSV_HEADER                                                                                 \
    "index,dp,tp,pp,v,microbatch,global_batch,microbatches,schedule,placement,recompute,"          \
    "seq_parallel,zero,tp_comm,status,reason,step_ms,tokens_per_s,samples_per_s,"                  \
    "model_tflops_per_gpu,mfu,bubble,exposed_tp_ms,exposed_pp_ms,exposed_dp_ms,peak_memory_gib,"   \
    "detail"

static double ms(SsimTime t)
{
    return (double)t / 1e6;
}

static double gib(guint64 b)
{
    return (double)b / (1024.0 * 1024.0 * 1024.0);
}

static void csv_quoted(GString *o, const char *s)
{
    g_string_append_c(o, '"');
    for (; *s; s++) {
        if (*s == '"')
            g_string_append_c(o, '"');
        g_string_append_c(o, *s);
    }
    g_string_append_c(o, '"');
}

static void csv_metadata(GString *o, const SsimSweep *s)
{
    const SsimSweepSpec *sp = &s->spec;
    g_autofree char *tp = ssim_sweep_ints_format(&sp->tp);
    g_autofree char *pp = ssim_sweep_ints_format(&sp->pp);
    g_autofree char *v = ssim_sweep_ints_format(&sp->vstages);
    g_autofree char *mb = ssim_sweep_ints_format(&sp->microbatch);
    g_autofree char *rc = ssim_sweep_recompute_format(&sp->recompute);
    g_autofree char *sc = ssim_sweep_names_format(&sp->schedules);
    g_autofree char *pl = ssim_sweep_names_format(&sp->placements);
    g_autofree char *base = ssim_parallel_to_string(&sp->base);
    g_string_append(o, CSV_FORMAT "\n");
    g_string_append_printf(o,
                           "# model=%s cluster=%s gpus=%u configurations=%u tp=%s pp=%s v=%s "
                           "mb=%s schedules=%s recompute=%s placements=%s lhs=%d comm_repeat=%u "
                           "exact=%d base=%s",
                           s->model->name, s->cluster->name, sp->n_gpus, s->n_rows, tp, pp, v, mb,
                           sc, rc, pl, sp->placement.lhs ? 1 : 0, MAX(sp->comm_repeat, 1u),
                           sp->exact ? 1 : 0, base);
    /* What changes the rows, named only when it is not the default (older lines stay as they
     * were). */
    if (sp->zero.n != 1 || sp->zero.v[0] != 0) {
        g_autofree char *zero = ssim_sweep_ints_format(&sp->zero);
        g_string_append_printf(o, " zero=%s", zero);
    }
    if (sp->prune_top)
        g_string_append_printf(o, " prune=%u", sp->prune_top);
    if (sp->steady)
        g_string_append(o, " steady=1");
    g_string_append_c(o, '\n');
}

static void csv_row(GString *o, const SsimSweepRow *r)
{
    const SsimParallel *p = &r->par;
    g_string_append_printf(o, "%u,%u,%u,%u,%u,%u,%u,", r->index, p->dp, p->tp, p->pp,
                           p->virtual_stages, p->microbatch, p->global_batch);
    guint64 per = (guint64)p->dp * p->microbatch;
    if (per && p->global_batch % per == 0)
        g_string_append_printf(o, "%" G_GUINT64_FORMAT, p->global_batch / per);
    const char *rec = r->auto_recompute && r->status == SSIM_SWEEP_ILLEGAL
                          ? "auto"
                          : ssim_recompute_name(p->recompute);
    g_string_append_printf(o, ",%s,%s,%s,%d,%u,%s,%s,%s,", p->schedule, p->placement, rec,
                           p->sequence_parallel ? 1 : 0, p->zero_stage,
                           ssim_tp_comm_name(p->tp_comm), ssim_sweep_status_name(r->status),
                           r->reason);
    const SsimResult *x = &r->result;
    if (r->status == SSIM_SWEEP_OK)
        g_string_append_printf(o, "%.6f,%.3f,%.4f,%.3f,%.5f,%.5f,%.6f,%.6f,%.6f,", ms(x->step_time),
                               x->tokens_per_s, x->samples_per_s, x->model_tflops_per_gpu, x->mfu,
                               x->bubble, ms(x->exposed[SSIM_COMM_TP]),
                               ms(x->exposed[SSIM_COMM_PP]), ms(x->exposed[SSIM_COMM_DP]));
    else
        g_string_append(o, ",,,,,,,,,");
    if (r->has_memory)
        g_string_append_printf(o, "%.3f", gib(x->memory.total));
    g_string_append_c(o, ',');
    if (r->detail[0])
        csv_quoted(o, r->detail);
    g_string_append_c(o, '\n');
}

GString *ssim_sweep_csv(const SsimSweep *sweep)
{
    GString *o = g_string_new(NULL);
    csv_metadata(o, sweep);
    g_string_append(o, CSV_HEADER "\n");
    for (guint i = 0; i < sweep->n_rows; i++)
        if (sweep->rows[i].status != SSIM_SWEEP_PENDING)
            csv_row(o, &sweep->rows[i]);
    return o;
}

static gint rank_cmp(gconstpointer a, gconstpointer b, gpointer user)
{
    const SsimSweep *s = user;
    const SsimSweepRow *x = &s->rows[*(const guint *)a], *y = &s->rows[*(const guint *)b];
    if (x->result.tokens_per_s != y->result.tokens_per_s)
        return x->result.tokens_per_s > y->result.tokens_per_s ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

GArray *ssim_sweep_ranking(const SsimSweep *sweep)
{
    GArray *idx = g_array_new(FALSE, FALSE, sizeof(guint));
    for (guint i = 0; i < sweep->n_rows; i++)
        if (sweep->rows[i].status == SSIM_SWEEP_OK)
            g_array_append_val(idx, i);
    g_array_sort_with_data(idx, rank_cmp, (gpointer)sweep);
    return idx;
}

typedef struct {
    const char *status, *reason;
    guint count, first;
} Count;

static gint count_cmp(gconstpointer a, gconstpointer b)
{
    const Count *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

GString *ssim_sweep_summary(const SsimSweep *sweep, guint k)
{
    GString *o = g_string_new(NULL);
    g_autoptr(GArray) rank = ssim_sweep_ranking(sweep);
    guint shown = MIN(k, rank->len);
    if (shown > 0) {
        g_string_append_printf(o,
                               "%4s %6s %4s %4s %4s %4s %4s %-12s %-10s %-9s %4s %12s %10s "
                               "%10s %8s %6s %7s %8s\n",
                               "rank", "index", "dp", "tp", "pp", "v", "mb", "schedule",
                               "placement", "recompute", "zero", "tokens/s", "tok/s/GPU", "step ms",
                               "TFLOP/s", "MFU%", "bubble%", "mem GiB");
        for (guint i = 0; i < shown; i++) {
            const SsimSweepRow *r = &sweep->rows[g_array_index(rank, guint, i)];
            const SsimParallel *p = &r->par;
            g_string_append_printf(
                o,
                "%4u %6u %4u %4u %4u %4u %4u %-12s %-10s %-9s %4u %12.0f %10.1f %10.3f %8.1f "
                "%6.1f %7.1f %8.1f\n",
                i + 1, r->index, p->dp, p->tp, p->pp, p->virtual_stages, p->microbatch, p->schedule,
                p->placement, ssim_recompute_name(p->recompute), p->zero_stage,
                r->result.tokens_per_s, r->result.tokens_per_s / MAX(p->dp * p->tp * p->pp, 1u),
                ms(r->result.step_time), r->result.model_tflops_per_gpu, 100 * r->result.mfu,
                100 * r->result.bubble, gib(r->result.memory.total));
        }
        g_string_append_c(o, '\n');
    }
    /* Counts of each (status, reason), most frequent first, ties in order of first row. */
    g_autoptr(GArray) counts = g_array_new(FALSE, FALSE, sizeof(Count));
    guint evaluated = 0;
    for (guint i = 0; i < sweep->n_rows; i++) {
        const SsimSweepRow *r = &sweep->rows[i];
        if (r->status == SSIM_SWEEP_PENDING)
            continue;
        evaluated++;
        const char *st = ssim_sweep_status_name(r->status);
        guint j = 0;
        for (; j < counts->len; j++) {
            Count *c = &g_array_index(counts, Count, j);
            if (strcmp(c->status, st) == 0 && strcmp(c->reason, r->reason) == 0) {
                c->count++;
                break;
            }
        }
        if (j == counts->len) {
            Count c = {st, r->reason, 1, i};
            g_array_append_val(counts, c);
        }
    }
    g_array_sort(counts, count_cmp);
    g_string_append_printf(o,
                           "%u configurations of %s on %u GPUs (%u evaluated); %u simulated "
                           "and ranked",
                           sweep->n_rows, sweep->model->name, sweep->spec.n_gpus, evaluated,
                           rank->len);
    /* Context parallelism is the same in every row: dp there counts replicas of cp GPUs. */
    guint cp = sweep->spec.base.cp;
    if (cp > 1)
        g_string_append_printf(o, "; cp %u in each (dp x cp x tp x pp GPUs)", cp);
    if (sweep->skipped_pairs)
        g_string_append_printf(o, "; %u tp x pp pairs do not divide %u GPUs%s and were left out",
                               sweep->skipped_pairs, sweep->spec.n_gpus, cp > 1 ? " with cp" : "");
    g_string_append(o, "\n");
    for (guint j = 0; j < counts->len; j++) {
        const Count *c = &g_array_index(counts, Count, j);
        g_string_append_printf(o, "%8u  %-8s %s\n", c->count, c->status,
                               c->reason[0] ? c->reason : "(simulated)");
    }
    return o;
}

/* ---- merge ------------------------------------------------------------------------------- */

typedef struct {
    guint index;
    const char *line; /* into a file's text, without its newline */
    gsize len;
    guint file, lineno; /* where it came from, for messages */
} Line;

/* Fields of one CSV line of `n` bytes (commas outside double quotes, plus one). */
static guint csv_n_fields(const char *q, gsize n)
{
    guint fields = 1;
    gboolean quoted = FALSE;
    for (gsize i = 0; i < n; i++)
        if (q[i] == '"')
            quoted = !quoted;
        else if (q[i] == ',' && !quoted)
            fields++;
    return fields;
}

/*
 * Every figure of a shard row, checked before it is merged (a merge that passes NaN, negative
 * step times or an unknown status along is a lie with shiftsim's name on it): the split's counts
 * are positive integers, the status is one a sweep writes, an "ok" row has every figure finite
 * and non-negative with a positive step time, any other row has none, and the memory is empty or
 * a finite size.  Errors name the file, the line, the column and the header's field.
 */
static gboolean check_row(const char *q, gsize n, const char *path, guint lineno, GError **error)
{
    g_auto(GStrv) names = g_strsplit(CSV_HEADER, ",", -1);
    guint n_names = g_strv_length(names);
    g_autoptr(GPtrArray) fields = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GArray) cols = g_array_new(FALSE, FALSE, sizeof(guint));
    gsize start = 0;
    gboolean quoted = FALSE;
    for (gsize i = 0; i <= n; i++) {
        if (i < n && q[i] == '"')
            quoted = !quoted;
        if (i == n || (q[i] == ',' && !quoted)) {
            g_ptr_array_add(fields, g_strndup(q + start, i - start));
            guint col = (guint)start + 1;
            g_array_append_val(cols, col);
            start = i + 1;
        }
    }
    if (fields->len != n_names)
        return TRUE; /* the caller's field count check reports it */
#define FIELD(k) ((const char *)g_ptr_array_index(fields, (k)))
#define BAD(k, ...)                                                                                \
    do {                                                                                           \
        g_autofree char *why_ = g_strdup_printf(__VA_ARGS__);                                      \
        g_autofree char *shown_ = ssim_text_excerpt(FIELD(k), 40);                                 \
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "%s:%u:%u: %s: '%s' %s",    \
                    path, lineno, g_array_index(cols, guint, (k)), names[k], shown_, why_);        \
        return FALSE;                                                                              \
    } while (0)
    /* index (checked by the caller), dp, tp, pp, v, microbatch, global_batch >= 1; microbatches
     * empty or >= 1; seq_parallel 0 or 1; zero 0 to 3. */
    for (guint k = 1; k <= 7; k++) {
        guint64 v;
        if (k == 7 && FIELD(k)[0] == '\0')
            continue;
        if (!g_ascii_string_to_unsigned(FIELD(k), 10, 1, G_MAXUINT32, &v, NULL))
            BAD(k, "is not a positive integer");
    }
    if (strcmp(FIELD(11), "0") != 0 && strcmp(FIELD(11), "1") != 0)
        BAD(11, "is not 0 or 1");
    if (strlen(FIELD(12)) != 1 || FIELD(12)[0] < '0' || FIELD(12)[0] > '3')
        BAD(12, "is not a ZeRO stage (0 to 3)");
    gint status = -1;
    for (guint s = 0; s < SSIM_SWEEP_STATUS_N; s++)
        if (s != SSIM_SWEEP_PENDING && strcmp(FIELD(14), ssim_sweep_status_name(s)) == 0)
            status = (gint)s;
    if (status < 0)
        BAD(14, "is not a status a sweep writes (ok, illegal, memory, limit, failed)");
    /* step_ms .. exposed_dp_ms, then peak_memory_gib */
    for (guint k = 16; k <= 25; k++) {
        const char *f = FIELD(k);
        if (f[0] == '\0') {
            if (status == SSIM_SWEEP_OK && k < 25)
                BAD(k, "is missing on an ok row");
            continue;
        }
        if (status != SSIM_SWEEP_OK && k < 25)
            BAD(k, "is a figure on a row whose status is %s", FIELD(14));
        char *end = NULL;
        double v = g_ascii_strtod(f, &end);
        if (end == f || *end != '\0' || !isfinite(v) || v < 0)
            BAD(k, "is not a finite non-negative number");
        if ((k == 16 || k == 17) && !(v > 0))
            BAD(k, "must be positive on an ok row");
    }
#undef BAD
#undef FIELD
    return TRUE;
}

static gint line_cmp(gconstpointer a, gconstpointer b)
{
    const Line *x = a, *y = b;
    if (x->index != y->index)
        return x->index < y->index ? -1 : 1;
    if (x->file != y->file) /* duplicates: the earlier place first, so messages are stable */
        return x->file < y->file ? -1 : 1;
    return x->lineno < y->lineno ? -1 : x->lineno > y->lineno;
}

GString *ssim_sweep_merge(const char *const *paths, guint n_paths, gboolean partial, GError **error)
{
    g_return_val_if_fail(n_paths >= 1, NULL);
    g_autoptr(GPtrArray) texts = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GArray) lines = g_array_new(FALSE, FALSE, sizeof(Line));
    g_autofree char *head = NULL; /* the metadata and header lines of the first file */
    guint64 configurations = 0;
    for (guint f = 0; f < n_paths; f++) {
        gsize len = 0;
        char *text = ssim_read_file(paths[f], &len, error);
        if (text == NULL)
            return NULL;
        g_ptr_array_add(texts, text);
        /* The head: every leading '#' line plus the header line. */
        const char *p = text;
        while (*p == '#') {
            const char *nl = strchr(p, '\n');
            p = nl ? nl + 1 : p + strlen(p);
        }
        const char *nl = strchr(p, '\n');
        gboolean version_ok = g_str_has_prefix(text, CSV_FORMAT "\n");
        if (!version_ok || nl == NULL || strncmp(p, CSV_HEADER "\n", (gsize)(nl - p) + 1) != 0) {
            guint at = 1;
            for (const char *q = text; version_ok && q < p; q++)
                at += *q == '\n';
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VERSION,
                        "%s:%u: %s: not a shiftsim sweep CSV (expected '" CSV_FORMAT
                        "' and the v1 header)",
                        paths[f], at, version_ok ? "header" : "version");
            return NULL;
        }
        const char *body = nl + 1;
        const guint n_columns = csv_n_fields(CSV_HEADER, strlen(CSV_HEADER));
        g_autofree char *this_head = g_strndup(text, (gsize)(body - text));
        if (head == NULL) {
            head = g_steal_pointer(&this_head);
            const char *c = strstr(head, " configurations=");
            configurations = c ? g_ascii_strtoull(c + 16, NULL, 10) : 0;
        } else if (strcmp(head, this_head) != 0) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s: its metadata or header lines differ from %s's: not a shard of the "
                        "same sweep",
                        paths[f], paths[0]);
            return NULL;
        }
        guint lineno = 0;
        for (const char *q = text; q < body; q++)
            lineno += *q == '\n';
        for (const char *q = body; *q;) {
            const char *e = strchr(q, '\n');
            gsize n = e ? (gsize)(e - q) : strlen(q);
            lineno++;
            if (!ssim_text_check_line(paths[f], lineno, n, error))
                return NULL;
            if (n > 0) {
                char *end = NULL;
                guint64 idx = g_ascii_strtoull(q, &end, 10);
                if (end == q || *end != ',' || idx >= G_MAXUINT ||
                    (configurations && idx >= configurations)) {
                    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                                "%s:%u: index: a row must start with a configuration index below "
                                "%" G_GUINT64_FORMAT,
                                paths[f], lineno, configurations);
                    return NULL;
                }
                /* A row cut short (a killed job, a truncated copy) has fewer fields or no
                 * newline: refuse it rather than merge half a row. */
                guint fields = csv_n_fields(q, n);
                if (fields != n_columns || e == NULL) {
                    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                                "%s:%u: row: %u fields%s where the header has %u (a truncated "
                                "file?)",
                                paths[f], lineno, fields, e == NULL ? " and no end of line" : "",
                                n_columns);
                    return NULL;
                }
                if (!check_row(q, n, paths[f], lineno, error))
                    return NULL;
                Line l = {(guint)idx, q, n, f, lineno};
                g_array_append_val(lines, l);
            }
            q += n + (e ? 1 : 0);
        }
    }
    g_array_sort(lines, line_cmp);
    for (guint i = 1; i < lines->len; i++)
        if (g_array_index(lines, Line, i).index == g_array_index(lines, Line, i - 1).index) {
            const Line *a = &g_array_index(lines, Line, i - 1), *b = &g_array_index(lines, Line, i);
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s:%u: index: configuration %u appears twice (also %s:%u; overlapping "
                        "shards?)",
                        paths[b->file], b->lineno, b->index, paths[a->file], a->lineno);
            return NULL;
        }
    if (!partial && lines->len != configurations) {
        guint missing = 0;
        for (guint i = 0; i < lines->len && g_array_index(lines, Line, i).index == missing; i++)
            missing++;
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MISSING,
                    "%u of %" G_GUINT64_FORMAT " configurations present (configuration %u is "
                    "missing: is a shard left out?)",
                    lines->len, configurations, missing);
        return NULL;
    }
    GString *o = g_string_new(head);
    for (guint i = 0; i < lines->len; i++) {
        const Line *l = &g_array_index(lines, Line, i);
        g_string_append_len(o, l->line, (gssize)l->len);
        g_string_append_c(o, '\n');
    }
    return o;
}

/* ---- plots ------------------------------------------------------------------------------- */

static guint placement_of(const SsimSweepSpec *spec, const char *name)
{
    for (guint i = 0; i < spec->placements.n; i++)
        if (strcmp(spec->placements.v[i], name) == 0)
            return i;
    g_assert_not_reached();
}

/*
 * The splits with their best tokens/s per placement, in configuration order: "best" is the
 * maximum over virtual stages, microbatch sizes, schedules and recompute modes.
 */
static GArray *collect(const SsimSweep *sweep)
{
    const SsimSweepSpec *spec = ssim_sweep_spec(sweep);
    GArray *splits = g_array_new(FALSE, FALSE, sizeof(SsimSplitBest));
    for (guint i = 0; i < ssim_sweep_n_configs(sweep); i++) {
        const SsimSweepRow *r = ssim_sweep_row(sweep, i);
        SsimSplitBest *s =
            splits->len ? &g_array_index(splits, SsimSplitBest, splits->len - 1) : NULL;
        if (s == NULL || s->tp != r->par.tp || s->pp != r->par.pp) {
            SsimSplitBest n = {r->par.tp, r->par.pp, r->par.dp, g_new(double, spec->placements.n)};
            for (guint k = 0; k < spec->placements.n; k++)
                n.best[k] = NAN;
            g_array_append_val(splits, n);
            s = &g_array_index(splits, SsimSplitBest, splits->len - 1);
        }
        if (r->status != SSIM_SWEEP_OK)
            continue;
        guint k = placement_of(spec, r->par.placement);
        if (isnan(s->best[k]) || r->result.tokens_per_s > s->best[k])
            s->best[k] = r->result.tokens_per_s;
    }
    return splits;
}

static void free_splits(GArray *splits)
{
    for (guint i = 0; i < splits->len; i++)
        g_free(g_array_index(splits, SsimSplitBest, i).best);
    g_array_free(splits, TRUE);
}

gboolean ssim_sweep_plot(const SsimSweep *sweep, const char *prefix, SsimPlotStatus *status,
                         GError **error)
{
    const SsimSweepSpec *spec = &sweep->spec;
    const char *series[SSIM_SWEEP_NAMES_MAX];
    for (guint k = 0; k < spec->placements.n; k++)
        series[k] = spec->placements.v[k];
    g_autofree char *context = g_strdup_printf("%u GPUs of %s, global batch %u", spec->n_gpus,
                                               sweep->cluster->name, spec->base.global_batch);
    GArray *splits = collect(sweep);
    SsimSplitChart chart = {(const SsimSplitBest *)(gconstpointer)splits->data, splits->len, series,
                            spec->placements.n, context};
    gboolean ok = ssim_plot_splits(&chart, prefix, status, error);
    free_splits(splits);
    return ok;
}

/* --- The CSV as JSON. ----------------------------------------------------------------------- */

typedef struct {
    JsonBuilder *b;
    char **names; /* the header's, once read */
    guint n_names;
    gboolean in_rows;
} JsonRead;

/* One field as a JSON value: null when empty, a number when the whole field is one, else text. */
static void json_field(JsonBuilder *b, const char *text)
{
    if (*text == '\0') {
        json_builder_add_null_value(b);
        return;
    }
    char *end = NULL;
    gint64 i = g_ascii_strtoll(text, &end, 10);
    if (end != text && *end == '\0' && (g_ascii_isdigit(*text) || *text == '-')) {
        json_builder_add_int_value(b, i); /* an integer column: index, dp, zero, ... */
        return;
    }
    double v = g_ascii_strtod(text, &end);
    if (end != text && *end == '\0' && isfinite(v) && (g_ascii_isdigit(*text) || *text == '-'))
        json_builder_add_double_value(b, v);
    else
        json_builder_add_string_value(b, text);
}

static gboolean json_line(SsimCsvLine *line, const char *s, gsize len, gpointer data,
                          GError **error)
{
    JsonRead *r = data;
    if (len == 0)
        return TRUE;
    if (s[0] == '#') {
        if (r->names == NULL && len > 2 && strncmp(s, CSV_FORMAT, len) != 0) {
            json_builder_set_member_name(r->b, "spec");
            g_autofree char *spec = g_strndup(s + 2, len - 2);
            json_builder_add_string_value(r->b, spec);
        }
        return TRUE;
    }
    if (!ssim_csv_line_split(line, s, len, error))
        return FALSE;
    const SsimCsvField *f = ssim_csv_line_fields(line);
    guint n = ssim_csv_line_n_fields(line);
    if (r->names == NULL) {
        r->names = g_new0(char *, n + 1);
        for (guint i = 0; i < n; i++)
            r->names[i] = g_strdup(f[i].text);
        r->n_names = n;
        json_builder_set_member_name(r->b, "rows");
        json_builder_begin_array(r->b);
        r->in_rows = TRUE;
        return TRUE;
    }
    if (n != r->n_names)
        return ssim_csv_line_fail(line, error, line->col, "row",
                                  "%u fields where the header has %u", n, r->n_names);
    json_builder_begin_object(r->b);
    for (guint i = 0; i < n; i++) {
        json_builder_set_member_name(r->b, r->names[i]);
        json_field(r->b, f[i].text);
    }
    json_builder_end_object(r->b);
    return TRUE;
}

GString *ssim_sweep_csv_json(const char *csv, gsize len, const char *path, GError **error)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    JsonRead r = {.b = b};
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "format");
    json_builder_add_string_value(b, CSV_FORMAT + 2);
    gboolean ok = ssim_csv_for_each_line(csv, len, path, json_line, &r, error);
    g_strfreev(r.names);
    if (!ok)
        return NULL;
    if (!r.in_rows) {
        json_builder_set_member_name(b, "rows");
        json_builder_begin_array(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    GString *out = g_string_new(NULL);
    ssim_json_append(out, b, TRUE);
    return out;
}
