/*
 * The umbrella header a user of libshiftsim includes: every public header, lowest layer first
 * (docs/development.md, "Layers").  Build with `pkg-config --cflags --libs shiftsim`.
 */
#pragma once

/* core: units, the event engine, the op graph, the CUDA-stream runtime, output files */
#include <shiftsim/types.h>
#include <shiftsim/alloc.h>
#include <shiftsim/data.h>
#include <shiftsim/output.h>
#include <shiftsim/engine.h>
#include <shiftsim/graph.h>
#include <shiftsim/graphfile.h>
#include <shiftsim/runtime.h>
/* spec: the model, the cluster and its free parameters, the parallel configuration, measured
 * runs */
#include <shiftsim/model.h>
#include <shiftsim/cluster.h>
#include <shiftsim/clusterparams.h>
#include <shiftsim/parallel.h>
#include <shiftsim/opclass.h>
#include <shiftsim/runs.h>
/* workload: schedules, the lowering, placement, memory */
#include <shiftsim/schedule.h>
#include <shiftsim/plan.h>
#include <shiftsim/place.h>
#include <shiftsim/lower.h>
#include <shiftsim/memory.h>
/* cost: cost models and measured profiles */
#include <shiftsim/analytic.h>
#include <shiftsim/profile.h>
#include <shiftsim/profiled.h>
/* net: the flow network and its calibration */
#include <shiftsim/net.h>
#include <shiftsim/netcal.h>
/* import: other tools' formats */
#include <shiftsim/chakra.h>
#include <shiftsim/kineto.h>
#include <shiftsim/nccltests.h>
#include <shiftsim/vtrain.h>
#include <shiftsim/import.h>
/* run: one simulated iteration */
#include <shiftsim/budget.h>
#include <shiftsim/sim.h>
#include <shiftsim/replay.h>
#include <shiftsim/astra.h>
#include <shiftsim/bound.h>
#include <shiftsim/steady.h>
/* out: reports, traces, plots */
#include <shiftsim/report.h>
#include <shiftsim/summary.h>
#include <shiftsim/trace.h>
#include <shiftsim/plot.h>
#include <shiftsim/stepbars.h>
#include <shiftsim/explain.h>
/* study: many simulations */
#include <shiftsim/sweep.h>
#include <shiftsim/compare.h>
#include <shiftsim/runset.h>
#include <shiftsim/validate.h>
#include <shiftsim/calibrate.h>
