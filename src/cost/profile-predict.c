/*
 * The cost a profile (and its analytical fallback) gives the op of one measured row: the same
 * lookups the simulator makes for the ops it lowers, so `shiftsim profile check` can put the
 * simulator's answer beside each measurement of another profile.
 */
#include <shiftsim/profile.h>

#include <string.h>

gboolean ssim_profile_row_time(const SsimProfile *by, const SsimProfileRow *row,
                               const SsimAnalyticParams *fallback, SsimCostEstimate *out)
{
    g_return_val_if_fail(by != NULL && row != NULL && out != NULL, FALSE);
    /* Compute rows always carry a dtype (the reader refuses them without one). */
    SsimDtype dtype = row->dtype >= 0 ? (SsimDtype)row->dtype : SSIM_DTYPE_BF16;
    switch (row->kind) {
    case SSIM_PROFILE_GEMM:
        return ssim_profile_gemm_time(by, row->m, row->n, row->k, MAX(row->batch, 1), dtype,
                                      fallback, out);
    case SSIM_PROFILE_ATTENTION: {
        gboolean backward = FALSE, flash = FALSE;
        ssim_profile_attention_pass(row->op, &backward, &flash);
        if (flash) {
            guint64 b = MAX(row->batch, 1);
            guint64 bytes = ssim_profile_flash_bytes(backward, row->m, row->n, row->k, b, dtype);
            return ssim_profile_flash_time(by, backward, row->m, row->n, row->k, b, bytes, dtype,
                                           fallback, out);
        }
        return ssim_profile_attention_time(by, backward, row->m, row->n, row->k, MAX(row->batch, 1),
                                           dtype, fallback, out);
    }
    case SSIM_PROFILE_MEMORY:
        return ssim_profile_memory_time(by, row->op, row->dtype, row->bytes, fallback, out);
    case SSIM_PROFILE_COPY:
        return ssim_profile_copy_time(by, row->op, row->bytes, fallback, out);
    case SSIM_PROFILE_COMM: {
        SsimProfileComm op;
        if (!ssim_profile_comm_from_name(row->op, &op))
            return FALSE;
        SsimAnalyticParams at_layout;
        const SsimAnalyticParams *net = fallback;
        if (fallback != NULL && row->nics_per_rank > 0) {
            at_layout = *fallback;
            at_layout.nics_per_gpu = row->nics_per_rank;
            net = &at_layout;
        }
        return ssim_profile_comm_time(by, op, row->dtype, row->bytes, row->ranks,
                                      row->ranks_per_node, row->algo[0] ? row->algo : NULL, net,
                                      out);
    }
    case SSIM_PROFILE_KIND_N:
        break;
    }
    return FALSE;
}
