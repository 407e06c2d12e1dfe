/*
 * The flow network calibrated by measured collectives: a profile's comm rows (nccl-tests, vTrain's
 * all-reduce tables, shiftsim-bench) set each collective's effective bus bandwidth and latency on
 * the network, instead of replacing the network's answer, so contention still applies.
 *
 * The fits.  Each measured curve (op, ranks, ranks per node, algorithm, dtype) is fitted by least
 * squares (gsl_fit_linear) to time = a + b * bytes twice: over its smallest sizes (up to 4x the
 * smallest), whose intercept a (clamped to >= 0) is the collective's latency, and over its largest
 * sizes (from half the largest up), whose slope gives the bus bandwidth nccl-tests reports
 * (busbw = bus factor / b, the bus factor being 2(n-1)/n for all-reduce, (n-1)/n for all-gather,
 * reduce-scatter and all-to-all, 1 otherwise).  The latency per ring step is a divided by the
 * ring's steps (2(n-1) for all-reduce, n-1 for all-gather, reduce-scatter and all-to-all, 1
 * otherwise); the efficiency is busbw over the scope's nominal link (a GPU's NVLink inside a
 * node, its NIC across nodes).  These are the figures a user sees (ssim_netcal_table()).
 *
 * What the network gets.  For a collective of a size, the uncontended time is the profile's own
 * lookup (ssim_profile_comm_time(): exact at measured sizes, log-log interpolated between them,
 * extrapolated outside), so a calibrated collective alone on the network reproduces the measured
 * table; its latency part is the fitted latency of the curve of the same op and scope with the
 * nearest rank count, carried per ring step to the asked rank count, and capped by the time.  The
 * network spreads the latency over the algorithm's steps and scales the flows' bytes so that
 * their uncontended time is the rest (net.h, SsimNetCalibration).  A send/receive pair and a
 * collective-permute ask the profile's sendrecv rows.  Whatever the profile has nothing for runs
 * on the network's nominal figures.
 *
 * Provenance.  Every instance asked is counted, weighted by its graph ops as the profiled cost
 * model counts (one per member), per op kind (the comm row of SsimCostExplain) and per lowering
 * class: exact, interpolated or extrapolated for calibrated ones, analytical for those left to
 * the nominal network.
 *
 * Ownership: ssim_netcal_new() borrows the profile (it must outlive the calibration) and copies
 * what it needs of the cluster; the SsimNetCalibration view and the fits are borrowed from it.
 * One run at a time (lookups update a cache and the counters).
 */
#pragma once

#include <shiftsim/net.h>
#include <shiftsim/profiled.h>

G_BEGIN_DECLS

typedef struct {
    SsimProfileComm op;
    guint ranks, ranks_per_node;
    gboolean intra; /* all ranks on one node */
    char algo[24];  /* "" when the rows do not say */
    int dtype;      /* SsimDtype or SSIM_PROFILE_NO_DTYPE */
    guint n_points; /* measured sizes */
    guint64 min_bytes, max_bytes;
    double latency_us;      /* a, from the smallest sizes, >= 0 */
    double step_latency_us; /* a / ring steps */
    double busbw;           /* bytes/s, from the largest sizes */
    double link_bw;         /* bytes/s: the scope's nominal link */
    double efficiency;      /* busbw / link_bw */
} SsimNetCalFit;

typedef struct SsimNetCal SsimNetCal;

/* Fits every comm curve of `profile` with at least two sizes; `dtype` is preferred in lookups. */
SsimNetCal *ssim_netcal_new(const SsimProfile *profile, const SsimCluster *cluster,
                            SsimDtype dtype);
void ssim_netcal_free(SsimNetCal *cal);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SsimNetCal, ssim_netcal_free)

guint ssim_netcal_n_fits(const SsimNetCal *cal);
const SsimNetCalFit *ssim_netcal_fit(const SsimNetCal *cal, guint i);

/* The view to hand to ssim_net_set_calibration() (borrowed). */
SsimNetCalibration ssim_netcal_calibration(SsimNetCal *cal);

/*
 * What the calibrated network charges, uncontended, for `kind` (SSIM_COLL_N: a send/receive
 * pair) of `bytes` over `n` GPUs, `ranks_per_node` per node: the measured time and its latency
 * part, both in ns, with the lookup's provenance.  FALSE when the profile has nothing for it.
 * Not counted.
 */
gboolean ssim_netcal_target(SsimNetCal *cal, SsimCollKind kind, const char *algo, guint n,
                            guint ranks_per_node, guint64 bytes, SsimTime *total, SsimTime *latency,
                            SsimCostSource *source);

/* The counters (see the top), and a reset of them (the cache is kept). */
const SsimCostExplain *ssim_netcal_explain(const SsimNetCal *cal);
const SsimClassExplain *ssim_netcal_class_explain(const SsimNetCal *cal);
void ssim_netcal_reset_explain(SsimNetCal *cal);

/* The fits as a text table (a header line, a row per fit), or "" when there are none. */
GString *ssim_netcal_table(const SsimNetCal *cal);

G_END_DECLS
