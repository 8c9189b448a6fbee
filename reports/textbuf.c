#include "textbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redact.h"
#include "utf8.h"

void tb_init(tb_buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->failed = 0;
}

/* Makes room for `more` bytes plus the terminating NUL. */
static int reserve(tb_buf *b, size_t more)
{
    if (b->failed)
        return 0;
    if (more > SIZE_MAX / 2 - b->len) {
        b->failed = 1;
        return 0;
    }
    size_t need = b->len + more + 1;
    if (need <= b->cap)
        return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) {
        b->failed = 1;
        return 0;
    }
    b->data = p;
    b->cap = cap;
    return 1;
}

void tb_add(tb_buf *b, const char *s, size_t n)
{
    if (!reserve(b, n))
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void tb_puts(tb_buf *b, const char *s)
{
    tb_add(b, s, strlen(s));
}

void tb_printf(tb_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = 1;
        return;
    }
    if (!reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* The UTF-8 reading and writing rules live in support/utf8, shared with
 * the run state, so both outputs agree on what a valid character is. */
void tb_put_cp(tb_buf *b, uint32_t cp)
{
    char out[4];
    tb_add(b, out, utf8_put(cp, out));
}

size_t tb_utf8_next(const char *s, size_t n, uint32_t *cp)
{
    return utf8_next(s, n, cp);
}

void tb_put_text(tb_buf *b, const char *text, tb_escape_fn esc)
{
    if (!text || b->failed)
        return;
    char *clean = redact_str(text);
    if (!clean) {
        b->failed = 1;
        return;
    }
    size_t n = strlen(clean);
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += tb_utf8_next(clean + i, n - i, &cp);
        esc(b, cp);
    }
    free(clean);
}

char *tb_take(tb_buf *b)
{
    if (!b->failed && !b->data)
        reserve(b, 0);
    if (b->failed) {
        tb_free(b);
        return NULL;
    }
    b->data[b->len] = '\0';
    char *text = b->data;
    tb_init(b);
    return text;
}

void tb_free(tb_buf *b)
{
    free(b->data);
    tb_init(b);
}
