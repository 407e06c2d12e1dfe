/*
 * The test encoder of Chakra traces (see chakra-writer.h): builds each message with the
 * generated protobuf-c structs, packs it, and frames it with its varint length.
 */
#include "chakra-writer.h"

#include "chakra.pb-c.h"

struct CwWriter {
    char *path;
    GByteArray *bytes;
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

void cw_raw(CwWriter *w, const void *bytes, gsize len)
{
    g_byte_array_append(w->bytes, bytes, (guint)len);
}

void cw_node(CwWriter *w, const CwNode *c)
{
    ChakraProtoMsg__Node n = CHAKRA_PROTO_MSG__NODE__INIT;
    ChakraProtoMsg__AttributeProto attrs[12];
    ChakraProtoMsg__AttributeProto *ptrs[12];
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
    if (c->is_cpu_op != CW_ABSENT) {
        chakra_proto_msg__attribute_proto__init(&attrs[na]);
        attrs[na].name = (char *)"is_cpu_op";
        attrs[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL;
        attrs[na].bool_val = c->is_cpu_op != 0;
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
