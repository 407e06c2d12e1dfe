/*
 * Parsers for shiftsim-bench's list options: byte sizes ("8:8G", "1K,4M,1G", "4K:4G:4"), positive
 * integer lists ("1,2,4,8") and name lists ("gemm,comm").  Plain C, unit-tested.
 *
 * A size is a positive byte size in shiftsim's one grammar (ssim_bytes_read(), docs/units.md):
 * SI prefixes are powers of 1000 (8M = 8 000 000), IEC ones powers of 1024 (8Mi = 8MiB =
 * 8 388 608); blanks around it are dropped.  A list is comma-separated items; an item is a size or
 * a range `min:max[:factor]`, meaning min, min*factor, min*factor^2, ... up to and including max
 * (factor 2 when omitted, so "8:8Gi" is every power of two from 8 B to 8 GiB).
 * The result is sorted ascending without duplicates.
 *
 * Errors are SSIM_CONFIG_ERROR_VALUE with a message naming the item, e.g.
 * `"8:x": 'x' is not a byte size: it does not start with a digit (...)`; callers prefix the
 * option name.  Ownership: returned arrays are the caller's (g_array_unref).
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

gboolean ssim_bench_parse_size(const char *text, guint64 *out, GError **error);
/* GArray of guint64. */
GArray *ssim_bench_parse_size_list(const char *text, GError **error);
/* GArray of guint, each in 1..max, duplicates removed, order kept. */
GArray *ssim_bench_parse_uint_list(const char *text, guint max, GError **error);
/* Splits "a,b,c" into names (trimmed, non-empty, lower-cased), each checked against `allowed`
 * (NULL-terminated); duplicates removed, order kept.  Returns a NULL-terminated strv. */
char **ssim_bench_parse_name_list(const char *text, const char *const *allowed, GError **error);

G_END_DECLS
