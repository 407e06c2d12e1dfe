/*
 * Name lookups for the bench's enums (the name functions themselves are declared in bench.h,
 * which the CUDA sources include).  Plain C with GLib, for the driver and the tests.
 */
#pragma once

#include "src/microbench/bench.h"

#include <glib.h>

G_BEGIN_DECLS

/* Case-insensitive; FALSE for an unknown name. */
gboolean ssim_bench_dtype_from_name(const char *name, SsimBenchDtype *out);
gboolean ssim_bench_coll_from_name(const char *name, SsimBenchColl *out);

G_END_DECLS
