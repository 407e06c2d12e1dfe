/*
 * Units and error domains shared by every shiftsim module.
 *
 * Simulated time is an integer count of nanoseconds so that runs are exact and reproducible on any
 * machine; bytes are unsigned 64-bit; FLOPs and bandwidths are doubles.  Converting a double
 * duration to SsimTime always goes through ssim_time_from_seconds(), which rounds to the nearest
 * nanosecond, so every module rounds the same way.
 *
 * Time cannot overflow silently: SSIM_TIME_NEVER (2^63 - 1 ns, about 292 years) is both "never"
 * and the value every saturating operation below stops at, so a duration or an instant that
 * reaches it is out of range, and the code that schedules it refuses it (the runtime names the
 * op whose cost or end got there) rather than wrapping to a negative time.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef int64_t SsimTime;

#define SSIM_TIME_NEVER INT64_MAX
#define SSIM_NS         ((SsimTime)1)
#define SSIM_US         ((SsimTime)1000)
#define SSIM_MS         ((SsimTime)1000000)
#define SSIM_S          ((SsimTime)1000000000)
#define SSIM_NONE       G_MAXUINT32

/* Rounds a duration in seconds to the nearest nanosecond: negative is 0; NaN, infinite or past
 * the range is SSIM_TIME_NEVER (no finite time), which callers treat as out of range. */
SsimTime ssim_time_from_seconds(double seconds);
double ssim_time_to_seconds(SsimTime t);

/* a + b, saturating at SSIM_TIME_NEVER (and at INT64_MIN below); either operand NEVER gives
 * NEVER when the other is not negative. */
static inline SsimTime ssim_time_add(SsimTime a, SsimTime b)
{
    SsimTime r;
    if (G_UNLIKELY(__builtin_add_overflow(a, b, &r)))
        return b > 0 ? SSIM_TIME_NEVER : INT64_MIN;
    return r;
}

/* t * n for t >= 0, saturating at SSIM_TIME_NEVER (exact below it, unlike ssim_time_scale). */
static inline SsimTime ssim_time_mul(SsimTime t, guint64 n)
{
    SsimTime r;
    if (G_UNLIKELY(n > (guint64)INT64_MAX || __builtin_mul_overflow(t, (SsimTime)n, &r)))
        return t == 0 || n == 0 ? 0 : SSIM_TIME_NEVER;
    return r;
}

/* t * factor rounded to the nearest nanosecond, for t >= 0 and factor >= 0, saturating at
 * SSIM_TIME_NEVER (NaN too). */
SsimTime ssim_time_scale(SsimTime t, double factor);

/* Whether a duration or instant is a finite simulated time: in [0, SSIM_TIME_NEVER). */
static inline gboolean ssim_time_is_finite(SsimTime t)
{
    return t >= 0 && t < SSIM_TIME_NEVER;
}

/*
 * A byte size, the one grammar of every size shiftsim reads (docs/units.md): a non-negative
 * decimal number, an optional unit prefix and an optional B.  SI prefixes are powers of 1000
 * (k or K, M, G, T, P, E: 40M = 40MB = 40 000 000), IEC ones powers of 1024 (Ki or ki, Mi, Gi,
 * Ti, Pi, Ei: 40Mi = 40MiB = 41 943 040); no prefix is bytes (4096, 4096B).  A fraction is
 * accepted when it comes to a whole number of bytes (1.5GiB, 0.5KB; not 0.5B or 1.1KiB).
 * Nothing else: no sign, blank, exponent, lower-case b, or size past 2^64 - 1.
 *
 * ssim_bytes_read() sets SSIM_CONFIG_ERROR_VALUE "'TEXT' is not a byte size: WHY (GRAMMAR)",
 * which the caller prefixes with the option, key or file:line; ssim_bytes_parse() is the same
 * without a message.  Zero is a size: whether it is allowed is the caller's rule.
 */
#define SSIM_BYTES_GRAMMAR                                                                         \
    "a whole number with an optional unit k, M, G, T (powers of 1000) or Ki, Mi, Gi, Ti (powers "  \
    "of 1024), optionally followed by B"
gboolean ssim_bytes_read(const char *text, guint64 *out, GError **error);
gboolean ssim_bytes_parse(const char *text, guint64 *out);

/*
 * An on/off setting, as every switch shiftsim reads takes it: on, true, yes, 1 or off, false,
 * no, 0, case-insensitive.  Otherwise FALSE with SSIM_CONFIG_ERROR_VALUE "KEY: 'VALUE' is not on
 * or off" (`key` names the setting; `value` may be NULL).
 */
gboolean ssim_switch_read(const char *key, const char *value, gboolean *out, GError **error);

/*
 * `text` for a message: at most `max` bytes of it (never cut inside a UTF-8 sequence), control
 * characters shown as '?', and "... (N more bytes)" when it was cut, so an error never quotes a
 * whole hostile input.  Newly allocated.
 */
char *ssim_text_excerpt(const char *text, gsize max);
/*
 * Bounds of the text formats (graphs, INIs, CSVs, nccl-tests output): a line longer than
 * SSIM_TEXT_LINE_MAX bytes or a CSV row of more than SSIM_TEXT_FIELDS_MAX fields is refused
 * (SSIM_CONFIG_ERROR_LIMIT) before it is split or quoted: no real file has one, and a binary or
 * hostile file that does would otherwise cost memory and time per byte, or a message of its size.
 */
#define SSIM_TEXT_LINE_MAX   (1u << 20)
#define SSIM_TEXT_FIELDS_MAX 4096u
/* FALSE with "PATH:LINE: the line is N bytes long, over the limit of ..." past the bound. */
gboolean ssim_text_check_line(const char *path, guint line, gsize len, GError **error);
/* The length of the UTF-8 byte order mark that starts `text[0 .. len)` (3), else 0: what a
 * spreadsheet or a Windows editor puts before the first line of a file it saves, which the text
 * readers skip (runs and vTrain CSVs, profiles, INIs, op graphs, ASTRA-sim's network YAML;
 * json-glib skips it in JSON), columns still counting from the first character after it. */
gsize ssim_text_bom(const char *text, gsize len);

/* The same for a message already built (an error's): cut at SSIM_MESSAGE_MAX bytes. */
#define SSIM_MESSAGE_MAX 4096
void ssim_error_truncate(GError *error);

/* qsort/bsearch comparison of two guint32 (ranks, GPU ids, op indices). */
int ssim_cmp_u32(const void *a, const void *b);

/* Errors in input files and configurations (INI, graph text, CSV, impossible splits). */
#define SSIM_CONFIG_ERROR (ssim_config_error_quark())
GQuark ssim_config_error_quark(void);
typedef enum {
    SSIM_CONFIG_ERROR_PARSE,   /* malformed syntax */
    SSIM_CONFIG_ERROR_VALUE,   /* a field has a wrong, out-of-range or inconsistent value */
    SSIM_CONFIG_ERROR_MISSING, /* a required field or file is absent */
    SSIM_CONFIG_ERROR_VERSION, /* unsupported format version */
    SSIM_CONFIG_ERROR_IO,      /* the file could not be read or written */
    SSIM_CONFIG_ERROR_MEMORY,  /* the configuration does not fit in a GPU's memory (memory.h) */
    SSIM_CONFIG_ERROR_LIMIT,   /* an input is past a parser's bound (nesting depth, size,
                                  line length, field count) */
} SsimConfigError;

/* Errors found while simulating (deadlock, limits). */
#define SSIM_RUN_ERROR (ssim_run_error_quark())
GQuark ssim_run_error_quark(void);
typedef enum {
    SSIM_RUN_ERROR_DEADLOCK, /* no event left but some ops never finished */
    SSIM_RUN_ERROR_LIMIT,    /* a limit: the op or microbatch budget refused the configuration
                                (budget.h), or the time limit or event budget ran out first */
    SSIM_RUN_ERROR_GRAPH,    /* the graph is not legal (cycle, dangling dependency) */
    SSIM_RUN_ERROR_TIME,     /* an op's cost or end is not a finite simulated time (types.h) */
    SSIM_RUN_ERROR_MEMORY,   /* the run would need, or came to hold, more host memory than
                                --max-memory allows (budget.h) */
} SsimRunError;

G_END_DECLS
