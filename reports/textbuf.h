/* textbuf: the growable string both report renderers write into, and the
 * one door through which text from the run state enters a report.
 *
 * A renderer appends many small pieces and checks for failure once, at the
 * end: the first failed allocation sets a sticky flag, every later append
 * is a no-op, and tb_take() returns NULL. That keeps the renderers a flat
 * list of appends instead of a ladder of error checks.
 *
 * Two kinds of appends:
 * - tb_puts/tb_printf for the renderer's own, trusted text (headings,
 *   labels, numbers);
 * - tb_put_text for anything that came from the state or the caller. It
 *   redacts the text (redact.h) first, then decodes it as UTF-8, turning
 *   every invalid byte into U+FFFD, and hands each code point to an escape
 *   function that knows the target syntax (Markdown cell, XML attribute,
 *   Mermaid task name). Redacting before escaping matters: an escaped
 *   secret would no longer match the registry.
 *
 * Ownership: a tb_buf owns its bytes until tb_take() hands them over (the
 * caller then frees them) or tb_free() releases them. A tb_buf is a plain
 * value: no globals, one buffer per render.
 */
#ifndef SMOKE_TEXTBUF_H
#define SMOKE_TEXTBUF_H

#include <stddef.h>
#include <stdint.h>

#define TB_REPLACEMENT 0xFFFDu /* U+FFFD, stands in for undecodable bytes */

typedef struct tb_buf {
    char *data;  /* always NUL-terminated once anything was appended */
    size_t len;
    size_t cap;
    int failed;  /* an allocation failed; the text is incomplete */
} tb_buf;

/* Appends the escaped form of one code point to b. */
typedef void (*tb_escape_fn)(tb_buf *b, uint32_t cp);

void tb_init(tb_buf *b);

/* Raw appends of trusted text. */
void tb_add(tb_buf *b, const char *s, size_t n);
void tb_puts(tb_buf *b, const char *s);
void tb_printf(tb_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends cp encoded as UTF-8 (a surrogate or out-of-range value becomes
 * U+FFFD). */
void tb_put_cp(tb_buf *b, uint32_t cp);

/* Appends untrusted text: redacted, decoded, each code point passed to
 * esc. NULL text appends nothing. */
void tb_put_text(tb_buf *b, const char *text, tb_escape_fn esc);

/* Decodes the UTF-8 sequence at s (n > 0 bytes available) into *cp and
 * returns the bytes it used (1 to 4). Overlong forms, surrogates, values
 * past U+10FFFF and truncated sequences give *cp = TB_REPLACEMENT and
 * consume exactly one byte, so decoding resynchronises on the next. */
size_t tb_utf8_next(const char *s, size_t n, uint32_t *cp);

/* Hands the text to the caller (who frees it) and resets b. Returns NULL,
 * freeing what was built, when any append failed. */
char *tb_take(tb_buf *b);

/* Releases b's bytes; b can be reused after tb_init. */
void tb_free(tb_buf *b);

#endif
