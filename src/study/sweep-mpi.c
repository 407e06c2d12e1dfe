/*
 * A sweep over MPI ranks (include/shiftsim/sweep.h): `mpirun -n K shiftsim sweep ...`.
 *
 * Each rank enumerates the same space (the spec comes from the same command line) and evaluates
 * the configurations k with k / shards = rank (mod K) inside its shard, on its own thread pool;
 * rank 0 then gathers every evaluated row and writes exactly what a single process would.  A
 * row is a plain struct without pointers, so it travels as one MPI datatype of sizeof(row)
 * bytes: this assumes every rank runs the same binary on the same architecture, which mpirun
 * over one cluster's nodes gives.  Counts are in rows, so a rank may send up to G_MAXINT rows.
 *
 * Built with -Dmpi=enabled (SSIM_HAVE_MPI); otherwise the functions are stubs saying so, and
 * ssim_sweep_mpi_launched() still tells the verb that it was started by a launcher, so it can
 * refuse rather than have K processes each write the whole sweep.
 */
#include <shiftsim/sweep.h>

#include <stdlib.h>

gboolean ssim_sweep_mpi_launched(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"};
    for (gsize i = 0; i < G_N_ELEMENTS(vars); i++)
        if (g_getenv(vars[i]) != NULL)
            return TRUE;
    return FALSE;
}

#ifdef SSIM_HAVE_MPI

#include <mpi.h>

gboolean ssim_sweep_mpi_available(void)
{
    return TRUE;
}

static gboolean mpi_fail(int rc, const char *what, GError **error)
{
    if (rc == MPI_SUCCESS)
        return TRUE;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO, "MPI: %s failed: %.*s", what, len,
                msg);
    return FALSE;
}

gboolean ssim_sweep_mpi_init(int *argc, char ***argv, guint *rank, guint *size, GError **error)
{
    int provided = 0, r = 0, n = 1;
    /* Only the calling thread makes MPI calls; the pool's workers never do. */
    if (!mpi_fail(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread",
                  error))
        return FALSE;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    *rank = (guint)r;
    *size = (guint)n;
    return TRUE;
}

gboolean ssim_sweep_mpi_gather(SsimSweep *sweep, GError **error)
{
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    guint n = ssim_sweep_n_configs(sweep);
    g_autoptr(GArray) mine = g_array_new(FALSE, FALSE, sizeof(SsimSweepRow));
    for (guint i = 0; i < n; i++) {
        const SsimSweepRow *r = ssim_sweep_row(sweep, i);
        if (r->status != SSIM_SWEEP_PENDING)
            g_array_append_val(mine, *r);
    }
    if (mine->len > G_MAXINT) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "MPI: rank %d has %u rows, more than one gather can carry", rank, mine->len);
        return FALSE;
    }
    MPI_Datatype row_type;
    MPI_Type_contiguous((int)sizeof(SsimSweepRow), MPI_BYTE, &row_type);
    MPI_Type_commit(&row_type);
    int count = (int)mine->len;
    g_autofree int *counts = rank == 0 ? g_new0(int, size) : NULL;
    g_autofree int *displs = rank == 0 ? g_new0(int, size) : NULL;
    gboolean ok = mpi_fail(MPI_Gather(&count, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD),
                           "MPI_Gather", error);
    g_autofree SsimSweepRow *all = NULL;
    gint64 total = 0;
    if (ok && rank == 0) {
        for (int i = 0; i < size; i++) {
            displs[i] = (int)total;
            total += counts[i];
        }
        if (total > G_MAXINT) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "MPI: %" G_GINT64_FORMAT " rows are more than one gather can carry", total);
            ok = FALSE;
        } else {
            all = g_new(SsimSweepRow, MAX(total, 1));
        }
    }
    /* Every rank takes part in the Gatherv even when the root failed above, so none hangs. */
    if (!mpi_fail(MPI_Gatherv(mine->data, count, row_type, all, counts, displs, row_type, 0,
                              MPI_COMM_WORLD),
                  "MPI_Gatherv", ok ? error : NULL))
        ok = FALSE;
    MPI_Type_free(&row_type);
    if (ok && rank == 0)
        for (gint64 i = 0; i < total; i++) {
            if (all[i].index >= n) {
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                            "MPI: a rank sent configuration %u of a %u-configuration sweep "
                            "(different command lines?)",
                            all[i].index, n);
                return FALSE;
            }
            ssim_sweep_set_row(sweep, &all[i]);
        }
    return ok;
}

void ssim_sweep_mpi_finalize(void)
{
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized)
        MPI_Finalize();
}

#else /* !SSIM_HAVE_MPI */

gboolean ssim_sweep_mpi_available(void)
{
    return FALSE;
}

gboolean ssim_sweep_mpi_init(int *argc, char ***argv, guint *rank, guint *size, GError **error)
{
    (void)argc;
    (void)argv;
    *rank = 0;
    *size = 1;
    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                "this shiftsim was built without MPI (reconfigure with -Dmpi=enabled)");
    return FALSE;
}

gboolean ssim_sweep_mpi_gather(SsimSweep *sweep, GError **error)
{
    (void)sweep;
    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                "this shiftsim was built without MPI (reconfigure with -Dmpi=enabled)");
    return FALSE;
}

void ssim_sweep_mpi_finalize(void)
{
}

#endif
