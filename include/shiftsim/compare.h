/*
 * A comparison of placement policies (place.h) on one configuration: the same model, cluster and
 * split simulated under each policy, the gain of each over the first (the reference), the moves
 * each made, and where the difference in step time comes from.  The default list puts the
 * paper's pair first: its baseline (alpa) and its relocation (commshift); then each of our
 * extensions on top of alpa, and auto.
 *
 * Each policy runs under its own schedule (alpa, commshift and auto Alpa's MPMD 1F1B `alpa`, xla
 * the lock-step `xla`, megatron `1f1b`) unless the spec forces one schedule for all; megatron gets
 * Megatron-LM's default gradient bucket unless the spec's split names one.  XLA's latency-hiding
 * scheduler (placement.lhs) and the repeat count of communication apply to every policy alike.
 *
 * Attribution.  The step time of a replay is exactly the length of its critical path (see
 * ssim_critical_path): the durations of the ops on it plus the gaps between them.  Grouping the
 * path's ops by (stage, what they are: compute, TP forward or backward collectives, pipeline
 * transfers, gradient reductions) and subtracting a policy's groups from the reference's splits
 * the step-time difference into parts that add up to it exactly.  The output depends only on the
 * inputs (no clock, no hash order), so two runs write the same bytes.
 *
 * Ownership: ssim_compare_run() borrows the model and the cluster (both must outlive the
 * comparison) and returns a comparison the caller frees with ssim_compare_free(); the policies'
 * runs, graphs and timelines are borrowed from it.
 */
#pragma once

#include <shiftsim/plot.h>
#include <shiftsim/report.h>
#include <shiftsim/sim.h>

G_BEGIN_DECLS

/* The policies compared when none are named, and the most a list may name. */
#define SSIM_COMPARE_POLICIES_DEFAULT "alpa,commshift,alpa+early-dp,alpa+async-pp,alpa+late-tp,auto"
#define SSIM_COMPARE_MAX_POLICIES     16

/*
 * Reads a comma-separated list of policies, each "NAME[+EXT...]" (ssim_placement_parse; blank
 * items are skipped; NULL is the default list) into `policies` (kind and extensions; the other
 * fields are SSIM_PLACEMENT_INIT's).  Returns how many it read, or 0 with SSIM_CONFIG_ERROR set
 * ("unknown placement 'x' (known: ...)", "too many entries", "give at least one policy").
 */
guint ssim_compare_policies_parse(const char *list, SsimPlacement *policies, GError **error);

typedef struct {
    const SsimModel *model;
    const SsimCluster *cluster;
    SsimParallel par;        /* the split; each policy sets its schedule and placement name */
    gboolean force_schedule; /* run every policy under par.schedule instead of its own */
    /* Replace par.recompute by the cheapest mode (none, selective, full) whose memory estimate
     * fits under the lock-step schedule (the forced one if any), or by full when none fits; not
     * done with ignore_memory. */
    gboolean pick_recompute;
    gboolean exact;
    gboolean ignore_memory;
    /* What every policy shares: extensions added to each policy's own (shifts; for auto, what it
     * may search), auto's budget, lhs, the gradients commshift moves; the kind is each policy's. */
    SsimPlacement placement;
    guint comm_repeat;     /* every communication runs this many times (0, 1: once) */
    gboolean bucket_given; /* par.dp_bucket_bytes was chosen: megatron keeps it */
    guint64 max_ops, max_events;
    /* Host memory (SsimSimConfig.max_memory): every policy's graph and timeline are kept for the
     * report, so the estimate of one run times the policies must fit before the first runs. */
    guint64 max_memory;
} SsimCompareSpec;

/* One policy's run. */
typedef struct {
    SsimPlacementKind kind;
    SsimPlacement placement; /* as it ran */
    char name[64];           /* "alpa", "alpa+early-dp" (ssim_placement_to_string) */
    SsimParallel par;        /* as it ran: the policy's schedule (unless forced) and name */
    SsimResult result;
    SsimLowered *lowered;   /* the graph it ran */
    SsimTimeline *timeline; /* and its per-op times */
    SsimPlaceReport report; /* what the policy moved */
} SsimComparePolicy;

/* One group of ops on the critical paths ("stage 0 compute", "waiting (gaps on the path)"): its
 * time on the reference's path and on the policy's. */
typedef struct {
    char *what;
    SsimTime before, after;
} SsimCompareGroup;

typedef struct SsimCompare SsimCompare;

/*
 * Simulates `spec` under policies[0..n) (n >= 1; the first is the reference).  Fails (NULL,
 * `error` set and prefixed "placement NAME: ") when a policy's simulation fails.
 */
SsimCompare *ssim_compare_run(const SsimCompareSpec *spec, const SsimPlacement *policies, guint n,
                              GError **error);
void ssim_compare_free(SsimCompare *cmp);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SsimCompare, ssim_compare_free)

/* The model and cluster compared on (the spec's, borrowed). */
const SsimModel *ssim_compare_model(const SsimCompare *cmp);
const SsimCluster *ssim_compare_cluster(const SsimCompare *cmp);
guint ssim_compare_n_policies(const SsimCompare *cmp);
const SsimComparePolicy *ssim_compare_policy(const SsimCompare *cmp, guint i);
/* How much faster policy i is than the reference, in percent (0 when a step time is 0). */
double ssim_compare_gain(const SsimCompare *cmp, guint i);
/*
 * The groups whose time on the critical path differs between the reference and policy i, the
 * largest change first (ties by name): the sum of before - after over them is the difference in
 * step time.  A GArray of SsimCompareGroup the caller frees (g_array_unref frees the names).
 */
GArray *ssim_compare_attribution(const SsimCompare *cmp, guint i);

/*
 * The comparison (compare-report.c).  As a table: the configuration, a row per policy (step time,
 * tokens/s, gain, exposed communication per class, extra memory), each policy's moves, and for
 * commshift and auto under the reference's schedule the `top` largest groups of the attribution.
 * As CSV: a row per policy.  As JSON: the configuration and an object per policy with its moves
 * and, under the reference's schedule, the whole attribution.
 */
GString *ssim_compare_format(const SsimCompare *cmp, SsimFormat format, guint top);
/*
 * The plots: a bar per policy of its step time split into exposed TP, PP, DP and the rest, to
 * `image` (stepbars.h), and a Gantt chart of each policy to IMAGE-POLICY.EXT (EXT being image's,
 * or .png) showing what `view` asks (plot.h; NULL or max_ranks 0: the first 8 ranks, the whole
 * step).  `status` is SSIM_PLOT_NO_GNUPLOT when any was not rendered.
 */
gboolean ssim_compare_plot(const SsimCompare *cmp, const char *image, const SsimGanttView *view,
                           SsimPlotStatus *status, GError **error);

G_END_DECLS
