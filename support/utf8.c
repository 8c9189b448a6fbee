#include "utf8.h"

#include <string.h>

size_t utf8_next(const char *s, size_t n, uint32_t *cp)
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
        *cp = UTF8_REPLACEMENT; /* a stray continuation byte or 0xF8..0xFF */
        return 1;
    }
    if (len > n) {
        *cp = UTF8_REPLACEMENT;
        return 1;
    }
    for (size_t i = 1; i < len; i++) {
        if ((u[i] & 0xC0) != 0x80) {
            *cp = UTF8_REPLACEMENT;
            return 1;
        }
        v = (v << 6) | (u[i] & 0x3F);
    }
    /* Overlong forms and surrogates would let a byte such as '<' or a
     * control character slip past an escaper in disguise. */
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        *cp = UTF8_REPLACEMENT;
        return 1;
    }
    *cp = v;
    return len;
}

size_t utf8_put(uint32_t cp, char out[4])
{
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
        cp = UTF8_REPLACEMENT;
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

size_t utf8_sanitize(const char *src, char *out, size_t cap)
{
    if (!out || cap == 0)
        return 0;
    size_t n = src ? strlen(src) : 0, used = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t took = utf8_next(src + i, n - i, &cp);
        char piece[4];
        size_t len = cp == UTF8_REPLACEMENT && took == 1 ? utf8_put(cp, piece) : took;
        if (used + len >= cap)
            break;
        memcpy(out + used, len == took ? src + i : piece, len);
        used += len;
        i += took;
    }
    out[used] = '\0';
    return used;
}

int utf8_is_valid(const char *s, size_t len)
{
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t took = utf8_next(s + i, len - i, &cp);
        if (cp == UTF8_REPLACEMENT && took == 1)
            return 0;
        i += took;
    }
    return 1;
}
