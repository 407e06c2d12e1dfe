/*
 * Perfetto trace writers (see include/shiftsim/trace.h): the native protobuf format and the JSON
 * Trace Event Format, both encoded straight into a block that is handed to the sink when full.
 *
 * Walk: ranks and streams first (process and thread tracks, named), then the ops in graph order,
 * which is each stream's issue order, so a track's events come in time order (a stream's op
 * ends no later than its next one starts); then, for JSON, the flow events.  The ops' events are
 * encoded in chunks of their own (growing buffers) by several threads and handed to the sink in
 * op order (write_ops()).  Nothing is kept per op; the proto writer keeps a bit per name it has
 * interned (a string of the graph or a kind), the JSON writer each graph string's length and
 * whether it must be escaped (label_info()).
 *
 * The proto encoder is written by hand from the field numbers of Perfetto's protos
 * (protos/perfetto/trace/trace_packet.proto and the track_event and interned_data protos): a
 * packet is built in a scratch buffer (its nested track event in another, for the length
 * prefixes), then framed as field 1 of the Trace message.  tests/out/test_trace.c reads the
 * output back with protobuf-c code generated from an independent transcription of those
 * messages.  Event timestamps are sorted by Perfetto with ties kept in file order, which keeps a
 * slice's end before the next slice's begin at the same nanosecond.
 */
#include <shiftsim/report.h>
#include <shiftsim/trace.h>

#include <string.h>

#include "src/core/ordered.h"

/* ---- the output block ---- */

/* Where encoded bytes go: a block of SSIM_TRACE_BLOCK handed to `sink` when full, or, without a
 * sink, a buffer that grows (a chunk of ops encoded apart, see write_ops()). */
typedef struct {
    const SsimTraceSink *sink;
    GError **error;
    gboolean failed;
    guint8 *buf;
    gsize len, cap;
} Out;

static void out_flush(Out *o)
{
    if (o->sink == NULL)
        return;
    if (o->len > 0 && !o->failed && !o->sink->write(o->sink->data, o->buf, o->len, o->error))
        o->failed = TRUE;
    o->len = 0;
}

static void out_make_room(Out *o, gsize n)
{
    if (o->sink != NULL) {
        out_flush(o);
        return;
    }
    o->cap = MAX(2 * o->cap, o->len + n);
    o->buf = g_realloc(o->buf, o->cap);
}

/* Room for `n` more bytes (n <= SSIM_TRACE_BLOCK); returns where to write them. */
static inline guint8 *out_room(Out *o, gsize n)
{
    if (G_UNLIKELY(o->len + n > o->cap))
        out_make_room(o, n);
    return o->buf + o->len;
}

static void out_bytes(Out *o, const void *p, gsize n)
{
    if (n > SSIM_TRACE_BLOCK / 2 && o->sink != NULL) {
        out_flush(o);
        if (!o->failed && !o->sink->write(o->sink->data, p, n, o->error))
            o->failed = TRUE;
        return;
    }
    memcpy(out_room(o, n), p, n);
    o->len += n;
}

static inline void out_str(Out *o, const char *s)
{
    out_bytes(o, s, strlen(s));
}

/* ---- JSON ---- */

/* "00" to "99". */
static const char two_digits[] = "00010203040506070809101112131415161718192021222324252627282930"
                                 "31323334353637383940414243444546474849505152535455565758596061"
                                 "6263646566676869707172737475767778798081828384858687888990919293"
                                 "949596979899";

/* Decimal digits of v at p (two at a time, from the right); returns the end. */
static inline char *put_u64(char *p, guint64 v)
{
    char tmp[20];
    int n = 20;
    while (v >= 100) {
        guint r = (guint)(v % 100);
        v /= 100;
        n -= 2;
        memcpy(tmp + n, two_digits + 2 * r, 2);
    }
    if (v >= 10) {
        n -= 2;
        memcpy(tmp + n, two_digits + 2 * v, 2);
    } else {
        tmp[--n] = (char)('0' + v);
    }
    memcpy(p, tmp + n, (gsize)(20 - n));
    return p + (20 - n);
}

/* Nanoseconds as exact decimal microseconds ("12", "12.5", "0.001"). */
static inline char *put_us(char *p, SsimTime ns)
{
    if (ns < 0) {
        *p++ = '-';
        ns = -ns;
    }
    p = put_u64(p, (guint64)ns / 1000);
    guint r = (guint)((guint64)ns % 1000);
    if (r) {
        char d[3] = {(char)('0' + r / 100), (char)('0' + r / 10 % 10), (char)('0' + r % 10)};
        guint keep = d[2] != '0' ? 3 : d[1] != '0' ? 2 : 1;
        *p++ = '.';
        memcpy(p, d, keep);
        p += keep;
    }
    return p;
}

/* Escapes `n` bytes of ASCII-or-valid-UTF-8 `s` at p (quotes, backslashes, control characters);
 * returns the end. */
static char *put_escaped(char *p, const char *s, gsize n)
{
    static const char hex[] = "0123456789abcdef";
    for (gsize i = 0; i < n; i++) {
        guint8 c = (guint8)s[i];
        if (c == '"' || c == '\\') {
            *p++ = '\\';
            *p++ = (char)c;
        } else if (c < 0x20) {
            memcpy(p, "\\u00", 4);
            p[4] = hex[c >> 4], p[5] = hex[c & 15];
            p += 6;
        } else {
            *p++ = (char)c;
        }
    }
    return p;
}

/* A JSON string of `s` followed by `suffix` (may be NULL) inside the quotes: escaped, and made
 * UTF-8 where it is not (JSON must be), at most `max` bytes of `s`. */
static void out_json_string2(Out *o, const char *s, gsize max, const char *suffix)
{
    gsize n = strnlen(s, max), m = suffix ? strlen(suffix) : 0;
    g_autofree char *valid = NULL;
    gboolean plain = TRUE; /* printable ASCII but '"' and '\\': copied as it is */
    for (gsize i = 0; i < n && plain; i++) {
        guint8 c = (guint8)s[i];
        plain = c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
    }
    if (!plain && !g_utf8_validate(s, (gssize)n, NULL)) { /* rare */
        valid = g_utf8_make_valid(s, (gssize)n);
        s = valid;
        n = strlen(s);
    }
    n = MIN(n, (gsize)SSIM_TRACE_BLOCK / 8); /* a label, not a payload */
    char *p = (char *)out_room(o, 6 * n + m + 2), *start = p;
    *p++ = '"';
    if (plain) {
        memcpy(p, s, n);
        p += n;
    } else {
        p = put_escaped(p, s, n);
    }
    if (m)
        memcpy(p, suffix, m);
    p += m;
    *p++ = '"';
    o->len += (gsize)(p - start);
}

static void out_json_string(Out *o, const char *s)
{
    out_json_string2(o, s, G_MAXSIZE, NULL);
}

/* What the JSON writer knows of each graph string, by id: its length, and LABEL_ESCAPE when it
 * is not printable ASCII without '"' and '\\' (escaped or made valid UTF-8 as a string of
 * out_json_string2()).  Measured once per string rather than once per op that names it. */
#define LABEL_ESCAPE (1u << 31)

static guint32 *label_info(const SsimGraph *g)
{
    guint32 n = ssim_graph_n_strings(g);
    guint32 *info = g_new(guint32, MAX(n, 1));
    for (guint32 id = 0; id < n; id++) {
        const char *s = ssim_graph_string(g, id);
        gsize len = strlen(s);
        guint32 escape = len >= LABEL_ESCAPE ? LABEL_ESCAPE : 0;
        for (gsize i = 0; i < len && !escape; i++) {
            guint8 c = (guint8)s[i];
            if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\')
                escape = LABEL_ESCAPE;
        }
        info[id] = escape | (guint32)MIN(len, (gsize)LABEL_ESCAPE - 1);
    }
    return info;
}

/* out_json_string2() of graph string `id`, from its label_info() entry. */
static void out_json_label(Out *o, const SsimGraph *g, const guint32 *info, guint32 id, gsize max,
                           const char *suffix)
{
    const char *s = ssim_graph_string(g, id);
    if (info[id] & LABEL_ESCAPE) {
        out_json_string2(o, s, max, suffix);
        return;
    }
    gsize n = MIN(MIN((gsize)info[id], max), (gsize)SSIM_TRACE_BLOCK / 8);
    gsize m = suffix ? strlen(suffix) : 0;
    char *p = (char *)out_room(o, n + m + 2), *start = p;
    *p++ = '"';
    memcpy(p, s, n);
    p += n;
    if (m)
        memcpy(p, suffix, m);
    p += m;
    *p++ = '"';
    o->len += (gsize)(p - start);
}

static void json_meta(Out *o, gboolean *first, const char *what, guint32 pid, gint64 tid,
                      const char *name, gint64 sort)
{
    char *p = (char *)out_room(o, 160), *start = p;
    if (!*first)
        *p++ = ',';
    *first = FALSE;
    p += g_snprintf(p, 100, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%u", what, pid);
    if (tid >= 0)
        p += g_snprintf(p, 40, ",\"tid\":%" G_GINT64_FORMAT, tid);
    if (sort >= 0) {
        p += g_snprintf(p, 60, ",\"args\":{\"sort_index\":%" G_GINT64_FORMAT "}}", sort);
        o->len += (gsize)(p - start);
        return;
    }
    memcpy(p, ",\"args\":{\"name\":", 16);
    p += 16;
    o->len += (gsize)(p - start);
    out_json_string(o, name);
    out_bytes(o, "}}", 2);
}

/* FLOPs as JSON: an integer when it is one (the common case, and no floating-point printing),
 * else the shortest round-trip decimal. */
static char *put_flops(char *p, double f)
{
    if (f >= 0 && f < 9007199254740992.0 && f == (double)(guint64)f)
        return put_u64(p, (guint64)f);
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    g_ascii_dtostr(buf, sizeof buf, f);
    gsize n = strlen(buf);
    memcpy(p, buf, n);
    return p + n;
}

/* Op i's complete event; `labels` from label_info(). */
static void json_op(Out *o, const SsimGraph *g, const SsimTimeline *t, guint32 i,
                    const guint32 *labels, gboolean *first)
{
    const SsimOp *op = ssim_graph_op(g, i);
    char *p = (char *)out_room(o, 32), *start = p;
    if (!*first)
        *p++ = ',';
    *first = FALSE;
    memcpy(p, "{\"ph\":\"X\",\"name\":", 17);
    p += 17;
    o->len += (gsize)(p - start);
    /* The op's label, "name#id" as ssim_graph_op_label() makes it (at most 127 bytes). */
    const char *kind = op->kind == SSIM_OP_COLLECTIVE ? ssim_coll_kind_name(op->coll)
                                                      : ssim_op_kind_name(op->kind);
    char id[16];
    id[0] = '#';
    *put_u64(id + 1, op->id) = '\0';
    gsize id_len = strlen(id);
    if (op->name != SSIM_NONE)
        out_json_label(o, g, labels, op->name, 127 - id_len, id);
    else
        out_json_string2(o, kind, 127 - id_len, id);
    out_bytes(o, ",\"cat\":", 7);
    if (ssim_graph_string(g, op->cls)[0])
        out_json_label(o, g, labels, op->cls, G_MAXSIZE, NULL);
    else
        out_json_string(o, ssim_op_kind_name(op->kind));
    p = (char *)out_room(o, 256), start = p;
    memcpy(p, ",\"pid\":", 7);
    p = put_u64(p + 7, op->rank);
    memcpy(p, ",\"tid\":", 7);
    p = put_u64(p + 7, op->stream);
    memcpy(p, ",\"ts\":", 6);
    p = put_us(p + 6, t->start[i]);
    memcpy(p, ",\"dur\":", 7);
    p = put_us(p + 7, t->end[i] - t->start[i]);
    memcpy(p, ",\"args\":{\"kind\":\"", 17);
    p += 17;
    gsize kind_len = strlen(kind);
    memcpy(p, kind, kind_len);
    p += kind_len;
    *p++ = '"';
    if (op->bytes) {
        memcpy(p, ",\"bytes\":", 9);
        p = put_u64(p + 9, op->bytes);
    }
    if (op->flops > 0) {
        memcpy(p, ",\"flops\":", 9);
        p = put_flops(p + 9, op->flops);
    }
    memcpy(p, ",\"wait_us\":", 11);
    p = put_us(p + 11, t->ready ? t->start[i] - t->ready[i] : 0);
    memcpy(p, "}}", 2);
    p += 2;
    o->len += (gsize)(p - start);
}

static void json_flow(Out *o, const char *ph, guint32 id, const SsimOp *op, SsimTime ts)
{
    char *p = (char *)out_room(o, 160), *start = p;
    p += g_snprintf(p, 80, ",{\"ph\":\"%s\",\"name\":\"transfer\",\"cat\":\"p2p\",\"id\":%u", ph,
                    id);
    memcpy(p, ",\"pid\":", 7);
    p = put_u64(p + 7, op->rank);
    memcpy(p, ",\"tid\":", 7);
    p = put_u64(p + 7, op->stream);
    memcpy(p, ",\"ts\":", 6);
    p = put_us(p + 6, ts);
    if (ph[0] == 'f') {
        memcpy(p, ",\"bp\":\"e\"", 9);
        p += 9;
    }
    *p++ = '}';
    o->len += (gsize)(p - start);
}

/* The two ends of send/receive pair `m` when it is one and both are shown. */
static gboolean shown_pair(const SsimGraph *g, guint32 m, guint max_ranks, guint32 *snd,
                           guint32 *rcv)
{
    guint n, expected;
    const guint32 *ops = ssim_graph_match_ops(g, m, &n, &expected);
    if (n < 2 || ops[0] == SSIM_NONE || ops[1] == SSIM_NONE)
        return FALSE;
    const SsimOp *a = ssim_graph_op(g, ops[0]), *b = ssim_graph_op(g, ops[1]);
    if (a->kind != SSIM_OP_SEND || b->kind != SSIM_OP_RECV)
        return FALSE;
    if (a->rank >= max_ranks || b->rank >= max_ranks)
        return FALSE;
    *snd = ops[0], *rcv = ops[1];
    return TRUE;
}

/* The ops' events, in op order (defined after both formats' encoders). */
static void write_ops(Out *o, const SsimGraph *g, const SsimTimeline *t, guint max_ranks,
                      guint n_threads, gboolean proto);

static void write_json(Out *o, const SsimGraph *g, const SsimTimeline *t, guint max_ranks,
                       guint n_threads)
{
    out_str(o, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
    gboolean first = TRUE;
    for (guint32 r = 0; r < max_ranks; r++) {
        char name[32];
        g_snprintf(name, sizeof name, "rank %u", r);
        json_meta(o, &first, "process_name", r, -1, name, -1);
        json_meta(o, &first, "process_sort_index", r, -1, NULL, r);
    }
    for (guint32 s = 0; s < ssim_graph_n_streams(g); s++) {
        guint32 r = ssim_graph_stream_rank(g, s);
        if (r >= max_ranks)
            continue;
        json_meta(o, &first, "thread_name", r, s, ssim_graph_stream_name(g, s), -1);
        json_meta(o, &first, "thread_sort_index", r, s, NULL, s);
    }
    /* Every op after the metadata above, so after a first event: each begins with a comma. */
    g_assert(!first || max_ranks == 0);
    write_ops(o, g, t, max_ranks, n_threads, FALSE);
    /* Flow arrows: send start -> recv (bound to the enclosing slice at its middle). */
    guint32 flow_id = 0;
    for (guint32 m = 0; m < ssim_graph_n_matches(g) && !o->failed; m++) {
        guint32 s, r;
        if (!shown_pair(g, m, max_ranks, &s, &r))
            continue;
        json_flow(o, "s", flow_id, ssim_graph_op(g, s), t->start[s]);
        json_flow(o, "f", flow_id, ssim_graph_op(g, r),
                  t->start[r] + (t->end[r] - t->start[r]) / 2);
        flow_id++;
    }
    out_str(o, "]}");
}

/* ---- Perfetto protobuf ---- */

enum { WT_VARINT = 0, WT_64 = 1, WT_LEN = 2 };

/* Field numbers (Perfetto's protos, see the top of this file). */
enum {
    TRACE_PACKET = 1,                  /* Trace.packet */
    PACKET_TIMESTAMP = 8,              /* TracePacket */
    PACKET_SEQUENCE_ID = 10,           /* trusted_packet_sequence_id */
    PACKET_TRACK_EVENT = 11,           /* */
    PACKET_INTERNED = 12,              /* interned_data */
    PACKET_FLAGS = 13,                 /* sequence_flags */
    PACKET_TRACK_DESCRIPTOR = 60,      /* */
    DESC_UUID = 1,                     /* TrackDescriptor */
    DESC_NAME = 2,                     /* */
    DESC_PROCESS = 3,                  /* */
    DESC_THREAD = 4,                   /* */
    DESC_PARENT = 5,                   /* */
    DESC_CHILD_ORDERING = 11,          /* EXPLICIT = 3 */
    DESC_SIBLING_RANK = 12,            /* */
    PROCESS_PID = 1,                   /* ProcessDescriptor */
    PROCESS_NAME = 6,                  /* */
    THREAD_PID = 1,                    /* ThreadDescriptor */
    THREAD_TID = 2,                    /* */
    THREAD_NAME = 5,                   /* */
    EVENT_CATEGORY_IIDS = 3,           /* TrackEvent */
    EVENT_ANNOTATIONS = 4,             /* */
    EVENT_TYPE = 9,                    /* SLICE_BEGIN = 1, SLICE_END = 2 */
    EVENT_NAME_IID = 10,               /* */
    EVENT_TRACK = 11,                  /* track_uuid */
    EVENT_NAME = 23,                   /* */
    EVENT_FLOW = 47,                   /* flow_ids, fixed64 */
    EVENT_FLOW_END = 48,               /* terminating_flow_ids, fixed64 */
    ANNOT_NAME_IID = 1,                /* DebugAnnotation */
    ANNOT_UINT = 3,                    /* */
    ANNOT_INT = 4,                     /* */
    ANNOT_DOUBLE = 5,                  /* */
    ANNOT_STRING = 6,                  /* */
    INTERNED_CATEGORIES = 1,           /* InternedData: EventCategory {iid 1, name 2} */
    INTERNED_NAMES = 2,                /* EventName {iid 1, name 2} */
    INTERNED_ANNOTATION_NAMES = 3,     /* DebugAnnotationName {iid 1, name 2} */
    SEQ_INCREMENTAL_STATE_CLEARED = 1, /* sequence_flags */
    SEQ_NEEDS_INCREMENTAL_STATE = 2,   /* */
    SEQUENCE = 1,                      /* our one packet sequence */
    PROCESS_UUID0 = 1,                 /* rank r's track: 1 + r */
};

/* Debug annotation names, interned once (iid = index + 1). */
static const char *const annotation_names[] = {"op", "kind", "bytes", "flops", "wait_ns"};
enum { ANN_OP = 1, ANN_KIND, ANN_BYTES, ANN_FLOPS, ANN_WAIT };

static inline guint8 *pb_varint(guint8 *p, guint64 v)
{
    while (v >= 0x80) {
        *p++ = (guint8)(v | 0x80);
        v >>= 7;
    }
    *p++ = (guint8)v;
    return p;
}

static inline guint8 *pb_key(guint8 *p, guint field, guint wire)
{
    return pb_varint(p, ((guint64)field << 3) | wire);
}

static inline guint8 *pb_uint(guint8 *p, guint field, guint64 v)
{
    return pb_varint(pb_key(p, field, WT_VARINT), v);
}

static inline guint8 *pb_bytes(guint8 *p, guint field, const void *s, gsize n)
{
    p = pb_varint(pb_key(p, field, WT_LEN), n);
    memcpy(p, s, n);
    return p + n;
}

static inline guint8 *pb_fixed64(guint8 *p, guint field, guint64 v)
{
    p = pb_key(p, field, WT_64);
    memcpy(p, &v, 8); /* little-endian hosts only, as protobuf-c's own fast path */
    return p + 8;
}

/* An {iid, name} entry (EventName, EventCategory, DebugAnnotationName) as field `field`. */
static guint8 *pb_interned(guint8 *p, guint field, guint64 iid, const char *name)
{
    gsize n = strlen(name);
    guint8 head[16], *h = pb_uint(head, 1, iid);
    h = pb_key(h, 2, WT_LEN);
    h = pb_varint(h, n);
    p = pb_varint(pb_key(p, field, WT_LEN), (gsize)(h - head) + n);
    memcpy(p, head, (gsize)(h - head));
    p += h - head;
    memcpy(p, name, n);
    return p + n;
}

typedef struct {
    Out *o;
    guint8 *pk, *ev, *in; /* scratch: a packet's body, a track event's, interned data's */
    gsize cap;            /* of each */
} Proto;

/* What the packets so far have interned: bit sets of the keys (see op_event_name()). */
typedef struct {
    GByteArray *names, *kinds, *categories;
} Interned;

/* Makes each scratch buffer hold at least `n` bytes. */
static void proto_reserve(Proto *w, gsize n)
{
    if (n <= w->cap)
        return;
    w->cap = MAX(2 * w->cap, n);
    w->pk = g_realloc(w->pk, w->cap);
    w->ev = g_realloc(w->ev, w->cap);
    w->in = g_realloc(w->in, w->cap);
}

static void proto_clear(Proto *w)
{
    g_free(w->pk);
    g_free(w->ev);
    g_free(w->in);
}

/* Frames the packet body [pk, end) as Trace.packet into the output. */
static void proto_emit(Proto *w, const guint8 *end)
{
    gsize n = (gsize)(end - w->pk);
    guint8 head[12], *h = pb_varint(pb_key(head, TRACE_PACKET, WT_LEN), n);
    out_bytes(w->o, head, (gsize)(h - head));
    out_bytes(w->o, w->pk, n);
}

static void proto_descriptors(Proto *w, const SsimGraph *g, guint max_ranks)
{
    /* The first packet of the sequence clears its state and interns the annotation names. */
    guint8 *p = w->pk;
    p = pb_uint(p, PACKET_SEQUENCE_ID, SEQUENCE);
    p = pb_uint(p, PACKET_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
    guint8 *q = w->ev;
    for (guint i = 0; i < G_N_ELEMENTS(annotation_names); i++)
        q = pb_interned(q, INTERNED_ANNOTATION_NAMES, i + 1, annotation_names[i]);
    p = pb_bytes(p, PACKET_INTERNED, w->ev, (gsize)(q - w->ev));
    proto_emit(w, p);
    for (guint32 r = 0; r < max_ranks; r++) {
        char name[32];
        g_snprintf(name, sizeof name, "rank %u", r);
        q = pb_uint(w->ev, PROCESS_PID, r + 1);
        q = pb_bytes(q, PROCESS_NAME, name, strlen(name));
        p = w->pk;
        guint8 *d = pb_key(p, PACKET_TRACK_DESCRIPTOR, WT_LEN), body[128], *b = body;
        b = pb_uint(b, DESC_UUID, PROCESS_UUID0 + r);
        b = pb_bytes(b, DESC_PROCESS, w->ev, (gsize)(q - w->ev));
        b = pb_uint(b, DESC_CHILD_ORDERING, 3); /* EXPLICIT: streams in their order */
        d = pb_varint(d, (gsize)(b - body));
        memcpy(d, body, (gsize)(b - body));
        proto_emit(w, d + (b - body));
    }
    for (guint32 s = 0; s < ssim_graph_n_streams(g); s++) {
        guint32 r = ssim_graph_stream_rank(g, s);
        if (r >= max_ranks)
            continue;
        const char *name = ssim_graph_stream_name(g, s);
        gsize n = strlen(name);
        proto_reserve(w, 2 * n + 128);
        q = pb_uint(w->ev, THREAD_PID, r + 1);
        q = pb_uint(q, THREAD_TID, (guint64)s + 1);
        q = pb_bytes(q, THREAD_NAME, name, n);
        gsize thread_len = (gsize)(q - w->ev);
        /* The descriptor body goes after the thread descriptor in the same scratch. */
        guint8 *body = q, *b = body;
        b = pb_uint(b, DESC_UUID, ((guint64)1 << 32) + s);
        b = pb_uint(b, DESC_PARENT, PROCESS_UUID0 + r);
        b = pb_bytes(b, DESC_THREAD, w->ev, thread_len);
        b = pb_uint(b, DESC_SIBLING_RANK, s);
        p = pb_key(w->pk, PACKET_TRACK_DESCRIPTOR, WT_LEN);
        p = pb_varint(p, (gsize)(b - body));
        memcpy(p, body, (gsize)(b - body));
        proto_emit(w, p + (b - body));
    }
}

/* Marks `key` (a string id, or a kind past them) in `set`: TRUE when it is new, and the packet
 * must carry its interned entry. */
static gboolean intern(GByteArray *set, guint64 key)
{
    gsize byte = key / 8;
    if (byte >= set->len) {
        guint old = set->len;
        g_byte_array_set_size(set, (guint)MAX(2 * (gsize)old, byte + 1));
        memset(set->data + old, 0, set->len - old);
    }
    guint8 bit = (guint8)(1u << (key % 8));
    if (set->data[byte] & bit)
        return FALSE;
    set->data[byte] |= bit;
    return TRUE;
}

/* The event name of `op`: the op's label without "#id" (the id is an annotation), interned by
 * string id, or by kind for unnamed ops (keys past every string id: a graph has fewer than 2^32
 * strings).  Its iid is the key + 1. */
static const char *op_event_name(const SsimGraph *g, const SsimOp *op, guint64 *key)
{
    if (op->name != SSIM_NONE) {
        *key = op->name;
        return ssim_graph_string(g, op->name);
    }
    if (op->kind == SSIM_OP_COLLECTIVE) {
        *key = ((guint64)1 << 32) + SSIM_OP_N + op->coll;
        return ssim_coll_kind_name(op->coll);
    }
    *key = ((guint64)1 << 32) + op->kind;
    return ssim_op_kind_name(op->kind);
}

/* Its category, the op's class or else its kind, likewise (iid = key + 1). */
static const char *op_event_category(const SsimGraph *g, const SsimOp *op, guint64 *key)
{
    const char *cls = ssim_graph_string(g, op->cls);
    *key = op->cls ? op->cls : 65536 + (guint64)op->kind;
    return cls[0] ? cls : ssim_op_kind_name(op->kind);
}

enum { NEW_NAME = 1, NEW_CATEGORY = 2 };

/* What op `i`'s packet must intern (NEW_NAME, NEW_CATEGORY), given the packets before it. */
static guint8 proto_intern(Interned *in, const SsimGraph *g, guint32 i)
{
    const SsimOp *op = ssim_graph_op(g, i);
    guint64 name_key, cat_key;
    op_event_name(g, op, &name_key);
    op_event_category(g, op, &cat_key);
    gboolean new_name =
        name_key >> 32 ? intern(in->kinds, name_key & 0xffff) : intern(in->names, name_key);
    return (guint8)((new_name ? NEW_NAME : 0) |
                    (intern(in->categories, cat_key) ? NEW_CATEGORY : 0));
}

/* Op `i`'s SLICE_BEGIN and SLICE_END packets; `interns` from proto_intern(). */
static void proto_op(Proto *w, const SsimGraph *g, const SsimTimeline *t, guint32 i,
                     guint max_ranks, guint8 interns)
{
    const SsimOp *op = ssim_graph_op(g, i);
    guint64 name_key, cat_key;
    const char *name = op_event_name(g, op, &name_key);
    const char *cls = op_event_category(g, op, &cat_key);
    guint64 name_iid = name_key + 1, cat_iid = cat_key + 1;
    gsize name_len = strlen(name), cls_len = strlen(cls);
    proto_reserve(w, 2 * (name_len + cls_len) + 256);
    gboolean new_name = (interns & NEW_NAME) != 0, new_cat = (interns & NEW_CATEGORY) != 0;

    /* The track event: SLICE_BEGIN on the stream's track. */
    guint8 *q = w->ev;
    q = pb_uint(q, EVENT_TYPE, 1);
    q = pb_uint(q, EVENT_TRACK, ((guint64)1 << 32) + op->stream);
    q = pb_uint(q, EVENT_NAME_IID, name_iid);
    q = pb_uint(q, EVENT_CATEGORY_IIDS, cat_iid);
    guint32 s, r;
    if ((op->kind == SSIM_OP_SEND || op->kind == SSIM_OP_RECV) && op->match != SSIM_NONE &&
        shown_pair(g, op->match, max_ranks, &s, &r))
        q = pb_fixed64(q, op->kind == SSIM_OP_SEND ? EVENT_FLOW : EVENT_FLOW_END,
                       (guint64)op->match + 1);
    /* Annotations: op id, kind of a communication, bytes, FLOPs, wait (each a small message). */
    guint8 ann[64], *a;
    a = pb_uint(pb_uint(ann, ANNOT_NAME_IID, ANN_OP), ANNOT_UINT, op->id);
    q = pb_bytes(q, EVENT_ANNOTATIONS, ann, (gsize)(a - ann));
    if (op->kind != SSIM_OP_COMPUTE) {
        const char *kind = op->kind == SSIM_OP_COLLECTIVE ? ssim_coll_kind_name(op->coll)
                                                          : ssim_op_kind_name(op->kind);
        a = pb_uint(ann, ANNOT_NAME_IID, ANN_KIND);
        a = pb_bytes(a, ANNOT_STRING, kind, strlen(kind));
        q = pb_bytes(q, EVENT_ANNOTATIONS, ann, (gsize)(a - ann));
    }
    if (op->bytes) {
        a = pb_uint(pb_uint(ann, ANNOT_NAME_IID, ANN_BYTES), ANNOT_UINT, op->bytes);
        q = pb_bytes(q, EVENT_ANNOTATIONS, ann, (gsize)(a - ann));
    }
    if (op->flops > 0) {
        a = pb_uint(ann, ANNOT_NAME_IID, ANN_FLOPS);
        a = pb_key(a, ANNOT_DOUBLE, WT_64);
        memcpy(a, &op->flops, 8);
        a += 8;
        q = pb_bytes(q, EVENT_ANNOTATIONS, ann, (gsize)(a - ann));
    }
    if (t->ready) {
        a = pb_uint(ann, ANNOT_NAME_IID, ANN_WAIT);
        a = pb_uint(a, ANNOT_INT, (guint64)(t->start[i] - t->ready[i]));
        q = pb_bytes(q, EVENT_ANNOTATIONS, ann, (gsize)(a - ann));
    }

    guint8 *p = w->pk;
    p = pb_uint(p, PACKET_TIMESTAMP, (guint64)t->start[i]);
    p = pb_uint(p, PACKET_SEQUENCE_ID, SEQUENCE);
    p = pb_uint(p, PACKET_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
    if (new_name || new_cat) {
        guint8 *b = w->in;
        if (new_cat)
            b = pb_interned(b, INTERNED_CATEGORIES, cat_iid, cls);
        if (new_name)
            b = pb_interned(b, INTERNED_NAMES, name_iid, name);
        p = pb_bytes(p, PACKET_INTERNED, w->in, (gsize)(b - w->in));
    }
    p = pb_bytes(p, PACKET_TRACK_EVENT, w->ev, (gsize)(q - w->ev));
    proto_emit(w, p);

    /* SLICE_END at the op's end. */
    q = pb_uint(w->ev, EVENT_TYPE, 2);
    q = pb_uint(q, EVENT_TRACK, ((guint64)1 << 32) + op->stream);
    p = w->pk;
    p = pb_uint(p, PACKET_TIMESTAMP, (guint64)t->end[i]);
    p = pb_uint(p, PACKET_SEQUENCE_ID, SEQUENCE);
    p = pb_uint(p, PACKET_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
    p = pb_bytes(p, PACKET_TRACK_EVENT, w->ev, (gsize)(q - w->ev));
    proto_emit(w, p);
}

static void write_proto(Out *o, const SsimGraph *g, const SsimTimeline *t, guint max_ranks,
                        guint n_threads)
{
    Proto w = {.o = o};
    proto_reserve(&w, 4096);
    proto_descriptors(&w, g, max_ranks);
    proto_clear(&w);
    write_ops(o, g, t, max_ranks, n_threads, TRUE);
}

/* ---- the ops: encoded in chunks on several threads, written in op order ---- */

/* Ops a chunk holds: about 0.8 MB of JSON, 0.35 MB of protobuf. */
enum { CHUNK_OPS = 4096 };

typedef struct {
    guint8 *bytes; /* the chunk's encoding: len bytes (room for cap) */
    gsize len, cap;
    guint8 *interns; /* proto: per op of the chunk, what its packet interns */
} Slot;

/*
 * The chunks of ops as the ordered pipeline (src/core/ordered.h) encodes and writes them: chunk
 * k in slot k % window.  The proto format's interning (a name's first event carries it) is
 * decided when a chunk is claimed, in chunk order: the bytes are those of one thread.
 */
typedef struct {
    const SsimGraph *g;
    const SsimTimeline *t;
    guint max_ranks;
    gboolean proto;
    Interned interned;
    guint32 *labels; /* JSON: label_info() */
    guint window;
    Slot *slots;
    Out *out; /* where the chunks go, in order */
} Ops;

static void chunk_claim(gpointer data, guint k)
{
    Ops *ops = data;
    Slot *s = &ops->slots[k % ops->window];
    s->len = 0;
    if (!ops->proto)
        return;
    guint32 a = k * CHUNK_OPS, b = MIN(ssim_graph_n_ops(ops->g), a + CHUNK_OPS);
    for (guint32 i = a; i < b; i++)
        s->interns[i - a] = ssim_graph_op(ops->g, i)->rank < ops->max_ranks
                                ? proto_intern(&ops->interned, ops->g, i)
                                : 0;
}

/* Encodes chunk k into its slot; `scratch` is the thread's Proto (protobuf only). */
static void chunk_encode(gpointer data, guint k, gpointer scratch)
{
    Ops *ops = data;
    Proto *w = scratch; /* NULL for JSON */
    Slot *s = &ops->slots[k % ops->window];
    Out o = {.buf = s->bytes, .cap = s->cap};
    if (w)
        w->o = &o;
    guint32 a = k * CHUNK_OPS, b = MIN(ssim_graph_n_ops(ops->g), a + CHUNK_OPS);
    gboolean first = FALSE; /* the metadata events came first */
    for (guint32 i = a; i < b; i++)
        if (ssim_graph_op(ops->g, i)->rank < ops->max_ranks) {
            if (ops->proto)
                proto_op(w, ops->g, ops->t, i, ops->max_ranks, s->interns[i - a]);
            else
                json_op(&o, ops->g, ops->t, i, ops->labels, &first);
        }
    s->bytes = o.buf;
    s->len = o.len;
    s->cap = o.cap;
}

/* Hands chunk k to the sink in blocks of at most SSIM_TRACE_BLOCK; FALSE once the sink failed. */
static gboolean chunk_write(gpointer data, guint k)
{
    Ops *ops = data;
    const Slot *s = &ops->slots[k % ops->window];
    Out *o = ops->out;
    for (gsize at = 0; at < s->len && !o->failed; at += SSIM_TRACE_BLOCK)
        if (!o->sink->write(o->sink->data, s->bytes + at, MIN(s->len - at, SSIM_TRACE_BLOCK),
                            o->error))
            o->failed = TRUE;
    return !o->failed;
}

static gpointer proto_new(gpointer data)
{
    (void)data;
    Proto *w = g_new0(Proto, 1);
    proto_reserve(w, 4096);
    return w;
}

static void proto_free(gpointer p)
{
    proto_clear(p);
    g_free(p);
}

static void write_ops(Out *o, const SsimGraph *g, const SsimTimeline *t, guint max_ranks,
                      guint n_threads, gboolean proto)
{
    out_flush(o); /* what came before goes first */
    guint32 n_ops = ssim_graph_n_ops(g);
    if (n_ops == 0 || o->failed)
        return;
    guint n_chunks = (n_ops + CHUNK_OPS - 1) / CHUNK_OPS;
    n_threads = ssim_ordered_threads(n_threads, n_chunks);
    Ops ops = {.g = g, .t = t, .max_ranks = max_ranks, .proto = proto, .out = o};
    ops.window = 2 * n_threads;
    ops.slots = g_new0(Slot, ops.window);
    for (guint k = 0; k < ops.window; k++) {
        ops.slots[k].cap = proto ? CHUNK_OPS * 96 : CHUNK_OPS * 224;
        ops.slots[k].bytes = g_malloc(ops.slots[k].cap);
        ops.slots[k].interns = proto ? g_malloc(CHUNK_OPS) : NULL;
    }
    if (proto) {
        ops.interned.names = g_byte_array_new();
        ops.interned.kinds = g_byte_array_new();
        ops.interned.categories = g_byte_array_new();
    } else {
        ops.labels = label_info(g);
    }
    SsimOrdered job = {.data = &ops,
                       .claim = chunk_claim,
                       .produce = chunk_encode,
                       .consume = chunk_write,
                       .scratch_new = proto ? proto_new : NULL,
                       .scratch_free = proto_free};
    ssim_ordered_run(&job, n_chunks, n_threads, ops.window);
    for (guint k = 0; k < ops.window; k++) {
        g_free(ops.slots[k].bytes);
        g_free(ops.slots[k].interns);
    }
    g_free(ops.slots);
    g_free(ops.labels);
    if (proto) {
        g_byte_array_unref(ops.interned.names);
        g_byte_array_unref(ops.interned.kinds);
        g_byte_array_unref(ops.interned.categories);
    }
}

/* ---- entry points ---- */

SsimTraceFormat ssim_trace_format_for(const char *path)
{
    static const char *const proto_suffixes[] = {".pftrace", ".perfetto-trace", ".pb", ".proto"};
    for (gsize i = 0; path && i < G_N_ELEMENTS(proto_suffixes); i++)
        if (g_str_has_suffix(path, proto_suffixes[i]))
            return SSIM_TRACE_PROTO;
    return SSIM_TRACE_JSON;
}

gboolean ssim_trace_write(const SsimGraph *g, const SsimTimeline *t, guint max_ranks,
                          SsimTraceFormat format, guint n_threads, const SsimTraceSink *sink,
                          GError **error)
{
    g_return_val_if_fail(g && t && sink && sink->write, FALSE);
    guint32 nr = ssim_graph_n_ranks(g);
    if (max_ranks == 0 || max_ranks > nr)
        max_ranks = nr;
    Out o = {
        .sink = sink, .error = error, .buf = g_malloc(SSIM_TRACE_BLOCK), .cap = SSIM_TRACE_BLOCK};
    if (format == SSIM_TRACE_PROTO)
        write_proto(&o, g, t, max_ranks, n_threads);
    else
        write_json(&o, g, t, max_ranks, n_threads);
    out_flush(&o);
    g_free(o.buf);
    return !o.failed;
}

static gboolean to_gstring(gpointer data, const void *bytes, gsize len, GError **error)
{
    (void)error;
    g_string_append_len(data, bytes, (gssize)len);
    return TRUE;
}

GString *ssim_trace_json(const SsimGraph *g, const SsimTimeline *t, guint max_ranks)
{
    GString *out = g_string_new(NULL);
    SsimTraceSink sink = {to_gstring, out};
    ssim_trace_write(g, t, max_ranks, SSIM_TRACE_JSON, 1, &sink, NULL);
    return out;
}
