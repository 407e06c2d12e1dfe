/*
 * The op-graph text format, `# shiftsim-graph v1` (docs/replay.md, "Op-graph files").
 *
 *   # shiftsim-graph v1
 *   group tp 0 1 2 3            a named group of ranks (ranges such as 0-3 allowed)
 *   program 0 fwd.0 bwd.0       (optional) rank 0's programs in the order they run
 *   <id> <rank> <stream> <kind> [key=value ...]
 *
 * kind is compute, send, recv, barrier or a collective (allreduce, allgather, reducescatter,
 * alltoall, broadcast, reduce).  Keys: dur (a duration, default unit ns), flops, bytes, group,
 * peer, tag, deps (comma-separated ids, forward references allowed), name, class, program (the
 * op's program on its rank; a rank's programs run in the order its `program` line lists them,
 * then in the order they first appear).  Blank lines
 * and lines starting with '#' are ignored; the first line must be the version line.
 *
 * The parser keeps each op's line so that every error it can attribute says
 * `file:line: field: what is wrong`; structural errors found by ssim_graph_finalize() (cycles,
 * a rank entering one collective twice) name the op's id instead.
 */
#include <shiftsim/data.h>
#include <shiftsim/graphfile.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANK (1u << 24)
/* The members of all groups together: each is stored (4 bytes) and sorted once, so a few short
 * lines of huge ranges ("group g 0-16777215", again and again) would otherwise ask for
 * gigabytes and minutes.  Four groups over every possible rank, far above any real graph's
 * (a 16,384-GPU job's tp, dp and pp groups list each rank three times). */
#define MAX_GROUP_MEMBERS (4ull * MAX_RANK)
#define VERSION_LINE      "# shiftsim-graph v1"

typedef struct {
    const char *path;
    guint line;
    GError **error;
    guint64 group_members; /* listed by the groups read so far */
} Ctx;

static gboolean err(Ctx *c, const char *field, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static gboolean err(Ctx *c, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (field)
        g_set_error(c->error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "%s:%u: %s: %s", c->path,
                    c->line, field, msg);
    else
        g_set_error(c->error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE, "%s:%u: %s", c->path,
                    c->line, msg);
    if (c->error)
        ssim_error_truncate(*c->error);
    return FALSE;
}

static gboolean parse_u64(const char *s, guint64 *out)
{
    if (s[0] < '0' || s[0] > '9')
        return FALSE;
    char *end;
    errno = 0;
    guint64 v = g_ascii_strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return FALSE;
    *out = v;
    return TRUE;
}

static gboolean parse_u32(const char *s, guint32 *out, guint32 max)
{
    guint64 v;
    if (!parse_u64(s, &v) || v > max)
        return FALSE;
    *out = (guint32)v;
    return TRUE;
}

/* A non-negative finite number followed by an optional unit from `units`. */
static gboolean parse_scaled(const char *s, const char *const *units, const double *scale,
                             double *out)
{
    if (!((s[0] >= '0' && s[0] <= '9') || s[0] == '.'))
        return FALSE;
    char *end;
    errno = 0;
    double v = g_ascii_strtod(s, &end);
    if (errno != 0 || !isfinite(v) || v < 0 || end == s)
        return FALSE;
    if (*end == '\0') {
        *out = v;
        return TRUE;
    }
    for (guint i = 0; units[i]; i++)
        if (strcmp(end, units[i]) == 0) {
            *out = v * scale[i];
            return isfinite(*out);
        }
    return FALSE;
}

gboolean ssim_parse_duration(const char *s, SsimTime *out, GError **error)
{
    static const char *const units[] = {"ns", "us", "ms", "s", NULL};
    static const double scale[] = {1, 1e3, 1e6, 1e9};
    double ns;
    if (!parse_scaled(s, units, scale, &ns) || ns >= 9.2e18) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "'%s' is not a duration (a non-negative number with an optional unit ns, "
                    "us, ms or s)",
                    s);
        return FALSE;
    }
    *out = (SsimTime)llround(ns);
    return TRUE;
}

gboolean ssim_parse_bytes(const char *s, guint64 *out, GError **error)
{
    return ssim_bytes_read(s, out, error); /* the one grammar (types.h) */
}

static gboolean valid_name(const char *s)
{
    if (*s == '\0')
        return FALSE;
    for (; *s; s++)
        if (!g_ascii_isalnum(*s) && strchr("_-.:/[]", *s) == NULL)
            return FALSE;
    return TRUE;
}

typedef struct {
    SsimOpSpec spec;
    guint line;
    guint32 rank;
    char *stream;
    char *name, *cls;
    char *program;
    char *deps; /* raw comma list, resolved after all lines are read */
} Pending;

static void pending_clear(gpointer p)
{
    Pending *x = p;
    g_free(x->stream);
    g_free(x->name);
    g_free(x->cls);
    g_free(x->program);
    g_free(x->deps);
}

static gboolean parse_group(Ctx *c, SsimGraph *g, char **tok, guint n)
{
    if (n < 3)
        return err(c, "group", "expected 'group NAME RANK...' with at least one rank");
    if (!valid_name(tok[1]))
        return err(c, "group", "'%s' is not a valid name (letters, digits, _ - . : / [ ])", tok[1]);
    /* The ranges first, counted against the bound before any is expanded. */
    g_autofree guint32 *lo = g_new(guint32, n), *hi = g_new(guint32, n);
    guint64 members = 0;
    for (guint i = 2; i < n; i++) {
        char *dash = strchr(tok[i], '-');
        if (dash) {
            *dash = '\0';
            gboolean ok = parse_u32(tok[i], &lo[i], MAX_RANK - 1) &&
                          parse_u32(dash + 1, &hi[i], MAX_RANK - 1) && lo[i] <= hi[i];
            *dash = '-';
            if (!ok)
                return err(c, "group", "'%s' is not a rank range LO-HI", tok[i]);
        } else if (parse_u32(tok[i], &lo[i], MAX_RANK - 1)) {
            hi[i] = lo[i];
        } else {
            return err(c, "group", "'%s' is not a rank (0 to %u)", tok[i], MAX_RANK - 1);
        }
        members += (guint64)hi[i] - lo[i] + 1;
    }
    if (c->group_members + members > MAX_GROUP_MEMBERS)
        return err(c, "group",
                   "the groups list more than %" G_GUINT64_FORMAT " ranks in all (a rank counts "
                   "once in each group that names it)",
                   (guint64)MAX_GROUP_MEMBERS);
    c->group_members += members;
    g_autoptr(GArray) ranks = g_array_sized_new(FALSE, FALSE, sizeof(guint32), (guint)members);
    for (guint i = 2; i < n; i++)
        for (guint32 r = lo[i]; r <= hi[i]; r++)
            g_array_append_val(ranks, r);
    GError *local = NULL;
    if (ssim_graph_add_group(g, tok[1], (guint32 *)ranks->data, ranks->len, &local) == SSIM_NONE) {
        err(c, "group", "%s", local->message);
        g_error_free(local);
        return FALSE;
    }
    return TRUE;
}

/* "program RANK NAME...": the order of rank RANK's programs (created here, so before any op). */
static gboolean parse_program(Ctx *c, SsimGraph *g, char **tok, guint n)
{
    guint32 rank;
    if (n < 3)
        return err(c, "program", "expected 'program RANK NAME...' with at least one name");
    if (!parse_u32(tok[1], &rank, MAX_RANK - 1))
        return err(c, "program", "'%s' is not a rank (0 to %u)", tok[1], MAX_RANK - 1);
    for (guint i = 2; i < n; i++) {
        if (!valid_name(tok[i]))
            return err(c, "program",
                       "'%s' is not a valid program name (letters, digits, _ - . : / [ ])", tok[i]);
        guint32 before = ssim_graph_n_programs(g);
        if (ssim_graph_program(g, rank, tok[i]) < before)
            return err(c, "program", "program %s of rank %u is listed twice", tok[i], rank);
    }
    return TRUE;
}

static gboolean parse_kind(const char *s, SsimOpSpec *spec)
{
    static const struct {
        const char *name;
        SsimOpKind kind;
    } plain[] = {{"compute", SSIM_OP_COMPUTE},
                 {"send", SSIM_OP_SEND},
                 {"recv", SSIM_OP_RECV},
                 {"barrier", SSIM_OP_BARRIER}};
    for (gsize i = 0; i < G_N_ELEMENTS(plain); i++)
        if (strcmp(s, plain[i].name) == 0) {
            spec->kind = plain[i].kind;
            return TRUE;
        }
    SsimCollKind coll;
    if (ssim_coll_kind_from_name(s, &coll)) {
        spec->kind = SSIM_OP_COLLECTIVE;
        spec->coll = coll;
        return TRUE;
    }
    return FALSE;
}

static gboolean parse_op(Ctx *c, SsimGraph *g, char **tok, guint n, Pending *p)
{
    SsimOpSpec init = SSIM_OP_SPEC_INIT;
    p->spec = init;
    p->line = c->line;
    if (n < 4)
        return err(c, NULL, "expected 'ID RANK STREAM KIND [key=value ...]', found %u field%s", n,
                   n == 1 ? "" : "s");
    if (!parse_u32(tok[0], &p->spec.id, G_MAXUINT32 - 1))
        return err(c, "id", "'%s' is not an op id (a whole number below 2^32-1)", tok[0]);
    if (!parse_u32(tok[1], &p->rank, MAX_RANK - 1))
        return err(c, "rank", "'%s' is not a rank (0 to %u)", tok[1], MAX_RANK - 1);
    if (!valid_name(tok[2]))
        return err(c, "stream", "'%s' is not a valid stream name (letters, digits, _ - . : / [ ])",
                   tok[2]);
    p->stream = g_strdup(tok[2]);
    if (!parse_kind(tok[3], &p->spec))
        return err(c, "kind",
                   "unknown kind '%s' (compute, send, recv, barrier, allreduce, "
                   "allgather, reducescatter, alltoall, broadcast, reduce)",
                   tok[3]);
    gboolean have[16] = {FALSE};
    static const char *const keys[] = {"dur",  "flops", "bytes", "group",   "peer", "tag",
                                       "deps", "name",  "class", "program", NULL};
    for (guint i = 4; i < n; i++) {
        char *eq = strchr(tok[i], '=');
        if (eq == NULL || eq == tok[i])
            return err(c, NULL, "'%s' is not a key=value field", tok[i]);
        *eq = '\0';
        const char *key = tok[i], *val = eq + 1;
        guint k = 0;
        while (keys[k] && strcmp(keys[k], key) != 0)
            k++;
        if (keys[k] == NULL)
            return err(c, key,
                       "unknown key (dur, flops, bytes, group, peer, tag, deps, name, "
                       "class, program)");
        if (have[k])
            return err(c, key, "given twice");
        have[k] = TRUE;
        if (*val == '\0')
            return err(c, key, "empty value");
        GError *local = NULL;
        switch (k) {
        case 0:
            if (!ssim_parse_duration(val, &p->spec.duration, &local))
                goto local_error;
            break;
        case 1: {
            double f;
            static const char *const units[] = {"K", "M", "G", "T", "P", NULL};
            static const double scale[] = {1e3, 1e6, 1e9, 1e12, 1e15};
            if (!parse_scaled(val, units, scale, &f))
                return err(c, key,
                           "'%s' is not a FLOP count (a non-negative number, optional "
                           "suffix K, M, G, T or P)",
                           val);
            p->spec.flops = f;
            break;
        }
        case 2:
            if (!ssim_parse_bytes(val, &p->spec.bytes, &local))
                goto local_error;
            break;
        case 3:
            p->spec.group = ssim_graph_find_group(g, val);
            if (p->spec.group == SSIM_NONE)
                return err(c, key, "no group named '%s' is defined above this line", val);
            break;
        case 4:
            if (!parse_u32(val, &p->spec.peer, MAX_RANK - 1))
                return err(c, key, "'%s' is not a rank (0 to %u)", val, MAX_RANK - 1);
            break;
        case 5:
            if (!parse_u32(val, &p->spec.tag, G_MAXINT32))
                return err(c, key, "'%s' is not a tag (0 to %d)", val, G_MAXINT32);
            break;
        case 6:
            p->deps = g_strdup(val);
            break;
        case 7:
            if (!valid_name(val))
                return err(c, key, "'%s' is not a valid name (letters, digits, _ - . : / [ ])",
                           val);
            p->name = g_strdup(val);
            break;
        case 8:
            if (!valid_name(val))
                return err(c, key, "'%s' is not a valid class name", val);
            p->cls = g_strdup(val);
            break;
        case 9:
            if (!valid_name(val))
                return err(c, key,
                           "'%s' is not a valid program name (letters, digits, _ - . : / [ ])",
                           val);
            p->program = g_strdup(val);
            break;
        }
        continue;
    local_error:
        err(c, key, "%s", local->message);
        g_error_free(local);
        return FALSE;
    }
    switch (p->spec.kind) {
    case SSIM_OP_COMPUTE:
        if (!have[0] && !have[1] && !have[2])
            return err(c, "dur",
                       "a compute op needs dur= (or flops= / bytes= for the cost "
                       "model)");
        if (have[3] || have[4])
            return err(c, have[3] ? "group" : "peer", "not allowed on a compute op");
        break;
    case SSIM_OP_COLLECTIVE:
    case SSIM_OP_BARRIER:
        if (!have[3])
            return err(c, "group", "a %s needs group=", tok[3]);
        if (p->spec.kind == SSIM_OP_COLLECTIVE && !have[2])
            return err(c, "bytes", "a collective needs bytes=");
        if (have[4])
            return err(c, "peer", "not allowed on a %s (it has a group)", tok[3]);
        {
            guint gn;
            const guint32 *r = ssim_graph_group_ranks(g, p->spec.group, &gn);
            gboolean member = FALSE;
            for (guint i = 0; i < gn; i++)
                member |= r[i] == p->rank;
            if (!member)
                return err(c, "group", "rank %u is not a member of group %s", p->rank,
                           ssim_graph_group_name(g, p->spec.group));
        }
        break;
    case SSIM_OP_SEND:
    case SSIM_OP_RECV:
        if (!have[4])
            return err(c, "peer", "a %s needs peer=", tok[3]);
        if (p->spec.peer == p->rank)
            return err(c, "peer", "a %s to its own rank", tok[3]);
        if (!have[2])
            return err(c, "bytes", "a %s needs bytes=", tok[3]);
        if (have[3])
            return err(c, "group", "not allowed on a %s (it has a peer)", tok[3]);
        break;
    case SSIM_OP_N:
        g_assert_not_reached();
    }
    return TRUE;
}

SsimGraph *ssim_graphfile_parse(const char *path, const char *text, gssize len, GError **error)
{
    if (len < 0)
        len = (gssize)strlen(text);
    if (memchr(text, '\0', (gsize)len) != NULL) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                    "%s: contains a NUL byte: not a text op-graph file", path);
        return NULL;
    }
    gsize bom = ssim_text_bom(text, (gsize)len); /* a Windows editor's, before the first line */
    text += bom;
    len -= (gssize)bom;
    if (len == 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                    "%s:1: version: the file is empty; expected '%s'", path, VERSION_LINE);
        return NULL;
    }
    g_autoptr(SsimGraph) g = ssim_graph_new();
    g_autoptr(GArray) ops = g_array_new(FALSE, TRUE, sizeof(Pending));
    g_array_set_clear_func(ops, pending_clear);
    Ctx c = {.path = path, .error = error};
    g_autofree char *copy = g_strndup(text, (gsize)len);
    char *cursor = copy;
    gboolean seen_version = FALSE;
    while (cursor != NULL && (*cursor != '\0' || !seen_version)) {
        char *line = cursor;
        char *nl = strchr(cursor, '\n');
        cursor = nl ? nl + 1 : NULL;
        if (nl)
            *nl = '\0';
        c.line++;
        if (!ssim_text_check_line(path, c.line, strlen(line), error))
            return NULL;
        g_strchomp(line);
        if (!seen_version) {
            if (strcmp(line, VERSION_LINE) != 0) {
                g_set_error(error, SSIM_CONFIG_ERROR,
                            g_str_has_prefix(line, "# shiftsim-graph") ? SSIM_CONFIG_ERROR_VERSION
                                                                       : SSIM_CONFIG_ERROR_PARSE,
                            "%s:1: version: expected '%s' as the first line, found '%.40s'", path,
                            VERSION_LINE, line);
                return NULL;
            }
            seen_version = TRUE;
            if (cursor == NULL)
                break;
            continue;
        }
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        g_auto(GStrv) tok = g_strsplit_set(g_strstrip(line), " \t", -1);
        /* Drop empty tokens from repeated separators. */
        guint n = 0;
        for (guint i = 0; tok[i]; i++) {
            if (tok[i][0] == '\0') {
                g_free(tok[i]);
                continue;
            }
            tok[n++] = tok[i];
        }
        tok[n] = NULL;
        if (n == 0)
            continue;
        if (strcmp(tok[0], "group") == 0) {
            if (!parse_group(&c, g, tok, n))
                return NULL;
            continue;
        }
        if (strcmp(tok[0], "program") == 0) {
            if (!parse_program(&c, g, tok, n))
                return NULL;
            continue;
        }
        Pending p = {0};
        gboolean ok = parse_op(&c, g, tok, n, &p);
        g_array_append_val(ops, p);
        if (!ok)
            return NULL;
    }
    /* Ids are unique; dependencies name defined ids. */
    g_autoptr(GHashTable) index = g_hash_table_new(g_direct_hash, g_direct_equal);
    for (guint i = 0; i < ops->len; i++) {
        Pending *p = &g_array_index(ops, Pending, i);
        gpointer prev = g_hash_table_lookup(index, GUINT_TO_POINTER(p->spec.id + 1));
        if (prev != NULL) {
            c.line = p->line;
            err(&c, "id", "op id %u is already used on line %u", p->spec.id,
                g_array_index(ops, Pending, GPOINTER_TO_UINT(prev) - 1).line);
            return NULL;
        }
        g_hash_table_insert(index, GUINT_TO_POINTER(p->spec.id + 1), GUINT_TO_POINTER(i + 1));
    }
    g_autoptr(GArray) deps = g_array_new(FALSE, FALSE, sizeof(guint32));
    for (guint i = 0; i < ops->len; i++) {
        Pending *p = &g_array_index(ops, Pending, i);
        c.line = p->line;
        g_array_set_size(deps, 0);
        if (p->deps) {
            g_auto(GStrv) list = g_strsplit(p->deps, ",", -1);
            for (guint k = 0; list[k]; k++) {
                guint32 id;
                if (!parse_u32(list[k], &id, G_MAXUINT32 - 1)) {
                    err(&c, "deps", "'%s' is not an op id", list[k]);
                    return NULL;
                }
                gpointer v = g_hash_table_lookup(index, GUINT_TO_POINTER(id + 1));
                if (v == NULL) {
                    err(&c, "deps", "no op has id %u", id);
                    return NULL;
                }
                if (GPOINTER_TO_UINT(v) - 1 == i) {
                    err(&c, "deps", "op %u depends on itself", id);
                    return NULL;
                }
                guint32 dep = GPOINTER_TO_UINT(v) - 1;
                g_array_append_val(deps, dep);
            }
        }
        p->spec.stream = ssim_graph_stream(g, p->rank, p->stream);
        p->spec.name = p->name;
        p->spec.cls = p->cls;
        guint32 op = ssim_graph_add_op(g, &p->spec, (guint32 *)deps->data, deps->len);
        /* Created at its first op, so a rank's programs run in the order they first appear. */
        if (p->program)
            ssim_graph_set_program(g, op, ssim_graph_program(g, p->rank, p->program));
    }
    if (!ssim_graph_finalize(g, error)) {
        g_prefix_error(error, "%s: ", path);
        return NULL;
    }
    return g_steal_pointer(&g);
}

SsimGraph *ssim_graphfile_load(const char *path, GError **error)
{
    gsize len = 0;
    g_autofree char *text = ssim_read_file(path, &len, error);
    if (text == NULL)
        return NULL;
    return ssim_graphfile_parse(path, text, (gssize)len, error);
}

static void append_u32_list(GString *out, const guint32 *v, guint n)
{
    for (guint i = 0; i < n; i++)
        g_string_append_printf(out, "%s%u", i ? " " : "", v[i]);
}

GString *ssim_graphfile_write(const SsimGraph *g)
{
    GString *out = g_string_new(VERSION_LINE "\n");
    for (guint32 gi = 0; gi < ssim_graph_n_groups(g); gi++) {
        guint n;
        const guint32 *r = ssim_graph_group_ranks(g, gi, &n);
        g_string_append_printf(out, "group %s ", ssim_graph_group_name(g, gi));
        append_u32_list(out, r, n);
        g_string_append_c(out, '\n');
    }
    /* Each rank's programs in the order they run (which first appearance need not show). */
    guint32 np = ssim_graph_n_programs(g);
    g_autofree gboolean *listed = g_new0(gboolean, MAX(np, 1));
    for (guint32 p = 0; p < np; p++) {
        if (listed[p])
            continue;
        guint32 rank = ssim_graph_program_rank(g, p);
        g_string_append_printf(out, "program %u", rank);
        for (guint32 q = p; q < np; q++)
            if (ssim_graph_program_rank(g, q) == rank) {
                listed[q] = TRUE;
                g_string_append_printf(out, " %s", ssim_graph_program_name(g, q));
            }
        g_string_append_c(out, '\n');
    }
    for (guint32 i = 0; i < ssim_graph_n_ops(g); i++) {
        const SsimOp *o = ssim_graph_op(g, i);
        const char *kind = o->kind == SSIM_OP_COLLECTIVE ? ssim_coll_kind_name(o->coll)
                                                         : ssim_op_kind_name(o->kind);
        g_string_append_printf(out, "%u %u %s %s", o->id, o->rank,
                               ssim_graph_stream_name(g, o->stream), kind);
        if (o->duration >= 0)
            g_string_append_printf(out, " dur=%" G_GINT64_FORMAT, o->duration);
        if (o->flops > 0) {
            char buf[G_ASCII_DTOSTR_BUF_SIZE];
            g_string_append_printf(out, " flops=%s", g_ascii_dtostr(buf, sizeof buf, o->flops));
        }
        if (o->bytes > 0 || o->kind == SSIM_OP_COLLECTIVE || o->kind == SSIM_OP_SEND ||
            o->kind == SSIM_OP_RECV)
            g_string_append_printf(out, " bytes=%" G_GUINT64_FORMAT, o->bytes);
        if (o->kind == SSIM_OP_COLLECTIVE || o->kind == SSIM_OP_BARRIER)
            g_string_append_printf(out, " group=%s", ssim_graph_group_name(g, o->group));
        if (o->kind == SSIM_OP_SEND || o->kind == SSIM_OP_RECV)
            g_string_append_printf(out, " peer=%u", o->peer);
        if (o->kind != SSIM_OP_COMPUTE && o->tag != SSIM_TAG_AUTO)
            g_string_append_printf(out, " tag=%u", o->tag);
        guint nd;
        const guint32 *d = ssim_graph_deps(g, i, &nd);
        for (guint k = 0; k < nd; k++)
            g_string_append_printf(out, "%s%u", k ? "," : " deps=", ssim_graph_op(g, d[k])->id);
        if (o->name != SSIM_NONE)
            g_string_append_printf(out, " name=%s", ssim_graph_string(g, o->name));
        if (o->cls != 0)
            g_string_append_printf(out, " class=%s", ssim_graph_string(g, o->cls));
        guint32 prog = ssim_graph_op_program(g, i);
        if (prog != SSIM_NONE)
            g_string_append_printf(out, " program=%s", ssim_graph_program_name(g, prog));
        g_string_append_c(out, '\n');
    }
    return out;
}
