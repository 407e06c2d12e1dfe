/*
 * Measured cost profiles: the rows and metadata of SsimProfile, and its text form (the
 * `# shiftsim-profile v2` CSV of docs/profiles.md; v1, without nics_per_rank, is still read).
 *
 * Reading.  The version line and the `# key = value` metadata lines before the header are read
 * line by line; from the header on, the text goes through libcsv in strict mode
 * (CSV_STRICT | CSV_STRICT_FINI), fed one byte at a time so that the reader always knows the
 * line and column of the byte libcsv is looking at: a field starts right after the delimiter
 * that ended the previous one, so every field, and every libcsv parse error, has an exact
 * `line:column`.  A whole-line `#` comment between rows is skipped.  Every error is
 * `file:line:column: field: what is wrong`, and the first one stops the read.
 *
 * Invariants: rows hold only what ssim_profile_add_row() accepts, whoever added them, so the
 * writer and the lookup never meet a malformed row; the writer prints numbers in the shortest
 * plain decimal that reads back to the same double, so load(write(p)) == p exactly.
 */
#include "profile-private.h"
#include <shiftsim/data.h>
#include <shiftsim/output.h>

#include <csv.h>
#include <math.h>
#include <string.h>

static const char *const kind_names[] = {
#define SSIM_X(e, s) s,
    SSIM_PROFILE_KIND_LIST(SSIM_X)
#undef SSIM_X
};

static const char *const comm_names[] = {
#define SSIM_X(e, s) s,
    SSIM_PROFILE_COMM_LIST(SSIM_X)
#undef SSIM_X
};

G_STATIC_ASSERT((int)SSIM_PCOMM_ALLREDUCE == (int)SSIM_COLL_ALLREDUCE);
G_STATIC_ASSERT((int)SSIM_PCOMM_REDUCE == (int)SSIM_COLL_REDUCE);
/* SSIM_COLL_PERMUTE (index 6) maps to sendrecv: each member sends its buffer to one peer. */
G_STATIC_ASSERT((int)SSIM_COLL_N == 7 && (int)SSIM_PCOMM_SENDRECV == (int)SSIM_COLL_PERMUTE);

static const char *const copy_ops[] = {"d2d", "p2p", "h2d", "d2h"};

typedef enum {
    COL_KIND,
    COL_OP,
    COL_DTYPE,
    COL_M,
    COL_N,
    COL_K,
    COL_BATCH,
    COL_BYTES,
    COL_RANKS,
    COL_RPN,
    COL_NICS,
    COL_ALGO,
    COL_TIME,
    COL_MEDIAN,
    COL_MIN,
    COL_STDDEV,
    COL_SAMPLES,
    COL_N_
} Column;

static const char *const column_names[] = {"kind",
                                           "op",
                                           "dtype",
                                           "m",
                                           "n",
                                           "k",
                                           "batch",
                                           "bytes",
                                           "ranks",
                                           "ranks_per_node",
                                           "nics_per_rank",
                                           "algo",
                                           "time_us",
                                           "median_us",
                                           "min_us",
                                           "stddev_us",
                                           "samples"};
G_STATIC_ASSERT(G_N_ELEMENTS(column_names) == COL_N_);
G_STATIC_ASSERT(COL_N_ == SSIM_PROFILE_N_COLUMNS);

#define VERSION_LINE SSIM_PROFILE_VERSION_LINE

/* A version of the format: its first line, its header and its columns in file order (v1 has
 * no nics_per_rank). */
typedef struct {
    const char *version_line, *header;
    guint n_columns;
    Column column[COL_N_]; /* the logical column at each file position */
} ProfileVersion;

static const ProfileVersion versions[] = {
    {SSIM_PROFILE_VERSION_LINE_V1,
     SSIM_PROFILE_HEADER_V1,
     SSIM_PROFILE_N_COLUMNS_V1,
     {COL_KIND, COL_OP, COL_DTYPE, COL_M, COL_N, COL_K, COL_BATCH, COL_BYTES, COL_RANKS, COL_RPN,
      COL_ALGO, COL_TIME, COL_MEDIAN, COL_MIN, COL_STDDEV, COL_SAMPLES}},
    {SSIM_PROFILE_VERSION_LINE,
     SSIM_PROFILE_HEADER,
     SSIM_PROFILE_N_COLUMNS,
     {COL_KIND, COL_OP, COL_DTYPE, COL_M, COL_N, COL_K, COL_BATCH, COL_BYTES, COL_RANKS, COL_RPN,
      COL_NICS, COL_ALGO, COL_TIME, COL_MEDIAN, COL_MIN, COL_STDDEV, COL_SAMPLES}},
};

const char *ssim_profile_kind_name(SsimProfileKind kind)
{
    return (unsigned)kind < SSIM_PROFILE_KIND_N ? kind_names[kind] : "?";
}

gboolean ssim_profile_kind_from_name(const char *name, SsimProfileKind *out)
{
    for (guint i = 0; i < SSIM_PROFILE_KIND_N; i++)
        if (g_strcmp0(name, kind_names[i]) == 0) {
            *out = (SsimProfileKind)i;
            return TRUE;
        }
    return FALSE;
}

const char *ssim_profile_comm_name(SsimProfileComm op)
{
    return (unsigned)op < SSIM_PCOMM_N ? comm_names[op] : "?";
}

gboolean ssim_profile_comm_from_name(const char *name, SsimProfileComm *out)
{
    for (guint i = 0; i < SSIM_PCOMM_N; i++)
        if (g_strcmp0(name, comm_names[i]) == 0) {
            *out = (SsimProfileComm)i;
            return TRUE;
        }
    return FALSE;
}

SsimProfileComm ssim_profile_comm_from_coll(SsimCollKind kind)
{
    g_return_val_if_fail((unsigned)kind < SSIM_COLL_N, SSIM_PCOMM_ALLREDUCE);
    return (SsimProfileComm)kind;
}

void ssim_profile_row_init(SsimProfileRow *row, SsimProfileKind kind)
{
    memset(row, 0, sizeof *row);
    row->kind = kind;
    row->op = "";
    row->algo = "";
    row->dtype = SSIM_PROFILE_NO_DTYPE;
    row->ranks = row->ranks_per_node = 1;
    row->time_us = row->median_us = row->min_us = row->stddev_us = NAN;
}

/* ---- The profile object ---------------------------------------------------------------- */

SsimProfile *ssim_profile_new(void)
{
    SsimProfile *p = g_new0(SsimProfile, 1);
    p->rows = g_array_new(FALSE, FALSE, sizeof(SsimProfileRow));
    p->strings = g_string_chunk_new(4096);
    p->meta_keys = g_ptr_array_new_with_free_func(g_free);
    p->meta_values = g_ptr_array_new_with_free_func(g_free);
    g_mutex_init(&p->index_lock);
    return p;
}

void ssim_profile_free(SsimProfile *profile)
{
    if (profile == NULL)
        return;
    if (profile->index != NULL)
        profile->index_free(profile->index);
    g_mutex_clear(&profile->index_lock);
    g_array_free(profile->rows, TRUE);
    g_string_chunk_free(profile->strings);
    g_ptr_array_free(profile->meta_keys, TRUE);
    g_ptr_array_free(profile->meta_values, TRUE);
    g_free(profile);
}

static void invalidate(SsimProfile *p)
{
    if (p->index != NULL)
        p->index_free(p->index);
    p->index = NULL;
}

static gboolean in_list(const char *s, const char *const *list, guint n)
{
    for (guint i = 0; i < n; i++)
        if (strcmp(s, list[i]) == 0)
            return TRUE;
    return FALSE;
}

/* The semantic checks of a row.  On failure returns FALSE with *bad the column at fault and
 * *why (owned by the caller) what is wrong with it. */
static gboolean row_check(const SsimProfileRow *r, Column *bad, char **why)
{
#define FAIL(col, ...)                                                                             \
    do {                                                                                           \
        *bad = (col);                                                                              \
        *why = g_strdup_printf(__VA_ARGS__);                                                       \
        return FALSE;                                                                              \
    } while (0)
    if ((unsigned)r->kind >= SSIM_PROFILE_KIND_N)
        FAIL(COL_KIND, "not a row kind");
    const char *kind = kind_names[r->kind];
    if (r->op == NULL || r->op[0] == '\0')
        FAIL(COL_OP, "empty (a %s row names its op)", kind);
    if (r->kind == SSIM_PROFILE_COMM) {
        SsimProfileComm c;
        if (!ssim_profile_comm_from_name(r->op, &c))
            FAIL(COL_OP,
                 "unknown collective '%s' (expected allreduce, allgather, reducescatter, "
                 "alltoall, broadcast, reduce or sendrecv)",
                 r->op);
    } else if (r->kind == SSIM_PROFILE_COPY) {
        if (!in_list(r->op, copy_ops, G_N_ELEMENTS(copy_ops)))
            FAIL(COL_OP, "unknown copy '%s' (expected d2d, p2p, h2d or d2h)", r->op);
    } else if (r->kind == SSIM_PROFILE_ATTENTION) {
        if (!ssim_profile_attention_pass(r->op, NULL, NULL))
            FAIL(COL_OP, "unknown attention pass '%s' (expected fwd, bwd, flash-fwd or flash-bwd)",
                 r->op);
    }
    if (r->dtype != SSIM_PROFILE_NO_DTYPE && (r->dtype < 0 || r->dtype >= SSIM_DTYPE_N))
        FAIL(COL_DTYPE, "not a dtype");
    if (r->dtype == SSIM_PROFILE_NO_DTYPE && r->kind != SSIM_PROFILE_COPY)
        FAIL(COL_DTYPE, "empty (a %s row needs bf16, fp16, fp32, tf32 or fp8)", kind);
    if (r->kind == SSIM_PROFILE_GEMM || r->kind == SSIM_PROFILE_ATTENTION) {
        const guint64 dims[] = {r->m, r->n, r->k, r->batch};
        for (guint i = 0; i < 4; i++)
            if (dims[i] == 0)
                FAIL((Column)(COL_M + i), "must be at least 1 on a %s row", kind);
    } else if (r->bytes == 0) {
        FAIL(COL_BYTES, "must be at least 1 on a %s row", kind);
    }
    if (r->ranks == 0)
        FAIL(COL_RANKS, "must be at least 1");
    if (r->ranks_per_node == 0)
        FAIL(COL_RPN, "must be at least 1");
    if (r->ranks_per_node > r->ranks)
        FAIL(COL_RPN, "%u is more than the row's %u ranks", r->ranks_per_node, r->ranks);
    if (!(r->nics_per_rank >= 0 && r->nics_per_rank <= 1024))
        FAIL(COL_NICS, "must be empty or a number of NICs per rank in [0, 1024]");
    if (r->algo == NULL)
        FAIL(COL_ALGO, "NULL (use \"\")");
    /* An op of more than 10^12 us (11.6 days) is a unit error, and would make interpolated
     * costs overflow simulated time (int64 ns) into ops that never finish. */
    if (!(r->time_us > 0) || !(r->time_us <= 1e12))
        FAIL(COL_TIME, "must be a positive number of microseconds, at most 1e12");
    const double stats[] = {r->median_us, r->min_us, r->stddev_us};
    for (guint i = 0; i < 3; i++)
        if (!isnan(stats[i]) && !(stats[i] >= 0 && stats[i] <= 1e12))
            FAIL((Column)(COL_MEDIAN + i), "must be empty or a non-negative number, at most 1e12");
    return TRUE;
#undef FAIL
}

gboolean ssim_profile_add_row(SsimProfile *profile, const SsimProfileRow *row, GError **error)
{
    g_return_val_if_fail(profile != NULL && row != NULL, FALSE);
    Column bad;
    g_autofree char *why = NULL;
    if (!row_check(row, &bad, &why)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "%s: %s", column_names[bad],
                    why);
        return FALSE;
    }
    SsimProfileRow copy = *row;
    copy.op = g_string_chunk_insert_const(profile->strings, row->op);
    copy.algo = g_string_chunk_insert_const(profile->strings, row->algo);
    g_array_append_val(profile->rows, copy);
    invalidate(profile);
    return TRUE;
}

guint ssim_profile_n_rows(const SsimProfile *profile)
{
    return profile->rows->len;
}

const SsimProfileRow *ssim_profile_row(const SsimProfile *profile, guint i)
{
    g_return_val_if_fail(i < profile->rows->len, NULL);
    return &g_array_index(profile->rows, SsimProfileRow, i);
}

void ssim_profile_set_meta(SsimProfile *profile, const char *key, const char *value)
{
    /* One `# key = value` line each: no line breaks, no '=' in the key. */
    g_return_if_fail(key != NULL && value != NULL && key[0] != '\0');
    g_return_if_fail(strpbrk(key, "=\r\n") == NULL && strpbrk(value, "\r\n") == NULL);
    for (guint i = 0; i < profile->meta_keys->len; i++)
        if (strcmp(profile->meta_keys->pdata[i], key) == 0) {
            g_free(profile->meta_values->pdata[i]);
            profile->meta_values->pdata[i] = g_strdup(value);
            return;
        }
    g_ptr_array_add(profile->meta_keys, g_strdup(key));
    g_ptr_array_add(profile->meta_values, g_strdup(value));
}

const char *ssim_profile_get_meta(const SsimProfile *profile, const char *key)
{
    for (guint i = 0; i < profile->meta_keys->len; i++)
        if (strcmp(profile->meta_keys->pdata[i], key) == 0)
            return profile->meta_values->pdata[i];
    return NULL;
}

guint ssim_profile_n_meta(const SsimProfile *profile)
{
    return profile->meta_keys->len;
}

const char *ssim_profile_meta_key(const SsimProfile *profile, guint i)
{
    g_return_val_if_fail(i < profile->meta_keys->len, NULL);
    return profile->meta_keys->pdata[i];
}

const char *ssim_profile_meta_value(const SsimProfile *profile, guint i)
{
    g_return_val_if_fail(i < profile->meta_values->len, NULL);
    return profile->meta_values->pdata[i];
}

gboolean ssim_profile_merge(SsimProfile *dst, const SsimProfile *src, GError **error)
{
    const char *g1 = ssim_profile_get_meta(dst, "gpu"), *g2 = ssim_profile_get_meta(src, "gpu");
    if (g1 && g2 && strcmp(g1, g2) != 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "gpu: '%s' differs from '%s' measured by the files before it: one profile "
                    "describes one GPU",
                    g2, g1);
        return FALSE;
    }
    for (guint i = 0; i < src->meta_keys->len; i++)
        if (ssim_profile_get_meta(dst, src->meta_keys->pdata[i]) == NULL)
            ssim_profile_set_meta(dst, src->meta_keys->pdata[i], src->meta_values->pdata[i]);
    for (guint i = 0; i < src->rows->len; i++) {
        const SsimProfileRow *r = &g_array_index(src->rows, SsimProfileRow, i);
        if (!ssim_profile_add_row(dst, r, error))
            return FALSE; /* cannot happen: src's rows were checked */
    }
    return TRUE;
}

/* ---- Numbers ----------------------------------------------------------------------------- */

static gboolean is_nan_text(const char *s)
{
    if (*s == '+' || *s == '-')
        s++;
    return g_ascii_strncasecmp(s, "nan", 3) == 0;
}

/* A plain decimal (an exponent is tolerated); sets *why on failure. */
static gboolean parse_real(const char *s, double *out, const char **why)
{
    if (is_nan_text(s)) {
        *why = "is NaN, not a number";
        return FALSE;
    }
    gboolean digit = FALSE;
    for (const char *c = s; *c; c++) {
        if (g_ascii_isdigit(*c))
            digit = TRUE;
        else if (!strchr("+-.eE", *c)) {
            *why = "is not a number";
            return FALSE;
        }
    }
    char *end = NULL;
    double v = g_ascii_strtod(s, &end);
    if (!digit || end == s || *end != '\0') {
        *why = "is not a number";
        return FALSE;
    }
    if (!isfinite(v)) {
        *why = "is not finite";
        return FALSE;
    }
    if (v < 0) {
        *why = "is negative";
        return FALSE;
    }
    *out = v;
    return TRUE;
}

static gboolean parse_count(const char *s, guint64 *out, const char **why)
{
    if (is_nan_text(s)) {
        *why = "is NaN, not a number";
        return FALSE;
    }
    const char *d = (*s == '-' || *s == '+') ? s + 1 : s;
    gboolean digits = *d != '\0';
    for (const char *c = d; *c; c++)
        digits = digits && g_ascii_isdigit(*c);
    if (digits && *s == '-' && strspn(d, "0") != strlen(d)) {
        *why = "is negative";
        return FALSE;
    }
    if (!digits) {
        double v;
        const char *w;
        *why = parse_real(s, &v, &w) ? "is not a whole number" : w;
        return FALSE;
    }
    guint64 v;
    if (!g_ascii_string_to_unsigned(d, 10, 0, G_MAXUINT64, &v, NULL)) {
        *why = "is too large";
        return FALSE;
    }
    *out = v;
    return TRUE;
}

/* ---- Reading ----------------------------------------------------------------------------- */

typedef struct {
    char *text;
    guint line, col;
} Field;

typedef struct {
    const char *path;
    SsimProfile *profile;
    GArray *fields;       /* Field of the current record */
    guint line, col;      /* position of the next byte */
    guint fline, fcol;    /* where the field being read began */
    gboolean field_ended; /* a field ended on the byte just fed */
    gboolean have_header;
    gboolean at_record_start;
    const ProfileVersion *ver;
    GError *error;
} Reader;

static void clear_fields(Reader *r)
{
    for (guint i = 0; i < r->fields->len; i++)
        g_free(g_array_index(r->fields, Field, i).text);
    g_array_set_size(r->fields, 0);
}

static void fail_at(Reader *r, guint line, guint col, const char *field, const char *fmt, ...)
    G_GNUC_PRINTF(5, 6);

static void fail_at(Reader *r, guint line, guint col, const char *field, const char *fmt, ...)
{
    if (r->error)
        return;
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    r->error = g_error_new(SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE, "%s:%u:%u: %s: %s", r->path,
                           line, col, field, msg);
}

static void on_field(void *data, size_t len, void *user)
{
    Reader *r = user;
    Field f = {g_strndup(data ? data : "", data ? len : 0), r->fline, r->fcol};
    g_array_append_val(r->fields, f);
    r->field_ended = TRUE;
}

static void check_header(Reader *r)
{
    guint n = r->fields->len;
    Field *f = (Field *)(void *)r->fields->data;
    const ProfileVersion *v = r->ver;
    SsimProfileKind kind;
    if (n > 0 && ssim_profile_kind_from_name(f[0].text, &kind)) {
        fail_at(r, f[0].line, f[0].col, "header",
                "missing: a row comes before the header line '%s'", v->header);
        return;
    }
    for (guint i = 0; i < n && i < v->n_columns; i++)
        if (strcmp(f[i].text, column_names[v->column[i]]) != 0) {
            fail_at(r, f[i].line, f[i].col, "header",
                    "column %u is '%s', expected '%s' (the header must be '%s')", i + 1, f[i].text,
                    column_names[v->column[i]], v->header);
            return;
        }
    if (n != v->n_columns)
        fail_at(r, f[0].line, f[0].col, "header", "%u columns, expected %u ('%s')", n, v->n_columns,
                v->header);
    r->have_header = TRUE;
}

static void parse_row(Reader *r, guint end_line, guint end_col)
{
    guint n = r->fields->len;
    Field *rec = (Field *)(void *)r->fields->data;
    const ProfileVersion *v = r->ver;
    if (n > v->n_columns) {
        fail_at(r, rec[v->n_columns].line, rec[v->n_columns].col, "columns",
                "extra field: the row has %u fields, expected %u", n, v->n_columns);
        return;
    }
    if (n < v->n_columns) {
        fail_at(r, end_line, end_col, column_names[v->column[n]],
                "missing: the row has %u fields, expected %u", n, v->n_columns);
        return;
    }
    /* The row by logical column; a column this version lacks reads as an empty cell. */
    Field f[COL_N_];
    for (guint c = 0; c < COL_N_; c++)
        f[c] = (Field){"", end_line, end_col};
    for (guint i = 0; i < n; i++)
        f[v->column[i]] = rec[i];
    SsimProfileRow row;
    ssim_profile_row_init(&row, SSIM_PROFILE_GEMM);
    if (!ssim_profile_kind_from_name(f[COL_KIND].text, &row.kind)) {
        fail_at(r, f[0].line, f[0].col, "kind",
                "unknown kind '%s' (expected gemm, attention, "
                "memory, comm or copy)",
                f[0].text);
        return;
    }
    row.op = f[COL_OP].text;
    row.algo = f[COL_ALGO].text;
    const char *dt = f[COL_DTYPE].text;
    SsimDtype dtype;
    if (dt[0] != '\0') {
        if (!ssim_dtype_from_name(dt, &dtype)) {
            fail_at(r, f[COL_DTYPE].line, f[COL_DTYPE].col, "dtype",
                    "unknown dtype '%s' "
                    "(expected bf16, fp16, fp32, tf32 or fp8)",
                    dt);
            return;
        }
        row.dtype = (int)dtype;
    }
    guint64 *counts[] = {&row.m, &row.n, &row.k, &row.batch, &row.bytes};
    guint64 ranks = 0, rpn = 0, samples = 0;
    struct {
        Column col;
        guint64 *dst;
    } ints[] = {{COL_M, counts[0]},     {COL_N, counts[1]},     {COL_K, counts[2]},
                {COL_BATCH, counts[3]}, {COL_BYTES, counts[4]}, {COL_RANKS, &ranks},
                {COL_RPN, &rpn},        {COL_SAMPLES, &samples}};
    for (guint i = 0; i < G_N_ELEMENTS(ints); i++) {
        const Field *fi = &f[ints[i].col];
        const char *why;
        *ints[i].dst = 0;
        if (fi->text[0] != '\0' && !parse_count(fi->text, ints[i].dst, &why)) {
            fail_at(r, fi->line, fi->col, column_names[ints[i].col], "'%s' %s", fi->text, why);
            return;
        }
    }
    if (ranks > G_MAXUINT || rpn > G_MAXUINT) {
        Column c = ranks > G_MAXUINT ? COL_RANKS : COL_RPN;
        fail_at(r, f[c].line, f[c].col, column_names[c], "is too large");
        return;
    }
    row.ranks = (guint)ranks;
    row.ranks_per_node = (guint)rpn;
    row.samples = samples;
    struct {
        Column col;
        double *dst;
    } reals[] = {{COL_TIME, &row.time_us},
                 {COL_MEDIAN, &row.median_us},
                 {COL_MIN, &row.min_us},
                 {COL_STDDEV, &row.stddev_us},
                 {COL_NICS, &row.nics_per_rank}};
    for (guint i = 0; i < G_N_ELEMENTS(reals); i++) {
        const Field *fi = &f[reals[i].col];
        const char *why;
        *reals[i].dst = NAN;
        if (fi->text[0] != '\0' && !parse_real(fi->text, reals[i].dst, &why)) {
            fail_at(r, fi->line, fi->col, column_names[reals[i].col], "'%s' %s", fi->text, why);
            return;
        }
    }
    if (isnan(row.nics_per_rank))
        row.nics_per_rank = 0; /* not given: as on the simulated cluster */
    Column bad = COL_KIND;
    g_autofree char *why = NULL;
    if (!row_check(&row, &bad, &why)) {
        fail_at(r, f[bad].line, f[bad].col, column_names[bad], "%s", why);
        return;
    }
    gboolean ok = ssim_profile_add_row(r->profile, &row, NULL);
    g_assert(ok);
}

/* A record ended on the byte at (r->line, r->col), which is where a missing field is. */
static void on_record(int c, void *user)
{
    Reader *r = user;
    (void)c;
    if (r->error == NULL && r->fields->len > 0) {
        if (!r->have_header)
            check_header(r);
        else
            parse_row(r, r->line, r->col);
    }
    clear_fields(r);
    r->at_record_start = TRUE;
}

static const char *field_name(const Reader *r)
{
    if (!r->have_header)
        return "header";
    guint i = r->fields->len;
    return i < r->ver->n_columns ? column_names[r->ver->column[i]] : "columns";
}

/* Feeds the CSV part (header and rows) starting at `line`. */
static void read_csv(Reader *r, const char *s, gsize len, guint line)
{
    struct csv_parser p;
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI) != 0) {
        fail_at(r, line, 1, "file", "out of memory");
        return;
    }
    r->line = r->fline = line;
    r->col = r->fcol = 1;
    r->at_record_start = TRUE;
    for (gsize i = 0; i < len && r->error == NULL; i++) {
        unsigned char b = (unsigned char)s[i];
        if (r->at_record_start && b == '#') { /* a comment line between rows */
            while (i < len && s[i] != '\n')
                i++;
            r->line++;
            r->col = r->fcol = 1;
            r->fline = r->line;
            continue;
        }
        if (b != '\n' && b != '\r')
            r->at_record_start = FALSE;
        /* Callbacks see (r->line, r->col) = this byte; a field ending on it leaves the next
         * one starting right after it. */
        r->field_ended = FALSE;
        if (csv_parse(&p, s + i, 1, on_field, on_record, r) != 1 && r->error == NULL)
            fail_at(r, r->line, r->col, field_name(r),
                    "%s (a quote inside an unquoted field, or "
                    "text after a closing quote)",
                    csv_strerror(csv_error(&p)));
        if (b == '\n') {
            r->line++;
            r->col = 1;
        } else {
            r->col++;
        }
        if (r->field_ended) {
            r->fline = r->line;
            r->fcol = r->col;
        }
    }
    if (r->error == NULL) {
        guint fl = r->fline, fc = r->fcol;
        const char *name = field_name(r);
        if (csv_fini(&p, on_field, on_record, r) != 0 && r->error == NULL)
            fail_at(r, fl, fc, name,
                    "unterminated quoted field (no closing '\"' before the end "
                    "of the file)");
    }
    csv_free(&p);
    if (r->error == NULL && !r->have_header)
        fail_at(r, r->line, 1, "header", "missing: expected '%s'", r->ver->header);
}

static char *trimmed_line(const char *s, gsize len)
{
    char *t = g_strndup(s, len);
    return g_strstrip(t);
}

SsimProfile *ssim_profile_load_data(const char *text, gssize length, const char *path,
                                    GError **error)
{
    g_return_val_if_fail(text != NULL, NULL);
    gsize len = length < 0 ? strlen(text) : (gsize)length;
    if (path == NULL)
        path = "<profile>";
    g_autoptr(SsimProfile) profile = ssim_profile_new();
    Reader r = {.path = path, .profile = profile};
    r.fields = g_array_new(FALSE, FALSE, sizeof(Field));

    /* The version line and the metadata, line by line. */
    gsize pos = ssim_text_bom(text, len);
    guint line = 1;
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        gsize end = nl ? (gsize)(nl - text) : len;
        g_autofree char *t = trimmed_line(text + pos, end - pos);
        if (line == 1) {
            for (guint v = 0; v < G_N_ELEMENTS(versions); v++)
                if (strcmp(t, versions[v].version_line) == 0)
                    r.ver = &versions[v];
            if (r.ver == NULL) {
                if (g_str_has_prefix(t, "# shiftsim-profile "))
                    fail_at(&r, 1, 20, "version",
                            "'%s' is not supported: this shiftsim reads "
                            "'" VERSION_LINE "' and '" SSIM_PROFILE_VERSION_LINE_V1 "'",
                            t + 19);
                else
                    fail_at(&r, 1, 1, "version",
                            "expected '" VERSION_LINE "' (or '" SSIM_PROFILE_VERSION_LINE_V1
                            "') as the first line, found '%.40s'",
                            t);
                break;
            }
        } else if (t[0] == '#') {
            const char *eq = strchr(t, '=');
            if (eq) {
                g_autofree char *key = g_strstrip(g_strndup(t + 1, (gsize)(eq - t - 1)));
                g_autofree char *value = g_strstrip(g_strdup(eq + 1));
                if (key[0] == '\0') {
                    fail_at(&r, line, 1, "metadata", "'%s' has no key before '='", t);
                    break;
                }
                ssim_profile_set_meta(profile, key, value);
            } /* a '#' line without '=' is a comment */
        } else if (t[0] != '\0') {
            break; /* the header */
        }
        pos = nl ? end + 1 : len;
        line++;
    }
    if (r.error == NULL && r.ver == NULL) /* nothing, or only a byte order mark */
        fail_at(&r, 1, 1, "version", "the file is empty (expected '" VERSION_LINE "')");
    if (r.error == NULL)
        read_csv(&r, text + pos, len - pos, line);
    clear_fields(&r);
    g_array_free(r.fields, TRUE);
    if (r.error) {
        g_propagate_error(error, r.error);
        return NULL;
    }
    return g_steal_pointer(&profile);
}

static gint compare_names(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static SsimProfile *load_file(const char *path, GError **error)
{
    gsize len = 0;
    g_autofree char *text = ssim_read_file(path, &len, error); /* a regular file, bounded */
    if (text == NULL)
        return NULL;
    return ssim_profile_load_data(text, (gssize)len, path, error);
}

SsimProfile *ssim_profile_load(const char *path, GError **error)
{
    g_return_val_if_fail(path != NULL, NULL);
    if (!g_file_test(path, G_FILE_TEST_IS_DIR))
        return load_file(path, error);
    g_autoptr(GError) err = NULL;
    g_autoptr(GDir) dir = g_dir_open(path, 0, &err);
    if (dir == NULL) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_IO, "%s: %s", path, err->message);
        return NULL;
    }
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    const char *name;
    while ((name = g_dir_read_name(dir)) != NULL) {
        g_autofree char *full = g_build_filename(path, name, NULL);
        if (ssim_path_is(name, ".csv") && g_file_test(full, G_FILE_TEST_IS_REGULAR))
            g_ptr_array_add(names, g_strdup(name));
    }
    if (names->len == 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MISSING,
                    "%s: no *.csv (or *.csv.gz) profile in this directory", path);
        return NULL;
    }
    g_ptr_array_sort(names, compare_names);
    g_autoptr(SsimProfile) all = ssim_profile_new();
    for (guint i = 0; i < names->len; i++) {
        g_autofree char *full = g_build_filename(path, names->pdata[i], NULL);
        g_autoptr(SsimProfile) one = load_file(full, error);
        if (one == NULL)
            return NULL;
        if (!ssim_profile_merge(all, one, error)) {
            g_prefix_error(error, "%s:1:1: ", full);
            return NULL;
        }
    }
    return g_steal_pointer(&all);
}

/* ---- Writing ----------------------------------------------------------------------------- */

/* The shortest plain decimal that reads back as `v`. */
static void put_real(GString *out, double v)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE + 32];
    for (int d = 0; d <= 20; d++) {
        g_snprintf(buf, sizeof buf, "%.*f", d, v);
        if (g_ascii_strtod(buf, NULL) == v) {
            g_string_append(out, buf);
            return;
        }
    }
    g_string_append(out, g_ascii_dtostr(buf, sizeof buf, v));
}

static void put_text(GString *out, const char *s)
{
    if (strpbrk(s, ",\"\r\n") == NULL && s[0] != ' ' && s[0] != '#') {
        g_string_append(out, s);
        return;
    }
    g_string_append_c(out, '"');
    for (const char *c = s; *c; c++) {
        if (*c == '"')
            g_string_append_c(out, '"');
        g_string_append_c(out, *c);
    }
    g_string_append_c(out, '"');
}

GString *ssim_profile_write(const SsimProfile *profile)
{
    GString *out = g_string_new(VERSION_LINE "\n");
    for (guint i = 0; i < profile->meta_keys->len; i++)
        g_string_append_printf(out, "# %s = %s\n", (char *)profile->meta_keys->pdata[i],
                               (char *)profile->meta_values->pdata[i]);
    g_string_append(out, SSIM_PROFILE_HEADER "\n");
    for (guint i = 0; i < profile->rows->len; i++) {
        const SsimProfileRow *r = &g_array_index(profile->rows, SsimProfileRow, i);
        g_string_append_printf(out, "%s,", kind_names[r->kind]);
        put_text(out, r->op);
        g_string_append_printf(out,
                               ",%s,%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT
                               ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%u,%u,",
                               r->dtype == SSIM_PROFILE_NO_DTYPE ? "" : ssim_dtype_name(r->dtype),
                               r->m, r->n, r->k, r->batch, r->bytes, r->ranks, r->ranks_per_node);
        if (r->nics_per_rank > 0)
            put_real(out, r->nics_per_rank);
        g_string_append_c(out, ',');
        put_text(out, r->algo);
        const double reals[] = {r->time_us, r->median_us, r->min_us, r->stddev_us};
        for (guint j = 0; j < 4; j++) {
            g_string_append_c(out, ',');
            if (!isnan(reals[j]))
                put_real(out, reals[j]);
        }
        g_string_append_c(out, ',');
        if (r->samples > 0)
            g_string_append_printf(out, "%" G_GUINT64_FORMAT, r->samples);
        g_string_append_c(out, '\n');
    }
    return out;
}

gboolean ssim_profile_save(const SsimProfile *profile, const char *path, GError **error)
{
    g_autoptr(GString) text = ssim_profile_write(profile);
    return ssim_output_write(path, text->str, text->len, error);
}
