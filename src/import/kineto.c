/*
 * Kineto (PyTorch profiler) Chrome-trace import (what is read: include/shiftsim/kineto.h).
 *
 * Two passes over traceEvents: the first indexes CPU ops by their "External id" (the id the
 * profiler also stamps on the runtime calls and GPU kernels an op launches) and collects the
 * ProfilerStep ranges; the second keys each GPU kernel and memcpy by the profile row it belongs
 * to and collects its durations.  Rows are then emitted in order of first appearance, so the
 * same trace always gives the same profile.  Kernels launched outside any recorded shape (an
 * elementwise kernel has no byte count in a trace) cannot be keyed and are only counted.
 *
 * Assumptions a reader should know: a collective's ranks are its "Group size"; they share a node
 * unless the trace shows several (trace_gpus_per_node) and names the group's ranks, whose nodes
 * then hold consecutive ranks, as torchrun numbers them; durations are the trace's
 * microseconds.
 */
#include <shiftsim/kineto.h>

#include "src/core/jsonbound.h"
#include <shiftsim/data.h>

#include <json-glib/json-glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    SsimProfileRow row; /* op and algo point into `op` below */
    char *op;
    GArray *times; /* double, us */
} Bucket;

static void bucket_free(gpointer p)
{
    Bucket *b = p;
    g_free(b->op);
    g_array_free(b->times, TRUE);
    g_free(b);
}

static gint64 member_int(JsonObject *o, const char *name, gint64 dflt)
{
    JsonNode *n = o ? json_object_get_member(o, name) : NULL;
    if (n == NULL || !JSON_NODE_HOLDS_VALUE(n))
        return dflt;
    GType t = json_node_get_value_type(n);
    if (t == G_TYPE_INT64)
        return json_node_get_int(n);
    if (t == G_TYPE_DOUBLE) {
        /* Converting a double past 2^63 (or NaN) to an integer is undefined (the fuzzer found a
         * 1e24): such a value is no integer this importer can use. */
        double v = json_node_get_double(n);
        return v > -9.2e18 && v < 9.2e18 ? (gint64)v : dflt;
    }
    if (t == G_TYPE_STRING) {
        const char *s = json_node_get_string(n);
        char *end = NULL;
        gint64 v = g_ascii_strtoll(s, &end, 10);
        return end != s ? v : dflt;
    }
    return dflt;
}

static double member_double(JsonObject *o, const char *name, double dflt)
{
    JsonNode *n = o ? json_object_get_member(o, name) : NULL;
    if (n == NULL || !JSON_NODE_HOLDS_VALUE(n))
        return dflt;
    GType t = json_node_get_value_type(n);
    if (t == G_TYPE_INT64)
        return (double)json_node_get_int(n);
    if (t == G_TYPE_DOUBLE)
        return json_node_get_double(n);
    return dflt;
}

/* The "dur" of event `i`, which the importer uses (a profiler step, a kernel, a copy): a number
 * of microseconds in [0, 1e12) (11.6 days), or an error naming the event.  A broken duration is
 * refused rather than skipped, so a step is never left out of the mean without a word. */
static gboolean event_dur(JsonObject *ev, guint i, const char *path, double *out, GError **error)
{
    JsonNode *n = json_object_get_member(ev, "dur");
    double v = n && JSON_NODE_HOLDS_VALUE(n) ? member_double(ev, "dur", NAN) : NAN;
    if (!(v >= 0 && v < 1e12)) {
        g_autofree char *text = n ? json_to_string(n, FALSE) : g_strdup("missing");
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%s: traceEvents[%u].dur: %s is not a duration in microseconds (a number in "
                    "[0, 1e12))",
                    path, i, text);
        return FALSE;
    }
    *out = v;
    return TRUE;
}

/* The "ts" of event `i` (a kernel, a copy, a host call): a GPU event or a launch without a
 * usable start is malformed: reported, never dropped. */
static gboolean event_ts(JsonObject *ev, guint i, const char *path, double *out, GError **error)
{
    double ts = member_double(ev, "ts", NAN);
    if (!(isfinite(ts) && fabs(ts) < 1e18)) {
        JsonNode *tn = json_object_get_member(ev, "ts");
        g_autofree char *text = tn ? json_to_string(tn, FALSE) : g_strdup("missing");
        g_autofree char *shown = ssim_text_excerpt(text, 64);
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "%s: traceEvents[%u].ts: %s is not a timestamp in microseconds", path, i,
                    shown);
        return FALSE;
    }
    *out = ts;
    return TRUE;
}

static const char *member_string(JsonObject *o, const char *name)
{
    JsonNode *n = o ? json_object_get_member(o, name) : NULL;
    if (n == NULL || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING)
        return NULL;
    return json_node_get_string(n);
}

/*
 * An event's category in today's names.  The first Kineto releases (PyTorch 1.8 to 1.10) wrote
 * "Operator", "Runtime", "Kernel" and "Memcpy" where later ones write "cpu_op", "cuda_runtime",
 * "kernel" and "gpu_memcpy" (TensorBoard's profiler plugin reads both); an older trace reads as
 * a newer one.
 */
static const char *event_cat(JsonObject *ev)
{
    static const char *const old_new[][2] = {{"Operator", "cpu_op"},
                                             {"Runtime", "cuda_runtime"},
                                             {"Kernel", "kernel"},
                                             {"Memcpy", "gpu_memcpy"}};
    const char *cat = member_string(ev, "cat");
    for (gsize i = 0; cat && i < G_N_ELEMENTS(old_new); i++)
        if (strcmp(cat, old_new[i][0]) == 0)
            return old_new[i][1];
    return cat;
}

static JsonObject *args_of(JsonObject *ev)
{
    JsonNode *n = json_object_get_member(ev, "args");
    return n && JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
}

/* Element size of a torch dtype name ("c10::BFloat16", "BFloat16", "float", "Half", ...). */
static guint elem_size(const char *t, int *dtype)
{
    *dtype = SSIM_PROFILE_NO_DTYPE;
    if (t == NULL)
        return 0;
    g_autofree char *l = g_ascii_strdown(t, -1);
    if (strstr(l, "bfloat16") || strstr(l, "bf16")) {
        *dtype = SSIM_DTYPE_BF16;
        return 2;
    }
    if (strstr(l, "half") || strstr(l, "float16") || strstr(l, "fp16")) {
        *dtype = SSIM_DTYPE_FP16;
        return 2;
    }
    if (strstr(l, "double") || strstr(l, "long") || strstr(l, "int64"))
        return 8;
    if (strstr(l, "float") || strstr(l, "fp32")) {
        *dtype = SSIM_DTYPE_FP32;
        return 4;
    }
    if (strstr(l, "int"))
        return 4;
    if (strstr(l, "byte") || strstr(l, "char") || strstr(l, "bool"))
        return 1;
    return 0;
}

/* The dims of input `i` of a CPU op's "Input Dims" (NULL when absent). */
static JsonArray *input_dims(JsonObject *args, guint i)
{
    JsonNode *n = args ? json_object_get_member(args, "Input Dims") : NULL;
    if (n == NULL || !JSON_NODE_HOLDS_ARRAY(n))
        return NULL;
    JsonArray *a = json_node_get_array(n);
    if (i >= json_array_get_length(a))
        return NULL;
    JsonNode *d = json_array_get_element(a, i);
    return JSON_NODE_HOLDS_ARRAY(d) ? json_node_get_array(d) : NULL;
}

/* Dimension i of a shape (negative i counts from the end): a whole number in [0, 2^31), or -1
 * for anything else (missing, text, a fraction, past 2^31: no real tensor, and products of such
 * dimensions would overflow). */
static gint64 dim_at(JsonArray *d, gint i)
{
    guint len = json_array_get_length(d);
    if (i < 0)
        i += (gint)len;
    if (i < 0 || (guint)i >= len)
        return -1;
    JsonNode *n = json_array_get_element(d, (guint)i);
    if (n == NULL || !JSON_NODE_HOLDS_VALUE(n))
        return -1;
    GType t = json_node_get_value_type(n);
    double v = t == G_TYPE_INT64    ? (double)json_node_get_int(n)
               : t == G_TYPE_DOUBLE ? json_node_get_double(n)
                                    : -1;
    return v >= 0 && v < 2147483648.0 && v == floor(v) ? (gint64)v : -1;
}

/* a * b for dimensions (each below 2^31), or -1 past 2^62 or when either is not a dimension. */
static gint64 dim_mul(gint64 a, gint64 b)
{
    if (a < 0 || b < 0 || (b != 0 && a > (G_GINT64_CONSTANT(1) << 62) / b))
        return -1;
    return a * b;
}

/* The dtype of input `i` of a CPU op ("Input type"), bf16 when it is not recorded. */
static int input_dtype(JsonObject *args, guint i)
{
    JsonNode *types = args ? json_object_get_member(args, "Input type") : NULL;
    if (types == NULL || !JSON_NODE_HOLDS_ARRAY(types) ||
        json_array_get_length(json_node_get_array(types)) <= i)
        return SSIM_DTYPE_BF16;
    JsonNode *t = json_array_get_element(json_node_get_array(types), i);
    if (!JSON_NODE_HOLDS_VALUE(t) || json_node_get_value_type(t) != G_TYPE_STRING)
        return SSIM_DTYPE_BF16;
    int d;
    elem_size(json_node_get_string(t), &d);
    return d != SSIM_PROFILE_NO_DTYPE ? d : SSIM_DTYPE_BF16;
}

/* Fills m, n, k, batch and dtype of a GEMM from its CPU op; FALSE when it is no GEMM. */
static gboolean gemm_shape(JsonObject *cpu, SsimProfileRow *row, const char **label)
{
    const char *name = member_string(cpu, "name");
    if (name == NULL)
        return FALSE;
    guint ia, ib;
    if (strcmp(name, "aten::mm") == 0 || strcmp(name, "aten::bmm") == 0 ||
        strcmp(name, "aten::matmul") == 0)
        ia = 0, ib = 1;
    else if (strcmp(name, "aten::addmm") == 0 || strcmp(name, "aten::baddbmm") == 0)
        ia = 1, ib = 2;
    else
        return FALSE;
    JsonObject *args = args_of(cpu);
    JsonArray *A = input_dims(args, ia), *B = input_dims(args, ib);
    if (A == NULL || B == NULL || json_array_get_length(A) < 2 || json_array_get_length(B) < 2)
        return FALSE;
    guint la = json_array_get_length(A), lb = json_array_get_length(B);
    gint64 k = dim_at(A, -1), n = dim_at(B, -1), m = dim_at(A, -2), batch = 1;
    if (lb == 2) {
        for (guint i = 0; i + 2 < la; i++)
            m = dim_mul(m, dim_at(A, (gint)i)); /* [.., s, k] x [k, n]: one GEMM of all rows */
    } else {
        for (guint i = 0; i + 2 < la; i++)
            batch = dim_mul(batch, dim_at(A, (gint)i));
    }
    if (m <= 0 || n <= 0 || k <= 0 || batch <= 0)
        return FALSE;
    row->m = (guint64)m;
    row->n = (guint64)n;
    row->k = (guint64)k;
    row->batch = (guint64)batch;
    row->dtype = input_dtype(args, ia);
    *label = name + strlen("aten::");
    return TRUE;
}

/* Fills seq, heads, head dim, batch and dtype of a fused attention kernel from its CPU op, and
 * its pass ("flash-fwd" or "flash-bwd"); FALSE when the op is no fused attention.  The SDPA-level
 * ops and cuDNN's take the query as [batch, heads, seq, head dim]; flash-attn's and the
 * memory-efficient kernel's as [batch, seq, heads, head dim]. */
static gboolean attention_shape(JsonObject *cpu, SsimProfileRow *row, const char **label)
{
    static const struct {
        const char *name;
        gboolean backward, heads_first;
    } ops[] = {{"aten::_scaled_dot_product_flash_attention", FALSE, TRUE},
               {"aten::_scaled_dot_product_flash_attention_backward", TRUE, TRUE},
               {"aten::_scaled_dot_product_cudnn_attention", FALSE, TRUE},
               {"aten::_scaled_dot_product_cudnn_attention_backward", TRUE, TRUE},
               {"aten::_scaled_dot_product_efficient_attention", FALSE, TRUE},
               {"aten::_scaled_dot_product_efficient_attention_backward", TRUE, TRUE},
               {"aten::_cudnn_attention_forward", FALSE, TRUE},
               {"aten::_cudnn_attention_backward", TRUE, TRUE},
               {"aten::_flash_attention_forward", FALSE, FALSE},
               {"aten::_flash_attention_backward", TRUE, FALSE},
               {"aten::_efficient_attention_forward", FALSE, FALSE},
               {"aten::_efficient_attention_backward", TRUE, FALSE}};
    const char *name = member_string(cpu, "name");
    guint which = 0;
    while (name != NULL && which < G_N_ELEMENTS(ops) && strcmp(name, ops[which].name) != 0)
        which++;
    if (name == NULL || which == G_N_ELEMENTS(ops))
        return FALSE;
    gboolean backward = ops[which].backward;
    JsonObject *args = args_of(cpu);
    JsonArray *q = input_dims(args, 0);
    if (q == NULL || json_array_get_length(q) != 4)
        return FALSE;
    gint64 b = dim_at(q, 0), h = dim_at(q, ops[which].heads_first ? 1 : 2),
           s = dim_at(q, ops[which].heads_first ? 2 : 1), d = dim_at(q, 3);
    if (b <= 0 || h <= 0 || s <= 0 || d <= 0)
        return FALSE;
    row->m = (guint64)s;
    row->n = (guint64)h;
    row->k = (guint64)d;
    row->batch = (guint64)b;
    row->dtype = input_dtype(args, 0);
    *label = backward ? "flash-bwd" : "flash-fwd";
    return TRUE;
}

static gboolean comm_op_of(const char *kernel, const char *coll, SsimProfileComm *op)
{
    g_autofree char *l = g_ascii_strdown(kernel, -1);
    g_autofree char *c = coll ? g_ascii_strdown(coll, -1) : g_strdup("");
    static const struct {
        const char *pat;
        SsimProfileComm op;
    } pats[] = {{"allreduce", SSIM_PCOMM_ALLREDUCE},
                {"all_reduce", SSIM_PCOMM_ALLREDUCE},
                {"allgather", SSIM_PCOMM_ALLGATHER},
                {"all_gather", SSIM_PCOMM_ALLGATHER},
                {"reducescatter", SSIM_PCOMM_REDUCESCATTER},
                {"reduce_scatter", SSIM_PCOMM_REDUCESCATTER},
                {"alltoall", SSIM_PCOMM_ALLTOALL},
                {"all_to_all", SSIM_PCOMM_ALLTOALL},
                {"broadcast", SSIM_PCOMM_BROADCAST},
                {"sendrecv", SSIM_PCOMM_SENDRECV},
                {"send", SSIM_PCOMM_SENDRECV},
                {"recv", SSIM_PCOMM_SENDRECV},
                {"reduce", SSIM_PCOMM_REDUCE}};
    for (guint i = 0; i < G_N_ELEMENTS(pats); i++)
        if (strstr(l, pats[i].pat) || strstr(c, pats[i].pat)) {
            *op = pats[i].op;
            return TRUE;
        }
    return FALSE;
}

static gint cmp_int64(gconstpointer a, gconstpointer b)
{
    gint64 x = *(const gint64 *)a, y = *(const gint64 *)b;
    return x < y ? -1 : x > y;
}

/*
 * GPUs per node of a trace of several nodes, or 0 (one node, or not told): as many as the traced
 * process saw (deviceProperties: every GPU of its node under torchrun) when the job's world
 * (distributedInfo.world_size) is larger than that and the process saw more than one GPU (a
 * process bound to one GPU tells nothing of its node).
 */
static guint trace_gpus_per_node(JsonObject *top)
{
    JsonNode *dn = top ? json_object_get_member(top, "distributedInfo") : NULL;
    JsonNode *pn = top ? json_object_get_member(top, "deviceProperties") : NULL;
    gint64 world = dn && JSON_NODE_HOLDS_OBJECT(dn)
                       ? member_int(json_node_get_object(dn), "world_size", -1)
                       : -1;
    guint seen =
        pn && JSON_NODE_HOLDS_ARRAY(pn) ? json_array_get_length(json_node_get_array(pn)) : 0;
    return seen >= 2 && world > (gint64)seen ? seen : 0;
}

/*
 * The most ranks of a collective's group on one node, its nodes holding `per_node` consecutive
 * ranks each (torchrun's numbering), or 0 when the group's ranks are not told: the
 * record_param_comms op's "Process Group Ranks" ("[0, 8]"), else "Global rank start" and
 * "Global rank stride" (PyTorch 2.1's form), each for `size` ranks.
 */
static guint group_ranks_per_node(JsonObject *src, gint64 size, guint per_node)
{
    if (size < 1 || size > SSIM_MAX_GPUS)
        return 0;
    g_autoptr(GArray) ranks = g_array_new(FALSE, FALSE, sizeof(gint64));
    const char *list = member_string(src, "Process Group Ranks");
    for (const char *c = list; c && *c && (gint64)ranks->len <= size;) {
        if (!g_ascii_isdigit(*c)) {
            c++;
            continue;
        }
        char *end;
        guint64 r = g_ascii_strtoull(c, &end, 10);
        gint64 v = r < (guint64)G_MAXINT64 ? (gint64)r : -1;
        g_array_append_val(ranks, v);
        c = end;
    }
    gint64 start = member_int(src, "Global rank start", -1);
    gint64 stride = member_int(src, "Global rank stride", -1);
    if (ranks->len == 0 && start >= 0 && stride >= 1 && start < G_MAXINT32 && stride < G_MAXINT32)
        for (gint64 i = 0; i < size; i++) {
            gint64 v = start + i * stride;
            g_array_append_val(ranks, v);
        }
    if ((gint64)ranks->len != size)
        return 0;
    /* Each rank's node, sorted: the longest run of one node is the answer. */
    for (guint i = 0; i < ranks->len; i++) {
        gint64 *r = &g_array_index(ranks, gint64, i);
        if (*r < 0)
            return 0;
        *r /= per_node;
    }
    g_array_sort(ranks, cmp_int64);
    guint most = 0, run = 0;
    for (guint i = 0; i < ranks->len; i++) {
        gboolean same =
            i > 0 && g_array_index(ranks, gint64, i) == g_array_index(ranks, gint64, i - 1);
        run = same ? run + 1 : 1;
        most = MAX(most, run);
    }
    return most;
}

/* Fills a comm row from the kernel's args or, failing that, its CPU op's; `per_node` is
 * trace_gpus_per_node()'s. */
static gboolean comm_shape(const char *kname, JsonObject *kargs, JsonObject *cpu, guint per_node,
                           SsimProfileRow *row)
{
    JsonObject *cargs = cpu ? args_of(cpu) : NULL;
    JsonObject *src = member_int(kargs, "In msg nelems", -1) >= 0 ? kargs : cargs;
    SsimProfileComm op;
    if (!comm_op_of(kname, member_string(src, "Collective name"), &op))
        return FALSE;
    gint64 in = member_int(src, "In msg nelems", -1), out = member_int(src, "Out msg nelems", -1);
    gint64 ranks = member_int(src, "Group size", -1);
    int dtype;
    guint es = elem_size(member_string(src, "dtype"), &dtype);
    gint64 nel = op == SSIM_PCOMM_ALLGATHER ? out : in;
    if (nel <= 0 || es == 0 || ranks < 1)
        return FALSE;
    row->op = ssim_profile_comm_name(op);
    row->dtype = dtype;
    row->bytes = (guint64)nel * es;
    row->ranks = (guint)(op == SSIM_PCOMM_SENDRECV ? MAX(ranks, 2) : ranks);
    guint rpn = per_node ? group_ranks_per_node(src, ranks, per_node) : 0;
    row->ranks_per_node = rpn ? rpn : row->ranks;
    return TRUE;
}

static const char *copy_op_of(const char *name)
{
    if (strstr(name, "DtoD"))
        return "d2d";
    if (strstr(name, "HtoD"))
        return "h2d";
    if (strstr(name, "DtoH"))
        return "d2h";
    if (strstr(name, "PtoP"))
        return "p2p";
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static char *row_key(const SsimProfileRow *r)
{
    return g_strdup_printf("%d|%s|%d|%" G_GUINT64_FORMAT "|%" G_GUINT64_FORMAT "|%" G_GUINT64_FORMAT
                           "|%" G_GUINT64_FORMAT "|%" G_GUINT64_FORMAT "|%u|%u",
                           (int)r->kind, r->op, r->dtype, r->m, r->n, r->k, r->batch, r->bytes,
                           r->ranks, r->ranks_per_node);
}

/* A host-side CUDA call of the trace (cat cuda_runtime or cuda_driver). */
typedef struct {
    gint64 pid, tid;
    double ts, dur;
    guint index;       /* in traceEvents: the last tie break, so the order is the trace's */
    gboolean launch;   /* enqueues GPU work: a kernel launch, an async copy or memset, a graph */
    gboolean blocking; /* waits for the GPU */
} HostCall;

static int cmp_host_call(const void *a, const void *b)
{
    const HostCall *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static gboolean is_launch(const char *name)
{
    return g_str_has_prefix(name, "cudaLaunch") || g_str_has_prefix(name, "cuLaunch") ||
           strcmp(name, "cudaGraphLaunch") == 0 || strcmp(name, "cudaMemcpyAsync") == 0 ||
           strcmp(name, "cudaMemsetAsync") == 0 || strcmp(name, "cudaMemcpy2DAsync") == 0;
}

/* A call that holds the host until the GPU has done something: a synchronisation, or a copy that
 * is not asynchronous. */
static gboolean is_blocking(const char *name)
{
    return strstr(name, "Synchronize") != NULL || strcmp(name, "cudaMemcpy") == 0 ||
           strcmp(name, "cudaMemcpy2D") == 0 || strcmp(name, "cudaMemset") == 0;
}

/*
 * The host's time per launch (kineto.h): in each process, the time from one launch's start to
 * the next's, less the calls between them that waited for the GPU; apart when the two launches
 * are on different threads (a change of phase).  A launch inside the previous one on its thread
 * (a runtime call and the driver call it makes) is the same launch.
 */
static void host_launch_time(GArray *calls, SsimKinetoSummary *sum)
{
    if (calls->len == 0)
        return; /* no host calls (and no array to sort: qsort's pointer may not be NULL) */
    HostCall *c = (HostCall *)calls->data;
    qsort(c, calls->len, sizeof *c, cmp_host_call);
    g_autoptr(GArray) gaps = g_array_new(FALSE, FALSE, sizeof(double));
    double switched = 0;
    const HostCall *prev = NULL; /* the process's last launch */
    double blocked = 0;
    for (guint i = 0; i < calls->len; i++) {
        if (prev && c[i].pid != prev->pid)
            prev = NULL;
        if (!c[i].launch) {
            if (prev && c[i].blocking)
                blocked += c[i].dur;
            continue;
        }
        if (prev && c[i].tid == prev->tid && c[i].ts < prev->ts + prev->dur)
            continue; /* nested in the previous launch */
        if (prev == NULL) {
            sum->host_processes++;
        } else {
            double gap = MAX(c[i].ts - prev->ts - blocked, 0.0);
            if (c[i].tid == prev->tid) {
                g_array_append_val(gaps, gap);
            } else {
                switched += gap;
                sum->thread_switches++;
            }
        }
        sum->launches++;
        prev = &c[i];
        blocked = 0;
    }
    if (sum->thread_switches > 0)
        sum->switch_us_mean = switched / sum->thread_switches;
    guint n = gaps->len;
    if (n == 0)
        return;
    double *g = (double *)gaps->data, total = 0;
    for (guint i = 0; i < n; i++)
        total += g[i];
    qsort(g, n, sizeof(double), cmp_double);
    sum->launch_us_mean = total / n;
    sum->launch_us_median = n % 2 ? g[n / 2] : (g[n / 2 - 1] + g[n / 2]) / 2;
}

SsimProfile *ssim_kineto_load_data(const char *text, gssize length, const char *path,
                                   SsimKinetoSummary *summary, GError **error)
{
    SsimKinetoSummary sum = {0};
    g_autoptr(JsonParser) parser =
        ssim_json_parse(text, length, SSIM_JSON_MAX_KINETO_BYTES, path, error);
    if (parser == NULL)
        return NULL;
    JsonNode *root = json_parser_get_root(parser);
    JsonNode *evn = root && JSON_NODE_HOLDS_OBJECT(root)
                        ? json_object_get_member(json_node_get_object(root), "traceEvents")
                        : NULL;
    if (evn == NULL || !JSON_NODE_HOLDS_ARRAY(evn)) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_MISSING,
                    "%s: traceEvents: missing (not a PyTorch profiler / Chrome trace)", path);
        return NULL;
    }
    JsonArray *events = json_node_get_array(evn);
    guint n_ev = json_array_get_length(events);
    guint per_node = trace_gpus_per_node(json_node_get_object(root));

    /* Pass 1: CPU ops by External id, profiler steps. */
    g_autoptr(GHashTable) cpu_ops = g_hash_table_new(g_int64_hash, g_int64_equal);
    g_autoptr(GArray) ext_ids = g_array_sized_new(FALSE, FALSE, sizeof(gint64), n_ev);
    g_array_set_size(ext_ids, n_ev);
    g_autoptr(GArray) steps = g_array_new(FALSE, FALSE, sizeof(double));
    g_autoptr(GArray) host_calls = g_array_new(FALSE, FALSE, sizeof(HostCall));
    for (guint i = 0; i < n_ev; i++) {
        JsonNode *en = json_array_get_element(events, i);
        if (!JSON_NODE_HOLDS_OBJECT(en)) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "%s: traceEvents[%u]: not an event object", path, i);
            return NULL;
        }
        JsonObject *ev = json_node_get_object(en);
        const char *ph = member_string(ev, "ph"), *cat = event_cat(ev);
        const char *name = member_string(ev, "name");
        if (ph == NULL || strcmp(ph, "X") != 0 || cat == NULL || name == NULL)
            continue;
        if ((strcmp(cat, "cpu_op") == 0 || strcmp(cat, "user_annotation") == 0) &&
            g_str_has_prefix(name, "ProfilerStep#")) {
            double d;
            if (!event_dur(ev, i, path, &d, error))
                return NULL;
            /* A step of no time is a broken range, not a fast step: it used to be dropped, and
             * with every step dropped the kernels' span stood in for the step silently. */
            if (!(d > 0)) {
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                            "%s: traceEvents[%u].dur: %s lasts 0 us; a profiler step cannot", path,
                            i, name);
                return NULL;
            }
            g_array_append_val(steps, d);
            continue;
        }
        if (strcmp(cat, "cuda_runtime") == 0 || strcmp(cat, "cuda_driver") == 0) {
            HostCall call = {.pid = member_int(ev, "pid", -1),
                             .tid = member_int(ev, "tid", -1),
                             .index = i,
                             .launch = is_launch(name)};
            call.blocking = !call.launch && is_blocking(name);
            if (!call.launch && !call.blocking)
                continue;
            if (!event_dur(ev, i, path, &call.dur, error) ||
                !event_ts(ev, i, path, &call.ts, error))
                return NULL;
            g_array_append_val(host_calls, call);
            continue;
        }
        if (strcmp(cat, "cpu_op") == 0) {
            gint64 id = member_int(args_of(ev), "External id", -1);
            if (id < 0)
                continue;
            g_array_index(ext_ids, gint64, i) = id;
            /* The innermost op wins: a later (nested) op with the same id replaces an outer one
             * only when it has shapes. */
            JsonObject *prev = g_hash_table_lookup(cpu_ops, &g_array_index(ext_ids, gint64, i));
            if (prev == NULL || input_dims(args_of(ev), 0) != NULL)
                g_hash_table_insert(cpu_ops, &g_array_index(ext_ids, gint64, i), ev);
        }
    }

    host_launch_time(host_calls, &sum);

    /* Pass 2: kernels and copies. */
    g_autoptr(GHashTable) buckets = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autoptr(GPtrArray) order = g_ptr_array_new_with_free_func(bucket_free);
    /* A fused attention op launches several kernels a call (cuDNN's backward: the rows'
     * dO . O, the main kernel, dQ's conversion): one sample is their sum, per External id. */
    typedef struct {
        Bucket *b;
        double sum;
    } Call;
    g_autoptr(GArray) calls = g_array_new(FALSE, FALSE, sizeof(Call));
    g_autoptr(GHashTable) call_of =
        g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    double first = INFINITY, last = -INFINITY;
    for (guint i = 0; i < n_ev; i++) {
        JsonNode *en = json_array_get_element(events, i);
        if (!JSON_NODE_HOLDS_OBJECT(en))
            continue;
        JsonObject *ev = json_node_get_object(en);
        const char *ph = member_string(ev, "ph"), *cat = event_cat(ev);
        const char *name = member_string(ev, "name");
        if (ph == NULL || strcmp(ph, "X") != 0 || cat == NULL || name == NULL)
            continue;
        gboolean kernel = strcmp(cat, "kernel") == 0, memcpy_ev = strcmp(cat, "gpu_memcpy") == 0;
        if (!kernel && !memcpy_ev)
            continue;
        double ts, dur;
        if (!event_dur(ev, i, path, &dur, error) || !event_ts(ev, i, path, &ts, error))
            return NULL;
        if (!(dur > 0))
            continue; /* a kernel of 0 us takes no time to replay */
        first = MIN(first, ts);
        last = MAX(last, ts + dur);
        JsonObject *args = args_of(ev);
        gint64 ext = member_int(args, "External id", -1);
        JsonObject *cpu = ext >= 0 ? g_hash_table_lookup(cpu_ops, &ext) : NULL;
        SsimProfileRow row;
        const char *label = NULL;
        gboolean ok = FALSE;
        if (kernel) {
            sum.kernels++;
            sum.kernel_ms += dur / 1e3;
            if (strstr(name, "nccl") || strstr(name, "NCCL")) {
                ssim_profile_row_init(&row, SSIM_PROFILE_COMM);
                ok = comm_shape(name, args, cpu, per_node, &row);
                label = row.op;
                sum.comm += ok;
            } else if (cpu) {
                ssim_profile_row_init(&row, SSIM_PROFILE_ATTENTION);
                if ((ok = attention_shape(cpu, &row, &label))) {
                    sum.attention++;
                } else {
                    ssim_profile_row_init(&row, SSIM_PROFILE_GEMM);
                    ok = gemm_shape(cpu, &row, &label);
                    sum.gemm += ok;
                }
            }
            sum.unmapped += !ok;
        } else {
            ssim_profile_row_init(&row, SSIM_PROFILE_COPY);
            label = copy_op_of(name);
            JsonNode *bn = args ? json_object_get_member(args, "bytes") : NULL;
            gint64 bytes = member_int(args, "bytes", -1);
            /* Present but not a byte count (negative, a fraction, text): malformed. */
            if (bn != NULL && (!JSON_NODE_HOLDS_VALUE(bn) || bytes < 0 ||
                               (json_node_get_value_type(bn) == G_TYPE_DOUBLE &&
                                json_node_get_double(bn) != (double)bytes) ||
                               json_node_get_value_type(bn) == G_TYPE_STRING)) {
                g_autofree char *text = json_to_string(bn, FALSE);
                g_autofree char *shown = ssim_text_excerpt(text, 64);
                g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                            "%s: traceEvents[%u].args.bytes: %s is not a byte count", path, i,
                            shown);
                return NULL;
            }
            ok = label != NULL && bytes > 0;
            if (ok) {
                row.bytes = (guint64)bytes;
                row.dtype = SSIM_PROFILE_NO_DTYPE;
                sum.copy++;
            }
        }
        if (!ok)
            continue;
        row.op = label;
        g_autofree char *key = row_key(&row);
        Bucket *b = g_hash_table_lookup(buckets, key);
        if (b == NULL) {
            b = g_new0(Bucket, 1);
            b->row = row;
            b->op = g_strdup(label);
            b->row.op = b->op;
            b->times = g_array_new(FALSE, FALSE, sizeof(double));
            g_ptr_array_add(order, b);
            g_hash_table_insert(buckets, g_steal_pointer(&key), b);
        }
        if (row.kind == SSIM_PROFILE_ATTENTION) {
            gpointer slot = g_hash_table_lookup(call_of, &ext);
            if (slot == NULL) {
                Call c = {b, dur};
                g_array_append_val(calls, c);
                g_hash_table_insert(call_of, g_memdup2(&ext, sizeof ext),
                                    GUINT_TO_POINTER(calls->len));
            } else {
                g_array_index(calls, Call, GPOINTER_TO_UINT(slot) - 1).sum += dur;
            }
            continue;
        }
        g_array_append_val(b->times, dur);
    }
    for (guint i = 0; i < calls->len; i++)
        g_array_append_val(g_array_index(calls, Call, i).b->times,
                           g_array_index(calls, Call, i).sum);

    g_autoptr(SsimProfile) profile = ssim_profile_new();
    ssim_profile_set_meta(profile, "tool", "shiftsim kineto import");
    g_autofree char *base = g_path_get_basename(path);
    ssim_profile_set_meta(profile, "source", base);
    for (guint i = 0; i < order->len; i++) {
        Bucket *b = order->pdata[i];
        double *t = (double *)b->times->data;
        guint n = b->times->len;
        double mean = 0, var = 0;
        for (guint j = 0; j < n; j++)
            mean += t[j];
        mean /= n;
        for (guint j = 0; j < n; j++)
            var += (t[j] - mean) * (t[j] - mean);
        qsort(t, n, sizeof(double), cmp_double);
        b->row.time_us = mean;
        b->row.median_us = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
        b->row.min_us = t[0];
        b->row.stddev_us = n > 1 ? sqrt(var / (n - 1)) : 0;
        b->row.samples = n;
        if (!ssim_profile_add_row(profile, &b->row, error)) {
            g_prefix_error(error, "%s: %s row: ", path, b->op);
            return NULL;
        }
    }
    if (steps->len > 0) {
        double s = 0, lo = INFINITY, hi = 0;
        for (guint i = 0; i < steps->len; i++) {
            double d = g_array_index(steps, double, i);
            s += d;
            lo = MIN(lo, d);
            hi = MAX(hi, d);
        }
        sum.steps = steps->len;
        sum.step_ms = s / steps->len / 1e3;
        sum.step_ms_min = lo / 1e3;
        sum.step_ms_max = hi / 1e3;
    } else if (last > first) {
        sum.steps = 1;
        sum.step_ms = sum.step_ms_min = sum.step_ms_max = (last - first) / 1e3;
    }
    if (summary)
        *summary = sum;
    return g_steal_pointer(&profile);
}

SsimProfile *ssim_kineto_load(const char *path, SsimKinetoSummary *summary, GError **error)
{
    gsize len = 0;
    g_autofree char *text = ssim_read_file_limited(path, SSIM_JSON_MAX_KINETO_BYTES, &len, error);
    if (text == NULL)
        return NULL;
    return ssim_kineto_load_data(text, (gssize)len, path, summary, error);
}
