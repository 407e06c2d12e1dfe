/*
 * The op-by-op graph comparison of chakra-check.h.  It reads both graphs only through the public
 * API, so it holds no assumption of the importer's.
 */
#include "chakra-check.h"

#include <string.h>

static const char *opt_string(const SsimGraph *g, guint32 id)
{
    return id == SSIM_NONE ? "(none)" : ssim_graph_string(g, id);
}

char *cw_graph_diff(const SsimGraph *a, const SsimGraph *b)
{
    if (ssim_graph_n_ranks(a) != ssim_graph_n_ranks(b))
        return g_strdup_printf("ranks %u != %u", ssim_graph_n_ranks(a), ssim_graph_n_ranks(b));
    if (ssim_graph_n_streams(a) != ssim_graph_n_streams(b))
        return g_strdup_printf("streams %u != %u", ssim_graph_n_streams(a),
                               ssim_graph_n_streams(b));
    for (guint32 s = 0; s < ssim_graph_n_streams(a); s++)
        if (ssim_graph_stream_rank(a, s) != ssim_graph_stream_rank(b, s) ||
            strcmp(ssim_graph_stream_name(a, s), ssim_graph_stream_name(b, s)) != 0)
            return g_strdup_printf("stream %u: %u/%s != %u/%s", s, ssim_graph_stream_rank(a, s),
                                   ssim_graph_stream_name(a, s), ssim_graph_stream_rank(b, s),
                                   ssim_graph_stream_name(b, s));
    if (ssim_graph_n_groups(a) != ssim_graph_n_groups(b))
        return g_strdup_printf("groups %u != %u", ssim_graph_n_groups(a), ssim_graph_n_groups(b));
    for (guint32 gi = 0; gi < ssim_graph_n_groups(a); gi++) {
        guint na, nb;
        const guint32 *ra = ssim_graph_group_ranks(a, gi, &na);
        const guint32 *rb = ssim_graph_group_ranks(b, gi, &nb);
        if (strcmp(ssim_graph_group_name(a, gi), ssim_graph_group_name(b, gi)) != 0 || na != nb ||
            memcmp(ra, rb, na * sizeof *ra) != 0)
            return g_strdup_printf("group %u (%s) differs", gi, ssim_graph_group_name(a, gi));
    }
    if (ssim_graph_n_ops(a) != ssim_graph_n_ops(b))
        return g_strdup_printf("ops %u != %u", ssim_graph_n_ops(a), ssim_graph_n_ops(b));
    for (guint32 i = 0; i < ssim_graph_n_ops(a); i++) {
        const SsimOp *x = ssim_graph_op(a, i), *y = ssim_graph_op(b, i);
#define SAME(f)                                                                                    \
    if (x->f != y->f)                                                                              \
        return g_strdup_printf("op %u: " #f " differs", i);
        SAME(kind);
        SAME(coll);
        SAME(stream);
        SAME(rank);
        SAME(id);
        SAME(group);
        SAME(peer);
        SAME(tag);
        SAME(match);
        SAME(duration);
        SAME(bytes);
        SAME(n_deps);
        SAME(name); /* interned in the same order: the same string ids */
        SAME(cls);
#undef SAME
        if (memcmp(&x->flops, &y->flops, sizeof x->flops) != 0)
            return g_strdup_printf("op %u: flops %g != %g", i, x->flops, y->flops);
        if (strcmp(opt_string(a, x->name), opt_string(b, y->name)) != 0)
            return g_strdup_printf("op %u: name %s != %s", i, opt_string(a, x->name),
                                   opt_string(b, y->name));
        if (strcmp(ssim_graph_string(a, x->cls), ssim_graph_string(b, y->cls)) != 0)
            return g_strdup_printf("op %u: class differs", i);
        guint nda, ndb;
        const guint32 *da = ssim_graph_deps(a, i, &nda), *db = ssim_graph_deps(b, i, &ndb);
        if (nda != ndb || (nda > 0 && memcmp(da, db, nda * sizeof *da) != 0))
            return g_strdup_printf("op %u: dependencies differ", i);
    }
    return NULL;
}
