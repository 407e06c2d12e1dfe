/*
 * Calibration: fitting the cost model's free parameters (include/shiftsim/clusterparams.h) to
 * measured runs with GSL, and the k-fold cross-validated error that says how well the fit
 * predicts runs it has not seen.
 *
 * The loss is the mean squared log error of predicted vs measured iteration time over the rows
 * fitted (include/shiftsim/runset.h).  `shiftsim calibrate` stores the fitted cluster with
 * ssim_cluster_write_ini() (include/shiftsim/cluster.h).
 *
 * Ownership: the run set, the start cluster and the options are borrowed; results go to
 * caller-provided structs and arrays.
 */
#pragma once

#include <shiftsim/cluster.h>
#include <shiftsim/clusterparams.h>
#include <shiftsim/runset.h>

G_BEGIN_DECLS

typedef struct {
    guint64 mask;       /* parameters to fit */
    guint max_iter;     /* Nelder-Mead iterations (default 200) */
    double tolerance;   /* stop when the simplex size falls below this (default 1e-3) */
    guint threads;      /* 0: g_get_num_processors() */
    guint scan;         /* before the simplex, try this many points across each parameter's
                           range in turn, keeping the best (0: start at the start values) */
    gboolean intervals; /* also the parameters' standard errors and 95% intervals */
} SsimCalibOptions;

typedef struct {
    SsimCalibValues start, fitted;
    double loss_before, loss_after; /* mean squared log error on the rows fitted */
    guint iterations;
    gboolean converged;
    /* With options->intervals: per parameter, in its key's unit (has_interval bit p set when the
     * rows determine it): the standard error and the half-width of the 95% interval
     * (Student's t with n - p degrees of freedom); at_bound when the fit ended at a bound of
     * its range (the interval is then one-sided at best). */
    guint64 has_interval;
    double std_error[16], half_width[16];
    gboolean at_bound[16];
    double residual_sd; /* s = sqrt(SSE / (n - p)) of the log residuals */
} SsimCalibFit;

/*
 * Fits the parameters of options->mask on rows idx[0..n) by minimising the mean squared log
 * error with GSL's Nelder-Mead simplex (gsl_multimin_fminimizer_nmsimplex2), starting from the
 * figures of `start` (a cluster; its other figures are what each row's cluster has).  Each
 * parameter is searched inside its bounds through a logistic map (log scale where listed).
 * With options->scan = S > 0 the simplex starts from the result of one coordinate pass: for
 * each fitted parameter in list order, the loss at S points evenly spread over its range (in
 * the logistic domain) and at the current point, keeping the best; S dim extra evaluations.
 */
gboolean ssim_calibrate_fit(const SsimRunSet *set, const guint *idx, guint n,
                            const SsimCluster *start, const SsimCalibOptions *options,
                            SsimCalibFit *fit, GError **error);

/*
 * K-fold cross-validation on rows idx[0..n): row idx[j] is in fold j % k; for each fold, fit on
 * the others and predict it.  cv_pred[j] receives the held-out prediction of idx[j].
 */
gboolean ssim_calibrate_cross_validate(const SsimRunSet *set, const guint *idx, guint n, guint k,
                                       const SsimCluster *start, const SsimCalibOptions *options,
                                       double *cv_pred, GError **error);

/* The same with any fold assignment: row idx[j] is in fold fold[j] < k (an empty fold is
 * skipped; a fold holding every row is an error). */
gboolean ssim_calibrate_cross_validate_folds(const SsimRunSet *set, const guint *idx, guint n,
                                             const guint *fold, guint k, const SsimCluster *start,
                                             const SsimCalibOptions *options, double *cv_pred,
                                             GError **error);

/*
 * Leave-one-group-out cross-validation: the folds are the groups of `by` (every run of one
 * model, node count, tp, ..., or of one tp and pp with "tp+pp"), so each held-out prediction
 * comes from a fit that saw no run of its group.  *n_groups receives the number of groups (at
 * least two, else an error).
 */
gboolean ssim_calibrate_cross_validate_groups(const SsimRunSet *set, const guint *idx, guint n,
                                              const SsimGrouping *by, const SsimCluster *start,
                                              const SsimCalibOptions *options, double *cv_pred,
                                              guint *n_groups, GError **error);

G_END_DECLS
