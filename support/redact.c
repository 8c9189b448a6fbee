#include "redact.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MIN_SECRET_LEN 8

/* The one global of support/ (see redact.h for why). */
static struct {
    char *value[REDACT_MAX_SECRETS];
    size_t len[REDACT_MAX_SECRETS];
    size_t count;
} registry;

err_code redact_add_secret(const char *value)
{
    if (!value)
        return ERR_USAGE;
    size_t len = strlen(value);
    if (len < MIN_SECRET_LEN)
        return ERR_USAGE;
    for (size_t i = 0; i < registry.count; i++)
        if (registry.len[i] == len && memcmp(registry.value[i], value, len) == 0)
            return ERR_OK;
    if (registry.count == REDACT_MAX_SECRETS)
        return ERR_FULL;
    char *copy = malloc(len + 1);
    if (!copy)
        return ERR_NOMEM;
    memcpy(copy, value, len + 1);
    registry.value[registry.count] = copy;
    registry.len[registry.count] = len;
    registry.count++;
    return ERR_OK;
}

void redact_clear(void)
{
    for (size_t i = 0; i < registry.count; i++) {
        /* a freed secret should not linger in the heap for a later dump */
        memset(registry.value[i], 0, registry.len[i]);
        free(registry.value[i]);
    }
    memset(&registry, 0, sizeof registry);
}

/* ---- finding what to hide ------------------------------------------------
 *
 * Redaction works in two passes: first every byte that must go is marked in
 * a map (all occurrences of all secrets, then all pattern values), then the
 * text is copied with each run of marked bytes replaced by one mask. Marking
 * before replacing is what makes overlapping secrets disappear entirely: a
 * replace-as-you-go pass would consume the first secret and leave the tail
 * of the one overlapping it in clear.
 */

static const char *find(const char *hay, size_t hay_len, const char *needle,
                        size_t needle_len)
{
    const char *end = hay + hay_len;
    while ((size_t)(end - hay) >= needle_len) {
        const char *p = memchr(hay, needle[0], (size_t)(end - hay) - needle_len + 1);
        if (!p)
            return NULL;
        if (memcmp(p, needle, needle_len) == 0)
            return p;
        hay = p + 1;
    }
    return NULL;
}

static void mark_secrets(const char *text, size_t len, unsigned char *hide)
{
    for (size_t s = 0; s < registry.count; s++) {
        const char *at = text;
        size_t left = len;
        const char *hit;
        while ((hit = find(at, left, registry.value[s], registry.len[s])) != NULL) {
            size_t start = (size_t)(hit - text);
            memset(hide + start, 1, registry.len[s]);
            /* overlapping repeats of one secret ("abab" in "ababab") too */
            at = hit + 1;
            left = len - start - 1;
        }
    }
}

static char ascii_lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Length of `lit` (lowercase) when text starts with it in any case, else 0. */
static size_t starts_with_ci(const char *text, size_t len, const char *lit)
{
    size_t n = strlen(lit);
    if (n > len)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (ascii_lower(text[i]) != lit[i])
            return 0;
    return n;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t';
}

static int is_eol(char c)
{
    return c == '\n' || c == '\r';
}

static int is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_';
}

/* The patterns. Each returns how many bytes at `text` belong to the key part
 * (kept) or 0 when the pattern does not start here; the caller then hides
 * the value that follows, up to the pattern's own end rule. */

/* `X-API-Key:` as a header line, or as a quoted key in a printed map
 * (`"x-api-key": ...`): the value is the rest of the line. */
static size_t header_key(const char *text, size_t len)
{
    size_t i = starts_with_ci(text, len, "x-api-key");
    if (!i)
        return 0;
    if (i < len && (text[i] == '"' || text[i] == '\''))
        i++;
    while (i < len && is_space(text[i]))
        i++;
    return i < len && text[i] == ':' ? i + 1 : 0;
}

/* `api_key=` in a query string or form body. */
static size_t query_key(const char *text, size_t len)
{
    return starts_with_ci(text, len, "api_key=");
}

/* `BAND_API_KEY=`, `BAND_API_KEY_USER=` (and any other BAND_API_KEY*
 * variable, e.g. BAND_API_KEY_USER_2) in env files and shell traces. */
static size_t assignment_key(const char *text, size_t len)
{
    size_t i = starts_with_ci(text, len, "band_api_key");
    if (!i)
        return 0;
    while (i < len && is_name_char(text[i]))
        i++;
    while (i < len && is_space(text[i]))
        i++;
    return i < len && text[i] == '=' ? i + 1 : 0;
}

static size_t skip_spaces(const char *text, size_t len, size_t i)
{
    while (i < len && is_space(text[i]))
        i++;
    return i;
}

static size_t header_value_end(const char *text, size_t len, size_t i)
{
    while (i < len && !is_eol(text[i]))
        i++;
    return i;
}

static size_t query_value_end(const char *text, size_t len, size_t i)
{
    while (i < len && text[i] != '&' && text[i] != '"' && text[i] != '\'' &&
           !is_space(text[i]) && !is_eol(text[i]))
        i++;
    return i;
}

/* A quoted value runs to its closing quote (keys have no spaces, but a
 * quoted one must not leak past a space either); a bare one to whitespace. */
static size_t assignment_value_end(const char *text, size_t len, size_t i)
{
    if (i < len && (text[i] == '"' || text[i] == '\'')) {
        char quote = text[i];
        for (i++; i < len && !is_eol(text[i]); i++)
            if (text[i] == quote)
                return i;
        return i;
    }
    while (i < len && !is_space(text[i]) && !is_eol(text[i]))
        i++;
    return i;
}

static void hide_range(unsigned char *hide, size_t from, size_t to)
{
    if (to > from)
        memset(hide + from, 1, to - from);
}

static void mark_patterns(const char *text, size_t len, unsigned char *hide)
{
    for (size_t i = 0; i < len; i++) {
        /* every pattern starts with one of these letters: skip the rest fast */
        char c = ascii_lower(text[i]);
        if (c != 'x' && c != 'a' && c != 'b')
            continue;
        const char *at = text + i;
        size_t left = len - i, key, v;
        if ((key = header_key(at, left)) != 0) {
            v = skip_spaces(at, left, key);
            hide_range(hide, i + v, i + header_value_end(at, left, v));
        } else if ((key = query_key(at, left)) != 0) {
            hide_range(hide, i + key, i + query_value_end(at, left, key));
        } else if ((key = assignment_key(at, left)) != 0) {
            v = skip_spaces(at, left, key);
            size_t end = assignment_value_end(at, left, v);
            if (v < end && (at[v] == '"' || at[v] == '\''))
                v++; /* keep the opening quote, hide what it encloses */
            hide_range(hide, i + v, i + end);
        }
    }
}

/* The map of bytes to hide, or NULL when out of memory. */
static unsigned char *hide_map(const char *text, size_t len)
{
    unsigned char *hide = calloc(len + 1, 1);
    if (!hide)
        return NULL;
    mark_secrets(text, len, hide);
    mark_patterns(text, len, hide);
    return hide;
}

/* ---- writing the result ------------------------------------------------ */

/* Appends piece to out (cap bytes) as far as it fits; `used` is the length
 * the text would have without a cap. */
static void put(char *out, size_t cap, size_t used, const char *piece, size_t len)
{
    if (used + 1 >= cap)
        return;
    size_t room = cap - 1 - used;
    memcpy(out + used, piece, len < room ? len : room);
}

/* snprintf-like: writes at most cap - 1 bytes plus a NUL when cap > 0, and
 * returns the length the whole redacted text needs. */
static size_t emit(const char *text, size_t len, const unsigned char *hide,
                   char *out, size_t cap)
{
    static const char mask[] = REDACT_MASK;
    size_t need = 0;
    for (size_t i = 0; i < len;) {
        if (hide[i]) {
            while (i < len && hide[i])
                i++;
            put(out, cap, need, mask, sizeof mask - 1);
            need += sizeof mask - 1;
        } else {
            const unsigned char *next = memchr(hide + i, 1, len - i);
            size_t run = next ? (size_t)(next - hide) - i : len - i;
            put(out, cap, need, text + i, run);
            need += run;
            i += run;
        }
    }
    if (cap > 0)
        out[need < cap ? need : cap - 1] = '\0';
    return need;
}

char *redact_str(const char *text)
{
    if (!text)
        text = "";
    size_t len = strlen(text);
    unsigned char *hide = hide_map(text, len);
    if (!hide)
        return NULL;
    size_t need = emit(text, len, hide, NULL, 0);
    char *out = malloc(need + 1);
    if (out)
        emit(text, len, hide, out, need + 1);
    free(hide);
    return out;
}

void redact_into(const char *text, char *out, size_t cap)
{
    if (!out || cap == 0)
        return;
    if (!text)
        text = "";
    size_t len = strlen(text);
    unsigned char *hide = hide_map(text, len);
    if (!hide) {
        /* cannot tell what is secret: fail closed rather than copy clear text */
        snprintf(out, cap, "%s", REDACT_MASK);
        return;
    }
    emit(text, len, hide, out, cap);
    free(hide);
}

int redact_has_secret(const char *text, size_t len)
{
    if (!text)
        return 0;
    for (size_t s = 0; s < registry.count; s++)
        if (find(text, len, registry.value[s], registry.len[s]))
            return 1;
    return 0;
}

/* vsnprintf into a buffer that grows to whatever the text needs. */
static char *format_alloc(const char *fmt, va_list ap)
{
    char small[1024];
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    char *text = NULL;
    if (n >= 0)
        text = malloc((size_t)n + 1);
    if (text) {
        if ((size_t)n < sizeof small)
            memcpy(text, small, (size_t)n + 1);
        else
            vsnprintf(text, (size_t)n + 1, fmt, again);
    }
    va_end(again);
    return text;
}

int redact_fprintf(FILE *fp, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *raw = format_alloc(fmt, ap);
    va_end(ap);
    if (!raw)
        return EOF;
    char *clean = redact_str(raw);
    memset(raw, 0, strlen(raw));
    free(raw);
    if (!clean)
        return EOF;
    int rc = fputs(clean, fp);
    free(clean);
    return rc;
}
