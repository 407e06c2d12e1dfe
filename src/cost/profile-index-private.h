/*
 * The measured-profile lookup's shared inside: the index built once per profile (curves of
 * points, compute points with their efficiency curves) and the helpers every part of the lookup
 * uses.  profile-index.c builds the index and evaluates curves; profile-comm.c answers
 * collectives (with their layouts), profile-compute.c GEMMs, attention, memory-bound kernels and
 * copies, profile-summary.c `profile show` and --explain-costs.  Nothing else includes this.
 *
 * Invariants: curve points are strictly increasing in x and every time is > 0; a curve's key
 * (kind, op, ranks, ranks per node, NICs per rank, dtype, name, algo) is unique; the index is
 * immutable once published (profile-private.h), so concurrent lookups only read it.
 */
#pragma once

#include "src/cost/profile-private.h"

typedef struct {
    double x, t;   /* bytes or FLOPs; microseconds */
    double lx, lt; /* their logs */
    double w;      /* weight (samples) while merging */
} Point;

typedef struct {
    SsimProfileKind kind;
    int op;           /* SsimProfileComm for comm curves; -1 otherwise */
    const char *name; /* op string (NULL: the pooled memory curve) */
    int dtype;
    guint ranks, rpn;
    double nics; /* comm: NICs per rank (0: not recorded) */
    const char *algo;
    guint first, n;      /* in ProfileIndex.points */
    double fit_c, fit_h; /* compute curves: the fitted t = c (F + h), see fit_efficiency() */
} Curve;

typedef struct {
    SsimProfileKind kind;
    const char *pass; /* attention: "fwd"/"bwd"; gemm: "" */
    int dtype;
    guint64 dim[4]; /* m n k batch */
    double ldim[4];
    double flops, t;
    guint eff; /* its efficiency curve (and fit) in ProfileIndex.curves */
} CPoint;

struct ProfileIndex {
    GArray *points;     /* Point */
    GArray *curves;     /* Curve */
    GArray *cpoints;    /* CPoint, sorted by (kind, pass, dtype, dims) */
    gint pooled_memory; /* curve index or -1 */
};

/* The index of `p`, built on first use (thread-safe). */
const ProfileIndex *profile_index_get(const SsimProfile *p);

/* The time (us) of curve `c` at x > 0: measured, interpolated in log-log, or continued from its
 * end with a slope clamped to [0, 1]; returns how. */
SsimCostSource profile_curve_eval(const ProfileIndex *ix, const Curve *c, double x, double *t);

/* The FLOPs of a compute row (GEMM: 2 m n k batch; attention: 4 or 8 b s^2 h d). */
double profile_compute_flops(SsimProfileKind kind, gboolean backward, const guint64 d[4]);

/* Least-squares fit of t = c (F + h) (eff(F) = F / t = e F / (F + h), e = 1 / c) in log time. */
void profile_fit_points(const Point *p, guint n, double *fit_c, double *fit_h);
double profile_fit_time(const Curve *c, double flops);

/* Fills `out` (time in us and ns, source); returns TRUE. */
gboolean profile_finish(SsimCostEstimate *out, double t_us, SsimCostSource source);
/* The analytical answer `t` (ANALYTICAL); FALSE with a zero answer when `fb` is NULL. */
gboolean profile_analytical(SsimCostEstimate *out, const SsimAnalyticParams *fb, SsimTime t);
