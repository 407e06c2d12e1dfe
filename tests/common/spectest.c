/* Helpers of the tests that load models, clusters and sweep lists (tests/common/spectest.h). */
#include "tests/common/spectest.h"

#include <criterion/criterion.h>

SsimModel *test_model(const char *name)
{
    g_autoptr(GError) error = NULL;
    SsimModel *m = ssim_model_load(name, &error);
    cr_assert_not_null(m, "%s", error ? error->message : "");
    return m;
}

SsimCluster *test_cluster(const char *name)
{
    g_autoptr(GError) error = NULL;
    SsimCluster *c = ssim_cluster_load(name, &error);
    cr_assert_not_null(c, "%s", error ? error->message : "");
    return c;
}

void test_sweep_ints(SsimSweepInts *list, const char *text)
{
    g_autoptr(GError) error = NULL;
    cr_assert(ssim_sweep_ints_parse(list, text, &error), "%s: %s", text,
              error ? error->message : "");
}

void test_sweep_names(SsimSweepNames *list, const char *text)
{
    g_autoptr(GError) error = NULL;
    cr_assert(ssim_sweep_names_parse(list, text, &error), "%s: %s", text,
              error ? error->message : "");
}
