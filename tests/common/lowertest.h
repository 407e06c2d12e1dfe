/*
 * Helpers of the tests that lower a split by hand (tests/workload): one place that validates the
 * split, builds its schedule by name and lowers it, asserting each step with the library's
 * message; and one that sums a rank's ops of one name.
 */
#ifndef SSIM_TESTS_LOWERTEST_H
#define SSIM_TESTS_LOWERTEST_H

#include <shiftsim/lower.h>

/* `par` lowered for `model` under the schedule it names, with `options` (NULL: the defaults);
 * the caller owns the result. */
SsimLowered *test_lower(const SsimModel *model, const SsimParallel *par,
                        const SsimLowerOptions *options);

/* The ops of graph rank `rank` named `name`: how many, their bytes and their FLOPs summed. */
typedef struct {
    guint n;
    guint64 bytes;
    double flops;
} TestOps;
TestOps test_ops_named(const SsimLowered *l, guint rank, const char *name);

#endif
