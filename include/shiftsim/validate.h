/*
 * Validation: how far the simulator's predictions of a run set are from the measurements.  The
 * error statistics (MAPE, median, max and mean signed error, mean squared log error, the
 * fraction within 10%, Kendall's tau of the ranking inside groups of runs that share a model),
 * overall and per model, the report of
 * `shiftsim validate` (table, CSV or JSON) and its predicted-vs-measured plot.
 *
 * Every comparison is of iteration times in ms (include/shiftsim/runset.h): a row's error is
 * (predicted - measured) / measured, and a row without a prediction (NAN) counts as failed and
 * stays out of the figures.
 *
 * Ownership: the report is a new GString the caller frees; the run set and the arrays are
 * borrowed.
 */
#pragma once

#include <shiftsim/report.h>
#include <shiftsim/runset.h>

G_BEGIN_DECLS

typedef struct {
    guint n;         /* rows with a prediction */
    guint failed;    /* rows whose simulation failed (not in the figures) */
    double mape;     /* mean |pred - meas| / meas, as a fraction */
    double median;   /* median of |error| */
    double max;      /* largest |error| */
    double bias;     /* mean signed error */
    double msle;     /* mean of (log pred - log meas)^2 */
    double within10; /* fraction of rows with |error| <= 10% */
    double tau;      /* Kendall's tau-b over pairs inside groups (NAN with no untied pair) */
    guint pairs;     /* pairs counted for tau */
} SsimErrorStats;

/*
 * Statistics of pred vs meas over n rows (a NAN prediction counts as failed).  `groups` (may be
 * NULL: no tau) gives each row's group id; tau is Kendall's tau-b over the pairs of rows in the
 * same group, (concordant - discordant) / sqrt((pairs - tied in pred) (pairs - tied in meas)): a
 * pair tied in either ranking is neither, and one tied in the predictions (two runs of one
 * configuration) asks nothing of the ranking.  NAN where every pair is tied in either.
 */
void ssim_error_stats(const double *pred, const double *meas, const guint *groups, guint n,
                      SsimErrorStats *out);

/* The statistics of each group g < n_groups over the rows j with groups[j] == g (tau over all
 * pairs of the group's rows). */
void ssim_error_stats_groups(const double *pred, const double *meas, const guint *groups, guint n,
                             guint n_groups, SsimErrorStats *out);
/* The same with tau over the pairs of a group's rows that also share a `ranked` id (may be NULL:
 * all of them), e.g. the runs of one tp that share a model. */
void ssim_error_stats_groups_ranked(const double *pred, const double *meas, const guint *groups,
                                    const guint *ranked, guint n, guint n_groups,
                                    SsimErrorStats *out);
/* The figures of rows idx[0..n) of `set` (all when idx is NULL; pred[j] and meas[j] are row
 * idx[j]'s) per group of `by`, their names into `names`: the groups in the order of their parts,
 * the first part first (a part's number, tp 1, 2, 4, ...; a model, file or cluster in the order
 * first met), tau over the pairs of a group's rows that share a model as well.  Caller frees. */
SsimErrorStats *ssim_error_stats_by(const SsimRunSet *set, const guint *idx, guint n,
                                    const double *pred, const double *meas, const SsimGrouping *by,
                                    GPtrArray *names);
/* The words the reports use for what was compared ("runs", "run"), what was done to it
 * ("simulated") and what shares a ranking ("model"). */
typedef struct {
    const char *items, *item, *done, *group;
} SsimErrorWords;
extern const SsimErrorWords SSIM_ERROR_WORDS_RUNS;

/* A table, one line per group: its name, runs, MAPE, median, max, bias, within 10%, tau. */
void ssim_error_groups_append(GString *out, const SsimErrorStats *per_group, char *const *names,
                              guint n_groups, const char *indent);
/* The same with `words->items` ("rows", ...) heading the count column instead of "runs". */
void ssim_error_groups_append_as(GString *out, const SsimErrorStats *per_group, char *const *names,
                                 guint n_groups, const char *indent, const SsimErrorWords *words);

/* The validation report: a table (row per run, then the summary and the figures per model, then
 * per group of each grouping `by[0..n_by)` other than the model, in the order of its parts'
 * numbers), CSV (one row per run; `by` does not apply) or JSON (rows, summary, models, and "by":
 * a member per grouping, named as ssim_grouping_name(), with its groups).  Tau in a `by` group
 * counts the pairs of its runs that share a model.  `errors` and `by` may be NULL. */
GString *ssim_validation_format(const SsimRunSet *set, const double *pred, char *const *errors,
                                const SsimErrorStats *stats, const SsimGrouping *by, guint n_by,
                                SsimFormat format);
/* The summary lines alone (n, MAPE, median, max, bias, within 10%, tau). */
void ssim_error_stats_append(GString *out, const SsimErrorStats *stats, const char *indent);
/* The same in `words`. */
void ssim_error_stats_append_as(GString *out, const SsimErrorStats *stats, const char *indent,
                                const SsimErrorWords *words);
/* Adds to the object `builder` is in the members `words->items` ("runs"), "failed", "mape",
 * "median", "max", "bias", "within10", "tau" (fractions; null where undefined, tau without
 * pairs) and "pairs". */
void ssim_error_stats_json(JsonBuilder *builder, const SsimErrorStats *stats,
                           const SsimErrorWords *words);

/* Writes IMAGE.dat and IMAGE.gp (predicted vs measured, a colour per model, y = x and a +/-10%
 * band, log axes over more than a decade: ssim_plot_predicted) and renders with gnuplot when
 * present; *rendered tells whether the image was written. */
gboolean ssim_validation_plot(const SsimRunSet *set, const double *pred, const char *image,
                              const char *title, gboolean *rendered, GError **error);

G_END_DECLS
