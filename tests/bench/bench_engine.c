/*
 * Engine benchmark: replays a generated graph of N ops (default 10 million) over 64 ranks with
 * 4 streams each and prints events per second, nanoseconds per event and peak RSS.
 *
 * The graph mimics training: per rank a chain of compute ops on "compute" (some on "pp"),
 * every 8th step a tensor-parallel all-reduce inside a group of 8 that the chain waits for (as
 * Megatron's layers do), and every 16th step a 64-rank gradient all-reduce on "dp" that runs
 * beside the chain; every 256th step the chain waits for it (the optimizer step), which keeps
 * the ranks in step as real iterations do.  Graph construction and replay are timed apart;
 * events/s is the whole ssim_runtime_run() call (allocation of the timeline included).
 *
 * The first replay's figures include the kernel's first touch of its 280 MB of per-op state,
 * which on a virtual machine costs from a few hundredths of a second to half a second from one
 * run to the next.  The last line replays again on memory the process already holds (as a
 * sweep's second configuration does: glibc then keeps freed memory in its heap, not unmapped),
 * which is the engine's own speed; the makespans must agree.
 *
 * Usage: bench-engine [N_OPS]
 */
#include <shiftsim/graph.h>
#include <shiftsim/runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#define RANKS 64

static double now_s(void)
{
    return (double)g_get_monotonic_time() * 1e-6;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* User processor time alone: without the kernel's time zeroing fresh pages, which on a busy
 * virtual machine varies several-fold from run to run. */
static double user_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6;
}

int main(int argc, char **argv)
{
    guint64 want = argc > 1 ? g_ascii_strtoull(argv[1], NULL, 10) : 10000000;
    if (want < RANKS * 16) {
        fprintf(stderr, "bench-engine: N_OPS must be at least %d\n", RANKS * 16);
        return 2;
    }
    double t0 = now_s();
    g_autoptr(SsimGraph) g = ssim_graph_new();
    ssim_graph_reserve(g, want, want * 2);
    guint32 world[RANKS], tp[RANKS / 8][8], grp_tp[RANKS / 8];
    for (guint32 r = 0; r < RANKS; r++) {
        world[r] = r;
        tp[r / 8][r % 8] = r;
    }
    guint32 grp_world = ssim_graph_add_group(g, "dp", world, RANKS, NULL);
    for (guint k = 0; k < RANKS / 8; k++) {
        char name[16];
        g_snprintf(name, sizeof name, "tp%u", k);
        grp_tp[k] = ssim_graph_add_group(g, name, tp[k], 8, NULL);
    }
    guint32 streams[RANKS][4];
    static const char *const names[] = {"compute", "tp", "pp", "dp"};
    for (guint32 r = 0; r < RANKS; r++)
        for (guint s = 0; s < 4; s++)
            streams[r][s] = ssim_graph_stream(g, r, names[s]);

    guint32 last_compute[RANKS];
    guint64 steps = want / RANKS;
    for (guint32 r = 0; r < RANKS; r++)
        last_compute[r] = SSIM_NONE;
    for (guint64 k = 0; k < steps; k++) {
        for (guint32 r = 0; r < RANKS; r++) {
            SsimOpSpec s = SSIM_OP_SPEC_INIT;
            guint32 deps[1];
            guint nd = 0;
            if (last_compute[r] != SSIM_NONE)
                deps[nd++] = last_compute[r];
            if (k % 16 == 15) {
                s.kind = SSIM_OP_COLLECTIVE;
                s.coll = SSIM_COLL_ALLREDUCE;
                s.group = grp_world;
                s.stream = streams[r][3];
                s.bytes = 1 << 20;
            } else if (k % 8 == 3) {
                s.kind = SSIM_OP_COLLECTIVE;
                s.coll = SSIM_COLL_ALLREDUCE;
                s.group = grp_tp[r / 8];
                s.stream = streams[r][1];
                s.bytes = 1 << 18;
            } else {
                s.stream = streams[r][(k % 5 == 0) ? 2 : 0];
                s.duration = 1000 + (SsimTime)((k * 7 + r * 13) % 500);
            }
            guint32 op = ssim_graph_add_op(g, &s, deps, nd);
            if (s.kind == SSIM_OP_COMPUTE || k % 16 != 15 || k % 256 == 255)
                last_compute[r] = op;
        }
    }
    GError *error = NULL;
    if (!ssim_graph_finalize(g, &error)) {
        fprintf(stderr, "bench-engine: %s\n", error->message);
        return 1;
    }
    double t1 = now_s(), c1 = cpu_s(), u1 = user_s();
    SsimTimeline *t = ssim_runtime_run(g, NULL, NULL, &error);
    double t2 = now_s(), c2 = cpu_s(), u2 = user_s();
    if (t == NULL) {
        fprintf(stderr, "bench-engine: %s\n", error->message);
        return 1;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double run = t2 - t1;
    printf("ops            %u (%u ranks x 4 streams, %u matched collectives)\n",
           ssim_graph_n_ops(g), RANKS, ssim_graph_n_matches(g));
    printf("build+finalize %.3f s\n", t1 - t0);
    printf("replay         %.3f s (%.3f s processor, %.3f s user)\n", run, c2 - c1, u2 - u1);
    printf("events         %" G_GUINT64_FORMAT "\n", t->events);
    printf("events/s       %.2f M\n", (double)t->events / run / 1e6);
    printf("events/cpu-s   %.2f M (%.2f M per user second)\n", (double)t->events / (c2 - c1) / 1e6,
           (double)t->events / (u2 - u1) / 1e6);
    printf("ns/event       %.1f\n", run * 1e9 / (double)t->events);
    printf("ops/s          %.2f M\n", (double)ssim_graph_n_ops(g) / run / 1e6);
    printf("peak RSS       %.1f MiB\n", (double)ru.ru_maxrss / 1024.0);
    printf("makespan       %" G_GINT64_FORMAT " ns\n", t->makespan);
    SsimTime makespan = t->makespan;
    ssim_timeline_free(t);

    /* Warm: keep what a replay frees in the heap, fill it once, then time a replay on it. */
#ifdef __GLIBC__
    (void)mallopt(M_MMAP_MAX, 0);
    (void)mallopt(M_TRIM_THRESHOLD, G_MAXINT);
#endif
    ssim_timeline_free(ssim_runtime_run(g, NULL, NULL, NULL));
    double t3 = now_s(), u3 = user_s();
    t = ssim_runtime_run(g, NULL, NULL, &error);
    double t4 = now_s(), u4 = user_s();
    if (t == NULL || t->makespan != makespan) {
        fprintf(stderr, "bench-engine: the warm replay %s\n",
                t ? "ended at another time" : error->message);
        return 1;
    }
    printf("warm replay    %.3f s (%.3f s user): %.2f M events/s, %.1f ns/event\n", t4 - t3,
           u4 - u3, (double)t->events / (t4 - t3) / 1e6, (t4 - t3) * 1e9 / (double)t->events);
    ssim_timeline_free(t);
    return 0;
}
