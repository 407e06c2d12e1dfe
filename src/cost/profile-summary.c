/*
 * What a profile holds, for people: `shiftsim profile show`'s summary (metadata, rows per kind,
 * the measured range of every curve), and the --explain-costs counters and tables (how many ops
 * of each class got their cost from each source).
 */
#include "src/cost/profile-index-private.h"

#include <math.h>
#include <string.h>

/* ---- Summary ----------------------------------------------------------------------------- */

/* "1 MiB", "1.5 GiB", "4096 B" (plain ASCII: GLib's g_format_size() uses a no-break space). */
static void put_bytes(GString *out, double b)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    guint u = 0;
    while (u + 1 < G_N_ELEMENTS(units) && b >= 1024.0) {
        b /= 1024.0;
        u++;
    }
    g_string_append_printf(out, "%.4g %s", b, units[u]);
}

static void summary_ranges(const SsimProfile *profile, GString *out)
{
    const ProfileIndex *ix = profile_index_get(profile);
    g_string_append(out, "measured ranges:\n");
    for (guint i = 0; i < ix->curves->len; i++) {
        const Curve *c = &g_array_index(ix->curves, Curve, i);
        const Point *p = &g_array_index(ix->points, Point, c->first);
        const Point *q = p + c->n - 1;
        const char *dt = c->dtype == SSIM_PROFILE_NO_DTYPE ? "-" : ssim_dtype_name(c->dtype);
        if (c->kind == SSIM_PROFILE_GEMM || c->kind == SSIM_PROFILE_ATTENTION) {
            g_string_append_printf(out,
                                   "  %s%s%s %s: %u FLOP sizes, %.3g .. %.3g FLOPs, "
                                   "%.1f .. %.1f TFLOP/s; fit: %.1f TFLOP/s at large sizes, "
                                   "half of it at %.3g FLOPs\n",
                                   ssim_profile_kind_name(c->kind), c->name[0] ? " " : "", c->name,
                                   dt, c->n, p->x, q->x, p->x / p->t * 1e-6, q->x / q->t * 1e-6,
                                   1e-6 / c->fit_c, c->fit_h);
            continue;
        }
        if (c->kind == SSIM_PROFILE_COMM) {
            g_string_append_printf(out, "  comm %s %s ranks %u (%u per node",
                                   ssim_profile_comm_name(c->op), dt, c->ranks, c->rpn);
            if (c->nics > 0)
                g_string_append_printf(out, ", %g NIC%s per rank", c->nics,
                                       c->nics == 1 ? "" : "s");
            g_string_append_printf(out, ")%s%s: ", c->algo[0] ? " algo " : "", c->algo);
        } else if (c->kind == SSIM_PROFILE_KIND_N)
            g_string_append(out, "  memory (all ops pooled): ");
        else
            g_string_append_printf(out, "  %s %s %s: ", ssim_profile_kind_name(c->kind), c->name,
                                   dt);
        g_string_append_printf(out, "%u sizes, ", c->n);
        put_bytes(out, p->x);
        g_string_append(out, " .. ");
        put_bytes(out, q->x);
        g_string_append_printf(out, ", %.4g .. %.4g us\n", p->t, q->t);
    }
}

/* ---- --explain-costs --------------------------------------------------------------------- */

void ssim_cost_explain_init(SsimCostExplain *explain)
{
    memset(explain, 0, sizeof *explain);
}

void ssim_cost_explain_add(SsimCostExplain *explain, SsimProfileKind cls, SsimCostSource source)
{
    g_return_if_fail((unsigned)cls < SSIM_PROFILE_KIND_N && (unsigned)source < SSIM_COST_N);
    explain->count[cls][source]++;
}

void ssim_cost_explain_merge(SsimCostExplain *dst, const SsimCostExplain *src)
{
    for (guint k = 0; k < SSIM_PROFILE_KIND_N; k++)
        for (guint s = 0; s < SSIM_COST_N; s++)
            dst->count[k][s] += src->count[k][s];
}

guint64 ssim_cost_explain_total(const SsimCostExplain *explain, SsimCostSource source)
{
    guint64 n = 0;
    for (guint k = 0; k < SSIM_PROFILE_KIND_N; k++)
        n += explain->count[k][source];
    return n;
}

static void explain_rows(const SsimCostExplain *e, GString *out, gboolean csv)
{
    guint64 col[SSIM_COST_N] = {0}, all = 0;
    for (guint k = 0; k <= SSIM_PROFILE_KIND_N; k++) {
        gboolean total = k == SSIM_PROFILE_KIND_N;
        const char *name = total ? "total" : ssim_profile_kind_name(k);
        guint64 sum = 0;
        g_string_append_printf(out, csv ? "%s" : "%-10s", name);
        for (guint s = 0; s < SSIM_COST_N; s++) {
            guint64 v = total ? col[s] : e->count[k][s];
            if (!total)
                col[s] += v;
            sum += v;
            g_string_append_printf(out, csv ? ",%" G_GUINT64_FORMAT : " %13" G_GUINT64_FORMAT, v);
        }
        if (!total)
            all += sum;
        g_string_append_printf(out, csv ? ",%" G_GUINT64_FORMAT "\n" : " %10" G_GUINT64_FORMAT "\n",
                               total ? all : sum);
    }
}

GString *ssim_cost_explain_table(const SsimCostExplain *explain)
{
    GString *out = g_string_new(NULL);
    g_string_append_printf(out, "%-10s", "op class");
    for (guint s = 0; s < SSIM_COST_N; s++)
        g_string_append_printf(out, " %13s", ssim_cost_source_name(s));
    g_string_append_printf(out, " %10s\n", "total");
    explain_rows(explain, out, FALSE);
    return out;
}

GString *ssim_cost_explain_csv(const SsimCostExplain *explain)
{
    GString *out = g_string_new("class");
    for (guint s = 0; s < SSIM_COST_N; s++)
        g_string_append_printf(out, ",%s", ssim_cost_source_name(s));
    g_string_append(out, ",total\n");
    explain_rows(explain, out, TRUE);
    return out;
}

GString *ssim_profile_summary(const SsimProfile *profile)
{
    GString *out = g_string_new(NULL);
    g_string_append(out, "metadata:\n");
    for (guint i = 0; i < ssim_profile_n_meta(profile); i++)
        g_string_append_printf(out, "  %-14s %s\n", ssim_profile_meta_key(profile, i),
                               ssim_profile_meta_value(profile, i));
    guint per_kind[SSIM_PROFILE_KIND_N] = {0};
    for (guint i = 0; i < ssim_profile_n_rows(profile); i++)
        per_kind[ssim_profile_row(profile, i)->kind]++;
    g_string_append_printf(out, "rows: %u\n", ssim_profile_n_rows(profile));
    for (guint k = 0; k < SSIM_PROFILE_KIND_N; k++)
        g_string_append_printf(out, "  %-14s %u\n", ssim_profile_kind_name((SsimProfileKind)k),
                               per_kind[k]);
    summary_ranges(profile, out);
    return out;
}
