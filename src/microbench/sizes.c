/*
 * List-option parsers for shiftsim-bench (see sizes.h).  Ranges are expanded by repeated
 * multiplication with an overflow check, so "1:16E" fails cleanly instead of wrapping around.
 */
#include "src/microbench/sizes.h"

#include <shiftsim/types.h>

#include <string.h>

#define MAX_LIST 4096 /* a range expanding to more entries than this is surely a typo */

static gboolean set_error(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static gboolean set_error(GError **error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error_literal(error, SSIM_CONFIG_ERROR, SSIM_CONFIG_ERROR_VALUE, msg);
    return FALSE;
}

gboolean ssim_bench_parse_size(const char *text, guint64 *out, GError **error)
{
    g_return_val_if_fail(text != NULL && out != NULL, FALSE);
    g_autofree char *t = g_strstrip(g_strdup(text));
    guint64 v;
    if (!ssim_bytes_read(t, &v, error)) /* the one grammar (types.h, docs/units.md) */
        return FALSE;
    if (v == 0)
        return set_error(error, "\"%s\": a size must be positive", t);
    *out = v;
    return TRUE;
}

static gint cmp_u64(gconstpointer pa, gconstpointer pb)
{
    guint64 a = *(const guint64 *)pa, b = *(const guint64 *)pb;
    return a < b ? -1 : a > b ? 1 : 0;
}

static gboolean parse_item(const char *item, GArray *out, GError **error)
{
    g_auto(GStrv) parts = g_strsplit(item, ":", -1);
    guint n = g_strv_length(parts);
    if (n == 1) {
        guint64 v;
        if (!ssim_bench_parse_size(parts[0], &v, error))
            return FALSE;
        g_array_append_val(out, v);
        return TRUE;
    }
    if (n > 3)
        return set_error(error, "\"%s\": a range is min:max or min:max:factor", item);
    guint64 lo, hi, factor = 2;
    if (!ssim_bench_parse_size(parts[0], &lo, error) ||
        !ssim_bench_parse_size(parts[1], &hi, error))
        goto fail;
    if (n == 3) {
        g_autofree char *f = g_strstrip(g_strdup(parts[2]));
        char *end = NULL;
        guint64 v = g_ascii_strtoull(f, &end, 10);
        if (*f == '\0' || !g_ascii_isdigit(*f) || end == NULL || *end != '\0' || v < 2 || v > 1024)
            return set_error(error, "\"%s\": the factor must be an integer from 2 to 1024", item);
        factor = v;
    }
    if (lo > hi)
        return set_error(error, "\"%s\": the range's minimum is above its maximum", item);
    for (guint64 v = lo;;) {
        g_array_append_val(out, v);
        if (out->len > MAX_LIST)
            return set_error(error, "\"%s\": more than %d sizes", item, MAX_LIST);
        if (v > hi / factor)
            break;
        v *= factor;
    }
    return TRUE;
fail:
    g_prefix_error(error, "\"%s\": ", item);
    return FALSE;
}

GArray *ssim_bench_parse_size_list(const char *text, GError **error)
{
    g_return_val_if_fail(text != NULL, NULL);
    g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(guint64));
    g_auto(GStrv) items = g_strsplit(text, ",", -1);
    for (guint i = 0; items[i] != NULL; i++) {
        g_strstrip(items[i]);
        if (items[i][0] == '\0') {
            set_error(error, "\"%s\": empty item in the list", text);
            return NULL;
        }
        if (!parse_item(items[i], out, error))
            return NULL;
    }
    if (out->len == 0) {
        set_error(error, "the list is empty");
        return NULL;
    }
    g_array_sort(out, cmp_u64);
    guint w = 1;
    for (guint r = 1; r < out->len; r++)
        if (g_array_index(out, guint64, r) != g_array_index(out, guint64, w - 1))
            g_array_index(out, guint64, w++) = g_array_index(out, guint64, r);
    g_array_set_size(out, w);
    return g_steal_pointer(&out);
}

GArray *ssim_bench_parse_uint_list(const char *text, guint max, GError **error)
{
    g_return_val_if_fail(text != NULL, NULL);
    g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(guint));
    /* g_strsplit("") gives no items; split " " so that an empty option is one empty item. */
    g_auto(GStrv) items = g_strsplit(*text != '\0' ? text : " ", ",", -1);
    for (guint i = 0; items[i] != NULL; i++) {
        const char *s = g_strstrip(items[i]);
        char *end = NULL;
        guint64 v = g_ascii_strtoull(s, &end, 10);
        if (*s == '\0' || !g_ascii_isdigit(*s) || end == NULL || *end != '\0' || v == 0 ||
            v > max) {
            set_error(error, "\"%s\" is not an integer from 1 to %u", s, max);
            return NULL;
        }
        guint u = (guint)v;
        gboolean seen = FALSE;
        for (guint j = 0; j < out->len && !seen; j++)
            seen = g_array_index(out, guint, j) == u;
        if (!seen)
            g_array_append_val(out, u);
    }
    return g_steal_pointer(&out);
}

char **ssim_bench_parse_name_list(const char *text, const char *const *allowed, GError **error)
{
    g_return_val_if_fail(text != NULL && allowed != NULL, NULL);
    g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(g_free);
    g_auto(GStrv) items = g_strsplit(*text != '\0' ? text : " ", ",", -1);
    for (guint i = 0; items[i] != NULL; i++) {
        g_autofree char *name = g_ascii_strdown(g_strstrip(items[i]), -1);
        gboolean known = FALSE;
        for (guint j = 0; allowed[j] != NULL && !known; j++)
            known = strcmp(allowed[j], name) == 0;
        if (!known) {
            g_autofree char *all = g_strjoinv(", ", (char **)allowed);
            set_error(error, "\"%s\" is not one of %s", name, all);
            return NULL;
        }
        gboolean seen = FALSE;
        for (guint j = 0; j < out->len && !seen; j++)
            seen = strcmp(g_ptr_array_index(out, j), name) == 0;
        if (!seen)
            g_ptr_array_add(out, g_steal_pointer(&name));
    }
    g_ptr_array_add(out, NULL);
    return (char **)g_ptr_array_free(g_steal_pointer(&out), FALSE);
}
