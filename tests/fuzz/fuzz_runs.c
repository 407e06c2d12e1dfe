/*
 * libFuzzer target: the measured-runs CSV of `shiftsim calibrate` (ssim_runs_load_data) and the
 * vTrain validation table (ssim_runs_from_vtrain_data); the first byte picks the reader.
 */
#include <shiftsim/runs.h>
#include <shiftsim/vtrain.h>

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *text = (const char *)data + 1;
    gssize len = (gssize)size - 1;
    GError *error = NULL;
    SsimRuns *runs = (data[0] & 1)
                         ? ssim_runs_from_vtrain_data(text, len, "fuzz.csv", "dgx-a100", &error)
                         : ssim_runs_load_data(text, len, "fuzz.csv", &error);
    g_assert((runs == NULL) == (error != NULL));
    if (runs) {
        g_string_free(ssim_runs_write(runs), TRUE);
        ssim_runs_free(runs);
    }
    g_clear_error(&error);
    return 0;
}
