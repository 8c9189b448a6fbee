/* utf8: the one reader of UTF-8 every module that must emit valid text
 * uses (the run state, the reports).
 *
 * Text that enters the run state comes from outside: a Band error body, an
 * agent.log line, an sbx message. It may hold any bytes, and a strict
 * JSON reader refuses a state.json that is not UTF-8. utf8_sanitize is
 * the door: every invalid sequence becomes U+FFFD, valid text passes
 * unchanged. Pure: no I/O, no globals.
 */
#ifndef SMOKE_UTF8_H
#define SMOKE_UTF8_H

#include <stddef.h>
#include <stdint.h>

#define UTF8_REPLACEMENT 0xFFFDu /* U+FFFD, stands in for undecodable bytes */

/* Decodes the sequence at s (n > 0 bytes available) into *cp and returns
 * the bytes it used (1 to 4). Overlong forms, surrogates, values past
 * U+10FFFF and truncated sequences give *cp = UTF8_REPLACEMENT and consume
 * exactly one byte, so decoding resynchronises on the next. */
size_t utf8_next(const char *s, size_t n, uint32_t *cp);

/* Encodes cp into out (4 bytes), a surrogate or out-of-range value as
 * U+FFFD; returns the bytes written. */
size_t utf8_put(uint32_t cp, char out[4]);

/* Copies the NUL-terminated src into out (cap > 0 bytes, always
 * terminated) with every invalid sequence replaced by U+FFFD. A character
 * that does not fit whole is left out with everything after it. Returns
 * the length written. src and out must not overlap. */
size_t utf8_sanitize(const char *src, char *out, size_t cap);

/* 1 when the len bytes at s are valid UTF-8 (NUL bytes allowed). */
int utf8_is_valid(const char *s, size_t len);

#endif
