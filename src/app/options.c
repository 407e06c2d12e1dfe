/*
 * The shared options of the verbs (src/app/options.h): one table with a row per option, and the
 * functions that check and apply what was parsed.
 *
 * A row holds everything GOption needs but the address of the storage, which is the caller's
 * group struct plus the row's offset, and the help text, which a verb may replace by its own (the
 * verbs have described some options each their own way, and their --help must not change).  The
 * shared texts are those of `shiftsim simulate`, the verb that takes the most options, and
 * compare's for --format and --output.  Error messages name an option by its row, so a message and
 * the option it is about cannot disagree.  A row may carry Megatron-LM's name for the option
 * (MEGATRON: another name of it; MEGATRON_OWN: a flag of its own in SsimCliJob, applied by
 * ssim_cli_job_apply_fields or ssim_cli_job_apply_model); ssim_cli_add_entries() adds them hidden
 * beside the verb's entries and lists them in one paragraph of --help.
 */
#include "src/app/options.h"

#include "src/app/verbs.h"
#include <shiftsim/data.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef enum { JOB, PLACE, OUTPUT, LIMITS } Group;

typedef struct {
    const char *name;
    char short_name;
    GOptionArg arg;
    Group group;
    gsize offset; /* of the storage in the group's struct */
    const char *arg_description;
    const char *help; /* the shared text */
    /* Megatron-LM's name for it (options.h), what that name means in --help, and for a flag of
     * its own (alias_own) its argument and storage in SsimCliJob. */
    const char *alias, *alias_means;
    gboolean alias_own;
    GOptionArg alias_arg;
    gsize alias_offset;
} Option;

/* Megatron-LM's name for the row's option: another name of it, or a flag of its own. */
#define MEGATRON(name, means) .alias = name, .alias_means = means
#define MEGATRON_OWN(name, means, arg, field)                                                      \
    MEGATRON(name, means), .alias_own = TRUE, .alias_arg = arg,                                    \
                           .alias_offset = offsetof(SsimCliJob, field)

/* A row's group, and where in the group's struct the option's value goes. */
#define IN(group, type, field) group, offsetof(type, field)

static const Option options[SSIM_OPT_N] = {
    [SSIM_OPT_MODEL] = {"model", 'm', G_OPTION_ARG_STRING, IN(JOB, SsimCliJob, model), "NAME|PATH",
                        "Model: a bundled name (gpt-j-6b, gpt-3-175b, llama-2-70b, ...: "
                        "models/NAME.ini; hf/NAME: models/hf/NAME.json), an INI path or a "
                        "Hugging Face config.json (default: the embedded GPT-J 6B)"},
    [SSIM_OPT_CLUSTER] = {"cluster", 'c', G_OPTION_ARG_STRING, IN(JOB, SsimCliJob, cluster),
                          "NAME|PATH",
                          "Cluster: dgx-a100, dgx-h100, dgx-h200 (models/clusters/NAME.ini) or an "
                          "INI path (default: the embedded DGX H200, 4 nodes)"},
    [SSIM_OPT_NODES] = {"nodes", 'n', G_OPTION_ARG_INT, IN(JOB, SsimCliJob, nodes), "N",
                        "Number of nodes (overrides the cluster file)"},
    [SSIM_OPT_SPLIT] = {"split", 0, G_OPTION_ARG_STRING, IN(JOB, SsimCliJob, split), "SPEC",
                        "Whole configuration as key=value pairs, e.g. dp=2,tp=4,pp=2,mb=1,gbs=64 "
                        "(applied before the options below)"},
    [SSIM_OPT_DP] = {"dp", 0, G_OPTION_ARG_INT, IN(JOB, SsimCliJob, dp), "N",
                     "Data-parallel replicas (default: GPUs / (tp pp))"},
    [SSIM_OPT_TP] = {"tp", 0, G_OPTION_ARG_INT, IN(JOB, SsimCliJob, tp), "N",
                     "Tensor-parallel ranks per stage (inside one node unless --cross-node-tp)",
                     MEGATRON("tensor-model-parallel-size", "--tp")},
    [SSIM_OPT_PP] = {"pp", 0, G_OPTION_ARG_INT, IN(JOB, SsimCliJob, pp), "N", "Pipeline stages",
                     MEGATRON("pipeline-model-parallel-size", "--pp")},
    [SSIM_OPT_CP] = {"cp", 0, G_OPTION_ARG_INT, IN(JOB, SsimCliJob, cp), "N",
                     "Context parallelism: GPUs each sequence is split over, its attention a ring "
                     "of their keys and values (default 1; needs --attention flash; dp defaults to "
                     "GPUs / (cp tp pp))",
                     MEGATRON("context-parallel-size", "--cp")},
    [SSIM_OPT_VSTAGES] = {"vstages", 'v', G_OPTION_ARG_INT, IN(JOB, SsimCliJob, vstages), "V",
                          "Model chunks per GPU (virtual stages; > 1 needs --schedule "
                          "interleaved)",
                          MEGATRON_OWN("num-layers-per-virtual-pipeline-stage",
                                       "--vstages layers/(pp N), interleaved", G_OPTION_ARG_INT,
                                       layers_per_vstage)},
    [SSIM_OPT_MICROBATCH] = {"microbatch", 'b', G_OPTION_ARG_INT, IN(JOB, SsimCliJob, microbatch),
                             "B", "Sequences per microbatch (default 1)",
                             MEGATRON("micro-batch-size", "--microbatch")},
    [SSIM_OPT_GLOBAL_BATCH] = {"global-batch", 'B', G_OPTION_ARG_INT,
                               IN(JOB, SsimCliJob, global_batch), "N",
                               "Sequences per iteration over all replicas (default 4 per GPU, "
                               "the same for every split)",
                               MEGATRON("global-batch-size", "--global-batch")},
    [SSIM_OPT_SCHEDULE] = {"schedule", 's', G_OPTION_ARG_STRING, IN(JOB, SsimCliJob, schedule),
                           "NAME",
                           "Pipeline schedule: alpa (Alpa's MPMD 1F1B, one program per phase; "
                           "the default), alpa-gpipe, 1f1b, gpipe, xla (lock-step with "
                           "collective-permutes), interleaved; default the placement's"},
    [SSIM_OPT_RECOMPUTE] = {"recompute", 'r', G_OPTION_ARG_STRING, IN(JOB, SsimCliJob, recompute),
                            "MODE",
                            "Activation recomputation: none, selective (attention core), full "
                            "(every layer's forward) or op (PyTorch's op-level checkpointing, "
                            "torchtitan's selective op policy: every other linear layer's output "
                            "and the attention's kept); default the first of none, selective, "
                            "full that fits in memory",
                            MEGATRON("recompute-granularity", "--recompute")},
    [SSIM_OPT_RECOMPUTE_LAYERS] =
        {"recompute-layers", 0, G_OPTION_ARG_STRING, IN(JOB, SsimCliJob, recompute_layers), "N",
         "With --recompute full, recompute only the first N layers of "
         "each pipeline chunk, the others keeping their activations "
         "(Megatron-LM's --recompute-method block --recompute-num-layers "
         "N; torchtitan's checkpointing of every k-th block: layers / k); "
         "default 0, all"},
    [SSIM_OPT_SEQ_PARALLEL] = {"seq-parallel", 0, G_OPTION_ARG_NONE,
                               IN(JOB, SsimCliJob, seq_parallel), NULL,
                               "Sequence parallelism: shard norms and dropout over tp (implies "
                               "--tp-comm rs-ag)",
                               MEGATRON("sequence-parallel", "--seq-parallel")},
    [SSIM_OPT_CROSS_NODE_TP] = {"cross-node-tp", 0, G_OPTION_ARG_NONE,
                                IN(JOB, SsimCliJob, cross_node_tp), NULL,
                                "Allow tensor-parallel groups that span nodes (tp larger than a "
                                "node's GPUs, or an --order that splits a group), their "
                                "collectives then crossing the network"},
    [SSIM_OPT_ZERO] = {"zero", 'z', G_OPTION_ARG_STRING, IN(JOB, SsimCliJob, zero), "0-3",
                       "ZeRO stage, what is sharded over dp: 0 nothing (default); 1 the "
                       "optimizer state (gradients reduce-scattered once a step, weights "
                       "all-gathered after it: Megatron-LM's distributed optimizer); 2 also the "
                       "gradients (reduce-scattered layer by layer every microbatch: DeepSpeed "
                       "stage 2, FSDP SHARD_GRAD_OP); 3 also the weights (each layer all-gathered "
                       "before its forward and its backward: DeepSpeed stage 3, FSDP FULL_SHARD)",
                       MEGATRON_OWN("use-distributed-optimizer", "--zero 1", G_OPTION_ARG_NONE,
                                    distributed_optimizer)},
    [SSIM_OPT_BUCKET] = {"bucket", 0, G_OPTION_ARG_STRING, IN(JOB, SsimCliJob, bucket), "BYTES|off",
                         "DP gradient bucket size (e.g. 25MiB, 40M) overlapping the last "
                         "backward, or off (one reduction per GPU after backward); default "
                         "Megatron-LM's under placement megatron, off otherwise",
                         MEGATRON_OWN("overlap-grad-reduce", "Megatron-LM's --bucket",
                                      G_OPTION_ARG_NONE, overlap_grad_reduce)},
    [SSIM_OPT_TP_COMM] = {"tp-comm", 0, G_OPTION_ARG_STRING, IN(JOB, SsimCliJob, tp_comm), "STYLE",
                          "Tensor-parallel collectives: allreduce (default) or rs-ag "
                          "(reduce-scatter + all-gather)"},
    [SSIM_OPT_TP_OVERLAP] =
        {"tp-overlap", 0, G_OPTION_ARG_STRING, IN(JOB, SsimCliJob, tp_overlap), "on|off",
         "Run a column-parallel GEMM's input-gradient all-reduce beside its "
         "weight gradient (on, the default: Megatron-LM since 2021-09) or after "
         "it (off)",
         MEGATRON_OWN("no-async-tensor-model-parallel-allreduce", "--tp-overlap off",
                      G_OPTION_ARG_NONE, no_async_tp)},
    [SSIM_OPT_ATTENTION] =
        {"attention", 0, G_OPTION_ARG_STRING, IN(JOB, SsimCliJob, attention), "KIND",
         "Attention kernels: unfused (the default: scores, fused softmax and context as "
         "separate kernels, the scores through memory) or flash (one fused kernel forward and "
         "one backward, the scores kept on chip)",
         MEGATRON_OWN("use-flash-attn", "--attention flash", G_OPTION_ARG_NONE, use_flash_attn)},
    [SSIM_OPT_TRANSFORMER_IMPL] =
        {"transformer-impl", 0, G_OPTION_ARG_STRING, IN(JOB, SsimCliJob, transformer_impl), "IMPL",
         "The layers' implementation, Megatron-LM's --transformer-impl: transformer_engine (the "
         "default; te) adds biases in the GEMMs, or local (Megatron-LM's own layers, as every "
         "run before Transformer Engine): a QKV bias kernel, bias gradients as reductions, "
         "LayerNorm's backward in two passes, the attention context's permute copy, the "
         "Q/K/V split's concatenation, and PyTorch's fp32 softmax where Megatron-LM's fused one "
         "cannot run (e.g. microbatch x heads/tp not a multiple of 4); or torch (eager PyTorch "
         "modules: torchtitan, Hugging Face transformers): every elementwise op its own kernel "
         "(RMSNorm's fp32 chain, rotary positions, silu and product, repeat_kv, the attention "
         "output's transpose copy), the projections' input gradients added, F.cross_entropy, "
         "gradients accumulated by autograd"},
    [SSIM_OPT_RMSNORM] = {"rmsnorm", 0, G_OPTION_ARG_STRING, IN(JOB, SsimCliJob, rmsnorm), "IMPL",
                          "How an RMSNorm model's norms run: auto (the default: eager under "
                          "--transformer-impl torch, fused otherwise), fused (one kernel forward "
                          "and one backward: Transformer Engine's, Apex's, torchtitan's "
                          "fused_rmsnorm) or eager (PyTorch's chain of fp32 elementwise kernels: "
                          "torchtitan's rmsnorm, Hugging Face's LlamaRMSNorm)"},
    [SSIM_OPT_FP8] = {"fp8", 0, G_OPTION_ARG_STRING, IN(JOB, SsimCliJob, fp8), "FORMAT",
                      "FP8 training through Transformer Engine: off (the default), hybrid (E4M3 "
                      "forward, E5M2 gradients) or e4m3; the linear layers' GEMMs run on the FP8 "
                      "tensor cores, attention, the LM head and the rest in the model's dtype",
                      MEGATRON("fp8-format", "--fp8")},
    [SSIM_OPT_FP8_RECIPE] = {"fp8-recipe", 0, G_OPTION_ARG_STRING, IN(JOB, SsimCliJob, fp8_recipe),
                             "RECIPE",
                             "With --fp8, Megatron-LM's scaling recipe: delayed (the default: "
                             "amax histories, each chunk pass's amaxes all-reduced over tp x dp x "
                             "cp, the step cost fp8_amax), or tensorwise (current scaling, "
                             "Megatron-Bridge's FP8-CS), mxfp8 or blockwise, which reduce no amax "
                             "history"},
    [SSIM_OPT_TP_COMM_OVERLAP] = {"tp-comm-overlap", 0, G_OPTION_ARG_NONE,
                                  IN(JOB, SsimCliJob, tp_comm_overlap), NULL,
                                  "Transformer Engine's tensor-parallel communication overlap "
                                  "(Megatron-LM's flag of that name, NeMo's ub_tp_comm_overlap; "
                                  "needs --seq-parallel): sequence parallelism's all-gathers and "
                                  "reduce-scatters run beside the GEMMs next to them"},
    [SSIM_OPT_CROSS_ENTROPY] = {"cross-entropy", 0, G_OPTION_ARG_STRING,
                                IN(JOB, SsimCliJob, cross_entropy), "KIND",
                                "The LM head's cross entropy: unfused (the default), native "
                                "(Megatron-LM's --cross-entropy-loss-fusion: fp32 logits, fewer "
                                "passes) or te (with --cross-entropy-fusion-impl te: Transformer "
                                "Engine's kernels, one read forward, the gradient written over the "
                                "logits backward)"},
    [SSIM_OPT_LAUNCH_BLOCKING] = {"launch-blocking", 0, G_OPTION_ARG_NONE,
                                  IN(JOB, SsimCliJob, launch_blocking), NULL,
                                  "The run sets CUDA_LAUNCH_BLOCKING=1: every launch returns when "
                                  "its kernel has finished, so the host launches each op only "
                                  "after the kernel or collective before it ends, its launch time "
                                  "no longer hidden behind the GPU's work (BLOOM's training did)"},
    [SSIM_OPT_DEFER_WGRAD] = {"defer-embedding-wgrad", 0, G_OPTION_ARG_STRING,
                              IN(JOB, SsimCliJob, defer_wgrad), "N",
                              "Defer the LM head's weight gradient of the first N microbatches "
                              "(all: of every one; off, the default) to the pipeline's flush on "
                              "the last stage, "
                              "keeping their inputs and logits' gradients until then "
                              "(Megatron-LM's --defer-embedding-wgrad-compute "
                              "--wgrad-deferral-limit N; needs pp > 1)"},
    [SSIM_OPT_OVERLAP_PARAM_GATHER] = {"overlap-param-gather", 0, G_OPTION_ARG_NONE,
                                       IN(JOB, SsimCliJob, overlap_param_gather), NULL,
                                       "With the distributed optimizer (--zero 1 or 2), the "
                                       "weights' all-gather runs beside the next step's forward, "
                                       "each layer gathered before its first forward, instead of "
                                       "after the optimizer step (Megatron-LM's flag of that name, "
                                       "NeMo's overlap_param_sync)"},
    [SSIM_OPT_FSDP_ROOT] = {"fsdp-root", 0, G_OPTION_ARG_NONE, IN(JOB, SsimCliJob, fsdp_root), NULL,
                            "With --zero 3 and pp 1, FSDP2 wrapped as torchtitan wraps it: the "
                            "embedding, final norm and LM head in the root unit, gathered once "
                            "before the first layer and kept through the backward, the last "
                            "layer kept after its forward (default: the embedding and the head "
                            "gathered before each pass like a layer)"},
    [SSIM_OPT_ORDER] = {"order", 0, G_OPTION_ARG_STRING, IN(JOB, SsimCliJob, order), "AXES",
                        "Rank order, innermost first (default tp-dp-pp: a TP group sits inside "
                        "a node)"},
    [SSIM_OPT_STAGE_LAYERS] = {"stage-layers", 0, G_OPTION_ARG_STRING,
                               IN(JOB, SsimCliJob, stage_layers), "L0,L1,...",
                               "Layers of each pipeline stage (pp counts summing to the model's "
                               "layers, e.g. 6,6,6,5 for 23 layers on 4 stages; the embedding "
                               "stays on the first stage, the LM head on the last); with v > 1 of "
                               "each model chunk in pipeline order (pp v counts; N*K repeats N K "
                               "times: 1,2*62,1 for Megatron-LM's embedding and loss counted as "
                               "layers), Megatron-LM's layout string (Et*2|(t*2|)*38,tL), or "
                               "balanced (even work a chunk, the LM head counted by its FLOPs); "
                               "default layers / (pp v) each",
                               MEGATRON("pipeline-model-parallel-layout", "--stage-layers")},
    [SSIM_OPT_FIRST_STAGE_LAYERS] = {"first-stage-layers", 0, G_OPTION_ARG_STRING,
                                     IN(JOB, SsimCliJob, first_stage_layers), "N",
                                     "Layers of the first pipeline stage, the stages after it "
                                     "(but a --last-stage-layers last) sharing the rest evenly, "
                                     "each stage's split evenly over its v chunks (e.g. 3 for "
                                     "Qwen3-8B's 36 layers on 8 stages with --last-stage-layers "
                                     "3: 3,5,5,5,5,5,5,3)",
                                     MEGATRON("decoder-first-pipeline-num-layers",
                                              "--first-stage-layers")},
    [SSIM_OPT_LAST_STAGE_LAYERS] = {"last-stage-layers", 0, G_OPTION_ARG_STRING,
                                    IN(JOB, SsimCliJob, last_stage_layers), "N",
                                    "Layers of the last pipeline stage, the others sharing the "
                                    "rest evenly",
                                    MEGATRON("decoder-last-pipeline-num-layers",
                                             "--last-stage-layers")},
    [SSIM_OPT_EMBEDDING_IN_SPLIT] = {"embedding-in-split", 0, G_OPTION_ARG_NONE,
                                     IN(JOB, SsimCliJob, embedding_in_split), NULL,
                                     "Count the embedding as a layer when splitting the layers "
                                     "evenly over the pp v model chunks, the first chunk "
                                     "building one transformer layer fewer",
                                     MEGATRON("account-for-embedding-in-pipeline-split",
                                              "--embedding-in-split")},
    [SSIM_OPT_LOSS_IN_SPLIT] = {"loss-in-split", 0, G_OPTION_ARG_NONE,
                                IN(JOB, SsimCliJob, loss_in_split), NULL,
                                "Count the LM head and loss as a layer likewise, the last chunk "
                                "one layer fewer (Llama 3.1 405B's 126 layers on pp 8 and v 8 "
                                "with both: 1,2*62,1)",
                                MEGATRON("account-for-loss-in-pipeline-split", "--loss-in-split")},
    [SSIM_OPT_STEP_COSTS] = {"step-costs", 0, G_OPTION_ARG_STRING, IN(JOB, SsimCliJob, step_costs),
                             "LIST",
                             "Per-iteration costs to turn off (-NAME) or on (+NAME) against "
                             "Megatron-LM's defaults: optimizer, clip, loss_scale (fp16 only by "
                             "default), grad_fp32 (bf16, not under alpa/xla), embedding, host, "
                             "grad_accum, grad_cast (DeepSpeed's BF16_Optimizer; both off by "
                             "default), shard_copy (FSDP2's buffer copies under --zero 2 or 3), "
                             "fp8_amax (the FP8 recipe's amax all-reduces; on with --fp8); under "
                             "--transformer-impl torch grad_accum (from the second microbatch, as "
                             "PyTorch's autograd) is on by default with --zero 0 or 1, shard_copy "
                             "with 2 or 3; or none, all, default (see --explain-costs)"},
    [SSIM_OPT_SEQ_LENGTH] = {"seq-length", 0, G_OPTION_ARG_INT, IN(JOB, SsimCliJob, seq_length),
                             "N", "Sequence length in tokens (overrides the model file's seq_len)"},
    [SSIM_OPT_DTYPE] = {"dtype", 0, G_OPTION_ARG_STRING, IN(JOB, SsimCliJob, dtype), "TYPE",
                        "Training dtype: bf16, fp16, tf32 or fp32 (overrides the model file's)"},
    [SSIM_OPT_PLACEMENT] = {"placement", 'p', G_OPTION_ARG_STRING,
                            IN(PLACE, SsimCliPlace, placement), "NAME[+EXT]",
                            "Placement policy: alpa (the paper's baseline, default), commshift "
                            "(the paper's relocation), xla (GSPMD lock-step; 'baseline' is an old "
                            "name for it), megatron, auto; +EXT adds an extension (early-dp, "
                            "async-pp, late-tp).  Sets the policy's schedule unless --schedule is "
                            "given"},
    [SSIM_OPT_SHIFT] = {"shift", 0, G_OPTION_ARG_STRING, IN(PLACE, SsimCliPlace, shift), "LIST",
                        "Extensions on top of the placement: early-dp, async-pp, late-tp (or dp, "
                        "pp, tp), all or none; for auto, the ones it may search (default all)"},
    [SSIM_OPT_COMMSHIFT_GRADS] = {"commshift-grads", 0, G_OPTION_ARG_STRING,
                                  IN(PLACE, SsimCliPlace, commshift_grads), "LIST",
                                  "Gradients commshift moves into apply_grad: all (default), none, "
                                  "or layers and ranges with embed and head (e.g. 0-13,embed)"},
    [SSIM_OPT_LHS] = {"lhs", 0, G_OPTION_ARG_NONE, IN(PLACE, SsimCliPlace, lhs), NULL,
                      "XLA's latency-hiding scheduler: collectives inside a program are "
                      "asynchronous (late-tp and early-dp on alpa, commshift, xla and auto)"},
    [SSIM_OPT_COMM_REPEAT] = {"comm-repeat", 0, G_OPTION_ARG_INT,
                              IN(PLACE, SsimCliPlace, comm_repeat), "N",
                              "Run every communication N times back to back (1 to 1000; default "
                              "1), as Alpa's ALPA_TEST_REPEAT_COMM does to emulate a slower "
                              "network"},
    [SSIM_OPT_FORMAT] = {"format", 'f', G_OPTION_ARG_STRING, IN(OUTPUT, SsimCliOutput, format),
                         "FMT", "table (default), csv or json"},
    [SSIM_OPT_OUTPUT] = {"output", 'o', G_OPTION_ARG_FILENAME, IN(OUTPUT, SsimCliOutput, output),
                         "FILE", "Write the report to FILE"},
    [SSIM_OPT_MAX_OPS] = {"max-ops", 0, G_OPTION_ARG_INT64, IN(LIMITS, SsimCliLimits, max_ops), "N",
                          "Refuse a configuration whose lowering is estimated at more than N ops "
                          "(default 200000000; 0 for the default)"},
    [SSIM_OPT_MAX_EVENTS] = {"max-events", 0, G_OPTION_ARG_INT64,
                             IN(LIMITS, SsimCliLimits, max_events), "N",
                             "Stop a replay after N events and fail without figures (default: no "
                             "limit)"},
    [SSIM_OPT_MAX_MEMORY] =
        {"max-memory", 0, G_OPTION_ARG_STRING, IN(LIMITS, SsimCliLimits, max_memory_text), "BYTES",
         "Refuse a run whose memory estimate, or whose resident memory while it runs, "
         "exceeds BYTES (e.g. 16GiB, 12G; default 75% of this machine's "
         "memory)"},
};

/* The long name of SSIM_OPT_<opt>, for messages. */
#define NAME(opt) (options[SSIM_OPT_##opt].name)

/* The entry of `opt`, which must belong to `group`, storing into `storage` (the group's struct). */
static GOptionEntry entry(Group group, gpointer storage, SsimCliOption opt, const char *help)
{
    g_assert(opt < SSIM_OPT_N && options[opt].group == group);
    const Option *o = &options[opt];
    return (GOptionEntry){o->name,
                          o->short_name,
                          0,
                          o->arg,
                          (char *)storage + o->offset,
                          help ? help : o->help,
                          o->arg_description};
}

/* Adds every option of `group` (they are consecutive in SsimCliOption), with the shared texts. */
static void add_group(GOptionContext *context, Group group, gpointer storage)
{
    GOptionEntry entries[SSIM_OPT_N + 1];
    guint n = 0;
    for (guint i = 0; i < SSIM_OPT_N; i++)
        if (options[i].group == group)
            entries[n++] = entry(group, storage, (SsimCliOption)i, NULL);
    entries[n] = (GOptionEntry){NULL};
    ssim_cli_add_entries(context, entries, group == JOB ? storage : NULL);
}

void ssim_cli_add_old_short_names(GOptionContext *context, const GOptionEntry *entries)
{
    g_autoptr(GArray) hidden = g_array_new(TRUE, TRUE, sizeof(GOptionEntry));
    for (const GOptionEntry *e = entries; e->long_name != NULL; e++) {
        GOptionEntry old = *e;
        old.flags |= G_OPTION_FLAG_HIDDEN;
        g_array_append_val(hidden, old);
    }
    /* A group of its own: GOption matches the main group's --NAME first, so the long name stays
     * the visible entry's, and a group with no visible entry adds no --help-NAME line. */
    GOptionGroup *group = g_option_group_new("old-short-names", "Short names before issue 20",
                                             "Show the old short names", NULL, NULL);
    g_option_group_add_entries(group, (const GOptionEntry *)(void *)hidden->data);
    g_option_context_add_group(context, group);
}

/* --- Megatron-LM's names. ------------------------------------------------------------------ */

const char *ssim_cli_megatron_name(SsimCliOption opt)
{
    g_return_val_if_fail(opt < SSIM_OPT_N, NULL);
    return options[opt].alias;
}

/* The row whose alias `e` takes: the shared option of e's name when it has one; a flag of its own
 * only for the entry of `job`'s shared option (not for a verb's own option of the same name). */
static const Option *alias_of(const GOptionEntry *e, SsimCliJob *job)
{
    for (guint i = 0; i < SSIM_OPT_N; i++) {
        const Option *o = &options[i];
        if (o->alias == NULL || strcmp(o->name, e->long_name) != 0)
            continue;
        if (!o->alias_own)
            return o;
        return job != NULL && e->arg_data == (char *)job + o->offset ? o : NULL;
    }
    return NULL;
}

void ssim_cli_add_entries(GOptionContext *context, const GOptionEntry *entries, SsimCliJob *job)
{
    g_autoptr(GArray) all = g_array_new(TRUE, TRUE, sizeof(GOptionEntry));
    g_autoptr(GString) help = g_string_new(NULL);
    gsize column = 0;
    for (const GOptionEntry *e = entries; e->long_name != NULL; e++) {
        g_array_append_val(all, *e);
        const Option *o = alias_of(e, job);
        if (o == NULL)
            continue;
        GOptionEntry alias = *e;
        alias.long_name = o->alias;
        alias.short_name = 0;
        alias.flags |= G_OPTION_FLAG_HIDDEN;
        if (o->alias_own) {
            alias.arg = o->alias_arg;
            alias.arg_data = (char *)job + o->alias_offset;
            alias.arg_description = o->alias_arg == G_OPTION_ARG_NONE ? NULL : "N";
        }
        alias.description = o->alias_means;
        g_array_append_val(all, alias);
        /* "--NAME (MEANS)", wrapped within 100 columns under a two-space indent. */
        g_autofree char *item = g_strdup_printf("--%s (%s)", o->alias, o->alias_means);
        if (help->len == 0) {
            g_string_append(help, "Megatron-LM's names, accepted too:\n ");
            column = 1;
        } else {
            g_string_append_c(help, ',');
            column++;
        }
        if (column + 1 + strlen(item) + 1 > 100) {
            g_string_append(help, "\n ");
            column = 1;
        }
        g_string_append_printf(help, " %s", item);
        column += 1 + strlen(item);
    }
    /* GOption copies the entries; the storage they point to is the caller's. */
    g_option_context_add_main_entries(context, (const GOptionEntry *)(void *)all->data, NULL);
    if (help->len == 0)
        return;
    const char *old = g_option_context_get_description(context);
    g_autofree char *text = old != NULL && *old != '\0'
                                ? g_strdup_printf("%s\n\n%s", old, help->str)
                                : g_strdup(help->str);
    g_option_context_set_description(context, text);
}

GOptionEntry ssim_cli_entry_arg(GOptionEntry entry, const char *arg_description)
{
    entry.arg_description = arg_description;
    return entry;
}

/* --- The job. ------------------------------------------------------------------------------ */

void ssim_cli_job_clear(SsimCliJob *job)
{
    char **strings[] = {&job->model,
                        &job->cluster,
                        &job->split,
                        &job->schedule,
                        &job->recompute,
                        &job->zero,
                        &job->bucket,
                        &job->tp_comm,
                        &job->order,
                        &job->stage_layers,
                        &job->first_stage_layers,
                        &job->last_stage_layers,
                        &job->step_costs,
                        &job->dtype,
                        &job->tp_overlap,
                        &job->attention,
                        &job->transformer_impl,
                        &job->fp8,
                        &job->fp8_recipe,
                        &job->cross_entropy,
                        &job->rmsnorm,
                        &job->recompute_layers,
                        &job->defer_wgrad};
    for (gsize i = 0; i < G_N_ELEMENTS(strings); i++)
        g_clear_pointer(strings[i], g_free);
}

GOptionEntry ssim_cli_job_entry(SsimCliJob *job, SsimCliOption opt, const char *help)
{
    return entry(JOB, job, opt, help);
}

void ssim_cli_add_job(GOptionContext *context, SsimCliJob *job)
{
    add_group(context, JOB, job);
}

int ssim_cli_job_check_counts(const char *verb, const SsimCliJob *job)
{
    const struct {
        gint value;
        SsimCliOption opt;
    } counts[] = {{job->dp, SSIM_OPT_DP},
                  {job->tp, SSIM_OPT_TP},
                  {job->pp, SSIM_OPT_PP},
                  {job->cp, SSIM_OPT_CP},
                  {job->vstages, SSIM_OPT_VSTAGES},
                  {job->microbatch, SSIM_OPT_MICROBATCH},
                  {job->global_batch, SSIM_OPT_GLOBAL_BATCH}};
    for (gsize i = 0; i < G_N_ELEMENTS(counts); i++) {
        int rc = ssim_cli_check_at_least(verb, options[counts[i].opt].name, counts[i].value, 1);
        if (rc != SSIM_EXIT_OK)
            return rc;
    }
    return SSIM_EXIT_OK;
}

int ssim_cli_check_at_least(const char *verb, const char *name, gint value, gint min)
{
    if (!SSIM_CLI_GIVEN(value) || value >= min)
        return SSIM_EXIT_OK;
    if (min == 1)
        return ssim_cli_usage_error(verb, "--%s: must be a positive integer, not %d", name, value);
    return ssim_cli_usage_error(verb, "--%s: must be at least %d, not %d", name, min, value);
}

int ssim_cli_job_check_nodes(const char *verb, const SsimCliJob *job)
{
    return ssim_cli_check_at_least(verb, NAME(NODES), job->nodes, 1);
}

/* Applies --nodes N (when given) to `cluster`. */
static int set_nodes(const char *verb, SsimCluster *cluster, gint nodes)
{
    if (!SSIM_CLI_GIVEN(nodes))
        return SSIM_EXIT_OK;
    if (nodes < 1)
        return ssim_cli_usage_error(verb, "--%s: must be a positive integer, not %d", NAME(NODES),
                                    nodes);
    g_autoptr(GError) error = NULL;
    if (!ssim_cluster_check_nodes(cluster, (guint)nodes, &error))
        return ssim_cli_usage_error(verb, "--%s: %s", NAME(NODES), error->message);
    ssim_cluster_set_nodes(cluster, (guint)nodes);
    return SSIM_EXIT_OK;
}

void ssim_cli_job_resolve(const char *verb, SsimCliJob *job)
{
    char **given[] = {&job->model, &job->cluster};
    for (gsize i = 0; i < G_N_ELEMENTS(given); i++) {
        const char *v = *given[i];
        if (v && (strchr(v, '/') || ssim_path_is(v, ".ini") || ssim_path_is(v, ".json")))
            ssim_cli_resolve_input(verb, given[i], NULL);
    }
}

int ssim_cli_job_load(const char *verb, const SsimCliJob *job, SsimModel **model,
                      SsimCluster **cluster)
{
    g_autoptr(GError) error = NULL;
    *cluster = NULL;
    *model = job->model ? ssim_model_load(job->model, &error) : ssim_model_default();
    if (*model == NULL)
        return ssim_cli_runtime_error(error);
    if ((*model)->notes)
        fprintf(stderr, "shiftsim %s: note: %s\n", verb, (*model)->notes);
    *cluster = job->cluster ? ssim_cluster_load(job->cluster, &error) : ssim_cluster_default();
    if (*cluster == NULL)
        return ssim_cli_runtime_error(error);
    int rc = ssim_cli_job_override_model(verb, job, *model);
    if (rc != SSIM_EXIT_OK)
        return rc;
    return set_nodes(verb, *cluster, job->nodes);
}

int ssim_cli_job_override_model(const char *verb, const SsimCliJob *job, SsimModel *model)
{
    if (SSIM_CLI_GIVEN(job->seq_length)) {
        int rc = ssim_cli_check_at_least(verb, NAME(SEQ_LENGTH), job->seq_length, 1);
        if (rc != SSIM_EXIT_OK)
            return rc;
        model->seq_len = (guint)job->seq_length;
    }
    if (job->dtype && !ssim_dtype_from_name(job->dtype, &model->dtype))
        return ssim_cli_usage_error(verb, "--%s: '%s' is not one of bf16, fp16, tf32, fp32",
                                    NAME(DTYPE), job->dtype);
    g_autoptr(GError) error = NULL;
    if ((SSIM_CLI_GIVEN(job->seq_length) || job->dtype) && !ssim_model_check(model, &error))
        return ssim_cli_usage_error(verb, "%s: %s", model->name, error->message);
    return SSIM_EXIT_OK;
}

/* Sets field `key` of `par` from the text of option `opt`, when given. */
static int set_field(const char *verb, SsimParallel *par, const char *key, const char *value,
                     SsimCliOption opt)
{
    g_autoptr(GError) error = NULL;
    if (value && !ssim_parallel_set(par, key, value, &error))
        return ssim_cli_usage_error(verb, "--%s: %s", options[opt].name, error->message);
    return SSIM_EXIT_OK;
}

/* --fp8-recipe: Megatron-LM's delayed scaling keeps the step cost fp8_amax; its current and
 * block scalings (tensorwise, mxfp8, blockwise) reduce no amax history, so turn it off. */
static int apply_fp8_recipe(const char *verb, const char *recipe, SsimParallel *par)
{
    static const char *const recipes[] = {"delayed", "tensorwise", "mxfp8", "blockwise", NULL};
    if (recipe == NULL)
        return SSIM_EXIT_OK;
    g_autofree char *r = g_ascii_strdown(recipe, -1);
    if (!g_strv_contains(recipes, r))
        return ssim_cli_usage_error(verb,
                                    "--%s: '%s' is not a recipe (delayed, tensorwise, mxfp8 or "
                                    "blockwise)",
                                    NAME(FP8_RECIPE), recipe);
    if (par->fp8 == SSIM_FP8_OFF)
        return ssim_cli_usage_error(verb, "--%s: needs --%s hybrid or e4m3 (FP8 training)",
                                    NAME(FP8_RECIPE), NAME(FP8));
    guint bit = 1u << SSIM_STEP_COST_FP8_AMAX;
    gboolean amax = strcmp(r, "delayed") == 0;
    if ((par->step_costs_set & bit) && ((par->step_costs_on & bit) != 0) != amax)
        return ssim_cli_usage_error(verb, "--%s %s contradicts --%s %cfp8_amax", NAME(FP8_RECIPE),
                                    r, NAME(STEP_COSTS), amax ? '-' : '+');
    return set_field(verb, par, "step_costs", amax ? "+fp8_amax" : "-fp8_amax",
                     SSIM_OPT_FP8_RECIPE);
}

int ssim_cli_job_apply_fields(const char *verb, const SsimCliJob *job, SsimParallel *par)
{
    /* --use-distributed-optimizer is ZeRO-1: Megatron-LM's distributed optimizer shards the
     * optimizer state over dp and reduce-scatters the gradients, as our ZeRO-1 does. */
    const char *zero = job->zero;
    if (job->distributed_optimizer) {
        if (zero != NULL && strcmp(zero, "1") != 0)
            return ssim_cli_usage_error(verb, "--%s is --%s 1: it contradicts --%s %s",
                                        options[SSIM_OPT_ZERO].alias, NAME(ZERO), NAME(ZERO), zero);
        zero = "1";
    }
    const char *tp_overlap = job->tp_overlap;
    if (job->no_async_tp) {
        SsimParallel q;
        ssim_parallel_init(&q);
        if (tp_overlap != NULL && ssim_parallel_set(&q, "tp_overlap", tp_overlap, NULL) &&
            !q.tp_sync_grad)
            return ssim_cli_usage_error(verb, "--%s is --%s off: it contradicts --%s %s",
                                        options[SSIM_OPT_TP_OVERLAP].alias, NAME(TP_OVERLAP),
                                        NAME(TP_OVERLAP), tp_overlap);
        tp_overlap = "off";
    }
    const char *attention = job->attention;
    if (job->use_flash_attn) {
        SsimAttention a;
        if (attention != NULL && ssim_attention_from_name(attention, &a) &&
            a != SSIM_ATTENTION_FLASH)
            return ssim_cli_usage_error(verb, "--%s is --%s flash: it contradicts --%s %s",
                                        options[SSIM_OPT_ATTENTION].alias, NAME(ATTENTION),
                                        NAME(ATTENTION), attention);
        attention = "flash";
    }
    const struct {
        const char *key; /* ssim_parallel_set()'s name of the field */
        const char *value;
        SsimCliOption opt;
    } fields[] = {
        {"schedule", job->schedule, SSIM_OPT_SCHEDULE},
        {"recompute", job->recompute, SSIM_OPT_RECOMPUTE},
        {"recompute_layers", job->recompute_layers, SSIM_OPT_RECOMPUTE_LAYERS},
        {"zero", zero, SSIM_OPT_ZERO},
        {"bucket", job->bucket, SSIM_OPT_BUCKET},
        {"tp_comm", job->tp_comm, SSIM_OPT_TP_COMM},
        {"tp_overlap", tp_overlap, SSIM_OPT_TP_OVERLAP},
        {"attention", attention, SSIM_OPT_ATTENTION},
        {"transformer_impl", job->transformer_impl, SSIM_OPT_TRANSFORMER_IMPL},
        {"fp8", job->fp8, SSIM_OPT_FP8},
        {"cross_entropy", job->cross_entropy, SSIM_OPT_CROSS_ENTROPY},
        {"rmsnorm", job->rmsnorm, SSIM_OPT_RMSNORM},
        {"order", job->order, SSIM_OPT_ORDER},
        {"stage_layers", job->stage_layers, SSIM_OPT_STAGE_LAYERS},
        {"first_stage_layers", job->first_stage_layers, SSIM_OPT_FIRST_STAGE_LAYERS},
        {"last_stage_layers", job->last_stage_layers, SSIM_OPT_LAST_STAGE_LAYERS},
        {"embedding_in_split", job->embedding_in_split ? "on" : NULL, SSIM_OPT_EMBEDDING_IN_SPLIT},
        {"loss_in_split", job->loss_in_split ? "on" : NULL, SSIM_OPT_LOSS_IN_SPLIT},
        {"step_costs", job->step_costs, SSIM_OPT_STEP_COSTS},
        {"sp", job->seq_parallel ? "on" : NULL, SSIM_OPT_SEQ_PARALLEL},
        {"cross_node_tp", job->cross_node_tp ? "on" : NULL, SSIM_OPT_CROSS_NODE_TP},
        {"tp_comm_overlap", job->tp_comm_overlap ? "on" : NULL, SSIM_OPT_TP_COMM_OVERLAP},
        {"launch_blocking", job->launch_blocking ? "on" : NULL, SSIM_OPT_LAUNCH_BLOCKING},
        {"defer_embedding_wgrad", job->defer_wgrad, SSIM_OPT_DEFER_WGRAD},
        {"overlap_param_gather", job->overlap_param_gather ? "on" : NULL,
         SSIM_OPT_OVERLAP_PARAM_GATHER},
        {"fsdp_root", job->fsdp_root ? "on" : NULL, SSIM_OPT_FSDP_ROOT}};
    for (gsize i = 0; i < G_N_ELEMENTS(fields); i++) {
        int rc = set_field(verb, par, fields[i].key, fields[i].value, fields[i].opt);
        if (rc != SSIM_EXIT_OK)
            return rc;
    }
    return apply_fp8_recipe(verb, job->fp8_recipe, par);
}

/* --split parsed into `scratch` (from the defaults); returns the fields it sets
 * (SsimParallelField bits; 0 without --split or when it does not parse, which
 * ssim_cli_job_apply() reports). */
static guint64 split_parse(const SsimCliJob *job, SsimParallel *scratch)
{
    ssim_parallel_init(scratch);
    guint64 given = 0;
    if (job->split && !ssim_parallel_parse_fields(scratch, job->split, &given, NULL))
        return 0;
    return given;
}

/* The fields --split sets (split_parse). */
static guint64 split_fields(const SsimCliJob *job)
{
    SsimParallel scratch;
    return split_parse(job, &scratch);
}

int ssim_cli_job_apply(const char *verb, const SsimCliJob *job, SsimParallel *par, guint world)
{
    guint64 given = 0;
    if (job->split) {
        g_autoptr(GError) error = NULL;
        if (!ssim_parallel_parse_fields(par, job->split, &given, &error))
            return ssim_cli_usage_error(verb, "--%s: %s", NAME(SPLIT), error->message);
    }
    gboolean gbs_given =
        SSIM_CLI_GIVEN(job->global_batch) || (given & SSIM_PARALLEL_GLOBAL_BATCH) != 0;
    gboolean dp_given = SSIM_CLI_GIVEN(job->dp) || (given & SSIM_PARALLEL_DP) != 0;
    if (SSIM_CLI_GIVEN(job->tp))
        par->tp = (guint)job->tp;
    if (SSIM_CLI_GIVEN(job->pp))
        par->pp = (guint)job->pp;
    if (SSIM_CLI_GIVEN(job->cp))
        par->cp = (guint)job->cp;
    /* The caller's tp or pp (a suggestion for the model) gives way where it does not fit beside
     * the one the user gave: pp 1 beside a given tp, tp 1 beside a given pp ("--tp 8" on 8 GPUs
     * for a model suggested tp 1 x pp 4 is tp 8 x pp 1, not an impossible 8 x 4). */
    gboolean tp_given = SSIM_CLI_GIVEN(job->tp) || (given & SSIM_PARALLEL_TP) != 0;
    gboolean pp_given = SSIM_CLI_GIVEN(job->pp) || (given & SSIM_PARALLEL_PP) != 0;
    if (tp_given != pp_given && !dp_given && par->tp * par->pp * par->cp > 0 &&
        world % (par->tp * par->pp * par->cp) != 0)
        *(tp_given ? &par->pp : &par->tp) = 1;
    guint span = par->tp * par->pp * par->cp; /* the GPUs of one replica */
    if (SSIM_CLI_GIVEN(job->dp))
        par->dp = (guint)job->dp;
    else if (!dp_given && span > 0 && world % span == 0)
        par->dp = world / span;
    else if (!dp_given && span > 0) {
        /* No dp fills the GPUs: an impossible split (exit 1, as the check of a given dp), said
         * as such, not as "dp*tp*pp != GPUs" with a dp nobody gave; cp named where it is set. */
        g_autofree char *cp = par->cp > 1 ? g_strdup_printf("%u x ", par->cp) : g_strdup("");
        fprintf(stderr,
                "shiftsim %s: %stp x pp = %s%u x %u = %u %s the %u GPUs, so no dp fills them; "
                "choose %stp and pp whose product divides %u (or other --nodes)\n",
                verb, par->cp > 1 ? "cp x " : "", cp, par->tp, par->pp, span,
                span > world ? "is more than" : "does not divide", world, par->cp > 1 ? "cp, " : "",
                world);
        return SSIM_EXIT_RUNTIME;
    }
    if (SSIM_CLI_GIVEN(job->vstages))
        par->virtual_stages = (guint)job->vstages;
    if (SSIM_CLI_GIVEN(job->microbatch))
        par->microbatch = (guint)job->microbatch;
    int rc = ssim_cli_job_apply_fields(verb, job, par);
    if (rc != SSIM_EXIT_OK)
        return rc;
    if (SSIM_CLI_GIVEN(job->global_batch))
        par->global_batch = (guint)job->global_batch;
    else if (!gbs_given)
        par->global_batch = ssim_parallel_default_global_batch(world, par->dp, par->microbatch);
    return SSIM_EXIT_OK;
}

/* The virtual stages a chunk list or layout string implies: pp k entries (k > 1) under a given
 * pp and no virtual stages given make k, as Megatron-LM derives its virtual stages from
 * --pipeline-model-parallel-layout; 0 otherwise. */
static guint layout_vstages(const SsimCliJob *job)
{
    SsimParallel scratch;
    guint64 fields = split_parse(job, &scratch);
    if (SSIM_CLI_GIVEN(job->pp))
        scratch.pp = (guint)job->pp;
    if (job->stage_layers && !ssim_parallel_set(&scratch, "stage_layers", job->stage_layers, NULL))
        return 0;
    gboolean pp_given = SSIM_CLI_GIVEN(job->pp) || (fields & SSIM_PARALLEL_PP) != 0;
    gboolean v_given = SSIM_CLI_GIVEN(job->vstages) || SSIM_CLI_GIVEN(job->layers_per_vstage) ||
                       (fields & SSIM_PARALLEL_VSTAGES) != 0;
    guint n = ssim_parallel_stage_layers_n(&scratch);
    if (!pp_given || v_given || scratch.pp == 0 || n <= scratch.pp || n % scratch.pp != 0)
        return 0;
    return n / scratch.pp;
}

gboolean ssim_cli_job_has_schedule(const SsimCliJob *job)
{
    return job->schedule != NULL || SSIM_CLI_GIVEN(job->layers_per_vstage) ||
           (split_fields(job) & SSIM_PARALLEL_SCHEDULE) != 0 || layout_vstages(job) > 0;
}

gboolean ssim_cli_job_has_recompute(const SsimCliJob *job)
{
    return job->recompute != NULL || (split_fields(job) & SSIM_PARALLEL_RECOMPUTE) != 0;
}

gboolean ssim_cli_job_has_bucket(const SsimCliJob *job)
{
    return job->bucket != NULL || job->overlap_grad_reduce ||
           (split_fields(job) & SSIM_PARALLEL_BUCKET) != 0;
}

int ssim_cli_job_apply_model(const char *verb, const SsimCliJob *job, const SsimModel *model,
                             SsimParallel *par)
{
    const Option *vstages = &options[SSIM_OPT_VSTAGES], *bucket = &options[SSIM_OPT_BUCKET];
    if (SSIM_CLI_GIVEN(job->layers_per_vstage)) {
        gint n = job->layers_per_vstage;
        if (n < 1)
            return ssim_cli_usage_error(verb, "--%s: must be a positive integer, not %d",
                                        vstages->alias, n);
        if (par->pp == 0 || model->layers % par->pp != 0 || (model->layers / par->pp) % (guint)n)
            return ssim_cli_usage_error(verb,
                                        "--%s: the model's %u layers do not split into %u "
                                        "stages of chunks of %d layers",
                                        vstages->alias, model->layers, par->pp, n);
        guint v = model->layers / par->pp / (guint)n;
        if (SSIM_CLI_GIVEN(job->vstages) && (guint)job->vstages != v)
            return ssim_cli_usage_error(verb, "--%s %d is --%s %u here, not --%s %d",
                                        vstages->alias, n, vstages->name, v, vstages->name,
                                        job->vstages);
        par->virtual_stages = v;
        if (job->schedule == NULL && (split_fields(job) & SSIM_PARALLEL_SCHEDULE) == 0)
            g_strlcpy(par->schedule, v > 1 ? "interleaved" : "1f1b", sizeof par->schedule);
    }
    guint v = layout_vstages(job); /* a chunk list's or layout string's */
    if (v > 0) {
        par->virtual_stages = v;
        if (job->schedule == NULL && (split_fields(job) & SSIM_PARALLEL_SCHEDULE) == 0)
            g_strlcpy(par->schedule, "interleaved", sizeof par->schedule);
    }
    /* Megatron-LM's first/last stage counts, or the embedding and loss counted as layers, need
     * the model's layers and the final pp and v. */
    g_autoptr(GError) error = NULL;
    if (!ssim_parallel_resolve_layers(par, model, &error)) {
        /* Named as the option the user typed ("--first-stage-layers: ..."). */
        static const struct {
            const char *key;
            SsimCliOption opt;
        } rules[] = {{"first_stage_layers:", SSIM_OPT_FIRST_STAGE_LAYERS},
                     {"last_stage_layers:", SSIM_OPT_LAST_STAGE_LAYERS},
                     {"embedding_in_split:", SSIM_OPT_EMBEDDING_IN_SPLIT},
                     {"loss_in_split:", SSIM_OPT_LOSS_IN_SPLIT}};
        for (gsize i = 0; i < G_N_ELEMENTS(rules); i++)
            if (g_str_has_prefix(error->message, rules[i].key))
                return ssim_cli_usage_error(verb, "--%s:%s", options[rules[i].opt].name,
                                            error->message + strlen(rules[i].key));
        return ssim_cli_usage_error(verb, "%s", error->message);
    }
    if (job->overlap_grad_reduce) {
        gboolean sized = job->bucket != NULL || (split_fields(job) & SSIM_PARALLEL_BUCKET) != 0;
        if (sized && par->dp_bucket_bytes == 0)
            return ssim_cli_usage_error(verb, "--%s: contradicts --%s off", bucket->alias,
                                        bucket->name);
        if (!sized)
            par->dp_bucket_bytes =
                ssim_placement_default_bucket(SSIM_PLACEMENT_MEGATRON, par, model->dtype);
    }
    return SSIM_EXIT_OK;
}

/* --- The placement pass. ------------------------------------------------------------------- */

void ssim_cli_place_clear(SsimCliPlace *place)
{
    g_clear_pointer(&place->placement, g_free);
    g_clear_pointer(&place->shift, g_free);
    g_clear_pointer(&place->commshift_grads, g_free);
}

GOptionEntry ssim_cli_place_entry(SsimCliPlace *place, SsimCliOption opt, const char *help)
{
    return entry(PLACE, place, opt, help);
}

void ssim_cli_add_place(GOptionContext *context, SsimCliPlace *place)
{
    add_group(context, PLACE, place);
}

int ssim_cli_place_parse(const char *verb, const SsimCliPlace *place, SsimPlacement *placement)
{
    g_autoptr(GError) error = NULL;
    if (place->placement && !ssim_placement_parse(place->placement, placement, &error))
        return ssim_cli_usage_error(verb, "--%s: %s", NAME(PLACEMENT), error->message);
    guint shifts = 0;
    if (place->shift && !ssim_shift_parse(place->shift, &shifts, &error))
        return ssim_cli_usage_error(verb, "--%s: %s", NAME(SHIFT), error->message);
    if (place->commshift_grads &&
        !ssim_site_set_parse(place->commshift_grads, &placement->grads, &error))
        return ssim_cli_usage_error(verb, "--%s: %s", NAME(COMMSHIFT_GRADS), error->message);
    if (place->shift)
        placement->shifts =
            (placement->shifts & SSIM_SHIFT_DEFAULT ? 0 : placement->shifts) | shifts;
    placement->lhs = placement->lhs || place->lhs;
    const char *note = ssim_placement_alias_note(place->placement);
    if (note)
        fprintf(stderr, "shiftsim %s: %s\n", verb, note);
    return SSIM_EXIT_OK;
}

int ssim_cli_place_comm_repeat(const char *verb, const SsimCliPlace *place, guint *repeat)
{
    *repeat = 1;
    if (!SSIM_CLI_GIVEN(place->comm_repeat))
        return SSIM_EXIT_OK;
    if (place->comm_repeat < 1 || place->comm_repeat > (gint)SSIM_COMM_REPEAT_MAX)
        return ssim_cli_usage_error(verb, "--%s: must be an integer from 1 to %u, not %d",
                                    NAME(COMM_REPEAT), SSIM_COMM_REPEAT_MAX, place->comm_repeat);
    *repeat = (guint)place->comm_repeat;
    return SSIM_EXIT_OK;
}

/* --- The output. --------------------------------------------------------------------------- */

void ssim_cli_output_clear(SsimCliOutput *output)
{
    g_clear_pointer(&output->format, g_free);
    g_clear_pointer(&output->output, g_free);
}

GOptionEntry ssim_cli_output_entry(SsimCliOutput *output, SsimCliOption opt, const char *help)
{
    return entry(OUTPUT, output, opt, help);
}

int ssim_cli_output_format(const char *verb, const SsimCliOutput *output, SsimFormat *format)
{
    *format = SSIM_FORMAT_TABLE;
    if (output->format && !ssim_format_from_name(output->format, format))
        return ssim_cli_usage_error(verb, "--%s: '%s' is not table, csv or json", NAME(FORMAT),
                                    output->format);
    return SSIM_EXIT_OK;
}

/* --- The limits. --------------------------------------------------------------------------- */

GOptionEntry ssim_cli_limits_entry(SsimCliLimits *limits, SsimCliOption opt, const char *help)
{
    return entry(LIMITS, limits, opt, help);
}

void ssim_cli_add_limits(GOptionContext *context, SsimCliLimits *limits)
{
    memset(limits, 0, sizeof *limits); /* the caller's storage may be uninitialised */
    add_group(context, LIMITS, limits);
}

void ssim_cli_limits_clear(SsimCliLimits *limits)
{
    g_clear_pointer(&limits->max_memory_text, g_free);
}

int ssim_cli_check_limits(const char *verb, SsimCliLimits *limits)
{
    if (limits->max_ops < 0)
        return ssim_cli_usage_error(verb, "--%s: must not be negative", NAME(MAX_OPS));
    if (limits->max_events < 0)
        return ssim_cli_usage_error(verb, "--%s: must not be negative", NAME(MAX_EVENTS));
    limits->max_memory = 0;
    if (limits->max_memory_text == NULL)
        return SSIM_EXIT_OK;
    g_autoptr(GError) error = NULL;
    if (!ssim_bytes_read(limits->max_memory_text, &limits->max_memory, &error))
        return ssim_cli_usage_error(verb, "--%s: %s", NAME(MAX_MEMORY), error->message);
    if (limits->max_memory == 0)
        return ssim_cli_usage_error(verb, "--%s: must be a positive byte size (e.g. 16GiB, 12G)",
                                    NAME(MAX_MEMORY));
    return SSIM_EXIT_OK;
}

int ssim_cli_parse_limited(GOptionContext *context, int *argc, char ***argv, const char *verb,
                           SsimCliLimits *limits)
{
    ssim_cli_add_limits(context, limits);
    if (!ssim_cli_parse(context, argc, argv, verb))
        return SSIM_EXIT_USAGE;
    if (*argc > 1)
        return ssim_cli_usage_error(verb, "unexpected argument '%s'", (*argv)[1]);
    return ssim_cli_check_limits(verb, limits);
}
