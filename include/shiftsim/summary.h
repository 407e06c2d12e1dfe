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

G_END_DECLS
