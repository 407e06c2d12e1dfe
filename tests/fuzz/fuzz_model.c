/*
 * libFuzzer target: the model INI (ssim_model_load_data).  A model that loads must also pass
 * the derived figures (fuzz-model.h) without tripping a sanitizer.
 */
#include "fuzz-model.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    GError *error = NULL;
    SsimModel *model = ssim_model_load_data((const char *)data, (gssize)size, "fuzz.ini", &error);
    g_assert((model == NULL) == (error != NULL));
    if (model) {
        fuzz_model_figures(model);
        ssim_model_free(model);
    }
    g_clear_error(&error);
    return 0;
}
