/*
 * libFuzzer target: a Hugging Face config.json (ssim_model_load_hf_data, after the bounds check
 * of src/core/jsonbound.h).  A model that loads must also pass the derived figures (parameters,
 * FLOPs, per-stage parameters, GEMM shapes for tp 1 to 8) without tripping a sanitizer: they
 * multiply and divide loaded fields.
 */
#include <shiftsim/model.h>

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    GError *error = NULL;
    SsimModel *model =
        ssim_model_load_hf_data((const char *)data, (gssize)size, "fuzz.json", &error);
    g_assert((model == NULL) == (error != NULL));
    if (model) {
        (void)ssim_model_params(model);
        (void)ssim_model_head_dim(model);
        (void)ssim_model_forward_flops(model, 1);
        (void)ssim_model_iteration_flops(model, 8);
        (void)ssim_model_weight_bytes(model);
        for (int r = 0; r < SSIM_RECOMPUTE_N; r++)
            (void)ssim_model_hardware_flops(model, 8, (SsimRecompute)r);
        for (guint pp = 1; pp <= 4; pp *= 2)
            for (guint st = 0; st < pp; st++)
                (void)ssim_model_stage_params(model, pp, st);
        for (int k = 0; k < SSIM_GEMM_N; k++)
            for (guint tp = 1; tp <= 8; tp *= 2)
                (void)ssim_model_gemm(model, (SsimGemmKind)k, 2, tp);
        ssim_model_free(model);
    }
    g_clear_error(&error);
    return 0;
}
