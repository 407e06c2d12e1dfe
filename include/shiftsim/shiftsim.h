/* The umbrella header a user of libshiftsim includes. */
#pragma once

#include <shiftsim/types.h>
#include <shiftsim/engine.h>
#include <shiftsim/graph.h>
#include <shiftsim/runtime.h>
#include <shiftsim/graphfile.h>
#include <shiftsim/report.h>
#include <shiftsim/trace.h>
#include <shiftsim/plot.h>
#include <shiftsim/data.h>
#include <shiftsim/model.h>
#include <shiftsim/cluster.h>
#include <shiftsim/parallel.h>
#include <shiftsim/memory.h>
#include <shiftsim/schedule.h>
#include <shiftsim/place.h>
#include <shiftsim/lower.h>
#include <shiftsim/analytic.h>
#include <shiftsim/sim.h>
#include <shiftsim/sweep.h>
#include <shiftsim/calibrate.h>
#include <shiftsim/kineto.h>
#include <shiftsim/chakra.h>
#include <shiftsim/profile.h>
#include <shiftsim/profiled.h>
#include <shiftsim/net.h>
