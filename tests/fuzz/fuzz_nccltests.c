/*
 * libFuzzer target: the nccl-tests importers (text and JSON) and the vTrain LUT importer.  The
 * first byte picks the importer, the rest is the file.
 */
#include <shiftsim/nccltests.h>
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
    SsimProfile *profile = ssim_profile_new();
    gboolean ok;
    switch (data[0] % 4) {
    case 0:
        ok = ssim_nccltests_import_text(profile, text, len, "fuzz.txt", NULL, &error);
        break;
    case 1:
        ok = ssim_nccltests_import_text(profile, text, len, "fuzz.txt", "allreduce", &error);
        break;
    case 2:
        ok = ssim_nccltests_import_json(profile, text, len, "fuzz.json", NULL, &error);
        break;
    default:
        ok = ssim_vtrain_import_lut(profile, text, len, "AR_GPU8_LUT.csv", &error);
        break;
    }
    g_assert(ok == (error == NULL));
    if (ok)
        g_string_free(ssim_profile_write(profile), TRUE);
    ssim_profile_free(profile);
    g_clear_error(&error);
    return 0;
}
