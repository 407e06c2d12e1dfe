/*
 * The op classes of a training step and their names (include/shiftsim/opclass.h).
 */
#include <shiftsim/opclass.h>

#include <string.h>

static const char *const class_names[] = {
#define SSIM_X(e, s) [SSIM_OPCLASS_##e] = s,
    SSIM_OPCLASS_LIST(SSIM_X)
#undef SSIM_X
};

const char *ssim_opclass_name(SsimOpClass cls)
{
    g_return_val_if_fail(cls < SSIM_OPCLASS_N, "?");
    return class_names[cls];
}

gboolean ssim_opclass_from_name(const char *name, SsimOpClass *out)
{
    for (guint i = 0; i < SSIM_OPCLASS_N; i++) {
        if (name != NULL && strcmp(name, class_names[i]) == 0) {
            *out = (SsimOpClass)i;
            return TRUE;
        }
    }
    return FALSE;
}

static const char *const comm_names[SSIM_COMM_N] = {"tp", "pp", "dp"};

const char *ssim_comm_class_name(SsimCommClass cls)
{
    g_return_val_if_fail(cls < SSIM_COMM_N, "?");
    return comm_names[cls];
}
