/*
 * libFuzzer target: the Kineto (PyTorch profiler) JSON importer (ssim_kineto_load_data).
 */
#include <shiftsim/kineto.h>

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    GError *error = NULL;
    SsimKinetoSummary summary;
    SsimProfile *profile =
        ssim_kineto_load_data((const char *)data, (gssize)size, "fuzz.json", &summary, &error);
    g_assert((profile == NULL) == (error != NULL));
    if (profile) {
        g_string_free(ssim_profile_write(profile), TRUE);
        ssim_profile_free(profile);
    }
    g_clear_error(&error);
    return 0;
}
