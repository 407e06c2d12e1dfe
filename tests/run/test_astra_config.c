/*
 * Tests of the readers of ASTRA-sim's network YAML and system JSON (src/run/astra.c).
 *
 * Oracles: ASTRA-sim's own example files (the .yml files of examples/network/analytical/ and
 * the .json files of examples/system/native_collectives/, copied here verbatim, comments included)
 * read field by field; broken files each give one error naming the file, the line (YAML) and the
 * key.
 */
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <string.h>

#include <shiftsim/astra.h>

static char *dir;

static void setup(void)
{
    dir = g_dir_make_tmp("astra-config-XXXXXX", NULL);
    cr_assert_not_null(dir);
}

static void teardown(void)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name(d))) {
        g_autofree char *p = g_build_filename(dir, name, NULL);
        g_unlink(p);
    }
    g_rmdir(dir);
    g_free(dir);
}

static char *write_file(const char *name, const char *text)
{
    char *p = g_build_filename(dir, name, NULL);
    cr_assert(g_file_set_contents(p, text, -1, NULL));
    return p;
}

TestSuite(astra_config, .init = setup, .fini = teardown);

typedef gboolean (*Reader)(SsimAstraConfig *cfg, const char *path, GError **error);
typedef struct {
    const char *text, *want;
} BadFile;

/* Each file, read by `read`, fails with an error that begins with its path and `want`, and
 * leaves the configuration as it was. */
static void assert_bad_files(Reader read, const char *ext, const BadFile *cases, guint n)
{
    for (guint i = 0; i < n; i++) {
        g_autofree char *name = g_strdup_printf("bad%u.%s", i, ext);
        g_autofree char *p = write_file(name, cases[i].text);
        SsimAstraConfig c, fresh;
        ssim_astra_config_init(&c);
        ssim_astra_config_init(&fresh);
        GError *error = NULL;
        cr_assert_not(read(&c, p, &error), "case %u read", i);
        g_autofree char *want = g_strconcat(p, cases[i].want, NULL);
        cr_assert(g_str_has_prefix(error->message, want), "case %u: %s (want %s)", i,
                  error->message, want);
        cr_assert(memcmp(&c, &fresh, sizeof c) == 0, "case %u: a failed read changes nothing", i);
        g_error_free(error);
    }
}

Test(astra_config, reads_astra_example_network)
{
    g_autofree char *p = write_file("Switch.yml", "topology: [ Switch ]\n"
                                                  "npus_count: [ 8 ]\n"
                                                  "bandwidth: [ 400.0 ]  # GB/s\n"
                                                  "latency: [ 936.25 ]  # ns\n");
    SsimAstraConfig c;
    ssim_astra_config_init(&c);
    GError *error = NULL;
    cr_assert(ssim_astra_config_read_network(&c, p, &error), "%s", error ? error->message : "");
    cr_assert_eq(c.n_dims, 1);
    cr_assert_eq(c.topo[0], SSIM_ASTRA_TOPO_SWITCH);
    cr_assert_eq(c.npus[0], 8);
    cr_assert_float_eq(c.bandwidth_gbps[0], 400.0, 0);
    cr_assert_float_eq(c.latency_ns[0], 936.25, 0);

    g_autofree char *q = write_file("3d.yml", "# a 3D machine\n"
                                              "\n"
                                              "topology: [ Ring, FullyConnected, Switch ]\n"
                                              "npus_count: [ 2, 4, 8 ]   # 64 NPUs\n"
                                              "bandwidth: [ 200, 100.5, 50 ]\n"
                                              "latency: [ 10, 20, 30.5 ]\n");
    cr_assert(ssim_astra_config_read_network(&c, q, &error), "%s", error ? error->message : "");
    cr_assert_eq(c.n_dims, 3);
    cr_assert_eq(c.topo[0], SSIM_ASTRA_TOPO_RING);
    cr_assert_eq(c.topo[1], SSIM_ASTRA_TOPO_FULLY_CONNECTED);
    cr_assert_eq(c.npus[2], 8);
    cr_assert_float_eq(c.bandwidth_gbps[1], 100.5, 0);
    cr_assert_float_eq(c.latency_ns[2], 30.5, 0);
}

/* Block lists (`- value` lines after `key:`, indented or not), as yaml-cpp reads them for
 * ASTRA-sim: the same machine as the flow lists `[ a, b ]` give. */
Test(astra_config, network_in_block_lists)
{
    g_autofree char *flow = write_file("flow.yml", "topology: [ Ring, Switch ]\n"
                                                   "npus_count: [ 4, 2 ]\n"
                                                   "bandwidth: [ 50.0, 25.0 ]\n"
                                                   "latency: [ 500.0, 1000.0 ]\n");
    g_autofree char *block = write_file("block.yml", "# ASTRA-sim analytical network\n"
                                                     "topology:\n"
                                                     "  - Ring\n"
                                                     "  - Switch   # the second dimension\n"
                                                     "npus_count:\n"
                                                     "- 4\n"
                                                     "- 2\n"
                                                     "bandwidth: [ 50.0, 25.0 ]\n"
                                                     "latency:\n"
                                                     "  - 500.0\n"
                                                     "\n"
                                                     "  - '1000.0'\n");
    SsimAstraConfig a, b;
    ssim_astra_config_init(&a);
    ssim_astra_config_init(&b);
    GError *error = NULL;
    cr_assert(ssim_astra_config_read_network(&a, flow, &error), "%s", error ? error->message : "");
    cr_assert(ssim_astra_config_read_network(&b, block, &error), "%s", error ? error->message : "");
    cr_assert_eq(b.n_dims, 2);
    cr_assert_eq(memcmp(&a, &b, sizeof a), 0);
}

/* A byte order mark before the first line (a Windows editor's) is skipped. */
Test(astra_config, network_after_a_byte_order_mark)
{
    g_autofree char *p = write_file("bom.yml", "\xef\xbb\xbftopology: [ Ring ]\n"
                                               "npus_count: [ 4 ]\nbandwidth: [ 50 ]\n"
                                               "latency: [ 500 ]\n");
    SsimAstraConfig c;
    ssim_astra_config_init(&c);
    GError *error = NULL;
    cr_assert(ssim_astra_config_read_network(&c, p, &error), "%s", error ? error->message : "");
    cr_assert_eq(c.topo[0], SSIM_ASTRA_TOPO_RING);
    cr_assert_eq(c.npus[0], 4);
}

Test(astra_config, bad_networks_name_file_line_and_key)
{
    static const BadFile cases[] = {
        {"topology: [ Switch ]\nnpus_count: [ 8 ]\nbandwidth: [ 400 ]\nlatncy: [ 1 ]\n",
         ":4: unknown key \"latncy\""},
        {"topology: [ Switch, Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 1, 2 ]\nlatency: [ 1, 2 ]\n",
         ":2: npus_count has 1 values but topology has 2 dimensions"},
        {"topology: [ Torus ]\nnpus_count: [ 8 ]\nbandwidth: [ 400 ]\nlatency: [ 1 ]\n",
         ":1: topology: \"Torus\" is not Ring, Switch or FullyConnected"},
        {"topology: [ Switch ]\nnpus_count: [ 8 ]\nbandwidth: [ -4 ]\nlatency: [ 1 ]\n",
         ":3: bandwidth: \"-4\" is not a number of GB/s above 0"},
        {"topology: [ Switch ]\nnpus_count: [ 8.5 ]\nbandwidth: [ 4 ]\nlatency: [ 1 ]\n",
         ":2: npus_count: \"8.5\" is not a whole number"},
        {"topology: [ Switch ]\nnpus_count: [ 8 ]\nbandwidth: [ 400 ]\n", ": latency is missing"},
        {"topology:\nnpus_count: [ 8 ]\n", ":1: topology: no value"},
        {"topology: [ Switch ]\nnpus_count:\n", ":2: npus_count: no value"},
        {"- Switch\n", ":1: a list item (`- value`) that follows no `key:` line"},
        {"topology:\n  - [ Ring, Switch ]\n", ":2: topology: a list inside a list"},
        {"topology: [ Switch\n", ":1: topology: a list must close with ]"},
        {"topology: [ Switch ]\ntopology: [ Ring ]\n",
         ":2: topology given twice (first on line 1)"},
        {"topology: [ Switch ]\n   npus_count: [ 8 ]\n", ":2: indented line"},
        {"just words\n", ":1: expected `key: value`"},
    };
    assert_bad_files(ssim_astra_config_read_network, "yml", cases, G_N_ELEMENTS(cases));
    SsimAstraConfig c;
    ssim_astra_config_init(&c);
    GError *error = NULL;
    cr_assert_not(ssim_astra_config_read_network(&c, "/nonexistent/net.yml", &error));
    cr_assert(g_str_has_prefix(error->message, "/nonexistent/net.yml: "), "%s", error->message);
    g_error_free(error);
}

Test(astra_config, reads_astra_example_system)
{
    g_autofree char *p =
        write_file("HGX.json", "{\n"
                               "    \"scheduling-policy\": \"FIFO\",\n"
                               "    \"endpoint-delay\": 10,\n"
                               "    \"active-chunks-per-dimension\": 2,\n"
                               "    \"preferred-dataset-splits\": 4,\n"
                               "    \"all-reduce-implementation\": [\n"
                               "        \"ring\", \"direct8\"\n"
                               "    ],\n"
                               "    \"all-gather-implementation\": [\"direct\"],\n"
                               "    \"reduce-scatter-implementation\": [\"ring\"],\n"
                               "    \"all-to-all-implementation\": [\"ring\"],\n"
                               "    \"collective-optimization\": \"baseline\",\n"
                               "    \"local-mem-bw\": 3350,\n"
                               "    \"boost-mode\": 0,\n"
                               /* ASTRA-sim 1.0's, which 2.x does not read: no effect. */
                               "    \"intra-dimension-scheduling\": \"FIFO\",\n"
                               "    \"inter-dimension-scheduling\": \"themis\",\n"
                               "    \"roofline-enabled\": 0,\n"
                               "    \"peak-perf\": 989.5\n"
                               "}\n");
    SsimAstraConfig c;
    ssim_astra_config_init(&c);
    GError *error = NULL;
    cr_assert(ssim_astra_config_read_system(&c, p, &error), "%s", error ? error->message : "");
    cr_assert_eq(c.policy, SSIM_ASTRA_FIFO);
    cr_assert_not(c.local_bw_aware);
    cr_assert_not(c.roofline);
    cr_assert_eq(c.endpoint_delay, 10);
    cr_assert_eq(c.active_chunks_per_dim, 2);
    cr_assert_eq(c.splits, 4);
    cr_assert_eq(c.n_impl[SSIM_ASTRA_AR], 2);
    cr_assert_eq(c.impl[SSIM_ASTRA_AR][0].algo, SSIM_ASTRA_ALGO_RING);
    cr_assert_eq(c.impl[SSIM_ASTRA_AR][1].algo, SSIM_ASTRA_ALGO_DIRECT);
    cr_assert_eq(c.impl[SSIM_ASTRA_AR][1].window, 8);
    cr_assert_eq(c.impl[SSIM_ASTRA_AG][0].window, -1);
    cr_assert_float_eq(c.local_mem_bw_gbps, 3350, 0);
    cr_assert_float_eq(c.peak_tflops, 989.5, 0);

    /* The "one" forms: one ring over every NPU. */
    g_autofree char *q = write_file("one.json", "{\"all-to-all-implementation\": [\"oneDirect4\"],"
                                                " \"all-gather-implementation\": "
                                                "[\"oneRing\", \"oneHalvingDoubling\"],"
                                                " \"scheduling-policy\": \"FIFO\","
                                                " \"collective-optimization\": \"baseline\","
                                                " \"preferred-dataset-splits\": 4,"
                                                " \"local-mem-bw\": 3350}");
    SsimAstraConfig one = c;
    cr_assert(ssim_astra_config_read_system(&one, q, &error), "%s", error ? error->message : "");
    cr_assert(one.impl[SSIM_ASTRA_A2A][0].one);
    cr_assert_eq(one.impl[SSIM_ASTRA_A2A][0].algo, SSIM_ASTRA_ALGO_DIRECT);
    cr_assert_eq(one.impl[SSIM_ASTRA_A2A][0].window, 4);
    cr_assert_eq(one.impl[SSIM_ASTRA_AG][1].algo, SSIM_ASTRA_ALGO_HALVING_DOUBLING);
    cr_assert(one.impl[SSIM_ASTRA_AG][1].one);
    cr_assert_not(one.impl[SSIM_ASTRA_AR][0].one);
    g_autoptr(GString) one_text = ssim_astra_config_format(&one);
    cr_assert(strstr(one_text->str, "all-gather-implementation: [ oneRing, oneHalvingDoubling ]"),
              "%s", one_text->str);
    cr_assert(strstr(one_text->str, "all-to-all-implementation: [ oneDirect4 ]"), "%s",
              one_text->str);

    /* The printout names every field as the files would. */
    g_autoptr(GString) text = ssim_astra_config_format(&c);
    cr_assert(strstr(text->str, "scheduling-policy: FIFO\n"), "%s", text->str);
    cr_assert(strstr(text->str, "all-reduce-implementation: [ ring, direct8 ]\n"), "%s", text->str);
    cr_assert(strstr(text->str, "local-mem-bw: 3350\n"), "%s", text->str);
}

/* A key the file leaves out takes ASTRA-sim's value (Sys::Sys), not this reader's defaults (the
 * example system's, roofline on): ASTRA-sim's HGX-H100-validated.json has no roofline-enabled,
 * and ASTRA-sim then replays the trace's durations. */
Test(astra_config, absent_system_keys_take_astra_sims_values)
{
    g_autofree char *p = write_file("bare.json", "{\"scheduling-policy\": \"LIFO\","
                                                 " \"collective-optimization\": \"localBWAware\","
                                                 " \"preferred-dataset-splits\": 4}");
    SsimAstraConfig c;
    ssim_astra_config_init(&c);
    cr_assert(c.roofline, "this reader's default system has the roofline on");
    c.endpoint_delay = 99;
    c.active_chunks_per_dim = 7;
    GError *error = NULL;
    cr_assert(ssim_astra_config_read_system(&c, p, &error), "%s", error ? error->message : "");
    cr_assert_not(c.roofline);
    cr_assert_float_eq(c.peak_tflops, 0, 0);
    cr_assert_float_eq(c.local_mem_bw_gbps, 0, 0);
    cr_assert_eq(c.endpoint_delay, 10);
    cr_assert_not(c.endpoint_delay_set, "--injection-scale leaves the default 10 as it is");
    cr_assert_eq(c.active_chunks_per_dim, 1);
    cr_assert_eq(c.splits, 4);
    for (int t = 0; t < SSIM_ASTRA_N_COLL; t++)
        cr_assert_eq(c.n_impl[t], 0, "no native implementation unless the file gives one");
    cr_assert_not(c.track_local_mem);
    cr_assert_not(c.replay_only);
    g_autofree char *tracked = write_file("tracked.json", "{\"scheduling-policy\": \"LIFO\","
                                                          " \"preferred-dataset-splits\": 4,"
                                                          " \"track-local-mem\": 1,"
                                                          " \"replay-only\": 2}");
    cr_assert(ssim_astra_config_read_system(&c, tracked, &error), "%s",
              error ? error->message : "");
    cr_assert(c.track_local_mem, "ASTRA-sim's hgx_h100 inputs turn the memory tracker on");
    cr_assert(c.replay_only, "any value but 0 turns replay-only on, as in Sys.cc");
    g_autoptr(GString) said = ssim_astra_config_format(&c);
    cr_assert(strstr(said->str, "track-local-mem: 1\nreplay-only: 1\n"), "%s", said->str);
    /* EXPLICIT: each collective's priority is its node's comm_priority. */
    g_autofree char *expl = write_file("explicit.json", "{\"scheduling-policy\": \"EXPLICIT\","
                                                        " \"preferred-dataset-splits\": 4}");
    cr_assert(ssim_astra_config_read_system(&c, expl, &error), "%s", error ? error->message : "");
    cr_assert_eq(c.policy, SSIM_ASTRA_EXPLICIT);
    g_autoptr(GString) expl_text = ssim_astra_config_format(&c);
    cr_assert(strstr(expl_text->str, "scheduling-policy: EXPLICIT\n"), "%s", expl_text->str);

    /* Two keys ASTRA-sim leaves unset without them are required, each by name. */
    const char *const missing[] = {"scheduling-policy", "preferred-dataset-splits"};
    const char *const texts[] = {
        "{\"collective-optimization\": \"baseline\", \"preferred-dataset-splits\": 1}",
        "{\"scheduling-policy\": \"FIFO\", \"collective-optimization\": \"baseline\"}"};
    for (guint i = 0; i < G_N_ELEMENTS(texts); i++) {
        g_autofree char *name = g_strdup_printf("missing%u.json", i);
        g_autofree char *q = write_file(name, texts[i]);
        SsimAstraConfig d;
        ssim_astra_config_init(&d);
        cr_assert_not(ssim_astra_config_read_system(&d, q, &error), "case %u", i);
        g_autofree char *want = g_strdup_printf("%s: %s is missing", q, missing[i]);
        cr_assert(g_str_has_prefix(error->message, want), "%s", error->message);
        cr_assert_eq(d.splits, 4, "a refused file changes nothing");
        g_clear_error(&error);
    }
    /* The third, collective-optimization, is read only by a native all-reduce (refused at the
     * replay when the file leaves it out): ASTRA-sim's custom-collective example has none. */
    g_autofree char *q = write_file("nocollopt.json", "{\"scheduling-policy\": \"FIFO\", "
                                                      "\"preferred-dataset-splits\": 1}");
    cr_assert(ssim_astra_config_read_system(&c, q, &error), "%s", error ? error->message : "");
    cr_assert(c.coll_opt_unset);
    g_autoptr(GString) text = ssim_astra_config_format(&c);
    cr_assert(strstr(text->str, "# collective-optimization: unset"), "%s", text->str);
}

/* Values are read as ASTRA-sim's Sys.cc reads them through nlohmann::json: a switch
 * (`j[key] != 0`) is off only for a number equal to 0, so false turns it on (a boolean is not a
 * number there) and 0.0 turns it off; an integer key drops a real's fraction and takes true as 1;
 * model-shared-bus is on at 1 only (2 leaves it off); a real key takes true as 1.  (ASTRA-sim
 * 518bd51 gives the same makespan for a set under "roofline-enabled": false as under 1, and under
 * "endpoint-delay": 10.9 as under 10.) */
Test(astra_config, system_values_read_as_nlohmann_json_converts_them)
{
    g_autofree char *p = write_file("values.json", "{\"scheduling-policy\": \"LIFO\","
                                                   " \"preferred-dataset-splits\": 4.9,"
                                                   " \"roofline-enabled\": false,"
                                                   " \"replay-only\": 0.0,"
                                                   " \"track-local-mem\": \"no\","
                                                   " \"trace-enabled\": null,"
                                                   " \"endpoint-delay\": 10.9,"
                                                   " \"active-chunks-per-dimension\": true,"
                                                   " \"model-shared-bus\": 2,"
                                                   " \"peak-perf\": true,"
                                                   " \"local-mem-bw\": 1600,"
                                                   " \"L\": false,"
                                                   " \"local-mem-trace-filename\": \"t\"}");
    SsimAstraConfig c;
    ssim_astra_config_init(&c);
    GError *error = NULL;
    cr_assert(ssim_astra_config_read_system(&c, p, &error), "%s", error ? error->message : "");
    cr_assert(c.roofline, "false is not the number 0: the roofline is on");
    cr_assert_not(c.replay_only, "0.0 equals 0: off");
    cr_assert(c.track_local_mem, "a string is not the number 0: on");
    cr_assert_eq(c.splits, 4);
    cr_assert_eq(c.endpoint_delay, 10);
    cr_assert_eq(c.active_chunks_per_dim, 1);
    cr_assert_float_eq(c.peak_tflops, 1.0, 0);
    cr_assert_not(c.shared_bus, "2 is not 1: the bus is off");
    cr_assert_eq(c.local_reduction_delay, 1, "Sys::Sys's default");
    /* The bus's parameters are floats in Sys (G 0.01 is 0.00999999977...), L, o and g handed on
     * as whole ticks. */
    g_autofree char *bus = write_file("bus.json", "{\"scheduling-policy\": \"LIFO\","
                                                  " \"preferred-dataset-splits\": 4,"
                                                  " \"model-shared-bus\": true, \"L\": 100.7,"
                                                  " \"o\": true, \"G\": 0.01,"
                                                  " \"local-reduction-delay\": 2.9}");
    cr_assert(ssim_astra_config_read_system(&c, bus, &error), "%s", error ? error->message : "");
    cr_assert(c.shared_bus, "true is 1: the bus is on");
    cr_assert_float_eq(c.bus_L, (double)100.7f, 0);
    cr_assert_float_eq(c.bus_o, 1.0, 0);
    cr_assert_float_eq(c.bus_g, 0.0, 0);
    cr_assert(c.bus_G == (double)0.01f && c.bus_G != 0.01, "%.17g", c.bus_G);
    cr_assert_eq(c.local_reduction_delay, 2);
    g_autoptr(GString) said = ssim_astra_config_format(&c);
    cr_assert(strstr(said->str, "model-shared-bus: 1\nL: 100.7\no: 1\ng: 0\nG: 0.00999999978\n"
                                "local-reduction-delay: 2\n"),
              "%s", said->str);
}

/* per-node-custom-implementation names a YAML file of node id -> trace-set prefix, which
 * ssim_astra_config_read_per_node() reads as yaml-cpp would: comments, quoted prefixes, ids of
 * a C int; an id given twice and any other line are refused with path:line. */
Test(astra_config, per_node_custom_implementations)
{
    g_autofree char *yaml = write_file("per-node.yml", "# node id: custom set\n"
                                                       "12: sets/ring  # a comment\n"
                                                       "\n"
                                                       "-3: 'it''s here'\n"
                                                       "2147483647: \"dir/#1\"\n");
    g_autofree char *p = write_file(
        "per-node.json", "{\"scheduling-policy\": \"FIFO\", \"preferred-dataset-splits\": 1, "
                         "\"per-node-custom-implementation\": \"per-node.yml\"}");
    g_auto(SsimAstraConfig) c;
    ssim_astra_config_init(&c);
    GError *error = NULL;
    cr_assert(ssim_astra_config_read_system(&c, p, &error), "%s", error ? error->message : "");
    cr_assert_str_eq(c.per_node_path, "per-node.yml", "kept as given, for the caller to find");
    cr_assert_eq(c.n_per_node, 0);
    cr_assert(ssim_astra_config_read_per_node(&c, yaml, &error), "%s", error ? error->message : "");
    cr_assert_eq(c.n_per_node, 3);
    cr_assert(c.per_node[0].node == 12 && strcmp(c.per_node[0].path, "sets/ring") == 0);
    cr_assert(c.per_node[1].node == -3 && strcmp(c.per_node[1].path, "it's here") == 0, "%s",
              c.per_node[1].path);
    cr_assert(c.per_node[2].node == G_MAXINT32 && strcmp(c.per_node[2].path, "dir/#1") == 0);
    g_autoptr(GString) text = ssim_astra_config_format(&c);
    cr_assert(strstr(text->str, "per-node-custom-implementation: per-node.yml\n#   node 12: "
                                "sets/ring\n"),
              "%s", text->str);
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"1: a\n1: b\n", ":2: node 1 given twice (first on line 1)"},
        {"1:a\n", ":1: expected `NODE_ID: TRACE_PREFIX`"},
        {"x: a\n", ":1: expected `NODE_ID: TRACE_PREFIX`"},
        {"2147483648: a\n", ":1: expected `NODE_ID: TRACE_PREFIX`"},
        {"{1: a}\n", ":1: expected `NODE_ID: TRACE_PREFIX`"},
        {"5:\n", ":1: node 5: expected a trace-set prefix"},
        {"5: 'open\n", ":1: node 5: expected a trace-set prefix"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *name = g_strdup_printf("per-node-bad%u.yml", i);
        g_autofree char *q = write_file(name, bad[i].text);
        cr_assert_not(ssim_astra_config_read_per_node(&c, q, &error), "case %u", i);
        g_autofree char *want = g_strconcat(q, bad[i].want, NULL);
        cr_assert(g_str_has_prefix(error->message, want), "case %u: %s", i, error->message);
        g_clear_error(&error);
        cr_assert_eq(c.n_per_node, 3, "case %u: a failed read changes nothing", i);
    }
    g_autofree char *notstr = write_file(
        "per-node-list.json", "{\"scheduling-policy\": \"FIFO\", \"preferred-dataset-splits\": "
                              "1, \"per-node-custom-implementation\": [\"a.yml\"]}");
    cr_assert_not(ssim_astra_config_read_system(&c, notstr, &error));
    cr_assert(strstr(error->message, "per-node-custom-implementation: expected the path of a YAML"),
              "%s", error->message);
    g_clear_error(&error);
}

/* A custom implementation's key holds one trace-set prefix, kept as given; the file says every
 * custom implementation (a second file drops the first's), and a failed read leaves them. */
Test(astra_config, custom_implementations)
{
    g_autofree char *p = write_file(
        "custom.json", "{\"scheduling-policy\": \"FIFO\", \"preferred-dataset-splits\": 1, "
                       "\"all-to-all-implementation-custom\": [\"dir/a2a\"], "
                       "\"all-reduce-implementation-custom\": [\"ring/ar\"]}");
    g_auto(SsimAstraConfig) c;
    ssim_astra_config_init(&c);
    GError *error = NULL;
    cr_assert(ssim_astra_config_read_system(&c, p, &error), "%s", error ? error->message : "");
    cr_assert_str_eq(c.custom_path[SSIM_ASTRA_AR], "ring/ar");
    cr_assert_str_eq(c.custom_path[SSIM_ASTRA_A2A], "dir/a2a");
    cr_assert_null(c.custom_path[SSIM_ASTRA_AG]);
    cr_assert_null(c.custom[SSIM_ASTRA_AR].graph, "the caller loads the set");
    g_autoptr(GString) text = ssim_astra_config_format(&c);
    cr_assert(strstr(text->str, "all-reduce-implementation-custom: [ ring/ar ]\n"), "%s",
              text->str);
    g_autofree char *bad = write_file(
        "custom-bad.json", "{\"scheduling-policy\": \"FIFO\", \"preferred-dataset-splits\": 1, "
                           "\"all-gather-implementation-custom\": [\"x\"], \"peak-perf\": -1}");
    cr_assert_not(ssim_astra_config_read_system(&c, bad, &error));
    g_clear_error(&error);
    cr_assert_str_eq(c.custom_path[SSIM_ASTRA_AR], "ring/ar", "a failed read changes nothing");
    cr_assert_null(c.custom_path[SSIM_ASTRA_AG]);
    g_autofree char *other = write_file(
        "custom-other.json", "{\"scheduling-policy\": \"FIFO\", \"preferred-dataset-splits\": 1, "
                             "\"all-gather-implementation-custom\": [\"ag\"]}");
    cr_assert(ssim_astra_config_read_system(&c, other, &error), "%s", error ? error->message : "");
    cr_assert_null(c.custom_path[SSIM_ASTRA_AR]);
    cr_assert_str_eq(c.custom_path[SSIM_ASTRA_AG], "ag");
}

Test(astra_config, bad_systems_name_file_and_key)
{
    static const BadFile cases[] = {
        {"{\"all-reduce-implementation\": [\"oneDoubleBinaryTree\"]}",
         ": all-reduce-implementation: \"oneDoubleBinaryTree\" is not one of ASTRA-sim's"},
        {"{\"scheduling-policy\": \"RANDOM\"}", ": scheduling-policy: expected \"LIFO\""},
        {"{\"preferred-dataset-splits\": 0.9}",
         ": preferred-dataset-splits: expected a number from 1"},
        {"{\"endpoint-delay\": \"ten\"}", ": endpoint-delay: expected a number from 0"},
        {"{\"local-mem-bw\": -1}", ": local-mem-bw: expected a number >= 0"},
        {"{\"model-shared-bus\": 1, \"g\": -2}",
         ": g: the shared bus (model-shared-bus 1) needs a time from 0"},
        {"{\"model-shared-bus\": 1, \"local-reduction-delay\": -1}",
         ": local-reduction-delay: the shared bus (model-shared-bus 1) needs a delay >= 0"},
        {"{\"model-shared-bus\": \"on\"}", ": model-shared-bus: expected a number from"},
        {"{\"local-mem-trace-filename\": 3}", ": local-mem-trace-filename: expected a string"},
        {"{\"L\": \"fast\"}", ": L: expected a number"},
        {"{\"all-gather-implementation-custom\": [\"a\", \"b\"]}",
         ": all-gather-implementation-custom: expected a list of one Chakra trace-set prefix"},
        {"{\"all-reduce-implementation-custom\": \"a\"}",
         ": all-reduce-implementation-custom: expected a list of one"},
        {"{\"per-node-custom-implementation\": \"\"}",
         ": per-node-custom-implementation: expected the path of a YAML file"},
        {"{\"peak-perf\": 900, \"prefered-dataset-splits\": 4}",
         ": unknown key \"prefered-dataset-splits\""},
        {"{\"all-reduce-implementation\": \"ring\"}",
         ": all-reduce-implementation: expected a list"},
        {"{\"all-reduce-implementation\": [\"direct0\"]}",
         ": all-reduce-implementation: \"direct0\""},
        {"[1, 2]", ": expected a JSON object"},
        {"{\"endpoint-delay\": 10,\n\"peak-perf\": }", ": "},
    };
    assert_bad_files(ssim_astra_config_read_system, "json", cases, G_N_ELEMENTS(cases));
}

/* The system JSON is bounded as every JSON input is (src/core/jsonbound.h): nesting past 256
 * levels is refused before json-glib parses it, and a directory is not read at all. */
Test(astra_config, system_json_is_bounded_like_every_json_input)
{
    GString *deep = g_string_new(NULL);
    for (int i = 0; i < 300; i++)
        g_string_append_c(deep, '[');
    g_autofree char *p = write_file("deep.json", deep->str);
    g_string_free(deep, TRUE);
    SsimAstraConfig c;
    ssim_astra_config_init(&c);
    GError *error = NULL;
    cr_assert_not(ssim_astra_config_read_system(&c, p, &error));
    cr_assert(strstr(error->message, "JSON nested deeper than 256 levels"), "%s", error->message);
    g_clear_error(&error);
    cr_assert_not(ssim_astra_config_read_system(&c, dir, &error));
    cr_assert(strstr(error->message, "directory"), "%s", error->message);
    g_clear_error(&error);
    cr_assert_not(ssim_astra_config_read_network(&c, dir, &error));
    cr_assert(strstr(error->message, "directory"), "%s", error->message);
    g_clear_error(&error);
}

/* ASTRA-sim's remote memory JSON: its example (examples/remote_memory/analytical/
 * no_memory_expansion.json, bundled verbatim) and the three expansions, field by field; the
 * default is the example's NO_MEMORY_EXPANSION. */
Test(astra_config, reads_remote_memory)
{
    SsimAstraConfig c;
    ssim_astra_config_init(&c);
    cr_assert_eq(c.mem_type, SSIM_ASTRA_MEM_NONE);
    GError *error = NULL;
    const char *root = g_getenv("SHIFTSIM_DATA");
    g_autofree char *example =
        g_build_filename(root ? root : SSIM_TEST_DATA "/..", "traces", "chakra", "astra-config",
                         "memory", "no-memory-expansion.json", NULL);
    c.mem_type = SSIM_ASTRA_MEM_POOL;
    cr_assert(ssim_astra_config_read_memory(&c, example, &error), "%s",
              error ? error->message : "");
    cr_assert_eq(c.mem_type, SSIM_ASTRA_MEM_NONE);
    g_autofree char *node =
        write_file("node.json", "{\"memory-type\": \"PER_NODE_MEMORY_EXPANSION\", "
                                "\"num-nodes\": 2, \"num-npus-per-node\": 4, "
                                "\"remote-mem-latency\": 700, "
                                "\"remote-mem-bw\": 25}");
    cr_assert(ssim_astra_config_read_memory(&c, node, &error), "%s", error ? error->message : "");
    cr_assert_eq(c.mem_type, SSIM_ASTRA_MEM_PER_NODE);
    cr_assert_eq(c.mem_nodes, 2);
    cr_assert_eq(c.mem_npus_node, 4);
    cr_assert_eq(c.mem_latency_ns, 700);
    cr_assert_eq(c.mem_bw, 25);
    g_autofree char *pool = write_file("pool.json", "{\"memory-type\": \"MEMORY_POOL\", "
                                                    "\"remote-mem-bw\": 10}");
    cr_assert(ssim_astra_config_read_memory(&c, pool, &error), "%s", error ? error->message : "");
    cr_assert_eq(c.mem_type, SSIM_ASTRA_MEM_POOL);
    cr_assert_eq(c.mem_latency_ns, 0, "a latency left out is 0, as ASTRA-sim has it");
    g_autoptr(GString) text = ssim_astra_config_format(&c);
    cr_assert(strstr(text->str, "memory-type: MEMORY_POOL\nremote-mem-latency: 0\nremote-mem-bw: "
                                "10\n"),
              "%s", text->str);
    cr_assert_str_eq(ssim_astra_mem_type_name(SSIM_ASTRA_MEM_PER_NPU), "PER_NPU_MEMORY_EXPANSION");
}

Test(astra_config, bad_remote_memories_name_file_and_key)
{
    static const BadFile cases[] = {
        {"{\"remote-mem-bw\": 10}", ": memory-type is missing"},
        {"{\"memory-type\": \"CXL\"}", ": memory-type: expected \"NO_MEMORY_EXPANSION\""},
        {"{\"memory-type\": \"MEMORY_POOL\"}", ": remote-mem-bw: a MEMORY_POOL needs a bandwidth "
                                               "above 0"},
        {"{\"memory-type\": \"MEMORY_POOL\", \"remote-mem-bw\": 0.5}",
         ": remote-mem-bw: a MEMORY_POOL needs a bandwidth above 0"},
        {"{\"memory-type\": \"MEMORY_POOL\", \"remote-mem-bw\": \"fast\"}",
         ": remote-mem-bw: expected a number from 0"},
        {"{\"memory-type\": \"PER_NPU_MEMORY_EXPANSION\", \"remote-mem-bw\": 1, "
         "\"remote-mem-latncy\": 3}",
         ": unknown key \"remote-mem-latncy\""},
        {"{\"memory-type\": \"PER_NODE_MEMORY_EXPANSION\", \"remote-mem-bw\": 1}",
         ": PER_NODE_MEMORY_EXPANSION needs num-nodes and num-npus-per-node"},
        {"[1]", ": expected a JSON object of remote memory settings"},
    };
    assert_bad_files(ssim_astra_config_read_memory, "json", cases, G_N_ELEMENTS(cases));
}
