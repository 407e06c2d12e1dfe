/*
 * Helpers of the tests that build models, clusters and sweep lists from their names (tests/study):
 * each asserts that what it parses or loads is accepted, with the library's message otherwise.
 */
#ifndef SSIM_TESTS_SPECTEST_H
#define SSIM_TESTS_SPECTEST_H

#include <shiftsim/cluster.h>
#include <shiftsim/model.h>
#include <shiftsim/sweep.h>

/* The bundled (or a file's) model and cluster; the caller owns them. */
SsimModel *test_model(const char *name);
SsimCluster *test_cluster(const char *name);

/* A sweep list parsed from its command-line text ("1,2,4", "alpa,commshift"). */
void test_sweep_ints(SsimSweepInts *list, const char *text);
void test_sweep_names(SsimSweepNames *list, const char *text);

#endif
