/*
 * Where a simulation's costs came from, written after its summary (summary.h) in the summary's
 * format: the count of op costs per source (exact, interpolated, extrapolated, analytical) by
 * lowering class and by op kind (`shiftsim simulate --explain-costs`), and the figures a measured
 * profile calibrated the flow network with (netcal.h).
 *
 * Both append to the text ssim_result_format() made: a table after a blank line, a CSV block
 * after a blank line, or a member added to the JSON object (the text is parsed, extended and
 * written again, pretty-printed; text that does not parse is left as it is).
 */
#pragma once

#include <shiftsim/netcal.h>
#include <shiftsim/profiled.h>
#include <shiftsim/report.h>
#include <shiftsim/sim.h>

G_BEGIN_DECLS

/* The cost sources: a table per lowering class and per op kind under "cost sources (SOURCE)", the
 * per-kind CSV, or a "cost_sources" object (kind -> source -> count).  `source` names the profile;
 * NULL says the analytical model answered everything. */
void ssim_explain_append_costs(GString *out, SsimFormat format, const char *source,
                               const SsimCostExplain *kinds, const SsimClassExplain *classes);

/* The per-iteration costs of the step (`result`'s step-cost figures, parallel.h's SsimStepCost):
 * per term whether it was on, its ops per step, its time per GPU and the Megatron-LM argument
 * its default mirrors; `microbatch_floor` is the host term's time per microbatch phase (the
 * cluster's).  A table under "per-iteration costs", CSV rows under a header, or a "step_costs"
 * array. */
void ssim_explain_append_step_costs(GString *out, SsimFormat format, const SsimResult *result,
                                    SsimTime microbatch_floor);

/* The network calibration from profile `source`: its fits as a table, as CSV rows under a header,
 * or a "network_calibration" array. */
void ssim_explain_append_netcal(GString *out, SsimFormat format, const char *source,
                                const SsimNetCal *cal);

G_END_DECLS
