/*
 * Chakra loader benchmark: how fast a trace set loads (decode, order, add to the graph, finalize)
 * and replays, with the fast wire decoder on one thread and on every core, against the loader
 * before issue #19 (protobuf-c's unpacker, one thread, every node's name interned).  Every fast
 * load must give the same graph as the reference decoder with the same names setting, op by op
 * (tests/import/chakra-check.h), or the benchmark fails.
 *
 * Usage: bench-chakra [PREFIX] [-n RUNS] [-d DP] [--names]
 *   PREFIX  a trace set (PREFIX.0.et ...); default: generate a GPT-like step with the tensor
 *           metadata symbolic_tensor_graph writes (dp DP x tp 4 x pp 2, 16 layers, 4
 *           microbatches; DP default 32: 256 ranks) into a temporary directory
 *   -n RUNS the median of RUNS loads per case (default 3)
 *   --names keep op names (what --timeline, --trace and --plot need)
 *   --generate OUT  only write the generated set (dp DP) to OUT.<rank>.et and OUT.json
 *
 * Prints per case the median wall time of the load, the process's processor time, the loading
 * thread's processor time adding ops and finalizing, the MB/s of trace bytes, then the replay
 * (the simple cost model: replay's default) and the load + replay total against the reference,
 * and last what `replay --trace` adds: a load that keeps names and the trace streamed to a file
 * in each format (without the fsync the CLI adds), against the run without it.
 */
#include <shiftsim/chakra.h>
#include <shiftsim/runtime.h>
#include <shiftsim/trace.h>

#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../import/chakra-check.h"
#include "../import/chakra-writer.h"

typedef struct {
    const char *name;
    gboolean reference;
    guint threads;
    double wall, cpu, emit, finalize; /* medians */
} Case;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, guint n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static guint64 set_bytes(const char *prefix, guint *ranks)
{
    guint64 total = 0;
    for (*ranks = 0;; (*ranks)++) {
        g_autofree char *p = g_strdup_printf("%s.%u.et", prefix, *ranks);
        GStatBuf st;
        if (g_stat(p, &st) != 0)
            break;
        total += (guint64)st.st_size;
    }
    return total;
}

static gboolean write_file(gpointer data, const void *bytes, gsize len, GError **error)
{
    if (fwrite(bytes, 1, len, data) == len)
        return TRUE;
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_IO, "write failed");
    return FALSE;
}

int main(int argc, char **argv)
{
    gint runs = 3, dp = 32;
    gboolean names = FALSE;
    g_autofree char *generate = NULL;
    GOptionEntry entries[] = {
        {"runs", 'n', 0, G_OPTION_ARG_INT, &runs, "loads per case (the median is shown)", "N"},
        {"dp", 'd', 0, G_OPTION_ARG_INT, &dp, "data-parallel degree of the generated set", "D"},
        {"names", 0, 0, G_OPTION_ARG_NONE, &names, "keep op names", NULL},
        {"generate", 0, 0, G_OPTION_ARG_FILENAME, &generate,
         "only write the generated set to OUT.<rank>.et and OUT.json (to replay it with shiftsim)",
         "OUT"},
        {NULL, 0, 0, 0, NULL, NULL, NULL}};
    g_autoptr(GOptionContext) ctx = g_option_context_new("[PREFIX]");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) error = NULL;
    if (!g_option_context_parse(ctx, &argc, &argv, &error) || argc > 2 || runs < 1 || dp < 1) {
        fprintf(stderr, "bench-chakra: %s\n", error ? error->message : "bad arguments");
        return 2;
    }
    g_autofree char *tmp = NULL, *prefix = NULL;
    CwGpt gpt = {(guint)dp, 4, 2, 16, 4, 4096, 2048, TRUE};
    if (generate) {
        if (!cw_write_gpt(&gpt, generate, &error)) {
            fprintf(stderr, "bench-chakra: %s\n", error->message);
            return 1;
        }
        return 0;
    }
    if (argc == 2) {
        prefix = g_strdup(argv[1]);
    } else {
        tmp = g_dir_make_tmp("ssim-bench-chakra-XXXXXX", &error);
        prefix = tmp ? g_build_filename(tmp, "gpt", NULL) : NULL;
        if (!prefix || !cw_write_gpt(&gpt, prefix, &error)) {
            fprintf(stderr, "bench-chakra: %s\n", error->message);
            return 1;
        }
    }
    guint ranks;
    guint64 bytes = set_bytes(prefix, &ranks);
    printf("trace set %s: %u ranks, %.1f MB%s\n", argc == 2 ? prefix : "(generated GPT, tp 4 pp 2)",
           ranks, bytes / 1e6, names ? ", names kept" : "");

    /* The first case is the loader as it was: protobuf-c, one thread, names interned. */
    Case cases[] = {{"before: protobuf-c, names, 1 thread", TRUE, 1, 0, 0, 0, 0},
                    {"fast decoder, 1 thread", FALSE, 1, 0, 0, 0, 0},
                    {"fast decoder, all cores", FALSE, 0, 0, 0, 0, 0}};
    cases[2].threads = g_get_num_processors();
    /* The oracle: the reference decoder's graph with the same names setting. */
    SsimChakraOptions ro;
    ssim_chakra_options_init(&ro);
    ro.reference_decoder = TRUE;
    ro.n_threads = 1;
    ro.keep_names = names;
    g_autoptr(SsimGraph) reference = ssim_chakra_load(prefix, NULL, &ro, NULL, &error);
    if (!reference) {
        fprintf(stderr, "bench-chakra: %s\n", error->message);
        return 1;
    }
    int status = 0;
    printf("%-44s %9s %9s %9s %9s %9s\n", "load", "wall s", "cpu s", "emit s", "final s", "MB/s");
    for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
        g_autofree double *wall = g_new(double, runs), *cpu = g_new(double, runs);
        g_autofree double *emit = g_new(double, runs), *fin = g_new(double, runs);
        for (gint r = 0; r < runs; r++) {
            SsimChakraOptions o;
            ssim_chakra_options_init(&o);
            o.reference_decoder = cases[c].reference;
            o.n_threads = cases[c].threads;
            o.keep_names = cases[c].reference || names;
            SsimChakraStats st;
            ssim_chakra_stats_init(&st);
            g_autoptr(SsimGraph) g = ssim_chakra_load(prefix, NULL, &o, &st, &error);
            if (!g) {
                fprintf(stderr, "bench-chakra: %s\n", error->message);
                return 1;
            }
            wall[r] = st.wall_s, cpu[r] = st.cpu_s, emit[r] = st.emit_s, fin[r] = st.finalize_s;
            ssim_chakra_stats_clear(&st);
            if (r == 0 && !cases[c].reference) {
                g_autofree char *diff = cw_graph_diff(reference, g);
                if (diff) {
                    fprintf(stderr, "bench-chakra: %s gives another graph: %s\n", cases[c].name,
                            diff);
                    status = 1;
                }
            }
        }
        cases[c].wall = median(wall, runs), cases[c].cpu = median(cpu, runs);
        cases[c].emit = median(emit, runs), cases[c].finalize = median(fin, runs);
        printf("%-44s %9.3f %9.3f %9.3f %9.3f %9.0f\n", cases[c].name, cases[c].wall, cases[c].cpu,
               cases[c].emit, cases[c].finalize, bytes / 1e6 / cases[c].wall);
    }
    SsimSimpleCost p;
    ssim_simple_cost_init(&p);
    SsimCostModel model = ssim_simple_cost_model(&p);
    SsimRunLimits limits = SSIM_RUN_LIMITS_NONE;
    g_autofree double *rep = g_new(double, runs);
    guint64 events = 0;
    SsimTime makespan = 0;
    for (gint r = 0; r < runs; r++) {
        gint64 t0 = g_get_monotonic_time();
        g_autoptr(SsimTimeline) tl = ssim_runtime_run(reference, &model, &limits, &error);
        rep[r] = (double)(g_get_monotonic_time() - t0) / 1e6;
        if (!tl) {
            fprintf(stderr, "bench-chakra: %s\n", error->message);
            return 1;
        }
        events = tl->events, makespan = tl->makespan;
    }
    double replay = median(rep, runs);
    printf("replay: %u ops, %" G_GUINT64_FORMAT " events, makespan %.3f ms, %.3f s\n",
           ssim_graph_n_ops(reference), events, makespan / 1e6, replay);
    double before = cases[0].wall + replay;
    for (guint c = 1; c < G_N_ELEMENTS(cases); c++)
        printf("load + replay, %-30s %.3f s against %.3f s: %.2fx\n", cases[c].name,
               cases[c].wall + replay, before, before / (cases[c].wall + replay));
    /* --trace: a load that keeps names, the replay, and the trace streamed to a file. */
    SsimChakraOptions no;
    ssim_chakra_options_init(&no);
    no.keep_names = TRUE;
    g_autofree double *named = g_new(double, runs);
    g_autoptr(SsimGraph) with_names = NULL;
    for (gint r = 0; r < runs; r++) {
        SsimChakraStats st;
        ssim_chakra_stats_init(&st);
        g_clear_pointer(&with_names, ssim_graph_free);
        with_names = ssim_chakra_load(prefix, NULL, &no, &st, &error);
        named[r] = st.wall_s;
        ssim_chakra_stats_clear(&st);
    }
    g_autoptr(SsimTimeline) tl = ssim_runtime_run(with_names, &model, &limits, &error);
    double load_named = median(named, runs), base = cases[2].wall + replay;
    for (guint f = 0; f < 2; f++) {
        g_autofree double *wt = g_new(double, runs);
        g_autofree char *path = g_build_filename(
            g_get_tmp_dir(), f ? "bench-chakra.pftrace" : "bench-chakra.json", NULL);
        gsize size = 0;
        for (gint r = 0; r < runs; r++) {
            FILE *out = fopen(path, "wb");
            SsimTraceSink sink = {write_file, out};
            gint64 t0 = g_get_monotonic_time();
            gboolean ok = ssim_trace_write(
                with_names, tl, 0, f ? SSIM_TRACE_PROTO : SSIM_TRACE_JSON, 0, &sink, &error);
            fflush(out);
            wt[r] = (double)(g_get_monotonic_time() - t0) / 1e6;
            size = (gsize)ftell(out);
            fclose(out);
            if (!ok) {
                fprintf(stderr, "bench-chakra: %s\n", error->message);
                return 1;
            }
        }
        g_unlink(path);
        double w = median(wt, runs);
        printf("--trace %-5s: %.1f MB written in %.3f s; load with names %.3f s; load + replay + "
               "trace %.3f s against %.3f s without: %.2fx\n",
               f ? "proto" : "json", size / 1e6, w, load_named, load_named + replay + w, base,
               (load_named + replay + w) / base);
    }
    if (tmp)
        cw_rm_rf(tmp);
    return status;
}
