/*
 * Tests of the Chakra importer's fast paths (src/import/chakra-wire.c, the parallel loader of
 * chakra.c) against the reference they replace.
 *
 * Oracles: protobuf-c's generated unpacker (the reference decoder, chakra_pb_node()), which the
 * fast wire decoder must match on every input, accepting exactly the same bytes and giving the
 * same view; and the one-thread reference load, whose graph (op by op,
 * tests/import/chakra-check.h), stats and errors every fast load must reproduce for any thread
 * count.  Inputs: every trace set under traces/chakra/ (ASTRA-sim's and our generator's), generated
 * GPT steps with and without symbolic_tensor_graph's tensor metadata, real node messages with
 * random mutations, and random messages built field by field from the schema with wrong wire types,
 * packed and unpacked repeats, long keys and lengths, embedded NULs and duplicate fields.
 */
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include <shiftsim/chakra.h>

#include "chakra-check.h"
#include "chakra-writer.h"
#include "src/import/chakra-private.h"

static char *tmp_dir;

static void setup(void)
{
    GError *error = NULL;
    tmp_dir = g_dir_make_tmp("ssim-chakra-wire-XXXXXX", &error);
    cr_assert_not_null(tmp_dir, "%s", error ? error->message : "");
}

static void teardown(void)
{
    cw_rm_rf(tmp_dir);
    g_clear_pointer(&tmp_dir, g_free);
}

TestSuite(chakra_wire, .init = setup, .fini = teardown);

/* ---- one message: the two decoders side by side ---- */

static Bytes c_cut(Bytes b)
{
    const char *nul = memchr(b.s, 0, b.n);
    return nul ? (Bytes){b.s, (guint32)(nul - b.s)} : b;
}

static gboolean same_bytes(Bytes a, Bytes b)
{
    return a.n == b.n && memcmp(a.s, b.s, a.n) == 0;
}

static gboolean same_value(const AttrVal *a, const AttrVal *b)
{
    if (a->kind != b->kind)
        return FALSE;
    switch (a->kind) {
    case AV_INT:
        return a->i == b->i;
    case AV_REAL:
        return memcmp(&a->d, &b->d, sizeof a->d) == 0;
    case AV_STRING:
        return same_bytes((Bytes){a->s, a->n}, (Bytes){b->s, b->n});
    case AV_BOOLS:
        return a->i == b->i && a->n == b->n;
    default:
        return TRUE;
    }
}

/* NULL when the views are the same; else what differs. */
static const char *view_diff(const NodeView *a, const NodeView *b)
{
    if (a->id != b->id)
        return "id";
    if (!same_bytes(chakra_view_name(a), chakra_view_name(b)))
        return "name";
    if (a->type != b->type)
        return "type";
    if (a->duration_micros != b->duration_micros)
        return "duration";
    if (a->known_mask != b->known_mask)
        return "known attributes";
    for (guint k = 0; k < KA_N; k++)
        if ((a->known_mask & (1u << k)) &&
            (a->n_known[k] != b->n_known[k] || !same_value(&a->known[k], &b->known[k])))
            return chakra_known_attr_names[k];
    if (a->unknown.n != b->unknown.n)
        return "unknown attribute count";
    for (guint i = 0; i < a->unknown.n; i++)
        if (!same_bytes(c_cut(a->unknown.v[i]), c_cut(b->unknown.v[i])))
            return "unknown attribute name";
    if (a->data_deps.n != b->data_deps.n ||
        (a->data_deps.n > 0 && memcmp(a->data_deps.v, b->data_deps.v, a->data_deps.n * 8) != 0))
        return "data_deps";
    if (a->ctrl_deps.n != b->ctrl_deps.n ||
        (a->ctrl_deps.n > 0 && memcmp(a->ctrl_deps.v, b->ctrl_deps.v, a->ctrl_deps.n * 8) != 0))
        return "ctrl_deps";
    return NULL;
}

typedef struct {
    NodeView fast, ref;
    ChakraArena arena;
    guint accepted, refused;
} Pair;

static void pair_init(Pair *p)
{
    chakra_view_init(&p->fast);
    chakra_view_init(&p->ref);
    chakra_arena_init(&p->arena);
    p->accepted = p->refused = 0;
}

static void pair_clear(Pair *p)
{
    chakra_view_clear(&p->fast);
    chakra_view_clear(&p->ref);
    chakra_arena_clear(&p->arena);
}

/* Decodes `len` bytes with both decoders and asserts they agree. */
static void check_message(Pair *p, const guint8 *buf, gsize len, const char *what)
{
    gboolean ok_ref = chakra_pb_node(&p->arena, buf, len, &p->ref);
    gboolean ok_fast = chakra_wire_node(buf, len, &p->fast);
    if (ok_ref != ok_fast) {
        g_autofree char *hex = g_malloc(2 * MIN(len, 64) + 1);
        for (gsize i = 0; i < MIN(len, 64); i++)
            g_snprintf(hex + 2 * i, 3, "%02x", buf[i]);
        cr_assert_fail("%s: protobuf-c %s it, the fast decoder %s it (%zu bytes: %s...)", what,
                       ok_ref ? "accepts" : "refuses", ok_fast ? "accepts" : "refuses", len, hex);
    }
    if (ok_ref) {
        const char *diff = view_diff(&p->fast, &p->ref);
        cr_assert_null(diff, "%s: the views differ in %s", what, diff);
        p->accepted++;
    } else {
        p->refused++;
    }
    chakra_arena_reset(&p->arena);
}

/* Calls `fn` on every node message (not the metadata) of the file at `path`. */
static void each_node(const char *path, void (*fn)(const guint8 *, gsize, gpointer), gpointer data)
{
    g_autofree char *bytes = NULL;
    gsize len;
    cr_assert(g_file_get_contents(path, &bytes, &len, NULL), "cannot read %s", path);
    const guint8 *b = (const guint8 *)bytes;
    gsize pos = 0;
    for (guint k = 0; pos < len; k++) {
        guint64 mlen = 0;
        guint shift = 0;
        while (pos < len) {
            guint8 c = b[pos++];
            mlen |= (guint64)(c & 0x7f) << shift;
            shift += 7;
            if (!(c & 0x80))
                break;
        }
        cr_assert_leq(mlen, len - pos);
        if (k > 0)
            fn(b + pos, (gsize)mlen, data);
        pos += (gsize)mlen;
    }
}

static char *bundled(const char *rel)
{
    const char *root = g_getenv("SHIFTSIM_DATA");
    return g_build_filename(root ? root : SSIM_TEST_DATA "/..", "traces", "chakra", rel, NULL);
}

/* Every *.0.et under `dir`, as prefixes. */
static void find_sets(const char *dir, GPtrArray *out)
{
    GDir *d = g_dir_open(dir, 0, NULL);
    if (!d)
        return;
    const char *e;
    while ((e = g_dir_read_name(d))) {
        g_autofree char *p = g_build_filename(dir, e, NULL);
        if (g_file_test(p, G_FILE_TEST_IS_DIR))
            find_sets(p, out);
        else if (g_str_has_suffix(e, ".0.et"))
            g_ptr_array_add(out, g_strndup(p, strlen(p) - strlen(".0.et")));
    }
    g_dir_close(d);
}

static void check_cb(const guint8 *buf, gsize len, gpointer data)
{
    check_message(data, buf, len, "a bundled node");
}

/* Every node of every bundled trace decodes the same both ways. */
Test(chakra_wire, bundled_nodes_decode_alike)
{
    g_autofree char *root = bundled("");
    g_autoptr(GPtrArray) sets = g_ptr_array_new_with_free_func(g_free);
    find_sets(root, sets);
    cr_assert_geq(sets->len, 6, "expected the bundled trace sets under %s", root);
    Pair p;
    pair_init(&p);
    for (guint i = 0; i < sets->len; i++)
        for (guint r = 0;; r++) {
            g_autofree char *path = g_strdup_printf("%s.%u.et", (char *)sets->pdata[i], r);
            if (!g_file_test(path, G_FILE_TEST_EXISTS))
                break;
            each_node(path, check_cb, &p);
        }
    cr_assert_gt(p.accepted, 1000);
    cr_assert_eq(p.refused, 0);
    pair_clear(&p);
}

typedef struct {
    Pair *pair;
    GRand *rng;
} Mutate;

/* Each real node message, mutated at random a few dozen ways. */
static void mutate_cb(const guint8 *buf, gsize len, gpointer data)
{
    Mutate *m = data;
    guint8 *copy = g_malloc(len + 16);
    for (guint trial = 0; trial < 24; trial++) {
        memcpy(copy, buf, len);
        gsize n = len;
        guint edits = 1 + g_rand_int_range(m->rng, 0, 3);
        for (guint e = 0; e < edits && n > 0; e++) {
            gsize at = (gsize)g_rand_int_range(m->rng, 0, (gint32)n);
            switch (g_rand_int_range(m->rng, 0, 5)) {
            case 0: /* flip a bit */
                copy[at] ^= (guint8)(1u << g_rand_int_range(m->rng, 0, 8));
                break;
            case 1: /* set a byte to a value that means something in the format */
                copy[at] =
                    (guint8) "\x00\x01\x02\x05\x07\x08\x0a\x12\x52\x7f\x80\xff"[g_rand_int_range(
                        m->rng, 0, 12)];
                break;
            case 2: /* cut the message */
                n = at;
                break;
            case 3: /* delete a byte */
                memmove(copy + at, copy + at + 1, n - at - 1);
                n--;
                break;
            default: /* a random byte */
                copy[at] = (guint8)g_rand_int_range(m->rng, 0, 256);
                break;
            }
        }
        check_message(m->pair, copy, n, "a mutated node");
    }
    g_free(copy);
}

Test(chakra_wire, mutated_nodes_decode_alike)
{
    const char *files[] = {"stg-gpt-dp2-tp2-pp2/workload.0.et", "stg-gpt-dp2-tp2-pp2/workload.5.et",
                           "examples/two-rank/two-rank.0.et",
                           "allreduce-8npus-1MB/all_reduce.3.et"};
    Pair p;
    pair_init(&p);
    g_autoptr(GRand) rng = g_rand_new_with_seed(19);
    Mutate m = {&p, rng};
    for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
        g_autofree char *path = bundled(files[i]);
        each_node(path, mutate_cb, &m);
    }
    /* Both outcomes must be well exercised, or the comparison proves little. */
    cr_assert_gt(p.accepted, 2000, "accepted %u", p.accepted);
    cr_assert_gt(p.refused, 2000, "refused %u", p.refused);
    pair_clear(&p);
}

/* ---- random messages, field by field ---- */

static void put_varint(GByteArray *b, guint64 v)
{
    do {
        guint8 c = (guint8)(v & 0x7f);
        v >>= 7;
        if (v)
            c |= 0x80;
        g_byte_array_append(b, &c, 1);
    } while (v);
}

/* A key, now and then in a longer encoding than needed (protobuf-c reads up to 5 bytes). */
static void put_key(GByteArray *b, GRand *rng, guint32 tag, guint wire)
{
    guint64 key = ((guint64)tag << 3) | wire;
    if (g_rand_int_range(rng, 0, 12) == 0 && key < (1u << 21)) {
        guint8 c[3] = {(guint8)(0x80 | (key & 0x7f)), (guint8)(0x80 | ((key >> 7) & 0x7f)),
                       (guint8)(key >> 14)};
        g_byte_array_append(b, c, 3);
    } else {
        put_varint(b, key);
    }
}

/* A wire type: mostly the right one, sometimes any (3, 4, 6, 7 included). */
static guint pick_wire(GRand *rng, guint right)
{
    return g_rand_int_range(rng, 0, 8) == 0 ? (guint)g_rand_int_range(rng, 0, 8) : right;
}

/* A payload for a field of wire type `wire` (nested: bytes to wrap for a length-delimited one). */
static void put_payload(GByteArray *b, GRand *rng, guint wire, const GByteArray *nested)
{
    static const guint64 values[] = {0,        1,           127,        128,         300,
                                     1u << 31, 0xffffffffu, G_MAXINT64, G_MAXUINT64, (guint64)-5};
    switch (wire) {
    case 0:
        if (g_rand_int_range(rng, 0, 16) == 0) { /* an over-long varint */
            for (guint i = 0; i < 11; i++)
                g_byte_array_append(b, (const guint8 *)"\x81", 1);
            g_byte_array_append(b, (const guint8 *)"\x01", 1);
        } else {
            put_varint(b, values[g_rand_int_range(rng, 0, G_N_ELEMENTS(values))]);
        }
        break;
    case 1:
    case 5: {
        guint8 raw[8];
        for (guint i = 0; i < 8; i++)
            raw[i] = (guint8)g_rand_int_range(rng, 0, 256);
        g_byte_array_append(b, raw, wire == 1 ? 8 : 4);
        break;
    }
    case 2: {
        gsize n = nested ? nested->len : (gsize)g_rand_int_range(rng, 0, 12);
        if (g_rand_int_range(rng, 0, 20) == 0) /* a prefix in two bytes though it needs one */
            put_varint(b, n), b->data[b->len - 1] |= 0x80,
                g_byte_array_append(b, (const guint8 *)"\x00", 1);
        else
            put_varint(b, n);
        if (nested)
            g_byte_array_append(b, nested->data, nested->len);
        else {
            gboolean zeros =
                g_rand_int_range(rng, 0, 4) == 0; /* a false bool, but for its prefix */
            for (gsize i = 0; i < n; i++) {
                guint8 c = (guint8)(zeros || g_rand_int_range(rng, 0, 4) == 0
                                        ? 0
                                        : g_rand_int_range(rng, 1, 256));
                g_byte_array_append(b, &c, 1);
            }
        }
        break;
    }
    default: /* 3, 4, 6, 7: refused by both; a byte so the message goes on */
        g_byte_array_append(b, (const guint8 *)"\x01", 1);
        break;
    }
}

static void put_string(GByteArray *b, GRand *rng, guint32 tag, const char *s)
{
    g_autoptr(GByteArray) v = g_byte_array_new();
    g_byte_array_append(v, (const guint8 *)s, (guint)strlen(s));
    if (g_rand_int_range(rng, 0, 10) == 0) /* a NUL inside: C stops there */
        g_byte_array_append(v, (const guint8 *)"\0xy", 3);
    guint wire = pick_wire(rng, 2);
    put_key(b, rng, tag, wire);
    put_payload(b, rng, wire, wire == 2 ? v : NULL);
}

/* A list message of `n` elements whose field 1 has wire type `wire` (packed when 2 and the
 * elements are numbers). */
static GByteArray *random_list(GRand *rng, guint list_tag)
{
    GByteArray *b = g_byte_array_new();
    guint n = (guint)g_rand_int_range(rng, 0, 4);
    gboolean strings = list_tag >= 30;
    guint elem_wire = list_tag == 4 || list_tag == 22 || list_tag == 26   ? 1
                      : list_tag == 6 || list_tag == 20 || list_tag == 24 ? 5
                      : strings                                           ? 2
                                                                          : 0;
    if (!strings && g_rand_boolean(rng)) { /* packed */
        g_autoptr(GByteArray) run = g_byte_array_new();
        for (guint i = 0; i < n; i++)
            put_payload(run, rng, elem_wire, NULL);
        if (g_rand_int_range(rng, 0, 6) == 0 && run->len > 0)
            g_byte_array_set_size(run, run->len - 1); /* a run cut short */
        put_key(b, rng, 1, 2);
        put_payload(b, rng, 2, run);
    } else {
        for (guint i = 0; i < n; i++) {
            guint w = pick_wire(rng, elem_wire);
            put_key(b, rng, 1, w);
            put_payload(b, rng, w, NULL);
        }
    }
    if (g_rand_int_range(rng, 0, 6) == 0) { /* an unknown field */
        guint w = (guint) "\x00\x01\x02\x05"[g_rand_int_range(rng, 0, 4)];
        put_key(b, rng, 9, w);
        put_payload(b, rng, w, NULL);
    }
    return b;
}

static GByteArray *random_attribute(GRand *rng)
{
    static const char *const names[] = {"comm_type", "comm_size",   "comm_src",     "comm_dst",
                                        "comm_tag",  "pg_name",     "stream",       "num_ops",
                                        "is_cpu_op", "tensor_size", "involved_dim", "comm_priority",
                                        "inputs",    "outputs",     "op_type",      "",
                                        "comm_sizes"};
    GByteArray *b = g_byte_array_new();
    if (g_rand_int_range(rng, 0, 4) == 0) {
        /* A name the mapping reads with a value of a type it reads (or nearly). */
        static const guint32 tags[] = {3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29};
        guint name = (guint)g_rand_int_range(rng, 0, 12);
        put_string(b, rng, 1, names[name]);
        if (name == 10 && g_rand_boolean(rng)) { /* involved_dim's bool_list */
            g_autoptr(GByteArray) nested = random_list(rng, 28);
            put_key(b, rng, 28, 2);
            put_payload(b, rng, 2, nested);
            return b;
        }
        guint32 tag = tags[g_rand_int_range(rng, 0, G_N_ELEMENTS(tags))];
        guint right = tag == 29                            ? 2
                      : tag == 3 || tag == 21 || tag == 25 ? 1
                      : tag == 5 || tag == 19 || tag == 23 ? 5
                                                           : 0;
        guint wire = tag == 27 ? (guint) "\x00\x01\x02\x05"[g_rand_int_range(rng, 0, 4)]
                               : pick_wire(rng, right);
        put_key(b, rng, tag, wire);
        put_payload(b, rng, wire, NULL);
        return b;
    }
    guint fields = (guint)g_rand_int_range(rng, 1, 4);
    for (guint f = 0; f < fields; f++) {
        guint what = (guint)g_rand_int_range(rng, 0, 10);
        if (what < 4) {
            put_string(b, rng, 1, names[g_rand_int_range(rng, 0, G_N_ELEMENTS(names))]);
        } else if (what == 4) {
            put_string(b, rng, 2, "doc");
        } else {
            guint32 tag = (guint32)g_rand_int_range(rng, 3, 33);
            if (what == 9)
                tag = (guint32)g_rand_int_range(rng, 33, 40); /* unknown */
            gboolean list = tag <= 32 && tag % 2 == 0;
            guint right = list || tag == 29 || tag == 31 || tag > 32 ? 2
                          : tag == 3 || tag == 21 || tag == 25       ? 1
                          : tag == 5 || tag == 19 || tag == 23       ? 5
                                                                     : 0;
            guint wire = pick_wire(rng, right);
            put_key(b, rng, tag, wire);
            g_autoptr(GByteArray) nested = list && wire == 2 ? random_list(rng, tag) : NULL;
            put_payload(b, rng, wire, nested);
        }
    }
    return b;
}

static GByteArray *random_node(GRand *rng)
{
    GByteArray *b = g_byte_array_new();
    guint fields = (guint)g_rand_int_range(rng, 0, 12);
    for (guint f = 0; f < fields; f++) {
        guint32 tag = (guint32)g_rand_int_range(rng, 1, 13);
        guint right = tag == 2 || tag == 8 || tag == 9 || tag == 10 || tag >= 11 ? 2 : 0;
        if (tag == 2) {
            put_string(b, rng, 2, "node.name");
            continue;
        }
        guint wire = pick_wire(rng, right);
        g_autoptr(GByteArray) nested = NULL;
        if (wire == 2 && tag == 10)
            nested = random_attribute(rng);
        else if (wire == 2 && (tag == 4 || tag == 5)) { /* packed dependencies */
            nested = g_byte_array_new();
            for (guint i = 0, n = (guint)g_rand_int_range(rng, 0, 4); i < n; i++)
                put_payload(nested, rng, 0, NULL);
        } else if (wire == 2 && (tag == 8 || tag == 9)) {
            nested = g_byte_array_new();
            put_string(nested, rng, (guint32)g_rand_int_range(rng, 1, 5), "x");
        }
        put_key(b, rng, tag, wire);
        put_payload(b, rng, wire, nested);
    }
    if (g_rand_int_range(rng, 0, 30) == 0 && b->len > 0) /* a key of field number 0 */
        g_byte_array_append(b, (const guint8 *)"\x02", 1);
    return b;
}

Test(chakra_wire, random_messages_decode_alike)
{
    Pair p;
    pair_init(&p);
    g_autoptr(GRand) rng = g_rand_new_with_seed(1219);
    for (guint i = 0; i < 40000; i++) {
        g_autoptr(GByteArray) msg = random_node(rng);
        /* Half keep an attribute's first instance (astra_rules), half the last. */
        p.fast.keep_first = p.ref.keep_first = i % 2;
        check_message(&p, msg->data, msg->len, "a random node");
    }
    cr_assert_gt(p.accepted, 4000, "accepted %u", p.accepted);
    cr_assert_gt(p.refused, 4000, "refused %u", p.refused);
    pair_clear(&p);
}

/* An attribute given twice: protobuf's last instance by default, ASTRA-sim's first with
 * keep_first; every instance counted either way. */
Test(chakra_wire, keep_first_keeps_an_attributes_first_instance)
{
    ChakraProtoMsg__AttributeProto a[2] = {CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__INIT,
                                           CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__INIT};
    ChakraProtoMsg__AttributeProto *ptrs[2] = {&a[0], &a[1]};
    for (guint i = 0; i < 2; i++) {
        a[i].name = (char *)"comm_priority";
        a[i].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
        a[i].int64_val = 10 + i;
    }
    ChakraProtoMsg__Node n = CHAKRA_PROTO_MSG__NODE__INIT;
    n.id = 1;
    n.name = (char *)"x";
    n.n_attr = 2;
    n.attr = ptrs;
    guint8 buf[256];
    gsize len = chakra_proto_msg__node__pack(&n, buf);
    Pair p;
    pair_init(&p);
    for (int first = 0; first < 2; first++) {
        p.fast.keep_first = p.ref.keep_first = first;
        check_message(&p, buf, len, "a node with comm_priority twice");
        cr_assert_eq(p.fast.n_known[KA_COMM_PRIORITY], 2);
        cr_assert_eq(p.fast.known[KA_COMM_PRIORITY].i, first ? 10 : 11);
    }
    pair_clear(&p);
}

/* ---- whole loads: graph, stats and errors for every decoder and thread count ---- */

static void assert_same_stats(const SsimChakraStats *a, const SsimChakraStats *b, const char *what)
{
    cr_assert_eq(a->n_ranks, b->n_ranks, "%s: ranks", what);
    cr_assert_eq(a->n_groups, b->n_groups, "%s: groups", what);
    cr_assert_str_eq(a->version ? a->version : "", b->version ? b->version : "", "%s", what);
    cr_assert_eq(a->n_nodes, b->n_nodes, "%s: nodes", what);
    cr_assert_eq(memcmp(a->by_type, b->by_type, sizeof a->by_type), 0, "%s: by type", what);
    cr_assert_eq(memcmp(a->elided_by_type, b->elided_by_type, sizeof a->elided_by_type), 0,
                 "%s: elided", what);
    cr_assert_eq(a->n_compute_timed, b->n_compute_timed, "%s", what);
    cr_assert_eq(a->n_compute_roofline, b->n_compute_roofline, "%s", what);
    cr_assert_eq(a->n_compute_empty, b->n_compute_empty, "%s", what);
    cr_assert_eq(a->n_collectives + a->n_barriers + a->n_sends + a->n_recvs + a->n_mem,
                 b->n_collectives + b->n_barriers + b->n_sends + b->n_recvs + b->n_mem, "%s", what);
    cr_assert_eq(a->n_elided, b->n_elided, "%s", what);
    cr_assert_eq(a->n_approximated, b->n_approximated, "%s", what);
    cr_assert_eq(a->n_ops, b->n_ops, "%s", what);
    cr_assert_eq(a->n_deps, b->n_deps, "%s", what);
    cr_assert_eq(a->n_ignored_attrs, b->n_ignored_attrs, "%s: ignored", what);
    cr_assert_eq(g_hash_table_size(a->ignored_attrs), g_hash_table_size(b->ignored_attrs), "%s",
                 what);
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, a->ignored_attrs);
    while (g_hash_table_iter_next(&it, &k, &v))
        cr_assert_eq(GPOINTER_TO_UINT(g_hash_table_lookup(b->ignored_attrs, k)),
                     GPOINTER_TO_UINT(v), "%s: ignored %s", what, (char *)k);
    g_autoptr(GString) ra = ssim_chakra_stats_format(a);
    g_autoptr(GString) rb = ssim_chakra_stats_format(b);
    cr_assert_str_eq(ra->str, rb->str, "%s: the reports differ", what);
}

/*
 * Loads `prefix` with the reference decoder on one thread and with the fast decoder on 1, 2 and 5
 * threads, names kept and not: every load gives the reference's graph and stats, or, when the
 * reference fails, the same error.  Returns the number of ops (0 on failure).
 */
static guint32 check_set(const char *prefix)
{
    guint32 ops = 0;
    for (guint names = 0; names < 2; names++) {
        SsimChakraOptions ro;
        ssim_chakra_options_init(&ro);
        ro.reference_decoder = TRUE;
        ro.n_threads = 1;
        ro.keep_names = names;
        SsimChakraStats rs;
        ssim_chakra_stats_init(&rs);
        GError *rerr = NULL;
        g_autoptr(SsimGraph) ref = ssim_chakra_load(prefix, NULL, &ro, &rs, &rerr);
        static const guint threads[] = {1, 2, 5};
        for (guint t = 0; t < G_N_ELEMENTS(threads); t++) {
            SsimChakraOptions o = ro;
            o.reference_decoder = FALSE;
            o.n_threads = threads[t];
            SsimChakraStats st;
            ssim_chakra_stats_init(&st);
            GError *err = NULL;
            g_autoptr(SsimGraph) g = ssim_chakra_load(prefix, NULL, &o, &st, &err);
            g_autofree char *what = g_strdup_printf("%s, %u threads, names %s", prefix, threads[t],
                                                    names ? "kept" : "not kept");
            if (!ref) {
                cr_assert_null(g, "%s: loads, but the reference fails: %s", what, rerr->message);
                cr_assert_str_eq(err->message, rerr->message, "%s", what);
                g_error_free(err);
            } else {
                cr_assert_not_null(g, "%s: %s", what, err ? err->message : "");
                g_autofree char *diff = cw_graph_diff(ref, g);
                cr_assert_null(diff, "%s: %s", what, diff);
                assert_same_stats(&rs, &st, what);
                ops = ssim_graph_n_ops(g);
            }
            ssim_chakra_stats_clear(&st);
        }
        ssim_chakra_stats_clear(&rs);
        g_clear_error(&rerr);
    }
    return ops;
}

Test(chakra_wire, bundled_sets_load_alike)
{
    g_autofree char *root = bundled("");
    g_autoptr(GPtrArray) sets = g_ptr_array_new_with_free_func(g_free);
    find_sets(root, sets);
    cr_assert_geq(sets->len, 6);
    for (guint i = 0; i < sets->len; i++)
        cr_assert_gt(check_set(sets->pdata[i]), 0, "%s", (char *)sets->pdata[i]);
}

Test(chakra_wire, generated_sets_load_alike)
{
    /* A step with the tensor metadata every node of a generated trace carries, and one without;
     * more ranks than threads and window, so traces queue behind the one being added. */
    for (guint io = 0; io < 2; io++) {
        g_autofree char *prefix = g_strdup_printf("%s/gpt%u", tmp_dir, io);
        CwGpt gpt = {4, 2, 3, 6, 3, 1024, 512, io};
        GError *error = NULL;
        cr_assert(cw_write_gpt(&gpt, prefix, &error), "%s", error ? error->message : "");
        cr_assert_gt(check_set(prefix), 0);
    }
}

/* Errors in several ranks: every thread count reports the first rank's, as a one-thread load
 * meets it, and both decoders word it alike. */
Test(chakra_wire, errors_are_the_first_rank_s)
{
    g_autofree char *prefix = g_strdup_printf("%s/bad", tmp_dir);
    CwGpt gpt = {4, 2, 2, 4, 2, 1024, 512, TRUE};
    GError *error = NULL;
    cr_assert(cw_write_gpt(&gpt, prefix, &error));
    /* Rank 9 gets a corrupt node in its middle, rank 5 a dangling dependency, rank 12 a cut. */
    g_autofree char *p9 = g_strdup_printf("%s.9.et", prefix);
    g_autofree char *p5 = g_strdup_printf("%s.5.et", prefix);
    g_autofree char *p12 = g_strdup_printf("%s.12.et", prefix);
    gchar *bytes;
    gsize len;
    cr_assert(g_file_get_contents(p9, &bytes, &len, NULL));
    bytes[len / 2] = '\x07'; /* a wire type protobuf-c refuses, or another corruption */
    bytes[len / 2 + 1] = '\x07';
    cr_assert(g_file_set_contents(p9, bytes, (gssize)len, NULL));
    g_free(bytes);
    cr_assert(g_file_get_contents(p12, &bytes, &len, NULL));
    cr_assert(g_file_set_contents(p12, bytes, (gssize)(len - 3), NULL));
    g_free(bytes);
    CwWriter *w = cw_open(p5, "0.0.4");
    CwNode n = CW_NODE_INIT;
    static const guint64 missing[] = {4242};
    n.id = 1, n.name = "lost", n.type = CW_COMP, n.duration_micros = 1;
    n.data_deps = missing, n.n_data_deps = 1;
    cw_node(w, &n);
    cr_assert(cw_close(w, &error));
    cr_assert_eq(check_set(prefix), 0);
    SsimChakraOptions o;
    ssim_chakra_options_init(&o);
    o.n_threads = 4;
    cr_assert_null(ssim_chakra_load(prefix, NULL, &o, NULL, &error));
    cr_assert(strstr(error->message, "bad.5.et: node 1: depends on node 4242") != NULL, "%s",
              error->message);
    g_error_free(error);
}
