/*
 * Scale benchmark (issue #10): how long one simulated training step takes to simulate, and how
 * much memory it needs, as the cluster and the microbatch count grow, in the reduced mode (one
 * representative rank per pipeline stage) and the exact mode (every GPU), the latter both ways:
 * every GPU replaying its copy of its stage's program (the default of --exact) and the explicit
 * graph with every GPU's program lowered on its own (--exact-graph).
 *
 * Every case runs in a child process, so its peak RSS is its own (wait4's ru_maxrss), and each
 * figure is the child's: wall time, processor time (user + system), the processor time of each
 * phase of ssim_simulate() (SsimSimTimes), ops, events and events per processor second.  A case
 * whose op estimate exceeds the budget is refused by ssim_simulate() as it would be from the CLI
 * (the limit is printed instead of figures); `--max-ops N` raises it.
 *
 * The configuration is the one Narayanan et al. 2021 ran: GPT-3 175B, tp 8, pp 16, microbatch 1,
 * full recompute, 1F1B, on DGX H100 nodes, analytical costs ("rep", "exact", "graph"), or the
 * flow-level network ("r+net", "x+net", "g+net"); all modes give the same step to the nanosecond
 * under either (the copies of a stage see the same network on these clusters).
 *
 * Usage: bench-scale [--quick] [--exact] [--graph] [--exact-cap MOPS] [--graph-cap MOPS]
 *                    [--max-ops N] [--only LIST]
 *   (default)   every group, representative mode only
 *   --exact     add the exact mode (replicated) to each case whose estimate is under its cap
 *   --graph     add the exact mode with the explicit per-GPU graph, likewise
 *   --exact-cap replicated exact cases above MOPS million estimated ops are skipped (default 100)
 *   --graph-cap explicit-graph cases above MOPS million estimated ops are skipped (default 12)
 *   --quick     smaller growth series (for a first look)
 *   --only      comma-separated case groups: headline (global batch 1536 on 1024 and 8192
 *               GPUs), flow (1024 GPUs under the flow network), gpus (128 to 8192 GPUs, 16
 *               microbatches), micro (8 to 256 microbatches on 1024 GPUs)
 */
#include <shiftsim/sim.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
    int ok;
    double wall, cpu;
    SsimSimTimes times;
    guint32 n_ops;
    guint64 events;
    guint n_ranks;
    SsimTime step;
    char message[512];
} Outcome;

typedef enum { REP, EXACT, GRAPH } Mode;

typedef struct {
    guint gpus, dp, global_batch;
    Mode mode;
    gboolean flow; /* the flow-level network instead of the analytical collectives */
} Case;

static guint64 max_ops;
/* Exact cases above this many estimated ops are skipped (--exact-cap, --graph-cap), so the series
 * fits in the memory of a small machine: a replicated exact run costs about 24 bytes an op, the
 * explicit exact graph about 270. */
static double exact_cap = 100e6, graph_cap = 12e6;

/* Runs in the child: one simulation, its outcome written to `fd`. */
static void run_case(const Case *c, int fd)
{
    Outcome out = {0};
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimModel) model = ssim_model_load("gpt-3-175b", &error);
    g_autoptr(SsimCluster) cluster = model ? ssim_cluster_load("dgx-h100", &error) : NULL;
    if (cluster != NULL) {
        ssim_cluster_set_nodes(cluster, c->gpus / cluster->gpus_per_node);
        SsimParallel par;
        ssim_parallel_init(&par);
        par.tp = 8;
        par.pp = 16;
        par.dp = c->dp;
        par.microbatch = 1;
        par.global_batch = c->global_batch;
        par.recompute = SSIM_RECOMPUTE_FULL;
        SsimSimConfig config = {
            .model = model,
            .cluster = cluster,
            .par = &par,
            .exact = c->mode != REP,
            .exact_graph = c->mode == GRAPH,
            .flow_network = c->flow,
            .max_ops = max_ops,
            .times = &out.times,
        };
        SsimResult result;
        gint64 t0 = g_get_monotonic_time();
        out.ok = ssim_simulate(&config, &result, NULL, NULL, &error);
        out.wall = (double)(g_get_monotonic_time() - t0) * 1e-6;
        if (out.ok) {
            out.n_ops = result.n_ops;
            out.events = result.events;
            out.n_ranks = result.n_graph_ranks;
            out.step = result.step_time;
        }
    }
    if (!out.ok && error != NULL)
        g_strlcpy(out.message, error->message, sizeof out.message);
    if (write(fd, &out, sizeof out) != (ssize_t)sizeof out)
        _exit(3);
    _exit(0);
}

/* Forks, runs `c` in the child, fills `out` and the child's peak RSS in MiB. */
static gboolean fork_case(const Case *c, Outcome *out, double *rss_mib)
{
    int fds[2];
    if (pipe(fds) != 0)
        return FALSE;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return FALSE;
    if (pid == 0) {
        close(fds[0]);
        run_case(c, fds[1]);
    }
    close(fds[1]);
    ssize_t got = 0;
    while (got < (ssize_t)sizeof *out) {
        ssize_t k = read(fds[0], (char *)out + got, sizeof *out - (size_t)got);
        if (k <= 0)
            break;
        got += k;
    }
    close(fds[0]);
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0 || got != (ssize_t)sizeof *out)
        return FALSE;
    out->cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
               (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
    *rss_mib = (double)ru.ru_maxrss / 1024.0; /* kilobytes on Linux */
    return TRUE;
}

static const char *mode_name(const Case *c)
{
    static const char *const names[2][3] = {{"rep", "exact", "graph"}, {"r+net", "x+net", "g+net"}};
    return names[c->flow ? 1 : 0][c->mode];
}

static void header(void)
{
    printf("%6s %4s %5s %6s %-5s %7s %10s %10s %8s %8s %9s | %7s %7s %7s %7s %7s\n", "gpus", "dp",
           "m", "gbs", "mode", "ranks", "ops", "events", "wall s", "cpu s", "RSS MiB", "lower",
           "place", "replay", "measure", "Mev/s");
}

static void one(const Case *c)
{
    Outcome out;
    double rss = 0;
    guint m = c->global_batch / c->dp;
    if (c->mode != REP) {
        double cap = c->mode == GRAPH ? graph_cap : exact_cap;
        g_autoptr(GError) error = NULL;
        g_autoptr(SsimModel) model = ssim_model_load("gpt-3-175b", &error);
        SsimParallel par;
        ssim_parallel_init(&par);
        par.tp = 8, par.pp = 16, par.dp = c->dp, par.global_batch = c->global_batch;
        SsimOpEstimate est;
        if (model != NULL)
            ssim_budget_estimate(model, &par, TRUE, &est);
        if (model != NULL && est.ops > cap) {
            printf("%6u %4u %5u %6u %-5s  skipped: about %.0f M ops (estimate) is over "
                   "--%s-cap %.0f M\n",
                   c->gpus, c->dp, m, c->global_batch, mode_name(c), est.ops / 1e6,
                   c->mode == GRAPH ? "graph" : "exact", cap / 1e6);
            return;
        }
    }
    if (!fork_case(c, &out, &rss)) {
        printf("%6u %4u %5u %6u %-5s  (the child failed)\n", c->gpus, c->dp, m, c->global_batch,
               mode_name(c));
        return;
    }
    if (!out.ok) {
        printf("%6u %4u %5u %6u %-5s  refused: %s\n", c->gpus, c->dp, m, c->global_batch,
               mode_name(c), out.message);
        return;
    }
    printf("%6u %4u %5u %6u %-5s %7u %10u %10" G_GUINT64_FORMAT " %8.3f %8.3f %9.1f | %7.3f %7.3f "
           "%7.3f %7.3f %7.2f\n",
           c->gpus, c->dp, m, c->global_batch, mode_name(c), out.n_ranks, out.n_ops, out.events,
           out.wall, out.cpu, rss, out.times.lower, out.times.place, out.times.replay,
           out.times.measure, out.times.replay > 0 ? out.events / out.times.replay / 1e6 : 0);
    fflush(stdout);
}

static gboolean mode_on(Mode mode, gboolean exact, gboolean graph)
{
    return mode == REP || (mode == EXACT && exact) || (mode == GRAPH && graph);
}

static gboolean wanted(const char *only, const char *group)
{
    if (only == NULL)
        return TRUE;
    g_auto(GStrv) words = g_strsplit(only, ",", -1);
    return g_strv_contains((const gchar *const *)words, group);
}

int main(int argc, char **argv)
{
    gboolean quick = FALSE, exact = FALSE, graph = FALSE;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = TRUE;
        } else if (strcmp(argv[i], "--exact") == 0) {
            exact = TRUE;
        } else if (strcmp(argv[i], "--graph") == 0) {
            graph = TRUE;
        } else if (strcmp(argv[i], "--graph-cap") == 0 && i + 1 < argc) {
            graph_cap = g_ascii_strtod(argv[++i], NULL) * 1e6;
        } else if (strcmp(argv[i], "--max-ops") == 0 && i + 1 < argc) {
            max_ops = g_ascii_strtoull(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            only = argv[++i];
        } else if (strcmp(argv[i], "--exact-cap") == 0 && i + 1 < argc) {
            exact_cap = g_ascii_strtod(argv[++i], NULL) * 1e6;
        } else {
            fprintf(stderr, "usage: bench-scale [--quick] [--exact] [--graph] [--exact-cap MOPS] "
                            "[--graph-cap MOPS] [--max-ops N] [--only headline,flow,gpus,micro]\n");
            return 2;
        }
    }
    printf("GPT-3 175B, tp 8 x pp 16, microbatch 1, full recompute, 1F1B, DGX H100; "
           "rep/exact/graph: analytical costs, r+net/x+net/g+net: the flow network; exact: every "
           "GPU replaying its stage's program, graph: the explicit per-GPU graph; times are "
           "processor seconds of one core unless 'wall'\n");
    header();
    if (wanted(only, "headline")) {
        printf("-- the issue's steps: global batch 1536 on 1024 and 8192 GPUs\n");
        for (Mode e = REP; e <= GRAPH; e++) {
            if (!mode_on(e, exact, graph))
                continue;
            Case a = {1024, 8, 1536, e, FALSE};
            one(&a);
            Case b = {8192, 64, 1536, e, FALSE};
            one(&b);
        }
    }
    if (wanted(only, "flow")) {
        printf("-- the flow-level network (--network flow) on 1024 GPUs: representative runs with "
               "their copies' traffic, and exact runs\n");
        guint gbs[] = {128, 1536};
        for (Mode e = REP; e <= GRAPH; e++)
            for (guint i = 0; i < G_N_ELEMENTS(gbs); i++) {
                Case c = {1024, 8, gbs[i], e, TRUE};
                if (mode_on(e, exact, graph))
                    one(&c);
            }
    }
    if (wanted(only, "gpus")) {
        printf("-- GPUs: 128 to 8192 (dp 1 to 64), 16 microbatches per pipeline\n");
        for (Mode e = REP; e <= GRAPH; e++)
            for (guint dp = 1; dp <= (quick ? 8u : 64u); dp *= 2) {
                Case c = {128 * dp, dp, 16 * dp, e, FALSE};
                if (mode_on(e, exact, graph))
                    one(&c);
            }
    }
    if (wanted(only, "micro")) {
        printf("-- microbatches: 8 to 256 per pipeline on 1024 GPUs (dp 8)\n");
        for (Mode e = REP; e <= GRAPH; e++)
            for (guint m = 8; m <= (quick ? 64u : 256u); m *= 2) {
                Case c = {1024, 8, 8 * m, e, FALSE};
                if (mode_on(e, exact, graph))
                    one(&c);
            }
    }
    return 0;
}
