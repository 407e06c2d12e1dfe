/*
 * chakra-gen: writes Chakra execution traces with the test encoder, for the examples under
 * traces/chakra/ and for the scale measurements of the importer.
 *
 *   chakra-gen allreduce --ranks N [--bytes B] PREFIX
 *       one all-reduce of B bytes (default 1 MiB) per rank on all ranks, no comm-group JSON:
 *       the shape of ASTRA-sim's own microbenchmark traces.
 *   chakra-gen two-rank PREFIX
 *       the two-rank trace whose timeline tests/import/test_chakra.c draws by hand (makespan
 *       58 us under the default cost model: alpha 5 us, links 100 GB/s).
 *   chakra-gen gpt --dp D --tp T --pp P [--layers L] [--microbatches M] [--hidden H] [--seq S]
 *                  PREFIX
 *       a GPT-like 3D-parallel training step (GPipe order) on D*T*P ranks, rank = t + T*(d + D*p):
 *       per microbatch and layer an attention and an MLP compute node (num_ops and tensor_size,
 *       no duration, so the replay prices them by roofline), each followed by a tensor-parallel
 *       all-reduce of the activations; pipeline sends and receives of the activations between
 *       stages (tagged); the backward pass in reverse at twice the FLOPs; and one data-parallel
 *       all-reduce of each layer's gradients after its last backward.  Writes PREFIX.json with
 *       the groups: TP group of (p, d) is "1 + p*D + d", DP group of (p, t) is
 *       "1 + P*D + p*T + t".
 *
 * The model arithmetic is deliberately simple (per token and layer: 24 h^2 FLOPs forward,
 * attention 4 s h more); it exists to produce realistic shapes and sizes, not to predict.
 */
#include <stdio.h>
#include <stdlib.h>

#include "chakra-writer.h"

static gboolean gen_allreduce(const char *prefix, guint ranks, guint64 bytes, GError **error)
{
    for (guint r = 0; r < ranks; r++) {
        g_autofree char *path = cw_rank_path(prefix, r);
        CwWriter *w = cw_open(path, "0.0.4");
        CwNode n = CW_NODE_INIT;
        n.id = 0;
        n.name = "all_reduce";
        n.type = CW_COLL;
        n.comm_type = CW_ALL_REDUCE;
        n.comm_size = (gint64)bytes;
        n.is_cpu_op = 0;
        cw_node(w, &n);
        if (!cw_close(w, error))
            return FALSE;
    }
    return TRUE;
}

static gboolean gen_two_rank(const char *prefix, GError **error)
{
    static const guint64 d1[] = {1}, d2[] = {2}, d3[] = {3}, d5[] = {5};
    for (guint r = 0; r < 2; r++) {
        g_autofree char *path = cw_rank_path(prefix, r);
        CwWriter *w = cw_open(path, "0.0.4");
        CwNode c0 = CW_NODE_INIT, ar = CW_NODE_INIT, a = CW_NODE_INIT, b = CW_NODE_INIT;
        c0.id = 1, c0.name = "c0", c0.type = CW_COMP, c0.duration_micros = r == 0 ? 10 : 20;
        ar.id = 2, ar.name = "ar", ar.type = CW_COLL, ar.comm_type = CW_ALL_REDUCE;
        ar.comm_size = 1000000, ar.data_deps = d1, ar.n_data_deps = 1;
        if (r == 0) {
            a.id = 3, a.name = "c1", a.type = CW_COMP, a.duration_micros = 5;
            a.data_deps = d2, a.n_data_deps = 1;
            b.id = 4, b.name = "send", b.type = CW_SEND, b.comm_dst = 1, b.comm_tag = 7;
            b.comm_size = 500000, b.ctrl_deps = d3, b.n_ctrl_deps = 1;
        } else {
            a.id = 5, a.name = "recv", a.type = CW_RECV, a.comm_src = 0, a.comm_tag = 7;
            a.comm_size = 500000;
            b.id = 6, b.name = "c2", b.type = CW_COMP, b.duration_micros = 3;
            b.data_deps = d5, b.n_data_deps = 1;
        }
        cw_node(w, &c0);
        cw_node(w, &ar);
        cw_node(w, &a);
        cw_node(w, &b);
        if (!cw_close(w, error))
            return FALSE;
    }
    return TRUE;
}

typedef struct {
    guint dp, tp, pp, layers, mbs;
    double hidden, seq;
} Gpt;

static guint rank_of(const Gpt *g, guint t, guint d, guint p)
{
    return t + g->tp * (d + g->dp * p);
}

static void tp_name(const Gpt *g, guint p, guint d, char *buf, gsize n)
{
    g_snprintf(buf, n, "%u", 1 + p * g->dp + d);
}

static void dp_name(const Gpt *g, guint p, guint t, char *buf, gsize n)
{
    g_snprintf(buf, n, "%u", 1 + g->pp * g->dp + p * g->tp + t);
}

/* Appends a node and returns its id. */
static guint64 put(CwWriter *w, guint64 *next_id, CwNode *n, const guint64 *deps, guint n_deps)
{
    n->id = (*next_id)++;
    n->data_deps = deps;
    n->n_data_deps = n_deps;
    cw_node(w, n);
    return n->id;
}

static guint64 comp(CwWriter *w, guint64 *id, const char *name, double flops, double bytes,
                    const guint64 *deps, guint n_deps)
{
    CwNode n = CW_NODE_INIT;
    n.name = name;
    n.type = CW_COMP;
    n.num_ops = flops;
    n.tensor_size = (gint64)bytes;
    n.is_cpu_op = 0;
    return put(w, id, &n, deps, n_deps);
}

static guint64 allreduce(CwWriter *w, guint64 *id, const char *name, const char *pg, double bytes,
                         guint64 dep)
{
    CwNode n = CW_NODE_INIT;
    n.name = name;
    n.type = CW_COLL;
    n.comm_type = CW_ALL_REDUCE;
    n.comm_size = (gint64)bytes;
    n.pg_name = pg;
    n.is_cpu_op = 0;
    return put(w, id, &n, &dep, 1);
}

static guint64 p2p(CwWriter *w, guint64 *id, gboolean send, const char *name, guint peer, guint tag,
                   double bytes, const guint64 *deps, guint n_deps)
{
    CwNode n = CW_NODE_INIT;
    n.name = name;
    n.type = send ? CW_SEND : CW_RECV;
    n.comm_size = (gint64)bytes;
    if (send)
        n.comm_dst = peer;
    else
        n.comm_src = peer;
    n.comm_tag = tag;
    n.is_cpu_op = 0;
    return put(w, id, &n, deps, n_deps);
}

static gboolean gen_rank(const Gpt *g, const char *prefix, guint t, guint d, guint p,
                         GError **error)
{
    g_autofree char *path = cw_rank_path(prefix, rank_of(g, t, d, p));
    CwWriter *w = cw_open(path, "0.0.4");
    char tp_pg[16], dp_pg[16], name[96];
    tp_name(g, p, d, tp_pg, sizeof tp_pg);
    dp_name(g, p, t, dp_pg, sizeof dp_pg);
    guint per = g->layers / g->pp, l0 = p * per;
    double h = g->hidden, s = g->seq, T = g->tp;
    double act = s * h * 2; /* bytes of one microbatch's activations */
    double attn_flops = (8 * s * h * h + 4 * s * s * h) / T, mlp_flops = 16 * s * h * h / T;
    double attn_bytes = 8 * h * h / T + 3 * act, mlp_bytes = 16 * h * h / T + 3 * act;
    guint64 id = 1, prev = 0;
    g_autofree guint64 *fwd_last = g_new0(guint64, g->mbs);
    g_autofree guint64 *bwd = g_new0(guint64, (gsize)per * g->mbs);

    for (guint m = 0; m < g->mbs; m++) {
        gboolean have = FALSE;
        if (p > 0) {
            g_snprintf(name, sizeof name, "mb%u.recv_act", m);
            prev = p2p(w, &id, FALSE, name, rank_of(g, t, d, p - 1), 2 * m, act / T, NULL, 0);
            have = TRUE;
        }
        for (guint l = l0; l < l0 + per; l++) {
            g_snprintf(name, sizeof name, "mb%u.layer%u.attn", m, l);
            prev = comp(w, &id, name, attn_flops, attn_bytes, &prev, have);
            have = TRUE;
            if (g->tp > 1) {
                g_snprintf(name, sizeof name, "mb%u.layer%u.attn_tp_allreduce", m, l);
                prev = allreduce(w, &id, name, tp_pg, act, prev);
            }
            g_snprintf(name, sizeof name, "mb%u.layer%u.mlp", m, l);
            prev = comp(w, &id, name, mlp_flops, mlp_bytes, &prev, 1);
            if (g->tp > 1) {
                g_snprintf(name, sizeof name, "mb%u.layer%u.mlp_tp_allreduce", m, l);
                prev = allreduce(w, &id, name, tp_pg, act, prev);
            }
        }
        if (p + 1 < g->pp) {
            g_snprintf(name, sizeof name, "mb%u.send_act", m);
            p2p(w, &id, TRUE, name, rank_of(g, t, d, p + 1), 2 * m, act / T, &prev, 1);
        }
        fwd_last[m] = prev;
    }
    for (guint mi = g->mbs; mi-- > 0;) {
        guint64 start[2] = {fwd_last[mi], 0};
        guint n_start = 1;
        if (p + 1 < g->pp) {
            g_snprintf(name, sizeof name, "mb%u.recv_grad", mi);
            start[1] =
                p2p(w, &id, FALSE, name, rank_of(g, t, d, p + 1), 2 * mi + 1, act / T, NULL, 0);
            n_start = 2;
        }
        for (guint l = l0 + per; l-- > l0;) {
            g_snprintf(name, sizeof name, "mb%u.layer%u.mlp_bwd", mi, l);
            prev = comp(w, &id, name, 2 * mlp_flops, 2 * mlp_bytes, start, n_start);
            n_start = 1;
            if (g->tp > 1) {
                g_snprintf(name, sizeof name, "mb%u.layer%u.mlp_bwd_tp_allreduce", mi, l);
                prev = allreduce(w, &id, name, tp_pg, act, prev);
            }
            g_snprintf(name, sizeof name, "mb%u.layer%u.attn_bwd", mi, l);
            prev = comp(w, &id, name, 2 * attn_flops, 2 * attn_bytes, &prev, 1);
            bwd[(gsize)(l - l0) * g->mbs + mi] = prev;
            if (g->tp > 1) {
                g_snprintf(name, sizeof name, "mb%u.layer%u.attn_bwd_tp_allreduce", mi, l);
                prev = allreduce(w, &id, name, tp_pg, act, prev);
            }
            start[0] = prev;
        }
        if (p > 0) {
            g_snprintf(name, sizeof name, "mb%u.send_grad", mi);
            p2p(w, &id, TRUE, name, rank_of(g, t, d, p - 1), 2 * mi + 1, act / T, &prev, 1);
        }
    }
    if (g->dp > 1)
        for (guint l = l0; l < l0 + per; l++) {
            CwNode n = CW_NODE_INIT;
            g_snprintf(name, sizeof name, "layer%u.grad_dp_allreduce", l);
            n.name = name;
            n.type = CW_COLL;
            n.comm_type = CW_ALL_REDUCE;
            n.comm_size = (gint64)(24 * h * h / T); /* 12 h^2 parameters in 2-byte gradients */
            n.pg_name = dp_pg;
            n.is_cpu_op = 0;
            put(w, &id, &n, &bwd[(gsize)(l - l0) * g->mbs], g->mbs);
        }
    return cw_close(w, error);
}

static gboolean gen_gpt(const Gpt *g, const char *prefix, GError **error)
{
    for (guint p = 0; p < g->pp; p++)
        for (guint d = 0; d < g->dp; d++)
            for (guint t = 0; t < g->tp; t++)
                if (!gen_rank(g, prefix, t, d, p, error))
                    return FALSE;
    guint ng = g->pp * g->dp + g->pp * g->tp;
    g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GPtrArray) ranks = g_ptr_array_new_with_free_func(g_free);
    g_autofree guint *n_ranks = g_new(guint, ng);
    guint k = 0;
    for (guint p = 0; p < g->pp; p++)
        for (guint d = 0; d < g->dp; d++, k++) {
            guint32 *r = g_new(guint32, g->tp);
            for (guint t = 0; t < g->tp; t++)
                r[t] = rank_of(g, t, d, p);
            g_ptr_array_add(ids, g_strdup_printf("%u", 1 + p * g->dp + d));
            g_ptr_array_add(ranks, r);
            n_ranks[k] = g->tp;
        }
    for (guint p = 0; p < g->pp; p++)
        for (guint t = 0; t < g->tp; t++, k++) {
            guint32 *r = g_new(guint32, g->dp);
            for (guint d = 0; d < g->dp; d++)
                r[d] = rank_of(g, t, d, p);
            g_ptr_array_add(ids, g_strdup_printf("%u", 1 + g->pp * g->dp + p * g->tp + t));
            g_ptr_array_add(ranks, r);
            n_ranks[k] = g->dp;
        }
    g_autofree char *json = g_strconcat(prefix, ".json", NULL);
    return cw_write_groups(json, ng, (const char *const *)ids->pdata,
                           (const guint32 *const *)ranks->pdata, n_ranks, error);
}

int main(int argc, char **argv)
{
    gint ranks = 8, dp = 2, tp = 2, pp = 2, layers = 8, mbs = 4;
    gint64 bytes = 1 << 20;
    double hidden = 4096, seq = 2048;
    GOptionEntry entries[] = {
        {"ranks", 'n', 0, G_OPTION_ARG_INT, &ranks, "ranks (allreduce)", "N"},
        {"bytes", 'b', 0, G_OPTION_ARG_INT64, &bytes, "all-reduce size (allreduce)", "B"},
        {"dp", 0, 0, G_OPTION_ARG_INT, &dp, "data-parallel degree (gpt)", "D"},
        {"tp", 0, 0, G_OPTION_ARG_INT, &tp, "tensor-parallel degree (gpt)", "T"},
        {"pp", 0, 0, G_OPTION_ARG_INT, &pp, "pipeline stages (gpt)", "P"},
        {"layers", 0, 0, G_OPTION_ARG_INT, &layers, "transformer layers (gpt)", "L"},
        {"microbatches", 0, 0, G_OPTION_ARG_INT, &mbs, "microbatches (gpt)", "M"},
        {"hidden", 0, 0, G_OPTION_ARG_DOUBLE, &hidden, "model width (gpt)", "H"},
        {"seq", 0, 0, G_OPTION_ARG_DOUBLE, &seq, "sequence length (gpt)", "S"},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("allreduce|two-rank|gpt PREFIX");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) error = NULL;
    if (!g_option_context_parse(ctx, &argc, &argv, &error) || argc != 3) {
        fprintf(stderr, "chakra-gen: %s\n",
                error ? error->message
                      : "usage: chakra-gen allreduce|two-rank|gpt [options] PREFIX");
        return 2;
    }
    gboolean ok;
    if (g_str_equal(argv[1], "allreduce")) {
        if (ranks < 1 || bytes < 0)
            return fprintf(stderr, "chakra-gen: bad --ranks or --bytes\n"), 2;
        ok = gen_allreduce(argv[2], (guint)ranks, (guint64)bytes, &error);
    } else if (g_str_equal(argv[1], "two-rank")) {
        ok = gen_two_rank(argv[2], &error);
    } else if (g_str_equal(argv[1], "gpt")) {
        if (dp < 1 || tp < 1 || pp < 1 || mbs < 1 || layers < pp || layers % pp)
            return fprintf(stderr,
                           "chakra-gen: degrees must be >= 1 and layers a multiple of pp\n"),
                   2;
        Gpt g = {(guint)dp, (guint)tp, (guint)pp, (guint)layers, (guint)mbs, hidden, seq};
        ok = gen_gpt(&g, argv[2], &error);
    } else {
        fprintf(stderr, "chakra-gen: unknown mode '%s' (allreduce, two-rank or gpt)\n", argv[1]);
        return 2;
    }
    if (!ok) {
        fprintf(stderr, "chakra-gen: %s\n", error->message);
        return 1;
    }
    return 0;
}
