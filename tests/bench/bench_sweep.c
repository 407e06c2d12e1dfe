/*
 * Sweep benchmark: configurations evaluated and simulated per second by ssim_sweep_run() on 1
 * thread and on every core, for one model on N H100s (default GPT-J 6B on 32 GPUs with the
 * default lists: tp 1,2,4,8, pp every divisor of N, v 1, microbatch 1,2, each placement's native
 * schedule, recompute auto, placement alpa, global batch 2 N).  It also checks that both runs
 * give the same CSV bytes, the sweep's determinism promise.
 *
 * Usage: bench-sweep [MODEL [GPUS [GLOBAL_BATCH]]]
 *        bench-sweep --search [--check]   the planners' search (see search() below)
 * The README's 1024-GPU figure comes from the CLI instead (see "Sweeping splits").
 */
#include <shiftsim/alloc.h>
#include <shiftsim/steady.h>
#include <shiftsim/sweep.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/*
 * The planners' search: GPT-3 175B on 512 H100s over every tp, pp, v, microbatch, schedule,
 * recompute mode, ZeRO stage and two placements (39,168 configurations), pruned to the top 10,
 * with and without the steady-state replay; then what one configuration costs in-process; with
 * `check`, the unpruned sweep too, and whether its top 10 are the pruned sweeps' (minutes).
 */
static int search(gboolean check)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimModel) model = ssim_model_load("gpt-3-175b", &error);
    g_autoptr(SsimCluster) cluster = model ? ssim_cluster_load("dgx-h100", &error) : NULL;
    if (!cluster) {
        fprintf(stderr, "bench-sweep: %s\n", error->message);
        return 1;
    }
    SsimSweepSpec spec;
    ssim_sweep_spec_init(&spec, cluster, 512);
    spec.base.global_batch = 1024;
    ssim_sweep_ints_parse(&spec.vstages, "1,2,3,4,6,8", NULL);
    ssim_sweep_ints_parse(&spec.microbatch, "1,2,4,8", NULL);
    ssim_sweep_names_parse(&spec.schedules, "1f1b,interleaved,gpipe,xla", NULL);
    ssim_sweep_recompute_parse(&spec.recompute, "none,selective,full", NULL);
    ssim_sweep_zero_parse(&spec.zero, "0,1", NULL);
    ssim_sweep_names_parse(&spec.placements, "baseline,commshift", NULL);
    guint threads = g_get_num_processors();
    g_autoptr(GArray) reference = NULL;
    const struct {
        const char *name;
        guint prune;
        gboolean steady;
    } modes[] = {{"pruned to the top 10", 10, FALSE},
                 {"pruned, steady-state replay", 10, TRUE},
                 {"unpruned (every configuration simulated)", 0, FALSE}};
    g_autoptr(SsimSweep) first = NULL;
    int status = 0;
    for (guint k = 0; k < (check ? 3u : 2u); k++) {
        SsimSweepSpec sp = spec;
        sp.prune_top = modes[k].prune;
        sp.steady = modes[k].steady;
        g_autoptr(SsimSweep) s = ssim_sweep_new(model, cluster, &sp, &error);
        gint64 t0 = g_get_monotonic_time();
        double c0 = cpu_now();
        guint n = ssim_sweep_run(s, 0, 1, threads, NULL, NULL, 1000);
        double wall = (double)(g_get_monotonic_time() - t0) / 1e6, cpu = cpu_now() - c0;
        guint ok = 0, pruned = 0;
        for (guint i = 0; i < n; i++) {
            ok += ssim_sweep_row(s, i)->status == SSIM_SWEEP_OK;
            pruned += ssim_sweep_row(s, i)->status == SSIM_SWEEP_PRUNED;
        }
        g_autoptr(GArray) rank = ssim_sweep_ranking(s);
        printf("GPT-3 175B on 512 H100s, %s: %u configurations in %.2f s (%.0f/s), %.1f s of "
               "processor time on %u threads; %u simulated, %u pruned\n",
               modes[k].name, n, wall, n / wall, cpu, threads, ok, pruned);
        for (guint i = 0; i < MIN(rank->len, 10u); i++) {
            const SsimSweepRow *r = ssim_sweep_row(s, g_array_index(rank, guint, i));
            if (k == 0)
                printf("  %2u. #%-6u dp %3u tp %u pp %3u v %u mb %u %-11s %-9s %-9s zero %u  "
                       "%.3f ms\n",
                       i + 1, r->index, r->par.dp, r->par.tp, r->par.pp, r->par.virtual_stages,
                       r->par.microbatch, r->par.schedule, r->par.placement,
                       ssim_recompute_name(r->par.recompute), r->par.zero_stage,
                       (double)r->result.step_time / 1e6);
            else if (g_array_index(rank, guint, i) != g_array_index(reference, guint, i)) {
                printf("  rank %u differs from the first sweep's\n", i + 1);
                status = 1;
            }
        }
        if (k == 0) {
            reference = g_array_ref(rank);
            first = g_steal_pointer(&s);
        } else {
            printf("  the same top 10 as the first sweep: %s\n", status ? "NO" : "yes");
        }
    }
    /* One configuration in-process: the ten best, simulated alone, in full (the first call of
     * its shape, then again: warm, its arrays' memory reused) and steady. */
    g_autoptr(GArray) rank = ssim_sweep_ranking(first);
    double full[10], warm[10], steady[10];
    guint n = MIN(rank->len, 10u);
    for (guint i = 0; i < n; i++) {
        const SsimSweepRow *r = ssim_sweep_row(first, g_array_index(rank, guint, i));
        SsimPlacement placement = SSIM_PLACEMENT_INIT;
        ssim_placement_kind_from_name(r->par.placement, &placement.kind);
        SsimSimConfig c = {.model = model,
                           .cluster = ssim_sweep_cluster(first),
                           .par = &r->par,
                           .placement = &placement};
        SsimResult x;
        double c0 = cpu_now();
        ssim_simulate(&c, &x, NULL, NULL, NULL);
        full[i] = cpu_now() - c0;
        c0 = cpu_now();
        ssim_simulate(&c, &x, NULL, NULL, NULL);
        warm[i] = cpu_now() - c0;
        c0 = cpu_now();
        ssim_simulate_steady(&c, &x, NULL, NULL);
        steady[i] = cpu_now() - c0;
    }
    qsort(full, n, sizeof *full, cmp_double);
    qsort(warm, n, sizeof *warm, cmp_double);
    qsort(steady, n, sizeof *steady, cmp_double);
    if (n)
        printf("one configuration in-process (the ten best, processor time): median %.1f ms "
               "(%.1f to %.1f) in full, %.1f ms (%.1f to %.1f) in full again, %.1f ms (%.1f to "
               "%.1f) steady\n",
               1e3 * full[n / 2], 1e3 * full[0], 1e3 * full[n - 1], 1e3 * warm[n / 2],
               1e3 * warm[0], 1e3 * warm[n - 1], 1e3 * steady[n / 2], 1e3 * steady[0],
               1e3 * steady[n - 1]);
    return status;
}

int main(int argc, char **argv)
{
    ssim_alloc_keep_freed_memory(); /* as shiftsim's main does */
    if (argc > 1 && strcmp(argv[1], "--search") == 0)
        return search(argc > 2 && strcmp(argv[2], "--check") == 0);
    const char *model_name = argc > 1 ? argv[1] : "gpt-j-6b";
    guint gpus = argc > 2 ? (guint)atoi(argv[2]) : 32;
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimModel) model = ssim_model_load(model_name, &error);
    g_autoptr(SsimCluster) cluster = model ? ssim_cluster_load("dgx-h100", &error) : NULL;
    if (cluster == NULL) {
        fprintf(stderr, "bench-sweep: %s\n", error->message);
        return 1;
    }
    SsimSweepSpec spec;
    ssim_sweep_spec_init(&spec, cluster, gpus);
    if (argc > 3)
        spec.base.global_batch = (guint)atoi(argv[3]);
    guint threads[2] = {1, g_get_num_processors()};
    g_autofree char *first_csv = NULL;
    for (guint t = 0; t < 2; t++) {
        g_autoptr(SsimSweep) sweep = ssim_sweep_new(model, cluster, &spec, &error);
        if (sweep == NULL) {
            fprintf(stderr, "bench-sweep: %s\n", error->message);
            return 1;
        }
        gint64 t0 = g_get_monotonic_time();
        guint n = ssim_sweep_run(sweep, 0, 1, threads[t], NULL, NULL, 1000);
        double s = (double)(g_get_monotonic_time() - t0) / 1e6;
        guint simulated = 0;
        for (guint i = 0; i < n; i++)
            simulated += ssim_sweep_row(sweep, i)->status == SSIM_SWEEP_OK;
        printf("%s on %u H100s, %u thread%s: %u configurations (%u simulated) in %.3f s: "
               "%.1f configurations/s, %.1f simulations/s\n",
               model_name, gpus, threads[t], threads[t] == 1 ? "" : "s", n, simulated, s, n / s,
               simulated / s);
        g_autoptr(GString) csv = ssim_sweep_csv(sweep);
        if (first_csv == NULL) {
            first_csv = g_strdup(csv->str);
        } else if (g_strcmp0(first_csv, csv->str) != 0) {
            fprintf(stderr, "bench-sweep: the CSV differs between 1 and %u threads\n", threads[t]);
            return 1;
        }
    }
    return 0;
}
