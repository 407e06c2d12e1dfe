/*
 * shiftsim-bench: measures the costs shiftsim replays -- GEMMs, attention, memory-bound kernels,
 * NCCL collectives and copies -- on the GPUs of one node, and writes them as a profile CSV that
 * `shiftsim simulate --profile` reads unchanged.
 *
 * This file is the driver: it parses the options, derives every case from the model (shapes.c)
 * and the size lists (sizes.c), writes the metadata, and calls the CUDA modules in turn.  All
 * measurement happens in the .cu files; everything here is plain C so that the planning can be
 * checked with `--list` on a machine without a GPU.
 */
#include "src/microbench/bench.h"
#include "src/microbench/collective.h"
#include "src/microbench/csvout.h"
#include "src/microbench/run.h"
#include "src/microbench/shapes.h"
#include "src/microbench/sizes.h"

#include <shiftsim/data.h>
#include <shiftsim/model.h>

#include <errno.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ssim-config.h"

#define TOOL_NAME "shiftsim-bench"

static const char *const area_names[] = {"gemm", "attention", "memory", "comm", "copy", NULL};
static const char *const collective_names[] = {
    "allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "sendrecv", NULL};
static const char *const dtype_names[] = {"bf16", "fp16", NULL};

typedef struct {
    char *model, *tp, *microbatch, *dtype, *sizes, *copy_sizes, *sweep_sizes, *collectives;
    char *only, *out, *raw, *gemm_library;
    int seq, iters, warmup, min_iters, device, gpus;
    double max_case_seconds;
    gboolean gemm_sweep, no_l2_flush, list, quiet, version;
} Options;

static void options_clear(Options *o)
{
    g_free(o->model);
    g_free(o->tp);
    g_free(o->microbatch);
    g_free(o->dtype);
    g_free(o->sizes);
    g_free(o->copy_sizes);
    g_free(o->sweep_sizes);
    g_free(o->collectives);
    g_free(o->only);
    g_free(o->out);
    g_free(o->raw);
    g_free(o->gemm_library);
}

static const char summary[] =
    "Measures, on the GPUs of this node, the costs the shiftsim simulator replays, and writes "
    "them\n"
    "as a shiftsim profile CSV (format v1) for `shiftsim simulate --profile FILE`.\n"
    "\n"
    "What is measured (--only picks areas; all by default):\n"
    "  gemm       every forward and backward GEMM of one decoder layer and of the LM head of\n"
    "             --model, on one tensor-parallel rank, for each --tp and --microbatch: forward\n"
    "             C[m x n] = A[m x k] B[k x n], and its two backward GEMMs, dgrad (m, k, n) and\n"
    "             wgrad (k, n, m); duplicates measured once, in the operand layout frameworks\n"
    "             use (forward NT, dgrad NN, wgrad TN).  --gemm-library: cuBLAS's default\n"
    "             algorithm (what PyTorch's matmul calls; the default) or cuBLASLt's\n"
    "             heuristic's first (32 MiB workspace); --dtype inputs and output, fp32\n"
    "             accumulation.\n"
    "             --gemm-sweep adds square GEMMs of --sweep-sizes for an efficiency curve.\n"
    "  attention  forward and backward attention per (tp, microbatch): seq x seq scores for\n"
    "             ceil(heads/tp) heads.  Implementation `gemm-softmax`: batched cuBLAS GEMMs\n"
    "             (Q K^T, P V; backward dV, dP, dQ, dK) with this tool's fused scale + causal\n"
    "             mask + softmax kernel (and its backward), not a flash kernel.\n"
    "  memory     this tool's kernels for layernorm, gelu, softmax, residual add, Adam step (fp32\n"
    "             state, --dtype gradients) and copy, at the sizes of one layer; the row's bytes\n"
    "             are bytes read + written, so bytes / time is the achieved bandwidth.\n"
    "  comm       NCCL allreduce, allgather, reducescatter, alltoall, broadcast and sendrecv\n"
    "             (ring: rank r sends to r+1) across all visible GPUs (--gpus), one process "
    "driving\n"
    "             every GPU (ncclCommInitAll), for each of --sizes; nccl-tests' definitions: size "
    "=\n"
    "             bytes per rank, algbw = size / time, busbw = algbw x 2(n-1)/n (allreduce),\n"
    "             (n-1)/n (allgather, reducescatter, alltoall), 1 (broadcast, sendrecv).\n"
    "             Skipped with a notice on a single GPU.  Multi-node runs (MPI bootstrap) are not\n"
    "             supported yet.\n"
    "  copy       cudaMemcpyAsync device-to-device, peer GPU 0 -> 1 (when there are two GPUs),\n"
    "             host-to-device and device-to-host (pinned host memory) for --copy-sizes; bytes\n"
    "             = read + written (2 x the buffer).\n"
    "\n"
    "Method: --warmup untimed runs, then up to --iters timed runs, each between two CUDA events "
    "on\n"
    "its stream and synchronised (a case stops early once it has --min-iters samples and\n"
    "--max-case-seconds of timed GPU time).  GEMM, attention and memory-op iterations are\n"
    "preceded, outside the timed region, by a write over a buffer twice the L2 size, so each\n"
    "starts with a cold L2 (--no-l2-flush keeps it warm); copies and collectives are not.\n"
    "Inputs are pseudo-random, not zeros.  Each row reports the mean (time_us), median, minimum\n"
    "and sample standard deviation in microseconds and the sample count; --raw writes every\n"
    "sample.  Metadata lines record the GPU name, SM count, clocks, L2, memory, driver, CUDA\n"
    "runtime, cuBLAS and NCCL versions, date, host and this tool's version.\n"
    "\n"
    "Exit status: 0 when everything asked for ran, 1 on a bad option, a failed module or no CUDA\n"
    "device (\"no CUDA device found\").  Progress goes to stderr, one line per case.";

static const char description[] =
    "Examples:\n"
    "  shiftsim-bench --out traces/h200/profile.csv --raw traces/h200/raw.csv\n"
    "  shiftsim-bench --model models/llama-2-7b.ini --tp 1,2,4,8 --microbatch 1,2 --seq 4096\n"
    "  shiftsim-bench --only comm --sizes 1Ki:1Gi --iters 20\n"
    "  shiftsim-bench --only gemm --gemm-sweep --dtype bf16,fp16 --list   (plan only, no GPU)\n"
    "  shiftsim simulate --profile traces/h200/profile.csv\n"
    "\n"
    "Sizes are byte sizes (docs/units.md: 8M = 8000000, 8Mi = 8MiB = 8388608); a list is\n"
    "comma-separated sizes or ranges min:max[:factor] (factor 2 by default: 8:8Gi is every\n"
    "power of two from 8 B to 8 GiB).";

static gboolean parse_options(Options *o, int *argc, char ***argv)
{
    GOptionEntry entries[] = {
        {"model", 'm', 0, G_OPTION_ARG_STRING, &o->model,
         "Model whose layer shapes are measured: a name under models/ or an .ini path "
         "(default: the embedded GPT-J 6B)",
         "M"},
        {"tp", 0, 0, G_OPTION_ARG_STRING, &o->tp,
         "Tensor-parallel degrees to derive shapes for (default 1,2,4,8)", "LIST"},
        {"microbatch", 'b', 0, G_OPTION_ARG_STRING, &o->microbatch,
         "Microbatch sizes in sequences (default 1,2,4)", "LIST"},
        {"seq", 's', 0, G_OPTION_ARG_INT, &o->seq, "Sequence length (default: the model's seq_len)",
         "N"},
        {"dtype", 0, 0, G_OPTION_ARG_STRING, &o->dtype, "Element types: bf16, fp16 (default bf16)",
         "LIST"},
        {"gemm-sweep", 0, 0, G_OPTION_ARG_NONE, &o->gemm_sweep,
         "Also time square GEMMs of --sweep-sizes (op `sweep`)", NULL},
        {"sweep-sizes", 0, 0, G_OPTION_ARG_STRING, &o->sweep_sizes,
         "Sizes m = n = k of the GEMM sweep (default 256:16384)", "LIST"},
        {"sizes", 0, 0, G_OPTION_ARG_STRING, &o->sizes,
         "Collective sizes in bytes per rank (default 8:8Gi)", "LIST"},
        {"copy-sizes", 0, 0, G_OPTION_ARG_STRING, &o->copy_sizes,
         "Copy buffer sizes (default 64Ki:4Gi:4)", "LIST"},
        {"collectives", 0, 0, G_OPTION_ARG_STRING, &o->collectives,
         "Collectives to time (default allreduce,allgather,reducescatter,alltoall,broadcast,"
         "sendrecv)",
         "LIST"},
        {"only", 0, 0, G_OPTION_ARG_STRING, &o->only,
         "Areas to measure: gemm, attention, memory, comm, copy (default all)", "LIST"},
        {"gpus", 0, 0, G_OPTION_ARG_INT, &o->gpus,
         "GPUs taking part in collectives, devices 0..N-1 (default all visible)", "N"},
        {"device", 0, 0, G_OPTION_ARG_INT, &o->device,
         "GPU for the compute, memory and d2d cases (default 0)", "ID"},
        {"iters", 'n', 0, G_OPTION_ARG_INT, &o->iters, "Timed iterations per case (default 50)",
         "N"},
        {"warmup", 'w', 0, G_OPTION_ARG_INT, &o->warmup,
         "Untimed iterations before them (default 5)", "N"},
        {"min-iters", 0, 0, G_OPTION_ARG_INT, &o->min_iters,
         "Samples a case keeps even past --max-case-seconds (default 5)", "N"},
        {"max-case-seconds", 0, 0, G_OPTION_ARG_DOUBLE, &o->max_case_seconds,
         "Stop sampling a case after this much timed GPU time (default 2)", "S"},
        {"gemm-library", 0, 0, G_OPTION_ARG_STRING, &o->gemm_library,
         "cublas (default: cublasGemmEx's default algorithm, as PyTorch) or cublaslt", "LIB"},
        {"no-l2-flush", 0, 0, G_OPTION_ARG_NONE, &o->no_l2_flush,
         "Do not flush L2 between timed GEMM, attention and memory-op iterations", NULL},
        {"out", 'o', 0, G_OPTION_ARG_FILENAME, &o->out,
         "Profile CSV to write (default: standard output)", "FILE"},
        {"raw", 0, 0, G_OPTION_ARG_FILENAME, &o->raw, "Also write every sample to FILE", "FILE"},
        {"list", 'l', 0, G_OPTION_ARG_NONE, &o->list,
         "Print the cases that would be measured and exit (needs no GPU)", NULL},
        {"quiet", 'q', 0, G_OPTION_ARG_NONE, &o->quiet, "No progress lines on stderr", NULL},
        {"version", 0, 0, G_OPTION_ARG_NONE, &o->version, "Print the version and exit", NULL},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("- measure GPU costs for shiftsim");
    g_option_context_set_summary(ctx, summary);
    g_option_context_set_description(ctx, description);
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) error = NULL;
    if (!g_option_context_parse(ctx, argc, argv, &error)) {
        fprintf(stderr, TOOL_NAME ": %s (try --help)\n", error->message);
        return FALSE;
    }
    if (*argc > 1) {
        fprintf(stderr, TOOL_NAME ": unexpected argument \"%s\" (try --help)\n", (*argv)[1]);
        return FALSE;
    }
    return TRUE;
}

/* Everything derived from the options; arrays owned here. */
typedef struct {
    SsimModel *model;
    GArray *tps, *microbatches, *gemms, *attentions, *memcases, *comm_sizes, *copy_sizes;
    GArray *dtypes, *colls;
    char **areas;
    SsimBenchPlan plan;
} Plan;

static void plan_clear(Plan *p)
{
    ssim_model_free(p->model);
    GArray **arrays[] = {&p->tps,        &p->microbatches, &p->gemms,  &p->attentions, &p->memcases,
                         &p->comm_sizes, &p->copy_sizes,   &p->dtypes, &p->colls};
    for (guint i = 0; i < G_N_ELEMENTS(arrays); i++)
        if (*arrays[i] != NULL)
            g_array_unref(*arrays[i]);
    g_strfreev(p->areas);
}

static gboolean wants(const Plan *p, const char *area)
{
    return g_strv_contains((const char *const *)p->areas, area);
}

static gboolean fail(GError **error, const char *option, GError *cause)
{
    g_propagate_prefixed_error(error, cause, "--%s: ", option);
    return FALSE;
}

static gboolean build_plan(const Options *o, Plan *p, GError **error)
{
    GError *e = NULL;
    if (o->iters < 1 || o->warmup < 0 || o->min_iters < 1 || o->seq < 0 || o->device < 0 ||
        o->gpus < 0 || !(o->max_case_seconds > 0.0)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "--iters, --min-iters and --max-case-seconds must be positive, --warmup, "
                    "--seq, --device and --gpus not negative");
        return FALSE;
    }
    p->model = o->model != NULL ? ssim_model_load(o->model, error) : ssim_model_default();
    if (p->model == NULL)
        return FALSE;
    if (o->seq > 0)
        p->model->seq_len = (guint)o->seq; /* the plan, the metadata and --list all see it */
    if ((p->tps = ssim_bench_parse_uint_list(o->tp, 4096, &e)) == NULL)
        return fail(error, "tp", e);
    if ((p->microbatches = ssim_bench_parse_uint_list(o->microbatch, 65536, &e)) == NULL)
        return fail(error, "microbatch", e);
    if ((p->comm_sizes = ssim_bench_parse_size_list(o->sizes, &e)) == NULL)
        return fail(error, "sizes", e);
    if ((p->copy_sizes = ssim_bench_parse_size_list(o->copy_sizes, &e)) == NULL)
        return fail(error, "copy-sizes", e);
    g_autoptr(GArray) sweep = ssim_bench_parse_size_list(o->sweep_sizes, &e);
    if (sweep == NULL)
        return fail(error, "sweep-sizes", e);
    if ((p->areas = ssim_bench_parse_name_list(o->only, area_names, &e)) == NULL)
        return fail(error, "only", e);
    static const char *const gemm_libraries[] = {"cublas", "cublaslt", NULL};
    g_auto(GStrv) lib = ssim_bench_parse_name_list(o->gemm_library, gemm_libraries, &e);
    if (lib == NULL)
        return fail(error, "gemm-library", e);
    if (g_strv_length(lib) != 1) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "--gemm-library: one of cublas, cublaslt");
        return FALSE;
    }
    p->plan.gemm_lt = strcmp(lib[0], "cublaslt") == 0;
    g_auto(GStrv) dtypes = ssim_bench_parse_name_list(o->dtype, dtype_names, &e);
    if (dtypes == NULL)
        return fail(error, "dtype", e);
    g_auto(GStrv) colls = ssim_bench_parse_name_list(o->collectives, collective_names, &e);
    if (colls == NULL)
        return fail(error, "collectives", e);

    p->dtypes = g_array_new(FALSE, FALSE, sizeof(SsimBenchDtype));
    for (guint i = 0; dtypes[i] != NULL; i++) {
        SsimBenchDtype d;
        g_assert(ssim_bench_dtype_from_name(dtypes[i], &d));
        g_array_append_val(p->dtypes, d);
    }
    p->colls = g_array_new(FALSE, FALSE, sizeof(SsimBenchColl));
    for (guint i = 0; colls[i] != NULL; i++) {
        SsimBenchColl c;
        g_assert(ssim_bench_coll_from_name(colls[i], &c));
        g_array_append_val(p->colls, c);
    }

    const guint *tps = (const guint *)(void *)p->tps->data;
    const guint *mbs = (const guint *)(void *)p->microbatches->data;
    guint nt = p->tps->len, nb = p->microbatches->len, seq = 0; /* the model's, set above */
    p->gemms = wants(p, "gemm") ? ssim_bench_gemm_shapes(p->model, tps, nt, mbs, nb, seq)
                                : g_array_new(FALSE, TRUE, sizeof(SsimBenchGemmShape));
    if (wants(p, "gemm") && o->gemm_sweep) {
        g_autoptr(GArray) sq =
            ssim_bench_gemm_sweep((const guint64 *)(void *)sweep->data, sweep->len);
        ssim_bench_gemm_shapes_merge(p->gemms, sq); /* a model shape is not timed twice */
    }
    p->attentions = ssim_bench_attention_cases(p->model, tps, nt, mbs, nb, seq);
    p->memcases = ssim_bench_memory_cases(p->model, tps, nt, mbs, nb, seq);
    if (!wants(p, "attention"))
        g_array_set_size(p->attentions, 0);
    if (!wants(p, "memory"))
        g_array_set_size(p->memcases, 0);
    if (!wants(p, "comm"))
        g_array_set_size(p->comm_sizes, 0);
    if (!wants(p, "copy"))
        g_array_set_size(p->copy_sizes, 0);

    SsimBenchPlan *plan = &p->plan;
    plan->device = o->device;
    plan->iters = (unsigned)o->iters;
    plan->warmup = (unsigned)o->warmup;
    plan->min_iters = (unsigned)MIN(o->min_iters, o->iters);
    plan->max_case_seconds = o->max_case_seconds;
    plan->flush_l2 = !o->no_l2_flush;
    plan->dtypes = (const SsimBenchDtype *)(void *)p->dtypes->data;
    plan->n_dtypes = p->dtypes->len;
    plan->gemms = (const SsimBenchGemmShape *)(void *)p->gemms->data;
    plan->n_gemms = p->gemms->len;
    plan->attentions = (const SsimBenchAttention *)(void *)p->attentions->data;
    plan->n_attentions = p->attentions->len;
    plan->memcases = (const SsimBenchMemCase *)(void *)p->memcases->data;
    plan->n_memcases = p->memcases->len;
    plan->colls = (const SsimBenchColl *)(void *)p->colls->data;
    plan->n_colls = p->colls->len;
    plan->comm_sizes = (const uint64_t *)(void *)p->comm_sizes->data;
    plan->n_comm_sizes = p->comm_sizes->len;
    plan->copy_sizes = (const uint64_t *)(void *)p->copy_sizes->data;
    plan->n_copy_sizes = p->copy_sizes->len;
    plan->n_comm_gpus = o->gpus;
    return TRUE;
}

static void print_plan(const Plan *p, FILE *f)
{
    const SsimBenchPlan *pl = &p->plan;
    fprintf(f, "model %s, seq %u, %zu dtype(s); iters %u, warmup %u\n", p->model->name,
            p->model->seq_len, pl->n_dtypes, pl->iters, pl->warmup);
    for (size_t i = 0; i < pl->n_gemms; i++) {
        const SsimBenchGemmShape *g = &pl->gemms[i];
        fprintf(f,
                "gemm %s m=%" G_GUINT64_FORMAT " n=%" G_GUINT64_FORMAT " k=%" G_GUINT64_FORMAT
                " batch=%" G_GUINT64_FORMAT " layout=%s\n",
                g->label, (guint64)g->m, (guint64)g->n, (guint64)g->k, (guint64)g->batch,
                g->layout);
    }
    for (size_t i = 0; i < pl->n_attentions; i++) {
        const SsimBenchAttention *a = &pl->attentions[i];
        fprintf(f,
                "attention fwd,bwd seq=%" G_GUINT64_FORMAT " heads=%" G_GUINT64_FORMAT
                " head_dim=%" G_GUINT64_FORMAT " batch=%" G_GUINT64_FORMAT "\n",
                (guint64)a->seq, (guint64)a->heads, (guint64)a->head_dim, (guint64)a->batch);
    }
    for (size_t i = 0; i < pl->n_memcases; i++) {
        const SsimBenchMemCase *c = &pl->memcases[i];
        fprintf(f, "memory %s rows=%" G_GUINT64_FORMAT " cols=%" G_GUINT64_FORMAT "\n",
                ssim_bench_memop_name(c->op), (guint64)c->rows, (guint64)c->cols);
    }
    for (size_t i = 0; i < pl->n_colls && pl->n_comm_sizes > 0; i++)
        fprintf(f, "comm %s: %zu sizes, %" G_GUINT64_FORMAT " B to %" G_GUINT64_FORMAT " B\n",
                ssim_bench_coll_name(pl->colls[i]), pl->n_comm_sizes, (guint64)pl->comm_sizes[0],
                (guint64)pl->comm_sizes[pl->n_comm_sizes - 1]);
    if (pl->n_copy_sizes > 0)
        fprintf(f,
                "copy d2d,p2p,h2d,d2h: %zu sizes, %" G_GUINT64_FORMAT " B to %" G_GUINT64_FORMAT
                " B\n",
                pl->n_copy_sizes, (guint64)pl->copy_sizes[0],
                (guint64)pl->copy_sizes[pl->n_copy_sizes - 1]);
}

static char *join_uints(const GArray *a)
{
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < a->len; i++)
        g_string_append_printf(s, "%s%u", i > 0 ? "," : "", g_array_index(a, guint, i));
    return g_string_free(s, FALSE);
}

/* The metadata pairs; strings are kept in `keep` (freed by the caller). */
static GPtrArray *metadata(const Plan *p, const SsimBenchDeviceInfo *info, int argc_orig,
                           char **argv_orig, GPtrArray *keep)
{
    GPtrArray *kv = g_ptr_array_new();
#define ADD(k, v)                                                                                  \
    do {                                                                                           \
        char *v_ = (v);                                                                            \
        g_ptr_array_add(keep, v_);                                                                 \
        g_ptr_array_add(kv, (gpointer)(k));                                                        \
        g_ptr_array_add(kv, v_);                                                                   \
    } while (0)
    g_autofree char *proc = NULL;
    char *driver = NULL;
    if (g_file_get_contents("/proc/driver/nvidia/version", &proc, NULL, NULL))
        driver = ssim_bench_driver_from_proc(proc);
    g_autoptr(GDateTime) now = g_date_time_new_now_utc();

    ADD("gpu", g_strdup(info->gpu));
    ADD("sm_count", g_strdup_printf("%d", info->sm_count));
    ADD("clock_mhz", g_strdup_printf("%d", info->clock_mhz));
    ADD("driver", driver != NULL ? driver : g_strdup("unknown"));
    ADD("cuda", ssim_bench_version_cuda(info->cuda_runtime));
    ADD("cublas", ssim_bench_version_mmp(info->cublas_version));
    ADD("nccl", ssim_bench_version_mmp(info->nccl_version));
    ADD("date", g_date_time_format(now, "%Y-%m-%d"));
    ADD("tool", g_strdup(TOOL_NAME " " SSIM_VERSION));
    ADD("host", g_strdup(g_get_host_name()));
    ADD("time", g_date_time_format(now, "%H:%M:%SZ"));
    ADD("cuda_driver_api", ssim_bench_version_cuda(info->cuda_driver));
    ADD("compute_capability", g_strdup_printf("%d.%d", info->cc_major, info->cc_minor));
    ADD("mem_clock_mhz", g_strdup_printf("%d", info->mem_clock_mhz));
    ADD("l2_bytes", g_strdup_printf("%d", info->l2_bytes));
    ADD("hbm_bytes", g_strdup_printf("%" G_GUINT64_FORMAT, (guint64)info->hbm_bytes));
    ADD("gpus", g_strdup_printf("%d", info->visible_gpus));
    ADD("device", g_strdup_printf("%d", p->plan.device));
    ADD("model", g_strdup(p->model->name));
    ADD("seq", g_strdup_printf("%u", p->model->seq_len));
    ADD("tp", join_uints(p->tps));
    ADD("microbatch", join_uints(p->microbatches));
    ADD("iters", g_strdup_printf("%u", p->plan.iters));
    ADD("warmup", g_strdup_printf("%u", p->plan.warmup));
    ADD("l2_flush", g_strdup(p->plan.flush_l2 ? "yes" : "no"));
    ADD("gemm_library", g_strdup(p->plan.gemm_lt ? "cublasLt" : "cublas"));
    ADD("attention_impl", g_strdup("gemm-softmax"));
    ADD("nccl_algo", g_strdup(g_getenv("NCCL_ALGO") != NULL ? g_getenv("NCCL_ALGO") : "auto"));
    ADD("nccl_proto", g_strdup(g_getenv("NCCL_PROTO") != NULL ? g_getenv("NCCL_PROTO") : "auto"));
    GString *cmd = g_string_new(NULL);
    for (int i = 0; i < argc_orig; i++) {
        g_autofree char *q = g_shell_quote(argv_orig[i]);
        g_string_append_printf(cmd, "%s%s", i > 0 ? " " : "", q);
    }
    ADD("command", g_string_free(cmd, FALSE));
#undef ADD
    g_ptr_array_add(kv, NULL);
    return kv;
}

/*
 * Opens an output.  A file is written under a temporary name beside it (`*tmp`, caller frees)
 * and renamed over `path` by close_out() once complete, so a run that fails or is killed never
 * leaves a truncated CSV under the real name (a killed run leaves its rows in PATH.XXXXXX).
 * "-" or NULL is stdout (`*tmp` NULL).
 */
static FILE *open_out(const char *path, char **tmp, GError **error)
{
    *tmp = NULL;
    if (path == NULL || strcmp(path, "-") == 0)
        return stdout;
    char *name = g_strdup_printf("%s.XXXXXX", path);
    int fd = g_mkstemp(name);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f == NULL) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO, "%s: %s", path,
                    g_strerror(errno));
        if (fd >= 0) {
            close(fd);
            g_unlink(name);
        }
        g_free(name);
        return NULL;
    }
    *tmp = name;
    return f;
}

/* Closes an output from open_out(): renames the temporary file over `path` when `ok` and the
 * close succeeds, removes it otherwise.  Returns FALSE when the output is not complete. */
static gboolean close_out(FILE *f, const char *path, char *tmp, gboolean ok)
{
    if (f == stdout)
        return ok;
    ok = fclose(f) == 0 && ok;
    if (ok && g_rename(tmp, path) != 0) {
        fprintf(stderr, TOOL_NAME ": %s: %s\n", path, g_strerror(errno));
        ok = FALSE;
    }
    if (!ok)
        g_unlink(tmp);
    g_free(tmp);
    return ok;
}

/* Opens the outputs, writes the metadata and runs every module asked for; returns the exit
 * status. */
static int measure(const Options *o, Plan *p, int argc_orig, char **argv_orig)
{
    g_autoptr(GError) error = NULL;
    char why[512] = "";
    int count = ssim_bench_device_count(why, sizeof why);
    if (count <= 0) {
        fprintf(stderr, TOOL_NAME ": no CUDA device found (%s)\n", why);
        return 1;
    }
    if (p->plan.device >= count) {
        fprintf(stderr, TOOL_NAME ": --device %d: only %d CUDA device(s) visible\n", p->plan.device,
                count);
        return 1;
    }
    if (p->plan.n_comm_gpus > count) {
        fprintf(stderr, TOOL_NAME ": --gpus %d: only %d CUDA device(s) visible\n",
                p->plan.n_comm_gpus, count);
        return 1;
    }
    SsimBenchDeviceInfo info;
    if (ssim_bench_device_info(p->plan.device, &info, why, sizeof why) != 0) {
        fprintf(stderr, TOOL_NAME ": %s\n", why);
        return 1;
    }
    char *out_tmp = NULL, *raw_tmp = NULL;
    FILE *out = open_out(o->out, &out_tmp, &error);
    if (out == NULL) {
        fprintf(stderr, TOOL_NAME ": %s\n", error->message);
        return 1;
    }
    FILE *raw = NULL;
    if (o->raw != NULL && (raw = open_out(o->raw, &raw_tmp, &error)) == NULL) {
        fprintf(stderr, TOOL_NAME ": %s\n", error->message);
        close_out(out, o->out, out_tmp, FALSE);
        return 1;
    }
    if (!o->quiet)
        fprintf(stderr, TOOL_NAME ": %s (%d SMs, %d MHz), %d GPU(s) visible\n", info.gpu,
                info.sm_count, info.clock_mhz, count);

    g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GPtrArray) kv = metadata(p, &info, argc_orig, argv_orig, keep);
    g_autoptr(SsimBenchRun) run = ssim_bench_run_new(&p->plan, out, raw, o->quiet ? NULL : stderr);
    ssim_bench_run_begin(run, (const char *const *)kv->pdata);

    int failed = 0;
    if (p->plan.n_gemms > 0)
        failed |= ssim_bench_gemm(run) != 0;
    if (p->plan.n_attentions > 0)
        failed |= ssim_bench_attention(run) != 0;
    if (p->plan.n_memcases > 0)
        failed |= ssim_bench_memops(run) != 0;
    if (p->plan.n_copy_sizes > 0)
        failed |= ssim_bench_copy(run) != 0;
    if (p->plan.n_comm_sizes > 0 && p->plan.n_colls > 0)
        failed |= ssim_bench_comm(run) != 0;
    if (!ssim_bench_run_ok(run)) {
        fprintf(stderr, TOOL_NAME ": writing the output failed\n");
        failed = 1;
    }
    if (!o->quiet)
        fprintf(stderr, TOOL_NAME ": %u rows written to %s\n", ssim_bench_run_rows(run),
                o->out != NULL ? o->out : "standard output");
    /* A case that failed is reported and missing from the rows, but the rows written are
     * whole: the file is kept unless writing itself failed. */
    gboolean written = ssim_bench_run_ok(run);
    if (!close_out(out, o->out, out_tmp, written))
        failed = 1;
    if (raw != NULL && !close_out(raw, o->raw, raw_tmp, written))
        failed = 1;
    return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    Options o = {.seq = 0, .iters = 50, .warmup = 5, .min_iters = 5, .max_case_seconds = 2.0};
    g_auto(GStrv) argv_orig = g_strdupv(argv);
    int argc_orig = argc;
    int status = 1;
    Plan p = {0};
    GError *error = NULL;

    if (!parse_options(&o, &argc, &argv))
        goto done;
    if (o.version) {
        printf(TOOL_NAME " %s\n", SSIM_VERSION);
        status = 0;
        goto done;
    }
#define DEFAULT(field, value)                                                                      \
    if (o.field == NULL)                                                                           \
    o.field = g_strdup(value)
    DEFAULT(tp, "1,2,4,8");
    DEFAULT(microbatch, "1,2,4");
    DEFAULT(dtype, "bf16");
    DEFAULT(sizes, "8:8Gi");
    DEFAULT(copy_sizes, "64Ki:4Gi:4");
    DEFAULT(sweep_sizes, "256:16384");
    DEFAULT(collectives, "allreduce,allgather,reducescatter,alltoall,broadcast,sendrecv");
    DEFAULT(only, "gemm,attention,memory,comm,copy");
    DEFAULT(gemm_library, "cublas");
#undef DEFAULT
    if (!build_plan(&o, &p, &error)) {
        fprintf(stderr, TOOL_NAME ": %s\n", error->message);
        g_error_free(error);
        goto done;
    }
    if (o.list) {
        print_plan(&p, stdout);
        status = 0;
        goto done;
    }

    status = measure(&o, &p, argc_orig, argv_orig);

done:
    plan_clear(&p);
    options_clear(&o);
    return status;
}
