/*
 * Tests of the cluster's free parameters (spec/clusterparams): parsing a list of their names.
 * The INI round trip of tests/spec/test_cluster.c checks get on every parameter.
 */
#include <criterion/criterion.h>
#include <shiftsim/clusterparams.h>

#include <string.h>

Test(clusterparams, params_parse)
{
    g_autoptr(GError) error = NULL;
    guint64 mask = 0;
    cr_assert(ssim_calib_params_parse("gemm, nvlink", &mask, &error));
    cr_assert_eq(mask, (1u << SSIM_CALIB_GEMM) | (1u << SSIM_CALIB_NVLINK));
    cr_assert_not(ssim_calib_params_parse("gemm,speed", &mask, &error));
    cr_assert(strstr(error->message, "'speed' is not a calibration parameter") != NULL);
}
