/* Shared units and error domains (see include/shiftsim/types.h). */
#include <shiftsim/types.h>

#include <math.h>

G_DEFINE_QUARK(ssim - config - error - quark, ssim_config_error)
G_DEFINE_QUARK(ssim - run - error - quark, ssim_run_error)

SsimTime ssim_time_from_seconds(double seconds)
{
    if (!(seconds > 0.0)) /* also catches NaN */
        return 0;
    double ns = seconds * 1e9;
    if (ns >= 9.2e18)
        return INT64_MAX;
    return (SsimTime)llround(ns);
}

double ssim_time_to_seconds(SsimTime t)
{
    return (double)t * 1e-9;
}

int ssim_cmp_u32(const void *a, const void *b)
{
    guint32 x = *(const guint32 *)a, y = *(const guint32 *)b;
    return (x > y) - (x < y);
}
