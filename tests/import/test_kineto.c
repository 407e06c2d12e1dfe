/*
 * Tests of the Kineto importer (import/kineto): a small hand-written PyTorch profiler trace whose
 * rows and step time are worked out by hand, and the messages for what is not a trace.
 */
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <shiftsim/data.h>
#include <shiftsim/kineto.h>

#include "tests/common/gzip.h"

#include <math.h>
#include <string.h>

Test(kineto, kineto_small_trace)
{
    g_autoptr(GError) error = NULL;
    SsimKinetoSummary sum;
    g_autoptr(SsimProfile) p = ssim_kineto_load(SSIM_TEST_DATA "/kineto/small.json", &sum, &error);
    cr_assert_not_null(p, "%s", error ? error->message : "");
    cr_assert_eq(sum.kernels, 5);
    cr_assert_eq(sum.gemm, 3);
    cr_assert_eq(sum.comm, 1);
    cr_assert_eq(sum.copy, 1);
    cr_assert_eq(sum.unmapped, 1);
    cr_assert_eq(sum.steps, 2);
    cr_assert_float_eq(sum.step_ms, 11.0, 1e-9);
    cr_assert_eq(ssim_profile_n_rows(p), 4);
    const SsimProfileRow *mm = ssim_profile_row(p, 0);
    cr_assert_eq(mm->kind, SSIM_PROFILE_GEMM);
    cr_assert_str_eq(mm->op, "mm");
    cr_assert_eq(mm->m, 128);
    cr_assert_eq(mm->n, 32);
    cr_assert_eq(mm->k, 64);
    cr_assert_eq(mm->batch, 1);
    cr_assert_eq(mm->dtype, SSIM_DTYPE_BF16);
    cr_assert_float_eq(mm->time_us, 12.0, 1e-9);
    cr_assert_float_eq(mm->min_us, 10.0, 1e-9);
    cr_assert_eq(mm->samples, 2);
    cr_assert_float_eq(mm->stddev_us, sqrt(8.0), 1e-9);
    const SsimProfileRow *bmm = ssim_profile_row(p, 1);
    cr_assert_eq(bmm->batch, 4);
    cr_assert_eq(bmm->m, 16);
    cr_assert_eq(bmm->n, 16);
    cr_assert_eq(bmm->k, 8);
    cr_assert_eq(bmm->dtype, SSIM_DTYPE_FP16);
    const SsimProfileRow *ar = ssim_profile_row(p, 2);
    cr_assert_eq(ar->kind, SSIM_PROFILE_COMM);
    cr_assert_str_eq(ar->op, "allreduce");
    cr_assert_eq(ar->bytes, 2048);
    cr_assert_eq(ar->ranks, 8);
    cr_assert_float_eq(ar->time_us, 30.0, 1e-9);
    const SsimProfileRow *cp = ssim_profile_row(p, 3);
    cr_assert_eq(cp->kind, SSIM_PROFILE_COPY);
    cr_assert_str_eq(cp->op, "d2d");
    cr_assert_eq(cp->bytes, 4096);
    /* The profile it makes is a valid profile file. */
    g_autoptr(GString) text = ssim_profile_write(p);
    g_autoptr(SsimProfile) back =
        ssim_profile_load_data(text->str, (gssize)text->len, "k.csv", &error);
    cr_assert_not_null(back, "%s", error ? error->message : "");
    cr_assert_eq(ssim_profile_n_rows(back), 4);
}

/* The first Kineto releases' category names (Operator, Runtime, Kernel, Memcpy) read as
 * today's (cpu_op, cuda_runtime, kernel, gpu_memcpy): the small trace renamed gives the same
 * profile and summary, byte for byte. */
Test(kineto, first_releases_category_names)
{
    g_autofree char *text = NULL;
    gsize len = 0;
    cr_assert(g_file_get_contents(SSIM_TEST_DATA "/kineto/small.json", &text, &len, NULL));
    static const char *const renames[][2] = {{"\"cpu_op\"", "\"Operator\""},
                                             {"\"cuda_runtime\"", "\"Runtime\""},
                                             {"\"kernel\"", "\"Kernel\""},
                                             {"\"gpu_memcpy\"", "\"Memcpy\""}};
    g_autofree char *old = g_strdup(text);
    for (gsize i = 0; i < G_N_ELEMENTS(renames); i++) {
        g_auto(GStrv) parts = g_strsplit(old, renames[i][0], -1);
        cr_assert_gt(g_strv_length(parts), 1, "small.json has %s", renames[i][0]);
        g_free(old);
        old = g_strjoinv(renames[i][1], parts);
    }
    g_autoptr(GError) error = NULL;
    SsimKinetoSummary a, b;
    g_autoptr(SsimProfile) pa = ssim_kineto_load_data(text, (gssize)len, "t.json", &a, &error);
    g_autoptr(SsimProfile) pb = ssim_kineto_load_data(old, -1, "t.json", &b, &error);
    cr_assert(pa && pb, "%s", error ? error->message : "");
    cr_assert(a.kernels == b.kernels && a.gemm == b.gemm && a.comm == b.comm && a.copy == b.copy &&
              a.unmapped == b.unmapped && a.steps == b.steps && a.launches == b.launches &&
              a.step_ms == b.step_ms && a.launch_us_mean == b.launch_us_mean);
    g_autoptr(GString) wa = ssim_profile_write(pa), wb = ssim_profile_write(pb);
    cr_assert_str_eq(wa->str, wb->str);
    cr_assert_eq(b.kernels, 5);
}

/*
 * The host's launches, by hand.  Process 1: Python's thread 10 launches at 0 and 40 (a driver
 * launch at 41 inside the second is the same launch), synchronises from 50 for 100 us and
 * launches at 200: gaps 40 and 200 - 40 - 100 = 60.  Autograd's thread 20 launches at 500 (a
 * change of thread, 300 us after 200) and 530 (30; the cudaGetDevice between is no launch and
 * no wait).  Process 2 launches once.  Per launch on one thread: (40 + 60 + 30) / 3, median 40;
 * one change of thread of 300 us; 6 launches in 2 processes.
 */
Test(kineto, host_launch_gaps)
{
    static const char *const trace =
        "{\"traceEvents\": ["
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,"
        "\"tid\":10,\"ts\":0,\"dur\":5},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,"
        "\"tid\":10,\"ts\":40,\"dur\":5},"
        "{\"ph\":\"X\",\"cat\":\"cuda_driver\",\"name\":\"cuLaunchKernelEx\",\"pid\":1,"
        "\"tid\":10,\"ts\":41,\"dur\":2},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaStreamSynchronize\","
        "\"pid\":1,\"tid\":10,\"ts\":50,\"dur\":100},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaMemsetAsync\",\"pid\":1,"
        "\"tid\":10,\"ts\":200,\"dur\":3},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,"
        "\"tid\":20,\"ts\":500,\"dur\":4},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaGetDevice\",\"pid\":1,"
        "\"tid\":20,\"ts\":510,\"dur\":9},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,"
        "\"tid\":20,\"ts\":530,\"dur\":4},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":2,"
        "\"tid\":10,\"ts\":7,\"dur\":4}]}";
    g_autoptr(GError) error = NULL;
    SsimKinetoSummary sum;
    g_autoptr(SsimProfile) p = ssim_kineto_load_data(trace, -1, "t.json", &sum, &error);
    cr_assert_not_null(p, "%s", error ? error->message : "");
    cr_assert_eq(sum.launches, 6);
    cr_assert_eq(sum.host_processes, 2);
    cr_assert_float_eq(sum.launch_us_mean, 130.0 / 3, 1e-9);
    cr_assert_float_eq(sum.launch_us_median, 40.0, 1e-9);
    cr_assert_eq(sum.thread_switches, 1);
    cr_assert_float_eq(sum.switch_us_mean, 300.0, 1e-9);
    cr_assert_eq(sum.kernels, 0, "host calls are not kernels");

    /* A launch without a usable start is refused with the event. */
    g_autoptr(SsimProfile) bad = ssim_kineto_load_data(
        "{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":"
        "\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":\"soon\",\"dur\":1}]}",
        -1, "t.json", NULL, &error);
    cr_assert_null(bad);
    cr_assert(strstr(error->message, "t.json: traceEvents[0].ts: ") != NULL, "%s", error->message);
}

Test(kineto, kineto_not_a_trace)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimProfile) p = ssim_kineto_load_data("{\"x\": 1}", -1, "t.json", NULL, &error);
    cr_assert_null(p);
    cr_assert_str_eq(error->message,
                     "t.json: traceEvents: missing (not a PyTorch profiler / Chrome trace)");
    g_clear_error(&error);
    p = ssim_kineto_load_data("{", -1, "t.json", NULL, &error);
    cr_assert_null(p);
    cr_assert(g_str_has_prefix(error->message, "t.json: not JSON: "));
}

/* A real trace: PyTorch 2.11 on an H200, two forward + backward passes of a GPT-J layer with
 * each attention (traces/h200/reference).  Its GEMMs are keyed by the aten op that launched
 * them; the bundled CSV is exactly what the importer makes of it. */
Test(kineto, a_real_h200_trace)
{
    g_autoptr(GError) error = NULL;
    SsimKinetoSummary sum;
    g_autoptr(SsimProfile) p = ssim_kineto_load(
        SHIFTSIM_SOURCE_ROOT "/traces/h200/reference/kineto-gpt-j-layer.json", &sum, &error);
    cr_assert_not_null(p, "%s", error ? error->message : "");
    cr_assert_eq(sum.kernels, 200);
    cr_assert_eq(sum.gemm, 60);
    cr_assert_eq(sum.copy, 8);
    cr_assert_eq(sum.comm, 0);
    cr_assert_eq(sum.attention, 8);
    cr_assert_eq(sum.unmapped, 132);
    cr_assert_eq(ssim_profile_n_rows(p), 18);
    /* Its host: 132 + 68 kernel launches, 44 memsets and 8 copies, none inside another, in one
     * process; 244 gaps on one thread averaging 55.3 us (median 35.6) and the 7 changes from
     * the forward's thread to autograd's and back, 650 us each on average (docs/validation.md,
     * "The host, measured"). */
    cr_assert_eq(sum.launches, 252);
    cr_assert_eq(sum.host_processes, 1);
    cr_assert_eq(sum.thread_switches, 7);
    cr_assert(fabs(sum.launch_us_mean - 55.317) < 0.01, "%g", sum.launch_us_mean);
    cr_assert(fabs(sum.launch_us_median - 35.552) < 0.01, "%g", sum.launch_us_median);
    cr_assert(fabs(sum.switch_us_mean - 650.05) < 0.01, "%g", sum.switch_us_mean);
    g_autoptr(SsimProfile) bundled = ssim_profile_load(
        SHIFTSIM_SOURCE_ROOT "/traces/h200/reference/kineto-gpt-j-layer.csv", &error);
    cr_assert_not_null(bundled, "%s", error ? error->message : "");
    g_autoptr(GString) a = ssim_profile_write(p);
    g_autoptr(GString) b = ssim_profile_write(bundled);
    /* The source line names the file as given; the rows must match. */
    const char *ra = strstr(a->str, "\nkind,"), *rb = strstr(b->str, "\nkind,");
    cr_assert(ra != NULL && rb != NULL);
    cr_assert_str_eq(ra, rb);
    /* The QKV projection, 2048 x 12288 x 4096, ran four times at about 263 us. */
    gboolean found = FALSE;
    for (guint i = 0; i < ssim_profile_n_rows(p); i++) {
        const SsimProfileRow *r = ssim_profile_row(p, i);
        if (r->kind == SSIM_PROFILE_GEMM && r->m == 2048 && r->n == 12288 && r->k == 4096) {
            found = TRUE;
            cr_assert_eq(r->samples, 4);
            cr_assert(fabs(r->time_us - 263.255) < 0.01, "%g", r->time_us);
        }
    }
    cr_assert(found);
    /* cuDNN's flash attention (SDPA): its forward kernel, and its backward's three kernels
     * (the rows' dO . O, the main kernel, dQ's conversion) summed per call: GPT-J's 16 heads of
     * 256 over 2048 tokens, two calls each, 92.03 and 315.97 us. */
    const struct {
        const char *op;
        double us;
    } flash[] = {{"flash-fwd", 92.0315}, {"flash-bwd", 315.967}};
    for (gsize f = 0; f < G_N_ELEMENTS(flash); f++) {
        found = FALSE;
        for (guint i = 0; i < ssim_profile_n_rows(p); i++) {
            const SsimProfileRow *r = ssim_profile_row(p, i);
            if (r->kind != SSIM_PROFILE_ATTENTION || strcmp(r->op, flash[f].op) != 0)
                continue;
            found = TRUE;
            cr_assert(r->m == 2048 && r->n == 16 && r->k == 256 && r->batch == 1);
            cr_assert_eq(r->dtype, SSIM_DTYPE_BF16);
            cr_assert_eq(r->samples, 2);
            cr_assert(fabs(r->time_us - flash[f].us) < 0.001, "%s: %g", flash[f].op, r->time_us);
        }
        cr_assert(found, "%s", flash[f].op);
    }
}

/*
 * A gzipped trace reads as the trace: the same profile, byte for byte but its source, and the same
 * summary (the reader under every input, ssim_read_file_limited(), inflates a file that starts with
 * gzip's magic).  Two members one after another read as the two texts; a stream cut short is an
 * error that says so, and one that inflates past the input's bound stops there.
 */
Test(kineto, gzipped_trace_reads_as_the_trace)
{
    g_autofree char *text = NULL;
    gsize len = 0;
    cr_assert(g_file_get_contents(SSIM_TEST_DATA "/kineto/small.json", &text, &len, NULL));
    g_autofree char *dir = g_dir_make_tmp("ssim-gz-XXXXXX", NULL);
    g_autofree char *gz = g_build_filename(dir, "trace.json.gz", NULL);
    t_write_gzip(gz, text, len);
    g_autofree char *raw = NULL;
    gsize raw_len = 0;
    cr_assert(g_file_get_contents(gz, &raw, &raw_len, NULL));
    cr_assert((guint8)raw[0] == 0x1f && (guint8)raw[1] == 0x8b && raw_len < len);

    SsimKinetoSummary a, b;
    g_autoptr(GError) error = NULL;
    g_autoptr(SsimProfile) plain = ssim_kineto_load(SSIM_TEST_DATA "/kineto/small.json", &a, NULL);
    g_autoptr(SsimProfile) zipped = ssim_kineto_load(gz, &b, &error);
    cr_assert_not_null(zipped, "%s", error ? error->message : "");
    cr_assert_str_eq(ssim_profile_get_meta(zipped, "source"), "trace.json.gz");
    ssim_profile_set_meta(zipped, "source", "small.json");
    g_autoptr(GString) wa = ssim_profile_write(plain), wb = ssim_profile_write(zipped);
    cr_assert_str_eq(wa->str, wb->str);
    cr_assert_eq(a.kernels, b.kernels);
    cr_assert_float_eq(a.step_ms, b.step_ms, 0);

    gsize got = 0;
    g_autofree char *back = ssim_read_file_limited(gz, len, &got, &error);
    cr_assert_not_null(back, "%s", error ? error->message : "");
    cr_assert_eq(got, len);
    cr_assert_eq(memcmp(back, text, len), 0);
    cr_assert_eq(back[len], '\0');

    g_autofree char *small = ssim_read_file_limited(gz, len - 1, NULL, &error);
    cr_assert_null(small);
    cr_assert(g_error_matches(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_LIMIT));
    cr_assert(strstr(error->message, "trace.json.gz: decompressed, over the limit"), "%s",
              error->message);
    g_clear_error(&error);

    /* Two members one after another (cat a.gz b.gz): the text twice. */
    g_autofree char *twice = g_malloc(2 * raw_len);
    memcpy(twice, raw, raw_len);
    memcpy(twice + raw_len, raw, raw_len);
    cr_assert(g_file_set_contents(gz, twice, (gssize)(2 * raw_len), NULL));
    g_autofree char *both = ssim_read_file_limited(gz, 2 * len, &got, &error);
    cr_assert_not_null(both, "%s", error ? error->message : "");
    cr_assert_eq(got, 2 * len);
    cr_assert_eq(memcmp(both + len, text, len), 0);

    cr_assert(g_file_set_contents(gz, raw, (gssize)raw_len - 12, NULL));
    g_autoptr(SsimProfile) cut = ssim_kineto_load(gz, NULL, &error);
    cr_assert_null(cut);
    cr_assert(strstr(error->message, "trace.json.gz: cannot read: a cut-off gzip stream"), "%s",
              error->message);
    g_remove(gz);
    g_rmdir(dir);
}

/* The small trace's all-reduce with its group `args` (replacing "Group size": 8) as a job of
 * `world` ranks whose traced process saw `gpus` GPUs, loaded; the all-reduce's row. */
static SsimProfile *small_trace_as_job(const char *args, int world, int gpus)
{
    g_autofree char *text = NULL;
    cr_assert(g_file_get_contents(SSIM_TEST_DATA "/kineto/small.json", &text, NULL, NULL));
    g_autoptr(GString) devices = g_string_new("\"deviceProperties\": [");
    for (int i = 0; i < gpus; i++)
        g_string_append_printf(devices, "%s{\"id\": %d, \"name\": \"NVIDIA A100-SXM4-80GB\"}",
                               i ? ", " : "", i);
    g_string_append_printf(devices,
                           "], \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, "
                           "\"world_size\": %d},",
                           world);
    g_autoptr(GRegex) dev = g_regex_new("\"deviceProperties\": \\[[^]]*\\],", 0, 0, NULL);
    g_autoptr(GRegex) group = g_regex_new("\"Group size\": 8", 0, 0, NULL);
    g_autofree char *a = g_regex_replace_literal(dev, text, -1, 0, devices->str, 0, NULL);
    g_autofree char *b = g_regex_replace_literal(group, a, -1, 0, args, 0, NULL);
    cr_assert(strcmp(a, text) != 0 && strcmp(b, a) != 0);
    g_autoptr(GError) error = NULL;
    SsimProfile *p = ssim_kineto_load_data(b, -1, "job.json", NULL, &error);
    cr_assert_not_null(p, "%s", error ? error->message : "");
    cr_assert_str_eq(ssim_profile_row(p, 2)->op, "allreduce");
    return p;
}

/*
 * A trace of a job on several nodes: its process saw 8 GPUs of a 16-rank world, so nodes hold
 * ranks 0-7 and 8-15, and a collective's group, named by its ranks or by start and stride, has
 * as many ranks on one node as it has there.  A trace that shows one node, or a process that saw
 * one GPU, or a group not named, keeps the single-node reading (all of the group on one node).
 */
Test(kineto, collective_layout_from_the_job)
{
    struct {
        const char *args;
        int world, gpus;
        guint ranks, per_node;
    } cases[] = {
        {"\"Group size\": 8, \"Process Group Ranks\": \"[0, 2, 4, 6, 8, 10, 12, 14]\"", 16, 8, 8,
         4},
        {"\"Group size\": 2, \"Process Group Ranks\": \"[3, 11]\"", 16, 8, 2, 1},
        {"\"Group size\": 2, \"Global rank start\": 3, \"Global rank stride\": 8", 16, 8, 2, 1},
        {"\"Group size\": 8, \"Global rank start\": 8, \"Global rank stride\": 1", 16, 8, 8, 8},
        {"\"Group size\": 4, \"Process Group Ranks\": \"[0, 4, 8, 12]\"", 16, 4, 4, 1},
        /* One node, a process bound to one GPU, a group not named, a list of the wrong length. */
        {"\"Group size\": 2, \"Process Group Ranks\": \"[0, 4]\"", 8, 8, 2, 2},
        {"\"Group size\": 2, \"Process Group Ranks\": \"[3, 11]\"", 16, 1, 2, 2},
        {"\"Group size\": 2", 16, 8, 2, 2},
        {"\"Group size\": 2, \"Process Group Ranks\": \"[3, 11, 12]\"", 16, 8, 2, 2},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(SsimProfile) p = small_trace_as_job(cases[i].args, cases[i].world, cases[i].gpus);
        const SsimProfileRow *r = ssim_profile_row(p, 2);
        cr_assert_eq(r->ranks, cases[i].ranks, "case %zu", i);
        cr_assert_eq(r->ranks_per_node, cases[i].per_node, "case %zu: %u", i, r->ranks_per_node);
    }
}
