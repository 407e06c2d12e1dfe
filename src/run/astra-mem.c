/*
 * The remote memory under the ASTRA-sim-compatible replay: ASTRA-sim's AnalyticalRemoteMemory
 * (extern/remote_memory_backend/analytical), which serves MEM_LOAD and MEM_STORE nodes.  A
 * transfer of S bytes takes latency + S / bandwidth ns (truncated).  Each NPU has its own
 * (PER_NPU_MEMORY_EXPANSION); or a node's NPUs, or all NPUs (MEMORY_POOL), share one that serves
 * one transfer at a time, first come first served.  When a shared one's transfer ends, the
 * node's op ends first (its rank may issue another memory node at that instant, which queues)
 * and then the memory takes its next request, as ASTRA-sim registers the two events in that
 * order.
 *
 * Invariant: a unit is busy exactly while one of its transfers is in flight; its pending ops are
 * [head, pending->len) in arrival order.
 */
#include "src/run/astra-private.h"

/* AnalyticalRemoteMemory::get_remote_mem_runtime (G_MAXINT64 past the horizon). */
static SsimTime transfer_time(const Replay *R, guint64 bytes)
{
    SsimTime t = astra_ns((double)bytes / (double)R->cfg.mem_bw);
    return t < ASTRA_HORIZON && R->cfg.mem_latency_ns < (guint64)ASTRA_HORIZON
               ? t + (SsimTime)R->cfg.mem_latency_ns
               : G_MAXINT64;
}

/* Starts `op`'s transfer on `unit` now: the op ends, then the unit frees, at its end. */
static void start(Replay *R, guint32 unit, guint32 op)
{
    SsimTime t = transfer_time(R, R->ops[op].bytes);
    guint32 rank = R->ops[op].rank; /* the requester's system layer, as ASTRA-sim's sys_map */
    astra_sys_at(R, rank, t, SYS_OP_DONE, op, 0);
    astra_sys_at(R, rank, t, SYS_MEM_FREE, unit, 0);
    R->mem_units[unit].busy = TRUE;
}

void astra_mem_build(Replay *R)
{
    SsimAstraMemType t = R->cfg.mem_type;
    R->n_mem_units = t == SSIM_ASTRA_MEM_PER_NODE ? R->cfg.mem_nodes
                     : t == SSIM_ASTRA_MEM_POOL   ? 1
                                                  : 0;
    R->mem_units = g_new0(MemUnit, MAX(R->n_mem_units, 1u));
    for (guint u = 0; u < R->n_mem_units; u++)
        R->mem_units[u].pending = g_array_new(FALSE, FALSE, sizeof(guint32));
}

void astra_mem_issue(Replay *R, guint32 rank, guint32 op)
{
    const SsimAstraConfig *c = &R->cfg;
    R->stats.n_mem++;
    if (c->mem_type == SSIM_ASTRA_MEM_NONE) {
        astra_fail(R, g_error_new(SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                                  "--semantics astra: rank %u: node %" G_GUINT64_FORMAT
                                  " is a memory node, and the remote memory is "
                                  "NO_MEMORY_EXPANSION, ASTRA-sim's example (it exits: \"Remote "
                                  "memory access is not supported in NO_MEMORY_EXPANSION\"); "
                                  "give another with --astra-memory",
                                  rank, R->node_ids[op]));
        return;
    }
    if (c->mem_type == SSIM_ASTRA_MEM_PER_NPU) {
        astra_sys_at(R, rank, transfer_time(R, R->ops[op].bytes), SYS_OP_DONE, op, 0);
        return;
    }
    guint32 unit = c->mem_type == SSIM_ASTRA_MEM_PER_NODE ? rank / c->mem_npus_node : 0;
    if (unit >= R->n_mem_units) {
        /* ASTRA-sim indexes past its per-node state. */
        astra_fail(R, g_error_new(SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                                  "--semantics astra: rank %u: a memory node on node %u of "
                                  "PER_NODE_MEMORY_EXPANSION's %u (num-nodes x "
                                  "num-npus-per-node must cover every rank)",
                                  rank, unit, R->n_mem_units));
        return;
    }
    MemUnit *m = &R->mem_units[unit];
    if (m->busy)
        g_array_append_val(m->pending, op);
    else
        start(R, unit, op);
}

void astra_on_mem_free(Replay *R, guint32 unit)
{
    MemUnit *m = &R->mem_units[unit];
    m->busy = FALSE;
    if (m->head == m->pending->len)
        return;
    guint32 op = g_array_index(m->pending, guint32, m->head++);
    if (m->head == m->pending->len) {
        g_array_set_size(m->pending, 0);
        m->head = 0;
    }
    start(R, unit, op);
}

void astra_mem_clear(Replay *R)
{
    for (guint u = 0; u < R->n_mem_units; u++)
        g_array_unref(R->mem_units[u].pending);
    g_clear_pointer(&R->mem_units, g_free);
    R->n_mem_units = 0;
}
