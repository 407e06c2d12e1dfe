/*
 * The summary of one simulated training iteration (SsimResult, sim.h) for people and scripts.
 */
#pragma once

#include <shiftsim/report.h>
#include <shiftsim/sim.h>

G_BEGIN_DECLS

/* The result as a table (with a header naming the configuration), one CSV row with a header
 * line, or a JSON object. */
GString *ssim_result_format(const SsimResult *result, const SsimSimConfig *config,
                            SsimFormat format);

/* Appends ", attention flash", ", transformer-impl local", ", fp8 hybrid", ", tp-comm-overlap
 * on", ", cross-entropy te", ", launch-blocking on", ", overlap-param-gather on": the options
 * that change the kernels or when they run, those not at their defaults (the options line of
 * the table above, and compare's split line). */
void ssim_summary_append_kernel_options(GString *out, const SsimParallel *par);

/* The split line's two ends: "split       dp D x tp T x pp P[ x cp C]" and, for an uneven
 * split, ", stage layers 6/8/8/6" (", chunk layers ..." with v > 1).  The table above and
 * compare's split line write what goes between. */
void ssim_summary_append_split_grid(GString *out, const SsimParallel *par);
void ssim_summary_append_split_layers(GString *out, const SsimParallel *par);

/* Appends the header's model line, "model       NAME\n", with a sliding window that shortens
 * the sequence's attention ("NAME, sliding window 1024 on 29 of 34 layers"), and under
 * unfused attention that its kernels compute every score all the same. */
void ssim_summary_append_model_line(GString *out, const SsimModel *model, const SsimParallel *par);

G_END_DECLS
