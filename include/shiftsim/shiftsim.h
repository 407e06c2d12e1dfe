/* The umbrella header a user of libshiftsim includes. */
#pragma once

#include <shiftsim/types.h>
#include <shiftsim/engine.h>
#include <shiftsim/graph.h>
#include <shiftsim/runtime.h>
#include <shiftsim/graphfile.h>
#include <shiftsim/report.h>
#include <shiftsim/data.h>
