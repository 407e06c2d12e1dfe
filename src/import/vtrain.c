/*
 * The readers of vTrain's files (include/shiftsim/vtrain.h): the measured-iterations table as
 * runs, the all-reduce lookup tables as profile rows.
 *
 * The iterations table is read line by line with the CSV line splitter (src/core/csvline.h): the
 * header must be vTrain's exactly (ground_truth_single.csv's, or ground_truth_multi.csv's, which
 * adds the model's size in front), every cell a positive number (the ten counts whole), and the
 * GPU count tp x dp x pp.  Every row becomes one run on `cluster`, on as many eight-GPU nodes as
 * it needs, its source naming the file and line it came from, so a runs file written from the
 * conversion leads back to vTrain's table.
 *
 * A lookup table is nccl-tests output that vTrain reformatted: its type names are nccl-tests'
 * (src/import/nccltests-private.h), its times whole nanoseconds.  The statistics of a size are
 * taken in nanoseconds and divided once, so exact decimals stay exact.
 *
 * Invariants: the converter either returns every row of the table or fails; the table importer
 * either appends every row to `dst` or fails and leaves `dst` exactly as it was (rows go to a
 * scratch profile first and are merged at the end).
 */
#include <shiftsim/vtrain.h>

#include "src/core/csvline.h"
#include "src/import/nccltests-private.h"
#include "src/import/vtrain-private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the measured iterations as runs ---------------------------------------------------- */

static const char *const vtrain_header =
    "# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,"
    "tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms)";
/* ground_truth_multi.csv: the same columns after the model's size. */
static const char *const vtrain_size_column = "Parameters (billion),";

/* vTrain's machines: eight A100s a node (DGX A100), so a run of n GPUs spans ceil(n / 8). */
#define VTRAIN_GPUS_PER_NODE 8u

typedef struct {
    SsimRuns *runs;
    const char *cluster;
    const char *file; /* the table's base name, for each run's source */
    gboolean seen_header;
    guint skip;              /* leading columns before vTrain's eleven (the size: 1) */
    guint gpus_lo, gpus_hi;  /* the GPU counts seen */
    guint64 gpu_counts_seen; /* bit n: a run of n GPUs (n < 64) */
} VtrainState;

static gboolean vtrain_header_ok(VtrainState *st, const char *s, gsize len)
{
    gsize size = strlen(vtrain_size_column), n = strlen(vtrain_header);
    st->skip = len == size + n && memcmp(s, vtrain_size_column, size) == 0 ? 1 : 0;
    gsize at = st->skip ? size : 0;
    return len == at + n && memcmp(s + at, vtrain_header, n) == 0;
}

static gboolean vtrain_line(SsimCsvLine *lp, const char *s, gsize len, gpointer data,
                            GError **error)
{
    VtrainState *st = data;
    if (len == 0)
        return TRUE;
    if (!st->seen_header) {
        if (!vtrain_header_ok(st, s, len)) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                        "%s:%u:1: header: expected vTrain's '%s' (ground_truth_single.csv), "
                        "or the same after '%s' (ground_truth_multi.csv)",
                        lp->path, lp->line, vtrain_header, vtrain_size_column);
            return FALSE;
        }
        st->seen_header = TRUE;
        return TRUE;
    }
    if (!ssim_csv_line_split(lp, s, len, error))
        return FALSE;
    static const char *const names[] = {"GPUs",
                                        "global batch",
                                        "micro batch",
                                        "hidden size",
                                        "attention heads",
                                        "layers",
                                        "sequence length",
                                        "tensor parallelism",
                                        "data parallelism",
                                        "pipeline parallelism",
                                        "iteration time (ms)"};
    const SsimCsvField *f = ssim_csv_line_fields(lp);
    if (ssim_csv_line_n_fields(lp) != G_N_ELEMENTS(names) + st->skip)
        return ssim_csv_line_fail(lp, error, 1, "columns", "the row has %u fields, expected %zu",
                                  ssim_csv_line_n_fields(lp), G_N_ELEMENTS(names) + st->skip);
    if (st->skip) { /* the model's size: checked, not used (the shape columns define it) */
        char *end = NULL;
        double size = g_ascii_strtod(f[0].text, &end);
        if (end == f[0].text || *end != '\0' || !(size > 0) || !isfinite(size))
            return ssim_csv_line_fail(lp, error, f[0].col, "Parameters (billion)",
                                      "'%s' is not a positive number", f[0].text);
        f += st->skip;
    }
    double v[G_N_ELEMENTS(names)];
    for (guint c = 0; c < G_N_ELEMENTS(names); c++) {
        char *end = NULL;
        v[c] = g_ascii_strtod(f[c].text, &end);
        if (end == f[c].text || *end != '\0' || !(v[c] > 0) || !isfinite(v[c]) ||
            (c < 10 && (v[c] != floor(v[c]) || v[c] > G_MAXUINT32)))
            return ssim_csv_line_fail(lp, error, f[c].col, names[c], "'%s' is not a positive %s",
                                      f[c].text, c < 10 ? "integer" : "number");
    }
    SsimMeasuredRun run;
    ssim_measured_run_init(&run);
    run.line = lp->line;
    run.has_shape = TRUE;
    run.hidden = (guint)v[3];
    run.heads = (guint)v[4];
    run.layers = (guint)v[5];
    run.seq_len = (guint)v[6];
    run.ffn = 4 * run.hidden;
    run.vocab = 51200;
    run.dtype = SSIM_DTYPE_FP16;
    g_snprintf(run.model, sizeof run.model, "gpt-l%u-h%u", run.layers, run.hidden);
    g_strlcpy(run.cluster, st->cluster, sizeof run.cluster);
    run.par.tp = (guint)v[7];
    run.par.dp = (guint)v[8];
    run.par.pp = (guint)v[9];
    run.par.microbatch = (guint)v[2];
    run.par.global_batch = (guint)v[1];
    run.par.recompute = SSIM_RECOMPUTE_FULL;
    /* Megatron-DeepSpeed's layers are Megatron-LM's own (no Transformer Engine): a QKV bias
     * kernel, bias gradients as reductions, attention's layout copies, LayerNorm's two backward
     * passes (parallel.h).  Under DeepSpeed's engine they run without two of Megatron-LM's
     * overlaps: the fork turns the asynchronous tensor-parallel all-reduce off whenever
     * --deepspeed is given (megatron/arguments.py since its 2023-07 sync with Megatron-LM, commit
     * f90b8877; older forks never had it: tp_overlap=off), and no weight gradient is accumulated
     * in the GEMM (the fused path is commented out in core/tensor_parallel/layers.py since the
     * same sync, absent before; Megatron-LM's main_grad buffers are its own DDP's, which the
     * DeepSpeed engine replaces), so autograd adds each microbatch's weight gradients into .grad
     * with kernels of their own (step cost grad_accum). */
    run.par.transformer_impl = SSIM_TRANSFORMER_IMPL_LOCAL;
    run.par.tp_sync_grad = TRUE;
    run.par.step_costs_set |= 1u << SSIM_STEP_COST_GRAD_ACCUM;
    run.par.step_costs_on |= 1u << SSIM_STEP_COST_GRAD_ACCUM;
    run.iteration_ms = v[10];
    guint gpus = (guint)v[0];
    if (run.par.dp * run.par.tp * run.par.pp != gpus)
        return ssim_csv_line_fail(lp, error, f[0].col, "GPUs", "%u is not tp x dp x pp = %u", gpus,
                                  run.par.dp * run.par.tp * run.par.pp);
    run.nodes = (gpus + VTRAIN_GPUS_PER_NODE - 1) / VTRAIN_GPUS_PER_NODE;
    /* tp larger than a node: the runs format says so in its own column. */
    run.par.allow_cross_node_tp = run.par.tp > VTRAIN_GPUS_PER_NODE;
    st->gpus_lo = st->gpus_lo ? MIN(st->gpus_lo, gpus) : gpus;
    st->gpus_hi = MAX(st->gpus_hi, gpus);
    if (gpus < 64)
        st->gpu_counts_seen |= (guint64)1 << gpus;
    g_snprintf(run.source, sizeof run.source,
               "vTrain measured data (Bang et al., MICRO 2024), %s line %u", st->file, lp->line);
    ssim_runs_add(st->runs, &run);
    return TRUE;
}

/* "2, 4 or 8" for the GPU counts seen (all under 64). */
static char *counts_list(guint64 seen)
{
    GString *out = g_string_new(NULL);
    guint n = (guint)__builtin_popcountll(seen), k = 0;
    for (guint g = 1; g < 64; g++)
        if (seen & ((guint64)1 << g))
            g_string_append_printf(out, "%s%u", k++ == 0 ? "" : k == n ? " or " : ", ", g);
    return g_string_free(out, FALSE);
}

/* 1440 -> "1,440" (whatever the locale). */
static char *thousands(guint n)
{
    if (n < 1000)
        return g_strdup_printf("%u", n);
    g_autofree char *high = thousands(n / 1000);
    return g_strdup_printf("%s,%03u", high, n % 1000);
}

SsimRuns *ssim_runs_from_vtrain_data(const char *text, gssize length, const char *path,
                                     const char *cluster, GError **error)
{
    gsize len = length < 0 ? strlen(text) : (gsize)length;
    g_autoptr(SsimRuns) runs = ssim_runs_new(path);
    g_autofree char *file = g_path_get_basename(path);
    VtrainState st = {.runs = runs, .cluster = cluster, .file = file};
    if (!ssim_csv_for_each_line(text, len, ssim_runs_path(runs), vtrain_line, &st, error))
        return NULL;
    if (ssim_runs_n(runs) == 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                    st.seen_header ? "%s: no measured run after vTrain's header"
                                   : "%s: empty: expected vTrain's header, then a row per run",
                    ssim_runs_path(runs));
        return NULL;
    }
    gboolean one_node = st.gpus_hi <= VTRAIN_GPUS_PER_NODE;
    g_autofree char *count = thousands(ssim_runs_n(runs));
    g_autofree char *gpus = counts_list(st.gpu_counts_seen);
    g_autofree char *data =
        one_node ? g_strdup_printf("vTrain measured data: %s training iterations on one node of "
                                   "%s A100 GPUs",
                                   count, gpus)
                 : g_strdup_printf("vTrain measured data: %s training iterations on %u to %u "
                                   "A100 GPUs (nodes of %u)",
                                   count, st.gpus_lo, st.gpus_hi, VTRAIN_GPUS_PER_NODE);
    ssim_runs_set_meta(runs, "data", data);
    ssim_runs_set_meta(runs, "source",
                       "Bang et al., vTrain: A Simulation Framework for "
                       "Evaluating Cost-effective and Compute-optimal Large "
                       "Language Model Training, MICRO 2024 (MIT licence)");
    ssim_runs_set_meta(runs, "setup",
                       "Megatron-DeepSpeed under DeepSpeed's engine (Megatron-LM's own layers: "
                       "transformer_impl=local; no asynchronous tensor-parallel all-reduce: "
                       "tp_overlap=off; weight gradients accumulated by autograd: "
                       "step_costs=+grad_accum), 1F1B, activation checkpointing "
                       "(recompute full), no gradient bucketing, fp16, vocab "
                       "51200 (GPT-2 BPE padded)");
    ssim_runs_set_meta(runs, "converted_by", "ssim_runs_from_vtrain()");
    /* One node: the rows the bundled calibration fits; across nodes: rows only ever checked,
     * never fitted (docs/validation.md: fit and check files). */
    ssim_runs_set_meta(runs, "use", one_node ? "fit" : "check");
    return g_steal_pointer(&runs);
}

SsimRuns *ssim_runs_from_vtrain(const char *path, const char *cluster, GError **error)
{
    gsize len = 0;
    g_autofree char *text = ssim_csv_read_file(path, &len, error);
    return text ? ssim_runs_from_vtrain_data(text, (gssize)len, path, cluster, error) : NULL;
}

gboolean ssim_vtrain_is_runs_table(const char *text, gsize length)
{
    gsize bom = ssim_text_bom(text, length); /* a spreadsheet's byte order mark */
    text += bom;
    length -= bom;
    const char *nl = memchr(text, '\n', length);
    gsize n = nl ? (gsize)(nl - text) : length;
    if (n > 0 && text[n - 1] == '\r')
        n--;
    VtrainState st = {0};
    return vtrain_header_ok(&st, text, n);
}

SsimRuns *ssim_runs_load_any(const char *path, const char *cluster, gboolean *was_vtrain,
                             GError **error)
{
    gsize len = 0;
    g_autofree char *text = ssim_csv_read_file(path, &len, error);
    if (text == NULL)
        return NULL;
    gboolean vtrain = ssim_vtrain_is_runs_table(text, len);
    if (was_vtrain)
        *was_vtrain = vtrain;
    return vtrain ? ssim_runs_from_vtrain_data(text, (gssize)len, path, cluster, error)
                  : ssim_runs_load_data(text, (gssize)len, path, error);
}

/* ---- the all-reduce lookup tables ------------------------------------------------------- */

#define VTRAIN_HEADER "size(B),count,type,time(ns),busbw(GB/s),time(ns),busbw(GB/s)"

guint ssim_vtrain_lut_ranks(const char *path)
{
    g_autofree char *base = g_path_get_basename(path);
    if (!g_str_has_prefix(base, "AR_GPU"))
        return 0;
    char *end;
    unsigned long n = strtoul(base + 6, &end, 10);
    return (*end == '_' && n >= 1 && n <= 1u << 20) ? (guint)n : 0;
}

gboolean ssim_vtrain_import_lut(SsimProfile *dst, const char *text, gssize length, const char *path,
                                GError **error)
{
    g_return_val_if_fail(dst != NULL && text != NULL && path != NULL, FALSE);
    guint ranks = ssim_vtrain_lut_ranks(path);
    if (ranks == 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%s:1:1: ranks: the file name does not start with AR_GPU<n>_ (n GPUs on one "
                    "node)",
                    path);
        return FALSE;
    }
    g_autofree char *copy = g_strndup(text, length < 0 ? strlen(text) : (gsize)length);
    char **lines = g_strsplit(copy, "\n", -1);
    g_autoptr(SsimProfile) p = ssim_profile_new();
    gboolean ok = TRUE;
    guint n_rows = 0;
    for (guint ln = 0; ok && lines[ln]; ln++) {
        char *line = g_strchomp(lines[ln]);
        guint lno = ln + 1;
        if (ln == 0) {
            if (strcmp(line, VTRAIN_HEADER) != 0) {
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                            "%s:1:1: header: expected '" VTRAIN_HEADER "'", path);
                ok = FALSE;
            }
            continue;
        }
        if (line[0] == '\0')
            continue;
        char **f = g_strsplit(line, ",", -1);
        guint nf = g_strv_length(f), col[8] = {1};
        for (guint i = 1; i < nf && i < 8; i++)
            col[i] = col[i - 1] + (guint)strlen(f[i - 1]) + 1;
        guint64 bytes = 0;
        SsimDtype dtype = SSIM_DTYPE_FP32;
        double t[2] = {0, 0};
        if (nf != 7) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                        "%s:%u:1: columns: %u fields, expected 7 (" VTRAIN_HEADER ")", path, lno,
                        nf);
            ok = FALSE;
        } else if (!g_ascii_string_to_unsigned(f[0], 10, 1, G_MAXUINT64, &bytes, NULL)) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                        "%s:%u:1: size(B): '%s' is not a positive byte count", path, lno, f[0]);
            ok = FALSE;
        } else if (!ssim_nccltests_dtype_from_name(f[2], &dtype)) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s:%u:%u: type: '%s' has no shiftsim dtype", path, lno, col[2], f[2]);
            ok = FALSE;
        } else {
            for (int s = 0; s < 2 && ok; s++) {
                guint c = s == 0 ? 3 : 5;
                guint64 ns;
                if (!g_ascii_string_to_unsigned(f[c], 10, 1, G_MAXUINT64, &ns, NULL)) {
                    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                                "%s:%u:%u: time(ns): '%s' is not a positive whole number of "
                                "nanoseconds",
                                path, lno, col[c], f[c]);
                    ok = FALSE;
                }
                t[s] = (double)ns;
            }
        }
        g_strfreev(f);
        if (!ok)
            break;
        /* Statistics in nanoseconds first, then one division: exact decimals stay exact. */
        SsimProfileRow row;
        ssim_profile_row_init(&row, SSIM_PROFILE_COMM);
        row.op = "allreduce";
        row.dtype = (int)dtype;
        row.bytes = bytes;
        row.ranks = row.ranks_per_node = ranks;
        row.samples = 2;
        row.time_us = row.median_us = (t[0] + t[1]) / 2 / 1000;
        row.min_us = MIN(t[0], t[1]) / 1000;
        row.stddev_us = fabs(t[0] - t[1]) / G_SQRT2 / 1000;
        g_autoptr(GError) err = NULL;
        if (!ssim_profile_add_row(p, &row, &err)) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "%s:%u:1: %s", path, lno,
                        err->message);
            ok = FALSE;
        }
        n_rows++;
    }
    g_strfreev(lines);
    if (ok && n_rows == 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MISSING,
                    "%s:2:1: rows: the table has no measurements", path);
        ok = FALSE;
    }
    if (!ok)
        return FALSE;
    return ssim_profile_merge(dst, p, error);
}
