/*
 * Bounds on JSON input, checked before json-glib parses it (src/core/jsonbound.c).  In core so
 * that every layer that reads JSON (import's traces, spec's Hugging Face model configs) uses it.
 *
 * json-glib's parser recurses once per nesting level, so a file of 150 KB nested 75,000 levels
 * deep overflowed the stack of every JSON reader; and a parsed document takes several times its
 * text in memory.  ssim_json_check_bounds() scans the text once, iteratively (strings and their
 * escapes skipped), and refuses one nested deeper than SSIM_JSON_MAX_DEPTH or longer than the
 * reader's size limit, naming the line and byte where the bound was crossed.  The JSON readers
 * (Kineto traces, nccl-tests -J output, Chakra comm-group files, Hugging Face config.json)
 * call it first.
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* Deeper than any trace these readers know (a Kineto event is about 4 levels deep). */
#define SSIM_JSON_MAX_DEPTH 256u

/* Size limits per reader: Kineto traces of real steps run to hundreds of megabytes. */
#define SSIM_JSON_MAX_KINETO_BYTES     (G_GUINT64_CONSTANT(1) << 30)
#define SSIM_JSON_MAX_NCCLTESTS_BYTES  (G_GUINT64_CONSTANT(64) << 20)
#define SSIM_JSON_MAX_COMM_GROUP_BYTES (G_GUINT64_CONSTANT(64) << 20)
/* A Hugging Face config.json and ASTRA-sim's system JSON (and network YAML) are a few kilobytes. */
#define SSIM_JSON_MAX_HF_CONFIG_BYTES    (G_GUINT64_CONSTANT(1) << 20)
#define SSIM_JSON_MAX_ASTRA_CONFIG_BYTES (G_GUINT64_CONSTANT(1) << 20)

/*
 * FALSE with SSIM_CONFIG_ERROR_LIMIT ("PATH:LINE: JSON nested deeper than 256 levels (byte
 * N)", "PATH: 2.0 GiB of JSON is over the limit of 1.0 GiB") when `text` (`len` bytes, or up to
 * its NUL when `len` < 0) crosses a bound.  Malformed JSON is left to the parser's message.
 */
gboolean ssim_json_check_bounds(const char *text, gssize len, guint64 max_bytes, const char *path,
                                GError **error);

/*
 * The one way a reader parses JSON: ssim_json_check_bounds(), then json-glib.  Returns the
 * parser holding the document (the caller unrefs it), or NULL with the bounds error or
 * SSIM_CONFIG_ERROR_PARSE "PATH: not JSON: <json-glib's message, with its line and column>".
 */
JsonParser *ssim_json_parse(const char *text, gssize len, guint64 max_bytes, const char *path,
                            GError **error);
/* The file at `path`, read as every input is (ssim_read_file_limited: a directory or device is
 * refused, and a file over `max_bytes`), then ssim_json_parse(). */
JsonParser *ssim_json_parse_file(const char *path, guint64 max_bytes, GError **error);

G_END_DECLS
