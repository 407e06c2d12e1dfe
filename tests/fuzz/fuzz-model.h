/*
 * What both model targets (fuzz_model.c: the INI; fuzz_model_hf.c: a Hugging Face config.json)
 * do with a model that loads: the derived figures (parameters, FLOPs, per-stage parameters, GEMM
 * shapes for tp 1 to 8), which multiply and divide loaded fields, must not trip a sanitizer.
 */
#ifndef SSIM_FUZZ_MODEL_H
#define SSIM_FUZZ_MODEL_H

#include <shiftsim/model.h>

static void fuzz_model_figures(const SsimModel *model)
{
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
}

#endif
