/*
 * The registry of `shiftsim` verbs: one line each in SSIM_VERB_LIST, one file each
 * (src/app/verb-<name>.c) defining `int ssim_verb_<name>(int argc, char **argv)`.
 *
 * A verb parses its own options (GOptionContext, with argv[0] being the verb name) and returns
 * the process exit status: SSIM_EXIT_OK, SSIM_EXIT_RUNTIME (an input or simulation failed) or
 * SSIM_EXIT_USAGE (bad command line).  It prints results on stdout and one clear message per
 * error on stderr; it never calls exit().
 */
#pragma once

#include <glib.h>

#include "src/app/options.h"
#include <shiftsim/runs.h>
#include <shiftsim/runset.h>

#define SSIM_EXIT_OK      0
#define SSIM_EXIT_RUNTIME 1
#define SSIM_EXIT_USAGE   2

#define SSIM_VERB_LIST(X)                                                                          \
    X(replay, "replay an op graph or Chakra traces (shiftsim's rules or ASTRA-sim's): timeline")   \
    X(simulate, "simulate one training configuration: step time, TFLOP/s, bubble, memory")         \
    X(profile, "import, show and query measured cost profiles (nccl-tests, vTrain, bench)")        \
    X(compare, "one configuration under alpa, commshift, extensions, auto: gain, moves")           \
    X(sweep, "simulate every dp x tp x pp split of N GPUs; rank, CSV, plots (threads, MPI)")       \
    X(merge, "join the CSVs of 'sweep --shard I/N' runs into the single-process CSV")              \
    X(validate, "simulate measured runs: predicted vs measured, MAPE, max error, Kendall tau")     \
    X(calibrate, "fit the cost model to measured runs (GSL), cross-validated; Kineto import")

#define SSIM_X(name, summary) int ssim_verb_##name(int argc, char **argv);
SSIM_VERB_LIST(SSIM_X)
#undef SSIM_X

/* Shared helpers for verbs; the shared options are src/app/options.h. */

/*
 * An input path as given, or the bundled file it names: a relative `*path` that is nothing in the
 * current directory but is found under the data roots (ssim_data_find: SHIFTSIM_DATA, the source
 * tree, the installed share/shiftsim) becomes that file, with a note on stderr naming it, so that
 * `--runs traces/validation/published-a100.csv` works from any directory.  With `suffix`
 * (".0.et" for a Chakra trace set) the file probed is PATH + suffix and *path stays a prefix.
 * Anything else is left as it is, for its reader to report: "", and a path with a "." or ".."
 * component.  NULL passes.
 */
void ssim_cli_resolve_input(const char *verb, char **path, const char *suffix);
/* Prints "shiftsim VERB: message" for a usage error and returns SSIM_EXIT_USAGE. */
int ssim_cli_usage_error(const char *verb, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* Prints "shiftsim: <error->message>" and returns SSIM_EXIT_RUNTIME. */
int ssim_cli_runtime_error(const GError *error);
/* Warns on stderr when the run of `model` split as `par` on `cluster` lies outside the shapes
 * the cluster was calibrated on (ssim_parallel_extrapolation): its figures are then an
 * extrapolation of the fit.  Nothing for a cluster without [calibration] ranges. */
void ssim_cli_warn_extrapolation(const char *verb, const SsimParallel *par, const SsimModel *model,
                                 const SsimCluster *cluster);
/* Parses argv with `context`; on failure prints the message and returns FALSE.  On --help (-h,
 * -?, --help-all) prints the help within SSIM_CLI_HELP_COLUMNS and returns FALSE too: the verb
 * stops, and ssim_cli_main() returns success. */
gboolean ssim_cli_parse(GOptionContext *context, int *argc, char ***argv, const char *verb);
/* Writes `text` to stdout (checked: a failed or short write is an error), or to `path`
 * atomically (output.h) when path is not NULL and not "-". */
gboolean ssim_cli_emit(const char *path, const GString *text, GError **error);
/*
 * Before the work: whether output `path` can be written (ssim_output_check: a regular file or
 * none, in an existing writable directory; NULL and "-" pass), else the message and
 * SSIM_EXIT_RUNTIME.  ssim_cli_check_plot() checks an image and its .dat and .gp (NULL passes).
 */
int ssim_cli_check_output(const char *path);
int ssim_cli_check_plot(const char *image);
/*
 * --runs FILE, given once or more (validate, calibrate): every row of the files in order as one
 * table, each row keeping its file (SsimMeasuredRun.path), in *runs.  A file given twice is a
 * usage error, a file that cannot be read a runtime one, and with `fit` so is a file marked
 * `# use = check` unless `force`; each prints its message and returns its exit status.
 */
int ssim_cli_load_runs(const char *verb, const char *const *paths, gboolean fit, gboolean force,
                       SsimRuns **runs);
/* The most groupings validate --by or calibrate --cv takes. */
#define SSIM_CLI_GROUPINGS_MAX 16
/*
 * The groupings of `option` (validate --by, calibrate --cv): each of `specs` (may be NULL)
 * split at commas, each item after `prefix` ("" or "group:") a key or keys joined by '+'
 * ("tp+microbatch"), into out[0..*n) (room for SSIM_CLI_GROUPINGS_MAX), each once in the order
 * given.  An item that is not one, or more than SSIM_CLI_GROUPINGS_MAX, is a usage error naming
 * it and the keys there are; the exit status is returned.
 */
int ssim_cli_group_keys(const char *verb, const char *option, char *const *specs,
                        const char *prefix, SsimGrouping *out, guint *n);
/* The most conditions validate or calibrate --only takes. */
#define SSIM_CLI_MATCHES_MAX 16
/*
 * --only KEY=VALUE (validate, calibrate): each of `specs` (may be NULL) split at commas, each
 * item a condition on a row (ssim_row_match_parse), into out[0..*n) (room for
 * SSIM_CLI_MATCHES_MAX), and in *text the items as given, joined by commas, for messages (NULL
 * when there is none; caller frees).  A bad item is a usage error naming it; the exit status is
 * returned.
 */
int ssim_cli_row_matches(const char *verb, char *const *specs, SsimRowMatch *out, guint *n,
                         char **text);
/*
 * Keeps the rows of *runs that meet every one of m[0..n) (their keys as a run set with
 * `cluster`, the --cluster override or NULL, gives them), in order, each keeping its file, and
 * replaces *runs with them; n = 0 keeps every row.  A bad row is a runtime error, and so is a
 * condition that no row meets ("--only TEXT: no row of LABEL meets it").
 */
int ssim_cli_select_runs(const char *verb, SsimRuns **runs, const char *cluster,
                         const SsimRowMatch *m, guint n, const char *text, const char *label);
