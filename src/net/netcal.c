/*
 * Calibrating the flow network from measured collectives (see include/shiftsim/netcal.h).
 *
 * Fits are made once, at construction: the profile's comm rows are grouped by curve (op, ranks,
 * ranks per node, algorithm, dtype) in the order they were read, each curve's sizes sorted, and
 * the two least-squares lines fitted on the smallest and the largest sizes.  Lookups ask the
 * profile for the time and the fits for the latency; their answers are cached per (op, ranks,
 * ranks per node, algorithm, bytes), so a lowered iteration that repeats a few shapes thousands
 * of times does a few lookups.  The counters are bumped on every call, cached or not.
 */
#include <shiftsim/netcal.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_fit.h>
#include <math.h>
#include <string.h>

typedef struct {
    guint64 bytes;
    guint32 ranks, per_node;
    guint8 op, algo;
} Key;

typedef struct {
    gboolean ok;
    SsimTime total, latency;
    SsimCostSource source;
} Answer;

struct SsimNetCal {
    const SsimProfile *profile;
    SsimDtype dtype;
    SsimAnalyticParams net; /* the cluster's network model: carries other layouts' curves */
    GArray *fits;           /* SsimNetCalFit */
    GHashTable *cache;      /* Key -> Answer, both owned */
    GArray *cls_map;        /* SsimOpClass per class string id, G_MAXUINT32: not yet */
    SsimCostExplain explain;
    SsimClassExplain class_explain;
};

/* The ring's step count for `op` over `n` ranks (ssim_profile_bus_factor gives its bus factor). */
static double ring_steps(SsimProfileComm op, guint n)
{
    switch (op) {
    case SSIM_PCOMM_ALLREDUCE:
        return 2.0 * (n - 1);
    case SSIM_PCOMM_ALLGATHER:
    case SSIM_PCOMM_REDUCESCATTER:
    case SSIM_PCOMM_ALLTOALL:
        return n - 1.0;
    default:
        return 1.0;
    }
}

typedef struct {
    double bytes, us;
} Point;

static int cmp_point(gconstpointer a, gconstpointer b)
{
    const Point *x = a, *y = b;
    return x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
}

/* Least-squares line through pts[lo, hi) (at least two distinct sizes); FALSE when degenerate. */
static gboolean fit_line(const Point *pts, guint lo, guint hi, double *a, double *b)
{
    guint n = hi - lo;
    if (n < 2 || pts[lo].bytes == pts[hi - 1].bytes)
        return FALSE;
    double *x = g_new(double, n), *y = g_new(double, n);
    for (guint i = 0; i < n; i++) {
        x[i] = pts[lo + i].bytes;
        y[i] = pts[lo + i].us;
    }
    double c00, c01, c11, sumsq;
    int rc = gsl_fit_linear(x, 1, y, 1, n, a, b, &c00, &c01, &c11, &sumsq);
    g_free(x);
    g_free(y);
    return rc == GSL_SUCCESS && isfinite(*a) && isfinite(*b);
}

static gboolean same_curve(const SsimNetCalFit *f, SsimProfileComm op, const SsimProfileRow *r)
{
    return f->op == op && f->ranks == r->ranks && f->ranks_per_node == r->ranks_per_node &&
           f->dtype == r->dtype && strcmp(f->algo, r->algo) == 0;
}

/* Fills the fitted figures of `f` from its points (sorted here). */
static void fit_curve(SsimNetCalFit *f, GArray *points, const SsimCluster *cluster)
{
    g_array_sort(points, cmp_point);
    const Point *pts = (const Point *)(void *)points->data;
    guint n = points->len;
    f->n_points = n;
    f->min_bytes = (guint64)pts[0].bytes;
    f->max_bytes = (guint64)pts[n - 1].bytes;
    f->intra = f->ranks_per_node >= f->ranks;
    f->link_bw = f->intra ? cluster->nvlink_bw : cluster->nic_bw;
    /* The smallest sizes: up to 4x the smallest, and at least the two smallest. */
    guint small = 0;
    while (small < n && pts[small].bytes <= 4 * pts[0].bytes)
        small++;
    double a, b;
    if (fit_line(pts, 0, MAX(small, MIN(2u, n)), &a, &b))
        f->latency_us = MAX(a, 0.0);
    f->latency_us = MIN(f->latency_us, pts[0].us);
    f->step_latency_us = f->latency_us / ring_steps(f->op, f->ranks);
    /* The largest: from half the largest up, and at least the two largest. */
    guint large = n;
    while (large > 0 && pts[large - 1].bytes >= pts[n - 1].bytes / 2)
        large--;
    large = MIN(large, n >= 2 ? n - 2 : 0);
    double bf = ssim_profile_bus_factor(f->op, f->ranks);
    if (fit_line(pts, large, n, &a, &b) && b > 0)
        f->busbw = bf / b * 1e6;
    else
        f->busbw = bf * pts[n - 1].bytes / pts[n - 1].us * 1e6;
    f->efficiency = f->link_bw > 0 ? f->busbw / f->link_bw : 0.0;
}

static guint key_hash(gconstpointer p)
{
    const guint8 *b = p;
    guint32 h = 2166136261u;
    for (gsize i = 0; i < sizeof(Key); i++)
        h = (h ^ b[i]) * 16777619u;
    return h;
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
    return memcmp(a, b, sizeof(Key)) == 0;
}

SsimNetCal *ssim_netcal_new(const SsimProfile *profile, const SsimCluster *cluster, SsimDtype dtype)
{
    g_return_val_if_fail(profile != NULL && cluster != NULL, NULL);
    SsimNetCal *cal = g_new0(SsimNetCal, 1);
    cal->profile = profile;
    cal->dtype = dtype;
    ssim_analytic_params_from_cluster(&cal->net, cluster, dtype);
    cal->fits = g_array_new(FALSE, TRUE, sizeof(SsimNetCalFit));
    cal->cache = g_hash_table_new_full(key_hash, key_equal, g_free, g_free);
    cal->cls_map = g_array_new(FALSE, FALSE, sizeof(guint32));
    ssim_cost_explain_init(&cal->explain);
    ssim_class_explain_init(&cal->class_explain);

    g_autoptr(GPtrArray) points = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
    for (guint i = 0; i < ssim_profile_n_rows(profile); i++) {
        const SsimProfileRow *r = ssim_profile_row(profile, i);
        SsimProfileComm op;
        if (r->kind != SSIM_PROFILE_COMM || !ssim_profile_comm_from_name(r->op, &op))
            continue;
        guint c;
        for (c = 0; c < cal->fits->len; c++)
            if (same_curve(&g_array_index(cal->fits, SsimNetCalFit, c), op, r))
                break;
        if (c == cal->fits->len) {
            SsimNetCalFit f = {.op = op,
                               .ranks = r->ranks,
                               .ranks_per_node = r->ranks_per_node,
                               .dtype = r->dtype};
            g_strlcpy(f.algo, r->algo, sizeof f.algo);
            g_array_append_val(cal->fits, f);
            g_ptr_array_add(points, g_array_new(FALSE, FALSE, sizeof(Point)));
        }
        Point pt = {(double)r->bytes, r->time_us};
        g_array_append_val(g_ptr_array_index(points, c), pt);
    }
    /* Curves of one size say nothing about latency versus bandwidth: dropped. */
    for (guint c = cal->fits->len; c-- > 0;) {
        GArray *pts = g_ptr_array_index(points, c);
        g_array_sort(pts, cmp_point);
        if (pts->len < 2 ||
            g_array_index(pts, Point, 0).bytes == g_array_index(pts, Point, pts->len - 1).bytes) {
            g_array_remove_index(cal->fits, c);
            g_ptr_array_remove_index(points, c);
            continue;
        }
        fit_curve(&g_array_index(cal->fits, SsimNetCalFit, c), pts, cluster);
    }
    return cal;
}

void ssim_netcal_free(SsimNetCal *cal)
{
    if (cal == NULL)
        return;
    g_array_free(cal->fits, TRUE);
    g_hash_table_destroy(cal->cache);
    g_array_free(cal->cls_map, TRUE);
    g_free(cal);
}

guint ssim_netcal_n_fits(const SsimNetCal *cal)
{
    return cal->fits->len;
}

const SsimNetCalFit *ssim_netcal_fit(const SsimNetCal *cal, guint i)
{
    g_return_val_if_fail(i < cal->fits->len, NULL);
    return &g_array_index(cal->fits, SsimNetCalFit, i);
}

/*
 * The latency per ring step of the fit for (op, scope) with the nearest rank count (in log
 * ratio; ties: the smaller count), preferring the same ranks per node, algorithm and dtype; FALSE
 * when no fit has that op and scope.
 */
static gboolean step_latency(const SsimNetCal *cal, SsimProfileComm op, const char *algo, guint n,
                             guint per_node, double *us)
{
    gboolean intra = per_node >= n;
    const SsimNetCalFit *best = NULL;
    double best_d = INFINITY;
    for (guint i = 0; i < cal->fits->len; i++) {
        const SsimNetCalFit *f = &g_array_index(cal->fits, SsimNetCalFit, i);
        if (f->op != op || f->intra != intra)
            continue;
        double d = fabs(log((double)f->ranks / n)) * 4 +
                   fabs(log((double)f->ranks_per_node / MAX(per_node, 1u))) * 2 +
                   (algo != NULL && strcmp(f->algo, algo) != 0 ? 1 : 0) +
                   (f->dtype != (int)cal->dtype ? 0.5 : 0);
        if (d < best_d || (d == best_d && f->ranks < best->ranks)) {
            best_d = d;
            best = f;
        }
    }
    if (best == NULL)
        return FALSE;
    *us = best->step_latency_us;
    return TRUE;
}

gboolean ssim_netcal_target(SsimNetCal *cal, SsimCollKind kind, const char *algo, guint n,
                            guint ranks_per_node, guint64 bytes, SsimTime *total, SsimTime *latency,
                            SsimCostSource *source)
{
    g_return_val_if_fail(cal != NULL && total != NULL && latency != NULL, FALSE);
    SsimProfileComm op;
    if (kind == SSIM_COLL_N || kind == SSIM_COLL_PERMUTE) {
        /* Every member sends the whole buffer to one other: a send/receive pair. */
        op = SSIM_PCOMM_SENDRECV;
        ranks_per_node = ranks_per_node >= n ? 2 : 1;
        n = 2;
    } else {
        op = ssim_profile_comm_from_coll(kind);
    }
    if (ranks_per_node == 0 || ranks_per_node > n)
        ranks_per_node = n;
    Key key;
    memset(&key, 0, sizeof key);
    key.bytes = bytes;
    key.ranks = n;
    key.per_node = ranks_per_node;
    key.op = (guint8)op;
    key.algo = 0xff;
    for (guint a = 0; algo != NULL && a < SSIM_NET_ALGO_N; a++)
        if (strcmp(algo, ssim_net_algorithm_name((SsimNetAlgorithm)a)) == 0)
            key.algo = (guint8)a;
    Answer *ans = g_hash_table_lookup(cal->cache, &key);
    if (ans == NULL) {
        ans = g_new0(Answer, 1);
        SsimCostEstimate est;
        double step_us = 0;
        /* A curve of another layout is carried through the cluster's network model; an
         * answer of that model alone is left to the flow network's nominal figures. */
        if (n >= 2 &&
            ssim_profile_comm_time(cal->profile, op, (int)cal->dtype, bytes, n, ranks_per_node,
                                   algo, &cal->net, &est) &&
            est.source != SSIM_COST_ANALYTICAL) {
            ans->ok = TRUE;
            ans->total = est.time;
            ans->source = est.source;
            if (step_latency(cal, op, algo, n, ranks_per_node, &step_us))
                ans->latency = ssim_time_from_seconds(step_us * ring_steps(op, n) * 1e-6);
            ans->latency = CLAMP(ans->latency, 0, ans->total);
        }
        g_hash_table_insert(cal->cache, g_memdup2(&key, sizeof key), ans);
    }
    *total = ans->total;
    *latency = ans->latency;
    if (source != NULL)
        *source = ans->ok ? ans->source : SSIM_COST_ANALYTICAL;
    return ans->ok;
}

static guint class_of(SsimNetCal *cal, const SsimGraph *graph, guint16 cls)
{
    while (cal->cls_map->len <= cls) {
        guint32 none = G_MAXUINT32;
        g_array_append_val(cal->cls_map, none);
    }
    guint32 *e = &g_array_index(cal->cls_map, guint32, cls);
    if (*e == G_MAXUINT32) {
        SsimOpClass c;
        *e =
            ssim_opclass_from_name(ssim_graph_string(graph, cls), &c) ? (guint32)c : SSIM_OPCLASS_N;
    }
    return *e;
}

static gboolean lookup(gpointer data, const SsimGraph *graph, guint32 op, SsimCollKind kind,
                       SsimNetAlgorithm algorithm, guint n, guint ranks_per_node, guint64 bytes,
                       SsimTime *total, SsimTime *latency)
{
    SsimNetCal *cal = data;
    SsimCostSource source;
    const char *algo = algorithm == SSIM_NET_ALGO_AUTO ? NULL : ssim_net_algorithm_name(algorithm);
    gboolean ok =
        ssim_netcal_target(cal, kind, algo, n, ranks_per_node, bytes, total, latency, &source);
    if (graph != NULL && op < ssim_graph_n_ops(graph)) {
        const SsimOp *o = ssim_graph_op(graph, op);
        const guint32 *mfirst, *mops, *expected;
        ssim_graph_match_csr(graph, &mfirst, &mops, &expected);
        guint64 weight = o->match != SSIM_NONE ? mfirst[o->match + 1] - mfirst[o->match] : 1;
        cal->explain.count[SSIM_PROFILE_COMM][source] += weight;
        cal->class_explain.count[class_of(cal, graph, o->cls)][source] += weight;
    }
    return ok;
}

SsimNetCalibration ssim_netcal_calibration(SsimNetCal *cal)
{
    return (SsimNetCalibration){.lookup = lookup, .data = cal};
}

const SsimCostExplain *ssim_netcal_explain(const SsimNetCal *cal)
{
    return &cal->explain;
}

const SsimClassExplain *ssim_netcal_class_explain(const SsimNetCal *cal)
{
    return &cal->class_explain;
}

void ssim_netcal_reset_explain(SsimNetCal *cal)
{
    ssim_cost_explain_init(&cal->explain);
    ssim_class_explain_init(&cal->class_explain);
}

static void append_size(GString *out, guint64 bytes)
{
    if (bytes >= (1u << 30))
        g_string_append_printf(out, "%.3g GiB", (double)bytes / (1u << 30));
    else if (bytes >= (1u << 20))
        g_string_append_printf(out, "%.3g MiB", (double)bytes / (1u << 20));
    else
        g_string_append_printf(out, "%.3g KiB", (double)bytes / 1024.0);
}

GString *ssim_netcal_table(const SsimNetCal *cal)
{
    GString *out = g_string_new(NULL);
    if (cal->fits->len == 0)
        return out;
    g_string_append(out, "op             ranks  per-node  scope   algo   sizes               "
                         "points  latency_us  per-step_us  busbw_GB/s  link_GB/s  efficiency\n");
    for (guint i = 0; i < cal->fits->len; i++) {
        const SsimNetCalFit *f = &g_array_index(cal->fits, SsimNetCalFit, i);
        g_autoptr(GString) sizes = g_string_new(NULL);
        append_size(sizes, f->min_bytes);
        g_string_append(sizes, "..");
        append_size(sizes, f->max_bytes);
        g_string_append_printf(out,
                               "%-13s %6u %9u  %-6s  %-5s  %-18s %7u %11.2f %12.2f %11.1f %10.1f "
                               "%11.3f\n",
                               ssim_profile_comm_name(f->op), f->ranks, f->ranks_per_node,
                               f->intra ? "nvlink" : "net", f->algo[0] ? f->algo : "-", sizes->str,
                               f->n_points, f->latency_us, f->step_latency_us, f->busbw / 1e9,
                               f->link_bw / 1e9, f->efficiency);
    }
    return out;
}
