/*
 * libFuzzer target: the measured-profile CSV (ssim_profile_load_data).  A profile that loads is
 * written back, summarised and asked every kind of lookup at sizes taken from its own rows (and
 * beside them), so interpolation and extrapolation see whatever the reader accepted.
 */
#include <shiftsim/profile.h>

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    GError *error = NULL;
    SsimProfile *profile =
        ssim_profile_load_data((const char *)data, (gssize)size, "fuzz.csv", &error);
    g_assert((profile == NULL) == (error != NULL));
    if (profile) {
        for (guint i = 0; i < ssim_profile_n_rows(profile) && i < 4; i++) {
            const SsimProfileRow *r = ssim_profile_row(profile, i);
            SsimCostEstimate est;
            SsimProfileComm comm = SSIM_PCOMM_ALLREDUCE;
            (void)ssim_profile_comm_from_name(r->op, &comm);
            for (guint64 f = 1; f <= 4; f *= 2) {
                (void)ssim_profile_comm_time(profile, comm, SSIM_PROFILE_NO_DTYPE, r->bytes * f + 1,
                                             MAX(r->ranks, 2u) * (guint)f,
                                             MAX(r->ranks_per_node, 1u), NULL, NULL, &est);
                (void)ssim_profile_gemm_time(profile, r->m * f, r->n + f, r->k, MAX(r->batch, 1u),
                                             SSIM_DTYPE_BF16, NULL, &est);
                (void)ssim_profile_flops_time(profile, 1e9 * (double)f * (double)(i + 1),
                                              SSIM_DTYPE_BF16, NULL, &est);
                (void)ssim_profile_attention_time(profile, f == 2, r->m + f, r->n, r->k,
                                                  MAX(r->batch, 1u), SSIM_DTYPE_BF16, NULL, &est);
                (void)ssim_profile_memory_time(profile, r->op, SSIM_PROFILE_NO_DTYPE, r->bytes * f,
                                               NULL, &est);
                (void)ssim_profile_copy_time(profile, r->op, r->bytes / f, NULL, &est);
            }
        }
        g_string_free(ssim_profile_write(profile), TRUE);
        g_string_free(ssim_profile_summary(profile), TRUE);
        ssim_profile_free(profile);
    }
    g_clear_error(&error);
    return 0;
}
