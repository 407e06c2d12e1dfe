/*
 * `shiftsim merge A.csv B.csv ... -o ALL.csv`: joins the CSVs of `shiftsim sweep --shard I/N`
 * runs (a Slurm job array, GNU parallel) into the CSV one process would have written.
 *
 * The files must come from one sweep: their metadata and header lines must be identical (they
 * name the model, cluster, GPU count, every list and the number of configurations, but not the
 * shard); a configuration may appear in one file only, and all of them must be present unless
 * --partial.  Rows are put back in configuration order, byte for byte as the shards wrote them.
 */
#include "src/app/verbs.h"

#include <shiftsim/sweep.h>

#define VERB "merge"

int ssim_verb_merge(int argc, char **argv)
{
    g_auto(SsimCliOutput) output = {0};
    gboolean partial = FALSE;
    GOptionEntry entries[] = {
        ssim_cli_output_entry(&output, SSIM_OPT_FORMAT,
                              "csv (default: the merged sweep CSV) or json (sweep -f json's "
                              "shape, docs/sweep.md)"),
        ssim_cli_output_entry(&output, SSIM_OPT_OUTPUT,
                              "Write the merged CSV (or JSON) to FILE atomically (default "
                              "stdout)"),
        {"partial", 0, 0, G_OPTION_ARG_NONE, &partial,
         "Allow configurations to be missing (merge the shards that finished)", NULL},
        {NULL}};
    g_autoptr(GOptionContext) ctx = g_option_context_new("SHARD.csv... - merge sweep shards");
    g_option_context_set_summary(
        ctx, "Reassembles the CSVs of 'shiftsim sweep --shard I/N' runs into the exact CSV of\n"
             "one unsharded run, after checking that they belong to the same sweep.");
    g_option_context_set_description(
        ctx, "Example:\n"
             "  for i in 0 1 2 3; do shiftsim sweep --gpus 32 --shard $i/4 -o part$i.csv; done\n"
             "  shiftsim merge part0.csv part1.csv part2.csv part3.csv -o all.csv\n\n"
             "Exit status: 0 success; 1 unreadable, foreign or incomplete input; 2 usage error.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!ssim_cli_parse(ctx, &argc, &argv, VERB))
        return SSIM_EXIT_USAGE;
    if (argc < 2)
        return ssim_cli_usage_error(VERB, "give at least one shard CSV");
    SsimFormat format = SSIM_FORMAT_CSV;
    if (output.format && !ssim_format_from_name(output.format, &format))
        format = SSIM_FORMAT_TABLE;
    if (format == SSIM_FORMAT_TABLE)
        return ssim_cli_usage_error(VERB, "--format: '%s' is not csv or json", output.format);
    int rc = ssim_cli_check_output(output.output);
    if (rc != SSIM_EXIT_OK)
        return rc;
    g_autoptr(GError) error = NULL;
    g_autoptr(GString) merged =
        ssim_sweep_merge((const char *const *)argv + 1, (guint)(argc - 1), partial, &error);
    if (merged == NULL)
        return ssim_cli_runtime_error(error);
    if (format == SSIM_FORMAT_JSON) {
        GString *json = ssim_sweep_csv_json(merged->str, merged->len, argv[1], &error);
        if (json == NULL)
            return ssim_cli_runtime_error(error);
        g_string_free(merged, TRUE);
        merged = json;
    }
    if (!ssim_cli_emit(output.output, merged, &error))
        return ssim_cli_runtime_error(error);
    return SSIM_EXIT_OK;
}
