/*
 * Importers of nccl-tests' collective measurements (its text and JSON output) into profile rows;
 * the formats and conventions are described in include/shiftsim/nccltests.h.  nccl-tests'
 * vocabulary (type names, collectives in program names, metadata defaults) is shared with the
 * other importers of this folder through src/import/nccltests-private.h.
 *
 * nccl-tests prints, per size, one out-of-place and one in-place measurement, each the mean of
 * `iters` timed operations; the importer keeps both as the two samples of one row.  Its "size"
 * already follows the profile's bytes convention (the full buffer for all-reduce, the output for
 * all-gather, the input for reduce-scatter), so sizes are copied unchanged.  The text importer
 * reads the column names from the table's header line rather than assuming positions, so both
 * the old (no root column) and current layouts, and trailing timestamp columns, are understood.
 *
 * The layout of a measurement is what its header says: the ranks (the `#  Rank N ... on HOST`
 * lines, else nThread x nGpus), the ranks per node (the most ranks on one host), and, when
 * nccl-tests ran with NCCL_DEBUG=INFO, the NICs of a node (NCCL's `NET/IB : Using [0]mlx5_0:1/IB
 * [1]...` line): each row of a run across nodes records min(1, NICs per node / ranks per node)
 * NICs per rank, NCCL driving each GPU through its nearest NIC, and the profile records
 * nics_per_node.  Without that line the NICs stay unrecorded (0).
 *
 * Invariants: an importer either appends every row of its input or fails and leaves `dst`
 * exactly as it was (rows go to a scratch profile first and are merged at the end).
 */
#include <shiftsim/cluster.h>
#include <shiftsim/nccltests.h>

#include "src/import/nccltests-private.h"
#include "src/core/jsonbound.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- nccl-tests' vocabulary (src/import/nccltests-private.h) ----------------------------- */

gboolean ssim_nccltests_dtype_from_name(const char *type, SsimDtype *out)
{
    static const struct {
        const char *nccl;
        SsimDtype dtype;
    } map[] = {
        {"float", SSIM_DTYPE_FP32},   {"float32", SSIM_DTYPE_FP32},  {"half", SSIM_DTYPE_FP16},
        {"float16", SSIM_DTYPE_FP16}, {"bfloat16", SSIM_DTYPE_BF16}, {"f8e4m3", SSIM_DTYPE_FP8},
        {"f8e5m2", SSIM_DTYPE_FP8},   {"fp8_e4m3", SSIM_DTYPE_FP8},  {"fp8_e5m2", SSIM_DTYPE_FP8},
    };
    for (guint i = 0; i < G_N_ELEMENTS(map); i++)
        if (strcmp(type, map[i].nccl) == 0) {
            *out = map[i].dtype;
            return TRUE;
        }
    return FALSE;
}

gboolean ssim_nccltests_op_from_name(const char *name, SsimProfileComm *out)
{
    static const struct {
        const char *stem;
        SsimProfileComm op;
    } map[] = {
        {"all_reduce", SSIM_PCOMM_ALLREDUCE},
        {"allreduce", SSIM_PCOMM_ALLREDUCE},
        {"all_gather", SSIM_PCOMM_ALLGATHER},
        {"allgather", SSIM_PCOMM_ALLGATHER},
        {"reduce_scatter", SSIM_PCOMM_REDUCESCATTER},
        {"reducescatter", SSIM_PCOMM_REDUCESCATTER},
        {"alltoall", SSIM_PCOMM_ALLTOALL},
        {"all_to_all", SSIM_PCOMM_ALLTOALL},
        {"broadcast", SSIM_PCOMM_BROADCAST},
        {"sendrecv", SSIM_PCOMM_SENDRECV},
        {"reduce", SSIM_PCOMM_REDUCE}, /* last: "reduce" is inside the names above */
    };
    g_autofree char *base = g_path_get_basename(name);
    for (guint i = 0; i < G_N_ELEMENTS(map); i++)
        if (strstr(base, map[i].stem)) {
            *out = map[i].op;
            return TRUE;
        }
    return FALSE;
}

/* NCCL_VERSION_CODE (2.9 and later: major*10000 + minor*100 + patch) as "2.18.3". */
static char *nccl_version_string(long code)
{
    if (code >= 10000)
        return g_strdup_printf("%ld.%ld.%ld", code / 10000, code / 100 % 100, code % 100);
    return g_strdup_printf("%ld.%ld.%ld", code / 1000, code / 100 % 10, code % 100);
}

/* Appends the row of one measured size with `n` (1 or 2) sample times in microseconds. */
static gboolean add_size_row(SsimProfile *p, SsimProfileComm op, SsimDtype dtype, guint64 bytes,
                             guint ranks, guint rpn, guint nics_per_node, const double *t, guint n,
                             GError **error)
{
    SsimProfileRow row;
    ssim_profile_row_init(&row, SSIM_PROFILE_COMM);
    row.op = ssim_profile_comm_name(op);
    row.dtype = (int)dtype;
    row.bytes = bytes;
    row.ranks = ranks;
    row.ranks_per_node = rpn;
    /* Across nodes, each rank's traffic goes through its nearest NIC: NICs per node over ranks
     * per node, at most one (unknown without NCCL's NET/IB line: 0). */
    if (nics_per_node > 0 && rpn < ranks)
        row.nics_per_rank = MIN(1.0, (double)nics_per_node / rpn);
    row.samples = n;
    if (n == 2) {
        row.time_us = row.median_us = (t[0] + t[1]) / 2;
        row.min_us = MIN(t[0], t[1]);
        row.stddev_us = fabs(t[0] - t[1]) / G_SQRT2;
    } else {
        row.time_us = row.median_us = row.min_us = t[0];
    }
    return ssim_profile_add_row(p, &row, error);
}

void ssim_nccltests_set_meta_default(SsimProfile *p, const char *key, const char *value)
{
    if (value == NULL || ssim_profile_get_meta(p, key) != NULL)
        return;
    /* A metadata value is one line: a JSON string may hold line breaks (the fuzzer found
     * ssim_profile_set_meta()'s precondition failing on one); they become spaces. */
    g_autofree char *line = g_strdup(value);
    for (char *c = line; *c; c++)
        if (*c == '\r' || *c == '\n')
            *c = ' ';
    ssim_profile_set_meta(p, key, line);
}

/*
 * Rows that price nothing a training step runs, left out and counted: nccl-tests' integer and
 * double element types (measured beside the others under `-d all`) and the reductions no step
 * reduces its gradients with (`-o prod|max|min`, or `-o all`; sum is Megatron-LM's and DDP's,
 * avg and the premultiplied sum FSDP's).  A row of any other type is an error, not a skip: the
 * file is then not what it says.
 */
typedef struct {
    guint rows;
    GPtrArray *types, *redops; /* the distinct names skipped, in order of appearance */
} Skipped;

static gboolean skip_row(Skipped *s, const char *type, const char *redop)
{
    static const char *const other_types[] = {"int8",  "uint8",  "int32",  "uint32",
                                              "int64", "uint64", "double", NULL};
    static const char *const other_redops[] = {"prod", "max", "min", NULL};
    GPtrArray *what = NULL;
    const char *name = NULL;
    if (type && g_strv_contains(other_types, type)) {
        what = s->types;
        name = type;
    } else if (redop && g_strv_contains(other_redops, redop)) {
        what = s->redops;
        name = redop;
    }
    if (what == NULL)
        return FALSE;
    s->rows++;
    if (!g_ptr_array_find_with_equal_func(what, name, g_str_equal, NULL))
        g_ptr_array_add(what, g_strdup(name));
    return TRUE;
}

/* "12 rows: types int8, int32; reductions prod, max", or NULL when nothing was skipped. */
static char *skipped_text(const Skipped *s)
{
    if (s->rows == 0)
        return NULL;
    GString *t = g_string_new(NULL);
    g_string_append_printf(t, "%u row%s:", s->rows, s->rows == 1 ? "" : "s");
    GPtrArray *lists[] = {s->types, s->redops};
    const char *names[] = {"type", "reduction"}, *sep = " ";
    for (guint l = 0; l < 2; l++) {
        if (lists[l]->len == 0)
            continue;
        g_string_append_printf(t, "%s%s%s", sep, names[l], lists[l]->len == 1 ? "" : "s");
        for (guint i = 0; i < lists[l]->len; i++)
            g_string_append_printf(t, "%s %s", i ? "," : "", (const char *)lists[l]->pdata[i]);
        sep = "; ";
    }
    return g_string_free(t, FALSE);
}

static void skipped_init(Skipped *s)
{
    s->rows = 0;
    s->types = g_ptr_array_new_with_free_func(g_free);
    s->redops = g_ptr_array_new_with_free_func(g_free);
}

static void skipped_clear(Skipped *s)
{
    g_clear_pointer(&s->types, g_ptr_array_unref);
    g_clear_pointer(&s->redops, g_ptr_array_unref);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Skipped, skipped_clear)

/*
 * Merges one file's profile `p` into `dst`, recording in dst's `skipped_rows` metadata what the
 * file left out (appended to what earlier files left out), or fails when `p` has no row: then
 * the message says whether the file had rows that were all left out.
 */
static gboolean merge_import(SsimProfile *dst, SsimProfile *p, guint n_rows, const Skipped *s,
                             const char *path, const char *where, GError **error)
{
    g_autofree char *skipped = skipped_text(s);
    if (n_rows == 0 && skipped) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%s%s: no row of a collective a training step runs: %s (steps move float, "
                    "half, bfloat16 or fp8 and reduce gradients with sum, avg or a premultiplied "
                    "sum; nccl-tests' default is -d float -o sum)",
                    path, where, skipped);
        return FALSE;
    }
    if (!ssim_profile_merge(dst, p, error))
        return FALSE;
    if (skipped) {
        const char *before = ssim_profile_get_meta(dst, "skipped_rows");
        g_autofree char *base = g_path_get_basename(path);
        g_autofree char *v =
            g_strdup_printf("%s%s%s: %s", before ? before : "", before ? "; " : "", base, skipped);
        ssim_profile_set_meta(dst, "skipped_rows", v);
    }
    return TRUE;
}

/* ---- nccl-tests text --------------------------------------------------------------------- */

typedef struct {
    char *text;
    guint col;
} Tok;

/* Splits `text` at blanks into `toks` (whose clear function frees the texts); columns are
 * 1-based byte offsets from `base`, the start of the line `text` is part of. */
static void tokenize(GArray *toks, const char *text, const char *base)
{
    g_array_set_size(toks, 0);
    for (const char *c = text; *c;) {
        while (*c == ' ' || *c == '\t')
            c++;
        if (*c == '\0')
            break;
        const char *s = c;
        while (*c && *c != ' ' && *c != '\t')
            c++;
        Tok t = {g_strndup(s, (gsize)(c - s)), (guint)(s - base) + 1};
        g_array_append_val(toks, t);
    }
}

/*
 * A "#  Rank  3 Group 0 Pid 41233 on h200-01 device 3 [0000:49:00] NVIDIA H200" line: refuses a
 * rank listed twice, or two ranks on one device (NCCL itself refuses that), which would inflate
 * the rank count the rows are keyed by: two runs concatenated into one file, say.  `seen` maps
 * "rank N" and "device HOST/ADDRESS" to the line that listed them first.  Only a whole PCI
 * address ("[0000:49:00]", domain:bus:device, as recent nccl-tests print it) names one GPU:
 * releases until at least 2024 printed the bus alone ("[0x10]"), which two GPUs share on AWS
 * p4d nodes, and the device number is the process's own (0 on every rank of a launcher that
 * gives each rank one GPU), so neither is checked.
 */
static gboolean check_rank_line(const GArray *toks, GHashTable *seen, const char *path, guint lno,
                                GError **error)
{
    const Tok *t = (const Tok *)(const void *)toks->data;
    const char *rank = toks->len > 1 ? t[1].text : "?", *host = "", *device = NULL;
    for (guint i = 0; i + 1 < toks->len; i++) {
        if (strcmp(t[i].text, "on") == 0)
            host = t[i + 1].text;
        else if (strcmp(t[i].text, "device") == 0 && i + 2 < toks->len && t[i + 2].text[0] == '[' &&
                 strchr(t[i + 2].text, ':'))
            device = t[i + 2].text;
    }
    g_autofree char *rank_key = g_strdup_printf("rank %s", rank);
    g_autofree char *dev_key = device ? g_strdup_printf("device %s/%s", host, device) : NULL;
    guint first = GPOINTER_TO_UINT(g_hash_table_lookup(seen, rank_key));
    if (first) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%s:%u: Rank: rank %s is listed twice (first on line %u): two runs in one "
                    "file? import each run on its own",
                    path, lno, rank, first);
        return FALSE;
    }
    first = dev_key ? GPOINTER_TO_UINT(g_hash_table_lookup(seen, dev_key)) : 0;
    if (first) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%s:%u: device: %s on %s is listed for a second rank (first on line %u); "
                    "NCCL runs one rank per GPU, so the rank count would be wrong",
                    path, lno, device, host[0] ? host : "this host", first);
        return FALSE;
    }
    g_hash_table_insert(seen, g_steal_pointer(&rank_key), GUINT_TO_POINTER(lno));
    if (dev_key)
        g_hash_table_insert(seen, g_steal_pointer(&dev_key), GUINT_TO_POINTER(lno));
    return TRUE;
}

static gboolean all_digits(const char *s)
{
    if (*s == '\0')
        return FALSE;
    for (; *s; s++)
        if (!g_ascii_isdigit(*s))
            return FALSE;
    return TRUE;
}

/*
 * The words of a header line (after its '#' and spaces), or NULL for a row or a log line.  A
 * header is a line starting with '#', or one of nccl-tests' header lines without it, as the
 * output reads when copied from a web page that rendered it outside a code block (the '#'
 * lost): "nThread ..", "Rank .. on ..", "size count type ..", "Collective test starting:",
 * "nccl-tests version".
 */
static const char *header_words(const char *line)
{
    const char *r = line;
    while (*r == ' ' || *r == '\t')
        r++;
    gboolean hash = *r == '#';
    r += hash;
    while (*r == ' ' || *r == '\t')
        r++;
    if (hash)
        return r;
    static const char *const starts[] = {"nThread ",
                                         "Collective test starting:", "nccl-tests version"};
    for (gsize i = 0; i < G_N_ELEMENTS(starts); i++)
        if (g_str_has_prefix(r, starts[i]))
            return r;
    if (g_str_has_prefix(r, "Rank ") && strstr(r, " on "))
        return r;
    if ((g_str_has_prefix(r, "size ") || g_str_has_prefix(r, "size\t")) && strstr(r, "type"))
        return r;
    return NULL;
}

/*
 * The length of the label a launcher puts before each line of a rank's output, or 0: Open MPI's
 * --tag-output ("[1,0]<stdout>:"), MPICH's and Intel MPI's -prepend-rank ("[0] ") and Slurm's
 * srun --label ("0: ", "12: ").  No nccl-tests line starts so, nor NCCL's log lines ("host:pid:tid
 * [0] NCCL INFO ..."), so the label is dropped and the rest read as usual.
 */
static gsize launcher_label(const char *line)
{
    const char *c = line;
    if (*c == '[') {
        const char *d = ++c;
        while (g_ascii_isdigit(*c))
            c++;
        if (c == d)
            return 0;
        if (*c == ']')
            return c[1] == ' ' ? (gsize)(c + 2 - line) : 0;
        if (*c != ',')
            return 0;
        d = ++c;
        while (g_ascii_isdigit(*c))
            c++;
        if (c == d || *c != ']')
            return 0;
        c++;
        static const char *const streams[] = {"<stdout>:", "<stderr>:", "<stddiag>:"};
        for (gsize i = 0; i < G_N_ELEMENTS(streams); i++)
            if (g_str_has_prefix(c, streams[i]))
                return (gsize)(c - line) + strlen(streams[i]);
        return 0;
    }
    while (*c == ' ')
        c++;
    const char *d = c;
    while (g_ascii_isdigit(*c))
        c++;
    return c > d && c[0] == ':' && c[1] == ' ' ? (gsize)(c + 2 - line) : 0;
}

static void tok_clear(gpointer p)
{
    g_free(((Tok *)p)->text);
}

gboolean ssim_nccltests_import_text(SsimProfile *dst, const char *text, gssize length,
                                    const char *path, const char *op, GError **error)
{
    g_return_val_if_fail(dst != NULL && text != NULL, FALSE);
    if (path == NULL)
        path = "<nccl-tests>";
    gsize len = length < 0 ? strlen(text) : (gsize)length;
    g_autoptr(SsimProfile) p = ssim_profile_new();
    g_autoptr(GArray) toks = g_array_new(FALSE, FALSE, sizeof(Tok));
    g_array_set_clear_func(toks, tok_clear);
    g_autoptr(GHashTable) hosts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    SsimProfileComm cur = SSIM_PCOMM_ALLREDUCE;
    gboolean have_op = FALSE;
    if (op) {
        if (!ssim_profile_comm_from_name(op, &cur)) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s: op: unknown collective '%s'", path, op);
            return FALSE;
        }
        have_op = TRUE;
    }
    guint nthreads = 0, ngpus = 0, rank_lines = 0, rpn = 0, nics = 0;
    int i_size = -1, i_type = -1, i_redop = -1, i_time[2] = {-1, -1}, i_wrong[2] = {-1, -1};
    int n_head = 0;
    g_auto(Skipped) skipped = {0};
    skipped_init(&skipped);
    g_autoptr(GHashTable) ranks_seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    guint n_rows = 0;
    g_autofree char *copy = g_strndup(text, len);
    char **lines = g_strsplit(copy, "\n", -1);
    gboolean ok = TRUE;
    for (guint ln = 0; ok && lines[ln]; ln++) {
        char *raw = lines[ln];
        g_strchomp(raw); /* drops a trailing '\r' too */
        char *line = raw + launcher_label(raw);
        guint lno = ln + 1;
        if (!ssim_text_check_line(path, lno, strlen(raw), error)) {
            ok = FALSE;
            break;
        }
        const char *rest = header_words(line);
        if (rest) {
            unsigned a, b;
            if (sscanf(rest, "nThread %u nGpus %u", &a, &b) == 2) {
                nthreads = a;
                ngpus = b;
            } else if (g_str_has_prefix(rest, "Rank ")) {
                tokenize(toks, rest, rest);
                rank_lines++;
                if (!check_rank_line(toks, ranks_seen, path, lno, error)) {
                    ok = FALSE;
                    continue;
                }
                for (guint i = 0; i + 1 < toks->len; i++)
                    if (strcmp(g_array_index(toks, Tok, i).text, "on") == 0) {
                        const char *host = g_array_index(toks, Tok, i + 1).text;
                        guint n = GPOINTER_TO_UINT(g_hash_table_lookup(hosts, host)) + 1;
                        g_hash_table_replace(hosts, g_strdup(host), GUINT_TO_POINTER(n));
                        rpn = MAX(rpn, n);
                        break;
                    }
                const char *br = strstr(rest, "] ");
                if (br) {
                    g_autofree char *gpu = g_strstrip(g_strdup(br + 2));
                    const char *first = ssim_profile_get_meta(p, "gpu");
                    if (first && strcmp(first, gpu) != 0) {
                        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                                    "%s:%u: gpu: '%s' differs from '%s' of the ranks before it: "
                                    "one profile describes one GPU",
                                    path, lno, gpu, first);
                        ok = FALSE;
                        continue;
                    }
                    ssim_nccltests_set_meta_default(p, "gpu", gpu);
                }
            } else if (g_str_has_prefix(rest, "Collective test starting:")) {
                /* A script's log of several runs (all_reduce_perf, then all_gather_perf, ...):
                 * each run that names itself so is read on its own, with its own ranks. */
                if (nthreads > 0 || rank_lines > 0 || i_size >= 0) {
                    nthreads = ngpus = rank_lines = rpn = 0;
                    g_hash_table_remove_all(hosts);
                    g_hash_table_remove_all(ranks_seen);
                    i_size = i_type = i_redop = -1;
                    i_time[0] = i_time[1] = i_wrong[0] = i_wrong[1] = -1;
                    n_head = 0;
                    have_op = op != NULL;
                }
                if (!op) {
                    g_autofree char *prog =
                        g_strstrip(g_strdup(rest + strlen("Collective test starting:")));
                    have_op = ssim_nccltests_op_from_name(prog, &cur);
                    if (!have_op) {
                        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                                    "%s:%u:%u: op: '%s' is not a collective shiftsim knows "
                                    "(allreduce, allgather, reducescatter, alltoall, broadcast, "
                                    "reduce, sendrecv)",
                                    path, lno, (guint)(strstr(line, prog) - raw) + 1, prog);
                        ok = FALSE;
                    }
                }
            } else if (g_str_has_prefix(rest, "nccl-tests version")) {
                const char *lib = strstr(rest, "nccl-library=");
                if (lib) {
                    g_autofree char *v = nccl_version_string(atol(lib + 13));
                    ssim_nccltests_set_meta_default(p, "nccl", v);
                }
            } else if (g_str_has_prefix(rest, "size ") || g_str_has_prefix(rest, "size\t")) {
                tokenize(toks, rest, rest);
                n_head = (int)toks->len;
                i_size = 0;
                i_type = i_redop = -1;
                i_time[0] = i_time[1] = -1;
                i_wrong[0] = i_wrong[1] = -1;
                for (guint i = 0; i < toks->len; i++) {
                    const char *t = g_array_index(toks, Tok, i).text;
                    if (strcmp(t, "#wrong") == 0 && i_wrong[1] < 0)
                        i_wrong[i_wrong[0] < 0 ? 0 : 1] = (int)i;
                    if (strcmp(t, "redop") == 0)
                        i_redop = (int)i;
                    if (strcmp(t, "type") == 0)
                        i_type = (int)i;
                    else if ((strcmp(t, "time") == 0 || strcmp(t, "cputime") == 0) && i_time[1] < 0)
                        i_time[i_time[0] < 0 ? 0 : 1] = (int)i;
                }
                if (i_type < 0 || i_time[0] < 0) {
                    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                                "%s:%u:1: header: a nccl-tests table header names 'type' and "
                                "'time' columns",
                                path, lno);
                    ok = FALSE;
                }
            }
            continue;
        }
        /* NCCL_DEBUG=INFO: "host:pid:tid [dev] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB
         * [1]mlx5_3:1/IB ... ; OOB ..." lists the NICs of the rank's node; AWS's EFA plugin
         * says "NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)". */
        const char *using = strstr(line, "NCCL INFO NET/IB : Using ");
        const char *ofi = strstr(line, "NCCL INFO NET/OFI ");
        const char *found = ofi ? strstr(ofi, "(found ") : NULL;
        if (using || found) {
            guint count = 0;
            for (const char *c = using; c && *c && *c != ';'; c++)
                count += c[0] == '[' && g_ascii_isdigit(c[1]);
            if (found && (sscanf(found, "(found %u nics)", &count) != 1 || count > 4096))
                count = 0;
            if (count > nics) {
                nics = count;
                g_autofree char *v = g_strdup_printf("%u", nics);
                ssim_profile_set_meta(p, "nics_per_node", v);
            }
            continue;
        }
        /* "NCCL version 2.8.3+cuda10.0", or as a log line of newer NCCLs, "host:pid:tid [0]
         * NCCL INFO NCCL version 2.18.5+cuda12.2". */
        const char *version = g_str_has_prefix(line, "NCCL version ")
                                  ? line
                                  : strstr(line, "NCCL INFO NCCL version ");
        if (version) {
            if (version != line)
                version += strlen("NCCL INFO ");
            g_autofree char *v = g_strdup(version + 13);
            char *plus = strchr(v, '+');
            if (plus)
                *plus = '\0';
            ssim_nccltests_set_meta_default(p, "nccl", g_strstrip(v));
            continue;
        }
        tokenize(toks, line, raw);
        if (toks->len > 0 && i_size >= 0) {
            const char *t0 = g_array_index(toks, Tok, 0).text;
            if (t0[0] == '-' && g_ascii_isdigit(t0[1])) {
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                            "%s:%u:%u: size: '%s' is not a byte count", path, lno,
                            g_array_index(toks, Tok, 0).col, t0);
                ok = FALSE;
                break;
            }
        }
        /* A line with the table's shape (as many fields as the header, or as a trace-replay
         * row, and a NCCL type where the type goes) is a row even when its size is not a
         * number: an edited or corrupted row, not a log line to skip. */
        if (i_size >= 0 && i_type >= 0 && toks->len > (guint)i_type &&
            !all_digits(g_array_index(toks, Tok, 0).text) &&
            ((int)toks->len == n_head || (i_time[1] >= 0 && (int)toks->len == n_head - 4))) {
            SsimDtype ignored;
            if (ssim_nccltests_dtype_from_name(g_array_index(toks, Tok, i_type).text, &ignored)) {
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                            "%s:%u:%u: size: '%s' is not a byte count", path, lno,
                            g_array_index(toks, Tok, 0).col, g_array_index(toks, Tok, 0).text);
                ok = FALSE;
                break;
            }
        }
        if (toks->len == 0 || !all_digits(g_array_index(toks, Tok, 0).text) || i_size < 0)
            continue; /* NCCL INFO lines, warnings, blank lines */
        Tok *t = (Tok *)(void *)toks->data;
        int ntok = (int)toks->len;
        /* Trace replay prints no out-of-place block: only one time then.  Any other row shorter
         * than the header was cut off (a run killed mid-line) and its last number may be too. */
        gboolean one = i_time[1] >= 0 && ntok == n_head - 4;
        int need = one ? i_time[0] + 1 : n_head;
        if (ntok < need) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                        "%s:%u:%u: time: missing: the row has %d fields, the table header %d", path,
                        lno, (guint)strlen(raw) + 1, ntok, n_head);
            ok = FALSE;
            break;
        }
        if (!have_op) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MISSING,
                        "%s:%u:1: op: which collective this is cannot be told (no '# Collective "
                        "test starting:' line, no collective in the file name): name it (`profile "
                        "import --op allreduce`, or a file name with the test's in it, such as "
                        "all_reduce_perf.log)",
                        path, lno);
            ok = FALSE;
            break;
        }
        guint ranks = rank_lines ? rank_lines : nthreads * ngpus;
        if (ranks == 0) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MISSING,
                        "%s:%u:1: ranks: no '# nThread .. nGpus ..' or '#  Rank' line before the "
                        "table",
                        path, lno);
            ok = FALSE;
            break;
        }
        guint64 bytes;
        if (!g_ascii_string_to_unsigned(t[i_size].text, 10, 0, G_MAXUINT64, &bytes, NULL)) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                        "%s:%u:%u: size: '%s' is not a byte count", path, lno, t[i_size].col,
                        t[i_size].text);
            ok = FALSE;
            break;
        }
        if (skip_row(&skipped, i_type < ntok ? t[i_type].text : NULL,
                     i_redop >= 0 && i_redop < ntok ? t[i_redop].text : NULL))
            continue;
        SsimDtype dtype;
        if (i_type >= ntok || !ssim_nccltests_dtype_from_name(t[i_type].text, &dtype)) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s:%u:%u: type: '%s' has no shiftsim dtype (float, half, bfloat16, "
                        "f8e4m3, f8e5m2)",
                        path, lno, t[MIN(i_type, ntok - 1)].col, t[MIN(i_type, ntok - 1)].text);
            ok = FALSE;
            break;
        }
        double times[2];
        guint n = 0;
        int idx[2] = {i_time[0], one ? -1 : i_time[1]};
        for (int s = 0; s < 2; s++) {
            if (idx[s] < 0)
                continue;
            const Tok *tt = &t[idx[s]];
            char *end;
            double v = g_ascii_strtod(tt->text, &end);
            if (*end != '\0' || !isfinite(v) || v <= 0) {
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE,
                            "%s:%u:%u: time: '%s' is not a positive time in microseconds", path,
                            lno, tt->col, tt->text);
                ok = FALSE;
                break;
            }
            times[n++] = v;
        }
        if (!ok)
            break;
        /* nccl-tests' own check of the results (-c 1): a row whose results were wrong timed a
         * broken collective, not a measurement ("N/A" when the check was off). */
        for (int s = 0; s < 2 && ok; s++) {
            int w = i_wrong[s];
            if (w < 0 || w >= ntok || strcmp(t[w].text, "0") == 0 || strcmp(t[w].text, "N/A") == 0)
                continue;
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s:%u:%u: #wrong: %s wrong results in the %s run: nccl-tests' check "
                        "failed, so its time is no measurement; fix the run and measure again",
                        path, lno, t[w].col, t[w].text, s == 0 ? "out-of-place" : "in-place");
            ok = FALSE;
        }
        if (!ok)
            break;
        if (bytes == 0)
            continue;
        g_autoptr(GError) err = NULL;
        if (!add_size_row(p, cur, dtype, bytes, ranks, rpn ? rpn : ranks, nics, times, n, &err)) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, "%s:%u:1: %s", path, lno,
                        err->message);
            ok = FALSE;
            break;
        }
        n_rows++;
    }
    g_strfreev(lines);
    if (ok && n_rows == 0 && skipped.rows == 0) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MISSING,
                    "%s:1:1: table: no nccl-tests result rows (expected the '#  size count type "
                    "redop root time algbw busbw ...' table)",
                    path);
        ok = FALSE;
    }
    if (!ok)
        return FALSE;
    ssim_nccltests_set_meta_default(p, "tool", "nccl-tests (imported by shiftsim profile import)");
    return merge_import(dst, p, n_rows, &skipped, path, ":1:1: table", error);
}

/* ---- nccl-tests JSON --------------------------------------------------------------------- */

static JsonNode *member(JsonObject *o, const char *key)
{
    return o && json_object_has_member(o, key) ? json_object_get_member(o, key) : NULL;
}

static JsonObject *member_object(JsonObject *o, const char *key)
{
    JsonNode *n = member(o, key);
    return n && JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
}

static gboolean node_number(JsonNode *n, double *out)
{
    if (n == NULL || !JSON_NODE_HOLDS_VALUE(n))
        return FALSE;
    GType t = json_node_get_value_type(n);
    if (t == G_TYPE_INT64 || t == G_TYPE_DOUBLE) {
        *out = json_node_get_double(n);
        return TRUE;
    }
    return FALSE;
}

gboolean ssim_nccltests_import_json(SsimProfile *dst, const char *text, gssize length,
                                    const char *path, const char *op, GError **error)
{
    g_return_val_if_fail(dst != NULL && text != NULL, FALSE);
    if (path == NULL)
        path = "<nccl-tests json>";
    if (!ssim_json_check_bounds(text, length, SSIM_JSON_MAX_NCCLTESTS_BYTES, path, error))
        return FALSE;
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) err = NULL;
    if (!json_parser_load_from_data(parser, text, length, &err)) {
        /* json-glib's message is "<data>:line:column: Parse error: ...". */
        const char *m = err->message;
        if (g_str_has_prefix(m, "<data>:"))
            m += strlen("<data>:");
        const char *colon = strstr(m, ": ");
        if (colon && g_ascii_isdigit(m[0]))
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE, "%s:%.*s: json: %s",
                        path, (int)(colon - m), m, colon + 2);
        else
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_PARSE, "%s: json: %s", path, m);
        return FALSE;
    }
#define JFAIL(code, ...)                                                                           \
    do {                                                                                           \
        g_autofree char *m_ = g_strdup_printf(__VA_ARGS__);                                        \
        g_set_error(error, SSIM_CONFIG_ERROR, code, "%s: %s", path, m_);                           \
        return FALSE;                                                                              \
    } while (0)
    JsonNode *root = json_parser_get_root(parser);
    JsonObject *top = root && JSON_NODE_HOLDS_OBJECT(root) ? json_node_get_object(root) : NULL;
    if (top == NULL)
        JFAIL(SSIM_CONFIG_ERROR_PARSE, "$: not a JSON object (expected nccl-tests' -J output)");
    double version = 0;
    if (!node_number(member(top, "version"), &version))
        JFAIL(SSIM_CONFIG_ERROR_VERSION, "$.version: missing (expected nccl-tests' -J output, "
                                         "version 2)");
    if (version != 2)
        JFAIL(SSIM_CONFIG_ERROR_VERSION,
              "$.version: %g is not supported (this shiftsim reads "
              "nccl-tests JSON version 2)",
              version);
    SsimProfileComm cur = SSIM_PCOMM_ALLREDUCE;
    gboolean have_op = FALSE;
    if (op) {
        if (!ssim_profile_comm_from_name(op, &cur))
            JFAIL(SSIM_CONFIG_ERROR_VALUE, "op: unknown collective '%s'", op);
        have_op = TRUE;
    } else {
        JsonNode *args = member(top, "args");
        if (args && JSON_NODE_HOLDS_ARRAY(args) &&
            json_array_get_length(json_node_get_array(args)) > 0) {
            const char *prog = json_array_get_string_element(json_node_get_array(args), 0);
            have_op = prog && ssim_nccltests_op_from_name(prog, &cur);
        }
        if (!have_op)
            have_op = ssim_nccltests_op_from_name(path, &cur);
        if (!have_op)
            JFAIL(SSIM_CONFIG_ERROR_MISSING, "$.args[0]: which collective this is cannot be "
                                             "told from the program name: name it");
    }
    g_autoptr(SsimProfile) p = ssim_profile_new();
    JsonObject *config = member_object(top, "config");
    guint ranks = 0, rpn = 0;
    JsonNode *devn = member(config, "devices");
    if (devn && JSON_NODE_HOLDS_ARRAY(devn)) {
        JsonArray *devs = json_node_get_array(devn);
        g_autoptr(GHashTable) hosts = g_hash_table_new(g_str_hash, g_str_equal);
        /* A rank or a (host, device) listed twice would inflate the rank count. */
        g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        ranks = json_array_get_length(devs);
        for (guint i = 0; i < ranks; i++) {
            JsonObject *d = json_array_get_object_element(devs, i);
            JsonNode *h = member(d, "hostname"), *info = member(d, "device_info");
            const char *host = h && JSON_NODE_HOLDS_VALUE(h) ? json_node_get_string(h) : NULL;
            double rank_no;
            /* A GPU is its whole PCI address (check_rank_line() says why not its number). */
            JsonNode *hex = member(d, "device_hex");
            const char *bus = hex && JSON_NODE_HOLDS_VALUE(hex) ? json_node_get_string(hex) : NULL;
            g_autofree char *rank_key = node_number(member(d, "rank"), &rank_no)
                                            ? g_strdup_printf("rank %.17g", rank_no)
                                            : NULL;
            g_autofree char *dev_key = bus && strchr(bus, ':')
                                           ? g_strdup_printf("device %s/%s", host ? host : "", bus)
                                           : NULL;
            const char *keys[] = {rank_key, dev_key};
            for (guint k = 0; k < 2; k++) {
                if (keys[k] == NULL)
                    continue;
                gpointer first = g_hash_table_lookup(seen, keys[k]);
                if (first)
                    JFAIL(SSIM_CONFIG_ERROR_VALUE,
                          "$.config.devices[%u]: %s is listed twice (first at [%u]): the rank "
                          "count would be wrong; import each run on its own",
                          i, keys[k], GPOINTER_TO_UINT(first) - 1);
                g_hash_table_insert(seen, g_strdup(keys[k]), GUINT_TO_POINTER(i + 1));
            }
            if (host) {
                guint n = GPOINTER_TO_UINT(g_hash_table_lookup(hosts, host)) + 1;
                g_hash_table_replace(hosts, (gpointer)host, GUINT_TO_POINTER(n));
                rpn = MAX(rpn, n);
            }
            if (info && JSON_NODE_HOLDS_VALUE(info) && json_node_get_string(info))
                ssim_nccltests_set_meta_default(p, "gpu", json_node_get_string(info));
        }
    }
    if (ranks == 0) {
        double t = 0, g = 0;
        /* Bounded before the conversion (the fuzzer found an nthreads past 2^63). */
        if (node_number(member(config, "nthreads"), &t) &&
            node_number(member(config, "ngpus"), &g) && t >= 1 && g >= 1 && t * g <= SSIM_MAX_GPUS)
            ranks = (guint)(t * g);
    }
    if (ranks == 0)
        JFAIL(SSIM_CONFIG_ERROR_MISSING, "$.config.devices: missing: the rank count is unknown");
    double nv;
    /* NCCL codes its version as major * 10000 + minor * 100 + patch; anything else (the fuzzer
     * found an infinite one, which no conversion to long survives) is left out of the metadata. */
    if (node_number(member(top, "nccl_version"), &nv) && nv >= 0 && nv < 1e9) {
        g_autofree char *v = nccl_version_string((long)nv);
        ssim_nccltests_set_meta_default(p, "nccl", v);
    }
    JsonNode *resn = member(top, "results");
    if (resn == NULL || !JSON_NODE_HOLDS_ARRAY(resn))
        JFAIL(SSIM_CONFIG_ERROR_MISSING, "$.results: missing or not a list");
    JsonArray *res = json_node_get_array(resn);
    guint n_rows = 0;
    g_auto(Skipped) skipped = {0};
    skipped_init(&skipped);
    for (guint i = 0; i < json_array_get_length(res); i++) {
        JsonObject *r = json_array_get_object_element(res, i);
        double size;
        /* 2^63 bounds a byte count and keeps the conversion to guint64 defined. */
        if (!node_number(member(r, "size"), &size) || size < 0 || size != floor(size) ||
            size >= 9.2e18)
            JFAIL(SSIM_CONFIG_ERROR_VALUE, "$.results[%u].size: missing or not a byte count", i);
        JsonNode *tn = member(r, "type");
        const char *type = tn && JSON_NODE_HOLDS_VALUE(tn) ? json_node_get_string(tn) : NULL;
        JsonNode *on = member(r, "redop");
        if (skip_row(&skipped, type,
                     on && JSON_NODE_HOLDS_VALUE(on) ? json_node_get_string(on) : NULL))
            continue;
        SsimDtype dtype;
        if (type == NULL || !ssim_nccltests_dtype_from_name(type, &dtype))
            JFAIL(SSIM_CONFIG_ERROR_VALUE, "$.results[%u].type: '%s' has no shiftsim dtype", i,
                  type ? type : "(missing)");
        double times[2];
        guint n = 0;
        const char *blocks[] = {"out_of_place", "in_place"};
        for (int b = 0; b < 2; b++) {
            JsonObject *o = member_object(r, blocks[b]);
            double t;
            if (o == NULL)
                continue; /* null: not measured */
            JsonNode *timen = member(o, "time") ? member(o, "time") : member(o, "cpu_time");
            if (!node_number(timen, &t) || !(t > 0) || !isfinite(t))
                JFAIL(SSIM_CONFIG_ERROR_VALUE,
                      "$.results[%u].%s.time: missing or not a "
                      "positive time in microseconds",
                      i, blocks[b]);
            double wrong;
            if (node_number(member(o, "nwrong"), &wrong) && wrong != 0)
                JFAIL(SSIM_CONFIG_ERROR_VALUE,
                      "$.results[%u].%s.nwrong: %.17g wrong results: nccl-tests' check failed, "
                      "so its time is no measurement; fix the run and measure again",
                      i, blocks[b], wrong);
            times[n++] = t;
        }
        if (n == 0)
            JFAIL(SSIM_CONFIG_ERROR_MISSING,
                  "$.results[%u]: neither out_of_place nor in_place "
                  "has a time",
                  i);
        if (size == 0)
            continue;
        if (!add_size_row(p, cur, dtype, (guint64)size, ranks, rpn ? rpn : ranks, 0, times, n,
                          &err))
            JFAIL(SSIM_CONFIG_ERROR_VALUE, "$.results[%u]: %s", i, err->message);
        n_rows++;
    }
    if (n_rows == 0 && skipped.rows == 0)
        JFAIL(SSIM_CONFIG_ERROR_MISSING, "$.results: no result with a size above 0");
#undef JFAIL
    ssim_nccltests_set_meta_default(p, "tool",
                                    "nccl-tests -J (imported by shiftsim profile import)");
    return merge_import(dst, p, n_rows, &skipped, path, ": $.results", error);
}
