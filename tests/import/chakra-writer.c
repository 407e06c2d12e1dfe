/*
 * The test encoder of Chakra traces (see chakra-writer.h): builds each message with the
 * generated protobuf-c structs, packs it, and frames it with its varint length.
 */
#include "chakra-writer.h"

#include <glib/gstdio.h>
#include <string.h>

#include "chakra.pb-c.h"

struct CwWriter {
    char *path;
    GByteArray *bytes;
    gboolean tensor_io;
};

static void put_varint(GByteArray *b, guint64 v)
{
    guint8 buf[10];
    guint n = 0;
    do {
        buf[n] = (guint8)(v & 0x7f);
        v >>= 7;
        if (v)
            buf[n] |= 0x80;
        n++;
    } while (v);
    g_byte_array_append(b, buf, n);
}

static void put_message(GByteArray *b, const ProtobufCMessage *m)
{
    gsize len = protobuf_c_message_get_packed_size(m);
    put_varint(b, len);
    guint old = b->len;
    g_byte_array_set_size(b, old + (guint)len);
    protobuf_c_message_pack(m, b->data + old);
}

char *cw_rank_path(const char *prefix, guint rank)
{
    return g_strdup_printf("%s.%u.et", prefix, rank);
}

gboolean cw_write_rank(const char *prefix, guint rank, const CwNode *nodes, guint n, GError **error)
{
    g_autofree char *path = cw_rank_path(prefix, rank);
    CwWriter *w = cw_open(path, "0.0.4");
    for (guint i = 0; i < n; i++)
        cw_node(w, &nodes[i]);
    return cw_close(w, error);
}

CwWriter *cw_open(const char *path, const char *version)
{
    CwWriter *w = g_new0(CwWriter, 1);
    w->path = g_strdup(path);
    w->bytes = g_byte_array_new();
    ChakraProtoMsg__GlobalMetadata md = CHAKRA_PROTO_MSG__GLOBAL_METADATA__INIT;
    md.version = (char *)(version ? version : "0.0.4");
    put_message(w->bytes, &md.base);
    return w;
}

void cw_set_tensor_io(CwWriter *w, gboolean on)
{
    w->tensor_io = on;
}

void cw_raw(CwWriter *w, const void *bytes, gsize len)
{
    g_byte_array_append(w->bytes, bytes, (guint)len);
}

void cw_node(CwWriter *w, const CwNode *c)
{
    ChakraProtoMsg__Node n = CHAKRA_PROTO_MSG__NODE__INIT;
    ChakraProtoMsg__AttributeProto attrs[20];
    ChakraProtoMsg__AttributeProto *ptrs[20];
    guint na = 0;
#define ADD_INT(key, v)                                                                            \
    if ((v) != CW_ABSENT) {                                                                        \
        chakra_proto_msg__attribute_proto__init(&attrs[na]);                                       \
        attrs[na].name = (char *)(key);                                                            \
        attrs[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;                 \
        attrs[na].int64_val = (v);                                                                 \
        na++;                                                                                      \
    }
#define ADD_STR(key, v)                                                                            \
    if ((v) != NULL) {                                                                             \
        chakra_proto_msg__attribute_proto__init(&attrs[na]);                                       \
        attrs[na].name = (char *)(key);                                                            \
        attrs[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;                \
        attrs[na].string_val = (char *)(v);                                                        \
        na++;                                                                                      \
    }
    ADD_INT("comm_type", c->comm_type);
    ADD_INT("comm_size", c->comm_size);
    ADD_INT("comm_src", c->comm_src);
    ADD_INT("comm_dst", c->comm_dst);
    ADD_INT("comm_tag", c->comm_tag);
    ADD_STR("pg_name", c->pg_name);
    ADD_STR("stream", c->stream);
    if (c->extra_attr)
        ADD_STR(c->extra_attr, "x");
    if (c->num_ops >= 0) {
        chakra_proto_msg__attribute_proto__init(&attrs[na]);
        attrs[na].name = (char *)"num_ops";
        attrs[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
        attrs[na].int64_val = (gint64)c->num_ops;
        na++;
    }
    if (c->tensor_size != CW_ABSENT) {
        /* ASTRA-sim's generators write tensor_size as uint64, unlike the other sizes. */
        chakra_proto_msg__attribute_proto__init(&attrs[na]);
        attrs[na].name = (char *)"tensor_size";
        attrs[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL;
        attrs[na].uint64_val = (guint64)c->tensor_size;
        na++;
    }
    /* Tensor metadata as symbolic_tensor_graph writes it: the tensors read and written (name
     * and shape, then size), and an op code; no importer reads them. */
    char in_name[160], out_name[160];
    char *in_vals[2] = {in_name, (char *)"2097152.0"},
         *out_vals[2] = {out_name, (char *)"2097152.0"};
    ChakraProtoMsg__StringList lists[2] = {CHAKRA_PROTO_MSG__STRING_LIST__INIT,
                                           CHAKRA_PROTO_MSG__STRING_LIST__INIT};
    if (w->tensor_io) {
        const char *base = c->name ? c->name : "node";
        g_snprintf(in_name, sizeof in_name, "%s.x@0MicroBatch/dp,Seq/(cp*tp),Dmodel", base);
        g_snprintf(out_name, sizeof out_name, "%s.y@0MicroBatch/dp,Seq/(cp*tp),Dmodel", base);
        const char *keys[2] = {"inputs", "outputs"};
        for (guint i = 0; i < 2; i++) {
            lists[i].n_values = 2;
            lists[i].values = i == 0 ? in_vals : out_vals;
            chakra_proto_msg__attribute_proto__init(&attrs[na]);
            attrs[na].name = (char *)keys[i];
            attrs[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_LIST;
            attrs[na].string_list = &lists[i];
            na++;
        }
    }
    if (c->is_cpu_op != CW_ABSENT) {
        chakra_proto_msg__attribute_proto__init(&attrs[na]);
        attrs[na].name = (char *)"is_cpu_op";
        attrs[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL;
        attrs[na].bool_val = c->is_cpu_op != 0;
        na++;
    }
    if (w->tensor_io && c->type == CW_COMP)
        ADD_STR("op_type", "E");
    if (c->comm_priority != CW_ABSENT) {
        chakra_proto_msg__attribute_proto__init(&attrs[na]);
        attrs[na].name = (char *)"comm_priority";
        attrs[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL;
        attrs[na].int32_val = (gint32)c->comm_priority;
        na++;
    }
    ChakraProtoMsg__BoolList dims = CHAKRA_PROTO_MSG__BOOL_LIST__INIT;
    protobuf_c_boolean dim_vals[64];
    if (c->involved_dim) {
        dims.n_values = MIN(strlen(c->involved_dim), G_N_ELEMENTS(dim_vals));
        for (gsize i = 0; i < dims.n_values; i++)
            dim_vals[i] = c->involved_dim[i] == 't';
        dims.values = dim_vals;
        chakra_proto_msg__attribute_proto__init(&attrs[na]);
        attrs[na].name = (char *)"involved_dim";
        attrs[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_LIST;
        attrs[na].bool_list = &dims;
        na++;
    }
#undef ADD_INT
#undef ADD_STR
    for (guint i = 0; i < na; i++)
        ptrs[i] = &attrs[i];
    n.id = c->id;
    n.name = (char *)(c->name ? c->name : "");
    n.type = (ChakraProtoMsg__NodeType)c->type;
    n.n_data_deps = c->n_data_deps;
    n.data_deps = (uint64_t *)c->data_deps;
    n.n_ctrl_deps = c->n_ctrl_deps;
    n.ctrl_deps = (uint64_t *)c->ctrl_deps;
    n.duration_micros = c->duration_micros;
    n.n_attr = na;
    n.attr = ptrs;
    put_message(w->bytes, &n.base);
}

gboolean cw_close(CwWriter *w, GError **error)
{
    gboolean ok = g_file_set_contents(w->path, (const char *)w->bytes->data, w->bytes->len, error);
    g_byte_array_unref(w->bytes);
    g_free(w->path);
    g_free(w);
    return ok;
}

gboolean cw_write_groups(const char *path, guint n_groups, const char *const *ids,
                         const guint32 *const *groups, const guint *n_ranks, GError **error)
{
    g_autoptr(GString) s = g_string_new("{");
    for (guint g = 0; g < n_groups; g++) {
        g_string_append_printf(s, "%s\"%s\": [", g ? ", " : "", ids[g]);
        for (guint i = 0; i < n_ranks[g]; i++)
            g_string_append_printf(s, "%s%u", i ? ", " : "", groups[g][i]);
        g_string_append(s, "]");
    }
    g_string_append(s, "}\n");
    return g_file_set_contents(path, s->str, (gssize)s->len, error);
}

/* ---- a GPT-like 3D-parallel step (cw_write_gpt) ---- */

static guint rank_of(const CwGpt *g, guint t, guint d, guint p)
{
    return t + g->tp * (d + g->dp * p);
}

static void tp_name(const CwGpt *g, guint p, guint d, char *buf, gsize n)
{
    g_snprintf(buf, n, "%u", 1 + p * g->dp + d);
}

static void dp_name(const CwGpt *g, guint p, guint t, char *buf, gsize n)
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

static gboolean gpt_rank(const CwGpt *g, const char *prefix, guint t, guint d, guint p,
                         GError **error)
{
    g_autofree char *path = cw_rank_path(prefix, rank_of(g, t, d, p));
    CwWriter *w = cw_open(path, "0.0.4");
    cw_set_tensor_io(w, g->tensor_io);
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

gboolean cw_write_gpt(const CwGpt *g, const char *prefix, GError **error)
{
    for (guint p = 0; p < g->pp; p++)
        for (guint d = 0; d < g->dp; d++)
            for (guint t = 0; t < g->tp; t++)
                if (!gpt_rank(g, prefix, t, d, p, error))
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

void cw_rm_rf(const char *path)
{
    GDir *d = g_dir_open(path, 0, NULL);
    if (d == NULL) {
        g_unlink(path);
        return;
    }
    const char *e;
    while ((e = g_dir_read_name(d))) {
        g_autofree char *p = g_build_filename(path, e, NULL);
        cw_rm_rf(p);
    }
    g_dir_close(d);
    g_rmdir(path);
}

/* ---- random sets ---- */

/* Node kinds (K_N of them), then attributes of the collectives. */
enum { K_COMP, K_CPU, K_INVALID, K_COLL, K_P2P, K_MEM, K_N, K_PRIO = K_N, K_DIMS, K_ALL };
static const char *const kind_names[K_ALL] = {"comp", "cpu", "invalid", "coll",
                                              "p2p",  "mem", "prio",    "dims"};

/* One node of the shared random graph (the per-rank parts are drawn as each rank is written). */
typedef struct {
    int kind, type; /* type: the Chakra node type, with --independent */
    guint64 id, deps[3], ctrl;
    guint n_deps, n_ctrl;
    gint64 comm_type, size, tag;
    gboolean half_group, even_sends, load;
    double ops;
    char dims[5]; /* involved_dim ("dims") */
} RandNode;

/* `n` distinct ids from 1 .. 4n, in a random order. */
static guint64 *random_ids(GRand *rng, guint n)
{
    guint64 *pool = g_new(guint64, 4 * (gsize)n);
    for (guint i = 0; i < 4 * n; i++)
        pool[i] = i + 1;
    for (guint i = 0; i < n; i++) { /* a partial Fisher-Yates shuffle */
        guint j = i + (guint)g_rand_int_range(rng, 0, (gint32)(4 * n - i));
        guint64 t = pool[i];
        pool[i] = pool[j];
        pool[j] = t;
    }
    return pool;
}

/* Up to `max` distinct earlier ids of ids[0 .. k) into out; returns how many. */
static guint pick_deps(GRand *rng, const guint64 *ids, guint k, guint max, guint64 *out)
{
    guint n = 0;
    for (guint tries = 0; tries < 2 * max && n < max && k > 0; tries++) {
        guint64 d = ids[g_rand_int_range(rng, 0, (gint32)k)];
        gboolean seen = FALSE;
        for (guint i = 0; i < n; i++)
            seen |= out[i] == d;
        if (!seen)
            out[n++] = d;
    }
    return n;
}

gboolean cw_write_random(const CwRandom *spec, const char *prefix, GError **error)
{
    guint ranks = spec->ranks, n = spec->nodes, kinds = spec->kinds;
    gboolean independent = spec->independent;
    g_return_val_if_fail(ranks > 0 && n > 0 && (kinds & ((1u << K_N) - 1)), FALSE);
    static const gint64 colls[] = {CW_ALL_REDUCE, CW_ALL_REDUCE, CW_ALL_GATHER, CW_REDUCE_SCATTER,
                                   CW_ALL_TO_ALL};
    static const gint64 sizes[] = {1 << 10, 1 << 16, 1 << 20, 3 << 18};
    static const int weights[K_N] = {6, 1, 1, 2, 1, 1};
    g_autoptr(GRand) rng = g_rand_new_with_seed(spec->seed);
    int bag[16];
    guint n_bag = 0;
    for (int k = 0; k < K_N; k++)
        for (int w = 0; (kinds >> k & 1) && w < weights[k]; w++)
            bag[n_bag++] = k;
    g_autofree RandNode *plan = g_new0(RandNode, n);
    g_autofree CwNode *nodes = g_new(CwNode, n);
    for (guint r = 0; r < ranks; r++) {
        if (r == 0 || independent) {
            g_autofree guint64 *ids = random_ids(rng, n);
            for (guint k = 0; k < n; k++) {
                RandNode *p = &plan[k];
                *p = (RandNode){.id = ids[k], .kind = bag[g_rand_int_range(rng, 0, (gint32)n_bag)]};
                /* --independent: any type ASTRA-sim's statistics know (not metadata, on which
                 * it aborts: a compute node instead) */
                p->type = g_rand_int_range(rng, 0, 8);
                if (p->type == CW_METADATA)
                    p->type = CW_COMP;
                if (k > 0 && g_rand_double(rng) < 0.85)
                    p->n_deps = pick_deps(rng, ids, k, (guint)g_rand_int_range(rng, 1, 3), p->deps);
                if (k > 2 && g_rand_double(rng) < 0.15)
                    p->n_ctrl = pick_deps(rng, ids, k, 1, &p->ctrl);
                p->comm_type = colls[g_rand_int_range(rng, 0, G_N_ELEMENTS(colls))];
                p->size = sizes[g_rand_int_range(rng, 0, G_N_ELEMENTS(sizes))];
                p->half_group = ranks >= 4 && g_rand_double(rng) < 1.0 / 3;
                p->even_sends = g_rand_boolean(rng);
                p->load = g_rand_boolean(rng);
                p->tag = 100 + k;
                p->ops = 1000.0 * g_rand_int_range(rng, 1, 1000000000);
                for (guint d = 0; (kinds >> K_DIMS & 1) && d < 4; d++)
                    p->dims[d] = g_rand_double(rng) < 0.7 ? 't' : 'f';
            }
        }
        for (guint k = 0; k < n; k++) {
            const RandNode *p = &plan[k];
            CwNode *x = &nodes[k];
            *x = (CwNode)CW_NODE_INIT;
            x->id = p->id;
            char name[24];
            g_snprintf(name, sizeof name, "n%" G_GUINT64_FORMAT, p->id);
            x->name = g_intern_string(name);
            x->data_deps = p->deps, x->n_data_deps = p->n_deps;
            x->ctrl_deps = &p->ctrl, x->n_ctrl_deps = p->n_ctrl;
            if (independent) {
                x->type = p->type;
                if (g_rand_double(rng) < 0.85)
                    x->duration_micros = (guint64)g_rand_int_range(rng, 0, 41);
                if (g_rand_double(rng) < 0.3)
                    x->is_cpu_op = g_rand_double(rng) < 0.7;
                continue;
            }
            /* An odd rank count leaves the last rank no partner: a compute node instead. */
            int kind = p->kind == K_P2P && (r ^ 1) >= ranks ? K_COMP : p->kind;
            switch (kind) {
            case K_COMP:
            case K_CPU:
                x->type = CW_COMP;
                x->duration_micros = (guint64)g_rand_int_range(rng, 0, 31);
                x->num_ops = p->ops;
                x->tensor_size = (gint64)(p->ops / 50);
                if (kind == K_CPU)
                    x->is_cpu_op = 1;
                break;
            case K_INVALID:
                x->type = CW_INVALID;
                break;
            case K_COLL:
                x->type = CW_COLL;
                x->comm_type = p->comm_type;
                x->comm_size = p->size;
                x->pg_name = p->half_group ? (r % 2 ? "2" : "1") : NULL;
                if (kinds >> K_PRIO & 1)
                    x->comm_priority = g_rand_int_range(rng, 0, 4);
                if ((kinds >> K_DIMS & 1) && !p->half_group)
                    x->involved_dim = p->dims;
                break;
            case K_P2P: {
                guint peer = r ^ 1;
                gboolean sends = (r % 2 == 0) == p->even_sends;
                x->type = sends ? CW_SEND : CW_RECV;
                x->comm_size = p->size;
                x->comm_tag = p->tag;
                x->comm_src = sends ? r : peer;
                x->comm_dst = sends ? peer : r;
                break;
            }
            default:
                x->type = p->load ? CW_MEM_LOAD : CW_MEM_STORE;
                x->tensor_size = p->size;
                break;
            }
        }
        if (!cw_write_rank(prefix, r, nodes, n, error))
            return FALSE;
    }
    if (independent || ranks < 4)
        return TRUE;
    g_autofree guint32 *halves = g_new(guint32, ranks);
    guint n_half[2] = {0, 0};
    for (guint r = 0; r < ranks; r++)
        halves[(r % 2) * ((ranks + 1) / 2) + n_half[r % 2]++] = r;
    const guint32 *groups[2] = {halves, halves + (ranks + 1) / 2};
    static const char *const names_of[2] = {"1", "2"};
    g_autofree char *json = g_strconcat(prefix, ".json", NULL);
    return cw_write_groups(json, 2, names_of, groups, n_half, error);
}

guint cw_random_kinds(const char *list)
{
    guint set = 0;
    g_auto(GStrv) names = g_strsplit(list, ",", -1);
    for (guint i = 0; names[i]; i++) {
        int k = 0;
        while (k < K_ALL && strcmp(names[i], kind_names[k]) != 0)
            k++;
        if (k == K_ALL)
            return 0;
        set |= 1u << k;
    }
    return set & ((1u << K_N) - 1) ? set : 0; /* at least one kind of node */
}
