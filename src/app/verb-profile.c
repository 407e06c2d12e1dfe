/*
 * `shiftsim profile import|show|query`: converts measurements into a shiftsim profile, shows
 * what a profile holds, and asks it for one op's cost (with where the answer came from).
 *
 *   shiftsim profile import --from nccl-tests|nccl-tests-json|vtrain FILE... [-o OUT.csv]
 *   shiftsim profile show PROFILE
 *   shiftsim profile query PROFILE --comm allreduce --bytes 1048576 --ranks 8 [--per-node 8]
 *                                  [--cluster C [--nics-per-rank X]]
 *   shiftsim profile query PROFILE --gemm 4096x12288x4096[x1] [--dtype bf16]
 *   shiftsim profile query PROFILE --memory layernorm|--copy d2d --bytes N
 *   shiftsim profile check MEASURED [--cluster C] [--profile P] [--kind LIST] [--rows]
 */
#include "src/app/verbs.h"

#include <shiftsim/cluster.h>
#include <shiftsim/import.h>
#include <shiftsim/profile.h>
#include <shiftsim/report.h>
#include <shiftsim/validate.h>

#include <json-glib/json-glib.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#define VERB "profile"

static int profile_import(int argc, char **argv)
{
    g_auto(SsimCliOutput) output = {0};
    g_autofree char *from = NULL, *op = NULL;
    gint nics_per_node = 0;
    GOptionEntry entries[] = {
        {"from", 0, 0, G_OPTION_ARG_STRING, &from,
         "What FILE is: nccl-tests (text output), nccl-tests-json (-J output) or vtrain "
         "(AR_GPU<n>_*_LUT.csv, or a directory of them)",
         "KIND"},
        ssim_cli_entry_arg(ssim_cli_output_entry(&output, SSIM_OPT_OUTPUT,
                                                 "Write the profile to OUT ('-' or none: stdout)"),
                           "OUT"),
        {"op", 0, 0, G_OPTION_ARG_STRING, &op,
         "The collective measured (allreduce, allgather, ...) when the input does not say", "OP"},
        {"nics-per-node", 0, 0, G_OPTION_ARG_INT, &nics_per_node,
         "NICs of each measured node, when the input does not say (NCCL_DEBUG=INFO's NET/IB "
         "line does): recorded as the profile's nics_per_node",
         "N"},
        {NULL}};
    g_autoptr(GOptionContext) ctx = g_option_context_new("FILE... - import measurements");
    g_option_context_set_summary(ctx, "Converts nccl-tests output or vTrain's all-reduce tables "
                                      "into one '# shiftsim-profile v2' CSV.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!ssim_cli_parse(ctx, &argc, &argv, VERB " import"))
        return SSIM_EXIT_USAGE;
    if (from == NULL)
        return ssim_cli_usage_error(VERB " import", "--from is required");
    SsimImportKind kind;
    if (!ssim_import_kind_from_name(from, &kind))
        return ssim_cli_usage_error(VERB " import",
                                    "--from: '%s' is not nccl-tests, "
                                    "nccl-tests-json or vtrain",
                                    from);
    if (argc < 2)
        return ssim_cli_usage_error(VERB " import", "expected at least one FILE");
    if (nics_per_node < 0)
        return ssim_cli_usage_error(VERB " import", "--nics-per-node: must be positive");
    int rc = ssim_cli_check_output(output.output);
    if (rc != SSIM_EXIT_OK)
        return rc;
    g_autoptr(SsimProfile) profile = ssim_profile_new();
    g_autoptr(GError) error = NULL;
    for (int i = 1; i < argc; i++) {
        g_autofree char *path = g_strdup(argv[i]);
        ssim_cli_resolve_input(VERB " import", &path, NULL);
        if (!ssim_profile_import_into(profile, kind, path, op, &error))
            return ssim_cli_runtime_error(error);
    }
    if (nics_per_node > 0) {
        g_autofree char *v = g_strdup_printf("%d", nics_per_node);
        ssim_profile_set_meta(profile, "nics_per_node", v);
    }
    const char *skipped = ssim_profile_get_meta(profile, "skipped_rows");
    if (skipped)
        fprintf(stderr,
                "shiftsim " VERB " import: note: left out, as no training step runs them: %s "
                "(the profile's skipped_rows)\n",
                skipped);
    g_autoptr(GString) text = ssim_profile_write(profile);
    if (!ssim_cli_emit(output.output, text, &error))
        return ssim_cli_runtime_error(error);
    return SSIM_EXIT_OK;
}

/* profile show -f csv|json: the metadata and the rows per kind (the measured ranges are in the
 * table form only). */
static GString *show_data(const SsimProfile *profile, const char *path, SsimFormat format)
{
    guint per_kind[SSIM_PROFILE_KIND_N] = {0};
    for (guint i = 0; i < ssim_profile_n_rows(profile); i++)
        per_kind[ssim_profile_row(profile, i)->kind]++;
    GString *out = g_string_new(NULL);
    if (format == SSIM_FORMAT_CSV) {
        g_string_append(out, "kind,rows\n");
        for (guint k = 0; k < SSIM_PROFILE_KIND_N; k++)
            g_string_append_printf(out, "%s,%u\n", ssim_profile_kind_name(k), per_kind[k]);
        return out;
    }
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "profile");
    json_builder_add_string_value(b, path);
    json_builder_set_member_name(b, "metadata");
    json_builder_begin_object(b);
    for (guint i = 0; i < ssim_profile_n_meta(profile); i++) {
        json_builder_set_member_name(b, ssim_profile_meta_key(profile, i));
        json_builder_add_string_value(b, ssim_profile_meta_value(profile, i));
    }
    json_builder_end_object(b);
    json_builder_set_member_name(b, "rows");
    json_builder_add_int_value(b, ssim_profile_n_rows(profile));
    json_builder_set_member_name(b, "rows_per_kind");
    json_builder_begin_object(b);
    for (guint k = 0; k < SSIM_PROFILE_KIND_N; k++) {
        json_builder_set_member_name(b, ssim_profile_kind_name(k));
        json_builder_add_int_value(b, per_kind[k]);
    }
    json_builder_end_object(b);
    json_builder_end_object(b);
    ssim_json_append(out, b, TRUE);
    return out;
}

static int profile_show(int argc, char **argv)
{
    g_auto(SsimCliOutput) output = {0};
    GOptionEntry entries[] = {
        ssim_cli_output_entry(&output, SSIM_OPT_FORMAT,
                              "table (default), csv (rows per kind) or json (metadata and rows "
                              "per kind)"),
        {NULL}};
    g_autoptr(GOptionContext) ctx = g_option_context_new("PROFILE - summarize a profile");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_option_context_set_summary(ctx, "Prints a profile's metadata, its rows per kind and the "
                                      "measured range of every curve.  PROFILE is a file or a "
                                      "directory of *.csv.");
    if (!ssim_cli_parse(ctx, &argc, &argv, VERB " show"))
        return SSIM_EXIT_USAGE;
    if (argc != 2)
        return ssim_cli_usage_error(VERB " show", "expected one PROFILE");
    SsimFormat format;
    int rc = ssim_cli_output_format(VERB " show", &output, &format);
    if (rc != SSIM_EXIT_OK)
        return rc;
    g_autoptr(GError) error = NULL;
    g_autofree char *path = g_strdup(argv[1]);
    ssim_cli_resolve_input(VERB " show", &path, NULL);
    g_autoptr(SsimProfile) profile = ssim_profile_load(path, &error);
    if (profile == NULL)
        return ssim_cli_runtime_error(error);
    g_autoptr(GString) text = format == SSIM_FORMAT_TABLE ? ssim_profile_summary(profile)
                                                          : show_data(profile, path, format);
    if (!ssim_cli_emit(NULL, text, &error))
        return ssim_cli_runtime_error(error);
    return SSIM_EXIT_OK;
}

/* "AxBxC[xD]" into d (D defaults to 1); FALSE unless three or four positive integers. */
static gboolean parse_dims(const char *text, guint64 d[4])
{
    d[3] = 1;
    g_auto(GStrv) parts = g_strsplit(text, "x", -1);
    guint np = g_strv_length(parts);
    gboolean good = np == 3 || np == 4;
    for (guint i = 0; good && i < np; i++)
        good = g_ascii_string_to_unsigned(parts[i], 10, 1, G_MAXUINT32, &d[i], NULL);
    return good;
}

static int profile_query(int argc, char **argv)
{
    g_autofree char *comm = NULL, *gemm = NULL, *memory = NULL, *copy = NULL, *dtype_s = NULL;
    g_autofree char *attention = NULL, *shape = NULL;
    g_autofree char *cluster_name = NULL, *bytes_text = NULL;
    g_auto(SsimCliOutput) output = {0};
    guint64 bytes = 0;
    gint ranks = 1, per_node = 0;
    gdouble nics = 0;
    GOptionEntry entries[] = {
        {"comm", 0, 0, G_OPTION_ARG_STRING, &comm, "A collective (allreduce, allgather, ...)",
         "OP"},
        {"gemm", 0, 0, G_OPTION_ARG_STRING, &gemm, "A GEMM of shape MxNxK[xBATCH]", "SHAPE"},
        {"attention", 0, 0, G_OPTION_ARG_STRING, &attention,
         "An attention pass of --shape: fwd or bwd (the unfused core), flash-fwd or flash-bwd (a "
         "fused causal kernel)",
         "PASS"},
        {"shape", 0, 0, G_OPTION_ARG_STRING, &shape,
         "With --attention: sequence x heads x head dim [x batch], e.g. 2048x16x256", "SxHxD[xB]"},
        {"memory", 0, 0, G_OPTION_ARG_STRING, &memory, "A memory-bound kernel (layernorm, ...)",
         "OP"},
        {"copy", 0, 0, G_OPTION_ARG_STRING, &copy, "A copy (d2d, p2p, h2d, d2h)", "OP"},
        {"bytes", 0, 0, G_OPTION_ARG_STRING, &bytes_text,
         "Bytes (nccl-tests size for collectives; e.g. 1048576, 1MiB, 4M)", "BYTES"},
        {"ranks", 0, 0, G_OPTION_ARG_INT, &ranks, "Ranks of the collective", "N"},
        {"per-node", 0, 0, G_OPTION_ARG_INT, &per_node, "Ranks per node (default: all on one)",
         "N"},
        {"dtype", 0, 0, G_OPTION_ARG_STRING, &dtype_s, "bf16 (default), fp16, fp32, tf32, fp8",
         "T"},
        {"nics-per-rank", 0, 0, G_OPTION_ARG_DOUBLE, &nics,
         "NICs each rank's inter-node traffic uses (default: the --cluster's NICs per GPU, fewer "
         "where its ring_nics caps a node's; else as measured)",
         "X"},
        {"cluster", 'c', 0, G_OPTION_ARG_STRING, &cluster_name,
         "The network model (and analytical fallback) of this cluster: a collective measured at "
         "another layout is carried through it, GEMMs go through its shape model",
         "NAME|PATH"},
        ssim_cli_output_entry(&output, SSIM_OPT_FORMAT,
                              "table (default: a line), csv (header and one row: kind, op, bytes, "
                              "ranks, per_node, dtype, time_us, source) or json (those as "
                              "members)"),
        {NULL}};
    g_autoptr(GOptionContext) ctx = g_option_context_new("PROFILE - look one op up");
    g_option_context_set_summary(ctx, "Prints the time PROFILE gives one op and where it came "
                                      "from (exact, interpolated, extrapolated; 'none' when the "
                                      "profile has nothing relevant).");
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!ssim_cli_parse(ctx, &argc, &argv, VERB " query"))
        return SSIM_EXIT_USAGE;
    if (argc != 2)
        return ssim_cli_usage_error(VERB " query", "expected one PROFILE");
    SsimFormat format;
    int frc = ssim_cli_output_format(VERB " query", &output, &format);
    if (frc != SSIM_EXIT_OK)
        return frc;
    if ((comm != NULL) + (gemm != NULL) + (attention != NULL) + (memory != NULL) + (copy != NULL) !=
        1)
        return ssim_cli_usage_error(VERB " query", "give exactly one of --comm, --gemm, "
                                                   "--attention, --memory, --copy");
    if ((attention != NULL) != (shape != NULL))
        return ssim_cli_usage_error(VERB " query", "--attention and --shape go together");
    SsimDtype dtype = SSIM_DTYPE_BF16;
    if (dtype_s && !ssim_dtype_from_name(dtype_s, &dtype))
        return ssim_cli_usage_error(VERB " query", "--dtype: unknown dtype '%s'", dtype_s);
    g_autoptr(GError) error = NULL;
    if (bytes_text != NULL && !ssim_bytes_read(bytes_text, &bytes, &error))
        return ssim_cli_usage_error(VERB " query", "--bytes: %s", error->message);
    if (ranks < 1 || per_node < 0 || !(nics >= 0 && nics <= 1024))
        return ssim_cli_usage_error(VERB " query", "--ranks, --per-node and --nics-per-rank "
                                                   "must not be negative (ranks at least 1)");
    g_autofree char *path = g_strdup(argv[1]);
    ssim_cli_resolve_input(VERB " query", &path, NULL);
    g_autoptr(SsimProfile) profile = ssim_profile_load(path, &error);
    if (profile == NULL)
        return ssim_cli_runtime_error(error);
    /* The cluster's figures: the network model for other layouts and the analytical answer. */
    SsimAnalyticParams net_params, *net = NULL;
    if (cluster_name) {
        g_autoptr(SsimCluster) cluster = ssim_cluster_load(cluster_name, &error);
        if (cluster == NULL)
            return ssim_cli_runtime_error(error);
        ssim_analytic_params_from_cluster(&net_params, cluster, dtype);
        net = &net_params;
    } else if (nics > 0) {
        return ssim_cli_usage_error(VERB " query", "--nics-per-rank needs --cluster (the network "
                                                   "model the layout is carried through)");
    }
    if (net && nics > 0) {
        /* The rank's NICs as given, which the cluster's ring_nics no longer caps. */
        net->nics_per_gpu = nics;
        net->ring_nics = 0;
    }
    SsimCostEstimate est;
    gboolean ok;
    if (comm) {
        SsimProfileComm op;
        if (!ssim_profile_comm_from_name(comm, &op))
            return ssim_cli_usage_error(VERB " query", "--comm: unknown collective '%s'", comm);
        ok = ssim_profile_comm_time(profile, op, dtype_s ? (int)dtype : SSIM_PROFILE_NO_DTYPE,
                                    (guint64)bytes, (guint)ranks,
                                    per_node ? (guint)per_node : (guint)ranks, NULL, net, &est);
    } else if (attention) {
        gboolean backward, flash;
        if (!ssim_profile_attention_pass(attention, &backward, &flash))
            return ssim_cli_usage_error(VERB " query",
                                        "--attention: unknown pass '%s' (fwd, bwd, flash-fwd or "
                                        "flash-bwd)",
                                        attention);
        guint64 d[4];
        if (!parse_dims(shape, d))
            return ssim_cli_usage_error(VERB " query", "--shape: '%s' is not SxHxD[xBATCH]", shape);
        if (flash) {
            guint64 kb = ssim_profile_flash_bytes(backward, d[0], d[1], d[2], d[3], dtype);
            ok = ssim_profile_flash_time(profile, backward, d[0], d[1], d[2], d[3], kb, dtype, net,
                                         &est);
        } else {
            ok = ssim_profile_attention_time(profile, backward, d[0], d[1], d[2], d[3], dtype, net,
                                             &est);
        }
    } else if (gemm) {
        guint64 d[4];
        if (!parse_dims(gemm, d))
            return ssim_cli_usage_error(VERB " query", "--gemm: '%s' is not MxNxK[xBATCH]", gemm);
        SsimAnalyticParams fitted;
        SsimGemmModelFit fit;
        if (net && ssim_profile_fit_gemm_model(profile, dtype, net, &fitted, &fit)) {
            fprintf(format == SSIM_FORMAT_TABLE ? stdout : stderr,
                    "shape model fitted to %u measured GEMMs: efficiency %.4g, %.3g us per tile "
                    "(rms log error %.3g)\n",
                    fit.rows, fit.efficiency, fit.tile_overhead_us, fit.rms_log_error);
            net = &fitted;
        }
        ok = ssim_profile_gemm_time(profile, d[0], d[1], d[2], d[3], dtype, net, &est);
    } else if (memory) {
        ok = ssim_profile_memory_time(profile, memory, (int)dtype, (guint64)bytes, NULL, &est);
    } else {
        ok = ssim_profile_copy_time(profile, copy, (guint64)bytes, NULL, &est);
    }
    if (format != SSIM_FORMAT_TABLE) {
        const char *kind = comm        ? "comm"
                           : gemm      ? "gemm"
                           : attention ? "attention"
                           : memory    ? "memory"
                                       : "copy";
        const char *op = comm ? comm : gemm ? gemm : attention ? attention : memory ? memory : copy;
        const char *source = ok ? ssim_cost_source_name(est.source) : "none";
        /* A collective without --dtype is looked up at any dtype. */
        const char *dtype_name = comm && !dtype_s ? "any" : ssim_dtype_name(dtype);
        g_autoptr(GString) out = g_string_new(NULL);
        if (format == SSIM_FORMAT_CSV) {
            g_string_append(out, "kind,op,bytes,ranks,per_node,dtype,time_us,source\n");
            g_string_append_printf(out, "%s,%s,%" G_GUINT64_FORMAT ",%d,%d,%s,", kind, op, bytes,
                                   ranks, per_node ? per_node : ranks, dtype_name);
            if (ok)
                g_string_append_printf(out, "%.6g", est.time_us);
            g_string_append_printf(out, ",%s\n", source);
        } else {
            g_autoptr(JsonBuilder) b = json_builder_new();
            json_builder_begin_object(b);
            const char *names[] = {"kind", "op", "dtype", "source"};
            const char *values[] = {kind, op, dtype_name, source};
            for (gsize i = 0; i < G_N_ELEMENTS(names); i++) {
                json_builder_set_member_name(b, names[i]);
                json_builder_add_string_value(b, values[i]);
            }
            json_builder_set_member_name(b, "bytes");
            json_builder_add_int_value(b, (gint64)bytes);
            json_builder_set_member_name(b, "ranks");
            json_builder_add_int_value(b, ranks);
            json_builder_set_member_name(b, "per_node");
            json_builder_add_int_value(b, per_node ? per_node : ranks);
            json_builder_set_member_name(b, "time_us");
            if (ok)
                json_builder_add_double_value(b, est.time_us);
            else
                json_builder_add_null_value(b);
            json_builder_end_object(b);
            ssim_json_append(out, b, TRUE);
        }
        if (!ssim_cli_emit(NULL, out, &error))
            return ssim_cli_runtime_error(error);
        return SSIM_EXIT_OK;
    }
    if (!ok)
        printf("none: the profile has nothing relevant (the simulator uses the analytical "
               "model)\n");
    else if (est.source == SSIM_COST_SCALED)
        printf("%.6g us (scaled: measured at another layout, carried through the network "
               "model)\n",
               est.time_us);
    else if (est.source == SSIM_COST_ANALYTICAL)
        printf("%.6g us (analytical: the profile has nothing relevant)\n", est.time_us);
    else
        printf("%.6g us (%s)\n", est.time_us, ssim_cost_source_name(est.source));
    return SSIM_EXIT_OK;
}

/* ---- check: the cost model beside measured rows ------------------------------------------ */

/* The summary group of a measured row: its kind, and its op where the op names a different
 * kernel or collective (attention fwd/bwd, each memory kernel, copy and collective). */
static char *check_group_name(const SsimProfileRow *r)
{
    if (r->kind == SSIM_PROFILE_GEMM)
        return g_strdup("gemm");
    return g_strdup_printf("%s %s", ssim_profile_kind_name(r->kind), r->op);
}

/* What predicts: the cluster's analytical model in each dtype, or that model with its GEMM
 * shape figures fitted to `by`'s GEMMs (what `simulate --profile` does), built on first use. */
typedef struct {
    const SsimCluster *cluster;
    const SsimProfile *by; /* the predicting profile (an empty one: the model alone) */
    gboolean fit;
    SsimAnalyticParams params[SSIM_DTYPE_N];
    SsimGemmModelFit fits[SSIM_DTYPE_N];
    gboolean ready[SSIM_DTYPE_N], fitted[SSIM_DTYPE_N];
} CheckModel;

static const SsimAnalyticParams *check_params(CheckModel *cm, int dtype)
{
    SsimDtype d = dtype >= 0 ? (SsimDtype)dtype : SSIM_DTYPE_BF16;
    if (!cm->ready[d]) {
        SsimAnalyticParams base;
        ssim_analytic_params_from_cluster(&base, cm->cluster, d);
        cm->params[d] = base;
        if (cm->fit)
            cm->fitted[d] =
                ssim_profile_fit_gemm_model(cm->by, d, &base, &cm->params[d], &cm->fits[d]);
        cm->ready[d] = TRUE;
    }
    return &cm->params[d];
}

static void check_row_csv(GString *out, const SsimProfileRow *r, double meas, double pred,
                          const char *source)
{
    g_string_append_printf(out,
                           "%s,%s,%s,%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT
                           ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%u,%u,%.6g,",
                           ssim_profile_kind_name(r->kind), r->op,
                           r->dtype >= 0 ? ssim_dtype_name((SsimDtype)r->dtype) : "", r->m, r->n,
                           r->k, r->batch, r->bytes, r->ranks, r->ranks_per_node, meas);
    if (isfinite(pred))
        g_string_append_printf(out, "%.6g,%.4f", pred, (pred - meas) / meas);
    else
        g_string_append(out, ",");
    g_string_append_printf(out, ",%s\n", source);
}

static void check_row_table(GString *out, const SsimProfileRow *r, double meas, double pred,
                            const char *source)
{
    g_autofree char *what = NULL;
    if (r->kind == SSIM_PROFILE_GEMM || r->kind == SSIM_PROFILE_ATTENTION)
        what = g_strdup_printf("%" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT
                               "x%" G_GUINT64_FORMAT,
                               r->m, r->n, r->k, r->batch);
    else if (r->kind == SSIM_PROFILE_COMM)
        what = g_strdup_printf("%" G_GUINT64_FORMAT " B, %u ranks, %u/node", r->bytes, r->ranks,
                               r->ranks_per_node);
    else
        what = g_strdup_printf("%" G_GUINT64_FORMAT " B", r->bytes);
    g_autofree char *group = check_group_name(r);
    g_string_append_printf(out, "  %-18.18s %-4s %-30.30s %11.3f", group,
                           r->dtype >= 0 ? ssim_dtype_name((SsimDtype)r->dtype) : "-", what, meas);
    if (isfinite(pred))
        g_string_append_printf(out, " %11.3f %+8.1f%%", pred, 100 * (pred - meas) / meas);
    else
        g_string_append_printf(out, " %11s %9s", "-", "-");
    g_string_append_printf(out, "  %s\n", source);
}

/* The words of the check's figures: rows, priced, a group's ranking. */
static const SsimErrorWords check_words = {"rows", "row", "priced", "group"};

static void check_stats_json(JsonBuilder *b, const char *name, const SsimErrorStats *s)
{
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "group");
    json_builder_add_string_value(b, name);
    ssim_error_stats_json(b, s, &check_words);
    json_builder_end_object(b);
}

/* Every checked row, its prediction and group, and the figures per group and overall. */
typedef struct {
    const char *measured_path, *by_path;
    const SsimCluster *cluster;
    CheckModel *model;
    guint n;
    const SsimProfileRow **rows;
    double *pred, *meas;
    SsimCostSource *sources;
    guint *groups;
    GPtrArray *names; /* group names, by id */
    SsimErrorStats *per, all;
    guint by_source[SSIM_COST_N];
} CheckReport;

static void check_report_clear(CheckReport *r)
{
    g_free(r->rows);
    g_free(r->pred);
    g_free(r->meas);
    g_free(r->sources);
    g_free(r->groups);
    g_free(r->per);
    if (r->names)
        g_ptr_array_unref(r->names);
}

/* Prices the rows of `measured` whose kind is wanted and computes the figures. */
static void check_run(CheckReport *r, const SsimProfile *measured, const gboolean *want)
{
    guint n_all = MAX(ssim_profile_n_rows(measured), 1u);
    r->rows = g_new(const SsimProfileRow *, n_all);
    r->pred = g_new(double, n_all);
    r->meas = g_new(double, n_all);
    r->sources = g_new(SsimCostSource, n_all);
    r->groups = g_new(guint, n_all);
    r->names = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GHashTable) ids = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < ssim_profile_n_rows(measured); i++) {
        const SsimProfileRow *row = ssim_profile_row(measured, i);
        if (!want[row->kind])
            continue;
        SsimCostEstimate est;
        gboolean ok =
            ssim_profile_row_time(r->model->by, row, check_params(r->model, row->dtype), &est);
        guint j = r->n++;
        r->rows[j] = row;
        r->meas[j] = row->time_us;
        r->pred[j] = ok && est.time_us > 0 ? est.time_us : NAN;
        r->sources[j] = est.source;
        if (isfinite(r->pred[j]))
            r->by_source[est.source]++;
        char *name = check_group_name(row);
        gpointer id;
        if (g_hash_table_lookup_extended(ids, name, NULL, &id)) {
            g_free(name);
        } else {
            id = GUINT_TO_POINTER(r->names->len);
            g_ptr_array_add(r->names, name);
            g_hash_table_insert(ids, name, id);
        }
        r->groups[j] = GPOINTER_TO_UINT(id);
    }
    r->per = g_new0(SsimErrorStats, MAX(r->names->len, 1u));
    ssim_error_stats_groups(r->pred, r->meas, r->groups, r->n, r->names->len, r->per);
    ssim_error_stats(r->pred, r->meas, r->groups, r->n, &r->all);
}

static const char *check_source(const CheckReport *r, guint i)
{
    return isfinite(r->pred[i]) ? ssim_cost_source_name(r->sources[i]) : "none";
}

static void check_table(GString *out, const CheckReport *r, const SsimProfile *measured,
                        gboolean rows)
{
    const char *gpu = ssim_profile_get_meta(measured, "gpu");
    const CheckModel *cm = r->model;
    g_string_append_printf(out, "measured:   %s (%u rows%s%s)\n", r->measured_path, r->n,
                           gpu ? ", " : "", gpu ? gpu : "");
    if (r->by_path)
        g_string_append_printf(out, "predicted:  profile %s, then the cluster's model\n",
                               r->by_path);
    else
        g_string_append_printf(out, "predicted:  the analytical model of %s\n", r->cluster->name);
    g_string_append_printf(out, "cluster:    %s (%s)\n", r->cluster->name,
                           r->cluster->gpu ? r->cluster->gpu : "");
    for (guint d = 0; d < SSIM_DTYPE_N; d++)
        if (cm->fitted[d])
            g_string_append_printf(out,
                                   "gemm model: %s fitted to %u GEMMs of the profile: efficiency "
                                   "%.3f, %.3g us per tile (rms log error %.3f)\n",
                                   ssim_dtype_name((SsimDtype)d), cm->fits[d].rows,
                                   cm->fits[d].efficiency, cm->fits[d].tile_overhead_us,
                                   cm->fits[d].rms_log_error);
        else if (cm->ready[d])
            g_string_append_printf(
                out,
                "gemm model: %s as the cluster sets it: efficiency %.3f, %.3g us "
                "per tile\n",
                ssim_dtype_name((SsimDtype)d), cm->params[d].gemm_efficiency,
                ssim_time_to_seconds(cm->params[d].gemm_tile_overhead) * 1e6);
    g_string_append(out, "sources:   ");
    for (guint s = 0; s < SSIM_COST_N; s++)
        if (r->by_source[s] > 0)
            g_string_append_printf(out, " %s %u", ssim_cost_source_name((SsimCostSource)s),
                                   r->by_source[s]);
    g_string_append(out, "\n");
    if (rows) {
        g_string_append_printf(out, "\n  %-18s %-4s %-30s %11s %11s %9s  %s\n", "group", "type",
                               "shape (m x n x k x batch) / size", "measured_us", "predicted",
                               "error", "source");
        for (guint i = 0; i < r->n; i++)
            check_row_table(out, r->rows[i], r->meas[i], r->pred[i], check_source(r, i));
    }
    g_string_append(out, "\n");
    ssim_error_groups_append_as(out, r->per, (char *const *)r->names->pdata, r->names->len, "  ",
                                &check_words);
    g_string_append(out, "\nall rows\n");
    ssim_error_stats_append_as(out, &r->all, "  ", &check_words);
}

static void check_csv(GString *out, const CheckReport *r, gboolean rows)
{
    if (rows) {
        g_string_append(out, "kind,op,dtype,m,n,k,batch,bytes,ranks,ranks_per_node,measured_us,"
                             "predicted_us,error,source\n");
        for (guint i = 0; i < r->n; i++)
            check_row_csv(out, r->rows[i], r->meas[i], r->pred[i], check_source(r, i));
        return;
    }
    g_string_append(out, "group,rows,mape,median,max,bias,within10,tau\n");
    for (guint g = 0; g <= r->names->len; g++) {
        const SsimErrorStats *s = g < r->names->len ? &r->per[g] : &r->all;
        g_string_append_printf(out, "%s,%u", g < r->names->len ? (char *)r->names->pdata[g] : "all",
                               s->n);
        const double v[] = {s->mape, s->median, s->max, s->bias, s->within10};
        for (gsize j = 0; j < G_N_ELEMENTS(v); j++)
            if (s->n > 0 && isfinite(v[j]))
                g_string_append_printf(out, ",%.4f", v[j]);
            else
                g_string_append(out, ",");
        if (isfinite(s->tau))
            g_string_append_printf(out, ",%.4f\n", s->tau);
        else
            g_string_append(out, ",\n");
    }
}

static void check_row_json(JsonBuilder *b, const CheckReport *r, guint i)
{
    const SsimProfileRow *row = r->rows[i];
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "kind");
    json_builder_add_string_value(b, ssim_profile_kind_name(row->kind));
    json_builder_set_member_name(b, "op");
    json_builder_add_string_value(b, row->op);
    json_builder_set_member_name(b, "dtype");
    if (row->dtype >= 0)
        json_builder_add_string_value(b, ssim_dtype_name((SsimDtype)row->dtype));
    else
        json_builder_add_null_value(b);
    const char *dims[] = {"m", "n", "k", "batch", "bytes", "ranks", "ranks_per_node"};
    const guint64 dv[] = {
        row->m, row->n, row->k, row->batch, row->bytes, row->ranks, row->ranks_per_node};
    for (gsize j = 0; j < G_N_ELEMENTS(dims); j++) {
        json_builder_set_member_name(b, dims[j]);
        json_builder_add_int_value(b, (gint64)dv[j]);
    }
    json_builder_set_member_name(b, "measured_us");
    json_builder_add_double_value(b, r->meas[i]);
    ssim_json_set_number(b, "predicted_us", r->pred[i]);
    json_builder_set_member_name(b, "source");
    json_builder_add_string_value(b, check_source(r, i));
    json_builder_end_object(b);
}

static void check_json(GString *out, const CheckReport *r, gboolean rows)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "measured");
    json_builder_add_string_value(b, r->measured_path);
    json_builder_set_member_name(b, "cluster");
    json_builder_add_string_value(b, r->cluster->name);
    json_builder_set_member_name(b, "profile");
    if (r->by_path)
        json_builder_add_string_value(b, r->by_path);
    else
        json_builder_add_null_value(b);
    json_builder_set_member_name(b, "groups");
    json_builder_begin_array(b);
    for (guint g = 0; g < r->names->len; g++)
        check_stats_json(b, r->names->pdata[g], &r->per[g]);
    json_builder_end_array(b);
    json_builder_set_member_name(b, "all");
    check_stats_json(b, "all", &r->all);
    if (rows) {
        json_builder_set_member_name(b, "rows");
        json_builder_begin_array(b);
        for (guint i = 0; i < r->n; i++)
            check_row_json(b, r, i);
        json_builder_end_array(b);
    }
    json_builder_end_object(b);
    ssim_json_append(out, b, TRUE);
}

/* The model names of a GPU ("A100", "H200"): its words that hold a digit and a letter. */
static gboolean same_gpu_model(const char *a, const char *b)
{
    g_auto(GStrv) wa = g_regex_split_simple("[^A-Za-z0-9]+", a, 0, 0);
    g_auto(GStrv) wb = g_regex_split_simple("[^A-Za-z0-9]+", b, 0, 0);
    for (guint i = 0; wa[i] != NULL; i++) {
        gboolean digit = strpbrk(wa[i], "0123456789") != NULL;
        gboolean alpha =
            strpbrk(wa[i], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") != NULL;
        if (!digit || !alpha || strlen(wa[i]) < 3)
            continue;
        for (guint j = 0; wb[j] != NULL; j++)
            if (g_ascii_strcasecmp(wa[i], wb[j]) == 0)
                return TRUE;
    }
    return FALSE;
}

static int profile_check(int argc, char **argv)
{
    g_autofree char *cluster_name = NULL, *by_path = NULL, *kinds_text = NULL;
    gboolean rows = FALSE;
    g_auto(SsimCliOutput) output = {0};
    GOptionEntry entries[] = {
        {"cluster", 'c', 0, G_OPTION_ARG_STRING, &cluster_name,
         "The cluster whose analytical model predicts (default: the default cluster, dgx-h200)",
         "NAME|PATH"},
        {"profile", 'p', 0, G_OPTION_ARG_FILENAME, &by_path,
         "Predict through this profile (file or directory) as `simulate --profile` would: its "
         "rows, interpolated, with the GEMM shape model fitted to its GEMMs; what it lacks falls "
         "to the cluster's model",
         "PATH"},
        {"kind", 'k', 0, G_OPTION_ARG_STRING, &kinds_text,
         "Only rows of these kinds (gemm, attention, memory, comm, copy; default all)", "LIST"},
        {"rows", 0, 0, G_OPTION_ARG_NONE, &rows,
         "Also list every row: measured, predicted, error and where the prediction came from",
         NULL},
        ssim_cli_output_entry(&output, SSIM_OPT_FORMAT,
                              "table (default), csv (one line per row, or per group without "
                              "--rows) or json (groups, and rows with --rows)"),
        ssim_cli_output_entry(&output, SSIM_OPT_OUTPUT,
                              "Write the report to FILE (default: "
                              "standard output)"),
        {NULL}};
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("MEASURED - the cost model beside measured rows");
    g_option_context_set_summary(
        ctx,
        "For every row of MEASURED (a profile file or directory: shiftsim-bench output, imported "
        "nccl-tests), the time the simulator would charge for that op, and the error: "
        "(predicted - measured) / measured.  Summarised per group (GEMMs; attention fwd and bwd; "
        "each memory kernel, copy and collective): rows, MAPE, median, max, bias (mean signed "
        "error), the fraction within 10% and Kendall tau (is the ranking of the group's ops "
        "right?).  Predict with the cluster's analytical model alone (the default: what a "
        "simulation without --profile charges), or through --profile P, to see how far P's "
        "measurements carry to shapes and sizes it did not measure.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!ssim_cli_parse(ctx, &argc, &argv, VERB " check"))
        return SSIM_EXIT_USAGE;
    if (argc != 2)
        return ssim_cli_usage_error(VERB " check", "expected one MEASURED profile");
    SsimFormat format;
    int rc = ssim_cli_output_format(VERB " check", &output, &format);
    if (rc != SSIM_EXIT_OK)
        return rc;
    gboolean want[SSIM_PROFILE_KIND_N];
    for (guint k = 0; k < SSIM_PROFILE_KIND_N; k++)
        want[k] = kinds_text == NULL;
    if (kinds_text != NULL) {
        g_auto(GStrv) parts = g_strsplit(kinds_text, ",", -1);
        for (guint i = 0; parts[i] != NULL; i++) {
            SsimProfileKind k;
            if (!ssim_profile_kind_from_name(g_strstrip(parts[i]), &k))
                return ssim_cli_usage_error(VERB " check",
                                            "--kind: unknown kind '%s' (gemm, attention, memory, "
                                            "comm, copy)",
                                            parts[i]);
            want[k] = TRUE;
        }
    }
    rc = ssim_cli_check_output(output.output);
    if (rc != SSIM_EXIT_OK)
        return rc;
    g_autoptr(GError) error = NULL;
    g_autofree char *path = g_strdup(argv[1]);
    ssim_cli_resolve_input(VERB " check", &path, NULL);
    ssim_cli_resolve_input(VERB " check", &by_path, NULL);
    g_autoptr(SsimProfile) measured = ssim_profile_load(path, &error);
    if (measured == NULL)
        return ssim_cli_runtime_error(error);
    g_autoptr(SsimCluster) cluster =
        cluster_name ? ssim_cluster_load(cluster_name, &error) : ssim_cluster_default();
    if (cluster == NULL)
        return ssim_cli_runtime_error(error);
    g_autoptr(SsimProfile) by = by_path ? ssim_profile_load(by_path, &error) : ssim_profile_new();
    if (by == NULL)
        return ssim_cli_runtime_error(error);
    const char *gpu = ssim_profile_get_meta(measured, "gpu");
    if (gpu != NULL && cluster->gpu != NULL && !same_gpu_model(gpu, cluster->gpu))
        fprintf(stderr,
                "shiftsim profile check: note: %s was measured on %s, the model is %s's (%s); "
                "--cluster names another\n",
                path, gpu, cluster->name, cluster->gpu);
    CheckModel cm = {.cluster = cluster, .by = by, .fit = by_path != NULL};
    CheckReport report = {
        .measured_path = path, .by_path = by_path, .cluster = cluster, .model = &cm};
    check_run(&report, measured, want);
    g_autoptr(GString) out = g_string_new(NULL);
    if (format == SSIM_FORMAT_TABLE)
        check_table(out, &report, measured, rows);
    else if (format == SSIM_FORMAT_CSV)
        check_csv(out, &report, rows);
    else
        check_json(out, &report, rows);
    check_report_clear(&report);
    if (!ssim_cli_emit(output.output, out, &error))
        return ssim_cli_runtime_error(error);
    return SSIM_EXIT_OK;
}

int ssim_verb_profile(int argc, char **argv)
{
    static const char usage[] =
        "Usage: shiftsim profile import|show|query|check ...\n"
        "  import --from nccl-tests|nccl-tests-json|vtrain FILE... [-o OUT.csv]\n"
        "  show PROFILE\n"
        "  query PROFILE --comm OP --bytes N --ranks R [--per-node K] | --gemm MxNxK[xB] |\n"
        "        --memory OP --bytes N | --copy OP --bytes N  [--dtype T]\n"
        "        [--cluster C [--nics-per-rank X]]\n"
        "  check MEASURED [--cluster C] [--profile P] [--kind LIST] [--rows]\n"
        "`shiftsim profile SUBCOMMAND --help` lists a subcommand's options.\n";
    if (argc < 2) {
        fputs(usage, stderr);
        return SSIM_EXIT_USAGE;
    }
    const char *sub = argv[1];
    if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0) {
        fputs(usage, stdout);
        return SSIM_EXIT_OK;
    }
    static char prog[64];
    g_snprintf(prog, sizeof prog, "shiftsim profile %s", sub);
    argv[1] = prog;
    if (strcmp(sub, "import") == 0)
        return profile_import(argc - 1, argv + 1);
    if (strcmp(sub, "show") == 0)
        return profile_show(argc - 1, argv + 1);
    if (strcmp(sub, "query") == 0)
        return profile_query(argc - 1, argv + 1);
    if (strcmp(sub, "check") == 0)
        return profile_check(argc - 1, argv + 1);
    return ssim_cli_usage_error(VERB, "unknown subcommand '%s' (import, show, query or check)",
                                sub);
}
