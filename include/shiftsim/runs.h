/*
 * Measured training runs: what a job was (model, cluster, split) and how long its iteration took,
 * as a runs table that `shiftsim validate` and `shiftsim calibrate` compare the simulator with.
 *
 * A runs file (`# shiftsim-runs v2`, docs/validation.md; v1 is still read) is a CSV with one
 * measured run a row: the configuration (model by name or by shape, cluster, nodes, dp, tp, pp,
 * virtual stages, microbatch, global batch, schedule, recompute, sequence parallelism, ZeRO
 * stage, cross-node tensor parallelism), the measurement (iteration time in ms, or achieved
 * hardware TFLOP/s per GPU as Megatron-LM reports it) and the source of the row.  The metadata key
 * `use` says what a file is for: `fit` (rows a calibration may fit) or `check` (rows only ever used
 * to check a prediction; `shiftsim calibrate` refuses to fit them unless forced).  It is read with
 * libcsv in strict mode and every error reads `file:line:column: field: what is wrong`.
 *
 * A row only describes a run; loading its model and cluster, turning TFLOP/s into an iteration
 * time and simulating it is the run set's work (include/shiftsim/runset.h).  vTrain's measured
 * table converts to runs with ssim_runs_from_vtrain() (include/shiftsim/vtrain.h).
 *
 * Ownership: ssim_runs_new() and ssim_runs_load*() return runs the caller frees with
 * ssim_runs_free(); rows returned by ssim_runs_get() and the strings of ssim_runs_path() and
 * ssim_runs_get_meta() are borrowed from the runs.
 */
#pragma once

#include <shiftsim/model.h>
#include <shiftsim/parallel.h>

G_BEGIN_DECLS

/* The version written (v2); v1 files (no zero, cross_node_tp columns) are still read. */
#define SSIM_RUNS_VERSION_LINE "# shiftsim-runs v2"
#define SSIM_RUNS_HEADER                                                                           \
    "model,layers,hidden,heads,ffn,vocab,seq_len,dtype,cluster,nodes,dp,tp,pp,vstages,"            \
    "microbatch,global_batch,schedule,recompute,seq_parallel,zero,cross_node_tp,iteration_ms,"     \
    "tflops_per_gpu,source"
#define SSIM_RUNS_N_COLUMNS 24
/* v2 may add a column `stage_layers` after cross_node_tp: the layers of each pipeline stage,
 * separated by '/' ("6/6/6/5"), empty for an even split.  The writer uses this header when some
 * row has an uneven split. */
#define SSIM_RUNS_HEADER_STAGES                                                                    \
    "model,layers,hidden,heads,ffn,vocab,seq_len,dtype,cluster,nodes,dp,tp,pp,vstages,"            \
    "microbatch,global_batch,schedule,recompute,seq_parallel,zero,cross_node_tp,stage_layers,"     \
    "iteration_ms,tflops_per_gpu,source"
#define SSIM_RUNS_N_COLUMNS_STAGES 25
/* v2 may also add a column `options` after cross_node_tp (and stage_layers): settings that have
 * no column of their own, as a split string (ssim_parallel_parse(): "bucket=25MiB,tp_overlap=off,
 * step_costs=+grad_accum"), empty for none.  The writer uses these headers when some row has
 * such a setting. */
#define SSIM_RUNS_HEADER_OPTIONS                                                                   \
    "model,layers,hidden,heads,ffn,vocab,seq_len,dtype,cluster,nodes,dp,tp,pp,vstages,"            \
    "microbatch,global_batch,schedule,recompute,seq_parallel,zero,cross_node_tp,options,"          \
    "iteration_ms,tflops_per_gpu,source"
#define SSIM_RUNS_HEADER_STAGES_OPTIONS                                                            \
    "model,layers,hidden,heads,ffn,vocab,seq_len,dtype,cluster,nodes,dp,tp,pp,vstages,"            \
    "microbatch,global_batch,schedule,recompute,seq_parallel,zero,cross_node_tp,stage_layers,"     \
    "options,iteration_ms,tflops_per_gpu,source"
#define SSIM_RUNS_VERSION_LINE_V1 "# shiftsim-runs v1"
#define SSIM_RUNS_HEADER_V1                                                                        \
    "model,layers,hidden,heads,ffn,vocab,seq_len,dtype,cluster,nodes,dp,tp,pp,vstages,"            \
    "microbatch,global_batch,schedule,recompute,seq_parallel,iteration_ms,tflops_per_gpu,source"
#define SSIM_RUNS_N_COLUMNS_V1 22
#define SSIM_RUN_TEXT_MAX      128

/* One measured run.  Plain value (inline strings) so it copies by assignment. */
typedef struct {
    char model[SSIM_RUN_TEXT_MAX]; /* a model name/path, or a label when the shape is given */
    gboolean has_shape;            /* the shape columns are filled: a GPT of that shape */
    gboolean has_dtype;            /* the dtype cell is filled (it overrides a named model's) */
    guint layers, hidden, heads, ffn, vocab, seq_len;
    /* The GPT of a row given by shape: its positions (default learned) and a LayerNorm after
     * the embedding (default off), the `options` cell's position= and embedding_norm=. */
    SsimPosition position;
    gboolean embedding_norm;
    SsimDtype dtype;
    char cluster[SSIM_RUN_TEXT_MAX]; /* cluster name or path */
    guint nodes;
    SsimParallel par;
    double iteration_ms;   /* measured; 0 when the row gives tflops_per_gpu only */
    double tflops_per_gpu; /* measured hardware TFLOP/s per GPU; 0 when not given */
    char source[2 * SSIM_RUN_TEXT_MAX];
    guint line;       /* line in its file */
    const char *path; /* its file: a string the table that holds the row owns (set by
                       * ssim_runs_add(): the run's own path when it has one, else the
                       * table's), so a row copied out of a table is valid while that lives */
} SsimMeasuredRun;

typedef struct SsimRuns SsimRuns;

/* An empty table; `path` (NULL: "<runs>") names it in messages.  A table may hold rows of
 * several files (`shiftsim validate --runs A --runs B`): each row keeps its own path. */
SsimRuns *ssim_runs_new(const char *path);
void ssim_runs_free(SsimRuns *runs);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SsimRuns, ssim_runs_free)

/* Reads a runs file.  NULL with `error` set (SSIM_CONFIG_ERROR, "file:line:column: field: ...")
 * on the first malformed row. */
SsimRuns *ssim_runs_load(const char *path, GError **error);
SsimRuns *ssim_runs_load_data(const char *text, gssize length, const char *path, GError **error);
/* Appends a copy of `run`, its path interned in `runs` (NULL: the table's path). */
void ssim_runs_add(SsimRuns *runs, const SsimMeasuredRun *run);
guint ssim_runs_n(const SsimRuns *runs);
const SsimMeasuredRun *ssim_runs_get(const SsimRuns *runs, guint i);
const char *ssim_runs_path(const SsimRuns *runs);
/* `# key = value` metadata lines (kept in order; set replaces). */
void ssim_runs_set_meta(SsimRuns *runs, const char *key, const char *value);
const char *ssim_runs_get_meta(const SsimRuns *runs, const char *key);
/* TRUE when the file says `# use = check`: rows kept to check predictions, never to fit. */
gboolean ssim_runs_check_only(const SsimRuns *runs);
/* The text form: version line, metadata, header, rows; load(write(r)) gives r back. */
GString *ssim_runs_write(const SsimRuns *runs);
/* A run with the defaults of an empty cell: dtype bf16, nodes 1, ssim_parallel_init(). */
void ssim_measured_run_init(SsimMeasuredRun *run);

G_END_DECLS
