/* redact: the one layer every printed or persisted byte passes through.
 *
 * Two kinds of things are masked as "[REDACTED]":
 * - registered secret values (BAND_API_KEY_USER, every minted agent key),
 *   wherever they appear, even inside other words, and in every spelling
 *   the code or a server echoing them may produce: JSON-escaped (once or
 *   twice), XML entities, Markdown escapes, control bytes made spaces,
 *   Python repr() escapes and percent-encoding. Text may therefore be
 *   escaped before it reaches redact without unmasking a secret; still,
 *   callers redact first and replace or escape after.
 * - patterns that carry a key whatever its value, the key name kept and the
 *   value masked: an `X-API-Key:` header (any case, blanks before the
 *   colon allowed, also as a quoted map key; value to the end of the
 *   line); `api_key` (any case) followed by `=` or `:`, the value bare (to
 *   `&`, a quote or whitespace; after `:` also to `,` `}` `)`) or quoted
 *   (`api_key='v'`, `"api_key": "v"`, `\"api_key\": \"v\"`: to the
 *   closing quote, escape pairs skipped); and `BAND_API_KEY=` /
 *   `BAND_API_KEY_USER=` (any BAND_API_KEY* name) assignments (value to
 *   whitespace, or to its closing quote). A later process that never
 *   learned a minted key still masks the forms an agent logs it in.
 *
 * The registry is process-wide on purpose, and it is the only global in
 * support/: a secret learned anywhere (config load, a REST response) must
 * be masked everywhere, including in library log callbacks (libwebsockets,
 * libcurl) that carry no user pointer. It is append-only during a process;
 * redact_clear() exists for tests. It has no lock: the suite registers and
 * redacts on one thread (lws and curl call back on the thread that drives
 * them).
 *
 * Every occurrence of every secret is found before anything is replaced, so
 * overlapping or nested secrets are masked whole; adjacent masked bytes
 * become a single REDACT_MASK.
 */
#ifndef SMOKE_REDACT_H
#define SMOKE_REDACT_H

#include <stddef.h>
#include <stdio.h>

#include "err.h"

#define REDACT_MASK "[REDACTED]"
#define REDACT_MAX_SECRETS 32

/* Registers a secret value (copied). Values shorter than 8 bytes are refused
 * with ERR_USAGE: masking them would shred ordinary text, and no real key
 * is that short. ERR_FULL past REDACT_MAX_SECRETS. Re-adding is a no-op. */
err_code redact_add_secret(const char *value);

/* Forgets every secret (tests only). */
void redact_clear(void);

/* A malloc'd copy of `text` with secrets and key patterns masked; NULL only
 * when out of memory. */
char *redact_str(const char *text);

/* Same, into a caller buffer (always NUL-terminated, truncated to cap). */
void redact_into(const char *text, char *out, size_t cap);

/* True when `text` holds a registered secret value (not a pattern). */
int redact_has_secret(const char *text, size_t len);

/* printf that redacts before writing. Returns what fputs returns. */
int redact_fprintf(FILE *fp, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
