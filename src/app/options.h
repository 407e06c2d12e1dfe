/*
 * The options several verbs take, each declared once (src/app/options.c): its long and short
 * name, argument type and name, where its value is stored, how the value is checked and applied,
 * and the error that names it.  Options come in groups, each with the struct that stores what was
 * parsed:
 *
 *   SsimCliJob     what runs where and how it is split: --model, --cluster, --nodes, --split and
 *                  the per-field options (--dp ... --order)
 *   SsimCliPlace   the placement pass and what is compared under it: --placement, --shift,
 *                  --commshift-grads, --lhs, --comm-repeat
 *   SsimCliOutput  what is written where: --format, --output
 *   SsimCliLimits  the budgets of a simulation: --max-ops, --max-events, --max-memory
 *
 * A verb lists its options in one GOptionEntry table, in the order its --help shows them: a
 * shared option is a ssim_cli_*_entry() row, given the verb's own help text where the verb
 * describes the option its own way (compare's --tp has a default of its own) or NULL for the
 * shared text; the verb's other options are literal rows.  ssim_cli_add_job(),
 * ssim_cli_add_place() and ssim_cli_add_limits() add a whole group with the shared texts, for a
 * verb that takes all of it.  Everything goes to the main group, so --help lists it all (a
 * GOptionGroup of its own would be listed under --help-all only).
 *
 * A verb adds its table with ssim_cli_add_entries(), which also adds the Megatron-LM names of the
 * options it takes (--tensor-model-parallel-size for --tp, ...; see below).
 *
 * After the parse, the check, load and apply functions turn the text into values.  Each returns
 * SSIM_EXIT_OK, or prints one message naming the option ("shiftsim VERB: --tp: must be a positive
 * integer (try ...)") and returns the exit status (SSIM_EXIT_USAGE, or SSIM_EXIT_RUNTIME for a
 * model or cluster file that does not load).
 *
 * Ownership: the storage is the caller's and must outlive the parse; GOption stores strings the
 * caller frees, which the groups' _clear functions (and g_auto) do.
 */
#pragma once

#include <glib.h>
#include <shiftsim/cluster.h>
#include <shiftsim/model.h>
#include <shiftsim/parallel.h>
#include <shiftsim/place.h>
#include <shiftsim/report.h>

G_BEGIN_DECLS

/* Every shared option, by group (the comment names the group's struct). */
typedef enum {
    /* SsimCliJob */
    SSIM_OPT_MODEL,
    SSIM_OPT_CLUSTER,
    SSIM_OPT_NODES,
    SSIM_OPT_SPLIT,
    SSIM_OPT_DP,
    SSIM_OPT_TP,
    SSIM_OPT_PP,
    SSIM_OPT_CP,
    SSIM_OPT_VSTAGES,
    SSIM_OPT_MICROBATCH,
    SSIM_OPT_GLOBAL_BATCH,
    SSIM_OPT_SCHEDULE,
    SSIM_OPT_RECOMPUTE,
    SSIM_OPT_RECOMPUTE_LAYERS,
    SSIM_OPT_SEQ_PARALLEL,
    SSIM_OPT_CROSS_NODE_TP,
    SSIM_OPT_ZERO,
    SSIM_OPT_BUCKET,
    SSIM_OPT_TP_COMM,
    SSIM_OPT_TP_OVERLAP,
    SSIM_OPT_ATTENTION,
    SSIM_OPT_TRANSFORMER_IMPL,
    SSIM_OPT_RMSNORM,
    SSIM_OPT_FP8,
    SSIM_OPT_FP8_RECIPE,
    SSIM_OPT_TP_COMM_OVERLAP,
    SSIM_OPT_CROSS_ENTROPY,
    SSIM_OPT_LAUNCH_BLOCKING,
    SSIM_OPT_DEFER_WGRAD,
    SSIM_OPT_OVERLAP_PARAM_GATHER,
    SSIM_OPT_FSDP_ROOT,
    SSIM_OPT_ORDER,
    SSIM_OPT_STAGE_LAYERS,
    SSIM_OPT_FIRST_STAGE_LAYERS,
    SSIM_OPT_LAST_STAGE_LAYERS,
    SSIM_OPT_EMBEDDING_IN_SPLIT,
    SSIM_OPT_LOSS_IN_SPLIT,
    SSIM_OPT_STEP_COSTS,
    SSIM_OPT_SEQ_LENGTH,
    SSIM_OPT_DTYPE,
    /* SsimCliPlace */
    SSIM_OPT_PLACEMENT,
    SSIM_OPT_SHIFT,
    SSIM_OPT_COMMSHIFT_GRADS,
    SSIM_OPT_LHS,
    SSIM_OPT_COMM_REPEAT,
    /* SsimCliOutput */
    SSIM_OPT_FORMAT,
    SSIM_OPT_OUTPUT,
    /* SsimCliLimits */
    SSIM_OPT_MAX_OPS,
    SSIM_OPT_MAX_EVENTS,
    SSIM_OPT_MAX_MEMORY,
    SSIM_OPT_N
} SsimCliOption;

/* `entry` with another argument name in --help (e.g. "NAME" where the shared one is
 * "NAME|PATH"). */
GOptionEntry ssim_cli_entry_arg(GOptionEntry entry, const char *arg_description);

/* --- The job: model, cluster, nodes and the split. ---------------------------------------- */

/*
 * "Not given" for an integer option: a value GOption stores only when the user types
 * -2147483648, which is refused like any other value below 1.  (-1 is a value like any other:
 * "--tp -1" is an error naming --tp, not a silent default.)
 */
#define SSIM_CLI_UNSET G_MININT

typedef struct {
    char *model;   /* a bundled name or an INI path; NULL: the embedded GPT-J 6B */
    char *cluster; /* likewise; NULL: the embedded DGX H200 */
    gint nodes;    /* SSIM_CLI_UNSET: not given */
    char *split;   /* key=value pairs, applied before the per-field options */
    gint dp, tp, pp, cp, vstages, microbatch, global_batch; /* SSIM_CLI_UNSET: not given */
    char *schedule, *recompute, *zero, *bucket, *tp_comm, *tp_overlap, *attention, *order;
    char *transformer_impl;
    char *fp8;
    char *fp8_recipe; /* --fp8-recipe: delayed (the default), tensorwise, mxfp8, blockwise */
    char *cross_entropy;
    char *defer_wgrad; /* --defer-embedding-wgrad: off, all or a count */
    char *rmsnorm;
    char *recompute_layers;
    gboolean seq_parallel;
    gboolean cross_node_tp;          /* --cross-node-tp: tensor-parallel groups may span nodes */
    gboolean tp_comm_overlap;        /* --tp-comm-overlap: Transformer Engine's TP overlap */
    gboolean launch_blocking;        /* --launch-blocking: CUDA_LAUNCH_BLOCKING=1 */
    gboolean overlap_param_gather;   /* --overlap-param-gather: Megatron-LM's flag */
    gboolean fsdp_root;              /* --fsdp-root: FSDP2's root unit, as torchtitan wraps */
    char *stage_layers, *step_costs; /* ssim_parallel_set()'s stage_layers and step_costs */
    /* ssim_parallel_set()'s first_stage_layers, last_stage_layers, embedding_in_split and
     * loss_in_split (counted into stage_layers by ssim_cli_job_apply_model()) */
    char *first_stage_layers, *last_stage_layers;
    gboolean embedding_in_split, loss_in_split;
    gint seq_length; /* overrides the model's seq_len; SSIM_CLI_UNSET: not given */
    char *dtype;     /* overrides the model's dtype */
    /* Megatron-LM's options that are not another name of one of ours (SsimCliAlias): */
    gboolean distributed_optimizer; /* --use-distributed-optimizer: --zero 1 */
    gboolean overlap_grad_reduce;   /* --overlap-grad-reduce: Megatron-LM's default bucket */
    gboolean no_async_tp;           /* --no-async-tensor-model-parallel-allreduce: tp_overlap off */
    gboolean use_flash_attn;        /* --use-flash-attn: attention flash */
    gint layers_per_vstage; /* --num-layers-per-virtual-pipeline-stage; SSIM_CLI_UNSET: not given */
} SsimCliJob;

#define SSIM_CLI_JOB_INIT                                                                          \
    {                                                                                              \
        .nodes = SSIM_CLI_UNSET, .dp = SSIM_CLI_UNSET, .tp = SSIM_CLI_UNSET, .pp = SSIM_CLI_UNSET, \
        .cp = SSIM_CLI_UNSET, .vstages = SSIM_CLI_UNSET, .microbatch = SSIM_CLI_UNSET,             \
        .global_batch = SSIM_CLI_UNSET, .seq_length = SSIM_CLI_UNSET,                              \
        .layers_per_vstage = SSIM_CLI_UNSET                                                        \
    }

void ssim_cli_job_clear(SsimCliJob *job);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(SsimCliJob, ssim_cli_job_clear)

/* The entry of job option `opt` (SSIM_OPT_MODEL ... SSIM_OPT_DTYPE) storing into `job`, with
 * `help` (NULL: the shared text). */
GOptionEntry ssim_cli_job_entry(SsimCliJob *job, SsimCliOption opt, const char *help);
/* Adds every job option, in the order of SsimCliOption, with the shared texts. */
void ssim_cli_add_job(GOptionContext *context, SsimCliJob *job);

/* Whether integer option `value` was given (it is not SSIM_CLI_UNSET). */
#define SSIM_CLI_GIVEN(value) ((value) != SSIM_CLI_UNSET)

/* The counts that were given (--dp, --tp, --pp, --vstages, --microbatch, --global-batch, in this
 * order) must be positive: a usage error names the first that is not, and its value. */
int ssim_cli_job_check_counts(const char *verb, const SsimCliJob *job);
/* --nodes, when given, must be positive. */
int ssim_cli_job_check_nodes(const char *verb, const SsimCliJob *job);
/* A usage error for integer option `name` unless `value` (given) is at least `min`. */
int ssim_cli_check_at_least(const char *verb, const char *name, gint value, gint min);
/* --model and --cluster given as a relative path that is nothing here but a bundled file
 * ("models/clusters/dgx-a100.ini" outside the repository): that file, as
 * ssim_cli_resolve_input() finds it; a name (no '/', no .ini or .json) is left to the loaders. */
void ssim_cli_job_resolve(const char *verb, SsimCliJob *job);
/* Applies --seq-length and --dtype (when given) to `model`: a usage error for a value that is
 * not one, or that the model's shape check refuses. */
int ssim_cli_job_override_model(const char *verb, const SsimCliJob *job, SsimModel *model);
/*
 * Loads --model and --cluster (the embedded defaults when not given; a file that does not load is
 * a runtime error) and applies --nodes to the cluster (a usage error when not positive, or when
 * that many nodes exceed SSIM_MAX_GPUS GPUs).  On success *model and *cluster are the caller's;
 * on failure they hold what was loaded so far (NULL or the caller's to free).
 */
int ssim_cli_job_load(const char *verb, const SsimCliJob *job, SsimModel **model,
                      SsimCluster **cluster);
/*
 * Applies the split options to `par`, which holds the verb's starting split: --split first, then
 * --tp and --pp, then --dp (when neither --dp nor --split gives it, dp takes the GPUs of `world`
 * that tp x pp leave, if they divide it), --vstages, --microbatch, the field options
 * (ssim_cli_job_apply_fields) and --global-batch (when neither it nor --split gives it:
 * ssim_parallel_default_global_batch(world, dp, microbatch): 4 sequences per GPU whatever the
 * split, so splits compared at their defaults train on the same batch).
 */
int ssim_cli_job_apply(const char *verb, const SsimCliJob *job, SsimParallel *par, guint world);
/* Applies only the field options that were given, in this order: --schedule, --recompute,
 * --zero, --bucket, --tp-comm, --tp-overlap, --attention, --transformer-impl, --order,
 * --stage-layers, --step-costs, --seq-parallel, --cross-node-tp. */
int ssim_cli_job_apply_fields(const char *verb, const SsimCliJob *job, SsimParallel *par);
/* Whether --schedule, or a "schedule" key in --split, was given; likewise the recompute mode (the
 * split's fields are those its parser set, ssim_parallel_parse_fields(), never a text search). */
gboolean ssim_cli_job_has_schedule(const SsimCliJob *job);
gboolean ssim_cli_job_has_recompute(const SsimCliJob *job);
/* Whether --bucket, or a "bucket" key in --split, was given (or --overlap-grad-reduce, which
 * ssim_cli_job_apply_model() turns into a bucket). */
gboolean ssim_cli_job_has_bucket(const SsimCliJob *job);
/*
 * The Megatron-LM options whose value depends on the model, after ssim_cli_job_apply():
 * --num-layers-per-virtual-pipeline-stage N sets the virtual stages to layers / (pp N) (a usage
 * error unless that divides, or when --vstages says otherwise) and, without --schedule, the
 * interleaved schedule, as Megatron-LM does; a chunk list or layout string of pp k entries
 * (--stage-layers, --pipeline-model-parallel-layout) under a given pp, no virtual stages given,
 * sets them to k and, without --schedule, the interleaved schedule (ssim_cli_job_has_schedule()
 * then says a schedule was given); --overlap-grad-reduce without --bucket sets
 * Megatron-LM's default bucket (ssim_placement_default_bucket() of megatron: max(40M, 1M dp)
 * parameters of the model's dtype).
 */
int ssim_cli_job_apply_model(const char *verb, const SsimCliJob *job, const SsimModel *model,
                             SsimParallel *par);

/*
 * Short names an option had before issue 20 gave each letter one meaning across verbs (-r is
 * --recompute, -p the placement, -t --timeline, -k --top): `entries` (NULL-terminated, e.g.
 * {"runs", 'r', 0, G_OPTION_ARG_FILENAME, &runs}) keep parsing in the verb, hidden from --help.
 * Only for a letter the verb has no other use for, so the old command line cannot mean two things.
 */
void ssim_cli_add_old_short_names(GOptionContext *context, const GOptionEntry *entries);

/* --- Megatron-LM's names. ----------------------------------------------------------------- */

/*
 * Megatron-LM's long option names, accepted as aliases of ours where a verb takes the option
 * they alias (docs/simulate.md has the table).  Each is declared once in options.c next to the
 * option it aliases, as one of two kinds:
 *   another name  (--tensor-model-parallel-size = --tp): the same storage and argument as the
 *                 verb's own entry of that name, whatever it is (sweep's --tp takes a list, so
 *                 its alias does too);
 *   a flag of its own  (--use-distributed-optimizer = --zero 1): stored in SsimCliJob and
 *                 offered only where the verb's entry is the shared one of that job.
 * They are hidden from the option list; one paragraph at the end of --help lists those the verb
 * takes.
 */
/* Megatron-LM's name of shared option `opt`, without the dashes, or NULL. */
const char *ssim_cli_megatron_name(SsimCliOption opt);
/*
 * Adds `entries` (NULL-terminated) to the main group, as g_option_context_add_main_entries()
 * does, plus the Megatron-LM aliases of those entries (hidden), and appends the --help paragraph
 * naming them to the context's description.  `job` (or NULL) is the SsimCliJob the verb's shared
 * job entries store into: flag aliases are offered only for its entries.
 */
void ssim_cli_add_entries(GOptionContext *context, const GOptionEntry *entries, SsimCliJob *job);

/* --- The placement pass. ------------------------------------------------------------------ */

typedef struct {
    char *placement;       /* a policy ("alpa", "alpa+early-dp"); NULL: not given */
    char *shift;           /* a list of extensions, or none; NULL: not given */
    char *commshift_grads; /* the gradients commshift moves; NULL: not given (all) */
    gboolean lhs;          /* XLA's latency-hiding scheduler */
    gint comm_repeat;      /* SSIM_CLI_UNSET: not given (once) */
} SsimCliPlace;

#define SSIM_CLI_PLACE_INIT                                                                        \
    {                                                                                              \
        .comm_repeat = SSIM_CLI_UNSET                                                              \
    }

void ssim_cli_place_clear(SsimCliPlace *place);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(SsimCliPlace, ssim_cli_place_clear)

GOptionEntry ssim_cli_place_entry(SsimCliPlace *place, SsimCliOption opt, const char *help);
void ssim_cli_add_place(GOptionContext *context, SsimCliPlace *place);
/*
 * Sets placement->kind (and its extensions) from --placement, placement->shifts from --shift (added
 * to the placement's own), grads from --commshift-grads and lhs from --lhs, each when given; prints
 * the note of an old alias ("baseline") on stderr.  A usage error names the option.
 */
int ssim_cli_place_parse(const char *verb, const SsimCliPlace *place, SsimPlacement *placement);
/* --comm-repeat as a count (1 when not given); a usage error outside 1 .. SSIM_COMM_REPEAT_MAX. */
int ssim_cli_place_comm_repeat(const char *verb, const SsimCliPlace *place, guint *repeat);

/* --- The output. -------------------------------------------------------------------------- */

typedef struct {
    char *format; /* table, csv or json; NULL: table */
    char *output; /* a file; NULL: the verb's default (stdout, or nothing) */
} SsimCliOutput;

void ssim_cli_output_clear(SsimCliOutput *output);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(SsimCliOutput, ssim_cli_output_clear)

GOptionEntry ssim_cli_output_entry(SsimCliOutput *output, SsimCliOption opt, const char *help);
/* --format as a SsimFormat (SSIM_FORMAT_TABLE when not given). */
int ssim_cli_output_format(const char *verb, const SsimCliOutput *output, SsimFormat *format);

/* --- The limits of a simulation (include/shiftsim/budget.h). ------------------------------ */

/*
 * --max-ops N: the op budget of one lowering (0, the default, means SSIM_MAX_OPS_DEFAULT);
 * --max-events N: the event budget of one replay (0, the default, means none);
 * --max-memory BYTES: host memory (budget.h; a byte size, ssim_bytes_parse: 16GiB, 12G; the
 * default 75% of this machine's memory), parsed by ssim_cli_check_limits into `max_memory` (0:
 * the default).  Copy them into each SsimSimConfig (or sweep spec, or run set).
 */
typedef struct {
    gint64 max_ops;
    gint64 max_events;
    char *max_memory_text;
    guint64 max_memory;
} SsimCliLimits;

void ssim_cli_limits_clear(SsimCliLimits *limits);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(SsimCliLimits, ssim_cli_limits_clear)

GOptionEntry ssim_cli_limits_entry(SsimCliLimits *limits, SsimCliOption opt, const char *help);
/* Zeroes `limits` and adds both options with the shared texts. */
void ssim_cli_add_limits(GOptionContext *context, SsimCliLimits *limits);
/* Neither count may be negative; --max-memory must be a positive byte size. */
int ssim_cli_check_limits(const char *verb, SsimCliLimits *limits);
/*
 * The parse of a verb that simulates and takes no positional argument: adds the limits, parses
 * (ssim_cli_parse), refuses a leftover argument and checks the limits.
 */
int ssim_cli_parse_limited(GOptionContext *context, int *argc, char ***argv, const char *verb,
                           SsimCliLimits *limits);

G_END_DECLS
