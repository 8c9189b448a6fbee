#include "textbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redact.h"

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

void tb_put_cp(tb_buf *b, uint32_t cp)
{
    char out[4];
    size_t n;
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
        cp = TB_REPLACEMENT;
    if (cp < 0x80) {
        out[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        out[0] = (char)(0xF0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    tb_add(b, out, n);
}

size_t tb_utf8_next(const char *s, size_t n, uint32_t *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t len;
    uint32_t min, v;
    if (u[0] < 0x80) {
        *cp = u[0];
        return 1;
    } else if ((u[0] & 0xE0) == 0xC0) {
        len = 2, min = 0x80, v = u[0] & 0x1F;
    } else if ((u[0] & 0xF0) == 0xE0) {
        len = 3, min = 0x800, v = u[0] & 0x0F;
    } else if ((u[0] & 0xF8) == 0xF0) {
        len = 4, min = 0x10000, v = u[0] & 0x07;
    } else {
        *cp = TB_REPLACEMENT; /* a stray continuation byte or 0xF8..0xFF */
        return 1;
    }
    if (len > n) {
        *cp = TB_REPLACEMENT;
        return 1;
    }
    for (size_t i = 1; i < len; i++) {
        if ((u[i] & 0xC0) != 0x80) {
            *cp = TB_REPLACEMENT;
            return 1;
        }
        v = (v << 6) | (u[i] & 0x3F);
    }
    /* Overlong forms and surrogates would let a byte such as '<' or a
     * control character slip past the escapers in disguise. */
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        *cp = TB_REPLACEMENT;
        return 1;
    }
    *cp = v;
    return len;
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
