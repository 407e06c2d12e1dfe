/* Helpers shared by the core tests: building small graphs by hand. */
#pragma once

#include <criterion/criterion.h>
#include <shiftsim/graph.h>
#include <shiftsim/runtime.h>

static inline guint32 t_compute(SsimGraph *g, guint32 rank, const char *stream, SsimTime dur,
                                const guint32 *deps, guint n_deps)
{
    SsimOpSpec s = SSIM_OP_SPEC_INIT;
    s.stream = ssim_graph_stream(g, rank, stream);
    s.duration = dur;
    return ssim_graph_add_op(g, &s, deps, n_deps);
}

/* A collective of a given duration (-1: the cost model's). */
static inline guint32 t_coll_timed(SsimGraph *g, guint32 rank, const char *stream, guint32 group,
                                   SsimCollKind kind, guint64 bytes, SsimTime dur,
                                   const guint32 *deps, guint n_deps)
{
    SsimOpSpec s = SSIM_OP_SPEC_INIT;
    s.kind = SSIM_OP_COLLECTIVE;
    s.coll = kind;
    s.stream = ssim_graph_stream(g, rank, stream);
    s.group = group;
    s.bytes = bytes;
    s.duration = dur;
    return ssim_graph_add_op(g, &s, deps, n_deps);
}

static inline guint32 t_coll(SsimGraph *g, guint32 rank, const char *stream, guint32 group,
                             SsimCollKind kind, guint64 bytes, const guint32 *deps, guint n_deps)
{
    return t_coll_timed(g, rank, stream, group, kind, bytes, -1, deps, n_deps);
}

/* A send or a receive with a tag of its own (SSIM_TAG_AUTO: issue order). */
static inline guint32 t_p2p_tag(SsimGraph *g, SsimOpKind kind, guint32 rank, const char *stream,
                                guint32 peer, guint32 tag, guint64 bytes, const guint32 *deps,
                                guint n_deps)
{
    SsimOpSpec s = SSIM_OP_SPEC_INIT;
    s.kind = kind;
    s.stream = ssim_graph_stream(g, rank, stream);
    s.peer = peer;
    s.tag = tag;
    s.bytes = bytes;
    return ssim_graph_add_op(g, &s, deps, n_deps);
}

static inline guint32 t_p2p(SsimGraph *g, SsimOpKind kind, guint32 rank, const char *stream,
                            guint32 peer, guint64 bytes, const guint32 *deps, guint n_deps)
{
    return t_p2p_tag(g, kind, rank, stream, peer, SSIM_TAG_AUTO, bytes, deps, n_deps);
}

static inline guint32 t_group(SsimGraph *g, const char *name, guint n, ...)
{
    guint32 ranks[64];
    va_list ap;
    va_start(ap, n);
    for (guint i = 0; i < n; i++)
        ranks[i] = va_arg(ap, guint32);
    va_end(ap);
    guint32 gi = ssim_graph_add_group(g, name, ranks, n, NULL);
    cr_assert_neq(gi, SSIM_NONE);
    return gi;
}

#define DEPS(...)                                                                                  \
    ((const guint32[]){__VA_ARGS__}), (sizeof((const guint32[]){__VA_ARGS__}) / sizeof(guint32))
#define NODEPS NULL, 0
