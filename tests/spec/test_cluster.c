/*
 * Tests for the cluster module: the bundled DGX descriptions carry their datasheet figures in
 * base units, the embedded default equals dgx-h200.ini, the node count can be overridden,
 * broken files are reported with file, line and key, and the INI writer's output loads back to
 * the same figures.
 */
#include <criterion/criterion.h>

#include <shiftsim/cluster.h>
#include <shiftsim/clusterparams.h>
#include <shiftsim/data.h>

#include <math.h>
#include <string.h>

#define assert_has(msg, needle)                                                                    \
    cr_assert(strstr((msg), (needle)) != NULL, "message '%s' lacks '%s'", (msg), (needle))

static SsimCluster *load_ok(const char *name)
{
    GError *error = NULL;
    SsimCluster *c = ssim_cluster_load(name, &error);
    cr_assert_not_null(c, "loading %s: %s", name, error ? error->message : "?");
    return c;
}

static char *load_fail(const char *fixture)
{
    g_autofree char *path = g_build_filename(SSIM_TEST_DATA, "clusters", fixture, NULL);
    GError *error = NULL;
    SsimCluster *c = ssim_cluster_load(path, &error);
    cr_assert_null(c, "%s loaded but should not", fixture);
    cr_assert_eq(error->domain, SSIM_CONFIG_ERROR);
    char *msg = g_strdup(error->message);
    g_error_free(error);
    return msg;
}

Test(cluster, bundled_datasheet_figures)
{
    g_autoptr(SsimCluster) a = load_ok("dgx-a100");
    cr_assert_float_eq(ssim_cluster_peak_flops(a, SSIM_DTYPE_BF16), 312e12, 1e6);
    cr_assert_float_eq(ssim_cluster_peak_flops(a, SSIM_DTYPE_FP8), 0.0, 1e-9);
    cr_assert_eq(a->hbm_bytes, 80ULL << 30);
    cr_assert_float_eq(a->hbm_bw, 2039e9, 1.0);
    cr_assert_float_eq(a->nvlink_bw, 300e9, 1.0);
    cr_assert_float_eq(a->nic_bw, 25e9, 1.0); /* 200 Gb/s */
    cr_assert_eq(a->nics_per_node, 8);
    cr_assert_eq(a->collective_overhead, 58 * SSIM_US);     /* fitted to the vTrain NCCL tables */
    cr_assert_float_eq(a->collective_copy_bw, 1110e9, 1.0); /* the same fit */
    cr_assert_float_eq(a->nvlink_efficiency, 1.0, 1e-12);

    g_autoptr(SsimCluster) h = load_ok("dgx-h100");
    cr_assert_float_eq(ssim_cluster_peak_flops(h, SSIM_DTYPE_BF16), 989.5e12, 1e6);
    cr_assert_float_eq(ssim_cluster_peak_flops(h, SSIM_DTYPE_FP8), 1979e12, 1e6);
    cr_assert_float_eq(h->hbm_bw, 3350e9, 1.0);
    cr_assert_float_eq(h->nic_bw, 50e9, 1.0); /* 400 Gb/s */
    cr_assert_float_eq(ssim_cluster_node_net_bw(h), 400e9, 1.0);

    g_autoptr(SsimCluster) x = load_ok("dgx-h200");
    cr_assert_eq(x->hbm_bytes, 143771ULL << 20);
    cr_assert_float_eq(x->hbm_bw, 4800e9, 1.0);
    cr_assert_eq(x->nvlink_latency, 2 * SSIM_US);
    cr_assert_eq(x->nic_latency, 5 * SSIM_US);
    cr_assert_eq(x->kernel_overhead, 1 * SSIM_US);
    cr_assert_eq(x->collective_overhead, 0); /* not set: none */
    cr_assert_float_eq(x->collective_copy_bw, 0.0, 1e-9);
    cr_assert_float_eq(x->gemm_half_flops, 4e9, 1.0);
}

Test(cluster, default_matches_bundled_h200)
{
    g_autoptr(SsimCluster) d = ssim_cluster_default();
    g_autoptr(SsimCluster) f = load_ok("dgx-h200");
    cr_assert(ssim_cluster_check(d, NULL));
    cr_assert_str_eq(d->name, f->name);
    cr_assert_str_eq(d->gpu, f->gpu);
    cr_assert_eq(d->gpus_per_node, f->gpus_per_node);
    cr_assert_eq(d->nodes, f->nodes);
    for (int t = 0; t < SSIM_DTYPE_N; t++)
        cr_assert_float_eq(d->peak_flops[t], f->peak_flops[t], 1.0, "dtype %d", t);
    cr_assert_eq(d->hbm_bytes, f->hbm_bytes);
    cr_assert_float_eq(d->hbm_bw, f->hbm_bw, 1.0);
    cr_assert_float_eq(d->nvlink_bw, f->nvlink_bw, 1.0);
    cr_assert_eq(d->nvlink_latency, f->nvlink_latency);
    cr_assert_eq(d->nics_per_node, f->nics_per_node);
    cr_assert_float_eq(d->nic_bw, f->nic_bw, 1.0);
    cr_assert_eq(d->nic_latency, f->nic_latency);
    cr_assert_float_eq(d->gemm_efficiency, f->gemm_efficiency, 1e-12);
    cr_assert_float_eq(d->gemm_half_flops, f->gemm_half_flops, 1.0);
    cr_assert_float_eq(d->memory_efficiency, f->memory_efficiency, 1e-12);
    cr_assert_float_eq(d->nvlink_efficiency, f->nvlink_efficiency, 1e-12);
    cr_assert_float_eq(d->ib_efficiency, f->ib_efficiency, 1e-12);
    cr_assert_float_eq(d->overlap_slowdown, f->overlap_slowdown, 1e-12);
    cr_assert_eq(d->kernel_overhead, f->kernel_overhead);
    cr_assert_eq(d->sm_count, f->sm_count);
    cr_assert_eq(d->gemm_tile_m, f->gemm_tile_m);
    cr_assert_eq(d->gemm_tile_n, f->gemm_tile_n);
    cr_assert_eq(d->gemm_tile_overhead, f->gemm_tile_overhead);
    cr_assert_float_eq(d->sm_clock, f->sm_clock, 1.0);
    cr_assert_eq(d->flash_overlap, f->flash_overlap);
    cr_assert_eq(ssim_cluster_n_gpus(d), 32);
}

Test(cluster, set_nodes_and_rank_to_node)
{
    g_autoptr(SsimCluster) c = ssim_cluster_default();
    ssim_cluster_set_nodes(c, 128);
    cr_assert_eq(ssim_cluster_n_gpus(c), 1024);
    cr_assert_eq(ssim_cluster_node_of(c, 0), 0);
    cr_assert_eq(ssim_cluster_node_of(c, 7), 0);
    cr_assert_eq(ssim_cluster_node_of(c, 8), 1);
    cr_assert_eq(ssim_cluster_node_of(c, 1023), 127);
    g_autoptr(SsimCluster) copy = ssim_cluster_copy(c);
    cr_assert_eq(copy->nodes, 128);
    cr_assert_neq(copy->gpu, c->gpu);
    cr_assert_str_eq(copy->gpu, c->gpu);
}

Test(cluster, efficiencies_default_when_group_absent)
{
    g_autofree char *path =
        g_build_filename(SSIM_TEST_DATA, "clusters", "bad-efficiency.ini", NULL);
    g_autofree char *text = NULL;
    cr_assert(g_file_get_contents(path, &text, NULL, NULL));
    /* Cut the [efficiency] group off. */
    *strstr(text, "[efficiency]") = '\0';
    GError *error = NULL;
    g_autoptr(SsimCluster) c = ssim_cluster_load_data(text, -1, "test.ini", &error);
    cr_assert_not_null(c, "%s", error ? error->message : "");
    cr_assert_str_eq(c->name, "test");
    cr_assert_gt(c->gemm_efficiency, 0.0);
    cr_assert_leq(c->gemm_efficiency, 1.0);
    cr_assert_geq(c->overlap_slowdown, 1.0);
    cr_assert_float_eq(ssim_cluster_peak_flops(c, SSIM_DTYPE_TF32), 0.0, 1e-9);
}

Test(cluster, error_bad_efficiency)
{
    g_autofree char *msg = load_fail("bad-efficiency.ini");
    assert_has(msg, "bad-efficiency.ini:25: gemm: 1.5 is out of range");
}

/* The bundled dgx-a100.ini with its line `line` replaced by `bad`, loaded as neg.ini: the error
 * names the file and contains `expected`. */
static void assert_a100_line_refused(const char *line, const char *bad, const char *expected)
{
    g_autofree char *path = ssim_data_find("models/clusters/dgx-a100.ini");
    cr_assert_not_null(path);
    g_autofree char *text = NULL;
    cr_assert(g_file_get_contents(path, &text, NULL, NULL));
    g_auto(GStrv) parts = g_strsplit(text, line, 2);
    cr_assert_eq(g_strv_length(parts), 2, "no line '%s'", line);
    g_autofree char *changed = g_strjoin(bad, parts[0], parts[1], NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimCluster) d = ssim_cluster_load_data(changed, -1, "neg.ini", &error);
    cr_assert_null(d);
    assert_has(error->message, "neg.ini:");
    assert_has(error->message, expected);
}

Test(cluster, error_negative_collective_overhead)
{
    assert_a100_line_refused("collective_overhead_us = 58", "collective_overhead_us = -1",
                             "collective_overhead_us: -1 is out of range");
}

Test(cluster, error_negative_collective_copy)
{
    assert_a100_line_refused("collective_copy_GB_s = 1110", "collective_copy_GB_s = -5",
                             "collective_copy_GB_s: -5 is out of range");
}

/* ring_nics (the NICs a communicator's rings leave a node through): a positive integer, at most
 * the node's NICs; absent, 0 (no cap). */
Test(cluster, ring_nics_range)
{
    assert_a100_line_refused("step_overhead_us = 0", "step_overhead_us = 0\nring_nics = 9",
                             "ring_nics: 9 is out of range (must be in [1, nics_per_node = 8])");
    assert_a100_line_refused("step_overhead_us = 0", "step_overhead_us = 0\nring_nics = 0",
                             "ring_nics:");
    assert_a100_line_refused("step_overhead_us = 0", "step_overhead_us = 0\nring_nics = 1.5",
                             "ring_nics:");
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimCluster) c = ssim_cluster_load("dgx-a100", &error);
    cr_assert_not_null(c, "%s", error ? error->message : "");
    cr_assert_eq(c->ring_nics, 0);
    g_autoptr(GString) plain = ssim_cluster_write_ini(c, NULL);
    cr_assert_null(strstr(plain->str, "ring_nics"), "%s", plain->str);
    c->ring_nics = 2;
    g_autoptr(GString) ini = ssim_cluster_write_ini(c, NULL);
    g_autoptr(SsimCluster) d = ssim_cluster_load_data(ini->str, (gssize)ini->len, "x.ini", &error);
    cr_assert_not_null(d, "%s", error ? error->message : "");
    cr_assert_eq(d->ring_nics, 2);
}

Test(cluster, error_unknown_group)
{
    g_autofree char *msg = load_fail("unknown-group.ini");
    assert_has(msg, "unknown-group.ini:7: [gpus]: unknown group");
}

Test(cluster, error_missing_key)
{
    g_autofree char *msg = load_fail("missing-key.ini");
    assert_has(msg, "missing-key.ini:8: hbm_bandwidth_GB_s: missing (required in [gpu])");
}

Test(cluster, error_bad_version)
{
    g_autofree char *msg = load_fail("bad-version.ini");
    assert_has(msg, "bad-version.ini:2: format: version 3 is not supported");
}

Test(cluster, error_unknown_name)
{
    GError *error = NULL;
    cr_assert_null(ssim_cluster_load("dgx-z900", &error));
    assert_has(error->message, "unknown cluster 'dgx-z900'");
    g_clear_error(&error);
}

Test(cluster, cluster_ini_round_trip)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimCluster) c = ssim_cluster_load("dgx-a100", &error);
    cr_assert_not_null(c, "%s", error ? error->message : "");
    c->gemm_efficiency = 0.61234;
    c->kernel_overhead = 7321;
    c->kernel_floor = 81234;
    c->collective_overhead = 41234;
    c->collective_copy_bw = 987.5e9;
    g_autoptr(GString) ini = ssim_cluster_write_ini(c, "calibrated\nby a test");
    cr_assert(g_str_has_prefix(ini->str, "# calibrated\n# by a test\n[cluster]"));
    /* Whole numbers as written by hand, not in %g's shortest exponent form. */
    cr_assert(strstr(ini->str, "\nsm_clock_MHz = 1410\n"), "%s", ini->str);
    cr_assert(strstr(ini->str, "\nbandwidth_GB_s = 300\n"), "%s", ini->str);
    cr_assert(strstr(ini->str, "\ncollective_copy_GB_s = 987.5\n"), "%s", ini->str);
    g_autoptr(SsimCluster) d = ssim_cluster_load_data(ini->str, (gssize)ini->len, "x.ini", &error);
    cr_assert_not_null(d, "%s", error ? error->message : "");
    cr_assert_eq(d->gpus_per_node, c->gpus_per_node);
    cr_assert_eq(d->hbm_bytes, c->hbm_bytes);
    for (guint k = 0; k < SSIM_DTYPE_N; k++)
        cr_assert_float_eq(d->peak_flops[k], c->peak_flops[k], 1e-3 + 1e-12 * c->peak_flops[k]);
    cr_assert_float_eq(d->hbm_bw, c->hbm_bw, 1e-6 * c->hbm_bw);
    cr_assert_float_eq(d->nic_bw, c->nic_bw, 1e-9 * c->nic_bw);
    cr_assert_float_eq(d->pcie_bw, c->pcie_bw, 1e-9 * c->pcie_bw);
    cr_assert_eq(d->nvlink_latency, c->nvlink_latency);
    cr_assert_eq(d->nic_latency, c->nic_latency);
    cr_assert_eq(d->kernel_overhead, 7321);
    cr_assert_eq(d->kernel_floor, 81234);
    cr_assert_eq(d->collective_overhead, 41234);
    cr_assert_float_eq(d->collective_copy_bw, 987.5e9, 1.0);
    cr_assert_eq(d->spine_latency, c->spine_latency);
    cr_assert_eq(d->nodes_per_leaf, c->nodes_per_leaf);
    for (guint p = 0; p < SSIM_CALIB_N; p++)
        cr_assert_float_eq(ssim_calib_param_get(d, p), ssim_calib_param_get(c, p), 1e-9, "%s",
                           ssim_calib_param_name(p));
}

/* The GEMM shape model's keys and the [calibration] ranges load, check and write back. */
Test(cluster, gemm_model_keys_and_fitted_ranges_round_trip)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimCluster) c = ssim_cluster_load("dgx-a100", &error);
    cr_assert_not_null(c, "%s", error ? error->message : "");
    c->sm_count = 108;
    c->gemm_tile_m = 256;
    c->gemm_tile_n = 128;
    c->gemm_tile_overhead = 1500;
    c->fit_lo[SSIM_FIT_HIDDEN] = 1024;
    c->fit_hi[SSIM_FIT_HIDDEN] = 2048;
    c->fit_lo[SSIM_FIT_NODES] = c->fit_hi[SSIM_FIT_NODES] = 1;
    g_autoptr(GString) ini = ssim_cluster_write_ini(c, NULL);
    cr_assert(strstr(ini->str, "\n[calibration]\nhidden = 1024..2048\nnodes = 1..1\n"), "%s",
              ini->str);
    g_autoptr(SsimCluster) d = ssim_cluster_load_data(ini->str, (gssize)ini->len, "x.ini", &error);
    cr_assert_not_null(d, "%s", error ? error->message : "");
    cr_assert_eq(d->sm_count, 108);
    cr_assert_eq(d->gemm_tile_m, 256);
    cr_assert_eq(d->gemm_tile_n, 128);
    cr_assert_eq(d->gemm_tile_overhead, 1500);
    cr_assert_eq(d->fit_lo[SSIM_FIT_HIDDEN], 1024);
    cr_assert_eq(d->fit_hi[SSIM_FIT_HIDDEN], 2048);
    cr_assert_eq(d->fit_hi[SSIM_FIT_TP], 0); /* not recorded */
    /* A range the wrong way round names its line and key. */
    g_autofree char *bad = g_strconcat(ini->str, "tp = 8..2\n", NULL);
    g_autoptr(SsimCluster) e = ssim_cluster_load_data(bad, -1, "bad.ini", &error);
    cr_assert_null(e);
    assert_has(error->message, "tp: '8..2' is not a range LO..HI");
    assert_has(error->message, "bad.ini:");
}

/* gemm_unaligned is a fraction of the aligned rate: 0 and above 1 are refused by name; the
 * bundled Hopper clusters set the H200 measurement, the A100 none (1). */
/* gemm_sustained and multi_tensor are fractions in (0, 1]; the bundled files set both (the
 * H200's measurements, dgx-h200.ini), a file without them means no change (1, and `memory`). */
Test(cluster, sustained_and_multi_tensor_are_fractions)
{
    assert_a100_line_refused("gemm_sustained = 0.87", "gemm_sustained = 0",
                             "gemm_sustained: 0 is out of range");
    assert_a100_line_refused("multi_tensor = 0.69", "multi_tensor = 1.2",
                             "multi_tensor: 1.2 is out of range");
    /* The H200's GEMM loop (0.87, borrowed for the A100); the H100's fitted to NVIDIA's public
     * Llama 3.1 8B runs, the figure dgx-h100-calibrated.ini holds to three digits. */
    static const struct {
        const char *name;
        double sustained;
    } bundled[] = {{"dgx-a100", 0.87}, {"dgx-h100", 0.764}, {"dgx-h200", 0.87}};
    for (gsize i = 0; i < G_N_ELEMENTS(bundled); i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(SsimCluster) c = ssim_cluster_load(bundled[i].name, &error);
        cr_assert_not_null(c, "%s", error ? error->message : "");
        cr_assert_float_eq(c->gemm_sustained, bundled[i].sustained, 1e-12, "%s", bundled[i].name);
        cr_assert_float_eq(c->multi_tensor, 0.69, 1e-12, "%s", bundled[i].name);
        /* Written and read back. */
        g_autoptr(GString) ini = ssim_cluster_write_ini(c, NULL);
        g_autoptr(SsimCluster) back = ssim_cluster_load_data(ini->str, -1, "back.ini", &error);
        cr_assert_not_null(back, "%s", error ? error->message : "");
        cr_assert_float_eq(back->gemm_sustained, bundled[i].sustained, 1e-12);
        cr_assert_float_eq(back->multi_tensor, 0.69, 1e-12);
    }
    g_autoptr(SsimCluster) fitted = ssim_cluster_load("dgx-h100-calibrated", NULL);
    cr_assert_not_null(fitted);
    cr_assert(fabs(fitted->gemm_sustained - 0.764) < 0.0005, "%g", fitted->gemm_sustained);
    g_autoptr(SsimCluster) t = ssim_cluster_load("tsubame4", NULL);
    cr_assert_not_null(t);
    cr_assert_float_eq(t->gemm_sustained, 1.0, 1e-12);
    cr_assert_float_eq(t->multi_tensor, 0.0, 1e-12);
}

/* Flash attention's figures: the SM clock of the datasheet's peak (A100 1410 MHz, H100 and H200
 * 1830) and whether the kernels overlap the exponentials with the products (Hopper's do); both
 * written back; a clock must be positive and flash_overlap a boolean, refused by name. */
Test(cluster, flash_attention_keys)
{
    const struct {
        const char *name;
        double mhz;
        gboolean overlap;
    } bundled[] = {{"dgx-a100", 1410, FALSE}, {"dgx-h100", 1830, TRUE}, {"dgx-h200", 1830, TRUE}};
    for (gsize i = 0; i < G_N_ELEMENTS(bundled); i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(SsimCluster) c = ssim_cluster_load(bundled[i].name, &error);
        cr_assert_not_null(c, "%s", error ? error->message : "");
        cr_assert_float_eq(c->sm_clock, bundled[i].mhz * 1e6, 1.0, "%s", bundled[i].name);
        cr_assert_eq(c->flash_overlap, bundled[i].overlap, "%s", bundled[i].name);
        g_autoptr(GString) ini = ssim_cluster_write_ini(c, NULL);
        g_autoptr(SsimCluster) back = ssim_cluster_load_data(ini->str, -1, "back.ini", &error);
        cr_assert_not_null(back, "%s", error ? error->message : "");
        cr_assert_float_eq(back->sm_clock, c->sm_clock, 1.0);
        cr_assert_eq(back->flash_overlap, c->flash_overlap);
    }
    assert_a100_line_refused("sm_clock_MHz = 1410", "sm_clock_MHz = 0",
                             "sm_clock_MHz: 0 is out of range");
    assert_a100_line_refused(
        "gemm_tile_us = ", "flash_overlap = maybe\ngemm_tile_us = ", "flash_overlap");
}

/* NVLink SHARP ([nvlink] sharp): the H100 and H200 nodes' third-generation NVSwitches have it,
 * the A100 nodes and TSUBAME 4.0's switchless mesh do not (the default); written back only when
 * set, a boolean, refused by name. */
Test(cluster, nvlink_sharp_key)
{
    const struct {
        const char *name;
        gboolean sharp;
    } bundled[] = {{"dgx-a100", FALSE}, {"vtrain-a100", FALSE}, {"tsubame4", FALSE},
                   {"dgx-h100", TRUE},  {"dgx-h200", TRUE},     {"dgx-h100-calibrated", TRUE}};
    for (gsize i = 0; i < G_N_ELEMENTS(bundled); i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(SsimCluster) c = ssim_cluster_load(bundled[i].name, &error);
        cr_assert_not_null(c, "%s", error ? error->message : "");
        cr_assert_eq(c->nvlink_sharp, bundled[i].sharp, "%s", bundled[i].name);
        g_autoptr(GString) ini = ssim_cluster_write_ini(c, NULL);
        cr_assert_eq(strstr(ini->str, "sharp = true") != NULL, bundled[i].sharp, "%s", ini->str);
        g_autoptr(SsimCluster) back = ssim_cluster_load_data(ini->str, -1, "back.ini", &error);
        cr_assert_not_null(back, "%s", error ? error->message : "");
        cr_assert_eq(back->nvlink_sharp, c->nvlink_sharp);
    }
    g_autoptr(SsimCluster) d = ssim_cluster_default();
    cr_assert(d->nvlink_sharp);
    assert_a100_line_refused("bandwidth_GB_s = 300", "bandwidth_GB_s = 300\nsharp = maybe",
                             "sharp");
}

Test(cluster, gemm_unaligned_is_a_fraction)
{
    assert_a100_line_refused("gemm_tile_us = ", "gemm_unaligned = 0\ngemm_tile_us = ",
                             "gemm_unaligned: 0 is out of range");
    assert_a100_line_refused("gemm_tile_us = ", "gemm_unaligned = 1.5\ngemm_tile_us = ",
                             "gemm_unaligned: 1.5 is out of range");
    const struct {
        const char *name;
        double want;
    } bundled[] = {{"dgx-a100", 1.0}, {"dgx-h100", 0.31}, {"dgx-h200", 0.31}};
    for (gsize i = 0; i < G_N_ELEMENTS(bundled); i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(SsimCluster) c = ssim_cluster_load(bundled[i].name, &error);
        cr_assert_not_null(c, "%s", error ? error->message : "");
        cr_assert_float_eq(c->gemm_unaligned, bundled[i].want, 1e-12, "%s", bundled[i].name);
    }
}

/* aws-p4de is the DGX A100's node with AWS's network: the same GPU, HBM, NVLink and
 * efficiencies, four 100 Gb/s EFA cards a node (two GPUs each) for the DGX's eight 200 Gb/s HDR
 * NICs: a quarter of the bandwidth out of a node. */
Test(cluster, aws_p4de_is_a_dgx_a100_node_with_a_quarter_of_its_network)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimCluster) p4 = ssim_cluster_load("aws-p4de", &error);
    cr_assert_not_null(p4, "%s", error ? error->message : "");
    g_autoptr(SsimCluster) dgx = ssim_cluster_load("dgx-a100", &error);
    cr_assert_not_null(dgx, "%s", error ? error->message : "");
    cr_assert_str_eq(p4->gpu, dgx->gpu);
    cr_assert_eq(p4->gpus_per_node, 8);
    cr_assert_float_eq(ssim_cluster_peak_flops(p4, SSIM_DTYPE_BF16),
                       ssim_cluster_peak_flops(dgx, SSIM_DTYPE_BF16), 1);
    cr_assert_eq(p4->hbm_bytes, dgx->hbm_bytes);
    cr_assert_float_eq(p4->hbm_bw, dgx->hbm_bw, 1);
    cr_assert_float_eq(p4->nvlink_bw, dgx->nvlink_bw, 1);
    cr_assert_float_eq(p4->gemm_efficiency, dgx->gemm_efficiency, 1e-12);
    cr_assert_float_eq(p4->gemm_sustained, dgx->gemm_sustained, 1e-12);
    cr_assert_eq(p4->kernel_floor, dgx->kernel_floor);
    cr_assert_eq(p4->nics_per_node, 4);
    cr_assert_float_eq(p4->nic_bw, 100e9 / 8, 1);
    cr_assert_eq(p4->gpus_per_nic, 2);
    cr_assert_float_eq(ssim_cluster_node_net_bw(p4) * 4, ssim_cluster_node_net_bw(dgx), 1);
}
