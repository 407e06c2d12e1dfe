/*
 * Placement (include/shiftsim/place.h): the extension words (`--shift`), gradient site lists
 * (`--commshift-grads`), the policy registry and names ("alpa+early-dp"), the pass driver, and
 * the critical path that `auto` follows.  The plan the passes change is plan.c's; the rules they
 * share are place-moves.c's; each policy is a place-<name>.c.
 *
 * The registry is an X-macro (SSIM_PLACEMENT_LIST), so names, summaries, native schedules and
 * passes cannot drift apart.  ssim_place_apply() starts every pass from the lowering's placement
 * (ssim_plan_reset), so a pass never sees what an earlier one did; a pass that builds on another
 * (commshift on alpa's compiler defaults) calls it itself.
 */
#include <shiftsim/place.h>

#include <string.h>

/* ---- extensions ------------------------------------------------------------------------- */

static const char *const shift_names[] = {"early-dp", "async-pp", "late-tp"};
static const char *const shift_aliases[] = {"dp", "pp", "tp"};

/* The mask of extension word `w` (a name or an old alias), 0 when it is none. */
static guint shift_bit(const char *w)
{
    for (guint k = 0; k < G_N_ELEMENTS(shift_names); k++)
        if (strcmp(w, shift_names[k]) == 0 || strcmp(w, shift_aliases[k]) == 0)
            return 1u << k;
    return 0;
}

gboolean ssim_shift_parse(const char *list, guint *mask, GError **error)
{
    guint m = 0;
    g_auto(GStrv) words = g_strsplit(list ? list : "", ",", -1);
    for (guint i = 0; words[i]; i++) {
        const char *w = g_strstrip(words[i]);
        if (*w == '\0' || strcmp(w, "none") == 0)
            continue;
        if (strcmp(w, "all") == 0) {
            m |= SSIM_SHIFT_ALL;
            continue;
        }
        guint bit = shift_bit(w);
        if (bit == 0) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "shift: unknown extension '%s' (known: early-dp, async-pp, late-tp, or "
                        "dp, pp, tp; all, none)",
                        w);
            return FALSE;
        }
        m |= bit;
    }
    *mask = m;
    return TRUE;
}

char *ssim_shift_to_string(guint mask)
{
    GString *s = g_string_new(NULL);
    for (guint k = 0; k < G_N_ELEMENTS(shift_names); k++)
        if (mask & (1u << k))
            g_string_append_printf(s, "%s%s", s->len ? "," : "", shift_names[k]);
    if (s->len == 0)
        g_string_append(s, "none");
    return g_string_free(s, FALSE);
}

/* ---- gradient sites ----------------------------------------------------------------------- */

/* One site of a list: a layer index, "embed" or "head". */
static gboolean parse_site(const char *w, guint32 *site)
{
    if (strcmp(w, "embed") == 0 || strcmp(w, "embedding") == 0) {
        *site = SSIM_SITE_EMBED;
        return TRUE;
    }
    if (strcmp(w, "head") == 0) {
        *site = SSIM_SITE_HEAD;
        return TRUE;
    }
    if (!g_ascii_isdigit(*w))
        return FALSE;
    char *end = NULL;
    guint64 v = g_ascii_strtoull(w, &end, 10);
    if (end == NULL || *end != '\0' || v >= SSIM_SITE_EMBED)
        return FALSE;
    *site = (guint32)v;
    return TRUE;
}

gboolean ssim_site_set_parse(const char *text, SsimSiteSet *set, GError **error)
{
    SsimSiteSet out = {.all = FALSE, .n = 0};
    g_auto(GStrv) words = g_strsplit(text ? text : "", ",", -1);
    gboolean any = FALSE;
    for (guint i = 0; words[i]; i++) {
        char *w = g_strstrip(words[i]);
        if (*w == '\0')
            continue;
        any = TRUE;
        if (strcmp(w, "all") == 0) {
            out.all = TRUE;
            continue;
        }
        if (strcmp(w, "none") == 0)
            continue;
        guint32 lo, hi;
        char *dash = strchr(w, '-');
        gboolean ok;
        if (dash != NULL) {
            *dash = '\0';
            ok = parse_site(w, &lo) && parse_site(dash + 1, &hi) && lo < SSIM_SITE_EMBED &&
                 hi < SSIM_SITE_EMBED && lo <= hi;
            *dash = '-';
        } else {
            ok = parse_site(w, &lo);
            hi = lo;
        }
        if (!ok) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "gradients: '%s' is not a layer, a range LO-HI of layers, embed or head "
                        "(or all, none)",
                        w);
            return FALSE;
        }
        if (out.n == SSIM_SITE_SET_MAX) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "gradients: more than %u items", SSIM_SITE_SET_MAX);
            return FALSE;
        }
        out.lo[out.n] = lo;
        out.hi[out.n++] = hi;
    }
    if (!any) {
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "gradients: give all, none or a list of layers (e.g. 0-13,embed)");
        return FALSE;
    }
    *set = out;
    return TRUE;
}

gboolean ssim_site_set_check(const SsimSiteSet *set, const SsimModel *model, GError **error)
{
    for (guint i = 0; !set->all && i < set->n; i++)
        if (set->hi[i] < SSIM_SITE_EMBED && set->hi[i] >= model->layers) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "gradients: layer %u is out of range: %s has layers 0 to %u", set->hi[i],
                        model->name, model->layers - 1);
            return FALSE;
        }
    return TRUE;
}

gboolean ssim_site_set_has(const SsimSiteSet *set, guint32 site)
{
    if (set->all)
        return TRUE;
    for (guint i = 0; i < set->n; i++)
        if (site >= set->lo[i] && site <= set->hi[i])
            return TRUE;
    return FALSE;
}

static void append_site(GString *s, guint32 site)
{
    if (site == SSIM_SITE_EMBED)
        g_string_append(s, "embed");
    else if (site == SSIM_SITE_HEAD)
        g_string_append(s, "head");
    else
        g_string_append_printf(s, "%u", site);
}

char *ssim_site_set_to_string(const SsimSiteSet *set)
{
    if (set->all)
        return g_strdup("all");
    if (set->n == 0)
        return g_strdup("none");
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < set->n; i++) {
        if (i > 0)
            g_string_append_c(s, ',');
        append_site(s, set->lo[i]);
        if (set->hi[i] != set->lo[i]) {
            g_string_append_c(s, '-');
            append_site(s, set->hi[i]);
        }
    }
    return g_string_free(s, FALSE);
}

/* ---- critical path ----------------------------------------------------------------------- */

/* Of two ops, the one that ends later (ties: the smaller index); either may be SSIM_NONE. */
static guint32 later(const SsimTimeline *tl, guint32 a, guint32 b)
{
    if (a == SSIM_NONE)
        return b;
    if (b == SSIM_NONE)
        return a;
    return tl->end[b] > tl->end[a] || (tl->end[b] == tl->end[a] && b < a) ? b : a;
}

/*
 * With programs (graph.h), what bounds an op's start also includes its program's gate: each
 * program's last op to end (`last`, whose end is when the program's outputs exist) and the input
 * that ended last among the program's inputs from outside and its predecessor program (`gate`).
 * A predecessor in another program is represented by that program's last op.
 */
static void program_bounds(const SsimGraph *g, const SsimTimeline *tl, const guint32 *prog,
                           guint32 *last, guint32 *gate)
{
    guint32 n = ssim_graph_n_ops(g), np = ssim_graph_n_programs(g);
    for (guint32 p = 0; p < np; p++)
        last[p] = gate[p] = SSIM_NONE;
    for (guint32 i = 0; i < n; i++)
        if (prog[i] != SSIM_NONE)
            last[prog[i]] = later(tl, last[prog[i]], i);
    for (guint32 p = 0; p < np; p++) {
        guint32 prev = ssim_graph_program_prev(g, p);
        if (prev != SSIM_NONE)
            gate[p] = last[prev];
        guint n_ops;
        const guint32 *ops = ssim_graph_program_ops(g, p, &n_ops);
        for (guint k = 0; k < n_ops; k++) {
            guint nd;
            const guint32 *d = ssim_graph_deps(g, ops[k], &nd);
            for (guint j = 0; j <= nd; j++) {
                guint32 c = j < nd ? d[j] : ssim_graph_stream_prev(g, ops[k]);
                if (c == SSIM_NONE || prog[c] == p)
                    continue;
                gate[p] = later(tl, gate[p], prog[c] == SSIM_NONE ? c : last[prog[c]]);
            }
        }
    }
}

GArray *ssim_critical_path(const SsimGraph *g, const SsimTimeline *tl)
{
    GArray *path = g_array_new(FALSE, FALSE, sizeof(guint32));
    guint32 n = ssim_graph_n_ops(g);
    if (n == 0)
        return path;
    const guint32 *mfirst, *mops, *mexp;
    ssim_graph_match_csr(g, &mfirst, &mops, &mexp);
    const SsimOp *ops = ssim_graph_ops(g);
    const guint32 *prog = ssim_graph_op_programs(g);
    guint32 np = ssim_graph_n_programs(g);
    g_autofree guint32 *prog_last = prog ? g_new(guint32, MAX(np, 1)) : NULL;
    g_autofree guint32 *prog_gate = prog ? g_new(guint32, MAX(np, 1)) : NULL;
    if (prog != NULL)
        program_bounds(g, tl, prog, prog_last, prog_gate);
    guint32 cur = 0;
    for (guint32 i = 1; i < n; i++)
        if (tl->end[i] > tl->end[cur])
            cur = i;
    g_autofree guint8 *seen = g_new0(guint8, n);
    while (cur != SSIM_NONE && !seen[cur]) {
        seen[cur] = 1;
        g_array_append_val(path, cur);
        SsimTime start = tl->start[cur];
        guint32 best = SSIM_NONE;
        const guint32 *members = &cur;
        guint32 n_members = 1;
        if (ops[cur].kind != SSIM_OP_COMPUTE && ops[cur].match != SSIM_NONE) {
            members = mops + mfirst[ops[cur].match];
            n_members = mfirst[ops[cur].match + 1] - mfirst[ops[cur].match];
        }
        for (guint32 k = 0; k < n_members; k++) {
            guint32 q = members[k];
            guint nd;
            const guint32 *d = ssim_graph_deps(g, q, &nd);
            guint32 prev = ssim_graph_stream_prev(g, q);
            gboolean gated = prog != NULL && prog[q] != SSIM_NONE;
            for (guint j = 0; j <= nd + (gated ? 1 : 0); j++) {
                guint32 c = j < nd ? d[j] : j == nd ? prev : prog_gate[prog[q]];
                /* An input from another program exists when that program's last op ends. */
                if (c != SSIM_NONE && prog != NULL && prog[c] != SSIM_NONE &&
                    (prog[q] == SSIM_NONE || prog[c] != prog[q]))
                    c = prog_last[prog[c]];
                if (c == SSIM_NONE || seen[c] || tl->end[c] > start)
                    continue;
                if (best == SSIM_NONE || tl->end[c] > tl->end[best] ||
                    (tl->end[c] == tl->end[best] && c < best))
                    best = c;
            }
        }
        cur = best;
    }
    return path;
}

/* ---- policies ---------------------------------------------------------------------------- */

typedef gboolean (*PassFn)(SsimPlan *, const SsimPlacement *, const SsimPlaceEvaluator *,
                           SsimPlaceReport *, GError **);

static const struct {
    const char *name, *schedule, *summary;
    PassFn pass;
} placements[] = {
#define SSIM_X(e, s, f, sch, d) [SSIM_PLACEMENT_##e] = {s, sch, d, ssim_place_##f},
    SSIM_PLACEMENT_LIST(SSIM_X)
#undef SSIM_X
};

const char *ssim_placement_kind_name(SsimPlacementKind kind)
{
    g_return_val_if_fail(kind < SSIM_PLACEMENT_N, "?");
    return placements[kind].name;
}

const char *ssim_placement_kind_summary(SsimPlacementKind kind)
{
    g_return_val_if_fail(kind < SSIM_PLACEMENT_N, "?");
    return placements[kind].summary;
}

const char *ssim_placement_kind_schedule(SsimPlacementKind kind)
{
    g_return_val_if_fail(kind < SSIM_PLACEMENT_N, "xla");
    return placements[kind].schedule;
}

gboolean ssim_placement_kind_from_name(const char *name, SsimPlacementKind *out)
{
    if (name && strcmp(name, "baseline") == 0) {
        *out = SSIM_PLACEMENT_XLA;
        return TRUE;
    }
    for (guint i = 0; i < SSIM_PLACEMENT_N; i++)
        if (name && strcmp(name, placements[i].name) == 0) {
            *out = (SsimPlacementKind)i;
            return TRUE;
        }
    return FALSE;
}

const char *ssim_placement_alias_note(const char *name)
{
    if (name && (strcmp(name, "baseline") == 0 || g_str_has_prefix(name, "baseline+")))
        return "placement 'baseline' is now called 'xla' (GSPMD's lock-step pipeline); the "
               "paper's baseline is 'alpa'";
    return NULL;
}

SsimPlacementKind ssim_placement_kind_for_schedule(const char *schedule)
{
    if (schedule && g_str_has_prefix(schedule, "alpa"))
        return SSIM_PLACEMENT_ALPA;
    if (schedule && strcmp(schedule, "xla") == 0)
        return SSIM_PLACEMENT_XLA;
    return SSIM_PLACEMENT_MEGATRON;
}

guint ssim_placement_shifts(const SsimPlacement *p)
{
    guint m = p->shifts;
    if (m & SSIM_SHIFT_DEFAULT)
        m = p->kind == SSIM_PLACEMENT_AUTO ? SSIM_SHIFT_ALL : 0;
    if (p->lhs && p->kind != SSIM_PLACEMENT_MEGATRON)
        m |= SSIM_SHIFT_TP | SSIM_SHIFT_DP;
    return m;
}

gboolean ssim_placement_parse(const char *text, SsimPlacement *p, GError **error)
{
    g_auto(GStrv) words = g_strsplit(text ? text : "", "+", -1);
    const char *name = words[0] ? g_strstrip(words[0]) : "";
    SsimPlacementKind kind;
    if (!ssim_placement_kind_from_name(name, &kind)) {
        g_autofree char *names = ssim_placement_kind_list();
        g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                    "unknown placement '%s' (known: %s)", name, names);
        return FALSE;
    }
    guint shifts = 0;
    gboolean any = FALSE;
    for (guint i = 1; words[i]; i++) {
        const char *w = g_strstrip(words[i]);
        guint bit = strcmp(w, "all") == 0 ? SSIM_SHIFT_ALL : shift_bit(w);
        if (bit == 0) {
            g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                        "placement '%s': unknown extension '%s' (known: early-dp, async-pp, "
                        "late-tp, all)",
                        text, w);
            return FALSE;
        }
        shifts |= bit;
        any = TRUE;
    }
    p->kind = kind;
    p->shifts = any ? shifts : SSIM_SHIFT_DEFAULT;
    return TRUE;
}

guint64 ssim_placement_default_bucket(SsimPlacementKind kind, const SsimParallel *par,
                                      SsimDtype dtype)
{
    if (kind != SSIM_PLACEMENT_MEGATRON || par->zero_stage >= 2)
        return 0;
    return MAX((guint64)40000000, (guint64)1000000 * par->dp) * ssim_dtype_size(dtype);
}

gboolean ssim_placement_check(const SsimPlacement *p, const SsimParallel *par, GError **error)
{
    gboolean early_dp = p->kind != SSIM_PLACEMENT_AUTO && !(p->shifts & SSIM_SHIFT_DEFAULT) &&
                        (p->shifts & SSIM_SHIFT_DP);
    if (par->zero_stage < 2 || ssim_parallel_size(par, SSIM_AXIS_DP) == 1 ||
        !(p->kind == SSIM_PLACEMENT_COMMSHIFT || early_dp))
        return TRUE;
    g_set_error(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE,
                "%s with zero %u: ZeRO stage %u reduce-scatters each layer's gradients every "
                "microbatch, which leaves no gradient reduction at the step's end to move (use "
                "zero 0 or 1, or another placement)",
                p->kind == SSIM_PLACEMENT_COMMSHIFT ? "commshift" : "early-dp", par->zero_stage,
                par->zero_stage);
    return FALSE;
}

char *ssim_placement_to_string(const SsimPlacement *p)
{
    GString *s = g_string_new(ssim_placement_kind_name(p->kind));
    for (guint k = 0; !(p->shifts & SSIM_SHIFT_DEFAULT) && k < G_N_ELEMENTS(shift_names); k++)
        if (p->shifts & (1u << k))
            g_string_append_printf(s, "+%s", shift_names[k]);
    return g_string_free(s, FALSE);
}

char *ssim_placement_kind_list(void)
{
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < SSIM_PLACEMENT_N; i++)
        g_string_append_printf(s, "%s%s", i ? ", " : "", placements[i].name);
    return g_string_free(s, FALSE);
}

void ssim_place_report_init(SsimPlaceReport *r)
{
    memset(r, 0, sizeof *r);
    r->moves = g_ptr_array_new_with_free_func(g_free);
}

void ssim_place_report_clear(SsimPlaceReport *r)
{
    if (r->moves)
        g_ptr_array_free(r->moves, TRUE);
    memset(r, 0, sizeof *r);
}

gboolean ssim_place_apply(SsimPlan *plan, const SsimPlacement *placement,
                          const SsimPlaceEvaluator *eval, SsimPlaceReport *report, GError **error)
{
    g_return_val_if_fail(placement->kind < SSIM_PLACEMENT_N, FALSE);
    ssim_plan_reset(plan);
    return placements[placement->kind].pass(plan, placement, eval, report, error);
}
