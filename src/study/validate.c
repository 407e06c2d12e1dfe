/*
 * Validation (include/shiftsim/validate.h): the error statistics of predictions against
 * measurements, the report of `shiftsim validate` in its three formats, and the
 * predicted-vs-measured plot.
 *
 * Kendall's tau is counted over pairs of rows in the same group only (a group: one model, its
 * sweep of splits, GPU counts and batches), since it asks whether the simulator ranks the
 * configurations of one model as the measurements do, not whether a large model takes longer
 * than a small one; the O(n^2) pair loop is fine for the few thousand rows of a validation
 * table.  The report gives every figure overall and per model.
 *
 * Invariant: a row without a finite prediction is counted as failed and is in no figure (no
 * error, no pair), in the statistics, the reports and the plot alike.
 */
#include <shiftsim/plot.h>
#include <shiftsim/sim.h>
#include <shiftsim/validate.h>

#include "src/core/csvline.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

const SsimErrorWords SSIM_ERROR_WORDS_RUNS = {"runs", "run", "simulated", "model"};

void ssim_error_stats(const double *pred, const double *meas, const guint *groups, guint n,
                      SsimErrorStats *out)
{
    memset(out, 0, sizeof *out);
    out->mape = out->median = out->max = out->bias = out->msle = out->tau = out->within10 = NAN;
    double *abs_err = g_new(double, MAX(n, 1u));
    double sum = 0, bias = 0, msle = 0, mx = 0;
    guint k = 0, close = 0;
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
        close += fabs(e) <= 0.10;
    }
    out->n = k;
    if (k > 0) {
        qsort(abs_err, k, sizeof(double), cmp_double);
        out->mape = sum / k;
        out->bias = bias / k;
        out->msle = msle / k;
        out->max = mx;
        out->within10 = (double)close / k;
        out->median = k % 2 ? abs_err[k / 2] : (abs_err[k / 2 - 1] + abs_err[k / 2]) / 2;
    }
    g_free(abs_err);
    if (groups == NULL)
        return;
    /* tau-b: a pair tied in one ranking (two runs of one configuration, predicted alike) is
     * neither concordant nor discordant, and leaves that ranking's side of the denominator. */
    gint64 concordant = 0, discordant = 0, pairs = 0, tied_pred = 0, tied_meas = 0;
    for (guint i = 0; i < n; i++) {
        if (!isfinite(pred[i]))
            continue;
        for (guint j = i + 1; j < n; j++) {
            if (groups[j] != groups[i] || !isfinite(pred[j]))
                continue;
            pairs++;
            int sp = sign(pred[i] - pred[j]), sm = sign(meas[i] - meas[j]);
            concordant += sp * sm > 0;
            discordant += sp * sm < 0;
            tied_pred += sp == 0;
            tied_meas += sm == 0;
        }
    }
    out->pairs = (guint)pairs;
    if (pairs > tied_pred && pairs > tied_meas)
        out->tau = (double)(concordant - discordant) /
                   sqrt((double)(pairs - tied_pred) * (double)(pairs - tied_meas));
}

void ssim_error_stats_groups(const double *pred, const double *meas, const guint *groups, guint n,
                             guint n_groups, SsimErrorStats *out)
{
    ssim_error_stats_groups_ranked(pred, meas, groups, NULL, n, n_groups, out);
}

void ssim_error_stats_groups_ranked(const double *pred, const double *meas, const guint *groups,
                                    const guint *ranked, guint n, guint n_groups,
                                    SsimErrorStats *out)
{
    g_autofree double *p = g_new(double, MAX(n, 1u));
    g_autofree double *m = g_new(double, MAX(n, 1u));
    g_autofree guint *r = g_new0(guint, MAX(n, 1u));
    for (guint g = 0; g < n_groups; g++) {
        guint k = 0;
        for (guint j = 0; j < n; j++)
            if (groups[j] == g) {
                p[k] = pred[j];
                r[k] = ranked ? ranked[j] : 0;
                m[k++] = meas[j];
            }
        ssim_error_stats(p, m, r, k, &out[g]);
    }
}

/* ---- reports ---------------------------------------------------------------------------- */

void ssim_error_stats_append(GString *out, const SsimErrorStats *s, const char *indent)
{
    ssim_error_stats_append_as(out, s, indent, &SSIM_ERROR_WORDS_RUNS);
}

void ssim_error_stats_append_as(GString *out, const SsimErrorStats *s, const char *indent,
                                const SsimErrorWords *w)
{
    g_string_append_printf(out, "%s%-14s %u %s, %u failed\n", indent, w->items, s->n, w->done,
                           s->failed);
    if (s->n == 0) {
        /* No figure over no rows: "MAPE nan %" read like a result. */
        g_string_append_printf(out, "%sno %s %s: no error figures\n", indent, w->item, w->done);
        return;
    }
    g_string_append_printf(out, "%sMAPE           %.2f %%\n", indent, 100 * s->mape);
    g_string_append_printf(out, "%smedian error   %.2f %%\n", indent, 100 * s->median);
    g_string_append_printf(out, "%smax error      %.2f %%\n", indent, 100 * s->max);
    g_string_append_printf(out, "%sbias           %+.2f %%  (mean signed error)\n", indent,
                           100 * s->bias);
    g_string_append_printf(out, "%swithin 10%%     %.1f %%  of the %s\n", indent, 100 * s->within10,
                           w->items);
    const char *pairs = s->pairs == 1 ? "pair" : "pairs";
    if (isfinite(s->tau))
        g_string_append_printf(out, "%sKendall tau    %.3f  (%u %s of %s of one %s)\n", indent,
                               s->tau, s->pairs, pairs, w->items, w->group);
    else if (s->pairs > 0)
        g_string_append_printf(out, "%sKendall tau    n/a  (%u %s of %s of one %s, tied)\n", indent,
                               s->pairs, pairs, w->items, w->group);
    else
        g_string_append_printf(out, "%sKendall tau    n/a  (no two %s share a %s)\n", indent,
                               w->items, w->group);
}

void ssim_error_stats_json(JsonBuilder *b, const SsimErrorStats *s, const SsimErrorWords *w)
{
    json_builder_set_member_name(b, w->items);
    json_builder_add_int_value(b, s->n);
    json_builder_set_member_name(b, "failed");
    json_builder_add_int_value(b, s->failed);
    ssim_json_set_number(b, "mape", s->mape);
    ssim_json_set_number(b, "median", s->median);
    ssim_json_set_number(b, "max", s->max);
    ssim_json_set_number(b, "bias", s->bias);
    ssim_json_set_number(b, "within10", s->within10);
    ssim_json_set_number(b, "tau", s->tau);
    json_builder_set_member_name(b, "pairs");
    json_builder_add_int_value(b, s->pairs);
}

static void append_pct(GString *out, double v, const char *fmt)
{
    if (isfinite(v))
        g_string_append_printf(out, fmt, 100 * v);
    else
        g_string_append_printf(out, " %8s", "-");
}

void ssim_error_groups_append(GString *out, const SsimErrorStats *per_group, char *const *names,
                              guint n_groups, const char *indent)
{
    ssim_error_groups_append_as(out, per_group, names, n_groups, indent, &SSIM_ERROR_WORDS_RUNS);
}

void ssim_error_groups_append_as(GString *out, const SsimErrorStats *per_group, char *const *names,
                                 guint n_groups, const char *indent, const SsimErrorWords *words)
{
    /* 20 columns for a name, as many as a longer one needs (a runs file's path). */
    int width = 20;
    for (guint g = 0; g < n_groups; g++)
        width = MAX(width, (int)MIN(strlen(names[g]), 4096u));
    g_string_append_printf(out, "%s%-*s %5s %8s %8s %8s %8s %8s %7s\n", indent, width, "group",
                           words->items, "MAPE", "median", "max", "bias", "in 10%", "tau");
    for (guint g = 0; g < n_groups; g++) {
        const SsimErrorStats *s = &per_group[g];
        g_string_append_printf(out, "%s%-*.*s %5u", indent, width, width, names[g], s->n);
        append_pct(out, s->mape, " %7.2f%%");
        append_pct(out, s->median, " %7.2f%%");
        append_pct(out, s->max, " %7.2f%%");
        append_pct(out, s->bias, " %+7.2f%%");
        append_pct(out, s->within10, " %7.1f%%");
        if (isfinite(s->tau))
            g_string_append_printf(out, " %7.3f\n", s->tau);
        else
            g_string_append_printf(out, " %7s\n", "-");
    }
}

static double row_error(double pred, double meas)
{
    return isfinite(pred) ? (pred - meas) / meas : NAN;
}

/* Whether group a comes before group b: their places (`width` numbers each) compared in turn. */
static gboolean group_before(const guint *place, guint width, guint a, guint b)
{
    for (guint w = 0; w < width; w++)
        if (place[(gsize)a * width + w] != place[(gsize)b * width + w])
            return place[(gsize)a * width + w] < place[(gsize)b * width + w];
    return FALSE;
}

SsimErrorStats *ssim_error_stats_by(const SsimRunSet *set, const guint *idx, guint n,
                                    const double *pred, const double *meas, const SsimGrouping *by,
                                    GPtrArray *names)
{
    g_autoptr(GPtrArray) keys = g_ptr_array_new_with_free_func(g_free);
    g_autofree guint *groups = ssim_run_set_groups_by(set, idx, n, by, keys);
    guint k = keys->len, width = 2 * by->n;
    g_autofree guint *place = g_new0(guint, MAX((gsize)k * width, 1u));
    for (guint p = 0; p < by->n; p++) {
        SsimGrouping one = ssim_grouping_one(by->part[p]);
        g_autofree guint *met = ssim_run_set_groups_by(set, idx, n, &one, NULL);
        for (guint j = 0; j < n; j++) {
            place[(gsize)groups[j] * width + 2 * p] =
                ssim_run_set_key_number(set, idx ? idx[j] : j, by->part[p]);
            place[(gsize)groups[j] * width + 2 * p + 1] = met[j];
        }
    }
    g_autofree guint *order = g_new(guint, MAX(k, 1u));
    for (guint g = 0; g < k; g++) { /* insertion sort: k is small */
        guint at = g;
        while (at > 0 && group_before(place, width, g, order[at - 1])) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = g;
    }
    /* Each row's group renumbered by its place in that order: the figures come out sorted. */
    g_autofree guint *rank = g_new(guint, MAX(k, 1u));
    for (guint g = 0; g < k; g++) {
        rank[order[g]] = g;
        g_ptr_array_add(names, g_strdup(g_ptr_array_index(keys, order[g])));
    }
    for (guint i = 0; i < n; i++)
        groups[i] = rank[groups[i]];
    g_autofree guint *model_of = ssim_run_set_groups(set, idx, n);
    SsimErrorStats *per = g_new0(SsimErrorStats, MAX(k, 1u));
    ssim_error_stats_groups_ranked(pred, meas, groups, model_of, n, k, per);
    return per;
}

/* One group's figures as a JSON object: `member` (its kind: "model", "group") names it. */
static void json_group(JsonBuilder *b, const char *member, const char *name,
                       const SsimErrorStats *s)
{
    const struct {
        const char *k;
        double v;
    } gf[] = {{"mape", s->mape}, {"median_error", s->median},   {"max_error", s->max},
              {"bias", s->bias}, {"within_10pct", s->within10}, {"kendall_tau", s->tau}};
    json_builder_begin_object(b);
    json_builder_set_member_name(b, member);
    json_builder_add_string_value(b, name);
    json_builder_set_member_name(b, "runs");
    json_builder_add_int_value(b, s->n);
    for (guint k = 0; k < G_N_ELEMENTS(gf); k++)
        ssim_json_set_number(b, gf[k].k, gf[k].v);
    json_builder_set_member_name(b, "tau_pairs");
    json_builder_add_int_value(b, s->pairs);
    json_builder_end_object(b);
}

/* The files the rows come from, in order of first appearance (paths interned by the set, so
 * one pointer a file), and each row's index among them. */
static GPtrArray *row_files(const SsimRunSet *set, guint *file_of)
{
    GPtrArray *files = g_ptr_array_new();
    for (guint i = 0; i < ssim_run_set_n(set); i++) {
        const char *p = ssim_run_set_run(set, i)->path;
        guint k = 0;
        while (k < files->len && g_ptr_array_index(files, k) != p)
            k++;
        if (k == files->len)
            g_ptr_array_add(files, (gpointer)p);
        file_of[i] = k;
    }
    return files;
}

/* Each run's memory: its peak estimate in GiB (NAN where the split is not one the estimate can
 * price) and whether that is above its GPUs' HBM.  Every measured run ran, so an estimate above
 * it is the memory model's error, said beside the time's. */
typedef struct {
    double *gib;
    gboolean *over;
    guint n_over;
} RowMemory;

static void row_memory_init(RowMemory *rm, const SsimRunSet *set)
{
    guint n = ssim_run_set_n(set);
    rm->gib = g_new(double, MAX(n, 1u));
    rm->over = g_new0(gboolean, MAX(n, 1u));
    rm->n_over = 0;
    for (guint i = 0; i < n; i++) {
        SsimSimConfig c = {.model = ssim_run_set_model(set, i),
                           .cluster = ssim_run_set_cluster(set, i),
                           .par = &ssim_run_set_run(set, i)->par};
        SsimMemory peak = {0};
        g_autoptr(GError) error = NULL;
        gboolean fits = ssim_simulate_memory(&c, &peak, &error);
        rm->over[i] = !fits && g_error_matches(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MEMORY);
        rm->gib[i] = fits || rm->over[i] ? (double)peak.total / (1024.0 * 1024.0 * 1024.0) : NAN;
        rm->n_over += rm->over[i];
    }
}

static void row_memory_clear(RowMemory *rm)
{
    g_free(rm->gib);
    g_free(rm->over);
}

static void append_table(GString *out, const SsimRunSet *set, const double *pred,
                         char *const *errors, const SsimErrorStats *stats, const guint *file_of,
                         GPtrArray *files, const SsimErrorStats *per, GPtrArray *names,
                         const RowMemory *rm);

/* One breakdown of validate --by: its grouping, its groups' names and their figures. */
typedef struct {
    const SsimGrouping *by;
    GPtrArray *names;
    SsimErrorStats *per;
} Breakdown;

static void breakdown_clear(gpointer p)
{
    Breakdown *bd = p;
    g_ptr_array_unref(bd->names);
    g_free(bd->per);
}

GString *ssim_validation_format(const SsimRunSet *set, const double *pred, char *const *errors,
                                const SsimErrorStats *stats, const SsimGrouping *by, guint n_by,
                                SsimFormat format)
{
    GString *out = g_string_new(NULL);
    guint n = ssim_run_set_n(set);
    RowMemory rm;
    row_memory_init(&rm, set);
    /* Rows of several files say which, as grep names the file only when given several. */
    g_autofree guint *file_of = g_new0(guint, MAX(n, 1u));
    g_autoptr(GPtrArray) files = row_files(set, file_of);
    gboolean several = files->len > 1;
    /* The figures of each model's rows (its sweep): is its ranking right, is it biased? */
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    const SsimGrouping model = ssim_grouping_one(SSIM_GROUP_BY_MODEL);
    g_autofree guint *groups = ssim_run_set_groups_by(set, NULL, n, &model, names);
    g_autofree double *meas = g_new(double, MAX(n, 1u));
    for (guint i = 0; i < n; i++)
        meas[i] = ssim_run_set_measured_ms(set, i);
    g_autofree SsimErrorStats *per = g_new0(SsimErrorStats, MAX(names->len, 1u));
    ssim_error_stats_groups(pred, meas, groups, n, names->len, per);
    if (format == SSIM_FORMAT_CSV) {
        g_string_append(out, several ? "file," : "");
        g_string_append(out, "line,model,gpus,dp,tp,pp,vstages,microbatch,global_batch,schedule,"
                             "recompute,measured_ms,predicted_ms,error,source,extrapolation,"
                             "peak_memory_gib,memory_fits\n");
        for (guint i = 0; i < n; i++) {
            const SsimMeasuredRun *r = ssim_run_set_run(set, i);
            const SsimParallel *p = &r->par;
            if (several) {
                ssim_csv_append_text(out, r->path);
                g_string_append_c(out, ',');
            }
            g_string_append_printf(out, "%u,", r->line);
            ssim_csv_append_text(out, r->model);
            g_string_append_printf(out, ",%u,%u,%u,%u,%u,%u,%u,%s,%s,%.4f,", ssim_parallel_world(p),
                                   p->dp, p->tp, p->pp, p->virtual_stages, p->microbatch,
                                   p->global_batch, p->schedule, ssim_recompute_name(p->recompute),
                                   ssim_run_set_measured_ms(set, i));
            if (isfinite(pred[i]))
                g_string_append_printf(out, "%.4f,%.5f,", pred[i],
                                       row_error(pred[i], ssim_run_set_measured_ms(set, i)));
            else
                g_string_append(out, ",,");
            ssim_csv_append_text(out, r->source);
            g_string_append_c(out, ',');
            g_autofree char *ex = ssim_run_set_extrapolation(set, i);
            if (ex)
                ssim_csv_append_text(out, ex);
            if (isfinite(rm.gib[i]))
                g_string_append_printf(out, ",%.2f,%d\n", rm.gib[i], !rm.over[i]);
            else
                g_string_append(out, ",,\n");
        }
        row_memory_clear(&rm);
        return out;
    }
    /* The same figures by each other grouping asked for (the model's table is always there). */
    g_autoptr(GArray) bds = g_array_new(FALSE, FALSE, sizeof(Breakdown));
    g_array_set_clear_func(bds, breakdown_clear);
    for (guint b = 0; b < n_by; b++) {
        gboolean seen = ssim_grouping_equal(&by[b], &model);
        for (guint c = 0; c < bds->len; c++)
            seen = seen || ssim_grouping_equal(g_array_index(bds, Breakdown, c).by, &by[b]);
        if (seen)
            continue;
        Breakdown bd = {.by = &by[b], .names = g_ptr_array_new_with_free_func(g_free)};
        bd.per = ssim_error_stats_by(set, NULL, n, pred, meas, &by[b], bd.names);
        g_array_append_val(bds, bd);
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
            if (several) {
                json_builder_set_member_name(b, "file");
                json_builder_add_string_value(b, r->path);
            }
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
            ssim_json_set_number(b, "predicted_ms", pred[i]);
            ssim_json_set_number(b, "error", row_error(pred[i], m));
            if (errors && errors[i]) {
                json_builder_set_member_name(b, "failure");
                json_builder_add_string_value(b, errors[i]);
            }
            json_builder_set_member_name(b, "source");
            json_builder_add_string_value(b, r->source);
            g_autofree char *ex = ssim_run_set_extrapolation(set, i);
            if (ex) {
                json_builder_set_member_name(b, "extrapolation");
                json_builder_add_string_value(b, ex);
            }
            ssim_json_set_number(b, "peak_memory_gib", rm.gib[i]);
            if (isfinite(rm.gib[i])) {
                json_builder_set_member_name(b, "memory_fits");
                json_builder_add_boolean_value(b, !rm.over[i]);
            }
            json_builder_end_object(b);
        }
        json_builder_end_array(b);
        json_builder_set_member_name(b, "summary");
        json_builder_begin_object(b);
        const struct {
            const char *k;
            double v;
        } figs[] = {{"mape", stats->mape},      {"median_error", stats->median},
                    {"max_error", stats->max},  {"bias", stats->bias},
                    {"msle", stats->msle},      {"within_10pct", stats->within10},
                    {"kendall_tau", stats->tau}};
        json_builder_set_member_name(b, "runs");
        json_builder_add_int_value(b, stats->n);
        json_builder_set_member_name(b, "failed");
        json_builder_add_int_value(b, stats->failed);
        for (guint k = 0; k < G_N_ELEMENTS(figs); k++)
            ssim_json_set_number(b, figs[k].k, figs[k].v);
        json_builder_set_member_name(b, "tau_pairs");
        json_builder_add_int_value(b, stats->pairs);
        json_builder_set_member_name(b, "memory_misfits");
        json_builder_add_int_value(b, rm.n_over);
        json_builder_end_object(b);
        json_builder_set_member_name(b, "models");
        json_builder_begin_array(b);
        for (guint g = 0; g < names->len; g++)
            json_group(b, "model", g_ptr_array_index(names, g), &per[g]);
        json_builder_end_array(b);
        if (bds->len > 0) {
            json_builder_set_member_name(b, "by");
            json_builder_begin_object(b);
            for (guint c = 0; c < bds->len; c++) {
                const Breakdown *bd = &g_array_index(bds, Breakdown, c);
                g_autofree char *title = ssim_grouping_name(bd->by);
                json_builder_set_member_name(b, title);
                json_builder_begin_array(b);
                for (guint g = 0; g < bd->names->len; g++)
                    json_group(b, "group", g_ptr_array_index(bd->names, g), &bd->per[g]);
                json_builder_end_array(b);
            }
            json_builder_end_object(b);
        }
        json_builder_end_object(b);
        ssim_json_append(out, b, TRUE);
    } else {
        append_table(out, set, pred, errors, stats, file_of, files, per, names, &rm);
        for (guint c = 0; c < bds->len; c++) {
            const Breakdown *bd = &g_array_index(bds, Breakdown, c);
            g_autofree char *title = ssim_grouping_name(bd->by);
            g_string_append_printf(out, "\nper %s (tau: pairs of runs of one model)\n", title);
            ssim_error_groups_append(out, bd->per, (char *const *)bd->names->pdata, bd->names->len,
                                     "  ");
        }
    }
    row_memory_clear(&rm);
    return out;
}

/* The table: a line per run, the summary, the figures per model. */
static void append_table(GString *out, const SsimRunSet *set, const double *pred,
                         char *const *errors, const SsimErrorStats *stats, const guint *file_of,
                         GPtrArray *files, const SsimErrorStats *per, GPtrArray *names,
                         const RowMemory *rm)
{
    guint n = ssim_run_set_n(set);
    gboolean several = files->len > 1;
    for (guint k = 0; several && k < files->len; k++)
        g_string_append_printf(out, "%s%u %s%s", k ? ", " : "files: ", k + 1,
                               (const char *)g_ptr_array_index(files, k),
                               k + 1 == files->len ? " (line: FILE:LINE)\n\n" : "");
    g_string_append_printf(out, "%6s  %-16s %5s %9s %4s %4s %9s %12s %12s %8s\n", "line", "model",
                           "gpus", "dp/tp/pp", "mb", "gbs", "recompute", "measured ms",
                           "predicted ms", "error");
    guint outside = 0;
    g_autofree char *first_outside = NULL, *first_over = NULL;
    for (guint i = 0; i < n; i++) {
        const SsimMeasuredRun *r = ssim_run_set_run(set, i);
        const SsimParallel *p = &r->par;
        double m = ssim_run_set_measured_ms(set, i);
        /* A context-parallel run's cp after its dp: "4c2/1/1". */
        g_autofree char *split = p->cp > 1
                                     ? g_strdup_printf("%uc%u/%u/%u", p->dp, p->cp, p->tp, p->pp)
                                     : g_strdup_printf("%u/%u/%u", p->dp, p->tp, p->pp);
        g_autofree char *ex = ssim_run_set_extrapolation(set, i);
        g_autofree char *line = several ? g_strdup_printf("%u:%u", file_of[i] + 1, r->line)
                                        : g_strdup_printf("%u", r->line);
        g_string_append_printf(out, "%6s  %-16.16s %5u %9s %4u %4u %9s %12.2f ", line, r->model,
                               ssim_parallel_world(p), split, p->microbatch, p->global_batch,
                               ssim_recompute_name(p->recompute), m);
        if (isfinite(pred[i]))
            g_string_append_printf(out, "%12.2f %+7.1f%%%s%s\n", pred[i],
                                   100 * row_error(pred[i], m), ex ? " *" : "",
                                   rm->over[i] ? " m" : "");
        else
            g_string_append_printf(out, "%12s  failed: %s\n", "-",
                                   errors && errors[i] ? errors[i] : "?");
        if (ex && outside++ == 0)
            first_outside = g_strdup_printf("line %s: %s", line, ex);
        if (rm->over[i] && first_over == NULL)
            first_over = g_strdup_printf("line %s: %.1f GiB on an %s", line, rm->gib[i],
                                         ssim_run_set_cluster(set, i)->gpu);
    }
    g_string_append_c(out, '\n');
    if (rm->n_over > 0)
        g_string_append_printf(out,
                               "m %u of %u runs are estimated above their GPUs' memory, though "
                               "they ran (first: %s): the memory estimate is too high for them\n\n",
                               rm->n_over, n, first_over);
    if (outside > 0)
        g_string_append_printf(out,
                               "* %u of %u runs lie outside the shapes the cluster was calibrated "
                               "on ([calibration] of its file; first: %s): their predictions are "
                               "extrapolations\n\n",
                               outside, n, first_outside);
    ssim_error_stats_append(out, stats, "");
    g_string_append(out, "\nper model\n");
    ssim_error_groups_append(out, per, (char *const *)names->pdata, names->len, "  ");
}

gboolean ssim_validation_plot(const SsimRunSet *set, const double *pred, const char *image,
                              const char *title, gboolean *rendered, GError **error)
{
    guint n = ssim_run_set_n(set);
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    const SsimGrouping model = ssim_grouping_one(SSIM_GROUP_BY_MODEL);
    g_autofree guint *group = ssim_run_set_groups_by(set, NULL, n, &model, names);
    g_autofree SsimPredictedPoint *points = g_new0(SsimPredictedPoint, MAX(n, 1));
    for (guint i = 0; i < n; i++)
        points[i] = (SsimPredictedPoint){.measured = ssim_run_set_measured_ms(set, i),
                                         .predicted = pred[i],
                                         .group = group[i],
                                         .line = ssim_run_set_run(set, i)->line};
    /* The default title says what was run on what, and the MAPE of the points shown. */
    guint shown = 0;
    double ape = 0;
    const char *cluster = n ? ssim_run_set_cluster(set, 0)->name : "";
    for (guint i = 0; i < n; i++) {
        if (strcmp(ssim_run_set_cluster(set, i)->name, cluster) != 0)
            cluster = "several clusters";
        if (points[i].measured > 0 && points[i].predicted > 0 && isfinite(points[i].predicted)) {
            shown++;
            ape += fabs(points[i].predicted - points[i].measured) / points[i].measured;
        }
    }
    g_autofree char *auto_title =
        g_strdup_printf("predicted vs measured iteration time: %u runs on %s, MAPE %.2f%%", shown,
                        cluster, shown ? 100 * ape / shown : 0.0);
    SsimPredictedChart chart = {.points = points,
                                .n_points = n,
                                .groups = (const char *const *)names->pdata,
                                .n_groups = names->len,
                                .unit = "ms",
                                .about = "shiftsim validate: predicted vs measured iteration time",
                                .title = title ? title : auto_title};
    SsimPlotStatus status;
    if (!ssim_plot_predicted(&chart, image, &status, error))
        return FALSE;
    if (rendered)
        *rendered = status == SSIM_PLOT_RENDERED;
    return TRUE;
}
