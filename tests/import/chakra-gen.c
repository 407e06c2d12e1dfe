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
 *                  [--tensor-attrs] PREFIX
 *       a GPT-like 3D-parallel training step (GPipe order) on D*T*P ranks (cw_write_gpt() in
 *       chakra-writer.h says what it holds); --tensor-attrs gives every node the tensor
 *       metadata symbolic_tensor_graph writes (inputs, outputs, op_type), which no importer
 *       reads but every importer must get through.
 *
 *   chakra-gen offload --ranks N [--layers L] PREFIX
 *       a data-parallel step that offloads activations to a remote memory (the traffic ASTRA-sim's
 *       remote memory models): per layer a forward compute node, then a MEM_STORE of its 64 MiB
 *       of activations; backward in reverse, each layer's MEM_LOAD before its compute, and a
 *       32 MiB gradient all-reduce after it.  Compute nodes carry num_ops and tensor_size (for a
 *       roofline) and a duration (for a replay without one).
 *
 *   chakra-gen random --ranks N [--nodes K] [--seed S] [--kinds LIST] [--independent] PREFIX
 *       a random trace set of K nodes a rank (default 40; seed 1; kinds comp,cpu,invalid,coll,
 *       p2p, and mem; prio and dims give the collectives comm_priority and involved_dim), for
 * traces/chakra/astra-random.sh, which checks `replay --semantics astra` against ASTRA-sim on them
 * (cw_write_random() in chakra-writer.h says what they hold).  The same options write the same
 * bytes.
 *
 * The model arithmetic is deliberately simple (per token and layer: 24 h^2 FLOPs forward,
 * attention 4 s h more); it exists to produce realistic shapes and sizes, not to predict.
 */
#include <stdio.h>
#include <stdlib.h>

#include "chakra-writer.h"

static gboolean gen_allreduce(const char *prefix, guint ranks, guint64 bytes, GError **error)
{
    CwNode n = CW_NODE_INIT;
    n.id = 0;
    n.name = "all_reduce";
    n.type = CW_COLL;
    n.comm_type = CW_ALL_REDUCE;
    n.comm_size = (gint64)bytes;
    n.is_cpu_op = 0;
    for (guint r = 0; r < ranks; r++)
        if (!cw_write_rank(prefix, r, &n, 1, error))
            return FALSE;
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

/* The nodes of one rank's trace as they are built: node i has id i. */
typedef struct {
    CwNode *nodes;
    guint64 *deps; /* two slots a node */
    guint n;
} Chain;

/* Appends a node of `type` named `name` after the nodes `a` and `b` (-1: none); returns it. */
static CwNode *chain_add(Chain *c, int type, const char *name, gint64 a, gint64 b)
{
    CwNode n = CW_NODE_INIT;
    n.id = c->n, n.name = name, n.type = type;
    n.data_deps = &c->deps[2 * c->n];
    for (int k = 0; k < 2; k++) {
        gint64 dep = k ? b : a;
        if (dep >= 0)
            c->deps[2 * c->n + n.n_data_deps++] = (guint64)dep;
    }
    c->nodes[c->n] = n;
    return &c->nodes[c->n++];
}

static gboolean gen_offload(const char *prefix, guint ranks, guint layers, GError **error)
{
    g_autofree CwNode *nodes = g_new(CwNode, 5 * layers);
    g_autofree guint64 *deps = g_new(guint64, 10 * layers);
    g_autofree gint64 *store = g_new(gint64, layers);
    Chain c = {nodes, deps, 0};
    gint64 prev = -1;
    for (guint l = 0; l < layers; l++) {
        CwNode *fwd = chain_add(&c, CW_COMP, "fwd", prev, -1);
        fwd->num_ops = 2e11, fwd->tensor_size = 200000000, fwd->duration_micros = 250;
        prev = (gint64)fwd->id;
        CwNode *st = chain_add(&c, CW_MEM_STORE, "store_activations", prev, -1);
        st->tensor_size = 64 << 20;
        store[l] = (gint64)st->id;
    }
    for (guint l = layers; l-- > 0;) {
        CwNode *ld = chain_add(&c, CW_MEM_LOAD, "load_activations", store[l], -1);
        ld->tensor_size = 64 << 20;
        CwNode *bwd = chain_add(&c, CW_COMP, "bwd", prev, (gint64)ld->id);
        bwd->num_ops = 4e11, bwd->tensor_size = 400000000, bwd->duration_micros = 500;
        prev = (gint64)bwd->id;
        CwNode *ar = chain_add(&c, CW_COLL, "grad_allreduce", prev, -1);
        ar->comm_type = CW_ALL_REDUCE, ar->comm_size = 32 << 20;
    }
    for (guint r = 0; r < ranks; r++)
        if (!cw_write_rank(prefix, r, c.nodes, c.n, error))
            return FALSE;
    return TRUE;
}

int main(int argc, char **argv)
{
    gint ranks = 8, dp = 2, tp = 2, pp = 2, layers = 8, mbs = 4;
    gint64 bytes = 1 << 20;
    double hidden = 4096, seq = 2048;
    gboolean tensor_attrs = FALSE, independent = FALSE;
    gint nodes = 40;
    gint64 seed = 1;
    g_autofree char *kinds = NULL;
    GOptionEntry entries[] = {
        {"ranks", 'n', 0, G_OPTION_ARG_INT, &ranks, "ranks (allreduce, offload, random)", "N"},
        {"nodes", 0, 0, G_OPTION_ARG_INT, &nodes, "nodes per rank (random)", "K"},
        {"seed", 0, 0, G_OPTION_ARG_INT64, &seed, "random seed (random)", "S"},
        {"kinds", 0, 0, G_OPTION_ARG_STRING, &kinds,
         "node kinds (random): comp, cpu, invalid, coll, p2p, mem", "LIST"},
        {"independent", 0, 0, G_OPTION_ARG_NONE, &independent,
         "a graph of its own on every rank, any node type (random)", NULL},
        {"bytes", 'b', 0, G_OPTION_ARG_INT64, &bytes, "all-reduce size (allreduce)", "B"},
        {"dp", 0, 0, G_OPTION_ARG_INT, &dp, "data-parallel degree (gpt)", "D"},
        {"tp", 0, 0, G_OPTION_ARG_INT, &tp, "tensor-parallel degree (gpt)", "T"},
        {"pp", 0, 0, G_OPTION_ARG_INT, &pp, "pipeline stages (gpt)", "P"},
        {"layers", 0, 0, G_OPTION_ARG_INT, &layers, "transformer layers (gpt, offload)", "L"},
        {"microbatches", 0, 0, G_OPTION_ARG_INT, &mbs, "microbatches (gpt)", "M"},
        {"hidden", 0, 0, G_OPTION_ARG_DOUBLE, &hidden, "model width (gpt)", "H"},
        {"seq", 0, 0, G_OPTION_ARG_DOUBLE, &seq, "sequence length (gpt)", "S"},
        {"tensor-attrs", 0, 0, G_OPTION_ARG_NONE, &tensor_attrs,
         "give every node symbolic_tensor_graph's tensor metadata (inputs, outputs, op_type)",
         NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("allreduce|two-rank|gpt|offload|random PREFIX");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) error = NULL;
    if (!g_option_context_parse(ctx, &argc, &argv, &error) || argc != 3) {
        fprintf(stderr, "chakra-gen: %s\n",
                error ? error->message
                      : "usage: chakra-gen allreduce|two-rank|gpt|offload|random [options] PREFIX");
        return 2;
    }
    gboolean ok;
    if (g_str_equal(argv[1], "allreduce")) {
        if (ranks < 1 || bytes < 0)
            return fprintf(stderr, "chakra-gen: bad --ranks or --bytes\n"), 2;
        ok = gen_allreduce(argv[2], (guint)ranks, (guint64)bytes, &error);
    } else if (g_str_equal(argv[1], "two-rank")) {
        ok = gen_two_rank(argv[2], &error);
    } else if (g_str_equal(argv[1], "offload")) {
        if (ranks < 1 || layers < 1)
            return fprintf(stderr, "chakra-gen: bad --ranks or --layers\n"), 2;
        ok = gen_offload(argv[2], (guint)ranks, (guint)layers, &error);
    } else if (g_str_equal(argv[1], "random")) {
        guint set = cw_random_kinds(kinds ? kinds : "comp,cpu,invalid,coll,p2p");
        if (ranks < 1 || nodes < 1 || seed < 0 || seed > G_MAXUINT32 || set == 0)
            return fprintf(stderr, "chakra-gen: bad --ranks, --nodes, --seed or --kinds (comp, "
                                   "cpu, invalid, coll, p2p, mem, and the collectives' "
                                   "attributes prio and dims)\n"),
                   2;
        CwRandom rnd = {(guint)ranks, (guint)nodes, (guint32)seed, set, independent};
        ok = cw_write_random(&rnd, argv[2], &error);
    } else if (g_str_equal(argv[1], "gpt")) {
        if (dp < 1 || tp < 1 || pp < 1 || mbs < 1 || layers < pp || layers % pp)
            return fprintf(stderr,
                           "chakra-gen: degrees must be >= 1 and layers a multiple of pp\n"),
                   2;
        CwGpt g = {(guint)dp,  (guint)tp, (guint)pp, (guint)layers,
                   (guint)mbs, hidden,    seq,       tensor_attrs};
        ok = cw_write_gpt(&g, argv[2], &error);
    } else {
        fprintf(stderr,
                "chakra-gen: unknown mode '%s' (allreduce, two-rank, gpt, offload or random)\n",
                argv[1]);
        return 2;
    }
    if (!ok) {
        fprintf(stderr, "chakra-gen: %s\n", error->message);
        return 1;
    }
    return 0;
}
