/*
 * The fast Chakra Node decoder: reads the protobuf wire format in place into a NodeView
 * (chakra-private.h), with no allocation per node.
 *
 * Why not protobuf-c's generated unpacker: it materialises every field of every node, and the
 * traces that generators write carry mostly what no simulator reads (symbolic_tensor_graph puts
 * `inputs`, `outputs` and `op_type` attributes, string lists of tensor names and shapes, on every
 * node): at 1024 ranks that was 3.7 million attribute messages allocated, copied and freed, 40% of
 * a replay.  Here a field the mapping does not read is skipped by its length after its bytes are
 * checked, and the ones it reads are decoded straight into the view.
 *
 * Invariant (what the tests hold it to, byte for byte, against the reference path): for any
 * input, chakra_wire_node() accepts exactly what protobuf-c 1.4's unpacker accepts for
 * ChakraProtoMsg.Node, and its view equals the one built from that unpacker's message.  So the
 * checks below follow protobuf-c, not the protobuf specification where the two differ: a tag is
 * at most 5 bytes and its first byte must carry field bits; a varint at most 10 bytes; a length
 * prefix at most 5 bytes and at most INT_MAX; wire types 3, 4, 6 and 7 are refused; a known field
 * of the wrong wire type is refused, except a bool, which takes any and is true when any of its
 * bytes (the length prefix included, for a length-delimited one) has a low bit set; an int32 or
 * enum keeps the low 32 bits of its varint; repeated numeric fields are accepted packed or not,
 * and a packed run must be whole (fixed sizes divide its length, its last varint ends); strings
 * are not checked for UTF-8, and C reads them up to their first NUL; for a scalar or oneof field
 * given twice the last wins.  Sub-messages of unknown content (lists, IOInfo) are checked the
 * same way, field by field, though nothing of them is kept.  (One limit of protobuf-c is not
 * reproduced: it refuses a message of more than about 2^27 fields, some 256 MB of one node.)
 *
 * The decoding walks a cursor (p, end) over the bytes; the common shapes (a one-byte key, a
 * one-byte length) take the first branch of each test.
 */
#include "src/import/chakra-private.h"

#include <limits.h>
#include <string.h>

enum { WT_VARINT = 0, WT_64 = 1, WT_LEN = 2, WT_32 = 5 };

/* A field read from the cursor: its number and wire type, its payload [data, data + len) (after
 * the length prefix of a length-delimited one) and where the field's value began (`raw`, the
 * prefix included, which a bool reads). */
typedef struct {
    guint32 tag;
    guint wire;
    const guint8 *raw, *data;
    gsize len;
} Field;

/* protobuf-c's parse_tag_and_wiretype beyond its first byte: the bytes used, 0 on a bad key. */
static gsize long_key(const guint8 *p, gsize rem, guint32 *tag)
{
    gsize max = rem > 5 ? 5 : rem;
    guint32 t = (p[0] & 0x7f) >> 3;
    guint shift = 4;
    for (gsize i = 1; i < max; i++) {
        if (p[i] & 0x80) {
            t |= (guint32)(p[i] & 0x7f) << shift;
            shift += 7;
        } else {
            t |= (guint32)p[i] << shift;
            *tag = t;
            return i + 1;
        }
    }
    return 0;
}

/* The length of the varint at p (at most 10 bytes), or 0 when it does not end in time. */
static inline gsize varint_len(const guint8 *p, gsize rem)
{
    gsize max = rem < 10 ? rem : 10;
    for (gsize i = 0; i < max; i++)
        if ((p[i] & 0x80) == 0)
            return i + 1;
    return 0;
}

/* protobuf-c's parse_uint64 (and, through the low 32 bits, parse_uint32). */
static inline guint64 varint_value(const guint8 *p, gsize n)
{
    if (G_LIKELY(n == 1))
        return p[0];
    guint64 v = 0;
    for (gsize i = 0; i < n; i++)
        v |= (guint64)(p[i] & 0x7f) << (7 * i);
    return v;
}

static inline gboolean bool_value(const guint8 *p, gsize n)
{
    for (gsize i = 0; i < n; i++)
        if (p[i] & 0x7f)
            return TRUE;
    return FALSE;
}

/* A length prefix longer than a byte (protobuf-c's scan_length_prefixed_data). */
static gboolean long_prefix(const guint8 *p, gsize rem, Field *f)
{
    gsize hdr_max = rem < 5 ? rem : 5, i;
    guint64 v = 0;
    for (i = 0; i < hdr_max; i++) {
        v |= (guint64)(p[i] & 0x7f) << (7 * i);
        if ((p[i] & 0x80) == 0)
            break;
    }
    if (i == hdr_max || v > INT_MAX || i + 1 + v > rem)
        return FALSE;
    f->data = p + i + 1;
    f->len = (gsize)v;
    return TRUE;
}

/* Reads the field at *pp into f and moves past it; FALSE where protobuf-c's scan fails. */
G_ALWAYS_INLINE static inline gboolean next_field(const guint8 **pp, const guint8 *end, Field *f)
{
    const guint8 *p = *pp;
    guint8 b = p[0];
    if ((b & 0xf8) == 0) /* field number 0 */
        return FALSE;
    f->wire = b & 7;
    if (G_LIKELY(b < 0x80)) {
        f->tag = b >> 3;
        p++;
    } else {
        gsize used = long_key(p, (gsize)(end - p), &f->tag);
        if (used == 0)
            return FALSE;
        p += used;
    }
    gsize rem = (gsize)(end - p);
    f->raw = p;
    switch (f->wire) {
    case WT_LEN:
        if (G_LIKELY(rem > 0 && p[0] < 0x80)) {
            if (1u + p[0] > rem)
                return FALSE;
            f->data = p + 1;
            f->len = p[0];
        } else if (!long_prefix(p, rem, f)) {
            return FALSE;
        }
        *pp = f->data + f->len;
        return TRUE;
    case WT_VARINT:
        f->len = varint_len(p, rem);
        if (f->len == 0)
            return FALSE;
        break;
    case WT_64:
        f->len = 8;
        if (rem < 8)
            return FALSE;
        break;
    case WT_32:
        f->len = 4;
        if (rem < 4)
            return FALSE;
        break;
    default:
        return FALSE;
    }
    f->data = p;
    *pp = p + f->len;
    return TRUE;
}

/* The scalar types a field can have, as far as checking its wire type and reading it go. */
typedef enum {
    T_VARINT, /* int32, int64, uint32, uint64, sint32, sint64, enum */
    T_BOOL,
    T_FIXED32,
    T_FIXED64,
    T_LEN, /* string, bytes, message */
} ScalarType;

/* Whether a non-repeated field of `type` accepts the wire type `wire`. */
static inline gboolean wire_ok(ScalarType type, guint wire)
{
    switch (type) {
    case T_VARINT:
        return wire == WT_VARINT;
    case T_BOOL:
        return TRUE;
    case T_FIXED32:
        return wire == WT_32;
    case T_FIXED64:
        return wire == WT_64;
    default:
        return wire == WT_LEN;
    }
}

/* Checks a packed run of `type` elements (protobuf-c's count and parse of packed fields). */
static gboolean packed_ok(ScalarType type, const guint8 *p, gsize n)
{
    switch (type) {
    case T_FIXED32:
        return n % 4 == 0;
    case T_FIXED64:
        return n % 8 == 0;
    case T_VARINT:
    case T_BOOL:
        while (n > 0) {
            gsize s = varint_len(p, n);
            if (s == 0)
                return FALSE;
            p += s;
            n -= s;
        }
        return TRUE;
    default:
        return FALSE;
    }
}

/* Checks a message whose field 1 is `repeated <type>` and whose other fields are unknown (the
 * list messages; IOInfo, whose fields 1-3 are strings, with `n_strings` 3). */
static gboolean list_ok(const guint8 *p, const guint8 *end, ScalarType type, guint n_strings)
{
    /* The common case first: strings of field 1 (key 0x0a) shorter than 128 bytes. */
    if (type == T_LEN)
        while (end - p >= 2 && p[0] == 0x0a && p[1] < 0x80) {
            if (2 + p[1] > end - p)
                return FALSE;
            p += 2 + p[1];
        }
    Field f;
    while (p < end) {
        if (!next_field(&p, end, &f))
            return FALSE;
        if (f.tag >= 1 && f.tag <= n_strings) {
            if (f.wire != WT_LEN)
                return FALSE;
        } else if (f.tag == 1) {
            if (f.wire == WT_LEN && type != T_LEN) {
                if (!packed_ok(type, f.data, f.len))
                    return FALSE;
            } else if (!wire_ok(type, f.wire)) {
                return FALSE;
            }
        }
    }
    return TRUE;
}

/* The bytes up to the first NUL, as C reads a string. */
static inline Bytes c_string(const guint8 *p, gsize n)
{
    const void *nul = memchr(p, 0, n);
    return (Bytes){(const char *)p, (guint32)(nul ? (gsize)((const guint8 *)nul - p) : n)};
}

/* AttributeProto's value fields 3..32: the scalar type, and for even ones (the XxxList
 * messages) the type of the list's elements. */
static const ScalarType value_types[33] = {
    [3] = T_FIXED64,  [4] = T_FIXED64,  [5] = T_FIXED32,  [6] = T_FIXED32,  [7] = T_VARINT,
    [8] = T_VARINT,   [9] = T_VARINT,   [10] = T_VARINT,  [11] = T_VARINT,  [12] = T_VARINT,
    [13] = T_VARINT,  [14] = T_VARINT,  [15] = T_VARINT,  [16] = T_VARINT,  [17] = T_VARINT,
    [18] = T_VARINT,  [19] = T_FIXED32, [20] = T_FIXED32, [21] = T_FIXED64, [22] = T_FIXED64,
    [23] = T_FIXED32, [24] = T_FIXED32, [25] = T_FIXED64, [26] = T_FIXED64, [27] = T_BOOL,
    [28] = T_BOOL,    [29] = T_LEN,     [30] = T_LEN,     [31] = T_LEN,     [32] = T_LEN,
};

/* Checks the value field `f` (tag 3..32) of an attribute as protobuf-c does. */
static gboolean value_ok(const Field *f)
{
    if (f->tag % 2 == 0) /* a list message */
        return f->wire == WT_LEN && list_ok(f->data, f->data + f->len, value_types[f->tag], 0);
    return wire_ok(value_types[f->tag], f->wire);
}

/* A BoolList's values (checked by list_ok) as an AV_BOOLS value: field 1's instances in order,
 * a length-delimited one a packed run of varints, each true when protobuf-c's parse_boolean
 * finds a low bit set in its bytes; any other field skipped. */
static void bool_list(const guint8 *p, const guint8 *end, AttrVal *out)
{
    guint64 bits = 0;
    guint32 n = 0;
    Field f;
    while (p < end && next_field(&p, end, &f)) {
        if (f.tag != 1)
            continue;
        if (f.wire != WT_LEN) {
            if (bool_value(f.raw, (gsize)(f.data + f.len - f.raw)) && n < 64)
                bits |= (guint64)1 << n;
            n++;
            continue;
        }
        for (const guint8 *q = f.data, *qe = f.data + f.len; q < qe;) {
            gsize s = varint_len(q, (gsize)(qe - q));
            if (bool_value(q, s) && n < 64)
                bits |= (guint64)1 << n;
            n++;
            q += s;
        }
    }
    out->kind = AV_BOOLS, out->i = (gint64)bits, out->n = n;
}

/* Decodes the value field `f` (tag 3..32, checked) of an attribute into `out`. */
static void attr_value(const Field *f, AttrVal *out)
{
    guint32 tag = f->tag;
    if (tag == 28) {
        bool_list(f->data, f->data + f->len, out);
        return;
    }
    if (tag % 2 == 0) { /* another list message */
        out->kind = AV_OTHER;
        return;
    }
    guint64 u = 0;
    guint32 u32 = 0;
    if (f->wire == WT_VARINT)
        u = varint_value(f->data, f->len);
    else if (f->wire == WT_64)
        memcpy(&u, f->data, 8);
    else if (f->wire == WT_32)
        memcpy(&u32, f->data, 4);
    out->kind = AV_INT;
    switch (tag) {
    case 3: { /* double */
        double d;
        memcpy(&d, &u, 8);
        out->kind = AV_REAL, out->d = d;
        break;
    }
    case 5: { /* float */
        float x;
        memcpy(&x, &u32, 4);
        out->kind = AV_REAL, out->d = x;
        break;
    }
    case 7: /* int32 */
        out->i = (gint32)(guint32)u;
        break;
    case 9: /* int64 */
        out->i = (gint64)u;
        break;
    case 11: /* uint32 */
        out->i = (guint32)u;
        break;
    case 13: /* uint64 */
    case 21: /* fixed64 */
        if (u > (guint64)G_MAXINT64)
            out->kind = AV_BIG_UINT;
        else
            out->i = (gint64)u;
        break;
    case 15: { /* sint32 */
        guint32 v = (guint32)u;
        out->i = (gint32)((v >> 1) ^ (0u - (v & 1)));
        break;
    }
    case 17: /* sint64 */
        out->i = (gint64)((u >> 1) ^ (0 - (u & 1)));
        break;
    case 19: /* fixed32 */
        out->i = u32;
        break;
    case 23: /* sfixed32 */
        out->i = (gint32)u32;
        break;
    case 25: /* sfixed64 */
        out->i = (gint64)u;
        break;
    case 27: /* bool */
        out->i = bool_value(f->raw, (gsize)(f->data + f->len - f->raw));
        break;
    case 29: { /* string */
        Bytes b = c_string(f->data, f->len);
        out->kind = AV_STRING, out->s = b.s, out->n = b.n;
        break;
    }
    default: /* 31: bytes */
        out->kind = AV_OTHER;
        break;
    }
}

/* The known attribute a name's bytes mean, as C reads the name: the bytes themselves, or, when
 * a NUL cuts them where a known name ends (after 6 to 13 bytes), the part before it. */
static inline KnownAttr known_name(Bytes raw)
{
    KnownAttr k = chakra_known_attr(raw.s, raw.n);
    if (G_LIKELY(k != KA_N || raw.n <= 6))
        return k;
    gsize stop = MIN(raw.n, 14);
    for (gsize i = 6; i < stop; i++)
        if (raw.s[i] == 0)
            return chakra_known_attr(raw.s, i);
    return KA_N;
}

/* Decodes one AttributeProto into the view: a known name's value, or the name as unknown.
 * Every value field is checked; only the last is decoded, and only for a known name. */
static gboolean attribute(const guint8 *p, const guint8 *end, NodeView *v)
{
    Bytes name = {"", 0};
    Field f, value;
    gboolean has_value = FALSE;
    while (p < end) {
        if (!next_field(&p, end, &f))
            return FALSE;
        if (f.tag == 1 || f.tag == 2) { /* name, doc_string */
            if (f.wire != WT_LEN)
                return FALSE;
            if (f.tag == 1)
                name = (Bytes){(const char *)f.data, (guint32)f.len};
        } else if (f.tag >= 3 && f.tag <= 32) {
            if (!value_ok(&f))
                return FALSE;
            value = f;
            has_value = TRUE;
        }
    }
    KnownAttr k = known_name(name);
    if (k == KA_N) {
        /* The raw bytes: C's cut at a NUL is applied when the name is counted. */
        chakra_view_add_unknown(v, name);
        return TRUE;
    }
    guint32 bit = 1u << k;
    gboolean first = !(v->known_mask & bit);
    if (first)
        v->n_known[k] = 0;
    v->n_known[k]++;
    v->known_mask |= bit;
    if (!first && v->keep_first)
        return TRUE;
    if (has_value)
        attr_value(&value, &v->known[k]);
    else
        v->known[k].kind = AV_NONE;
    return TRUE;
}

/* A repeated uint64 field (the dependencies), packed or not. */
static gboolean deps_field(const Field *f, U64Vec *out)
{
    if (f->wire == WT_VARINT) {
        u64vec_push(out, varint_value(f->data, f->len));
        return TRUE;
    }
    if (f->wire != WT_LEN)
        return FALSE;
    const guint8 *p = f->data;
    gsize n = f->len;
    while (n > 0) {
        gsize s = varint_len(p, n);
        if (s == 0)
            return FALSE;
        u64vec_push(out, varint_value(p, s));
        p += s;
        n -= s;
    }
    return TRUE;
}

gboolean chakra_wire_node(const guint8 *buf, gsize len, NodeView *v)
{
    chakra_view_reset(v);
    const guint8 *p = buf, *end = buf + len;
    Field f;
    while (p < end) {
        if (!next_field(&p, end, &f))
            return FALSE;
        switch (f.tag) {
        case 1: /* id */
        case 6: /* start_time_micros */
        case 7: /* duration_micros */
            if (f.wire != WT_VARINT)
                return FALSE;
            if (f.tag == 1)
                v->id = varint_value(f.data, f.len);
            else if (f.tag == 7)
                v->duration_micros = varint_value(f.data, f.len);
            break;
        case 2: /* name: its C length is found when it is used (chakra_view_name) */
            if (f.wire != WT_LEN)
                return FALSE;
            v->name = (Bytes){(const char *)f.data, (guint32)f.len};
            break;
        case 3: /* type: an enum, the low 32 bits */
            if (f.wire != WT_VARINT)
                return FALSE;
            v->type = (gint32)(guint32)varint_value(f.data, f.len);
            break;
        case 4:
        case 5:
            if (!deps_field(&f, f.tag == 5 ? &v->data_deps : &v->ctrl_deps))
                return FALSE;
            break;
        case 8: /* inputs, outputs: IOInfo, three strings */
        case 9:
            if (f.wire != WT_LEN || !list_ok(f.data, f.data + f.len, T_LEN, 3))
                return FALSE;
            break;
        case 10:
            if (f.wire != WT_LEN || !attribute(f.data, f.data + f.len, v))
                return FALSE;
            break;
        default: /* unknown: skipped */
            break;
        }
    }
    return TRUE;
}
