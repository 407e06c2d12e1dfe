/*
 * `shiftsim replay` on Chakra traces and on clusters, driven through ssim_cli_main(): exit
 * statuses, the options that price on a cluster (--cluster, --nodes, --network, --profile) and
 * how they combine with the simple model's, the thread count (which must not change a byte of
 * the output), and deadlock messages that name ops although a plain load keeps no names.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include "tests/common/clitest.h"
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>

#include "../import/chakra-writer.h"
#include "src/app/cli.h"

static char *bundled(const char *rel)
{
    return g_build_filename(SHIFTSIM_SOURCE_ROOT, "traces", "chakra", rel, NULL);
}

/* PREFIX.0.et .. PREFIX.<ranks-1>.et, each holding `node`. */
static void write_ranks(const char *prefix, guint ranks, const CwNode *node)
{
    GError *error = NULL;
    for (guint r = 0; r < ranks; r++)
        cr_assert(cw_write_rank(prefix, r, node, 1, &error), "%s", error ? error->message : "");
}

/* Removes PREFIX.<rank>.et of `ranks` ranks and then `dir`. */
static void remove_ranks(const char *dir, const char *prefix, guint ranks)
{
    for (guint r = 0; r < ranks; r++) {
        g_autofree char *path = cw_rank_path(prefix, r);
        g_unlink(path);
    }
    g_rmdir(dir);
}

/* `text` (stdout or stderr of the runs so far) says `needle`. */
#define assert_says(text, needle)                                                                  \
    cr_assert(strstr((text), (needle)) != NULL, "no \"%s\" in:\n%s", (needle), (text))

Test(replay_cli, chakra_on_a_flow_network, .init = test_redirect)
{
    g_autofree char *prefix = bundled("examples/two-rank/two-rank");
    const char *argv[] = {"shiftsim", "replay",    "--chakra", prefix,     "--cluster",
                          "dgx-h100", "--network", "flow",     "--format", "csv"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 0);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "shiftsim replay: network: ") != NULL, "%s", err);
}

Test(replay_cli, a_cluster_is_sized_to_the_ranks, .init = test_redirect)
{
    g_autofree char *prefix = bundled("allreduce-64npus-1MB/all_reduce");
    const char *argv[] = {"shiftsim", "replay", "--chakra", prefix, "--cluster", "dgx-h100"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 0);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "sized to 8 nodes (64 GPUs) for the 64 ranks") != NULL, "%s", err);
}

Test(replay_cli, nodes_too_few_for_the_ranks, .init = test_redirect)
{
    g_autofree char *prefix = bundled("allreduce-64npus-1MB/all_reduce");
    const char *argv[] = {"shiftsim",  "replay",   "--chakra", prefix,
                          "--cluster", "dgx-h100", "--nodes",  "2"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "64 ranks but cluster dgx-h100 has 16 GPUs") != NULL, "%s", err);
}

Test(replay_cli, simple_model_options_exclude_a_cluster, .init = test_redirect)
{
    const char *argv[] = {"shiftsim", "replay", "--cluster", "dgx-h100", "--tflops", "100"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 2);
    const char *bad_net[] = {"shiftsim", "replay", "--network", "packet"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(bad_net), bad_net), 2);
    const char *bad_jobs[] = {"shiftsim", "replay", "--jobs", "-1"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(bad_jobs), bad_jobs), 2);
}

/* The summary is the same bytes whatever the decoding threads. */
Test(replay_cli, threads_do_not_change_the_output, .init = test_redirect)
{
    g_autofree char *prefix = bundled("stg-gpt-dp2-tp2-pp2");
    char *outs[2] = {NULL, NULL}; /* freed below: g_autofree on an array frees its first only */
    for (guint i = 0; i < 2; i++) {
        g_autofree char *dir = g_dir_make_tmp("ssim-replay-XXXXXX", NULL);
        g_autofree char *csv = g_build_filename(dir, "t.csv", NULL);
        const char *jobs = i ? "3" : "1";
        const char *argv[] = {"shiftsim", "replay",     "--chakra", prefix,     "-j",
                              jobs,       "--timeline", csv,        "--format", "json"};
        cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 0);
        cr_assert(g_file_get_contents(csv, &outs[i], NULL, NULL));
        g_unlink(csv);
        g_rmdir(dir);
    }
    cr_assert_str_eq(outs[0], outs[1]);
    g_free(outs[0]);
    g_free(outs[1]);
}

/* Rank 1 never reaches the all-reduce rank 0 waits in: the message names the stuck op, although
 * the replay loaded the trace without names (nothing asked for them) until it failed. */
Test(replay_cli, a_deadlock_names_its_ops, .init = test_redirect)
{
    g_autofree char *dir = g_dir_make_tmp("ssim-replay-XXXXXX", NULL);
    g_autofree char *prefix = g_build_filename(dir, "stuck", NULL);
    GError *error = NULL;
    CwNode ar = CW_NODE_INIT, idle = CW_NODE_INIT;
    ar.id = idle.id = 1;
    ar.is_cpu_op = idle.is_cpu_op = 0;
    ar.name = "grad_allreduce", ar.type = CW_COLL, ar.comm_type = CW_ALL_REDUCE;
    ar.comm_size = 1024;
    idle.name = "idle", idle.type = CW_COMP, idle.duration_micros = 1;
    cr_assert(cw_write_rank(prefix, 0, &ar, 1, &error));
    cr_assert(cw_write_rank(prefix, 1, &idle, 1, &error));
    const char *argv[] = {"shiftsim", "replay", "--chakra", prefix};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 1);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "deadlock") && strstr(err, "grad_allreduce#"), "%s", err);
    remove_ranks(dir, prefix, 2);
}

Test(replay_cli, traces_by_format, .init = test_redirect)
{
    g_autofree char *prefix = bundled("examples/two-rank/two-rank");
    g_autofree char *dir = g_dir_make_tmp("ssim-replay-XXXXXX", NULL);
    g_autofree char *pf = g_build_filename(dir, "t.pftrace", NULL);
    g_autofree char *js = g_build_filename(dir, "t.json", NULL);
    const char *a[] = {"shiftsim", "replay", "--chakra", prefix, "--trace", pf};
    cr_assert_eq(test_cli(G_N_ELEMENTS(a), a), 0);
    const char *b[] = {"shiftsim", "replay", "--chakra", prefix, "--trace", js};
    cr_assert_eq(test_cli(G_N_ELEMENTS(b), b), 0);
    g_autofree char *proto = NULL, *json = NULL;
    gsize proto_len;
    cr_assert(g_file_get_contents(pf, &proto, &proto_len, NULL));
    cr_assert(g_file_get_contents(js, &json, NULL, NULL));
    cr_assert_eq(proto[0], 0x0a, "a Trace starts with its first packet (field 1)");
    cr_assert(g_str_has_prefix(json, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":["));
    /* A forced format, a bad one, and a directory that does not exist (no temporary left). */
    const char *c[] = {"shiftsim", "replay", "--chakra",       prefix,
                       "--trace",  js,       "--trace-format", "proto"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(c), c), 0);
    g_autofree char *forced = NULL;
    cr_assert(g_file_get_contents(js, &forced, NULL, NULL));
    cr_assert_eq(forced[0], 0x0a);
    const char *d[] = {"shiftsim", "replay", "--trace", js, "--trace-format", "xml"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(d), d), 2);
    g_autofree char *missing = g_build_filename(dir, "no", "t.json", NULL);
    const char *e[] = {"shiftsim", "replay", "--trace", missing};
    cr_assert_eq(test_cli(G_N_ELEMENTS(e), e), 1);
    g_unlink(pf);
    g_unlink(js);
    GDir *left = g_dir_open(dir, 0, NULL);
    cr_assert_null(g_dir_read_name(left), "a temporary file was left behind");
    g_dir_close(left);
    g_rmdir(dir);
}

/* --semantics astra reads ASTRA-sim's files and prints ASTRA-sim's simulated time for them
 * (545101988 ns: what AstraSim_Analytical_Congestion_Unaware printed for the same files); the
 * options that price by other rules are refused, and so is a bad file, naming its line. */
Test(replay_cli, astra_semantics, .init = test_redirect)
{
    g_autofree char *prefix = bundled("stg-gpt-dp2-tp2-pp2/workload");
    g_autofree char *net = bundled("astra-config/ring-switch-2x4.yml");
    g_autofree char *sys = bundled("astra-config/ring-4chunks-roofline.json");
    const char *argv[] = {"shiftsim", "replay",         "--chakra", prefix,     "--astra-network",
                          net,        "--astra-system", sys,        "--format", "csv"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 0);
    g_autofree char *out = test_slurp(cr_get_redirected_stdout());
    cr_assert(strstr(out, "545101988") != NULL, "%s", out);

    const char *no_chakra[] = {"shiftsim", "replay", "--semantics", "astra"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(no_chakra), no_chakra), 2);
    const char *bad[] = {"shiftsim", "replay", "--chakra", prefix, "--semantics", "ns3"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(bad), bad), 2);
    const char *mixed[] = {"shiftsim",    "replay", "--chakra",  prefix,
                           "--semantics", "astra",  "--cluster", "dgx-h100"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(mixed), mixed), 2);
    const char *wrong_size[] = {"shiftsim", "replay", "--chakra", prefix, "--astra-network", sys};
    cr_assert_eq(test_cli(G_N_ELEMENTS(wrong_size), wrong_size), 1);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "--semantics: 'ns3' is not shiftsim or astra") != NULL, "%s", err);
    cr_assert(strstr(err, "ring-4chunks-roofline.json:1: expected `key: value`") != NULL, "%s",
              err);
}

/* Under ASTRA-sim's rules the trace is read as ASTRA-sim reads it: a GPU compute node without
 * num_ops, which ASTRA-sim's roofline throws on, is refused naming the node when the system file
 * turns the roofline on (the default system does), and replays its 5 us where it is off. */
Test(replay_cli, astra_reads_nodes_as_astra_sim, .init = test_redirect)
{
    g_autofree char *dir = g_dir_make_tmp("astra-read-XXXXXX", NULL);
    g_autofree char *prefix = g_build_filename(dir, "one", NULL);
    CwNode comp = CW_NODE_INIT;
    comp.type = CW_COMP;
    comp.name = "gemm";
    comp.duration_micros = 5;
    write_ranks(prefix, 1, &comp);
    g_autofree char *off = bundled("astra-config/hgx-h100-validated.json");
    const char *roofline[] = {"shiftsim", "replay", "--chakra", prefix, "--semantics", "astra"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(roofline), roofline), 1);
    const char *replay[] = {"shiftsim", "replay", "--chakra", prefix, "--astra-system", off};
    cr_assert_eq(test_cli(G_N_ELEMENTS(replay), replay), 0);
    g_autofree char *out = test_slurp(cr_get_redirected_stdout());
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, "one.0.et: node 0 (gemm): COMP_NODE has no num_ops, which ASTRA-sim's "
                          "roofline (roofline-enabled) reads") != NULL,
              "%s", err);
    cr_assert(strstr(out, "makespan  5000 ns") != NULL, "%s", out);
    remove_ranks(dir, prefix, 1);
}

/* --astra-memory reads ASTRA-sim's remote memory JSON: a load of 5000 bytes from the bundled
 * pool (500 ns, 50 bytes/ns) takes 500 + 100 ns; without it (NO_MEMORY_EXPANSION, ASTRA-sim's
 * example) the memory node is an error, as ASTRA-sim exits; under shiftsim's semantics the
 * option is a usage error. */
Test(replay_cli, astra_remote_memory, .init = test_redirect)
{
    g_autofree char *dir = g_dir_make_tmp("astra-mem-XXXXXX", NULL);
    g_autofree char *prefix = g_build_filename(dir, "m", NULL);
    CwNode load = CW_NODE_INIT;
    load.type = CW_MEM_LOAD;
    load.name = "load";
    load.tensor_size = 5000;
    write_ranks(prefix, 1, &load);
    g_autofree char *pool = bundled("astra-config/memory/memory-pool.json");
    const char *served[] = {"shiftsim", "replay", "--chakra", prefix, "--astra-memory", pool};
    cr_assert_eq(test_cli(G_N_ELEMENTS(served), served), 0);
    const char *none[] = {"shiftsim", "replay", "--chakra", prefix, "--semantics", "astra"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(none), none), 1);
    const char *own[] = {"shiftsim",    "replay",   "--chakra",       prefix,
                         "--semantics", "shiftsim", "--astra-memory", pool};
    cr_assert_eq(test_cli(G_N_ELEMENTS(own), own), 2);
    g_autofree char *out = test_slurp(cr_get_redirected_stdout());
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(out, "makespan  600 ns") != NULL, "%s", out);
    cr_assert(strstr(err, "1 memory nodes served by MEMORY_POOL") != NULL, "%s", err);
    cr_assert(strstr(err, "node 0 is a memory node, and the remote memory is "
                          "NO_MEMORY_EXPANSION") != NULL,
              "%s", err);
    cr_assert(strstr(err, "--astra-memory, --astra-congestion, --astra-injection-scale") != NULL,
              "%s", err);
    remove_ranks(dir, prefix, 1);
}

/* ASTRA-sim's custom-collective example as its run script runs it (workload all_reduce 8npus 1MB,
 * its all-reduce by the bundled MSCCL ring, Ring_8npus): ASTRA-sim printed 90174 cycles.  The
 * system file names the ring by a path from the repository's root, found from any directory as
 * a bundled input; a set that does not exist is an error naming the system file and the key. */
Test(replay_cli, astra_custom_collective, .init = test_redirect)
{
    g_autofree char *prefix = bundled("allreduce-8npus-1MB/all_reduce");
    g_autofree char *net = bundled("astra-config/ring-8npus.yml");
    g_autofree char *sys = bundled("astra-config/custom-ring-allreduce.json");
    const char *argv[] = {"shiftsim",        "replay", "--chakra",       prefix,
                          "--astra-network", net,      "--astra-system", sys};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 0);
    g_autofree char *dir = g_dir_make_tmp("astra-custom-XXXXXX", NULL);
    g_autofree char *bad = g_build_filename(dir, "missing.json", NULL);
    cr_assert(g_file_set_contents(bad,
                                  "{\"scheduling-policy\": \"FIFO\", "
                                  "\"preferred-dataset-splits\": 1, "
                                  "\"all-reduce-implementation-custom\": [\"no/such/set\"]}",
                                  -1, NULL));
    const char *missing[] = {"shiftsim",        "replay", "--chakra",       prefix,
                             "--astra-network", net,      "--astra-system", bad};
    cr_assert_eq(test_cli(G_N_ELEMENTS(missing), missing), 1);
    g_autofree char *out = test_slurp(cr_get_redirected_stdout());
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(out, "makespan  90174 ns") != NULL, "%s", out);
    cr_assert(strstr(err, "8 collectives by custom implementations") != NULL, "%s", err);
    g_autofree char *want =
        g_strdup_printf("%s: all-reduce-implementation-custom: no/such/set", bad);
    cr_assert(strstr(err, want) != NULL, "%s", err);
    g_unlink(bad);
    g_rmdir(dir);
}

/* --astra-congestion aware queues messages on the links, as AstraSim_Analytical_Congestion_Aware
 * (which printed 757024658 cycles for this set and files; unaware: 577141850); it takes one
 * network dimension, and its value is checked. */
Test(replay_cli, astra_congestion_aware, .init = test_redirect)
{
    g_autofree char *prefix = bundled("stg-gpt-dp2-tp2-pp2/workload");
    g_autofree char *ring = bundled("astra-config/ring-8npus.yml");
    g_autofree char *two = bundled("astra-config/ring-switch-2x4.yml");
    const char *argv[] = {"shiftsim",        "replay", "--chakra",           prefix,
                          "--astra-network", ring,     "--astra-congestion", "aware"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 0);
    const char *dims[] = {"shiftsim",        "replay", "--chakra",           prefix,
                          "--astra-network", two,      "--astra-congestion", "aware"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(dims), dims), 1);
    const char *bad[] = {"shiftsim", "replay", "--chakra", prefix, "--astra-congestion", "full"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(bad), bad), 2);
    const char *mixed[] = {"shiftsim",    "replay",   "--chakra",           prefix,
                           "--semantics", "shiftsim", "--astra-congestion", "aware"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(mixed), mixed), 2);
    g_autofree char *out = test_slurp(cr_get_redirected_stdout());
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(out, "makespan  757024658 ns") != NULL, "%s", out);
    cr_assert(strstr(err, "congestion-aware network takes one dimension") != NULL, "%s", err);
    cr_assert(strstr(err, "--astra-congestion: 'full' is not unaware or aware") != NULL, "%s", err);
}

/* `replay --chakra PREFIX --astra-network NET --astra-system SYS OPTION`: its exit status. */
static int replay_astra_with(const char *prefix, const char *net, const char *sys,
                             const char *option)
{
    const char *argv[] = {"shiftsim", "replay",         "--chakra", prefix, "--astra-network",
                          net,        "--astra-system", sys,        option};
    return test_cli(G_N_ELEMENTS(argv), argv);
}

/* ASTRA-sim's --injection-scale, --rendezvous-protocol and --num-queues-per-dim (518bd51 printed
 * 8552 and 11076 cycles for the bundled all-reduce on these files, 8372 without either, and
 * 32220 with four queues on ring-8npus.yml, 64440 with one); a scale that is not a number of 0
 * or more or a queue count below 1 is a usage error, and so is an option under --semantics
 * shiftsim. */
Test(replay_cli, astra_command_line_options, .init = test_redirect)
{
    g_autofree char *prefix = bundled("allreduce-8npus-1MB/all_reduce");
    g_autofree char *net = bundled("astra-config/ring-switch-2x4.yml");
    g_autofree char *ring = bundled("astra-config/ring-8npus.yml");
    g_autofree char *sys = bundled("astra-config/ring-4chunks-roofline.json");
    cr_assert_eq(replay_astra_with(prefix, net, sys, "--astra-injection-scale=2.5"), 0);
    cr_assert_eq(replay_astra_with(prefix, net, sys, "--astra-rendezvous-protocol"), 0);
    cr_assert_eq(replay_astra_with(prefix, ring, sys, "--astra-num-queues-per-dim=4"), 0);
    cr_assert_eq(replay_astra_with(prefix, net, sys, "--astra-injection-scale=-1"), 2);
    cr_assert_eq(replay_astra_with(prefix, net, sys, "--astra-injection-scale=x2"), 2);
    cr_assert_eq(replay_astra_with(prefix, net, sys, "--astra-num-queues-per-dim=0"), 2);
    const char *mixed[] = {"shiftsim",
                           "replay",
                           "--chakra",
                           prefix,
                           "--semantics",
                           "shiftsim",
                           "--astra-rendezvous-protocol"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(mixed), mixed), 2);
    g_autofree char *out = test_slurp(cr_get_redirected_stdout());
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    const char *first = strstr(out, "makespan  8552 ns");
    const char *second = first ? strstr(first, "makespan  11076 ns") : NULL;
    cr_assert(second != NULL && strstr(second, "makespan  32220 ns") != NULL, "%s", out);
    cr_assert(strstr(err, "--astra-injection-scale: '-1' is not a number >= 0") != NULL, "%s", err);
    cr_assert(strstr(err, "--astra-injection-scale: 'x2' is not a number >= 0") != NULL, "%s", err);
    cr_assert(strstr(err, "--astra-num-queues-per-dim: expected 1 to 1000, got 0") != NULL, "%s",
              err);
    cr_assert(strstr(err, "--astra-num-queues-per-dim describe the machine") != NULL, "%s", err);
}

/* ASTRA-sim's own simulated times (518bd51, congestion-unaware; the largest "sys[i] finished,
 * N cycles" it printed) for two symbolic_tensor_graph sets this mode had never been run on when
 * they were recorded, on networks of one to three dimensions and under five system files
 * (traces/chakra/README.md; traces/chakra/astra-matrix.sh reruns the whole matrix given
 * ASTRA-sim).  Oracle: ASTRA-sim itself, to the nanosecond. */
Test(replay_cli, astra_semantics_matches_astra_sim_on_unseen_sets, .init = test_redirect)
{
    static const struct {
        const char *set, *network, *system;
        const char *astra_ns;
    } runs[] = {
        {"stg-gpt-fsdp-dp2-tp2-pp2", "switch-8npus.yml", "ring-4chunks-roofline.json", "1456821"},
        {"stg-gpt-fsdp-dp2-tp2-pp2", "switch-8npus.yml", "hgx-h100-validated.json", "617579"},
        {"stg-gpt-fsdp-dp2-tp2-pp2", "ring-8npus.yml", "direct-16chunks.json", "2658270"},
        {"stg-gpt-fsdp-dp2-tp2-pp2", "ring-fc-switch-2x2x2.yml", "fifo-1chunk-baseline.json",
         "1547304"},
        {"stg-gpt-allreduce-dp2-tp2-pp2", "fullyconnected-8npus.yml", "ring-8chunks-delay20.json",
         "1473665"},
        {"stg-gpt-allreduce-dp2-tp2-pp2", "ring-switch-2x4.yml", "hgx-h100-validated.json",
         "943759"},
        {"stg-gpt-allreduce-dp2-tp2-pp2", "ring-8npus.yml", "fifo-1chunk-baseline.json", "2639435"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(runs); i++) {
        g_autofree char *rel = g_build_filename(runs[i].set, "workload", NULL);
        g_autofree char *prefix = bundled(rel);
        g_autofree char *net_rel = g_build_filename("astra-config", runs[i].network, NULL);
        g_autofree char *sys_rel = g_build_filename("astra-config", runs[i].system, NULL);
        g_autofree char *net = bundled(net_rel);
        g_autofree char *sys = bundled(sys_rel);
        const char *argv[] = {"shiftsim",        "replay", "--chakra",       prefix,
                              "--astra-network", net,      "--astra-system", sys,
                              "--format",        "csv"};
        cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 0, "run %u", i);
    }
    /* Every run's CSV row in turn (the figures are distinct, so each names its run). */
    g_autofree char *out = test_slurp(cr_get_redirected_stdout());
    for (guint i = 0; i < G_N_ELEMENTS(runs); i++) {
        g_autofree char *want = g_strdup_printf(",%s,", runs[i].astra_ns);
        cr_assert(strstr(out, want) != NULL, "run %u (%s on %s, %s): want %s ns in\n%s", i,
                  runs[i].set, runs[i].network, runs[i].system, runs[i].astra_ns, out);
    }
}

/* A system file with replay-only: every node waits its duration (1 ns without one) on its
 * slot, each rank alone.  Oracle: ASTRA-sim (518bd51) on the same files, 155 cycles for the GPT
 * set (no node has a duration: its longest chain of slot waits) and 3000003 for the offload
 * example (4 x 250 + 4 x 500 us of compute, and three of its 1-ns memory nodes and all-reduces
 * on the critical path). */
Test(replay_cli, astra_replay_only_replays_durations, .init = test_redirect)
{
    static const struct {
        const char *set, *makespan, *said;
    } runs[] = {
        {"stg-gpt-dp2-tp2-pp2/workload", "makespan  155 ns",
         "replay-only: 1424 nodes waited their durations"},
        {"examples/offload-8npus/offload", "makespan  3000003 ns",
         "replay-only: 160 nodes waited their durations"},
    };
    g_autofree char *net = bundled("astra-config/switch-8npus.yml");
    g_autofree char *sys = bundled("astra-config/replay-only.json");
    for (guint i = 0; i < G_N_ELEMENTS(runs); i++) {
        g_autofree char *prefix = bundled(runs[i].set);
        const char *argv[] = {"shiftsim",        "replay", "--chakra",       prefix,
                              "--astra-network", net,      "--astra-system", sys};
        cr_assert_eq(test_cli(G_N_ELEMENTS(argv), argv), 0, "run %u", i);
    }
    g_autofree char *out = test_slurp(cr_get_redirected_stdout());
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    for (guint i = 0; i < G_N_ELEMENTS(runs); i++) {
        cr_assert(strstr(out, runs[i].makespan) != NULL, "run %u: want %s in\n%s", i,
                  runs[i].makespan, out);
        cr_assert(strstr(err, runs[i].said) != NULL, "run %u: want %s in\n%s", i, runs[i].said,
                  err);
    }
}

/* A system file without roofline-enabled runs as ASTRA-sim runs it, with the roofline off: a
 * compute node takes its trace duration (ASTRA-sim's HGX-H100-validated.json is such a file).
 * By hand: one node of 5 us, 2e12 operations on 1e9 bytes; with the roofline on at 900 TFLOP/s
 * and 1600 GB/s, 2e12 / min(1.6e12 x 2000, 9e14) s = 2222222 ns. */
Test(replay_cli, astra_system_without_roofline_key_replays_durations, .init = test_redirect)
{
    g_autofree char *dir = g_dir_make_tmp("astra-noroof-XXXXXX", NULL);
    g_autofree char *prefix = g_build_filename(dir, "w", NULL);
    CwNode n = CW_NODE_INIT;
    n.id = 1;
    n.name = "gemm";
    n.type = CW_COMP;
    n.duration_micros = 5;
    n.num_ops = 2e12;
    n.tensor_size = 1000000000;
    write_ranks(prefix, 2, &n);
    /* The configuration files apart: JSON files beside the traces are taken for comm groups. */
    g_autofree char *cfg = g_build_filename(dir, "cfg", NULL);
    cr_assert_eq(g_mkdir(cfg, 0700), 0);
    g_autofree char *net = g_build_filename(cfg, "net.yml", NULL);
    cr_assert(g_file_set_contents(net,
                                  "topology: [ Switch ]\nnpus_count: [ 2 ]\nbandwidth: [ 100 ]\n"
                                  "latency: [ 500 ]\n",
                                  -1, NULL));
    const char *keys = "\"scheduling-policy\": \"LIFO\", \"collective-optimization\": "
                       "\"localBWAware\", \"preferred-dataset-splits\": 4, \"local-mem-bw\": "
                       "1600, \"peak-perf\": 900";
    g_autofree char *off = g_build_filename(cfg, "off.json", NULL);
    g_autofree char *on = g_build_filename(cfg, "on.json", NULL);
    g_autofree char *bare = g_build_filename(cfg, "bare.json", NULL);
    g_autofree char *off_text = g_strdup_printf("{%s}", keys);
    g_autofree char *on_text = g_strdup_printf("{%s, \"roofline-enabled\": 1}", keys);
    cr_assert(g_file_set_contents(off, off_text, -1, NULL));
    cr_assert(g_file_set_contents(on, on_text, -1, NULL));
    cr_assert(g_file_set_contents(bare,
                                  "{\"scheduling-policy\": \"LIFO\", "
                                  "\"collective-optimization\": \"baseline\", "
                                  "\"preferred-dataset-splits\": 1}",
                                  -1, NULL));
    const char *run_off[] = {"shiftsim",       "replay", "--chakra", prefix, "--astra-network", net,
                             "--astra-system", off,      "--format", "csv"};
    int rc_off = test_cli(G_N_ELEMENTS(run_off), run_off);
    const char *run_on[] = {"shiftsim", "replay",         "--chakra", prefix,     "--astra-network",
                            net,        "--astra-system", on,         "--format", "csv"};
    int rc_on = test_cli(G_N_ELEMENTS(run_on), run_on);
    const char *run_bare[] = {"shiftsim",        "replay", "--chakra",       prefix,
                              "--astra-network", net,      "--astra-system", bare};
    int rc_bare = test_cli(G_N_ELEMENTS(run_bare), run_bare);
    g_autofree char *out = test_slurp(cr_get_redirected_stdout());
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert_eq(rc_off, 0, "%s", err);
    cr_assert_eq(rc_on, 0, "%s", err);
    cr_assert_eq(rc_bare, 1, "%s", err);
    assert_says(out, ",5000,");
    assert_says(out, ",2222222,");
    assert_says(err, "local-mem-bw must be above 0");
    test_remove_tree(dir);
}

/* Converted PyTorch traces: --dangling-deps and --ctrl-deps on the command line, refused with
 * bad values, without --chakra and under ASTRA-sim's rules; a host-side collective call (no
 * comm_type, on the CPU) replays as a CPU op, and ASTRA-sim's rules refuse it as ASTRA-sim does. */
Test(replay_cli, converted_pytorch_trace_options, .init = test_redirect)
{
    g_autofree char *dir = g_dir_make_tmp("pytorch-et-XXXXXX", NULL);
    g_autofree char *prefix = g_build_filename(dir, "t", NULL);
    g_autofree char *whole = g_build_filename(dir, "w", NULL); /* no dangling dependency */
    static const guint64 absent[] = {3};
    CwNode call = CW_NODE_INIT;
    call.id = 10;
    call.name = "c10d::allreduce_";
    call.type = CW_COLL;
    call.is_cpu_op = 1;
    call.duration_micros = 7;
    write_ranks(whole, 2, &call);
    call.data_deps = absent, call.n_data_deps = 1;
    write_ranks(prefix, 2, &call);
    const char *strict[] = {"shiftsim", "replay", "--chakra", prefix};
    const char *drop[] = {"shiftsim", "replay", "--chakra", prefix, "--dangling-deps", "drop"};
    const char *astra[] = {"shiftsim", "replay", "--chakra", whole, "--semantics", "astra"};
    const char *astra_drop[] = {"shiftsim",    "replay", "--chakra",        prefix,
                                "--semantics", "astra",  "--dangling-deps", "drop"};
    const char *bad_value[] = {"shiftsim", "replay", "--chakra", prefix, "--ctrl-deps", "maybe"};
    const char *no_chakra[] = {"shiftsim", "replay", "--dangling-deps", "drop"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(strict), strict), 1);
    cr_assert_eq(test_cli(G_N_ELEMENTS(drop), drop), 0);
    cr_assert_eq(test_cli(G_N_ELEMENTS(astra), astra), 1);
    cr_assert_eq(test_cli(G_N_ELEMENTS(astra_drop), astra_drop), 2);
    cr_assert_eq(test_cli(G_N_ELEMENTS(bad_value), bad_value), 2);
    cr_assert_eq(test_cli(G_N_ELEMENTS(no_chakra), no_chakra), 2);
    g_autofree char *out = test_slurp(cr_get_redirected_stdout());
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    assert_says(out, "makespan  7000 ns");
    assert_says(err, "depends on node 3, which is not in this trace");
    assert_says(err, "2 dependencies on nodes absent from their trace taken as met");
    assert_says(err, "2 host-side collective calls without comm_type");
    assert_says(err, "which ASTRA-sim refuses");
    assert_says(err, "are not ASTRA-sim's rules");
    assert_says(err, "--ctrl-deps: 'maybe' is not keep or ignore");
    assert_says(err, "need --chakra");
    test_remove_tree(dir);
}

/* The default replay approximates a GATHER by an all-gather; under ASTRA-sim's rules, which
 * refuse it, it is an error. */
Test(replay_cli, astra_semantics_refuses_gather, .init = test_redirect)
{
    g_autofree char *dir = g_dir_make_tmp("astra-gather-XXXXXX", NULL);
    g_autofree char *prefix = g_build_filename(dir, "g", NULL);
    CwNode n = CW_NODE_INIT;
    n.id = 1;
    n.name = "gather";
    n.type = CW_COLL;
    n.comm_type = CW_GATHER;
    n.comm_size = 4096;
    write_ranks(prefix, 2, &n);
    const char *plain[] = {"shiftsim", "replay", "--chakra", prefix};
    cr_assert_eq(test_cli(G_N_ELEMENTS(plain), plain), 0);
    const char *astra[] = {"shiftsim", "replay", "--chakra", prefix, "--semantics", "astra"};
    cr_assert_eq(test_cli(G_N_ELEMENTS(astra), astra), 1);
    g_autofree char *err = test_slurp(cr_get_redirected_stderr());
    cr_assert(strstr(err, ".0.et: node 1 (gather): a GATHER collective, which ASTRA-sim does not "
                          "implement (it throws \"Unsupported collective comm type\")"),
              "%s", err);
    remove_ranks(dir, prefix, 2);
}
